"""Vectors and matrices (float32), differential against Warp on CPU.

vec2/3/4 and mat33: construction, component access (``v[0]``, ``v.x``, ``m[i, j]``, ``m[i]``),
component assignment (``v[1] = x``, ``v.z = x``), arithmetic with scalars and each other,
mat*vec, mat*mat, transpose, and the vector builtins dot/cross/length/normalize.
"""
import numpy as np
import pytest
from conftest import Arr, Val, launch_both, load_both

SRC = '''
import WP as wp


@wp.kernel
def construct(s: wp.array(dtype=float), v2: wp.array(dtype=wp.vec2), v3: wp.array(dtype=wp.vec3),
              v4: wp.array(dtype=wp.vec4), m: wp.array(dtype=wp.mat33)):
    i = wp.tid()
    x = s[i]
    v2[i] = wp.vec2(x, 2.0 * x)
    v3[i] = wp.vec3(x, -1.0, x * x)
    v4[i] = wp.vec4(x) + wp.vec4(1.0, 2.0, 3.0, 4.0) - wp.vec4(1, 0, 2, -3)
    m[i] = wp.mat33(x, 1.0, 2.0, 3.0, x, 4.0, 5.0, 6.0, -x) + wp.mat33(x)


@wp.kernel
def components(v3: wp.array(dtype=wp.vec3), v4: wp.array(dtype=wp.vec4), m: wp.array(dtype=wp.mat33),
               out: wp.array(dtype=float, ndim=2), rows: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a = v3[i]
    b = v4[i]
    r = m[i]
    out[i, 0] = a[0] + a[1] * a[2]
    out[i, 1] = a.x - a.y + a.z
    out[i, 2] = b.w * b[3] + b.x
    out[i, 3] = r[1, 2] - r[2, 1]
    out[i, 4] = r[0][0] * r[2][2]
    out[i, 5] = v3[i][1] + v3[i].z
    out[i, 6] = m[i][2, 0]
    out[i, 7] = a[-1] * 10.0 + b[-3] + r[-1, 0]
    rows[i] = r[i % 3]


@wp.kernel
def assign_components(v3: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3),
                      out4: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    v = v3[i]
    v[1] = v[0] * 2.0
    v.z = -v.x
    v.x += 1.0
    v[1] *= 2.0
    v[-3] -= 1.0
    out[i] = v
    w = wp.vec4()
    for k in range(4):
        w[k] = float(k * i)
    if i % 2 == 0:
        w[0] = 42.0
    out4[i] = w


@wp.kernel
def element_components(v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat33, ndim=2)):
    i = wp.tid()
    v[i].x = 5.0
    v[i][1] = v[i][1] * 2.0
    v[i].z += 1.0
    m[i, 0][1, 2] = -3.0
    m[i, 1][0] = wp.vec3(1.0, 2.0, 3.0)


@wp.kernel
def runtime_negative_index(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    x = v[i]
    for k in range(3):
        out[i, k] = x[k - 3]
        x[k - 3] = float(k)
    out[i, 3] = x[0] + x[1] * 10.0 + x[2] * 100.0


@wp.kernel
def vec_arith(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), s: wp.array(dtype=float),
              out: wp.array(dtype=wp.vec3, ndim=2), q: wp.array(dtype=wp.vec2), p: wp.vec3):
    i = wp.tid()
    x = a[i]
    y = b[i]
    k = s[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = -x
    out[i, 3] = x * k
    out[i, 4] = k * x
    out[i, 5] = x / k
    out[i, 6] = x * 2.0 + y * 0.5 - p
    out[i, 7] = wp.cw_mul(x, y)
    acc = wp.vec3()
    for j in range(3):
        acc += x * float(j)
    acc -= y
    out[i, 8] = acc
    q[i] = wp.vec2(k, 1.0) * 3.0 - wp.vec2(x.x, y.y)


@wp.kernel
def vec_builtins(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), c: wp.array(dtype=wp.vec4),
                 out: wp.array(dtype=float, ndim=2), vout: wp.array(dtype=wp.vec3, ndim=2),
                 v4out: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = wp.dot(x, y)
    out[i, 1] = wp.length(x)
    out[i, 2] = wp.length_sq(y)
    out[i, 3] = wp.dot(c[i], c[i])
    out[i, 4] = wp.length(wp.vec2(x.x, y.y))
    vout[i, 0] = wp.cross(x, y)
    vout[i, 1] = wp.normalize(x)
    vout[i, 2] = wp.normalize(wp.cross(y, x)) * wp.length(x)
    v4out[i] = wp.normalize(c[i])


@wp.kernel
def mat_ops(m: wp.array(dtype=wp.mat33), n: wp.array(dtype=wp.mat33), v: wp.array(dtype=wp.vec3),
            mout: wp.array(dtype=wp.mat33, ndim=2), vout: wp.array(dtype=wp.vec3, ndim=2),
            sout: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    a = m[i]
    b = n[i]
    x = v[i]
    mout[i, 0] = a * b
    mout[i, 1] = wp.transpose(a)
    mout[i, 2] = a + b * 2.0
    mout[i, 3] = a - 0.5 * b
    mout[i, 4] = -a
    mout[i, 5] = wp.transpose(a) * b * a
    mout[i, 6] = wp.identity(n=3, dtype=float) * 2.0 + a
    mout[i, 7] = wp.outer(x, x)
    vout[i, 0] = a * x
    vout[i, 1] = wp.transpose(a) * x
    vout[i, 2] = a * (b * x)
    vout[i, 3] = a[1] + b[2]
    vout[i, 4] = a @ x
    sout[i, 0] = wp.determinant(a)
    sout[i, 1] = wp.trace(b)
    sout[i, 2] = a[0, 1] * b[1, 0]


@wp.kernel
def mat_build(v: wp.array(dtype=wp.vec3), mout: wp.array(dtype=wp.mat33)):
    i = wp.tid()
    x = v[i]
    m = wp.mat33(0.0)
    m[0, 0] = x[0]
    m[1, 1] = x[1]
    m[2] = x
    m[0, 2] += 5.0
    m[1] = m[1] * 2.0
    mout[i] = m
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def _vecs(rng, n, k, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, (n, k)).astype(np.float32)


def test_construction(mods, device, rng):
    n = 64
    s = rng.uniform(-3, 3, n).astype(np.float32)
    outs = [Arr(np.zeros((n, 2), np.float32), "vec2"), Arr(np.zeros((n, 3), np.float32), "vec3"),
            Arr(np.zeros((n, 4), np.float32), "vec4"), Arr(np.zeros((n, 3, 3), np.float32), "mat33")]
    got = launch_both(mods, "construct", n, [Arr(s), *outs], device)
    np.testing.assert_array_equal(got[2][:, 1], -1.0)


def test_component_access(mods, device, rng):
    n = 64
    args = [Arr(_vecs(rng, n, 3), "vec3"), Arr(_vecs(rng, n, 4), "vec4"),
            Arr(rng.uniform(-2, 2, (n, 3, 3)).astype(np.float32), "mat33"),
            Arr(np.zeros((n, 8), np.float32)), Arr(np.zeros((n, 3), np.float32), "vec3")]
    got = launch_both(mods, "components", n, args, device)
    v3, v4, m = (a.data for a in args[:3])
    np.testing.assert_allclose(got[3][:, 7], v3[:, 2] * 10 + v4[:, 1] + m[:, 2, 0], rtol=1e-6)


def test_component_assignment(mods, device, rng):
    n = 32
    a = _vecs(rng, n, 3)
    outs = [Arr(np.zeros((n, 3), np.float32), "vec3"), Arr(np.zeros((n, 4), np.float32), "vec4")]
    got = launch_both(mods, "assign_components", n, [Arr(a, "vec3"), *outs], device)
    np.testing.assert_array_equal(got[1][:, 2], -a[:, 0])
    np.testing.assert_allclose(got[1][:, 0], a[:, 0], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[1][:, 1], a[:, 0] * 4.0)


def test_component_assignment_of_array_elements(mods, device, rng):
    """``a[i].x = v`` and ``a[i][k] = v`` write back into the array (Warp 1.19 semantics)."""
    n = 16
    v = _vecs(rng, n, 3)
    m = rng.uniform(-2, 2, (n, 2, 3, 3)).astype(np.float32)
    got = launch_both(mods, "element_components", n, [Arr(v, "vec3"), Arr(m, "mat33")], device)
    np.testing.assert_array_equal(got[0][:, 0], 5.0)
    np.testing.assert_array_equal(got[0][:, 1], v[:, 1] * 2)
    np.testing.assert_array_equal(got[1][:, 0, 1, 2], -3.0)
    np.testing.assert_array_equal(got[1][:, 1, 0], [[1, 2, 3]] * n)


def test_runtime_negative_vector_index(mods, device, rng):
    v = _vecs(rng, 8, 3)
    got = launch_both(mods, "runtime_negative_index", 8, [Arr(v, "vec3"), Arr(np.zeros((8, 4), np.float32))],
                      device)
    np.testing.assert_array_equal(got[1][:, :3], v)


def test_vector_arithmetic(mods, device, rng):
    n = 100
    s = rng.uniform(0.5, 3, n).astype(np.float32) * rng.choice([-1, 1], n).astype(np.float32)
    args = [Arr(_vecs(rng, n, 3), "vec3"), Arr(_vecs(rng, n, 3), "vec3"), Arr(s),
            Arr(np.zeros((n, 9, 3), np.float32), "vec3"), Arr(np.zeros((n, 2), np.float32), "vec2"),
            Val("vec3", (0.25, -1.5, 3.0))]
    launch_both(mods, "vec_arith", n, args, device)


def test_vector_builtins(mods, device, rng):
    n = 100
    args = [Arr(_vecs(rng, n, 3), "vec3"), Arr(_vecs(rng, n, 3), "vec3"), Arr(_vecs(rng, n, 4), "vec4"),
            Arr(np.zeros((n, 5), np.float32)), Arr(np.zeros((n, 3, 3), np.float32), "vec3"),
            Arr(np.zeros((n, 4), np.float32), "vec4")]
    got = launch_both(mods, "vec_builtins", n, args, device, rtol=2e-6, atol=2e-6)
    a, b = args[0].data, args[1].data
    np.testing.assert_allclose(got[4][:, 0], np.cross(a, b), rtol=1e-5, atol=1e-5)


def test_matrix_operations(mods, device, rng):
    n = 64
    m = rng.uniform(-2, 2, (n, 3, 3)).astype(np.float32)
    k = rng.uniform(-2, 2, (n, 3, 3)).astype(np.float32)
    v = _vecs(rng, n, 3)
    args = [Arr(m, "mat33"), Arr(k, "mat33"), Arr(v, "vec3"),
            Arr(np.zeros((n, 8, 3, 3), np.float32), "mat33"), Arr(np.zeros((n, 5, 3), np.float32), "vec3"),
            Arr(np.zeros((n, 3), np.float32))]
    got = launch_both(mods, "mat_ops", n, args, device, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[3][:, 0], m @ k, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[4][:, 0], np.einsum("nij,nj->ni", m, v), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[3][:, 1], np.transpose(m, (0, 2, 1)))


def test_matrix_component_assignment(mods, device, rng):
    n = 16
    v = _vecs(rng, n, 3)
    got = launch_both(mods, "mat_build", n, [Arr(v, "vec3"), Arr(np.zeros((n, 3, 3), np.float32), "mat33")],
                      device)
    np.testing.assert_array_equal(got[1][:, 2], v)
    np.testing.assert_array_equal(got[1][:, 0, 2], 5.0)
