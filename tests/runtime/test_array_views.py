"""array.reshape / flatten / contiguous / view: zero-copy views as Warp's (differential), sharing
memory, gradients and the version counter."""
import numpy as np
import pytest

import tilewarp as wp

warp = pytest.importorskip("warp")
warp.config.quiet = True


def _both(x, **kw):
    return wp.array(x, device="cpu", **kw), warp.array(x, device="cpu", **kw)


def test_reshape_and_flatten_match_warp(rng):
    x = rng.random(24).astype(np.float32)
    ours, theirs = _both(x)
    for shape in [(4, 6), (2, -1), (2, 3, 4), (-1,), (1, 2, 3, 4)]:
        a, b = ours.reshape(shape), theirs.reshape(shape)
        assert a.shape == b.shape and a.strides == b.strides
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    t, u = ours.reshape((4, 6)).transpose(), theirs.reshape((4, 6)).transpose()
    for ours_call, warp_call in [(lambda: t.reshape((24,)), lambda: u.reshape((24,))), (t.flatten, u.flatten),
                                 (lambda: ours.reshape((5,)), lambda: theirs.reshape((5,)))]:
        with pytest.raises(RuntimeError) as mine:
            ours_call()
        with pytest.raises(RuntimeError) as warps:
            warp_call()
        assert str(mine.value) == str(warps.value)
    np.testing.assert_array_equal(t.contiguous().numpy(), u.contiguous().numpy())
    assert t.contiguous().is_contiguous and ours.contiguous() is ours


def test_reshape_is_a_view_with_its_gradient(rng):
    x = rng.random(12).astype(np.float32)
    a = wp.array(x, device="cpu", requires_grad=True)
    m = a.reshape((3, 4))
    m.fill_(2.0)
    assert np.all(a.numpy() == 2.0) and a.version == m.version
    m.grad.fill_(5.0)
    assert np.all(a.grad.numpy() == 5.0)

    @wp.kernel
    def total(m: wp.array2d(dtype=float), loss: wp.array(dtype=float)):
        i, j = wp.tid()
        wp.atomic_add(loss, 0, m[i, j] * float(i + 1))

    a.grad.zero_()
    loss = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(total, dim=(3, 4), inputs=[m], outputs=[loss], device="cpu")
    tape.backward(loss)
    np.testing.assert_array_equal(a.grad.numpy(), np.repeat([1.0, 2.0, 3.0], 4))


def test_view_reinterprets_memory_as_warp(rng):
    v = rng.random((5, 3)).astype(np.float32)
    ours, theirs = wp.array(v, dtype=wp.vec3, device="cpu"), warp.array(v, dtype=warp.vec3, device="cpu")
    a, b = ours.view(float), theirs.view(float)
    assert a.shape == b.shape == (5, 3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    bits = wp.array(rng.random(7).astype(np.float32), device="cpu").view(wp.int32)
    np.testing.assert_array_equal(bits.numpy(), bits.view(float).numpy().view(np.int32))
    with pytest.raises(TypeError, match="element sizes differ"):
        ours.view(wp.float64)


def test_empty_vector_arrays_keep_their_outer_shape_as_warp():
    for shape in [(0, 4, 3), (0, 3), (3,), (2, 3), (5, 4, 3), (0,)]:
        data = np.zeros(shape, np.float32)
        assert wp.array(data, dtype=wp.vec3, device="cpu").shape == warp.array(data, dtype=warp.vec3,
                                                                              device="cpu").shape
