"""Quaternions, rigid transforms and spatial vectors, differential against Warp on CPU.

Every quat_*/transform_*/spatial_* builtin on random inputs in float32 and float64 (unit and
non-unit quaternions, rotation and general matrices), the constructor forms (components,
``quat(ijk, w)``, keywords, ``transform(p, q)``, ``transform(p)``, ``spatial_vector(w, v)``,
dtype casts), component/attribute access and assignment (``q[0]``, ``q.x``, ``t.p``, ``t.q``,
``t[6]``), quaternion/transform operators, arrays of quat/transform on the host, and bad inputs.
"""

import numpy as np
import pytest
from conftest import Arr, Val, check_located, launch_both, load_both, warp

import tilewarp as wp
from tilewarp import KernelError, KernelTypeError

TOKENS = {"f32": {"_F_": "wp.float32", "_V3_": "wp.vec3", "_Q_": "wp.quat", "_T_": "wp.transform",
                  "_M33_": "wp.mat33", "_M44_": "wp.mat44", "_SV_": "wp.spatial_vector", "_SM_": "wp.spatial_matrix",
                  "_SFX_": "f32"},
          "f64": {"_F_": "wp.float64", "_V3_": "wp.vec3d", "_Q_": "wp.quatd", "_T_": "wp.transformd",
                  "_M33_": "wp.mat33d", "_M44_": "wp.mat44d", "_SV_": "wp.spatial_vectord",
                  "_SM_": "wp.spatial_matrixd", "_SFX_": "f64"}}

