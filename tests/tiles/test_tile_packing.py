"""One-warp tile blocks packed several to a CUDA block (emit/block.py ``pack_factor``, TW_PACK in
native/tile/tile.h): which kernels are packed, the grid a packed launch asks for, and that packed
kernels give the right answers. The CPU runs a block as one thread's loop whatever the packing, so
there the answers check the kernels; every source a test builds is also compiled for sm_90
(conftest), packed where the CUDA launch would be, and on a GPU the same tests run packed."""
from types import SimpleNamespace

import numpy as np
import pytest

import tilewarp as wp
from tilewarp.emit.block import PACK
from tilewarp.api.pipeline import CompiledKernel, source_mark

BD = 64
ROW = 128
ROWS = 1027  # more blocks than runtime/block_shape.py MANY_BLOCKS (one warp a block), not a multiple of PACK


@wp.kernel
def row_stats(a: wp.array2d(dtype=float), scaled: wp.array2d(dtype=float), top: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a[i], ROW)
    mean = wp.tile_extract(wp.tile_sum(t), 0) / float(ROW)  # lane 0's sum, read by every lane
    wp.tile_store(scaled[i], t * mean)
    wp.tile_store(top[i], wp.tile_max(t))


@wp.kernel
def lane_values(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    t = wp.tile(a[i, j] * 2.0)
    s = wp.tile_sum(t)
    out[i, j] = wp.untile(t) + wp.tile_extract(s, 0)


@wp.kernel
def row_totals_added(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.tile_atomic_add(out, wp.tile_sum(wp.tile_load(a[i], ROW)))


@wp.kernel
def rows_through_shared(a: wp.array2d(dtype=float), out: wp.array3d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a[i], ROW, storage="shared")  # 512 bytes: a slot of each tile block's own
    wp.tile_store(out[i], wp.tile_transpose(wp.tile_reshape(t, shape=(2, ROW // 2))))


@wp.kernel
def wide_rows_through_shared(a: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    t = wp.tile_load(a[i], 2 * ROW, storage="shared")  # 2 KB a tile block
    wp.tile_store(out[i], t * wp.float64(2.0))


def _pack(kernel, dim) -> int:
    from tilewarp.emit import emit_module
    from tilewarp.runtime.block_shape import block_shape

    return source_mark(emit_module(kernel.ir_for(BD), None, block_shape(kernel, dim, BD)), "tile blocks per CUDA block")


def test_light_one_warp_blocks_of_a_large_launch_are_packed():
    assert _pack(row_stats, (ROWS, BD)) == PACK
    assert _pack(lane_values, (ROWS, BD)) == PACK
    assert _pack(row_stats, (16, BD)) == 1  # few blocks keep one thread a lane: nothing to pack
    assert _pack(row_totals_added, (ROWS, BD)) == 1  # combined atomics keep their own grid
    assert _pack(rows_through_shared, (ROWS, BD)) == PACK  # each tile block has a slot of shared memory
    assert _pack(wide_rows_through_shared, (ROWS, BD)) == 1  # 64 such slots would not fit an SM


def test_a_packed_launch_covers_every_block_with_whole_cuda_blocks():
    from tilewarp.runtime.block_shape import block_shape

    shape = block_shape(row_stats, (ROWS, BD), BD)
    assert shape.threads == 32
    compiled = CompiledKernel(SimpleNamespace(kind="cuda"), None, None, None, "", block=shape, pack=PACK)
    tasks, threads = compiled.launch_dims(ROWS * BD, BD)
    assert threads == 32 * PACK
    assert -(-tasks // threads) == -(-ROWS // PACK)  # the last CUDA block runs ROWS % PACK blocks
    assert compiled.launch_dims(ROWS * BD, BD, max_blocks=7) == (7 * threads, threads)


def _packed_on_cuda(kernel, device):
    if str(device).startswith("cuda"):
        assert {c.pack for c in kernel._compiled.values() if c.block is not None} == {PACK}


def test_packed_row_kernels_give_the_right_answers(device):
    rng = np.random.default_rng(11)
    x = rng.uniform(0.5, 2.0, (ROWS, ROW)).astype(np.float32)
    a = wp.array(x, device=device)
    scaled, top = wp.zeros((ROWS, ROW), dtype=float, device=device), wp.zeros((ROWS, 1), dtype=float, device=device)
    wp.launch_tiled(row_stats, dim=[ROWS], inputs=[a, scaled, top], block_dim=BD, device=device)
    _packed_on_cuda(row_stats, device)
    np.testing.assert_allclose(scaled.numpy(), x * x.mean(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(top.numpy()[:, 0], x.max(axis=1))


def test_packed_lane_sections_give_the_right_answers(device):
    rng = np.random.default_rng(12)
    x = rng.uniform(-1.0, 1.0, (ROWS, BD)).astype(np.float32)
    a, out = wp.array(x, device=device), wp.zeros((ROWS, BD), dtype=float, device=device)
    wp.launch(lane_values, (ROWS, BD), inputs=[a, out], block_dim=BD, device=device)
    _packed_on_cuda(lane_values, device)
    np.testing.assert_allclose(out.numpy(), 2 * x + 2 * x.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_packed_blocks_keep_their_shared_tiles_apart(device):
    rng = np.random.default_rng(13)
    x = rng.uniform(-1.0, 1.0, (ROWS, ROW)).astype(np.float32)
    a, out = wp.array(x, device=device), wp.zeros((ROWS, ROW // 2, 2), dtype=float, device=device)
    wp.launch_tiled(rows_through_shared, dim=[ROWS], inputs=[a, out], block_dim=BD, device=device)
    _packed_on_cuda(rows_through_shared, device)
    want = x.reshape(ROWS, 2, ROW // 2).transpose(0, 2, 1)
    np.testing.assert_array_equal(out.numpy(), want)
