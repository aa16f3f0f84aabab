"""Euler angles, roll-pitch-yaw, swing-twist, velocity_at_point and the 4x4 matrix / in-place
transform builtins, differential against Warp on CPU.

Warp has the rotation helpers for float32 only: those are compared with Warp in float32, and their
float64 versions (a tilewarp extension) with numpy float64 references and with the float32 results.
The transform helpers are compared with Warp in float32 and float64. Axis sequences are runtime
integers covering all 12 valid orders; gimbal-lock inputs hit the special branches.
"""

import numpy as np
import pytest
from conftest import Arr, check_located, launch_both, load_both, run, warp

import tilewarp as wp
from tilewarp import KernelError, KernelTypeError

TOKENS = {"f32": {"_F_": "wp.float32", "_V3_": "wp.vec3", "_Q_": "wp.quat", "_T_": "wp.transform",
                  "_M44_": "wp.mat44", "_SV_": "wp.spatial_vector", "_SFX_": "f32"},
          "f64": {"_F_": "wp.float64", "_V3_": "wp.vec3d", "_Q_": "wp.quatd", "_T_": "wp.transformd",
                  "_M44_": "wp.mat44d", "_SV_": "wp.spatial_vectord", "_SFX_": "f64"}}

ROTATIONS = '''
@wp.kernel
def rotations__SFX_(q: wp.array(dtype=_Q_), e: wp.array(dtype=_V3_), seq: wp.array(dtype=wp.vec3i),
                    axis: wp.array(dtype=_V3_), qd: wp.array(dtype=_SV_), ve: wp.array(dtype=_V3_, ndim=2),
                    vq: wp.array(dtype=_Q_, ndim=2), vs: wp.array(dtype=_F_, ndim=2)):
    i = wp.tid()
    s = seq[i]
    ve[i, 0] = wp.quat_to_euler(q[i], s[0], s[1], s[2])
    ve[i, 1] = wp.quat_to_rpy(q[i])
    ve[i, 2] = wp.quat_to_euler(q[i], 0, 1, 2)
    ve[i, 3] = wp.velocity_at_point(qd[i], e[i])
    vq[i, 0] = wp.quat_from_euler(e[i], s[0], s[1], s[2])
    vq[i, 1] = wp.quat_from_euler(wp.quat_to_euler(q[i], s[0], s[1], s[2]), s[0], s[1], s[2])
    vq[i, 2] = wp.quat_from_euler(e[i], 0, 1, 2)
    vq[i, 3] = wp.quat_twist(axis[i], q[i])
    vs[i, 0] = wp.quat_twist_angle(axis[i], q[i])
    vs[i, 1] = wp.quat_twist_angle_signed(axis[i], q[i])
'''

TRANSFORMS = '''
@wp.kernel
def transforms__SFX_(m: wp.array(dtype=_M44_), p: wp.array(dtype=_V3_), q: wp.array(dtype=_Q_),
                     s: wp.array(dtype=_V3_), tout: wp.array(dtype=_T_, ndim=2), mout: wp.array(dtype=_M44_),
                     vout: wp.array(dtype=_V3_, ndim=2), qout: wp.array(dtype=_Q_)):
    i = wp.tid()
    tout[i, 0] = wp.transform_from_matrix(m[i])
    mout[i] = wp.transform_compose(p[i], q[i], s[i])
    pos, rot, scale = wp.transform_decompose(m[i])
    vout[i, 0] = pos
    qout[i] = rot
    vout[i, 1] = scale
    t = wp.transform_identity(dtype=_F_)
    wp.transform_set_translation(t, p[i])
    tout[i, 1] = t
    wp.transform_set_rotation(t, q[i])
    tout[i, 2] = t
    for k in range(2):  # the in-place update is carried by the loop
        wp.transform_set_translation(t, wp.transform_get_translation(t) * _F_(2.0))
    tout[i, 3] = t
'''


def _source():
    out = "import WP as wp\n"
    for key, tokens in TOKENS.items():
        for text in (TRANSFORMS, ROTATIONS if key == "f32" else ""):
            for token, name in tokens.items():
                text = text.replace(token, name)
            out += text
    return out


def _source_f64_rotations():
    text = "import WP as wp\n" + ROTATIONS
    for token, name in TOKENS["f64"].items():
        text = text.replace(token, name)
    return text


@pytest.fixture(scope="module")
def mods():
    return load_both(_source())