TYPED = '''
@wp.kernel
def quat_ops__SFX_(q: wp.array(dtype=_Q_), r: wp.array(dtype=_Q_), v: wp.array(dtype=_V3_),
                   s: wp.array(dtype=_F_), m33: wp.array(dtype=_M33_), m44: wp.array(dtype=_M44_),
                   qo: wp.array(dtype=_Q_, ndim=2), vo: wp.array(dtype=_V3_, ndim=2),
                   mo: wp.array(dtype=_M33_), so: wp.array(dtype=_F_, ndim=2)):
    i = wp.tid()
    a = q[i]
    b = r[i]
    x = v[i]
    t = s[i]
    qo[i, 0] = a * b
    qo[i, 1] = wp.quat_inverse(a)
    qo[i, 2] = wp.quat_from_axis_angle(x, t)
    qo[i, 3] = wp.quat_slerp(a, b, t)
    qo[i, 4] = wp.quat_rpy(x[0], x[1], x[2])
    qo[i, 5] = wp.quat_from_matrix(wp.quat_to_matrix(a))
    qo[i, 6] = wp.quat_from_matrix(m33[i])
    qo[i, 7] = wp.quat_from_matrix(m44[i])
    qo[i, 8] = wp.normalize(a + b) - b * t + t * a - a / t
    qo[i, 9] = -a + wp.quat_identity(dtype=_F_)
    vo[i, 0] = wp.quat_rotate(a, x)
    vo[i, 1] = wp.quat_rotate_inv(a, x)
    vo[i, 2] = wp.quat_rotate(b, x)
    axis, angle = wp.quat_to_axis_angle(a)
    vo[i, 3] = axis
    so[i, 0] = angle
    so[i, 1] = wp.dot(a, b)
    so[i, 2] = wp.length(b) + wp.length_sq(b)
    so[i, 3] = a[0] + a.y * a[-1] - a.z * a.w
    mo[i] = wp.quat_to_matrix(b)


@wp.kernel
def xform_ops__SFX_(ta: wp.array(dtype=_T_), tb: wp.array(dtype=_T_), v: wp.array(dtype=_V3_),
                    s: wp.array(dtype=_F_), m44: wp.array(dtype=_M44_), to: wp.array(dtype=_T_, ndim=2),
                    vo: wp.array(dtype=_V3_, ndim=2), qo: wp.array(dtype=_Q_), mo: wp.array(dtype=_M44_)):
    i = wp.tid()
    a = ta[i]
    b = tb[i]
    x = v[i]
    to[i, 0] = wp.transform_multiply(a, b)
    to[i, 1] = a * b
    to[i, 2] = wp.transform_inverse(a)
    to[i, 3] = _T_(wp.transform_get_translation(a), wp.transform_get_rotation(b))
    to[i, 4] = _T_(p=b.p, q=a.q)
    c = a
    c.p = x
    c.q = b.q
    c[6] = c[6] * s[i]
    to[i, 5] = c
    to[i, 6] = a + b - b * s[i]
    to[i, 7] = wp.transform_identity(dtype=_F_)
    to[i, 8] = _T_(x)
    vo[i, 0] = wp.transform_point(a, x)
    vo[i, 1] = wp.transform_vector(a, x)
    vo[i, 2] = wp.transform_point(m44[i], x)
    vo[i, 3] = wp.transform_vector(m44[i], x)
    vo[i, 4] = a.p + b.p
    qo[i] = a.q * b.q
    mo[i] = wp.transform_to_matrix(a)


@wp.kernel
def spatial_ops__SFX_(a: wp.array(dtype=_SV_), b: wp.array(dtype=_SV_), r: wp.array(dtype=_M33_),
                      m: wp.array(dtype=_SM_), vo: wp.array(dtype=_SV_, ndim=2), to: wp.array(dtype=_V3_, ndim=2),
                      so: wp.array(dtype=_F_), mo: wp.array(dtype=_SM_)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    vo[i, 0] = wp.spatial_cross(x, y)
    vo[i, 1] = wp.spatial_cross_dual(x, y)
    top = wp.spatial_top(y)
    vo[i, 2] = _SV_(top[0], top[1], top[2], x[3], x[4], x[5])
    vo[i, 3] = m[i] * x
    vo[i, 4] = _SV_(x[5], x[4], x[3], y[2], y[1], y[0])
    to[i, 0] = wp.spatial_top(x)
    to[i, 1] = wp.spatial_bottom(x)
    so[i] = wp.spatial_dot(x, y)
    mo[i] = wp.spatial_adjoint(r[i], wp.skew(wp.spatial_top(y)) * r[i])


@wp.kernel
def construct__SFX_(v: wp.array(dtype=_V3_), s: wp.array(dtype=_F_), f: wp.array(dtype=float),
                    qo: wp.array(dtype=_Q_, ndim=2), to: wp.array(dtype=_T_, ndim=2)):
    i = wp.tid()
    x = v[i]
    w = s[i]
    qo[i, 0] = _Q_(x[0], x[1], x[2], w)
    qo[i, 1] = _Q_(x, w)
    qo[i, 2] = _Q_(wp.quat(f[i], f[i] * 2.0, 0.5, -1.0))
    qo[i, 3] = _Q_(x=w, y=x[0], z=x[1], w=x[2])
    qo[i, 4] = _Q_(ijk=x, real=w)
    qo[i, 5] = _Q_()
    q = _Q_(x, w)
    q[0] = w
    q.w = x[0]
    q.y += w
    q[-2] *= w
    qo[i, 6] = q
    to[i, 0] = _T_(x, q)
    to[i, 1] = _T_(x[0], x[1], x[2], w, w, w, w)
    to[i, 2] = _T_()
    t = _T_(x, wp.quat_identity(_F_))
    t.p += x
    t[3] = w
    t.q = t.q * q
    to[i, 3] = t
'''

SRC = '''
import WP as wp


@wp.kernel
def generic_constructors(v: wp.array(dtype=wp.vec3), qo: wp.array(dtype=wp.quat), to: wp.array(dtype=wp.transform),
                         qd: wp.array(dtype=wp.quatd), so: wp.array(dtype=wp.spatial_vector, ndim=2)):
    i = wp.tid()
    x = v[i]
    qo[i] = wp.quaternion(x, x[2], dtype=wp.float32) + wp.quaternion(x[1], x[0], x[2], x[1], dtype=wp.float32)
    to[i] = wp.transformation(x, wp.quat_identity(), dtype=wp.float32) + wp.transformation(
        x[0], x[1], x[2], x[0], x[1], x[2], x[0], dtype=wp.float32)
    qd[i] = wp.quatd(wp.quat(x, x[0]))
    so[i, 0] = wp.spatial_vector(x, -x)
    so[i, 1] = wp.spatial_vector(w=x, v=x * 2.0)
    so[i, 2] = wp.spatial_vector(x[0], x[1], x[2], x[2], x[1], x[0]) + wp.spatial_vector()
'''


