"""Where the tile programs' time goes on a GPU: variants of the benchmark kernels (benchmarks/tiles.py).

Each variant builds fresh kernels under its settings ($TILEWARP_COMBINE_ATOMICS: a CUDA block adds
its blocks' sums itself, one atomic per address; $TILEWARP_GRID_WAVES: CUDA blocks per resident slot
of such a kernel, a fraction allowed, 0 = one per block of the launch; $TILEWARP_LANES_PER_THREAD) and prints ms, GB/s
and registers. The row sum and the copy have no atomics: they run in the first variant only.
Run: python benchmarks/tile_probe.py [--device cuda:0] [--quick]
"""
import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tilewarp as wp  # noqa: E402
from benchmarks.tiles import KERNELS  # noqa: E402

wp.config.quiet = True
_count = [0]


def fresh_kernels():
    """The benchmark kernels in a new module (new kernel objects: settings are read at build time)."""
    _count[0] += 1
    d = tempfile.mkdtemp()
    path = os.path.join(d, f"probe_{_count[0]}.py")
    with open(path, "w") as f:
        f.write("import tilewarp as wp\n" + KERNELS)
    spec = importlib.util.spec_from_file_location(f"probe_{_count[0]}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(fn, device, it=50):
    fn()
    wp.synchronize_device(device)
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(it):
            fn()
        wp.synchronize_device(device)
        ts.append((time.perf_counter() - t0) / it)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    dev = a.device
    rng = np.random.default_rng(0)
    n, rows, m = 4096, 1 << 16, 8192
    data = wp.array(rng.random((n, n)), dtype=wp.float64, device=dev)
    result = wp.zeros(1, dtype=wp.float64, device=dev)
    ra = wp.array(rng.random((rows, 256), dtype=np.float32), dtype=float, device=dev)
    rb = wp.zeros((rows, 1), dtype=float, device=dev)
    src = wp.array(rng.random((m, m), dtype=np.float32), dtype=float, device=dev)
    dst = wp.zeros((m, m), dtype=float, device=dev)
    want = float(np.sum(data.numpy() ** 2))
    programs = {
        "sum_squares": (lambda k: wp.launch(k.sum_squares, (n, n), inputs=[data], outputs=[result], device=dev),
                        n * n * 8, lambda k: k.sum_squares, ((n, n), 256)),
        "row_sum": (lambda k: wp.launch_tiled(k.row_sum, dim=[rows], inputs=[ra, rb], block_dim=64, device=dev),
                    rows * 256 * 4, lambda k: k.row_sum, ((rows, 64), 64)),
        "tile_copy": (lambda k: wp.launch_tiled(k.tile_copy, dim=[m // 32, m // 128], inputs=[src, dst], block_dim=256,
                                                device=dev), 2 * m * m * 4, lambda k: k.tile_copy, ((m // 32, m // 128, 256), 256)),
    }
    # (combine atomics, grid waves, lanes per thread ("": the defaults), programs)
    variants = [("1", "", "", "sum_squares row_sum tile_copy"), ("1", "2", "", "sum_squares row_sum"),
                ("1", "1", "", "row_sum tile_copy"), ("1", "0", "", "row_sum tile_copy"), ("1", "8", "", "row_sum"),
                ("1", "1", "1", "row_sum"), ("1", "", "4", "sum_squares")]
    if a.quick:
        variants = variants[:2]
    big = wp.zeros(1 << 27, dtype=float, device=dev)
    big2 = wp.zeros(1 << 27, dtype=float, device=dev)
    ms = timed(lambda: wp.copy(big2, big), dev)
    print(f"device copy {2 * 4 * (1 << 27) / ms / 1e6:.0f} GB/s", flush=True)
    for combine, waves, lanes, which in variants:
        os.environ["TILEWARP_COMBINE_ATOMICS"] = combine
        if waves:
            os.environ["TILEWARP_GRID_WAVES"] = waves
        else:
            os.environ.pop("TILEWARP_GRID_WAVES", None)
        if lanes:
            os.environ["TILEWARP_LANES_PER_THREAD"] = lanes
        else:
            os.environ.pop("TILEWARP_LANES_PER_THREAD", None)
        k = fresh_kernels()
        for name, (run, nbytes, kern, (dim, bd)) in programs.items():
            if name not in which.split():
                continue
            ms = timed(lambda: run(k), dev)
            res = kern(k).resources(dim, bd, device=dev)
            print(f"combine={combine} waves={waves or '-'} lanes={lanes or '-'} {name:12s} {ms:.4f} ms "
                  f"{nbytes / ms / 1e6:7.0f} GB/s regs={res.get('registers')} threads={res.get('threads')}", flush=True)
        result.zero_()
        wp.launch(k.sum_squares, (n, n), inputs=[data], outputs=[result], device=dev)
        got = float(result.numpy()[0])
        rel = abs(got - want) / want
        wp.launch_tiled(k.row_sum, dim=[rows], inputs=[ra, rb], block_dim=64, device=dev)
        wp.launch_tiled(k.tile_copy, dim=[m // 32, m // 128], inputs=[src, dst], block_dim=256, device=dev)
        ok_rows = np.allclose(rb.numpy()[:, 0], ra.numpy().sum(axis=1), rtol=1e-4)
        ok_copy = np.array_equal(dst.numpy(), src.numpy())
        print(f"   check: sum rel err {rel:.2e}, row sums {ok_rows}, copy {ok_copy}", flush=True)
        dst.zero_()
        rb.zero_()


if __name__ == "__main__":
    main()
