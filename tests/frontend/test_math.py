"""Scalar math builtins, differential against Warp on CPU (float32, float64 and integers)."""
import numpy as np
import pytest
from conftest import Arr, launch_both, load_both

FLOAT_MATH = '''
@wp.kernel
def math_{T}(a: wp.array(dtype=wp.{T}), b: wp.array(dtype=wp.{T}), out: wp.array(dtype=wp.{T}, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    ax = wp.abs(x)
    u = x / (ax + wp.{T}(1.0))
    out[i, 0] = wp.sqrt(ax)
    out[i, 1] = wp.sin(x)
    out[i, 2] = wp.cos(x)
    out[i, 3] = wp.tan(u)
    out[i, 4] = wp.exp(u)
    out[i, 5] = wp.log(ax + wp.{T}(0.5))
    out[i, 6] = wp.log2(ax + wp.{T}(0.5))
    out[i, 7] = wp.log10(ax + wp.{T}(0.5))
    out[i, 8] = wp.min(x, y)
    out[i, 9] = wp.max(x, y)
    out[i, 10] = wp.clamp(x, wp.{T}(-1.0), wp.{T}(1.5))
    out[i, 11] = wp.floor(x)
    out[i, 12] = wp.ceil(x)
    out[i, 13] = wp.round(x)
    out[i, 14] = wp.trunc(x)
    out[i, 15] = wp.pow(ax, y)
    out[i, 16] = wp.atan2(x, y)
    out[i, 17] = wp.tanh(x)
    out[i, 18] = wp.sign(x)
    out[i, 19] = wp.asin(u)
    out[i, 20] = wp.acos(u)
    out[i, 21] = wp.atan(x)
    out[i, 22] = wp.sinh(u)
    out[i, 23] = wp.cosh(u)
    out[i, 24] = wp.abs(y)
    out[i, 25] = wp.frac(x)
    out[i, 26] = wp.degrees(x)
    out[i, 27] = wp.radians(x)
    out[i, 28] = wp.lerp(x, y, wp.{T}(0.3))
    out[i, 29] = wp.smoothstep(wp.{T}(-1.0), wp.{T}(2.0), x)
    out[i, 30] = wp.cbrt(x)
    out[i, 31] = wp.step(x)
    out[i, 32] = min(x, y) + max(x, y) * abs(x)
'''

INT_MATH = '''
@wp.kernel
def imath_{T}(a: wp.array(dtype=wp.{T}), b: wp.array(dtype=wp.{T}), out: wp.array(dtype=wp.{T}, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = wp.abs(x)
    out[i, 1] = wp.min(x, y)
    out[i, 2] = wp.max(x, y)
    out[i, 3] = wp.clamp(x, wp.{T}(-10), wp.{T}(20))
    out[i, 4] = wp.sign(x)
    out[i, 5] = min(x, y) - max(x, y) + abs(y)
'''

SRC = "import WP as wp\n" + "".join(FLOAT_MATH.format(T=t) for t in ("float32", "float64")) + "".join(
    INT_MATH.format(T=t) for t in ("int32", "int64")) + '''

@wp.kernel
def classify(a: wp.array(dtype=float), out: wp.array(dtype=wp.bool, ndim=2)):
    i = wp.tid()
    x = a[i]
    out[i, 0] = wp.isnan(x)
    out[i, 1] = wp.isinf(x)
    out[i, 2] = wp.isfinite(x)
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


@pytest.mark.parametrize("t", ["float32", "float64"])
def test_float_math(mods, device, rng, t):
    n = 400
    a = rng.uniform(-6, 6, n).astype(t)
    a[:8] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, -0.0]  # rounding ties and signed zero
    b = rng.uniform(-3, 3, n).astype(t)
    out = np.zeros((n, 33), t)
    rtol = 4e-6 if t == "float32" else 1e-12
    got = launch_both(mods, f"math_{t}", n, [Arr(a), Arr(b), Arr(out)], device, rtol=rtol, atol=rtol)[2]
    np.testing.assert_array_equal(got[:6, 13], [-3, -2, -1, 1, 2, 3])  # round half away from zero
    np.testing.assert_allclose(got[:, 0], np.sqrt(np.abs(a)), rtol=1e-6)
    np.testing.assert_array_equal(got[:, 11], np.floor(a))


@pytest.mark.parametrize("t", ["int32", "int64"])
def test_integer_math(mods, device, rng, t):
    n = 200
    a = rng.integers(-50, 50, n).astype(t)
    b = rng.integers(-50, 50, n).astype(t)
    got = launch_both(mods, f"imath_{t}", n, [Arr(a), Arr(b), Arr(np.zeros((n, 6), t))], device)[2]
    np.testing.assert_array_equal(got[:, 3], np.clip(a, -10, 20))


def test_nan_inf_classification(mods, device):
    a = np.array([0.0, 1.0, np.nan, np.inf, -np.inf, -3.0], np.float32)
    got = launch_both(mods, "classify", a.size, [Arr(a), Arr(np.zeros((a.size, 3), bool))], device)[1]
    np.testing.assert_array_equal(got[:, 0], np.isnan(a))
    np.testing.assert_array_equal(got[:, 2], np.isfinite(a))