TWIST = '''

ROT = wp.constant(wp.quat(0.0, 0.6, 0.0, 0.8))


@wp.kernel
def params(q: wp.quat, t: wp.transformd, x: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3, ndim=2),
           td: wp.array(dtype=wp.transformd)):
    i = wp.tid()
    out[i, 0] = wp.quat_rotate(q, x[i])
    out[i, 1] = wp.quat_rotate(ROT * q, x[i])
    out[i, 2] = wp.vec3(wp.transform_point(t, wp.vec3d(x[i])))
    td[i] = t

@wp.kernel
def twist_wrench(t: wp.array(dtype=wp.transform), x: wp.array(dtype=wp.spatial_vector),
                 out: wp.array(dtype=wp.spatial_vector, ndim=2)):
    i = wp.tid()
    out[i, 0] = wp.transform_twist(t[i], x[i])
    out[i, 1] = wp.transform_wrench(t[i], x[i])
'''


def _source():
    out = SRC + TWIST
    for key, tokens in TOKENS.items():
        text = TYPED
        for token, name in tokens.items():
            text = text.replace(token, name)
        out += text
    return out


@pytest.fixture(scope="module")
def mods():
    return load_both(_source())


NP = {"f32": np.float32, "f64": np.float64}
SFX = {"f32": "", "f64": "d"}
FLOAT = {"f32": "float32", "f64": "float64"}
TOL = dict(rtol=3e-6, atol=3e-6)  # float32 (float64 compares to 1e-12 in conftest)


def _unit_quats(rng, n, dt):
    q = rng.normal(size=(n, 4))
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(dt)


def _rotation(q):
    """Rotation matrices of unit quaternions (x, y, z, w), for building inputs."""
    x, y, z, w = q.T
    return np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                     2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                     2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], 1).reshape(-1, 3, 3)


