"""Vector and matrix types and builtins beyond the basics (test_vectors.py), differential against Warp.

Warp's composite aliases; constructors (components, fill, casts, ``matrix_from_rows/cols``,
``identity``, the generic ``wp.vector``/``wp.matrix``); ``m[i][j] = x`` on a local matrix; the
builtins outer, transpose, determinant, inverse, trace, diag, get_diag, skew, cw_mul, cw_div,
ddot, norm_l1/l2/huber/pseudo_huber, length/length_sq/normalize/dot/cross on float16, float32
and float64 (and integer vectors where Warp has them); bad inputs with located errors.
"""

import numpy as np
import pytest
from conftest import Arr, check_located, launch_both, load_both, warp

import tilewarp as wp
from tilewarp import KernelError, KernelTypeError

# float32 and float64 variants of one kernel text: the tokens below name the types
TOKENS = {"f32": {"_F_": "wp.float32", "_V2_": "wp.vec2", "_V3_": "wp.vec3", "_V4_": "wp.vec4",
                  "_M22_": "wp.mat22", "_M33_": "wp.mat33", "_M44_": "wp.mat44", "_SFX_": "f32"},
          "f64": {"_F_": "wp.float64", "_V2_": "wp.vec2d", "_V3_": "wp.vec3d", "_V4_": "wp.vec4d",
                  "_M22_": "wp.mat22d", "_M33_": "wp.mat33d", "_M44_": "wp.mat44d", "_SFX_": "f64"}}

TYPED = '''
@wp.kernel
def mat_builtins__SFX_(m2: wp.array(dtype=_M22_), m3: wp.array(dtype=_M33_), m4: wp.array(dtype=_M44_),
                       v3: wp.array(dtype=_V3_), v4: wp.array(dtype=_V4_),
                       o2: wp.array(dtype=_M22_, ndim=2), o3: wp.array(dtype=_M33_, ndim=2),
                       o4: wp.array(dtype=_M44_, ndim=2), s: wp.array(dtype=_F_, ndim=2),
                       ov3: wp.array(dtype=_V3_, ndim=2), ov4: wp.array(dtype=_V4_, ndim=2)):
    i = wp.tid()
    a = m2[i]
    b = m3[i]
    c = m4[i]
    x = v3[i]
    y = v4[i]
    o2[i, 0] = wp.inverse(a)
    o2[i, 1] = wp.transpose(a)
    o2[i, 2] = wp.cw_mul(a, wp.transpose(a))
    o2[i, 3] = wp.cw_div(a, wp.transpose(a))
    o3[i, 0] = wp.inverse(b)
    o3[i, 1] = wp.outer(x, x)
    o3[i, 2] = wp.diag(x)
    o3[i, 3] = wp.skew(x)
    o3[i, 4] = wp.skew(x) * b
    o3[i, 5] = wp.identity(3, _F_) + wp.identity(n=3, dtype=_F_) * b
    o4[i, 0] = wp.inverse(c)
    o4[i, 1] = wp.transpose(c)
    o4[i, 2] = wp.outer(y, y)
    o4[i, 3] = wp.diag(y)
    s[i, 0] = wp.determinant(a)
    s[i, 1] = wp.determinant(b)
    s[i, 2] = wp.determinant(c)
    s[i, 3] = wp.trace(a) + wp.trace(b) * wp.trace(c)
    s[i, 4] = wp.ddot(b, b)
    s[i, 5] = wp.ddot(c, wp.transpose(c))
    s[i, 6] = wp.dot(x, x) + wp.length(x) * wp.length_sq(y)
    ov3[i, 0] = wp.get_diag(b)
    ov3[i, 1] = wp.cross(x, wp.get_diag(b))
    ov3[i, 2] = wp.normalize(x)
    ov3[i, 3] = wp.cw_mul(x, wp.get_diag(b))
    ov3[i, 4] = wp.cw_div(x, wp.get_diag(b))
    ov4[i, 0] = wp.get_diag(c)
    ov4[i, 1] = wp.normalize(y)


@wp.kernel
def construct__SFX_(v3: wp.array(dtype=_V3_), v4: wp.array(dtype=_V4_), f: wp.array(dtype=float),
                    o3: wp.array(dtype=_M33_, ndim=2), ov: wp.array(dtype=_V3_, ndim=2),
                    flat: wp.array(dtype=_F_, ndim=3)):
    i = wp.tid()
    x = v3[i]
    y = wp.vec3(f[i], f[i] * 2.0, -f[i])
    z = _V3_(y)
    o3[i, 0] = wp.matrix_from_rows(x, z, x)
    o3[i, 1] = wp.matrix_from_cols(x, z, x)
    o3[i, 2] = _M33_(wp.mat33(f[i]))
    m = _M33_(x[0], x[1], x[2], z[0], z[1], z[2], x[2], x[1], x[0])
    m[1][2] = x[0]
    m[0][0] += z[2]
    m[2] = x
    o3[i, 3] = m
    o3[i, 4] = _M33_(x[0])
    ov[i, 0] = _V3_(x[0])
    ov[i, 1] = _V3_(wp.vec3i(wp.vec3(f[i] * 3.0, -f[i] * 3.0, 7.5)))
    ov[i, 2] = _V3_(v4[i][0], v4[i][1], v4[i][2])
    ov[i, 3] = wp.vector(x[1], x[0], x[2])
    ov[i, 4] = wp.vector(x[2], length=3)
    ov[i, 5] = x * _F_(float(len(x) + len(m)))
    rows = wp.matrix_from_rows(x, z)
    generic = wp.matrix(x[0], x[1], x[2], z[0], z[1], z[2], shape=(2, 3))
    cols = wp.matrix_from_cols(x, z)
    for j in range(2):
        for k in range(3):
            flat[i, 0, j * 3 + k] = rows[j, k]
            flat[i, 1, j * 3 + k] = generic[j][k]
            flat[i, 2, j * 3 + k] = cols[k, j]
'''

