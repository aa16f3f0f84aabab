"""A 2-D wave equation decomposed over ranks: each rank steps its block of the grid, ghost layers
exchanged with its neighbours every step (tilewarp.distributed over MPI or NCCL).

The wave equation h_tt = c^2 (h_xx + h_yy) on an n x n grid held at 0 on its edges, with the
leapfrog scheme, from a few Gaussian bumps. Each step a rank exchanges one ghost layer of h with
its neighbours, then updates its interior: the same arithmetic cell by cell as one process on the
whole grid, so the decomposed run is bit-identical to it (``--check`` compares them on rank 0).
Rank 0 writes the final field as an image and reports the time a step takes, split into compute
and exchange.

    python examples/dist_wave.py [--device cpu] [--grid 256] [--steps 300] [--check] [--image dist_wave.png]
    mpiexec -n 2 python examples/dist_wave.py --device cpu --check
    torchrun --nproc_per_node 2 examples/dist_wave.py --check
"""
import argparse
import time

import numpy as np

import tilewarp as wp
from tilewarp import distributed as dist


@wp.kernel
def leapfrog(h: wp.array2d(dtype=float), h_prev: wp.array2d(dtype=float), courant2: float,
             h_next: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a, b = i + 1, j + 1  # past the ghost layer
    c = h[a, b]
    lap = h[a - 1, b] + h[a + 1, b] + h[a, b - 1] + h[a, b + 1] - 4.0 * c
    h_next[a, b] = 2.0 * c - h_prev[a, b] + courant2 * lap


def initial(dec, n):
    """The starting heights of this rank's block (with its ghost layers, 0 there)."""
    x = (np.arange(n) + 0.5) / n
    bumps = [(0.3, 0.35, 0.06, 1.0), (0.7, 0.6, 0.04, -0.8), (0.45, 0.8, 0.05, 0.6)]
    gx, gy = np.meshgrid(x[dec.global_slices()[0]], x[dec.global_slices()[1]], indexing="ij")
    field = sum(amp * np.exp(-((gx - cx) ** 2 + (gy - cy) ** 2) / (2 * w * w)) for cx, cy, w, amp in bumps)
    out = np.zeros(dec.local_shape, dtype=np.float32)
    out[dec.interior] = field
    return out


def simulate(ctx, n, steps, courant=0.5, gather=True, split_steps=20):
    """The field after ``steps`` steps on ``ctx``'s ranks, gathered on rank 0 (``gather``), and the
    time a step takes: (total, compute, exchange) seconds. The total runs as a user's loop would
    (no waiting between steps: the exchange's host work overlaps the kernels); the split comes from
    ``split_steps`` more steps, each part waited for."""
    dec = dist.Decomposition(ctx, (n, n), ghost=1)
    h = wp.array(initial(dec, n), dtype=float, device=ctx.device)
    h_prev = wp.clone(h)
    h_next = wp.zeros_like(h)

    def step(sync=False):
        nonlocal h, h_prev, h_next
        t0 = time.perf_counter()
        dec.exchange(h)
        if sync:
            wp.synchronize_device(ctx.device)
        t1 = time.perf_counter()
        wp.launch(leapfrog, dim=dec.block, inputs=[h, h_prev, courant * courant, h_next], device=ctx.device)
        if sync:
            wp.synchronize_device(ctx.device)
        h_prev, h, h_next = h, h_next, h_prev
        return t1 - t0, time.perf_counter() - t1

    warmup = min(5, steps // 10)  # not timed: NCCL connects a pair of ranks at their first exchange
    for _ in range(warmup):
        step()
    ctx.barrier("start")
    wp.synchronize_device(ctx.device)
    t0 = time.perf_counter()
    for _ in range(steps - warmup):
        step()
    wp.synchronize_device(ctx.device)
    total = (time.perf_counter() - t0) / max(steps - warmup, 1)
    field = dec.gather(h) if gather else None
    parts = [step(sync=True) for _ in range(split_steps if not gather else 0)]
    exchange = sum(p[0] for p in parts) / max(len(parts), 1)
    compute = sum(p[1] for p in parts) / max(len(parts), 1)
    return field, total, compute, exchange


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None, help="cpu or cuda:N (default: cuda:<local rank> where GPUs are)")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--grid", type=int, default=256, help="points a side")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--check", action="store_true", help="rank 0 runs the whole grid alone and compares")
    ap.add_argument("--image", default="dist_wave.png", help="the final field (rank 0; '' for none)")
    a = ap.parse_args(argv)
    wp.config.quiet = True
    ctx = dist.init(a.backend, device=a.device)
    field, total, compute, exchange = simulate(ctx, a.grid, a.steps, gather=bool(a.check or a.image))
    if ctx.rank != 0:
        return None
    split = f" (waited for apart: {compute * 1e3:.3f} compute, {exchange * 1e3:.3f} exchange)" if compute else ""
    print(f"{ctx.size} rank(s) on {ctx.device} ({ctx.backend}): {a.grid}x{a.grid} grid, {a.steps} steps, "
          f"{total * 1e3:.3f} ms a step{split}")
    if a.image:
        save_image(field, a.image)
        print(f"wrote {a.image}")
    if a.check:
        alone = dist.Context(0, 1, 0, "single", ctx.device)
        reference = simulate(alone, a.grid, a.steps)[0]
        difference = float(np.abs(field - reference).max())
        print(f"check against one process: max |difference| {difference:.3g}"
              f"{' (bit-identical)' if np.array_equal(field, reference) else ''}")
        if not np.array_equal(field, reference):
            raise SystemExit("the decomposed run differs from the single-process run")
    return field


def save_image(field, path):
    try:
        from PIL import Image
    except ImportError:
        np.save(path.rsplit(".", 1)[0] + ".npy", field)
        return
    scale = max(float(np.abs(field).max()), 1e-6)
    v = np.clip(field / scale, -1.0, 1.0)
    up, down = np.maximum(v, 0), np.maximum(-v, 0)  # white at rest, red crests, blue troughs
    rgb = np.stack([1 - 0.85 * down, 1 - 0.85 * (up + down), 1 - 0.85 * up], axis=-1) ** 0.8
    Image.fromarray((rgb * 255).astype(np.uint8)).save(path)


if __name__ == "__main__":
    main()
