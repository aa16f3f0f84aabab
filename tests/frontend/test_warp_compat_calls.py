"""Warp-compatible call forms in kernel code, differential against Warp where Warp runs them:
builtin keyword arguments (Warp's parameter names), vector/matrix constructor rules and their
messages, ``%`` on vectors, ``step`` on integers, ``quat_to_axis_angle``'s output arguments,
builtins named without ``wp.``, operators overloaded by a ``@wp.func`` named after them.
"""
import numpy as np
import pytest
from conftest import Arr, check_located, launch_both, load_both

import tilewarp as wp
from tilewarp import KernelTypeError

KEYWORDS = """
import WP as wp


@wp.kernel
def keywords(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float),
             hits: wp.array(dtype=wp.int32)):
    i = wp.tid()
    wp.expect_near(a[i], a[i] + 1.0e-7)  # Warp's default tolerance
    wp.expect_near(wp.vec3(a[i]), wp.vec3(a[i] + 0.001), tolerance=0.01)
    x = wp.clamp(a[i], high=0.5, low=-0.5) + wp.lerp(a=a[i], b=b[i], t=0.25)
    x += wp.atan2(x=b[i], y=a[i]) + wp.norm_huber(wp.vec2(a[i], b[i]), delta=0.3)
    x += wp.smoothstep(a=-1.0, b=1.0, x=b[i]) + wp.pow(x=2.0, y=a[i])
    out[i] = x
    wp.atomic_add(hits, i=0, value=1)
    wp.atomic_max(arr=out, i=i, value=b[i])
"""


