"""erf, erfc, erfinv, erfcinv, copysign, rint, nonzero, bit_count, div_approx and expect_eq /
expect_neq / expect_near, differential against Warp on CPU (float16/32/64 and every integer width),
with mpmath references for the inverse error functions where Warp's own CPU version loses digits
(tiny arguments, far tails), and Warp's exact output text for the expect_* messages.
"""
import hashlib
import math
import os
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from conftest import Arr, LOAD_DIR, check_located, launch_both, load_both, run, warp

import tilewarp as wp
from tilewarp import KernelError, KernelTypeError

FLOATS = {"f16": ("wp.float16", np.float16), "f32": ("wp.float32", np.float32),
          "f64": ("wp.float64", np.float64)}

TYPED = '''
@wp.kernel
def scalar_ops__SFX_(x: wp.array(dtype=_F_), y: wp.array(dtype=_F_), out: wp.array(dtype=_F_, ndim=2)):
    i = wp.tid()
    out[i, 0] = wp.erf(x[i])
    out[i, 1] = wp.erfc(x[i])
    out[i, 2] = wp.erfinv(y[i])
    out[i, 3] = wp.erfcinv(y[i] + _F_(1.0))
    out[i, 4] = wp.copysign(x[i], y[i])
    out[i, 5] = wp.rint(x[i] * _F_(4.0))
    out[i, 6] = wp.nonzero(wp.rint(x[i]))
    out[i, 7] = wp.div_approx(x[i], y[i])
'''

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
INT_KERNEL = '''
@wp.kernel
def int_ops__T_(a: wp.array(dtype=wp._T_), bits: wp.array(dtype=wp.int32), nz: wp.array(dtype=wp._T_)):
    i = wp.tid()
    bits[i] = wp.bit_count(a[i])
    nz[i] = wp.nonzero(a[i])
'''

SRC = '''
@wp.kernel
def div_forms(v: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.quat), m: wp.array(dtype=wp.mat22),
              s: wp.array(dtype=float), vo: wp.array(dtype=wp.vec3, ndim=2),
              qo: wp.array(dtype=wp.quat, ndim=2), mo: wp.array(dtype=wp.mat22, ndim=2),
              vd: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    vo[i, 0] = wp.div_approx(v[i], s[i])
    vo[i, 1] = wp.div_approx(s[i], v[i])
    qo[i, 0] = wp.div_approx(q[i], s[i])
    qo[i, 1] = wp.div_approx(s[i], q[i])
    mo[i, 0] = wp.div_approx(m[i], s[i])
    mo[i, 1] = wp.div_approx(s[i], m[i])
    vd[i] = wp.div_approx(wp.vec2d(wp.float64(s[i]), 3.0), wp.float64(7.0))
'''


def _source():
    out = "import WP as wp\n" + SRC
    for key, (name, _) in FLOATS.items():
        out += TYPED.replace("_F_", name).replace("_SFX_", key)
    for t in INTS:
        out += INT_KERNEL.replace("_T_", t)
    return out


@pytest.fixture(scope="module")
def mods():
    return load_both(_source())


def _float_inputs(rng, n, dt):
    x = rng.uniform(-3, 3, n)
    x[:8] = [0.0, -0.0, 0.125, -0.375, 0.625, 1.5, -2.5, np.nan]  # rint ties go to even (x * 4)
    y = rng.uniform(-0.95, 0.95, n)  # erfinv(y), erfcinv(y + 1): well inside the domains
    y[:6] = [0.0, -0.0, 0.5, -0.5, 1e-3, -1e-3]
    return x.astype(dt), y.astype(dt)


@pytest.mark.parametrize("key", list(FLOATS))
def test_scalar_functions(mods, device, rng, key):
    n, dt = 128, FLOATS[key][1]
    x, y = _float_inputs(rng, n, dt)
    got = launch_both(mods, f"scalar_ops_{key}", n, [Arr(x), Arr(y), Arr(np.zeros((n, 8), dt))], device,
                      rtol=2e-6, atol=2e-6)[2].astype(np.float64)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    tol = {"f16": 2e-3, "f32": 2e-6, "f64": 1e-14}[key]
    np.testing.assert_allclose(got[:, 0], [math.erf(v) for v in x64], rtol=tol, atol=tol)
    np.testing.assert_allclose(got[:, 2], [float(mpmath.erfinv(v)) for v in y64], rtol=tol, atol=tol)
    np.testing.assert_array_equal(np.signbit(got[:, 4]), np.signbit(y64))
    np.testing.assert_array_equal(got[:, 5], np.rint(x64 * 4))
    np.testing.assert_array_equal(got[:7, 6], [0, 0, 0, 0, 1, 1, 1])


def _erfcinv_ref(x: float) -> float:
    """erfinv(1 - x) in arithmetic wide enough for 1 - x to be exact (x down to subnormals)."""
    if x in (0.0, 2.0):
        return math.inf if x == 0.0 else -math.inf
    with mpmath.workdps(400):
        return float(mpmath.erfinv(1 - mpmath.mpf(x)))


