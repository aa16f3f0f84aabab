"""How tile kernels are launched: the grid a launch asks for, and atomics a thread combines over
the blocks it runs (tilewarp/tiling/combine.py)."""
import numpy as np
import pytest

import tilewarp as wp
from tilewarp.api.pipeline import CompiledKernel

BD = 32


@wp.kernel
def total(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = wp.tile_sum(wp.tile(a[i] * a[i]))
    wp.tile_atomic_add(out, s)


@wp.kernel
def per_slot(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.tile_sum(wp.tile_load(a[i], BD))
    wp.tile_atomic_add(out, s, offset=(i / 5) % 3)  # runs of equal addresses, then a change


@wp.kernel
def old_values_read(a: wp.array(dtype=float), out: wp.array(dtype=float), seen: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.tile_sum(wp.tile(a[i]))
    old = wp.tile_atomic_add(out, s)
    wp.tile_store(seen, old, offset=i / BD)


@wp.kernel
def target_read_too(a: wp.array(dtype=float), out: wp.array(dtype=float), seen: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.tile_sum(wp.tile(a[i]))
    wp.tile_atomic_add(out, s)
    seen[i] = out[0]


def _combined(kernel, dim) -> int:
    from tilewarp.runtime.block_shape import block_shape
    from tilewarp.emit import emit_module
    from tilewarp.api.pipeline import source_mark

    src = emit_module(kernel.ir_for(BD), None, block_shape(kernel, dim, BD))
    return source_mark(src, "combined atomics")


def test_combined_total_matches_float64(device):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, 4096 * 3 + 17)  # a partial last block too
    a = wp.array(x, dtype=wp.float64, device=device)
    out = wp.array(np.array([1.5]), dtype=wp.float64, device=device)
    wp.launch(total, x.size, inputs=[a, out], block_dim=BD, device=device)
    assert _combined(total, x.size) == 1
    np.testing.assert_allclose(out.numpy()[0], 1.5 + np.sum(x * x), rtol=1e-12)


def test_combined_atomics_follow_address_changes(device):
    rng = np.random.default_rng(4)
    rows = 97
    x = rng.uniform(-1, 1, (rows, BD)).astype(np.float32)
    out = wp.array(rng.uniform(-1, 1, 3).astype(np.float32), device=device)
    want = out.numpy().astype(np.float64)
    for i in range(rows):
        want[(i // 5) % 3] += x[i].astype(np.float64).sum()
    wp.launch_tiled(per_slot, dim=[rows], inputs=[wp.array(x, device=device), out], block_dim=BD, device=device)
    assert _combined(per_slot, (rows, BD)) == 1
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


def test_atomics_whose_result_is_read_are_not_combined(device):
    n = 4 * BD
    x = np.arange(n, dtype=np.float32) * np.float32(0.25)
    out = wp.zeros(1, dtype=float, device=device)
    seen = wp.zeros(4, dtype=float, device=device)
    wp.launch(old_values_read, n, inputs=[wp.array(x, device=device), out, seen], block_dim=BD, device=device)
    assert _combined(old_values_read, n) == 0
    sums = x.reshape(4, BD).sum(axis=1)
    assert out.numpy()[0] == pytest.approx(sums.sum())
    # each block saw the total of some set of other blocks: a sum of a subset of the block sums
    subsets = {round(float(sums[list(m)].sum()), 3) for k in range(5) for m in _subsets(4, k)}
    assert all(round(float(v), 3) in subsets for v in seen.numpy())
    assert _combined(target_read_too, n) == 0


def _subsets(n, k):
    from itertools import combinations

    return combinations(range(n), k)


def test_launch_uses_the_grid_launch_dims_gives(monkeypatch):
    """The general launch path hands the backend the task count ``launch_dims`` asks for (on CUDA a
    tile kernel's grid differs from the launch size: fewer threads per block, max_blocks, the
    blocks the device holds at once), not the size written in the launch bounds."""
    n = 8 * BD
    x = np.ones(n)
    out = wp.zeros(1, dtype=wp.float64, device="cpu")
    a = wp.array(x, dtype=wp.float64, device="cpu")
    wp.launch(total, n, inputs=[a, out], block_dim=BD, device="cpu")
    assert out.numpy()[0] == n
    real = CompiledKernel.launch_dims
    monkeypatch.setattr(CompiledKernel, "launch_dims", lambda self, size, bd, mb=0: (size // 2, real(self, size, bd)[1]))
    from tilewarp.runtime.launch import forget_plans

    forget_plans()  # the grid of the remembered plan was worked out before
    out.zero_()
    wp.launch(total, n, inputs=[a, out], block_dim=BD, device="cpu")
    assert out.numpy()[0] == n // 2  # only the first half of the tasks ran


@wp.kernel
def total_2d(a: wp.array2d(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(2, BD), offset=(2 * i, 0))
    wp.tile_atomic_add(out, wp.tile_sum(t), offset=1)


@wp.kernel
def sum_also_stored(a: wp.array(dtype=float), out: wp.array(dtype=float), sums: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.tile_sum(wp.tile(a[i]))
    wp.tile_atomic_add(out, s)
    wp.tile_store(sums, s, offset=i / BD)


def _source(kernel, dim) -> str:
    from tilewarp.emit import emit_module
    from tilewarp.runtime.block_shape import block_shape

    return emit_module(kernel.ir_for(BD), None, block_shape(kernel, dim, BD))


def test_sums_added_into_one_place_fold_into_the_atomic(device):
    """tile_atomic_add(out, tile_sum(t)): each thread keeps the sum of its own elements over its
    blocks, reduced once per run of one address (tiling/combine.py); the per-block reduction is gone."""
    assert "tile_atomic_add_folded" in _source(total, 4096) and "tile_reduce" not in _source(total, 4096)
    assert "tile_atomic_add_folded" in _source(per_slot, (97, BD))  # uniform offsets that change
    rng = np.random.default_rng(5)
    rows = 2 * 301
    x = rng.integers(-1000, 1000, (rows, BD)).astype(np.int32)
    out = wp.array(np.array([7, -3], dtype=np.int32), device=device)
    wp.launch_tiled(total_2d, dim=[rows // 2], inputs=[wp.array(x, device=device), out], block_dim=BD, device=device)
    assert "tile_atomic_add_folded" in _source(total_2d, (rows // 2, BD))
    assert out.numpy().tolist() == [7, -3 + int(x.astype(np.int64).sum())]  # integers: exact


def test_a_sum_read_elsewhere_is_not_folded(device):
    n = 5 * BD + 3  # a partial last block
    x = np.random.default_rng(6).uniform(-1, 1, n).astype(np.float32)
    out = wp.zeros(1, dtype=float, device=device)
    sums = wp.zeros(6, dtype=float, device=device)
    wp.launch(sum_also_stored, n, inputs=[wp.array(x, device=device), out, sums], block_dim=BD, device=device)
    src = _source(sum_also_stored, n)
    assert "tile_atomic_add_combined" in src and "tile_atomic_add_folded" not in src
    want = np.add.reduceat(x.astype(np.float64), np.arange(0, n, BD))
    np.testing.assert_allclose(sums.numpy(), want, rtol=1e-5, atol=1e-5)
    assert out.numpy()[0] == pytest.approx(want.sum(), rel=1e-5, abs=1e-5)


@wp.kernel
def row_totals(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i = wp.tid()
    wp.tile_store(b[i], wp.tile_sum(wp.tile_load(a[i], 4 * BD)))


@wp.kernel
def copy_rows(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i = wp.tid()
    wp.tile_store(b[i], wp.tile_load(a[i], 4 * BD))


@wp.kernel
def scaled_totals(a: wp.array2d(dtype=float), w: wp.array(dtype=float), b: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a[i], 4 * BD) * wp.tile_load(w, 4 * BD)  # w: the same for every block
    wp.tile_store(b[i], wp.tile_sum(t))


def test_only_reductions_whose_reads_move_with_the_block_stream():
    """Streaming reads (ld.global.cs, tiling/streaming.py): a kernel that reads far more than it
    writes, each read at the launch coordinate; not a copy, not one that reads a shared weight."""
    from tilewarp.tiling.streaming import streams_reads

    assert streams_reads(row_totals.ir_for(BD), BD) and streams_reads(total.ir_for(BD), BD)
    assert not streams_reads(copy_rows.ir_for(BD), BD)
    assert not streams_reads(scaled_totals.ir_for(BD), BD)
    assert "stream_reads<0>" in _source(row_totals, (64, BD)) and "stream_reads<0>" not in _source(copy_rows, (64, BD))


def test_streaming_kernels_give_the_same_answers(device):
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, (37, 4 * BD)).astype(np.float32)
    w = rng.uniform(-1, 1, 4 * BD).astype(np.float32)
    a, b = wp.array(x, device=device), wp.zeros((37, 1), dtype=float, device=device)
    wp.launch_tiled(row_totals, dim=[37], inputs=[a, b], block_dim=BD, device=device)
    np.testing.assert_allclose(b.numpy()[:, 0], x.sum(axis=1), rtol=1e-5, atol=1e-5)
    wp.launch_tiled(scaled_totals, dim=[37], inputs=[a, wp.array(w, device=device), b], block_dim=BD, device=device)
    np.testing.assert_allclose(b.numpy()[:, 0], (x * w).sum(axis=1), rtol=1e-5, atol=1e-5)


@wp.kernel
def block_coords_2d(out: wp.array2d(dtype=wp.int32), first: wp.array(dtype=wp.int32), lanes: wp.array2d(dtype=wp.int32)):
    i, j = wp.tid()
    wp.tile_atomic_add(first, wp.tile_ones(shape=1, dtype=wp.int32), offset=i)
    out[i, j] = i * 1000 + j


@wp.kernel
def block_coords_3d(out: wp.array3d(dtype=wp.int32)):
    i, j, k = wp.tid()
    t = wp.tile_full(shape=1, value=i * 10000 + j * 100 + k, dtype=wp.int32)
    wp.tile_store(out[i, j], t, offset=k)


@wp.kernel
def first_coord(count: wp.array(dtype=wp.int32)):
    i = wp.tid()  # in a 2-d tiled launch: the first coordinate
    wp.tile_atomic_add(count, wp.tile_ones(shape=1, dtype=wp.int32), offset=i)


@wp.kernel
def coords_and_lane(lanes: wp.array2d(dtype=wp.int32)):
    i, j, lane = wp.tid()
    wp.atomic_add(lanes, i, j, lane)
    wp.tile_atomic_add(lanes[i], wp.tile_zeros(shape=1, dtype=wp.int32), offset=j)


def test_tiled_launch_coordinates_come_from_the_block_index(device):
    """In wp.launch_tiled the last launch dimension is the lanes: the block's coordinates are read
    from its index without dividing by the lanes (emit/block.py, tw::block_tid); every arity of
    wp.tid() gives Warp's values."""
    out = wp.full((7, 5), -1, dtype=wp.int32, device=device)
    first = wp.zeros(7, dtype=wp.int32, device=device)
    wp.launch_tiled(block_coords_2d, dim=[7, 5], inputs=[out, first, out], block_dim=BD, device=device)
    i, j = np.meshgrid(np.arange(7), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(out.numpy(), i * 1000 + j)
    np.testing.assert_array_equal(first.numpy(), np.full(7, 5))
    out3 = wp.full((3, 4, 5), -1, dtype=wp.int32, device=device)
    wp.launch_tiled(block_coords_3d, dim=[3, 4, 5], inputs=[out3], block_dim=BD, device=device)
    i, j, k = np.meshgrid(np.arange(3), np.arange(4), np.arange(5), indexing="ij")
    np.testing.assert_array_equal(out3.numpy(), i * 10000 + j * 100 + k)
    count = wp.zeros(6, dtype=wp.int32, device=device)
    wp.launch_tiled(first_coord, dim=[6, 9], inputs=[count], block_dim=BD, device=device)
    np.testing.assert_array_equal(count.numpy(), np.full(6, 9))
    lanes = wp.zeros((4, 3), dtype=wp.int32, device=device)
    wp.launch_tiled(coords_and_lane, dim=[4, 3], inputs=[lanes], block_dim=BD, device=device)
    np.testing.assert_array_equal(lanes.numpy(), np.full((4, 3), BD * (BD - 1) // 2))


@wp.kernel
def coords_in_lanes(out: wp.array3d(dtype=wp.int32), total: wp.array(dtype=wp.int32)):
    i, j, k = wp.tid()
    out[i, j, k] = i * 10000 + j * 100 + k
    wp.tile_atomic_add(total, wp.tile_sum(wp.tile(k)))


def test_launch_coordinates_divide_by_the_hosts_reciprocals(device):
    """wp.tid() divides by the launch extents through reciprocals the host computes (launch.h
    quotient): lanes whose coordinates wrap inside a block, odd extents, blocks ending mid-row."""
    from tilewarp.language.types import reciprocal

    rng = np.random.default_rng(8)
    for e in [*range(1, 70), 2**31 - 1, 2**30 + 1, *rng.integers(2, 2**31 - 1, 300)]:
        mul, shift = reciprocal(int(e))
        n = np.concatenate([rng.integers(0, 2**31 - 1, 64), [0, e - 1, e, 2 * e - 1, 2**31 - 1]]).astype(np.uint64)
        n = n[n < 2**31]
        got = n if mul == 0 else ((n * np.uint64(mul)) >> np.uint64(32)) >> np.uint64(shift)
        np.testing.assert_array_equal(got, n // np.uint64(e))
    for dims in [(5, 3, 7), (2, 9, 13), (3, 4, 64)]:
        out = wp.full(dims, -1, dtype=wp.int32, device=device)
        total = wp.zeros(1, dtype=wp.int32, device=device)
        wp.launch(coords_in_lanes, dims, inputs=[out, total], block_dim=BD, device=device)
        i, j, k = np.meshgrid(*(np.arange(d) for d in dims), indexing="ij")
        np.testing.assert_array_equal(out.numpy(), i * 10000 + j * 100 + k)
        assert total.numpy()[0] == k.sum()


TILE_NB = 32


@wp.kernel
def pulls(x: wp.array(dtype=wp.vec3), soft2: float, a: wp.array(dtype=wp.vec3)):
    block, lane = wp.tid()
    i = block * TILE_NB + lane
    xi = x[i]
    acc = wp.vec3()
    for batch in range(x.shape[0] // TILE_NB):
        stars = wp.tile_load(x, shape=TILE_NB, offset=batch * TILE_NB, storage="shared")
        for j in range(TILE_NB):
            d = stars[j] - xi  # d, r2 and the pull live within one lane section: locals of the lane loop
            r2 = wp.length_sq(d) + soft2
            acc += d / (r2 * wp.sqrt(r2))
    a[i] = acc


@pytest.mark.parametrize("n", [TILE_NB, 4 * TILE_NB])
def test_section_local_lane_values_match_numpy(n):
    """Per-lane temporaries of one lane section are plain locals in the generated code (not arrays
    over the lanes), per-lane vectors written whole are stored by components (TW_SOA_VARYING), and
    the N-body pulls they compute match float64 NumPy's."""
    x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
    a = wp.zeros(n, dtype=wp.vec3)
    wp.launch_tiled(pulls, dim=[n // TILE_NB], inputs=[wp.array(x, dtype=wp.vec3), 0.01], outputs=[a],
                    block_dim=TILE_NB)
    d = x[None, :, :].astype(np.float64) - x[:, None, :]
    r2 = (d * d).sum(-1) + 0.01
    want = (d / (r2 * np.sqrt(r2))[..., None]).sum(1)
    np.testing.assert_allclose(a.numpy(), want, rtol=2e-4, atol=2e-4)
    from tilewarp.emit.block import BlockShape

    source = pulls.compiled(wp.get_device("cpu"), BlockShape(TILE_NB)).source
    assert source.count("TW_VARYING(") >= 1  # i: it crosses sections
    assert source.count("TW_SOA_VARYING(") == 2  # xi, acc: vectors written whole, read as values
    assert "tw::vec_t<3, float> v" in source.split("TW_LANES_BEGIN", 3)[3]  # d, declared in its section
