"""Every tile operation, against warp-lang running the same kernel text on its CPU and against NumPy.

Warp's CPU runs tile kernels with one lane per block unless ``wp.config.enable_cpu_blocks`` is set,
so Warp runs here with real blocks of ``BD`` lanes (its fiber-based CPU blocks), which is what a
GPU does and what tilewarp's CPU always does; results then agree lane for lane.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import load_both
from tile_kernels_text import TEXT

MODS = load_both(TEXT)
TW = MODS[0]
BD = 16
M, N = 5, 12


def launch(mod, kernel, dim, args, device, tiled=True):
    """Launch ``kernel`` of ``mod`` on fresh copies of ``args`` (numpy arrays or scalars); the arrays after."""
    wp = mod.wp
    is_warp = wp.__name__ == "warp"
    if is_warp:
        saved, wp.config.enable_cpu_blocks = wp.config.enable_cpu_blocks, True
        device = "cpu"
    try:
        values = [_array(wp, a, device) if isinstance(a, (np.ndarray, tuple)) else a for a in args]
        if tiled:
            wp.launch_tiled(getattr(mod, kernel), dim=dim, inputs=values, block_dim=BD, device=device)
        else:
            wp.launch(getattr(mod, kernel), dim=dim, inputs=values, block_dim=BD, device=device)
        wp.synchronize()
        return [v.numpy() for v in values if isinstance(v, wp.array)]
    finally:
        if is_warp:
            wp.config.enable_cpu_blocks = saved


def _array(wp, a, device):
    """A numpy array as an array of its scalar type, or ``(name, data)`` as an array of ``wp.<name>``."""
    if isinstance(a, tuple):
        return wp.array(a[1], dtype=getattr(wp, a[0]), device=device)
    dtype = {np.dtype(np.float32): wp.float32, np.dtype(np.int32): wp.int32, np.dtype(np.float64): wp.float64}
    return wp.array(a, dtype=dtype[a.dtype], device=device)


def both(kernel, dim, args, device, tiled=True):
    """tilewarp's results on ``device``; Warp's alongside when it is installed (else None)."""
    ours = launch(TW, kernel, dim, args, device, tiled)
    theirs = launch(MODS[1], kernel, dim, args, "cpu", tiled) if MODS[1] is not None else None
    return ours, theirs


def same(ours, theirs, rtol=1e-5, atol=1e-6):
    if theirs is None:
        return
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_load_store_pads_and_skips_out_of_bounds(device, rng):
    a = rng.normal(size=(12, 30)).astype(np.float32)  # 3 x 3 tiles of 5 x 12: the last row/column partial
    b = np.full_like(a, -1.0)
    ours, theirs = both("load_store", (3, 3), [a, b], device)
    np.testing.assert_array_equal(ours[1], a)
    same(ours, theirs)
    a2 = rng.normal(size=(10, 17)).astype(np.float32)
    out = launch(TW, "load_shared_store", (2,), [a2, np.zeros((10, 12), np.float32)], device)[1]
    want = np.zeros((10, 12), np.float32)
    want[:, :14] = a2[:, 3:15]
    np.testing.assert_array_equal(out, want[:, :12])


def test_arithmetic(device, rng):
    a = rng.normal(size=(10, N)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, size=(10, N)).astype(np.float32)
    ours, theirs = both("arithmetic", (2,), [a, b, np.zeros((6, 10, N), np.float32)], device)
    want = [a + b, a - b, a * b, a / b, -a * 2, 0.5 * b]
    np.testing.assert_allclose(ours[2], np.stack(want), rtol=1e-6)
    same(ours, theirs)


def test_maps_builtins_funcs_and_inlined_tile_functions(device, rng):
    a = rng.normal(size=(10, N)).astype(np.float32)
    b = rng.normal(size=(10, N)).astype(np.float32)
    ours, theirs = both("maps", (2,), [a, b, 1.5, np.zeros((5, 10, N), np.float32)], device)
    want = [np.sin(a), np.sin(a) * b + a * a, a * b - a, a * 1.5, a + 2 * b]
    np.testing.assert_allclose(ours[2], np.stack(want), rtol=1e-5, atol=1e-6)
    same(ours, theirs)


def test_reductions(device, rng):
    a = (rng.uniform(0.8, 1.25, size=(15, N)) * rng.choice([-1, 1], size=(15, N))).astype(np.float32)
    a[7, 3] = a[7, 9] = a[7].min() - 1  # a tie: argmin is the first
    outs = [np.zeros(3, np.float32), np.zeros((3, M), np.float32), np.zeros((3, N), np.float32),
            np.zeros((3, 4), np.float32), np.zeros((3, 2), np.int32)]
    ours, theirs = both("reductions", (3,), [a, *outs], device)
    blocks = a.reshape(3, M, N)
    np.testing.assert_allclose(ours[1], blocks.sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_allclose(ours[2], blocks.sum(axis=2), rtol=1e-5)
    np.testing.assert_array_equal(ours[3], blocks.max(axis=1))
    flat = blocks.reshape(3, -1).astype(np.float64)
    want = np.stack([flat.min(1), flat.max(1), flat.prod(1), (flat * 0.5).prod(1)], axis=1)
    np.testing.assert_allclose(ours[4], want, rtol=1e-4)
    np.testing.assert_array_equal(ours[5], np.stack([flat.argmin(1), flat.argmax(1)], axis=1))
    # Warp picks an unspecified index among ties; tilewarp the first, as NumPy: compare the rest
    same(ours[:5], theirs[:5] if theirs else None, rtol=1e-4)


def test_scans(device, rng):
    a = rng.normal(size=37).astype(np.float32)
    b = rng.integers(-5, 9, size=37).astype(np.int32)
    ours, theirs = both("scans", (1,), [a, b, np.zeros((3, 37), np.float32), np.zeros((2, 37), np.int32)], device)
    np.testing.assert_allclose(ours[2][0], np.cumsum(a), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[2][1], np.concatenate([[0], np.cumsum(a)[:-1]]), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(ours[2][2], np.maximum.accumulate(a))
    np.testing.assert_array_equal(ours[3], np.stack([np.cumsum(b), np.concatenate([[0], np.cumsum(b)[:-1]])]))
    same(ours, theirs, rtol=1e-5, atol=1e-5)


def test_sort_moves_values_with_keys(device, rng):
    keys = rng.permutation(45).astype(np.float32) * 0.5
    values = np.arange(45, dtype=np.int32)
    ours, theirs = both("sort", (1,), [keys, values], device)
    order = np.argsort(keys)
    np.testing.assert_array_equal(ours[0], keys[order])
    np.testing.assert_array_equal(ours[1], values[order])
    same(ours, theirs)


def test_sort_of_one_tile_as_keys_and_values(device, rng):
    keys = rng.permutation(300)[:65].astype(np.int32)
    ours = launch(TW, "sort_same", (1,), [keys], device)
    np.testing.assert_array_equal(ours[0], np.sort(keys))


def test_broadcast_transpose_reshape_squeeze_astype(device, rng):
    a = rng.normal(size=(M, N)).astype(np.float32)
    outs = [np.zeros((M, N), np.float32), np.zeros((N, M), np.float32), np.zeros((N, M), np.float32),
            np.zeros(N, np.float32), np.zeros((M, N), np.int32)]
    ours, theirs = both("shapes", (1,), [a, *outs], device)
    np.testing.assert_allclose(ours[1], a + a[2], rtol=1e-6)
    np.testing.assert_array_equal(ours[2], a.T)
    np.testing.assert_array_equal(ours[3], a.reshape(N, -1))
    np.testing.assert_array_equal(ours[4], a[2])
    np.testing.assert_array_equal(ours[5], (a * 10).astype(np.int32))
    same(ours, theirs)


def test_views_alias_their_tile(device, rng):
    """tile_view, slices and rows are views: tile_assign through a row writes the tile itself."""
    a = rng.normal(size=(M, N)).astype(np.float32)
    outs = [np.zeros((3, 4), np.float32), np.zeros((3, 4), np.float32), np.zeros((M, N), np.float32)]
    ours, theirs = both("views", (1,), [a, *outs], device)
    np.testing.assert_array_equal(ours[1], a[1:4, 2:6])
    np.testing.assert_array_equal(ours[2], a[1:4, ::3])
    want = a[::-1].copy()
    want[0, 0] = 100.0
    np.testing.assert_array_equal(ours[3], want)
    same(ours, theirs)


def test_tile_and_untile_gather_the_block_lanes(device, rng):
    n = 3 * BD
    a = rng.normal(size=n).astype(np.float32)
    v = rng.normal(size=(n, 3)).astype(np.float32)
    ours = launch(TW, "simt_tiles", n, [a, np.zeros(n, np.float32), ("vec3", v), ("vec3", np.zeros((n, 3), np.float32))],
                  device, tiled=False)
    x = 2 * a
    np.testing.assert_allclose(ours[1], x * x + np.repeat(x.reshape(3, BD).sum(1), BD), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[3], 1.5 * v, rtol=1e-6)


def test_lanes_write_tile_elements(device, rng):
    n = 2 * BD
    a = rng.normal(size=n).astype(np.float32)
    ours = launch(TW, "elements", n, [a, np.zeros(8, np.float32), np.zeros(n, np.float32)], device, tiled=False)
    hist = np.stack([np.bincount(np.arange(BD) % 4, weights=a[b * BD:(b + 1) * BD], minlength=4) for b in range(2)])
    np.testing.assert_allclose(ours[1], hist.reshape(-1), rtol=1e-5)
    flipped = a.reshape(2, BD)[:, ::-1].reshape(-1)
    np.testing.assert_allclose(ours[2], flipped + np.repeat(hist[:, 0], BD), rtol=1e-5)


def test_atomic_add_returns_old_values(device, rng):
    a = rng.normal(size=40).astype(np.float32)
    acc = rng.normal(size=30).astype(np.float32)  # block 1's tile starts at 20 and runs past the end
    ours = launch(TW, "atomics", (2,), [a, acc, np.zeros(40, np.float32)], device)
    want = acc + a[:30]
    np.testing.assert_allclose(ours[1], want, rtol=1e-6)
    np.testing.assert_allclose(ours[2], np.concatenate([acc, np.zeros(10, np.float32)]), rtol=1e-6)


def test_construction(device):
    ours, theirs = both("construction", (1,), [np.zeros((4, N), np.float32), np.zeros(12, np.int32)], device)
    np.testing.assert_array_equal(ours[0], np.stack([np.ones(N), np.full(N, 2.5), np.arange(N) * 0.5,
                                                     np.arange(1.0, 7.0, 0.5)]))
    np.testing.assert_array_equal(ours[1], np.arange(20, 8, -1))
    same(ours, theirs)


def test_portable_matmul_both_forms(device, rng):
    a = rng.normal(size=(M, 7)).astype(np.float32)
    b = rng.normal(size=(7, N)).astype(np.float32)
    ours = launch(TW, "matmul", (1,), [a, b, np.zeros((M, N), np.float32)], device)
    np.testing.assert_allclose(ours[2], 2 * a @ b + 0.5 + a @ b, rtol=1e-5, atol=1e-5)


def test_axpy_and_dot(device, rng):
    a = rng.normal(size=(M, N)).astype(np.float32)
    b = rng.normal(size=(M, N)).astype(np.float32)
    ours, theirs = both("fused", (1,), [a, b, np.zeros((M, N), np.float32), np.zeros(1, np.float32)], device)
    np.testing.assert_allclose(ours[2], b + 2 * a, rtol=1e-6)
    np.testing.assert_allclose(ours[3], [np.sum(a * a)], rtol=1e-5)
    same(ours, theirs)


def test_indexed_load_and_store(device, rng):
    a = rng.normal(size=(6, N)).astype(np.float32)
    idx = np.array([4, -1, 0, 9], np.int32)  # -1 and 9 are outside: zeros, skipped
    ours, theirs = both("indexed", (1,), [a, idx, np.zeros((4, N), np.float32), np.zeros((6, N), np.float32)], device)
    want = np.stack([a[4], np.zeros(N), a[0], np.zeros(N)]).astype(np.float32)
    np.testing.assert_array_equal(ours[2], want)
    scat = np.zeros((6, N), np.float32)
    scat[4], scat[0] = 2 * a[4], 2 * a[0]
    np.testing.assert_array_equal(ours[3], scat)
    same(ours, theirs)


def test_from_thread_broadcasts_one_lane(device):
    ours = launch(TW, "from_thread", 2 * BD, [np.zeros((4, 3), np.float32)], device, tiled=False)
    np.testing.assert_array_equal(ours[0], np.repeat([[50.0] * 3, [(BD + 5) * 10.0] * 3], 2, axis=0))


def test_lanes_that_return_sit_out_the_rest(device, rng):
    """A lane may return in per-lane code; the block's tile operations still run (tilewarp's rule;
    in Warp a thread that returns before a tile operation leaves the block in an undefined state)."""
    n = 2 * BD
    a = rng.normal(size=n).astype(np.float32)
    ours = launch(TW, "lane_return", n, [a, np.zeros(n, np.float32), np.zeros(1, np.float32)], device, tiled=False)
    i = np.arange(n)
    np.testing.assert_allclose(ours[1], np.where(i % 3 == 0, 0.0, 2 * a), rtol=1e-6)
    np.testing.assert_allclose(ours[2], [a.sum()], rtol=1e-5)


def test_gather_with_an_index_tile(device, rng):
    a = rng.normal(size=(M, N)).astype(np.float32)
    ours, theirs = both("gather", (1,), [a, np.zeros((4, N), np.float32), np.zeros((M, 3), np.float32)], device)
    np.testing.assert_array_equal(ours[1], 2 * a[[4, 3, 2, 1]])
    np.testing.assert_array_equal(ours[2], a[:, [-1, -2, -3]])
    same(ours, theirs)


def test_stack_push_pop_count(device):
    ours = launch(TW, "stack", (1,), [np.zeros(2, np.int32), np.full(6, -1, np.int32)], device)
    assert ours[0][0] == 6 and ours[0][1] == 0  # 8 of 16 lanes pushed into 6 slots; 16 pops empty it
    assert len(set(ours[1].tolist())) == 6 and set(ours[1]) <= set(range(0, 160, 20))  # 6 distinct pushed values


def test_scatter_add_and_masked(device, rng):
    n = 2 * BD
    a = rng.normal(size=n).astype(np.float32)
    ours = launch(TW, "scatter", n, [a, np.zeros(8, np.float32), np.zeros(n, np.float32)], device, tiled=False)
    i = np.arange(n)
    sums = np.zeros(8)
    np.add.at(sums, (i // BD) * 4 + i % 4, np.where(i % 3 != 0, a, 0))
    np.testing.assert_allclose(ours[1], sums, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[2], np.where(i % 2 == 1, 2 * a, 0), rtol=1e-6)


PRINT = '''
import WP as wp


@wp.kernel
def show(x: wp.array2d(dtype=wp.int32)):
    t = wp.tile_load(x, shape=(2, 3))
    print(t)
    wp.print(wp.tile_ones(shape=2, dtype=float, storage="shared"))
'''


def test_print_a_tile(capfd):
    """Lane 0 prints the whole tile in Warp's format (nested brackets, then shape and storage)."""
    from conftest import load_module

    mod = load_module(PRINT, "tilewarp")
    x = mod.wp.array(np.arange(6, dtype=np.int32).reshape(2, 3), dtype=mod.wp.int32, device="cpu")
    mod.wp.launch_tiled(mod.show, dim=1, inputs=[x], block_dim=8, device="cpu")
    out = capfd.readouterr().out
    assert "[[0 1 2]\n [3 4 5]] = tile(shape=(2,3), storage=register)\n" in out
    assert "[1 1] = tile(shape=(2), storage=shared)\n" in out