NP = {"f32": np.float32, "f64": np.float64}
SFX = {"f32": "", "f64": "d"}
FLOAT = {"f32": "float32", "f64": "float64"}
#: every valid axis order: six Tait-Bryan (i, j, k distinct), six proper Euler (i == k)
SEQUENCES = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0),
             (0, 1, 0), (0, 2, 0), (1, 0, 1), (1, 2, 1), (2, 0, 2), (2, 1, 2)]


def _unit(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _axis_quat(axis, angle):
    q = np.zeros(4)
    q[axis], q[3] = np.sin(angle / 2), np.cos(angle / 2)
    return q


def _qmul(a, b):
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - av @ bv]])


def _from_euler(e, i, j, k):
    return _qmul(_axis_quat(k, e[k]), _qmul(_axis_quat(j, e[j]), _axis_quat(i, e[i])))


def _rotation_inputs(rng, n, dt):
    q = _unit(rng, n)
    seq = np.array([SEQUENCES[m % 12] for m in range(n)], np.int32)
    e = rng.uniform(-np.pi, np.pi, (n, 3))
    # gimbal lock and exact special cases: identity, pure axis rotations, middle angle at its pole
    h = np.sqrt(0.5)
    q[:4] = [[0, 0, 0, 1], [1, 0, 0, 0], [0, h, 0, h], [0, 0, -h, h]]
    for m in range(4, 16):
        i, j, k = seq[m]
        ang = e[m].copy()
        ang[j] = (np.pi / 2 if i != k else np.pi) * (1 if m % 2 else -1) if m < 10 else 0.0
        q[m] = _from_euler(ang, i, j, k)
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    axis[16] = q[16, :3] / np.linalg.norm(q[16, :3])  # q is a pure twist about this axis
    sfx = SFX[dt]
    return [Arr(q.astype(NP[dt]), f"quat{sfx}"), Arr(e.astype(NP[dt]), f"vec3{sfx}"), Arr(seq, "vec3i"),
            Arr(axis.astype(NP[dt]), f"vec3{sfx}"), Arr(rng.uniform(-2, 2, (n, 6)).astype(NP[dt]),
                                                        f"spatial_vector{sfx}"),
            Arr(np.zeros((n, 4, 3), NP[dt]), f"vec3{sfx}"), Arr(np.zeros((n, 4, 4), NP[dt]), f"quat{sfx}"),
            Arr(np.zeros((n, 2), NP[dt]), FLOAT[dt])]


def _check_rotations(args, got, atol):
    q, e, axis, qd = (args[k].data.astype(np.float64) for k in (0, 1, 3, 4))
    seq = args[2].data
    ve, vq, vs = (g.astype(np.float64) for g in got[5:])
    n = len(q)
    want = np.array([_from_euler(e[m], *seq[m]) for m in range(n)])
    np.testing.assert_allclose(vq[:, 0], want, atol=atol)
    np.testing.assert_allclose(vq[:, 2], [_from_euler(e[m], 0, 1, 2) for m in range(n)], atol=atol)
    tait = seq[:, 0] != seq[:, 2]  # Tait-Bryan angles round-trip to the same rotation (q or -q)
    np.testing.assert_allclose(np.abs(np.sum(vq[tait, 1] * q[tait], 1)), 1, atol=atol)
    x, y, z, w = q.T
    rpy = np.stack([np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y)),
                    np.arcsin(np.clip(2 * (w * y - z * x), -1, 1)),
                    np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))], 1)
    far = np.abs(rpy[:, 1]) < 1.4  # away from gimbal lock, where roll and yaw are ill-conditioned
    # angles compared modulo 2 pi: at the branch cut -pi and pi are one yaw, and which one a zero's
    # sign picks depends on how the compiler fused the multiply-adds before atan2
    turn = np.remainder(ve[far, 1] - rpy[far] + np.pi, 2 * np.pi) - np.pi
    np.testing.assert_allclose(turn, 0.0, atol=atol * 10)
    np.testing.assert_allclose(ve[:, 3], qd[:, 3:] + np.cross(qd[:, :3], e), atol=atol)
    proj = np.sum(q[:, :3] * axis, 1)
    twist = np.concatenate([proj[:, None] * axis, w[:, None]], 1)
    np.testing.assert_allclose(vq[:, 3], twist / np.linalg.norm(twist, axis=1, keepdims=True), atol=atol)
    np.testing.assert_allclose(vs[:, 1], 2 * np.arctan2(proj, w), atol=atol)
    np.testing.assert_allclose(vs[:, 0], 2 * np.arctan2(np.abs(proj), w), atol=atol)


