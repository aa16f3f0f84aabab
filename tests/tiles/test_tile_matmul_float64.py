"""float64 tile_matmul on the tensor-core path (native/tile/dmma.h on CUDA: m16n8k8 warp tiles, the
transposed path for 16-column multiples and swizzled operands; mma.h's m8n8k4 tiles for other
8-row multiples) against NumPy.

The shapes cover several warp tilings (one block to 64 x 32 warp tiles, warps sharing tiles evenly
or not), K of 16-multiples (the swizzled layout), 8-multiples and a last k4 step, outputs in
registers across a K loop and outputs in shared memory, and operands that may not be swizzled. On the
CPU they run the host GEMM; the test session compiles each kernel for sm_90 through NVRTC, and on
cuda:0 (TILEWARP_TEST_DEVICES=cuda:0) they check the DMMA paths' sums.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module

# the chapter's GEMM: a K loop accumulating into a register tile
GEMM = '''
import WP as wp

TM = wp.constant({tm})
TN = wp.constant({tn})
TK = wp.constant({tk})


@wp.kernel
def gemm(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64), c: wp.array2d(dtype=wp.float64)):
    i, j = wp.tid()
    total = wp.tile_zeros(shape=(TM, TN), dtype=wp.float64)
    for k in range(a.shape[1] // TK):
        x = wp.tile_load(a, shape=(TM, TK), offset=(i * TM, k * TK))
        y = wp.tile_load(b, shape=(TK, TN), offset=(k * TK, j * TN))
        wp.tile_matmul(x, y, total)
    wp.tile_store(c, total, offset=(i * TM, j * TN))
'''
# the same, its sums also read by an add (so they live in shared memory), with alpha and beta
SHARED_OUT = GEMM.replace("    wp.tile_store(c, total, offset=(i * TM, j * TN))", '''    old = wp.tile_load(c, shape=(TM, TN), offset=(i * TM, j * TN))
    wp.tile_matmul(wp.tile_load(a, shape=(TM, TK), offset=(i * TM, 0)), wp.tile_load(b, shape=(TK, TN), offset=(0, j * TN)),
                   old, alpha=0.5, beta=-2.0)
    wp.tile_store(c, total + old, offset=(i * TM, j * TN))''')

# (tile M, N, K, block_dim): 16-column products (dmma.h's transposed path) of several warp tilings,
# 16-row ones (its other path), then neither (m8n8k4)
SHAPES = [
    (8, 16, 16, 32),     # one 8 x 16 block
    (16, 16, 4, 32),     # a single k4 step
    (32, 32, 16, 64),
    (64, 64, 32, 128),   # the benchmark's default: 32 x 32 warp tiles
    (64, 64, 16, 128),
    (128, 64, 16, 128),  # 64 x 32 warp tiles
    (128, 128, 16, 256),
    (64, 64, 32, 64),    # two warps, 64 x 32 warp tiles
    (48, 48, 16, 96),    # three warps, 16 x 16 warp tiles
    (40, 48, 24, 64),    # K % 16 == 8: row-major operands; warps sharing 15 tiles unevenly
    (24, 32, 20, 64),    # K % 8 == 4: a last k4 step
    (8, 64, 8, 32),      # an 8 x 64 warp tile
    (32, 16, 16, 256),   # more warps than tiles: some hold none (shared sums only)
    (16, 8, 16, 32),     # 16-row products: one 16 x 8 block
    (48, 40, 24, 96),    # 16 x 8 warp tiles, 5 a warp
    (32, 24, 20, 64),    # and a last k4 step
    (16, 72, 8, 32),     # 16 x 64 warp tiles and one of 16 x 8
    (24, 8, 8, 32),      # 8-row multiples: m8n8k4
    (8, 24, 12, 64),
]


def _check(got, a, b, first=None):
    want = a @ b + (0 if first is None else first)
    scale = np.abs(a) @ np.abs(b) + 1.0
    err = np.abs(got - want) / scale
    assert err.max() <= 1e-14, f"max scaled error {err.max():.3g}"


@pytest.mark.parametrize("tm,tn,tk,block_dim", SHAPES)
def test_float64_gemm(device, rng, tm, tn, tk, block_dim):
    mod = load_module(GEMM.format(tm=tm, tn=tn, tk=tk), "tilewarp")
    bm, bn, kt = 2, 3, 3
    a = rng.uniform(-1, 1, (bm * tm, kt * tk))
    b = rng.uniform(-1, 1, (kt * tk, bn * tn))
    wc = wp.zeros((bm * tm, bn * tn), dtype=wp.float64, device=device)
    wp.launch_tiled(mod.gemm, dim=(bm, bn), inputs=[wp.array(a, device=device), wp.array(b, device=device), wc],
                    block_dim=block_dim, device=device)
    _check(wc.numpy(), a, b)


@pytest.mark.parametrize("tm,tn,tk,block_dim",
                         [(64, 64, 32, 128), (24, 32, 20, 64), (32, 24, 20, 64), (32, 16, 16, 256), (24, 8, 8, 32)])
def test_float64_gemm_sums_in_shared_memory(device, rng, tm, tn, tk, block_dim):
    """Sums read by another op stay in shared memory: the tensor-core path writes them through the
    output's layout (alpha, beta, and warps without a tile of their own)."""
    mod = load_module(SHARED_OUT.format(tm=tm, tn=tn, tk=tk), "tilewarp")
    bm, bn, kt = 2, 2, 3
    a = rng.uniform(-1, 1, (bm * tm, kt * tk))
    b = rng.uniform(-1, 1, (kt * tk, bn * tn))
    c = rng.uniform(-1, 1, (bm * tm, bn * tn))
    wc = wp.array(c, device=device)
    wp.launch_tiled(mod.gemm, dim=(bm, bn), inputs=[wp.array(a, device=device), wp.array(b, device=device), wc],
                    block_dim=block_dim, device=device)
    first = np.zeros_like(c)
    for i in range(bm):
        for j in range(bn):
            r, s = slice(i * tm, (i + 1) * tm), slice(j * tn, (j + 1) * tn)
            first[r, s] = a[r, :tk] @ b[:tk, s]
    _check(wc.numpy(), a, b, 0.5 * first - 2.0 * c)


