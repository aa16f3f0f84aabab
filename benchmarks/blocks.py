"""Block programs (tilewarp.pallas, tilewarp.arrange) against the same work written with tiles by
hand, Triton (when installed) and torch, in one process.

    python -m benchmarks.blocks [--device cuda:0] [--n 4096] [--only add,softmax,matmul] [--quick]

Vector add and row softmax of n x n float32 are memory-bound: each line prints the achieved rate
and its fraction of this device's copy rate (the best of a tile copy and torch's). The float16
GEMM (float32 sums) prints TFLOP/s and the fraction of the hand-written tile_matmul kernel's.
First calls (compile, and tuning where nothing is pinned) are timed separately.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tilewarp as wp
from tilewarp import arrange, pallas as pl
from tilewarp.arrange import Symbol, Tensor

from .matmul import timed as matmul_timed


def timed(fn, sync, iters=20):
    """Median seconds per call over 5 rounds of ``iters`` (after one warm-up call)."""
    return matmul_timed(fn, sync, iters)


def first_call(fn, sync):
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


# ---- hand-written tile kernels (the yardstick the block models lower onto) -----------------------

ADD_BLOCK = 1024
ROW = 4096
TM, TN, TK = 128, 128, 64


@wp.kernel
def tile_copy(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    wp.tile_store(y, wp.tile_load(x, shape=ADD_BLOCK, offset=i * ADD_BLOCK), offset=i * ADD_BLOCK)


@wp.kernel
def tile_add(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float)):
    i = wp.tid()
    a = wp.tile_load(x, shape=ADD_BLOCK, offset=i * ADD_BLOCK)
    b = wp.tile_load(y, shape=ADD_BLOCK, offset=i * ADD_BLOCK)
    wp.tile_store(z, a + b, offset=i * ADD_BLOCK)


@wp.kernel
def tile_softmax(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(x[i], shape=ROW)
    e = wp.exp(t - wp.tile_max(t)[0])
    wp.tile_store(y[i], e / wp.tile_sum(e)[0])


@wp.kernel
def tile_gemm(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float16), c: wp.array2d(dtype=float)):
    i, j = wp.tid()
    total = wp.tile_zeros(shape=(TM, TN), dtype=float)
    for k in range(a.shape[1] // TK):
        x = wp.tile_load(a, shape=(TM, TK), offset=(i * TM, k * TK))
        y = wp.tile_load(b, shape=(TK, TN), offset=(k * TK, j * TN))
        wp.tile_matmul(x, y, total)
    wp.tile_store(c, total, offset=(i * TM, j * TN))


# ---- the same work in the two block models -------------------------------------------------------


def pallas_add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def pallas_softmax_kernel(x_ref, o_ref):
    x = x_ref[...]
    e = wp.exp(x - wp.tile_max(x)[0])
    o_ref[...] = e / wp.tile_sum(e)[0]


def pallas_matmul_strips(x_ref, y_ref, o_ref):  # whole K strips per block, a K loop in the body
    acc = wp.tile_zeros((TM, TN), dtype=wp.float32)
    for k in range(x_ref.shape[1] // TK):
        acc += x_ref[:, pl.ds(k * TK, TK)] @ y_ref[pl.ds(k * TK, TK), :]
    o_ref[...] = acc


def pallas_matmul_grid(x_ref, y_ref, z_ref):  # K as a sequential grid axis
    @pl.when(pl.program_id(2) == 0)
    def _():
        z_ref[...] = wp.tile_zeros(z_ref.shape, dtype=z_ref.dtype)

    z_ref[...] += x_ref[...] @ y_ref[...]


BLOCK = Symbol("BLOCK", meta=True)


@arrange.jit
def arranged_add(x: Tensor(1).tile((BLOCK,)), y: Tensor(1).tile((BLOCK,)), z: Tensor(1).tile((BLOCK,))):
    z = x + y  # noqa: F841


ROWS = Tensor(2).tile((1, -1))
ROWS.dtype = ROWS.dtype.squeeze(0)


@arrange.jit
def arranged_softmax(x: ROWS, y: ROWS):
    e = wp.exp(x - wp.tile_max(x)[0])
    y = e / wp.tile_sum(e)[0]  # noqa: F841


BM, BN, BK = Symbol("BM", meta=True, upper_bound=128), Symbol("BN", meta=True, upper_bound=256), \
    Symbol("BK", meta=True, lower_bound=32, upper_bound=64)
A_T = Tensor(2).tile((BM, BK)).tile((1, -1))
B_T = Tensor(2).tile((BK, BN)).tile((-1, 1))
C_T = Tensor(2).tile((BM, BN))
A_T = A_T.expand((-1, C_T.shape[1]))
B_T = B_T.expand((C_T.shape[0], -1))
A_T.dtype = A_T.dtype.squeeze(0)
B_T.dtype = B_T.dtype.squeeze(1)


@arrange.jit
def arranged_matmul(a: A_T, b: B_T, c: C_T):
    acc = wp.tile_zeros(c.shape, dtype=wp.float32)
    for k in range(a.shape[0]):
        acc += a[k] @ b[k]
    c = acc  # noqa: F841


# ---- Triton versions (its usual style), when Triton is installed --------------------------------


def triton_kernels():
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def add(x, y, z, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(z + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

    @triton.jit
    def softmax(x, y, stride, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        v = tl.load(x + row * stride + cols, mask=cols < n, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(y + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n)

    @triton.jit
    def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm, rn, rk = pm * BM + tl.arange(0, BM), pn * BN + tl.arange(0, BN), tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc)

    return triton, add, softmax, matmul


# ---- the runs ------------------------------------------------------------------------------------


def report(name, seconds, useful, unit, ceiling=None, first=None):
    rate = useful / seconds
    line = f"  {name:<34} {seconds * 1e3:8.4f} ms  {rate:8.1f} {unit}"
    if ceiling:
        line += f"  {rate / ceiling * 100:5.1f} %"
    if first is not None:
        line += f"   first call {first:.2f} s"
    print(line, flush=True)
    return rate


def run(device, n, only, quick):
    sync = lambda: wp.synchronize_device(device)  # noqa: E731
    rng = np.random.default_rng(0)
    torch = None
    try:
        import torch
        if not torch.cuda.is_available() and device != "cpu":
            torch = None
    except ImportError:
        pass
    tdev = ("cuda" if str(device).startswith("cuda") else "cpu") if torch is not None else None
    tri = triton_kernels() if tdev == "cuda" else None
    total = n * n
    x = wp.array(rng.standard_normal(total).astype(np.float32), device=device)
    y = wp.array(rng.standard_normal(total).astype(np.float32), device=device)
    z = wp.zeros(total, dtype=float, device=device)

    copy = timed(lambda: wp.launch_tiled(tile_copy, dim=[total // ADD_BLOCK], inputs=[x, z], block_dim=256,
                                         device=device), sync)
    ceiling = 2 * total * 4 / copy / 1e9
    print(f"copy (tile_load + tile_store of {ADD_BLOCK}): {ceiling:.1f} GB/s")
    if torch is not None:
        tx, tz = wp.to_torch(x), wp.to_torch(z)
        t_copy = timed(lambda: tz.copy_(tx), sync)
        ceiling = max(ceiling, 2 * total * 4 / t_copy / 1e9)
        print(f"copy (torch copy_): {2 * total * 4 / t_copy / 1e9:.1f} GB/s; ceiling used {ceiling:.1f} GB/s")

    if "add" in only:
        print(f"vector add, {total} float32 (GB/s moved, % of copy)")
        useful = 3 * total * 4 / 1e9
        report("tiles by hand", timed(lambda: wp.launch_tiled(tile_add, dim=[total // ADD_BLOCK], inputs=[x, y, z],
                                                              block_dim=256, device=device), sync), useful, "GB/s",
               ceiling)
        f = pl.pallas_call(pallas_add_kernel, out_shape=pl.ShapeDtypeStruct((total,), np.float32),
                           grid=(total // ADD_BLOCK,), in_specs=[pl.BlockSpec((ADD_BLOCK,), lambda i: (i,))] * 2,
                           out_specs=pl.BlockSpec((ADD_BLOCK,), lambda i: (i,)))
        first = first_call(lambda: f(x, y), sync)
        report("pallas_call (block_dim tuned)", timed(lambda: f(x, y), sync), useful, "GB/s", ceiling, first)
        first = first_call(lambda: arranged_add(x, y, z), sync)
        report("arrange (BLOCK, block_dim tuned)", timed(lambda: arranged_add(x, y, z), sync), useful, "GB/s",
               ceiling, first)
        if tri is not None:
            triton, add, _, _ = tri
            tx, ty, tz = wp.to_torch(x), wp.to_torch(y), wp.to_torch(z)
            report("triton (BLOCK 1024)", timed(lambda: add[(total // 1024,)](tx, ty, tz, total, BLOCK=1024), sync),
                   useful, "GB/s", ceiling)
        if torch is not None:
            tx, ty, tz = wp.to_torch(x), wp.to_torch(y), wp.to_torch(z)
            report("torch (x + y, out=)", timed(lambda: torch.add(tx, ty, out=tz), sync), useful, "GB/s", ceiling)

    if "softmax" in only:
        rows = total // ROW
        print(f"row softmax, {rows} x {ROW} float32 (GB/s moved, % of copy)")
        useful = 2 * total * 4 / 1e9
        x2, z2 = x.reshape((rows, ROW)), z.reshape((rows, ROW))
        report("tiles by hand (block_dim 256)", timed(lambda: wp.launch_tiled(tile_softmax, dim=[rows], inputs=[x2, z2],
                                                                       block_dim=256, device=device), sync),
               useful, "GB/s", ceiling)
        spec = pl.BlockSpec((None, ROW), lambda i: (i, 0))
        f = pl.pallas_call(pallas_softmax_kernel, out_shape=pl.ShapeDtypeStruct((rows, ROW), np.float32),
                           grid=(rows,), in_specs=[spec], out_specs=spec)
        first = first_call(lambda: f(x2), sync)
        report("pallas_call (block_dim tuned)", timed(lambda: f(x2), sync), useful, "GB/s", ceiling, first)
        first = first_call(lambda: arranged_softmax(x2, z2), sync)
        report("arrange (block_dim tuned)", timed(lambda: arranged_softmax(x2, z2), sync), useful, "GB/s", ceiling,
               first)
        if tri is not None:
            triton, _, softmax, _ = tri
            tx, tz = wp.to_torch(x2), wp.to_torch(z2)
            report("triton (one row per program)", timed(lambda: softmax[(rows,)](tx, tz, ROW, ROW, BLOCK=ROW,
                                                                                  num_warps=8), sync),
                   useful, "GB/s", ceiling)
        if torch is not None:
            tx, tz = wp.to_torch(x2), wp.to_torch(z2)
            report("torch.softmax", timed(lambda: torch.softmax(tx, dim=1), sync), useful, "GB/s", ceiling)

    if "matmul" in only and device != "cpu":
        m = n
        print(f"float16 GEMM {m}^3, float32 sums (TFLOP/s, % of the tile_matmul kernel by hand)")
        a = wp.array(rng.standard_normal((m, m)).astype(np.float16), device=device)
        b = wp.array(rng.standard_normal((m, m)).astype(np.float16), device=device)
        c = wp.zeros((m, m), dtype=float, device=device)
        flops = 2 * m ** 3 / 1e12
        first = first_call(lambda: wp.launch_tiled(tile_gemm, dim=(m // TM, m // TN), inputs=[a, b, c],
                                                   block_dim=256, device=device), sync)
        hand = report(f"tiles by hand ({TM}x{TN}x{TK}, 256)", timed(lambda: wp.launch_tiled(
            tile_gemm, dim=(m // TM, m // TN), inputs=[a, b, c], block_dim=256, device=device), sync, 10), flops,
            "TFLOP/s", None, first)
        ref = c.numpy()
        f = pl.pallas_call(pallas_matmul_strips, out_shape=pl.ShapeDtypeStruct((m, m), np.float32),
                           grid=(m // TM, m // TN), block_dim=256,
                           in_specs=[pl.BlockSpec((TM, m), lambda i, j: (i, 0)),
                                     pl.BlockSpec((m, TN), lambda i, j: (0, j))],
                           out_specs=pl.BlockSpec((TM, TN), lambda i, j: (i, j)))
        first = first_call(lambda: f(a, b), sync)
        report("pallas_call, K strips", timed(lambda: f(a, b), sync, 10), flops, "TFLOP/s", hand, first)
        print(f"    max |difference| from the hand-written result: {np.abs(f(a, b).numpy() - ref).max():.3g}")
        g = pl.pallas_call(pallas_matmul_grid, out_shape=pl.ShapeDtypeStruct((m, m), np.float32),
                           grid=(m // TM, m // TN, m // TK), block_dim=256,
                           in_specs=[pl.BlockSpec((TM, TK), lambda i, j, k: (i, k)),
                                     pl.BlockSpec((TK, TN), lambda i, j, k: (k, j))],
                           out_specs=pl.BlockSpec((TM, TN), lambda i, j, k: (i, j)))
        first = first_call(lambda: g(a, b), sync)
        report("pallas_call, K a grid axis", timed(lambda: g(a, b), sync, 10), flops, "TFLOP/s", hand, first)
        first = first_call(lambda: arranged_matmul(a, b, c, BM=TM, BN=TN, BK=TK, block_dim=256), sync)
        report("arrange, pinned like the hand-written", timed(
            lambda: arranged_matmul(a, b, c, BM=TM, BN=TN, BK=TK, block_dim=256), sync, 10), flops, "TFLOP/s", hand,
            first)
        if not quick:
            first = first_call(lambda: arranged_matmul(a, b, c), sync)
            report("arrange, tuned", timed(lambda: arranged_matmul(a, b, c), sync, 10), flops, "TFLOP/s", hand, first)
        if tri is not None:
            triton, _, _, matmul = tri
            ta, tb, tc = wp.to_torch(a), wp.to_torch(b), wp.to_torch(c)
            report("triton (128x128x64, 8 warps, 3 stages)", timed(lambda: matmul[(m // 128, m // 128)](
                ta, tb, tc, m, m, m, BM=128, BN=128, BK=64, num_warps=8, num_stages=3), sync, 10), flops, "TFLOP/s",
                hand)
        if torch is not None:
            ta, tb = wp.to_torch(a), wp.to_torch(b)
            report("torch.matmul (cuBLAS, float16 out)", timed(lambda: ta @ tb, sync, 10), flops, "TFLOP/s", hand)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--only", default="add,softmax,matmul")
    ap.add_argument("--quick", action="store_true", help="skip the tuned arranged GEMM (its first call tunes)")
    a = ap.parse_args(argv)
    wp.init()
    device = wp.get_device(a.device)
    print(f"device {device} ({getattr(device, 'name', '')}), tilewarp {wp.__version__}")
    run(device, a.n, a.only.split(","), a.quick)


if __name__ == "__main__":
    main()
