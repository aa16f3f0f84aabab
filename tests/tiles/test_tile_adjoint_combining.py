"""The adjoints of tile loads that every block makes of the same box (an MLP's weights): a CPU thread
sums them over the blocks it runs and adds into the gradient array once (tiling/combine.py,
``combined_adjoint_loads``; ``tw::adj_load_combiner``). Gradients against float64 NumPy with many
blocks, boxes that alternate inside a block, boxes that move every block, a partly outside box,
and an array the kernel also reads another way (not combined)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import load_module

TEXT = '''
import WP as wp


@wp.kernel
def layer(x: wp.array2d(dtype=float), w: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
          out: wp.array2d(dtype=float)):
    i = wp.tid()
    xs = wp.tile_load(x, shape=(8, 16), offset=(0, i * 16))        # this block's columns
    z = wp.tile_matmul(wp.tile_load(w, shape=(6, 8)), xs)          # the same weights in every block
    z += wp.tile_broadcast(wp.tile_load(b, shape=(6, 1)), shape=(6, 16))
    wp.tile_store(out, z, offset=(0, i * 16))


@wp.kernel
def two_boxes(w: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    top = wp.tile_load(w, shape=(4, 4), offset=(0, 0))
    side = wp.tile_load(w, shape=(4, 4), offset=(2, 3))            # overlaps top; 1 column outside
    wp.tile_store(out, top * 2.0 + side * side, offset=(i * 4, 0))


@wp.kernel
def also_read(w: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(w, shape=(4, 4))
    wp.tile_store(out, t * w[1, 2], offset=(i * 4, 0))
'''


@pytest.fixture(scope="module")
def mod():
    return load_module(TEXT, "tilewarp")


def test_shared_weights_over_many_blocks(mod, device, rng):
    import tilewarp as wp

    blocks = 37  # several runs per CPU worker, and a partial one
    x = rng.standard_normal((8, 16 * blocks))
    w, b = rng.standard_normal((6, 8)), rng.standard_normal((6, 1))
    wx, ww, wb = (wp.array(a, dtype=float, device=device, requires_grad=True) for a in (x, w, b))
    out = wp.zeros((6, 16 * blocks), dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(mod.layer, dim=blocks, inputs=[wx, ww, wb], outputs=[out], block_dim=32, device=device)
    g = rng.standard_normal(out.shape)
    tape.backward(grads={out: wp.array(g, dtype=float, device=device)})
    np.testing.assert_allclose(out.numpy(), w @ x + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ww.grad.numpy(), g @ x.T, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(wb.grad.numpy(), g.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(wx.grad.numpy(), w.T @ g, rtol=1e-4, atol=1e-4)


def _gradient(kernel, w, blocks, device, rng):
    """(w's gradient, the random output gradient g) of ``kernel(w) -> out`` (4 rows a block)."""
    import tilewarp as wp

    ww = wp.array(w, dtype=float, device=device, requires_grad=True)
    out = wp.zeros((4 * blocks, 4), dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(kernel, dim=blocks, inputs=[ww], outputs=[out], block_dim=16, device=device)
    g = rng.standard_normal(out.shape)
    tape.backward(grads={out: wp.array(g, dtype=float, device=device)})
    return ww.grad.numpy(), g


def test_alternating_and_partly_outside_boxes(mod, device, rng):
    blocks = 23
    w = rng.standard_normal((6, 6))
    grad, g = _gradient(mod.two_boxes, w, blocks, device, rng)
    side = np.zeros((4, 4))
    side[:, :3] = w[2:6, 3:6]  # outside the array: zeros
    want = np.zeros((6, 6))
    for i in range(blocks):
        gi = g[4 * i:4 * i + 4]
        want[0:4, 0:4] += 2.0 * gi
        want[2:6, 3:6] += (2.0 * side * gi)[:, :3]
    np.testing.assert_allclose(grad, want, rtol=1e-4, atol=1e-4)


def test_array_also_read_elsewhere(mod, device, rng):
    blocks = 9
    w = rng.standard_normal((4, 4))
    grad, g = _gradient(mod.also_read, w, blocks, device, rng)
    want = np.zeros((4, 4))
    for i in range(blocks):
        gi = g[4 * i:4 * i + 4]
        want += gi * w[1, 2]
        want[1, 2] += np.sum(gi * w)
    np.testing.assert_allclose(grad, want, rtol=1e-4, atol=1e-4)
