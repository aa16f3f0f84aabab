"""How tile kernels are launched: the grid a launch asks for, and atomics a thread combines over
the blocks it runs (tilewarp/block/combine.py)."""
import numpy as np
import pytest

import tilewarp as wp
from tilewarp.pipeline import CompiledKernel

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
    from tilewarp.runtime.tiled import block_shape
    from tilewarp.emit import emit_module
    from tilewarp.pipeline import source_mark

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
    out.zero_()
    wp.launch(total, n, inputs=[a, out], block_dim=BD, device="cpu")
    assert out.numpy()[0] == n // 2  # only the first half of the tasks ran