INVERSES = """
import WP as wp


@wp.kernel
def inverses(z: wp.array(dtype=_F_), x: wp.array(dtype=_F_), out: wp.array(dtype=_F_, ndim=2)):
    i = wp.tid()
    out[i, 0] = wp.erfinv(z[i])
    out[i, 1] = wp.erfcinv(x[i])
"""


@pytest.mark.parametrize("key", ["f32", "f64"])
def test_inverse_error_functions_to_full_precision(key):
    """Tiny arguments and far tails, where Warp's CPU versions (through the normal quantile of
    (z + 1) / 2, and erfcinv(x) = erfinv(1 - x)) lose digits: tilewarp's are correctly rounded in
    float32 and within an ulp or two in float64, down to the smallest subnormal."""
    dt = FLOATS[key][1]
    mpmath.mp.dps = 60
    lowest = -320 if key == "f64" else -44
    near_one = 1 - np.logspace(-15 if key == "f64" else -7, -1, 12)
    z = np.concatenate([[1e-30, -1e-12, 1e-7, 3e-5, 0.0, 1.0, -1.0], near_one, -near_one]).astype(dt)
    x = np.concatenate([np.logspace(lowest, -1, 24), 2 - np.logspace(-15 if key == "f64" else -7, -1, 6),
                        [1.0, 0.0, 2.0]]).astype(dt)
    n = max(len(z), len(x))
    z, x = np.resize(z, n), np.resize(x, n)
    mod = load_both(INVERSES.replace("_F_", FLOATS[key][0]))[0]
    got = run(mod, "inverses", n, [Arr(z), Arr(x), Arr(np.zeros((n, 2), dt))], "cpu")[2]
    want_z = np.array([float(mpmath.erfinv(mpmath.mpf(float(v)))) if abs(v) < 1
                       else math.copysign(math.inf, v) for v in z]).astype(dt)
    want_x = np.array([_erfcinv_ref(float(v)) for v in x]).astype(dt)
    ulp = 2.3e-16 if key == "f64" else 0  # float32: rounded from an accurate double
    np.testing.assert_allclose(got[:, 0], want_z, rtol=ulp, atol=0)
    np.testing.assert_allclose(got[:, 1], want_x, rtol=ulp * 2 + (1e-7 if key == "f32" else 0), atol=0)


def test_host_versions():
    mpmath.mp.dps = 50
    for v in [1e-300, 1e-20, 0.01, 0.3, 0.5, 1.0, 1.5, 1.99, 2 - 1e-12]:
        assert math.isclose(wp.erfcinv(v), _erfcinv_ref(v), rel_tol=1e-14, abs_tol=1e-300)
    for v in [0.0, 1e-300, -1e-9, 0.4, -0.9, 0.999999]:
        assert math.isclose(wp.erfinv(v), float(mpmath.erfinv(v)), rel_tol=1e-14, abs_tol=0)
    assert wp.erfinv(1.0) == math.inf and wp.erfcinv(2.0) == -math.inf and math.isnan(wp.erfinv(1.5))
    assert wp.erf(0.5) == math.erf(0.5) and wp.copysign(2.0, -0.0) == -2.0 and wp.rint(2.5) == 2.0
    assert wp.bit_count(wp.int8(-1)) == 8 and wp.bit_count(-1) == 32
    assert wp.bit_count(wp.uint64(2**64 - 1)) == 64
    assert wp.nonzero(-3) == 1 and wp.nonzero(0.0) == 0


@pytest.mark.parametrize("t", INTS)
def test_integer_functions(mods, device, rng, t):
    info = np.iinfo(t)
    n = 64
    a = rng.integers(info.min, info.max, n, dtype=t, endpoint=True)
    a[:4] = [0, info.min, info.max, 1]
    args = [Arr(a, t), Arr(np.zeros(n, np.int32)), Arr(np.zeros(n, t), t)]
    got = launch_both(mods, f"int_ops_{t}", n, args, device)
    bits = np.unpackbits(a.view(np.uint8).reshape(n, -1), axis=1).sum(1)  # two's complement, own width
    np.testing.assert_array_equal(got[1], bits)
    np.testing.assert_array_equal(got[2], (a != 0).astype(t))


def test_div_approx_forms(mods, device, rng):
    n = 32
    s = (rng.uniform(0.5, 2, n) * rng.choice([-1, 1], n)).astype(np.float32)
    args = [Arr(rng.uniform(-2, 2, (n, 3)).astype(np.float32), "vec3"),
            Arr(rng.uniform(0.5, 2, (n, 4)).astype(np.float32), "quat"),
            Arr(rng.uniform(0.5, 2, (n, 2, 2)).astype(np.float32), "mat22"), Arr(s),
            Arr(np.zeros((n, 2, 3), np.float32), "vec3"), Arr(np.zeros((n, 2, 4), np.float32), "quat"),
            Arr(np.zeros((n, 2, 2, 2), np.float32), "mat22"), Arr(np.zeros((n, 2)), "vec2d")]
    got = launch_both(mods, "div_forms", n, args, device)
    np.testing.assert_allclose(got[4][:, 0], args[0].data / s[:, None], rtol=1e-6)
    np.testing.assert_allclose(got[6][:, 1], s[:, None, None] / args[2].data, rtol=1e-6)