SRC = '''
import WP as wp


@wp.kernel
def norms(v: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.vec4), d: wp.array(dtype=float),
          out: wp.array(dtype=float, ndim=2), vout: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    x = v[i]
    out[i, 0] = wp.norm_l1(x)
    out[i, 1] = wp.norm_l2(x)
    out[i, 2] = wp.norm_huber(x)
    out[i, 3] = wp.norm_huber(x, d[i])
    out[i, 4] = wp.norm_huber(x, delta=d[i])
    out[i, 5] = wp.norm_pseudo_huber(x)
    out[i, 6] = wp.norm_pseudo_huber(x, d[i])
    out[i, 7] = wp.norm_l1(q[i]) + wp.norm_l2(q[i])
    vout[i] = wp.smooth_normalize(x, d[i])


@wp.kernel
def half_vectors(a: wp.array(dtype=wp.vec3h), b: wp.array(dtype=wp.vec3h), s: wp.array(dtype=wp.float16, ndim=2),
                 v: wp.array(dtype=wp.vec3h, ndim=2), m: wp.array(dtype=wp.mat33h)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    s[i, 0] = wp.dot(x, y)
    s[i, 1] = wp.length(x)
    s[i, 2] = wp.length_sq(y)
    s[i, 3] = wp.determinant(wp.outer(x, y) + wp.identity(3, wp.float16))
    v[i, 0] = wp.cross(x, y)
    v[i, 1] = wp.normalize(x)
    v[i, 2] = wp.cw_mul(x, y)
    m[i] = wp.skew(x) + wp.diag(y)


@wp.kernel
def int_vectors(a: wp.array(dtype=wp.vec3i), b: wp.array(dtype=wp.vec3i), s: wp.array(dtype=int, ndim=2),
                v: wp.array(dtype=wp.vec3i, ndim=2), m: wp.array(dtype=int, ndim=3)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    s[i, 0] = wp.dot(x, y)
    s[i, 1] = wp.length_sq(x)
    s[i, 2] = wp.trace(wp.outer(x, y))
    s[i, 3] = wp.ddot(wp.outer(x, y), wp.outer(y, x))
    v[i, 0] = wp.cross(x, y)
    v[i, 1] = wp.cw_mul(x, y)
    v[i, 2] = wp.get_diag(wp.diag(x))
    r = wp.skew(x) + wp.transpose(wp.outer(x, y))
    for j in range(3):
        for k in range(3):
            m[i, j, k] = r[j, k]


@wp.kernel
def small_ints(a: wp.array(dtype=wp.vec4ub), b: wp.array(dtype=wp.vec2s), c: wp.array(dtype=wp.vec3ul),
               oa: wp.array(dtype=wp.vec4ub), ob: wp.array(dtype=wp.vec2s), oc: wp.array(dtype=wp.vec3ul)):
    i = wp.tid()
    oa[i] = a[i] + a[i]
    ob[i] = wp.cw_mul(b[i], b[i]) - b[i]
    oc[i] = wp.cross(c[i], c[i] + wp.vec3ul(wp.uint64(1), wp.uint64(2), wp.uint64(3)))
'''