@pytest.mark.parametrize("tm,tn,tk,block_dim,kind,swizzled", [
    (64, 64, 32, 128, 2, 2),    # every extent a multiple of 16: both operands swizzled
    (128, 128, 16, 256, 2, 2),
    (40, 48, 16, 96, 2, 2),     # 8-row multiples of 16-column products: swizzled too
    (48, 48, 24, 96, 2, 0),     # K % 16 != 0: row-major operands
    (48, 40, 16, 96, 2, 0),     # 16-row products of 8-column multiples: row-major
    (24, 8, 8, 32, 2, 0),       # m8n8k4 tiles, row-major
    (32, 16, 16, 256, 0, 2),    # 8 warps for at most 4 warp tiles: sums in shared memory, operands swizzled
])
def test_float64_storage(tm, tn, tk, block_dim, kind, swizzled):
    """What tiling/storage.py picks for the chapter's GEMM: register sums (mtile kind 2) where every
    warp holds as many, and swizzled operands where the extents are whole 16-column strips."""
    from tilewarp.tiling.storage import accumulators

    mod = load_module(GEMM.format(tm=tm, tn=tn, tk=tk), "tilewarp")
    kinds, swz = accumulators(mod.gemm.ir_for(block_dim), block_dim)
    assert set(kinds.values()) == ({kind} if kind else set())
    assert len(swz) == swizzled and all(v == (16, 8) for v in swz.values())


SQUARE = '''
import WP as wp


@wp.kernel
def square(a: wp.array2d(dtype=wp.float64), c: wp.array2d(dtype=wp.float64), d: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=(32, 32))
    total = wp.tile_zeros(shape=(32, 32), dtype=wp.float64)
    wp.tile_matmul(x, x, total)
    wp.tile_store(c, total)
    {tail}
'''


@pytest.mark.parametrize("tail,swizzled", [("", 1), ("wp.tile_store(d, x)", 0)])
def test_float64_operand_in_both_places_or_read_elsewhere(device, rng, tail, swizzled):
    """One tile as both operands (one swizzled layout serves both reads); a tile also read by a store
    keeps the row-major layout (the swizzled one has no strides)."""
    from tilewarp.tiling.storage import accumulators

    mod = load_module(SQUARE.format(tail=tail), "tilewarp")
    assert len(accumulators(mod.square.ir_for(64), 64)[1]) == swizzled
    a = rng.uniform(-1, 1, (32, 32))
    c, d = (wp.zeros((32, 32), dtype=wp.float64, device=device) for _ in range(2))
    wp.launch_tiled(mod.square, dim=1, inputs=[wp.array(a, device=device), c, d], block_dim=64, device=device)
    _check(c.numpy(), a, a)


def test_warp_tiles_mirror_the_native_choice(tmp_path):
    """tiling/storage.py's _dmma_tiles and dmma.h's dmma_pick choose the same warp tiles: the C++
    choice checked by static_asserts in one NVRTC compile."""
    from tilewarp.compile.nvrtc import compile_cubin
    from tilewarp.tiling.storage import _dmma_tiles

    lines = ['#include "tilewarp.h"']
    for m in (8, 16, 24, 32, 48, 64, 128, 256):
        for n in (8, 16, 24, 32, 40, 64, 72, 128, 256):
            for warps in (1, 2, 3, 4, 8, 16):
                tm, tn, _ = _dmma_tiles(m, n, warps)
                lines.append(f"static_assert(tw::detail::dmma_tiling<{m}, {n}, {32 * warps}>::TM == {tm} && "
                             f"tw::detail::dmma_tiling<{m}, {n}, {32 * warps}>::TN == {tn}, \"{m} {n} {warps}\");")
    lines.append('extern "C" __global__ void nothing() {}')
    compile_cubin("\n".join(lines), "dmma_tiles", 90, source_dir=str(tmp_path))
