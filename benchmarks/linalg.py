"""Tile Cholesky and FFT (issue 12): batches of per-block problems side by side with warp-lang and
torch, in one run; the cold compile + first launch of each module.

    python -m benchmarks.linalg [--device cuda:0] [--modules tilewarp,warp,torch]
        [--cholesky 32,64] [--fft 256,1024,4096] [--block_dim 64]

Cholesky: float32 SPD matrices, one a block (``tile_cholesky``), against ``torch.linalg.cholesky``
of the whole batch. FFT: rows of complex64 points, one a block (``tile_fft`` of a (1, N) tile),
against ``torch.fft.fft`` along the rows. Each batch is about 64 MB; the ms are per batch and each
answer is checked against NumPy. Warp runs its default paths (cuSolverDx / cuFFTDx where its build
has MathDx), its FFTs with 2 to 16 points a thread (cuFFTDx's range: block_dim N/16 at least).
"""
from __future__ import annotations

import argparse
import importlib
import os
import tempfile
import time

import numpy as np

from .matmul import load_text, timed

HEADER = '''
import {module} as wp

N = wp.constant({n})
'''
# one kernel a module: Warp compiles a module's kernels together, and an FFT size its cuFFTDx
# rejects would fail the Cholesky beside it
KERNELS = {
    "cholesky": '''

@wp.kernel
def cholesky(a: wp.array3d(dtype=float), out: wp.array3d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a[i], shape=(N, N), storage="shared")
    wp.tile_store(out[i], wp.tile_cholesky(t))
''',
    "fft": '''

@wp.kernel
def fft(x: wp.array2d(dtype=wp.vec2f), y: wp.array2d(dtype=wp.vec2f)):
    i = wp.tid()
    t = wp.tile_load(x, shape=(1, N), offset=(i, 0))
    wp.tile_fft(t)
    wp.tile_store(y, t, offset=(i, 0))
''',
}
BATCH_BYTES = 64 << 20


def problem(kind, n):
    rng = np.random.default_rng(n)
    if kind == "cholesky":
        batch = BATCH_BYTES // (4 * n * n)
        m = rng.standard_normal((batch, n, n)).astype(np.float32) / np.sqrt(n)
        a = m @ m.transpose(0, 2, 1) + np.eye(n, dtype=np.float32)
        return a, lambda got: np.abs(got[:64] - np.linalg.cholesky(a[:64].astype(np.float64))).max()
    batch = BATCH_BYTES // (8 * n)
    x = rng.uniform(-1, 1, (batch, n, 2)).astype(np.float32)
    ref = np.fft.fft(x[:64, :, 0].astype(np.float64) + 1j * x[:64, :, 1], axis=-1)
    return x, lambda got: np.abs(got[:64, :, 0] + 1j * got[:64, :, 1] - ref).max() / np.abs(ref).max()


def bench(module, kind, n, block_dim, device, d):
    data, error = problem(kind, n)
    if module == "torch":
        import torch

        if kind == "cholesky":
            t = torch.tensor(data, device="cuda")
            run = lambda: torch.linalg.cholesky(t)  # noqa: E731
            out = run().cpu().numpy()
        else:
            t = torch.view_as_complex(torch.tensor(data, device="cuda"))
            run = lambda: torch.fft.fft(t, dim=-1)  # noqa: E731
            out = torch.view_as_real(run()).cpu().numpy()
        return timed(run, torch.cuda.synchronize, 20), float("nan"), error(out)
    wp = importlib.import_module(module)
    wp.config.quiet = True
    k = load_text(module, HEADER.format(module=module, n=n) + KERNELS[kind], d, prefix="bench_linalg")
    if kind == "cholesky":
        src = wp.array(data, dtype=float, device=device)
        dst = wp.zeros(data.shape, dtype=float, device=device)
    else:
        src = wp.array(data, dtype=wp.vec2f, device=device)
        dst = wp.zeros(data.shape[:2], dtype=wp.vec2f, device=device)
    kernel = getattr(k, kind)
    if module == "warp" and kind == "fft":  # cuFFTDx wants 2 to 16 points a thread
        block_dim = min(max(block_dim, n // 16), n // 2)
    run = lambda: wp.launch_tiled(kernel, dim=[data.shape[0]], inputs=[src, dst], block_dim=block_dim,  # noqa: E731
                                  device=device)
    t0 = time.perf_counter()
    run()
    wp.synchronize_device(device)
    first = time.perf_counter() - t0
    return timed(run, lambda: wp.synchronize_device(device), 20), first, error(dst.numpy())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--modules", default="tilewarp,warp,torch")
    ap.add_argument("--cholesky", default="32,64")
    ap.add_argument("--fft", default="256,1024,4096")
    ap.add_argument("--block_dim", type=int, default=64)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        os.environ.setdefault("TILEWARP_CACHE_DIR", os.path.join(d, "cache"))  # cold first launches
        print(f"{'problem':14s} {'module':9s} {'ms':>9s} {'GB/s':>7s} {'first launch s':>15s} {'error':>9s}")
        for kind, sizes in (("cholesky", a.cholesky), ("fft", a.fft)):
            for n in [int(s) for s in sizes.split(",") if s]:
                for module in a.modules.split(","):
                    label = f"{kind} {n}"
                    try:
                        s, first, err = bench(module, kind, n, a.block_dim, a.device, d)
                    except Exception as e:  # noqa: BLE001 - one failing library must not hide the others
                        print(f"{label:14s} {module:9s} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
                        continue
                    print(f"{label:14s} {module:9s} {s * 1e3:9.3f} {2 * BATCH_BYTES / s / 1e9:7.0f} {first:15.2f} "
                          f"{err:9.1e}", flush=True)


if __name__ == "__main__":
    main()