def _quat_inputs(rng, n, dt):
    q, r = _unit_quats(rng, n, dt), _unit_quats(rng, n, dt)
    r[: n // 4] *= rng.uniform(0.5, 1.5, (n // 4, 1)).astype(dt)  # non-unit: Warp's formulas as they are
    m33 = _rotation(_unit_quats(rng, n, np.float64))
    m33[: n // 4] = rng.uniform(-1, 1, (n // 4, 3, 3))  # general matrices reach every Shepperd branch
    m44 = np.zeros((n, 4, 4))
    m44[:, :3, :3], m44[:, 3, 3] = _rotation(_unit_quats(rng, n, np.float64)), 1
    return q, r, m33.astype(dt), m44.astype(dt)


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_quaternion_builtins(mods, device, rng, key):
    n, dt, sfx = 96, NP[key], SFX[key]
    q, r, m33, m44 = _quat_inputs(rng, n, dt)
    v = rng.uniform(-2, 2, (n, 3)).astype(dt)
    s = rng.uniform(0.1, 1, n).astype(dt)
    args = [Arr(q, f"quat{sfx}"), Arr(r, f"quat{sfx}"), Arr(v, f"vec3{sfx}"), Arr(s, FLOAT[key]),
            Arr(m33, f"mat33{sfx}"), Arr(m44, f"mat44{sfx}"), Arr(np.zeros((n, 10, 4), dt), f"quat{sfx}"),
            Arr(np.zeros((n, 4, 3), dt), f"vec3{sfx}"), Arr(np.zeros((n, 3, 3), dt), f"mat33{sfx}"),
            Arr(np.zeros((n, 4), dt))]
    got = launch_both(mods, f"quat_ops_{key}", n, args, device, **TOL)
    tol = dict(rtol=1e-5, atol=1e-5)
    qm = got[6][:, 5]  # from_matrix(to_matrix(q)) is q up to sign
    np.testing.assert_allclose(qm * np.sign(np.sum(qm * q, 1))[:, None], q, **tol)
    np.testing.assert_allclose(got[7][:, 0], np.einsum("nij,nj->ni", _rotation(q.astype(np.float64)), v), **tol)


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_transform_builtins(mods, device, rng, key):
    n, dt, sfx = 64, NP[key], SFX[key]
    ta, tb = (np.concatenate([rng.uniform(-3, 3, (n, 3)), _unit_quats(rng, n, np.float64)], 1).astype(dt)
              for _ in range(2))
    m44 = rng.uniform(-2, 2, (n, 4, 4)).astype(dt)
    v = rng.uniform(-2, 2, (n, 3)).astype(dt)
    args = [Arr(ta, f"transform{sfx}"), Arr(tb, f"transform{sfx}"), Arr(v, f"vec3{sfx}"),
            Arr(rng.uniform(0.5, 2, n).astype(dt), FLOAT[key]), Arr(m44, f"mat44{sfx}"),
            Arr(np.zeros((n, 9, 7), dt), f"transform{sfx}"), Arr(np.zeros((n, 5, 3), dt), f"vec3{sfx}"),
            Arr(np.zeros((n, 4), dt), f"quat{sfx}"), Arr(np.zeros((n, 4, 4), dt), f"mat44{sfx}")]
    got = launch_both(mods, f"xform_ops_{key}", n, args, device, **TOL)
    ident = got[5][:, 0] * 0 + np.array([0, 0, 0, 0, 0, 0, 1], dt)
    np.testing.assert_array_equal(got[5][:, 7], ident)
    np.testing.assert_allclose(got[8], np.linalg.inv(np.linalg.inv(got[8])), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got[5][:, 8, :3], v)


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_spatial_builtins(mods, device, rng, key):
    n, dt, sfx = 64, NP[key], SFX[key]
    a, b = (rng.uniform(-2, 2, (n, 6)).astype(dt) for _ in range(2))
    args = [Arr(a, f"spatial_vector{sfx}"), Arr(b, f"spatial_vector{sfx}"),
            Arr(_rotation(_unit_quats(rng, n, np.float64)).astype(dt), f"mat33{sfx}"),
            Arr(rng.uniform(-1, 1, (n, 6, 6)).astype(dt), f"spatial_matrix{sfx}"),
            Arr(np.zeros((n, 5, 6), dt), f"spatial_vector{sfx}"), Arr(np.zeros((n, 2, 3), dt), f"vec3{sfx}"),
            Arr(np.zeros(n, dt)), Arr(np.zeros((n, 6, 6), dt), f"spatial_matrix{sfx}")]
    got = launch_both(mods, f"spatial_ops_{key}", n, args, device, **TOL)
    w, u = a[:, :3].astype(np.float64), a[:, 3:].astype(np.float64)
    bw, bu = b[:, :3].astype(np.float64), b[:, 3:].astype(np.float64)
    want = np.concatenate([np.cross(w, bw), np.cross(w, bu) + np.cross(u, bw)], 1)
    np.testing.assert_allclose(got[4][:, 0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_constructors_and_components(mods, device, rng, key):
    n, dt, sfx = 32, NP[key], SFX[key]
    v = rng.uniform(-2, 2, (n, 3)).astype(dt)
    s = rng.uniform(-2, 2, n).astype(dt)
    args = [Arr(v, f"vec3{sfx}"), Arr(s, FLOAT[key]),
            Arr(rng.uniform(-2, 2, n).astype(np.float32)), Arr(np.zeros((n, 7, 4), dt), f"quat{sfx}"),
            Arr(np.zeros((n, 4, 7), dt), f"transform{sfx}")]
    got = launch_both(mods, f"construct_{key}", n, args, device, **TOL)
    np.testing.assert_array_equal(got[3][:, 1], np.concatenate([v, s[:, None]], 1))
    np.testing.assert_array_equal(got[3][:, 4], got[3][:, 1])
    np.testing.assert_array_equal(got[3][:, 5], 0)  # quat() in a kernel is zero, as in Warp
    np.testing.assert_array_equal(got[4][:, 2], 0)  # so is transform()


def test_generic_constructors(mods, device, rng):
    n = 16
    v = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    args = [Arr(v, "vec3"), Arr(np.zeros((n, 4), np.float32), "quat"), Arr(np.zeros((n, 7), np.float32), "transform"),
            Arr(np.zeros((n, 4)), "quatd"), Arr(np.zeros((n, 3, 6), np.float32), "spatial_vector")]
    got = launch_both(mods, "generic_constructors", n, args, device)
    np.testing.assert_array_equal(got[4][:, 0], np.concatenate([v, -v], 1))


def test_quat_and_transform_parameters(mods, device, rng):
    n = 16
    x = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    args = [Val("quat", (0.48, -0.6, 0.0, 0.64)), Val("transformd", (1.0, -2.0, 0.5, 0.0, 0.0, 0.6, 0.8)),
            Arr(x, "vec3"), Arr(np.zeros((n, 3, 3), np.float32), "vec3"), Arr(np.zeros((n, 7)), "transformd")]
    got = launch_both(mods, "params", n, args, device, **TOL)
    np.testing.assert_array_equal(got[2], [[1.0, -2.0, 0.5, 0.0, 0.0, 0.6, 0.8]] * n)


def test_twist_and_wrench(mods, device, rng):
    """Warp 1.19 has these for float32 only."""
    n = 32
    t = np.concatenate([rng.uniform(-3, 3, (n, 3)), _unit_quats(rng, n, np.float64)], 1).astype(np.float32)
    args = [Arr(t, "transform"), Arr(rng.uniform(-2, 2, (n, 6)).astype(np.float32), "spatial_vector"),
            Arr(np.zeros((n, 2, 6), np.float32), "spatial_vector")]
    launch_both(mods, "twist_wrench", n, args, device, **TOL)


# ---- host side ----------------------------------------------------------------------------------


def _both(fn):
    """``fn(lib)`` evaluated with tilewarp and Warp, as numpy arrays."""
    got = fn(wp)
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    want = fn(warp)
    return [np.asarray(g, dtype=np.float64) for g in got], [np.asarray(w, dtype=np.float64) for w in want]


@pytest.mark.parametrize("case", ["construct", "ops", "arrays", "builtins"])
def test_host_values_match_warp(case):
    cases = {
        "construct": lambda m: [m.quat(1, 2, 3, 4), m.quatd(), m.quat(1.5), m.transform(), m.transform(m.vec3(1, 2, 3)),
                                m.transform((1, 2, 3), (0, 0, 1, 0)), m.transform(1, 2, 3, 4, 5, 6, 7),
                                m.transform(p=(1, 2, 3)), m.spatial_vector(1, 2, 3, 4, 5, 6)],
        "ops": lambda m: [m.quat(1, 2, 3, 4) * m.quat(-1, 0.5, 2, 1), m.quat(1, 2, 3, 4) + m.quat(1, 2, 3, 4),
                          m.quat(1, 2, 3, 4) * 2.0, m.transform((1, 2, 3), (0.6, 0, 0, 0.8)) * m.transform(
                              (-1, 0.5, 2), (0, 0.8, 0, 0.6)), m.transform((1, 2, 3), (0, 0, 0, 1)).p,
                          m.transform((1, 2, 3), (0.6, 0, 0, 0.8)).q, [m.quat(1, 2, 3, 4).w, m.quat(1, 2, 3, 4)[1]]],
        "arrays": lambda m: [m.array([m.transform((1, 2, 3), (0, 0, 0, 1))] * 3, dtype=m.transform).numpy(),
                             m.zeros(3, dtype=m.quatd).numpy(),
                             m.array(np.arange(14.0).reshape(2, 7), dtype=m.transform).numpy(),
                             m.array(np.ones((2, 6, 6)), dtype=m.spatial_matrix).numpy()],
        "builtins": lambda m: [m.quat_identity(), m.transform_identity(), m.quat_from_axis_angle(m.vec3(0, 0, 2), 1.0),
                               m.quat_rpy(0.1, 0.2, 0.3), m.quat_rotate(m.quat(0.3, -0.2, 0.5, 0.4), m.vec3(1, 2, 3)),
                               m.quat_rotate_inv(m.quat(0.3, -0.2, 0.5, 0.4), m.vec3(1, 2, 3)),
                               m.quat_inverse(m.quat(1, 2, 3, 4)),
                               m.transform_point(m.transform((1, 2, 3), (0.6, 0, 0, 0.8)), m.vec3(1, 1, 1)),
                               m.transform_vector(m.transform((1, 2, 3), (0.6, 0, 0, 0.8)), m.vec3(1, 1, 1)),
                               m.transform_inverse(m.transform((1, 2, 3), (0.6, 0, 0, 0.8)))],
    }
    got, want = _both(cases[case])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_host_transform_parts_are_assignable():
    t = wp.transform((1, 2, 3), (0, 0, 0, 1))
    t.p = wp.vec3(4, 5, 6)
    t.q = (1, 0, 0, 0)
    assert list(t) == [4, 5, 6, 1, 0, 0, 0]
    assert type(t.p) is wp.vec3 and type(t.q) is wp.quat
    with pytest.raises(AttributeError):
        t.x


# ---- bad inputs: the error class, at the user's file:line ------------------------------------------

check = check_located  # tests/conftest.py


@wp.kernel
def k_quat_three_values():
    q = wp.quat(1.0, 2.0, 3.0)  # <- error


@wp.kernel
def k_rotate_mixed_dtypes():
    v = wp.quat_rotate(wp.quatd(), wp.vec3(1.0))  # <- error


@wp.kernel
def k_transform_mixed_dtypes():
    t = wp.transform(wp.vec3(1.0), wp.quatd())  # <- error


@wp.kernel
def k_transform_x():
    t = wp.transform_identity()
    x = t.x  # <- error


@wp.kernel
def k_quat_p():
    q = wp.quat_identity()
    p = q.p  # <- error


@wp.kernel
def k_assign_transform_x():
    t = wp.transform_identity()
    t.x = 1.0  # <- error


@wp.kernel
def k_quat_keyword():
    q = wp.quat(a=1.0)  # <- error


@wp.kernel
def k_matrix_times_quat():
    v = wp.identity(4, float) * wp.quat_identity()  # <- error


@wp.kernel
def k_cw_mul_quats():
    q = wp.cw_mul(wp.quat_identity(), wp.quat_identity())  # <- error


@wp.kernel
def k_quat_from_mat22():
    q = wp.quat_from_matrix(wp.identity(2, float))  # <- error


@wp.kernel
def k_quat_from_vec4():
    q = wp.quat(wp.vec4(1.0))  # <- error


@wp.kernel
def k_unpack_axis_angle_into_three():
    a, b, c = wp.quat_to_axis_angle(wp.quat_identity())  # <- error


@pytest.mark.parametrize("kernel,fragments", [
    (k_quat_three_values, ("when constructing a quaternion",)), (k_rotate_mixed_dtypes, ("quat_rotate", "quatd, vec3")),
    (k_transform_mixed_dtypes, ("used to initialize this transform",)), (k_transform_x, ("no attribute 'x'",)),
    (k_quat_p, ("no attribute 'p'",)), (k_assign_transform_x, ("attribute 'x'",)), (k_quat_keyword, ("'a'",)),
    (k_matrix_times_quat, ("'*'",)), (k_cw_mul_quats, ("cw_mul",)), (k_quat_from_mat22, ("mat44",)),
    (k_quat_from_vec4, ("vec4",)), (k_unpack_axis_angle_into_three, ("2 values into 3",)),
], ids=lambda p: getattr(p, "key", None) or "")
def test_bad_inputs(kernel, fragments):
    check(kernel, KernelTypeError, *fragments)