def test_rotations_float32(mods, device, rng):
    """Warp's functions are float32: compared directly, plus the numpy float64 references."""
    n = 120
    args = _rotation_inputs(rng, n, "f32")
    got = launch_both(mods, "rotations_f32", n, args, device, rtol=2e-5, atol=2e-5)
    _check_rotations(args, got, atol=1e-4)


def test_rotations_float64(mods, device, rng):
    """A tilewarp extension: the same kernel in float64, against numpy and the float32 run."""
    n = 120
    args = _rotation_inputs(rng, n, "f64")
    from conftest import load_module

    mod = load_module(_source_f64_rotations(), "tilewarp")
    got = run(mod, "rotations_f64", n, args, device)
    _check_rotations(args, [None] * 5 + got[5:], atol=1e-9)
    to32 = {"float64": "float32", "quatd": "quat", "vec3d": "vec3", "spatial_vectord": "spatial_vector"}
    args32 = [Arr(a.data.astype(np.float32) if a.data.dtype == np.float64 else a.data,
                  to32.get(a.dtype, a.dtype)) for a in args]
    got32 = run(mods[0], "rotations_f32", n, args32, "cpu")
    ok = np.arange(n) >= 16  # the float32 run agrees where no branch threshold is near
    for g64, g32 in zip(got[5:], got32[5:]):
        np.testing.assert_allclose(g64[ok], g32[ok], atol=5e-4)


def _transform_inputs(rng, n, key):
    dt, sfx = NP[key], SFX[key]
    q = _unit(rng, n)
    p = rng.uniform(-3, 3, (n, 3))
    s = rng.uniform(0.2, 2, (n, 3))
    s[: n // 4] *= -1  # negative scale: a reflection folded into the rotation's branch choice
    x, y, z, w = q.T
    rot = np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                    2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                    2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], 1).reshape(n, 3, 3)
    m = np.zeros((n, 4, 4))
    m[:, :3, :3], m[:, :3, 3], m[:, 3, 3] = rot * s[:, None, :], p, 1
    m[n // 2:, :3] += rng.uniform(-0.1, 0.1, (n - n // 2, 3, 4))  # not exactly R diag(s)
    m[-1, :3, 1] = 0  # a zero column keeps its (zero) scale
    return [Arr(m.astype(dt), f"mat44{sfx}"), Arr(p.astype(dt), f"vec3{sfx}"),
            Arr(q.astype(dt), f"quat{sfx}"), Arr(s.astype(dt), f"vec3{sfx}"),
            Arr(np.zeros((n, 4, 7), dt), f"transform{sfx}"), Arr(np.zeros((n, 4, 4), dt), f"mat44{sfx}"),
            Arr(np.zeros((n, 2, 3), dt), f"vec3{sfx}"), Arr(np.zeros((n, 4), dt), f"quat{sfx}")]


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_transforms(mods, device, rng, key):
    n = 64
    args = _transform_inputs(rng, n, key)
    got = launch_both(mods, f"transforms_{key}", n, args, device, rtol=3e-6, atol=3e-6)
    m, p, q, s = (a.data.astype(np.float64) for a in args[:4])
    tout, mout, vout, qout = got[4:]
    atol = 1e-5 if key == "f32" else 1e-12
    np.testing.assert_allclose(tout[:, 0, :3], m[:, :3, 3], atol=atol)
    np.testing.assert_allclose(vout[:, 0], m[:, :3, 3], atol=atol)
    np.testing.assert_allclose(vout[:, 1], np.linalg.norm(m[:, :3, :3], axis=1), atol=atol)
    np.testing.assert_allclose(mout[:, :3, 3], p, atol=atol)
    np.testing.assert_allclose(mout[:, 3], np.broadcast_to([0, 0, 0, 1], (n, 4)), atol=0)
    ident = np.broadcast_to([0, 0, 0, 1], (n, 4))
    np.testing.assert_allclose(tout[:, 1], np.concatenate([p, ident], 1), atol=0)
    np.testing.assert_allclose(tout[:, 2], np.concatenate([p, q], 1), atol=atol)
    np.testing.assert_allclose(tout[:, 3], np.concatenate([4 * p, q], 1), atol=atol * 10)
    exact = np.arange(n) < n // 2  # M = R(q) diag(s) with s > 0 gives back (p, +-q, s)
    exact[: n // 4] = False
    np.testing.assert_allclose(np.abs(np.sum(qout[exact] * q[exact], 1)), 1, atol=atol * 10)
    np.testing.assert_allclose(vout[exact, 1], s[exact], atol=atol * 10)


# ---- host side: Warp lets scene setup code call these outside kernels -------------------------------

HOST_CASES = {
    "quat_from_euler": lambda m, r: (m.vec3(*r["e"]), *r["seq"]),
    "quat_to_euler": lambda m, r: (m.quat(*r["q"]), *r["seq"]),
    "quat_to_rpy": lambda m, r: (m.quat(*r["q"]),),
    "quat_twist": lambda m, r: (m.vec3(*r["axis"]), m.quat(*r["q"])),
    "quat_twist_angle": lambda m, r: (m.vec3(*r["axis"]), m.quat(*r["q"])),
    "quat_twist_angle_signed": lambda m, r: (m.vec3(*r["axis"]), m.quat(*r["q"])),
    "velocity_at_point": lambda m, r: (m.spatial_vector(*r["sv"]), m.vec3(*r["e"])),
    "transform_from_matrix": lambda m, r: (m.mat44(*r["m"].reshape(-1)),),
    "transform_compose": lambda m, r: (m.vec3(*r["e"]), m.quat(*r["q"]), m.vec3(*r["s"])),
    "transform_decompose": lambda m, r: (m.mat44(*r["m"].reshape(-1)),),
}


def _flat(value):
    parts = value if isinstance(value, tuple) else [value]
    return np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in parts])