def _source():
    typed = "".join(_variant(TYPED, k) for k in TOKENS)
    return SRC + typed


def _variant(text, key):
    for token, name in TOKENS[key].items():
        text = text.replace(token, name)
    return text


@pytest.fixture(scope="module")
def mods():
    return load_both(_source())


NP = {"f32": np.float32, "f64": np.float64}
LIB = {"f32": "", "f64": "d"}


def _well_conditioned(rng, n, k, dt):
    """Random k x k matrices with a dominant diagonal: inverses stay well scaled."""
    m = rng.uniform(-1, 1, (n, k, k)) + np.eye(k) * rng.choice([-3.0, 3.0], (n, 1, 1))
    return m.astype(dt)


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_matrix_builtins(mods, device, rng, key):
    n, dt, sfx = 48, NP[key], LIB[key]
    m2, m3, m4 = (_well_conditioned(rng, n, k, dt) for k in (2, 3, 4))
    v3 = rng.uniform(0.5, 2, (n, 3)).astype(dt) * rng.choice([-1, 1], (n, 3)).astype(dt)
    v4 = rng.uniform(-2, 2, (n, 4)).astype(dt)
    args = [Arr(m2, f"mat22{sfx}"), Arr(m3, f"mat33{sfx}"), Arr(m4, f"mat44{sfx}"), Arr(v3, f"vec3{sfx}"),
            Arr(v4, f"vec4{sfx}"), Arr(np.zeros((n, 4, 2, 2), dt), f"mat22{sfx}"),
            Arr(np.zeros((n, 6, 3, 3), dt), f"mat33{sfx}"), Arr(np.zeros((n, 4, 4, 4), dt), f"mat44{sfx}"),
            Arr(np.zeros((n, 7), dt)), Arr(np.zeros((n, 5, 3), dt), f"vec3{sfx}"),
            Arr(np.zeros((n, 2, 4), dt), f"vec4{sfx}")]
    got = launch_both(mods, f"mat_builtins_{key}", n, args, device, rtol=2e-5, atol=2e-5)
    tol = dict(rtol=1e-4, atol=1e-4) if key == "f32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[7][:, 0], np.linalg.inv(m4), **tol)
    np.testing.assert_allclose(got[6][:, 0], np.linalg.inv(m3), **tol)
    np.testing.assert_allclose(got[8][:, 2], np.linalg.det(m4), **tol)
    np.testing.assert_allclose(got[6][:, 3] @ v3[:, :, None], np.cross(v3, v3)[:, :, None], **tol)


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_constructors(mods, device, rng, key):
    n, dt, sfx = 32, NP[key], LIB[key]
    v3 = rng.uniform(-2, 2, (n, 3)).astype(dt)
    v4 = rng.uniform(-2, 2, (n, 4)).astype(dt)
    f = rng.uniform(-2, 2, n).astype(np.float32)
    args = [Arr(v3, f"vec3{sfx}"), Arr(v4, f"vec4{sfx}"), Arr(f), Arr(np.zeros((n, 5, 3, 3), dt), f"mat33{sfx}"),
            Arr(np.zeros((n, 6, 3), dt), f"vec3{sfx}"), Arr(np.zeros((n, 3, 6), dt))]
    got = launch_both(mods, f"construct_{key}", n, args, device)
    m, z = got[3][:, 3], np.stack([f, f * 2, -f], 1).astype(dt)
    np.testing.assert_array_equal(got[3][:, 0], np.stack([v3, z, v3], 1))
    np.testing.assert_array_equal(got[3][:, 1], np.stack([v3, z, v3], 2))
    np.testing.assert_array_equal(m[:, 2], v3)
    np.testing.assert_array_equal(m[:, 1, 2], v3[:, 0])
    np.testing.assert_array_equal(got[4][:, 1], np.trunc(np.stack([f * 3, -f * 3, np.full(n, 7.5)], 1)).astype(dt))
    np.testing.assert_array_equal(got[5][:, 0], np.concatenate([v3, z], 1))
    np.testing.assert_array_equal(got[5][:, 1], got[5][:, 0])
    np.testing.assert_array_equal(got[5][:, 2], got[5][:, 0])


