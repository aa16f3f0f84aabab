"""The backward replays only what the reverse pass reads (tilewarp/emit/replay_needs.py): the
gradients stay those of NumPy / finite differences, and the replay of a result no adjoint reads
(a tile GEMM's sum, a stored value) is left out of the backward source."""
import numpy as np
import pytest

import tilewarp as wp

TM, TN, TK = 16, 16, 8


@wp.kernel
def gemm(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    i, j = wp.tid()
    total = wp.tile_zeros(shape=(TM, TN), dtype=float)
    for k in range(a.shape[1] // TK):
        x = wp.tile_load(a, shape=(TM, TK), offset=(i * TM, k * TK))
        y = wp.tile_load(b, shape=(TK, TN), offset=(k * TK, j * TN))
        wp.tile_matmul(x, y, total)
    wp.tile_store(c, total, offset=(i * TM, j * TN))


@wp.kernel
def sines(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    y = wp.sin(a[i]) * 3.0
    out[i] = y


def _backward_source(kernel, block_dim=None):
    device = wp.get_device("cpu")
    if block_dim is None:
        return kernel.compiled_backward(device).source
    from tilewarp.emit.block import BlockShape

    return kernel.compiled_backward(device, BlockShape(block_dim)).source


def test_tile_gemm_backward_skips_the_product_and_its_checkpoints():
    rng = np.random.default_rng(3)
    m, n, k = 32, 48, 24
    a, b, g = rng.standard_normal((m, k)), rng.standard_normal((k, n)), rng.standard_normal((m, n))
    wa, wb = (wp.array(x, dtype=float, requires_grad=True) for x in (a, b))
    wc = wp.zeros((m, n), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(gemm, dim=(m // TM, n // TN), inputs=[wa, wb, wc], block_dim=32)
    tape.backward(grads={wc: wp.array(g, dtype=float)})
    np.testing.assert_allclose(wc.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wa.grad.numpy(), g @ b.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wb.grad.numpy(), a.T @ g, rtol=1e-4, atol=1e-4)
    source = _backward_source(gemm, 32)
    body = source[source.index("_bwd_body("):]
    assert "tw::tile_matmul(" not in body  # the sum is never read by an adjoint
    assert "tw::adj_tile_matmul(" in body
    assert "rewind" not in body  # nor checkpointed per iteration


def test_a_stored_value_is_not_replayed():
    a = np.random.default_rng(4).uniform(-2, 2, 64).astype(np.float32)
    wa = wp.array(a, dtype=float, requires_grad=True)
    out = wp.zeros(64, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sines, dim=64, inputs=[wa, out])
    tape.backward(grads={out: wp.ones(64, dtype=float)})
    np.testing.assert_allclose(wa.grad.numpy(), 3.0 * np.cos(a), rtol=1e-5, atol=1e-6)
    body = _backward_source(sines)
    body = body[body.index("_bwd_body("):]
    assert "tw::mul(" not in body  # the stored product: no adjoint reads it
    assert "tw::sin(" in body  # the product's adjoint reads its operand, the sine
    assert "tw::adj_mul(" in body and "tw::adj_sin(" in body


@pytest.mark.parametrize("n", [1, 3, 20])
def test_a_carried_value_adjoints_read_is_kept(n):
    rng = np.random.default_rng(n)
    a = rng.uniform(-0.9, 0.9, 32)
    wa = wp.array(a, dtype=wp.float64, requires_grad=True)

    @wp.kernel
    def powers64(a: wp.array(dtype=wp.float64), n: int, out: wp.array(dtype=wp.float64)):
        i = wp.tid()
        x = a[i]
        s = wp.float64(0.0)
        for _k in range(n):  # the adjoint of x * x reads x: the carried x is checkpointed
            x = x * x * wp.float64(0.5) + wp.float64(0.25)
            s += wp.cos(x)
        out[i] = s + x

    def f(v):
        s = np.zeros_like(v)
        for _ in range(n):
            v = v * v * 0.5 + 0.25
            s += np.cos(v)
        return s + v

    out = wp.zeros(32, dtype=wp.float64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(powers64, dim=32, inputs=[wa, n, out])
    tape.backward(grads={out: wp.ones(32, dtype=wp.float64)})
    h = 1e-6
    numeric = (f(a + h) - f(a - h)) / (2 * h)
    np.testing.assert_allclose(wa.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)
    assert "rewind" in _backward_source(powers64)
