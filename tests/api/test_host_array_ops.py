"""Arithmetic operators on whole arrays (``a + b``, ``a * wp.float32(2)``, ``a += b``): elementwise
kernels with kernel semantics, new arrays of the result type, differentiable inside a Tape."""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp

TYPES = [wp.int8, wp.uint32, wp.int64, wp.float16, wp.float32, wp.float64]


def _trunc_div(a, b):
    return (np.trunc(a.astype(np.float64) / b)).astype(a.dtype)


@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.__name__)
def test_array_scalar_and_array_array(t, device):
    rng = np.random.default_rng(2)
    signed = t._kind_ != "uint"
    a = rng.integers(-50 if signed else 0, 50, (3, 4)).astype(t._np_)
    b = rng.integers(1, 7, (3, 4)).astype(t._np_)
    wa, wb, s = wp.array(a, dtype=t, device=device), wp.array(b, dtype=t, device=device), t(3)
    three = t._np_.type(3)
    with np.errstate(all="ignore"):
        cases = {
            "a+s": (wa + s, a + three), "s+a": (s + wa, three + a), "a-b": (wa - wb, a - b), "s-a": (s - wa, three - a),
            "a*b": (wa * wb, a * b), "a%s": (wa % s, np.fmod(a, three)), "s%b": (s % wb, np.fmod(three, b)),
            "-a": (-wa, -a), "+a": (+wa, a),
        }
        if t._kind_ == "float":
            cases.update({"a/b": (wa / wb, a / b), "s/b": (s / wb, three / b)})
        else:
            cases.update({"a/b": (wa / wb, _trunc_div(a, b)), "a//s": (wa // s, a // three)})
    for name, (got, want) in cases.items():
        assert got.dtype is t and got.shape == (3, 4) and got.device == wa.device, name
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(np.float64),
                                   rtol=2e-3 if t is wp.float16 else 1e-6, err_msg=name)
    np.testing.assert_array_equal(a, wa.numpy())  # operands untouched


def test_in_place_python_literals_and_composites(device):
    x = wp.array(np.arange(6, dtype=np.float32), device=device)
    same = x
    x += 1.5
    x *= x
    assert x is same
    np.testing.assert_allclose(x.numpy(), (np.arange(6) + 1.5) ** 2)
    np.testing.assert_allclose((x ** wp.float32(0.5)).numpy(), np.arange(6) + 1.5, rtol=1e-6)
    v = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, device=device)
    np.testing.assert_array_equal((v * 2.0).numpy(), np.arange(12).reshape(4, 3) * 2)
    np.testing.assert_array_equal((v + v).numpy(), np.arange(12).reshape(4, 3) * 2)
    col = wp.array(np.arange(12, dtype=np.float64).reshape(3, 4), device=device)[:, 1]  # a strided view
    np.testing.assert_array_equal((col + wp.float64(1)).numpy(), [2.0, 6.0, 10.0])


def test_array_operator_errors(device):
    a = wp.zeros(3, dtype=wp.float32, device=device)
    with pytest.raises(TypeError, match="same type"):
        a + wp.int8(1)
    with pytest.raises(TypeError, match="same type"):
        a + wp.zeros(3, dtype=wp.float64, device=device)
    with pytest.raises(ValueError, match="do not broadcast"):
        a + wp.zeros(4, device=device)
    with pytest.raises(TypeError, match="Python float"):
        wp.zeros(2, dtype=wp.int32, device=device) * 0.5
    with pytest.raises(TypeError, match="unsupported operand"):
        a + "1"
    with pytest.raises(TypeError, match="in-place"):
        m = wp.zeros(2, dtype=wp.mat22, device=device)
        m *= wp.zeros(2, dtype=wp.vec2, device=device)


def test_array_operators_are_differentiable(device):
    x = wp.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True, device=device)
    y = wp.array([4.0, 5.0, 6.0], dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        z = x * y + x
    assert z.requires_grad
    tape.backward(grads={z: wp.ones(3, device=device)})
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 6.0, 7.0])
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 2.0, 3.0])