def test_norms(mods, device, rng):
    n = 64
    v = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    v[:8] *= 0.1  # the quadratic branch of the Huber norm
    d = rng.uniform(0.2, 3, n).astype(np.float32)
    args = [Arr(v, "vec3"), Arr(rng.uniform(-1, 1, (n, 4)).astype(np.float32), "vec4"), Arr(d),
            Arr(np.zeros((n, 8), np.float32)), Arr(np.zeros((n, 3), np.float32), "vec3")]
    got = launch_both(mods, "norms", n, args, device, rtol=2e-6, atol=2e-6)
    l2 = np.linalg.norm(v.astype(np.float64), axis=1)
    huber = np.where(l2 <= d, 0.5 * l2 * l2, d * (l2 - 0.5 * d))
    np.testing.assert_allclose(got[3][:, 3], huber, rtol=1e-5)
    np.testing.assert_allclose(got[3][:, 6], d * np.sqrt(1 + (l2 / d) ** 2), rtol=1e-5)


def test_float16_vectors(mods, device, rng):
    n = 64
    a, b = (rng.uniform(-2, 2, (n, 3)).astype(np.float16) for _ in range(2))
    args = [Arr(a, "vec3h"), Arr(b, "vec3h"), Arr(np.zeros((n, 4), np.float16)),
            Arr(np.zeros((n, 3, 3), np.float16), "vec3h"), Arr(np.zeros((n, 3, 3), np.float16), "mat33h")]
    launch_both(mods, "half_vectors", n, args, device)


def test_integer_vectors(mods, device, rng):
    n = 64
    a, b = (rng.integers(-50, 50, (n, 3)).astype(np.int32) for _ in range(2))
    args = [Arr(a, "vec3i"), Arr(b, "vec3i"), Arr(np.zeros((n, 4), np.int32)),
            Arr(np.zeros((n, 3, 3), np.int32), "vec3i"), Arr(np.zeros((n, 3, 3), np.int32))]
    got = launch_both(mods, "int_vectors", n, args, device)
    np.testing.assert_array_equal(got[4], np.einsum("ni,nj->nji", a, b) + np.cross(a[:, None, :], np.eye(3)[None])
                                  * -1)
    np.testing.assert_array_equal(got[3][:, 0], np.cross(a, b))


def test_small_integer_vector_aliases(mods, device, rng):
    n = 32
    a = rng.integers(0, 256, (n, 4)).astype(np.uint8)
    b = rng.integers(-200, 200, (n, 2)).astype(np.int16)
    c = rng.integers(0, 2**40, (n, 3)).astype(np.uint64)
    args = [Arr(a, "vec4ub"), Arr(b, "vec2s"), Arr(c, "vec3ul"), Arr(np.zeros_like(a), "vec4ub"),
            Arr(np.zeros_like(b), "vec2s"), Arr(np.zeros_like(c), "vec3ul")]
    got = launch_both(mods, "small_ints", n, args, device)
    np.testing.assert_array_equal(got[3], a + a)  # uint8 wraps


# ---- host side: aliases and type factories ----------------------------------------------------------

