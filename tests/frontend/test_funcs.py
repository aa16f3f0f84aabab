"""``@wp.func``, constants and ``wp.static``, differential against Warp on CPU.

Functions with return values, functions calling functions, keyword and default arguments, early
returns (incl. from inside loops), functions with side effects on arrays; module-level constants
(``wp.constant``, plain Python numbers as globals and closure variables); ``wp.static``; and the
spine issue's example (``integrate`` with an ``accel`` function) against a float64 NumPy reference.
"""
import numpy as np
import pytest
from conftest import Arr, launch_both, load_both, reference

SRC = '''
import WP as wp

SCALE = 2.5
OFFSET = wp.constant(1.5)
N_TERMS = wp.constant(5)
AXIS = wp.constant(wp.vec3(1.0, -2.0, 0.5))
USE_SQUARE = True
COUNT = 3


@wp.func
def sq(x: float):
    return x * x


@wp.func
def hyp(x: float, y: float):
    return wp.sqrt(sq(x) + sq(y))


@wp.func
def blend(a: float, b: float, t: float = 0.25):
    return a + (b - a) * t


@wp.func
def classify(x: float):
    if x > 1.0:
        return 2
    if x < -1.0:
        return -2
    for k in range(4):
        if x < float(k) * 0.5 - 1.0:
            return k - 5
    return 0


@wp.func
def int_pow(b: int, e: int):
    r = int(1)
    for k in range(e):
        r = r * b
    return r


@wp.func
def first_multiple(start: int, m: int):
    k = start
    while True:
        if k % m == 0:
            return k
        k += 1
    return -1


@wp.func
def rotate(v: wp.vec3, s: float):
    return wp.vec3(v.z, v.x, v.y) * s


@wp.func
def store_twice(a: wp.array(dtype=float), i: int, x: float):
    a[i] = x + x


@wp.func
def chain(x: float):
    return hyp(blend(x, 1.0), blend(x, -1.0, t=0.5)) + sq(x)


@wp.kernel
def funcs(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float, ndim=2),
          outi: wp.array(dtype=int, ndim=2), side: wp.array(dtype=float)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = sq(x)
    out[i, 1] = hyp(x, y)
    out[i, 2] = blend(x, y)
    out[i, 3] = blend(x, y, 0.75)
    out[i, 4] = blend(x, y, t=0.5)
    out[i, 5] = blend(b=y, a=x)
    out[i, 6] = chain(x)
    outi[i, 0] = classify(x)
    outi[i, 1] = int_pow(i % 5, i % 4)
    outi[i, 2] = first_multiple(i, 7)
    store_twice(side, i, y)


@wp.kernel
def vec_funcs(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = rotate(rotate(v[i], 2.0), -0.5) + AXIS


@wp.kernel
def constants(a: wp.array(dtype=float), out: wp.array(dtype=float, ndim=2), outi: wp.array(dtype=int)):
    i = wp.tid()
    x = a[i]
    out[i, 0] = x * SCALE + OFFSET
    s = float(0.0)
    for k in range(N_TERMS):
        s += x * float(k)
    out[i, 1] = s
    out[i, 2] = wp.dot(AXIS, wp.vec3(x, 1.0, 2.0))
    outi[i] = COUNT * i + N_TERMS


@wp.kernel
def statics(a: wp.array(dtype=float), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    x = a[i]
    out[i, 0] = x * wp.static(SCALE * 4.0)
    acc = float(0.0)
    for k in range(wp.static(COUNT + 1)):
        acc += x
    out[i, 1] = acc
    if wp.static(USE_SQUARE):
        out[i, 2] = x * x
    else:
        out[i, 2] = x
    out[i, 3] = float(wp.static(2 ** 10))


def make_scaler(factor, shift):
    @wp.kernel
    def scaler(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = a[i] * factor + wp.static(shift * 2.0)

    return scaler


scale_by_3 = make_scaler(3.0, 0.5)
scale_by_neg = make_scaler(-0.25, 4.0)

GRAVITY = wp.constant(-9.8)
RESTITUTION = 0.5


@wp.func
def accel(v: wp.vec3, damping: float):
    return wp.vec3(0.0, GRAVITY, 0.0) - damping * v


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float, n_sub: int):
    i = wp.tid()
    xi = x[i]
    vi = v[i]
    for s in range(n_sub):
        vi = vi + accel(vi, 0.1) * dt
        xi = xi + vi * dt
        if xi[1] < 0.0:
            xi = wp.vec3(xi[0], 0.0, xi[2])
            vi = wp.vec3(vi[0], -RESTITUTION * vi[1], vi[2])
    x[i] = xi
    v[i] = vi
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def test_functions(mods, device, rng):
    n = 200
    a = rng.uniform(-3, 3, n).astype(np.float32)
    b = rng.uniform(-3, 3, n).astype(np.float32)
    args = [Arr(a), Arr(b), Arr(np.zeros((n, 7), np.float32)), Arr(np.zeros((n, 3), np.int32)),
            Arr(np.zeros(n, np.float32))]
    got = launch_both(mods, "funcs", n, args, device, rtol=2e-6)
    np.testing.assert_allclose(got[2][:, 3], a + (b - a) * 0.75, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[4], b + b)
    assert set(np.unique(got[3][:, 0])) >= {2, -2, 0}


def test_vector_functions_and_vector_constant(mods, device, rng):
    v = rng.uniform(-2, 2, (50, 3)).astype(np.float32)
    got = launch_both(mods, "vec_funcs", 50, [Arr(v, "vec3"), Arr(np.zeros_like(v), "vec3")], device)
    np.testing.assert_allclose(got[1], -v[:, [1, 2, 0]] + [1.0, -2.0, 0.5], rtol=1e-6, atol=1e-6)


def test_module_constants(mods, device, rng):
    a = rng.uniform(-3, 3, 64).astype(np.float32)
    got = launch_both(mods, "constants", 64, [Arr(a), Arr(np.zeros((64, 3), np.float32)),
                                              Arr(np.zeros(64, np.int32))], device)
    np.testing.assert_allclose(got[1][:, 0], a * 2.5 + 1.5, rtol=1e-6)
    np.testing.assert_array_equal(got[2], 3 * np.arange(64) + 5)


def test_static(mods, device, rng):
    a = rng.uniform(-3, 3, 64).astype(np.float32)
    got = launch_both(mods, "statics", 64, [Arr(a), Arr(np.zeros((64, 4), np.float32))], device)
    np.testing.assert_allclose(got[1][:, 0], a * 10.0, rtol=1e-6)
    np.testing.assert_array_equal(got[1][:, 3], 1024.0)


@pytest.mark.parametrize("kernel,factor,shift", [("scale_by_3", 3.0, 0.5), ("scale_by_neg", -0.25, 4.0)])
def test_closure_constants(mods, device, rng, kernel, factor, shift):
    """Two kernels from one factory: each sees its own captured values."""
    a = rng.uniform(-3, 3, 64).astype(np.float32)
    got = launch_both(mods, kernel, 64, [Arr(a), Arr(np.zeros(64, np.float32))], device)
    np.testing.assert_allclose(got[1], a * factor + shift * 2.0, rtol=1e-6)


def _integrate_reference(x, v, dt, n_sub, frames):
    x, v = x.astype(np.float64), v.astype(np.float64)
    g = np.array([0.0, -9.8, 0.0])
    for _ in range(frames):
        for _ in range(n_sub):
            v = v + (g - 0.1 * v) * dt
            x = x + v * dt
            below = x[:, 1] < 0.0
            x[below, 1] = 0.0
            v[below, 1] *= -0.5
    return x, v


def test_issue_example_integrate(mods, device, rng):
    n, dt, n_sub, frames = 2000, 1.0 / 600.0, 8, 10
    x0 = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    x0[:, 1] = rng.uniform(0.05, 2.0, n)
    v0 = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    results = []
    for mod, dev in ((mods[0], device), reference(mods, device)):
        wp = mod.wp
        x = wp.array(x0, dtype=wp.vec3, device=dev)
        v = wp.array(v0, dtype=wp.vec3, device=dev)
        for _ in range(frames):
            wp.launch(mod.integrate, dim=n, inputs=[x, v, dt, n_sub], device=dev)
        results.append((x.numpy(), v.numpy()))
    (tx, tv), (wx, wv) = results
    np.testing.assert_allclose(tx, wx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tv, wv, rtol=1e-5, atol=1e-5)
    rx, rv = _integrate_reference(x0, v0, dt, n_sub, frames)
    np.testing.assert_allclose(tx, rx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tv, rv, rtol=1e-4, atol=1e-4)
    assert (tx[:, 1] >= 0.0).all()


FUTURE_SRC = '''from __future__ import annotations
import WP as wp


@wp.func
def twice(v: wp.vec3) -> wp.vec3:
    return v * 2.0


@wp.kernel
def postponed(a: wp.array(dtype=wp.vec3), s: float):
    i = wp.tid()
    a[i] = twice(a[i]) * s
'''


def test_postponed_annotations(device, rng):
    """`from __future__ import annotations` turns annotations into strings; they still resolve."""
    mods = load_both(FUTURE_SRC)
    v = rng.standard_normal((16, 3)).astype(np.float32)
    got = launch_both(mods, "postponed", 16, [Arr(v, "vec3"), 0.5], device)
    np.testing.assert_allclose(got[0], v, rtol=1e-6)