@pytest.mark.parametrize("name", list(HOST_CASES))
def test_host_versions_match_warp(name, rng):
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    for trial in range(24):
        seq = SEQUENCES[trial % 12]
        r = {"q": _unit(rng, 1)[0], "e": rng.uniform(-3, 3, 3), "seq": seq, "axis": _unit(rng, 1)[0, :3],
             "sv": rng.uniform(-2, 2, 6), "m": rng.normal(size=(4, 4)), "s": rng.uniform(0.5, 2, 3)}
        r["axis"] /= np.linalg.norm(r["axis"])
        got, want = (getattr(lib, name)(*HOST_CASES[name](lib, r)) for lib in (wp, warp))
        np.testing.assert_allclose(_flat(got), _flat(want), rtol=1e-5, atol=1e-5, err_msg=f"{name} {r}")


# ---- bad inputs: the error class, at the user's file:line ------------------------------------------

check = check_located  # tests/conftest.py


@wp.kernel
def k_euler_float_axis():
    q = wp.quat_from_euler(wp.vec3(), 0, 1.0, 2)  # <- error


@wp.kernel
def k_euler_missing_axes():
    e = wp.quat_to_euler(wp.quat_identity())  # <- error


@wp.kernel
def k_twist_mixed():
    q = wp.quat_twist(wp.vec3d(), wp.quat_identity())  # <- error


@wp.kernel
def k_set_translation_of_expression():
    wp.transform_set_translation(wp.transform_identity(), wp.vec3())  # <- error


@wp.kernel
def k_set_rotation_wrong_part():
    t = wp.transform_identity()
    wp.transform_set_rotation(t, wp.vec3())  # <- error


@wp.kernel
def k_set_translation_has_no_value():
    t = wp.transform_identity()
    x = wp.transform_set_translation(t, wp.vec3())  # <- error


@wp.kernel
def k_decompose_mat33():
    p, q, s = wp.transform_decompose(wp.mat33())  # <- error


BAD = [
    (k_euler_float_axis, KernelTypeError, "quat_from_euler(): expects (vec3, i: int, j: int, k: int)"),
    (k_euler_missing_axes, KernelTypeError, "quat_to_euler(): expects (quat, i: int, j: int, k: int)"),
    (k_twist_mixed, KernelTypeError, "quat_twist(): expects (vec3, quat) of one float type"),
    (k_set_translation_of_expression, KernelTypeError, "writes into its argument", "local variable"),
    (k_set_rotation_wrong_part, KernelTypeError, "transform_set_rotation(): expects (transform, quat)"),
    (k_set_translation_has_no_value, KernelTypeError),
    (k_decompose_mat33, KernelTypeError, "transform_decompose(): expects (mat44)"),
]


@pytest.mark.parametrize("kernel,cls,fragments", [(k, c, f) for k, c, *f in BAD],
                         ids=[b[0].__name__ for b in BAD])
def test_bad_input(kernel, cls, fragments):
    check(kernel, cls, *fragments)
