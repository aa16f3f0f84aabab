"""Python-scope vectors and matrices: slicing, component assignment, elementwise operators with
kernel semantics, printing and Warp's type attributes."""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp

try:
    import warp
except ImportError:
    warp = None

TYPES = [wp.int8, wp.uint16, wp.int32, wp.int64, wp.float16, wp.float32, wp.float64]


def _c_div(a, b):
    return np.trunc(a.astype(np.float64) / b).astype(a.dtype) if a.dtype.kind in "iu" else a / b


@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.__name__)
def test_vector_slices_and_component_assignment(t):
    V = wp.types.vector(5, t)
    v = V(1, 2, 3, 4, 5)
    s = v[1:4]
    assert type(s) is wp.types.vector(3, t) and list(s) == [2, 3, 4]
    assert list(v[::2]) == [1, 3, 5] and list(v[::-1]) == [5, 4, 3, 2, 1] and v[-1] == 5
    v[1:3] = [7, 8]
    v[::2] = (9, 9, 9)
    v.y = 6
    assert v.numpy().tolist() == [9, 6, 9, 4, 9]
    v[:2] = wp.types.vector(2, t)(0, 1)
    assert v.numpy().tolist() == [0, 1, 9, 4, 9]
    with pytest.raises(ValueError, match="cannot assign 1 values to a slice of 2"):
        v[0:2] = [1]
    with pytest.raises(IndexError, match="out of range"):
        v[5] = 1
    with pytest.raises(IndexError, match="out of range"):
        _ = v[-6]
    with pytest.raises(TypeError, match="indices must be integers"):
        _ = v[1.0]
    with pytest.raises(AttributeError):
        _ = v.q


@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.__name__)
def test_vector_operators_match_numpy_with_c_semantics(t):
    rng = np.random.default_rng(5)
    V = wp.types.vector(4, t)
    signed = t._kind_ != "uint"
    for _ in range(10):
        a = rng.integers(-20 if signed else 0, 20, 4).astype(t._np_)
        b = (rng.integers(1, 9, 4) * (rng.choice([-1, 1], 4) if signed else 1)).astype(t._np_)
        s = t(3)
        va, vb = V(*a.tolist()), V(*b.tolist())
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal((va + vb).numpy(), a + b)
            np.testing.assert_array_equal((va - vb).numpy(), a - b)
            np.testing.assert_array_equal((va * s).numpy(), a * t._np_.type(3))
            np.testing.assert_array_equal((s * va).numpy(), a * t._np_.type(3))
            np.testing.assert_array_equal((-va).numpy(), -a)
            np.testing.assert_array_equal((+va).numpy(), a)
            np.testing.assert_allclose((va / vb).numpy(), _c_div(a, b), rtol=1e-3)
            np.testing.assert_allclose((s / vb).numpy(), _c_div(np.full(4, 3, t._np_), b), rtol=1e-3)
            np.testing.assert_allclose((va % vb).numpy(), np.fmod(a, b), rtol=1e-3)  # sign of the dividend
    assert type(va + vb) is V


def test_vector_operator_errors():
    with pytest.raises(TypeError, match="vec3 and vec3d"):
        wp.vec3(1, 2, 3) + wp.vec3d(1, 2, 3)
    with pytest.raises(TypeError, match="vec3i and float32"):
        wp.vec3i(1, 2, 3) * wp.float32(2)
    with pytest.raises(TypeError, match="Python float"):
        wp.vec3i(1, 2, 3) * 2.5
    with pytest.raises(ZeroDivisionError):
        wp.vec2i(1, 2) / wp.vec2i(1, 0)
    with pytest.raises(ValueError, match="shapes"):
        wp.vec3(1, 2, 3) + [1, 2]
    with pytest.raises(TypeError):
        wp.vec3(1, 2, 3) ** 2


def test_matrix_indexing_and_printing():
    M = wp.types.matrix((3, 3), float)
    m = M()
    for i in range(3):
        m[i, i] = 1.0
    m[2] = [4.0, 5.0, 6.0]
    m[0, -1] = 7.0
    assert m.numpy().tolist() == [[1, 0, 7], [0, 1, 0], [4, 5, 6]]
    assert m[2] == [4.0, 5.0, 6.0] and type(m[2]) is wp.vec3 and m[2, 1] == 5.0
    assert list(m[:, 1]) == [0.0, 1.0, 5.0]
    assert str(wp.mat22(1, 2, 3, 4)) == "[[1.0, 2.0],\n [3.0, 4.0]]"
    assert repr(wp.mat22(1, 2, 3, 4)) == "mat22([[1.0, 2.0],\n [3.0, 4.0]])"
    assert str(wp.vec3(1, 2, 3)) == "[1.0, 2.0, 3.0]" and repr(wp.vec3i(1, 2, 3)) == "vec3i([1, 2, 3])"
    with pytest.raises(IndexError):
        m[3, 0] = 1.0
    a = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal((M(*a.ravel()) @ M(*a.ravel())).numpy(), a @ a)
    np.testing.assert_array_equal((M(*a.ravel()) * wp.vec3(1, 2, 3)).numpy(), a @ [1, 2, 3])
    np.testing.assert_array_equal((M(*a.ravel()) % 4.0).numpy(), np.fmod(a, 4.0))


def test_warp_type_attributes():
    assert wp.vec3._shape_ == (3,) and wp.mat22._shape_ == (2, 2) and wp.mat33d._length_ == 9
    assert wp.vec3._wp_type_params_ == (3, wp.float32) and wp.mat22d._wp_generic_type_str_ == "mat_t"
    if warp is not None:
        # (float32 types are still named vec3, mat22, ...; Warp's names end in "f")
        for name in ("vec2", "vec3", "vec4", "vec3h", "vec3ub", "mat22", "mat33d", "quat", "transformd"):
            ours, theirs = getattr(wp, name), getattr(warp, name)
            assert (ours._shape_, ours._length_) == (theirs._shape_, theirs._length_)
            assert ours._wp_generic_type_str_ == theirs._wp_generic_type_str_


def test_quaternion_and_transform_components():
    q = wp.quat(0.0, 0.0, 0.0, 1.0)
    q.x = 0.5
    assert q.x == 0.5 and type(-q) is wp.quat
    t = wp.transform(wp.vec3(1, 2, 3), wp.quat_identity())
    with pytest.raises(AttributeError):
        _ = t.x  # a transform's parts are .p and .q
    t.p = wp.vec3(4, 5, 6)
    assert list(t.p) == [4.0, 5.0, 6.0]