def test_builtin_keyword_arguments_match_warp(rng):
    mods = load_both(KEYWORDS)
    n = 64
    a = rng.uniform(-1, 1, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    got = launch_both(mods, "keywords", n, [Arr(a), Arr(b), Arr(np.zeros(n, np.float32)),
                                           Arr(np.zeros(1, np.int32))], atol=1e-5)
    assert got[3][0] == n


@wp.kernel
def k_unknown_keyword(a: wp.array(dtype=float)):
    a[0] = wp.clamp(a[0], low=0.0, hi=1.0)  # <- error


@wp.kernel
def k_keyword_gap(a: wp.array(dtype=float)):
    a[0] = wp.clamp(a[0], high=1.0)  # <- error


@wp.kernel
def k_no_keywords(a: wp.array(dtype=float)):
    a[0] = wp.sin(a[0], y=1.0)  # <- error


@pytest.mark.parametrize("kernel, fragment", [
    (k_unknown_keyword, "clamp() got an unexpected keyword argument 'hi'; it takes (x, low, high)"),
    (k_keyword_gap, "clamp() missing argument 'low' before the keyword arguments given"),
    (k_no_keywords, "sin() got an unexpected keyword argument 'y'; it takes (x)"),
])
def test_bad_keywords_are_located(kernel, fragment):
    check_located(kernel, KernelTypeError, fragment, inputs=[wp.zeros(1, dtype=float)])


# ---- constructors ---------------------------------------------------------------------------------

CASTS = """
import WP as wp


@wp.kernel
def casts(a: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.mat22d), h: wp.array(dtype=wp.vec3h),
          f: wp.array(dtype=wp.mat22), flags: wp.array(dtype=wp.int32)):
    i = wp.tid()
    h[i] = wp.types.vector(a[i], dtype=wp.float16)  # the length comes from the vector copied
    f[i] = wp.types.matrix(m[i], dtype=wp.float32)  # the shape from the matrix
    b = wp.types.vector(False, True, False)  # bool literals make a bool vector
    flags[i] = wp.where(b[1] and not b[0], 1, 0)
"""


def test_generic_constructors_copy_and_infer_like_warp(rng):
    mods = load_both(CASTS)
    n = 8
    a = rng.uniform(-4, 4, (n, 3))
    m = rng.uniform(-4, 4, (n, 2, 2))
    got = launch_both(mods, "casts", n, [Arr(a, "vec3d"), Arr(m, "mat22d"), Arr(np.zeros((n, 3), np.float16), "vec3h"),
                                         Arr(np.zeros((n, 2, 2), np.float32), "mat22"),
                                         Arr(np.zeros(n, np.int32))])
    np.testing.assert_array_equal(got[2], a.astype(np.float16))
    np.testing.assert_array_equal(got[4], np.ones(n, np.int32))


@wp.kernel
def k_copy_length():
    wp.vec3(wp.vec2(1.0, 2.0))  # <- error


@wp.kernel
def k_count():
    wp.types.vector(1.0, 2.0, length=5)  # <- error


@wp.kernel
def k_no_length():
    wp.types.vector()  # <- error


@wp.kernel
def k_mixed_literals():
    wp.types.vector(1.0, 2)  # <- error


@wp.kernel
def k_wrong_scalar(x: wp.float64):
    wp.vec2(x, x)  # <- error


@wp.kernel
def k_fill_scalar(x: wp.float64):
    wp.mat22(x)  # <- error


@wp.kernel
def k_matrix_count():
    wp.mat22(1.0, 2.0, 3.0)  # <- error


@wp.kernel
def k_transform_count():
    wp.transform(1.0, 2.0)  # <- error


@wp.kernel
def k_transform_dtype():
    wp.transformd(wp.transform(1.0))  # <- error


@wp.kernel
def k_different_types():
    wp.expect_neq(wp.vec3(0.0), wp.vec2(0.0))  # <- error


# Warp's wording (its scripts and tests match the end of the message)
@pytest.mark.parametrize("kernel, ending, inputs", [
    (k_copy_length, "incompatible vector of length 3 given when copy constructing a vector of length 2", []),
    (k_count, "incompatible number of values given (2) when constructing a vector of length 5", []),
    (k_no_length, "the `length` argument must be specified when zero-initializing a vector", []),
    (k_mixed_literals, "all values given when constructing a vector must have the same type", []),
    (k_wrong_scalar, "all values used to initialize this vector are expected to be of the type `float32`",
     [wp.float64(1.0)]),
    (k_fill_scalar, "the value used to fill this matrix is expected to be of the type `float32`", [wp.float64(1.0)]),
    (k_matrix_count, "incompatible number of values given (3) when constructing a matrix of shape (2, 2)", []),
    (k_transform_count, "incompatible number of values given (2) when constructing a transform; expected 0, 1, or 7",
     []),
    (k_transform_dtype, "copy constructing a transform requires matching source and target dtypes, got `float32` "
                        "and `float64`", []),
    (k_different_types, "Can't test equality for objects with different types", []),
])
def test_constructor_errors_use_warps_wording(kernel, ending, inputs):
    with pytest.raises(KernelTypeError) as info:
        wp.launch(kernel, dim=1, inputs=inputs, device="cpu")
    assert isinstance(info.value, RuntimeError) and str(info.value).endswith(ending), str(info.value)
    check_located(kernel, KernelTypeError, ending, inputs=inputs)


# ---- operators and builtins -----------------------------------------------------------------------

MOD = """
import WP as wp


@wp.kernel
def vec_mod(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3),
            ia: wp.array(dtype=wp.vec3i), ib: wp.array(dtype=wp.vec3i), iout: wp.array(dtype=wp.vec3i),
            steps: wp.array(dtype=wp.int32), ints: wp.array(dtype=wp.int32)):
    i = wp.tid()
    out[i] = wp.mod(a[i], b[i]) + a[i] % b[i]
    iout[i] = ia[i] % ib[i]
    steps[i] = wp.step(ints[i]) + 2 * wp.int32(wp.step(wp.int64(ints[i])))
"""


def test_vector_modulo_and_integer_step_match_warp(rng):
    mods = load_both(MOD)
    n = 32
    a, b = rng.uniform(-5, 5, (n, 3)).astype(np.float32), rng.uniform(0.5, 2, (n, 3)).astype(np.float32)
    ia, ib = rng.integers(-50, 50, (n, 3)).astype(np.int32), rng.integers(1, 9, (n, 3)).astype(np.int32)
    ints = rng.integers(-3, 3, n).astype(np.int32)
    got = launch_both(mods, "vec_mod", n, [Arr(a, "vec3"), Arr(b, "vec3"), Arr(np.zeros((n, 3), np.float32), "vec3"),
                                          Arr(ia, "vec3i"), Arr(ib, "vec3i"), Arr(np.zeros((n, 3), np.int32), "vec3i"),
                                          Arr(np.zeros(n, np.int32)), Arr(ints)])
    np.testing.assert_allclose(got[2], 2 * np.fmod(a, b), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[5], np.fmod(ia, ib))
    np.testing.assert_array_equal(got[6], np.where(ints < 0, 3, 0))


@wp.kernel
def vec_mod_loss(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.dot(wp.mod(a[i], b[i]), wp.vec3(1.0, 2.0, 3.0)))


def test_vector_modulo_gradient(rng):
    """d(a % b)/da = 1 and d(a % b)/db = -trunc(a / b), componentwise (away from the jumps)."""
    n = 16
    a_np, b_np = rng.uniform(-5, 5, (n, 3)).astype(np.float32), rng.uniform(0.7, 2, (n, 3)).astype(np.float32)
    a = wp.array(a_np, dtype=wp.vec3, requires_grad=True, device="cpu")
    b = wp.array(b_np, dtype=wp.vec3, requires_grad=True, device="cpu")
    loss = wp.zeros(1, dtype=float, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(vec_mod_loss, dim=n, inputs=[a, b, loss], device="cpu")
    tape.backward(loss)
    w = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(a.grad.numpy(), np.broadcast_to(w, (n, 3)), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), -np.trunc(a_np / b_np) * w, rtol=1e-5, atol=1e-5)


AXIS_ANGLE = """
import WP as wp


@wp.kernel
def axis_angle(q: wp.array(dtype=wp.quat), axes: wp.array(dtype=wp.vec3), angles: wp.array(dtype=float)):
    i = wp.tid()
    axis = wp.vec3()
    angle = float(0.0)
    wp.quat_to_axis_angle(q[i], axis, angle)
    axes[i] = axis
    angles[i] = angle
"""


def test_quat_to_axis_angle_output_arguments_match_warp(rng):
    mods = load_both(AXIS_ANGLE)
    n = 16
    q = rng.normal(size=(n, 4)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    launch_both(mods, "axis_angle", n, [Arr(q, "quat"), Arr(np.zeros((n, 3), np.float32), "vec3"),
                                        Arr(np.zeros(n, np.float32))], atol=1e-5)


UNQUALIFIED = """
import WP as wp


@wp.struct
class Complex:
    re: float
    im: float


@wp.func
def add(a: Complex, b: Complex):
    return Complex(a.re + b.re, a.im + b.im)


@wp.func
def mul(a: Complex, b: Complex):
    return Complex(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)


@wp.kernel
def unqualified(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    v = vec3(x[i], 2.0, 3.0)
    m = mat22(x[i], 0.0, 0.0, 1.0)
    a = Complex(x[i], 1.0)
    b = Complex(2.0, x[i])
    c = a * b + a
    expect_eq(v[1], 2.0)
    out[i] = v[0] + m[0, 0] + c.re + 10.0 * c.im + sin(x[i])
"""


def test_unqualified_builtins_and_user_operators_match_warp(rng):
    mods = load_both(UNQUALIFIED)
    n = 16
    x = rng.uniform(-2, 2, n).astype(np.float32)
    got = launch_both(mods, "unqualified", n, [Arr(x), Arr(np.zeros(n, np.float32))], atol=1e-5)
    re = x * 2.0 - x + x
    im = x * x + 2.0 + 1.0
    np.testing.assert_allclose(got[1], 2 * x + re + 10 * im + np.sin(x), rtol=1e-5, atol=1e-5)
