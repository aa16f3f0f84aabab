"""Tile GEMM (issue 11): the tiles chapter's GEMM kernel at n x n x n, side by side with warp-lang and
torch (cuBLAS), in TFLOP/s; plus the cold compile + first launch of the tile-GEMM module.

    python -m benchmarks.matmul [--device cuda:0] [--modules tilewarp,warp,torch] [--n 4096]
        [--dtypes float16,float32,float64] [--tile 64,64,32] [--block_dim 128] [--backward]

--backward times a forward launch and Tape.backward of the GEMM together (gradients of both
operands: two more GEMMs), warm, and the first such pass, the backward kernel's build included; its
TFLOP/s count the three products. torch: the same through autograd.

Module ``tilewarp:mathdx`` is tilewarp with ``wp.config.enable_mathdx_gemm`` (cuBLASDx).

float64 runs on DMMA (native/tile/dmma.h): on an H200 its best tiles are 128,128,32 on 256 threads and
128,64,16 or 128,64,32 on 128 (43 TFLOP/s; the default 64,64,32 on 128: 38; benchmarks/RESULTS.md).

float16 runs with float32 sums in tilewarp (operands float16, output float32: beyond Warp, which
wants one dtype, so Warp's row uses float16 sums) and with float16 inputs and float32 accumulation
in torch.
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

KERNEL = '''
import {module} as wp

TM = wp.constant({tm})
TN = wp.constant({tn})
TK = wp.constant({tk})


@wp.kernel
def gemm(a: wp.array2d(dtype=wp.{ab}), b: wp.array2d(dtype=wp.{ab}), c: wp.array2d(dtype=wp.{acc})):
    i, j = wp.tid()
    total = wp.tile_zeros(shape=(TM, TN), dtype=wp.{acc})
    for k in range(a.shape[1] // TK):
        x = wp.tile_load(a, shape=(TM, TK), offset=(i * TM, k * TK))
        y = wp.tile_load(b, shape=(TK, TN), offset=(k * TK, j * TN))
        wp.tile_matmul(x, y, total)
    wp.tile_store(c, total, offset=(i * TM, j * TN))
'''


def load_text(module, text, d, prefix="bench_gemm"):
    """``text`` as a fresh Python module written under ``d`` (new kernel objects, cold caches)."""
    name = f"{prefix}_{module}_{abs(hash(text)) % 10**8}"
    path = os.path.join(d, name + ".py")
    with open(path, "w") as f:
        f.write(text)
    sys.path.insert(0, d)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(d)


def timed(fn, sync, iters=10):
    """Median seconds per call of ``fn`` over 5 rounds of ``iters`` (after one warm-up call)."""
    fn()
    sync()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) / iters)
    return statistics.median(ts)


def bench_backward(module, dtype, n, tile, block_dim, device, d):
    """(seconds of a warm forward + backward, the first one's seconds, relative error of A's gradient)"""
    tm, tn, tk = tile
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(dtype)
    g = rng.uniform(-1, 1, (n, n)).astype(dtype)
    if module == "torch":
        import torch
        ta, tb = (torch.tensor(x, device="cuda" if device.startswith("cuda") else "cpu", requires_grad=True)
                  for x in (a, b))
        tg = torch.tensor(g, device=ta.device)

        def step():
            ta.grad = tb.grad = None
            (ta @ tb).backward(tg)
        sync = torch.cuda.synchronize if ta.is_cuda else (lambda: None)
        t0 = time.perf_counter()
        step()
        sync()
        first = time.perf_counter() - t0
        return timed(step, sync), first, float(np.abs(ta.grad.cpu().numpy() - g @ b.T).max() / np.abs(g @ b.T).max())
    wp = importlib.import_module(module)
    wp.config.quiet = True
    k = load_text(module, KERNEL.format(module=module, tm=tm, tn=tn, tk=tk, ab=dtype, acc=dtype), d, "bench_gemm_bwd")
    wa, wb = (wp.array(x, device=device, requires_grad=True) for x in (a, b))
    wc = wp.zeros((n, n), dtype=getattr(wp, dtype), device=device, requires_grad=True)
    wg = wp.array(g, device=device)
    launch = lambda: wp.launch_tiled(k.gemm, dim=(n // tm, n // tn), inputs=[wa, wb, wc], block_dim=block_dim,  # noqa: E731
                                     device=device)
    launch()  # the forward built and run once: the first pass below times the backward's build
    wp.synchronize_device(device)

    def step():
        tape = wp.Tape()
        with tape:
            launch()
        tape.backward(grads={wc: wg})
        tape.zero()
    t0 = time.perf_counter()
    step()
    wp.synchronize_device(device)
    first = time.perf_counter() - t0
    s = timed(step, lambda: wp.synchronize_device(device), iters=3)
    tape = wp.Tape()
    with tape:
        launch()
    tape.backward(grads={wc: wg})
    want = g.astype(np.float64) @ b.astype(np.float64).T
    return s, first, float(np.abs(wa.grad.numpy() - want).max() / np.abs(want).max())


def bench(module, dtype, n, tile, block_dim, device, d):
    tm, tn, tk = tile
    acc = dtype if (not module.startswith("tilewarp") or dtype != "float16") else "float32"
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype(dtype)
    b = rng.uniform(-1, 1, (n, n)).astype(dtype)
    if module == "torch":
        import torch
        ta, tb = torch.tensor(a, device="cuda"), torch.tensor(b, device="cuda")
        s = timed(lambda: ta @ tb, torch.cuda.synchronize)
        return s, float("nan"), None
    wp = importlib.import_module(module.split(":")[0])
    wp.config.quiet = True
    if module.startswith("tilewarp"):  # tilewarp:mathdx: tile_matmul through cuBLASDx, not our own paths
        wp.config.enable_mathdx_gemm = module == "tilewarp:mathdx"
    variant, module = module.replace(":", "_"), module.split(":")[0]
    text = KERNEL.format(module=module, tm=tm, tn=tn, tk=tk, ab=dtype, acc=acc)
    k = load_text(variant, text, d)
    wa, wb = wp.array(a, device=device), wp.array(b, device=device)
    wc = wp.zeros((n, n), dtype=getattr(wp, acc), device=device)
    t0 = time.perf_counter()
    wp.launch_tiled(k.gemm, dim=(n // tm, n // tn), inputs=[wa, wb, wc], block_dim=block_dim, device=device)
    wp.synchronize_device(device)
    first = time.perf_counter() - t0
    s = timed(lambda: wp.launch_tiled(k.gemm, dim=(n // tm, n // tn), inputs=[wa, wb, wc], block_dim=block_dim,
                                       device=device), lambda: wp.synchronize_device(device))
    m = min(n, 512)  # check a corner against float64
    want = a[:m].astype(np.float64) @ b[:, :m].astype(np.float64)
    err = float(np.abs(wc.numpy()[:m, :m].astype(np.float64) - want).max() / np.abs(want).max())
    return s, first, err


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--modules", default="tilewarp,warp,torch")
    ap.add_argument("--dtypes", default="float16,float32,float64")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--tile", default="64,64,32")
    ap.add_argument("--block_dim", type=int, default=128)
    ap.add_argument("--backward", action="store_true", help="forward + Tape.backward (3 products)")
    a = ap.parse_args(argv)
    tile = tuple(int(x) for x in a.tile.split(","))
    with tempfile.TemporaryDirectory() as d:
        os.environ.setdefault("TILEWARP_CACHE_DIR", os.path.join(d, "cache"))  # cold first launches
        print(f"{'dtype':8s} {'module':9s} {'ms':>9s} {'TFLOP/s':>8s} {'first launch s':>15s} {'rel err':>9s}")
        for dtype in a.dtypes.split(","):
            for module in a.modules.split(","):
                try:
                    run = bench_backward if a.backward else bench
                    s, first, err = run(module, dtype, a.n, tile, a.block_dim, a.device, d)
                except Exception as e:  # noqa: BLE001 - one failing library must not hide the others
                    print(f"{dtype:8s} {module:9s} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                    continue
                flops = (6.0 if a.backward else 2.0) * a.n ** 3 / s / 1e12
                print(f"{dtype:8s} {module:9s} {s * 1e3:9.3f} {flops:8.1f} {first:15.2f} "
                      f"{'' if err is None else f'{err:9.1e}'}", flush=True)


if __name__ == "__main__":
    main()