# ---- expect_eq / expect_neq / expect_near: Warp's messages -----------------------------------------

EXPECT_SRC = '''
import WP as wp


@wp.kernel
def expecting(a: wp.array(dtype=float)):
    wp.expect_eq(a[0], 1.5)
    wp.expect_eq(a[0], 2.5)
    wp.expect_neq(wp.vec3(a[0], 2.0, 3.0), wp.vec3(1.5, 2.0, 3.0))
    wp.expect_eq(wp.vec2i(1, 2), wp.vec2i(1, 3))
    wp.expect_eq(a[0] > 0.0, False)
    wp.expect_near(a[0], 1.6, 0.5)
    wp.expect_near(a[0], 1.6, 0.01)
    wp.expect_near(wp.vec3(a[0], 2.0, 3.0), wp.vec3(1.0, 2.0, 3.25), 0.1)
    wp.expect_near(wp.quat(a[0], 0.0, 0.0, 1.0), wp.quat(1.5, 0.0, 0.0, 1.0), 0.1)
    wp.expect_near(wp.mat22(a[0], 0.0, 0.0, 1.0), wp.mat22(1.0, 0.0, 0.0, 1.0), 0.1)
    wp.expect_eq(wp.transform_identity(), wp.transform_identity())
    wp.expect_neq(wp.quat_identity(), wp.quat_identity())
    wp.expect_eq(wp.mat22d(), wp.mat22d(1.0, 0.0, 0.0, 0.0))
'''
EXPECT_MAIN = 'wp.launch(expecting, 1, inputs=[wp.array([1.5], dtype=float, device="cpu")], device="cpu")\n' \
              'wp.synchronize()\n'


def _run_warp(text: str) -> str:
    """``text`` with ``import warp as wp`` in a fresh process (Warp's printf output reaches fd 1 at exit)."""
    LOAD_DIR.mkdir(parents=True, exist_ok=True)
    text = text.replace("import WP as wp", "import warp as wp\nwp.config.log_level = 30", 1)
    path = LOAD_DIR / f"expect_{hashlib.sha256(text.encode()).hexdigest()[:16]}.py"
    path.write_text(text)
    env = dict(os.environ, WARP_CACHE_PATH=str(LOAD_DIR / "warp-cache"))
    res = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_expect_messages_match_warp(capfd):
    mod = load_both(EXPECT_SRC)[0]
    capfd.readouterr()
    exec(compile(EXPECT_MAIN, "<expect-main>", "exec"), {"wp": mod.wp, "expecting": mod.expecting})
    got = capfd.readouterr().out
    assert got.count("Error, expect_") == 9, got
    assert "Error, expect_eq() failed:\n\t Expected: 2.5\n\t Actual: 1.5\n" in got, got
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    assert got == _run_warp(EXPECT_SRC + EXPECT_MAIN)


# ---- bad inputs: the error class, at the user's file:line ------------------------------------------

check = check_located  # tests/conftest.py


@wp.kernel
def k_erf_int():
    x = wp.erf(wp.int32(1))  # <- error


@wp.kernel
def k_copysign_mixed():
    x = wp.copysign(wp.float32(1.0), wp.float64(1.0))  # <- error


@wp.kernel
def k_bit_count_float():
    n = wp.bit_count(1.5)  # <- error


@wp.kernel
def k_div_approx_vectors():
    v = wp.div_approx(wp.vec3(), wp.vec3())  # <- error


@wp.kernel
def k_expect_near_int():
    wp.expect_near(wp.int32(1), wp.int32(2), wp.int32(1))  # <- error


@wp.kernel
def k_expect_eq_mixed():
    wp.expect_eq(wp.vec3(), wp.vec3d())  # <- error


BAD = [
    (k_erf_int, KernelTypeError, "erf(): unsupported argument type (int32)"),
    (k_copysign_mixed, KernelTypeError, "copysign(): arguments must have the same type"),
    (k_bit_count_float, KernelTypeError, "bit_count(): unsupported argument type (float32)"),
    (k_div_approx_vectors, KernelTypeError, "div_approx(): expects float values"),
    (k_expect_near_int, KernelTypeError, "expect_near(): expects (a, b, tolerance)"),
    (k_expect_eq_mixed, KernelTypeError, "Can't test equality for objects with different types"),
]


@pytest.mark.parametrize("kernel,cls,fragments", [(k, c, f) for k, c, *f in BAD],
                         ids=[b[0].__name__ for b in BAD])
def test_bad_input(kernel, cls, fragments):
    check(kernel, cls, *fragments)