WARP_ALIASES = ([f"vec{n}{s}" for n in (2, 3, 4) for s in ("", "f", "h", "d", "i", "ui", "b", "ub", "s", "us", "l",
                                                           "ul")]
                + [f"mat{n}{n}{s}" for n in (2, 3, 4) for s in ("", "f", "h", "d")]
                + [f"{k}{s}" for k in ("quat", "transform", "spatial_vector", "spatial_matrix")
                   for s in ("", "f", "h", "d")])


@pytest.mark.parametrize("name", WARP_ALIASES)
def test_alias_matches_warp(name):
    t = getattr(wp, name)
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    ref = getattr(warp, name)
    assert tuple(t._wp_shape_) == tuple(ref._shape_)
    assert t._wp_scalar_type_.__name__ == ref._wp_scalar_type_.__name__
    assert wp.types.type_size(t) == warp.types.type_size_in_bytes(ref)


def test_type_factories():
    assert wp.types.vector(length=3, dtype=float) is wp.vec3
    assert wp.types.matrix(shape=(3, 3), dtype=wp.float64) is wp.mat33d
    assert wp.types.quaternion(dtype=wp.float64) is wp.quatd
    assert wp.types.transformation(dtype=wp.float16) is wp.transformh
    assert wp.vec3f is wp.vec3 and wp.mat44f is wp.mat44 and wp.spatial_vectorf is wp.types.vector(6, float)
    with pytest.raises(TypeError):
        wp.types.quaternion(dtype=wp.int32)


# ---- bad inputs: the error class, at the user's file:line ------------------------------------------

check = check_located  # tests/conftest.py


@wp.kernel
def k_matrix_from_vectors():
    a = wp.vec3(1.0, 2.0, 3.0)
    m = wp.mat33(a, a, a)  # <- error


@wp.kernel
def k_component_count():
    v = wp.vec3(1.0, 2.0)  # <- error


@wp.kernel
def k_mixed_dtypes():
    d = wp.dot(wp.vec3(1.0), wp.vec3d(wp.float64(1.0)))  # <- error


@wp.kernel
def k_unknown_attribute():
    v = wp.vec3(1.0, 2.0, 3.0)
    _ = v.w  # <- error


@wp.kernel
def k_inverse_of_ints():
    m = wp.identity(3, dtype=int)
    _ = wp.inverse(m)  # <- error


@wp.kernel
def k_determinant_5x5():
    m = wp.identity(5, dtype=float)
    _ = wp.determinant(m)  # <- error


@wp.kernel
def k_trace_not_square():
    m = wp.matrix_from_rows(wp.vec3(1.0), wp.vec3(2.0))
    _ = wp.trace(m)  # <- error


@wp.kernel
def k_identity_not_constant():
    n = wp.tid() + 3
    _ = wp.identity(n, float)  # <- error


@wp.kernel
def k_huber_delta_dtype():
    _ = wp.norm_huber(wp.vec3(1.0), delta=wp.float64(2.0))  # <- error


@wp.kernel
def k_bad_keyword():
    _ = wp.norm_l2(wp.vec3(1.0), delta=1.0)  # <- error


@wp.kernel
def k_rows_of_mixed_vectors():
    _ = wp.matrix_from_rows(wp.vec3(1.0), wp.vec2(1.0, 2.0))  # <- error


@pytest.mark.parametrize("kernel,fragments", [
    (k_matrix_from_vectors, ("matrix_from_rows", "matrix_from_cols")), (k_component_count, ("incompatible number of values given (2)",)),
    (k_mixed_dtypes, ("vec3d",)), (k_unknown_attribute, ("no attribute 'w'",)), (k_inverse_of_ints, ("float",)),
    (k_determinant_5x5, ("4x4",)), (k_trace_not_square, ("square",)), (k_identity_not_constant, ("constant",)),
    (k_huber_delta_dtype, ("delta",)), (k_rows_of_mixed_vectors, ("same type",)),
], ids=lambda p: getattr(p, "key", None) or "")
def test_bad_inputs(kernel, fragments):
    check(kernel, KernelTypeError, *fragments)


def test_unexpected_keyword():
    check(k_bad_keyword, KernelTypeError, "norm_l2() got an unexpected keyword argument 'delta'")
