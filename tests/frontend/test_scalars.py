"""Scalar types and operators, differential against Warp on CPU.

bool/int32/int64/uint32/float32/float64 values, float16 array storage, arithmetic (incl. integer
division and modulo of negative numbers), comparisons (incl. chained), boolean operators.
"""
import numpy as np
import pytest
from conftest import Arr, launch_both, load_both, load_module, run

ARITH = '''
@wp.kernel
def arith_{T}(a: wp.array(dtype=wp.{T}), b: wp.array(dtype=wp.{T}), out: wp.array(dtype=wp.{T}, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = x // y
    out[i, 5] = x % y
    out[i, 6] = x * wp.{T}(3) + y
    out[i, 7] = wp.{T}(7) - x % wp.{T}(5)
    out[i, 8] = {NEG}
    out[i, 9] = wp.min(x, y) + wp.max(x, y)
'''

COMPARE = '''
@wp.kernel
def compare_{T}(a: wp.array(dtype=wp.{T}), b: wp.array(dtype=wp.{T}), c: wp.array(dtype=wp.{T}),
                out: wp.array(dtype=wp.bool, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    z = c[i]
    out[i, 0] = x < y
    out[i, 1] = x <= y
    out[i, 2] = x > y
    out[i, 3] = x >= y
    out[i, 4] = x == y
    out[i, 5] = x != y
    out[i, 6] = x < y < z
    out[i, 7] = x <= y and y != z
    out[i, 8] = x > y or y > z
    out[i, 9] = not (x == z)
    out[i, 10] = not x < y or z >= x and y <= z
'''

INT_TYPES = ("int32", "int64", "uint32")
FLOAT_TYPES = ("float32", "float64")

SRC = "import WP as wp\n" + "".join(
    ARITH.format(T=t, NEG="-x" if t != "uint32" else "x") + COMPARE.format(T=t)
    for t in INT_TYPES + FLOAT_TYPES) + '''

@wp.kernel
def float_only(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = wp.abs(x) ** y
    out[i, 1] = -x * 2.5 + 1.0
    out[i, 2] = 2.0 * x - y / 4.0
    out[i, 3] = +y
    out[i, 4] = x ** 2.0


@wp.kernel
def bools(a: wp.array(dtype=wp.bool), b: wp.array(dtype=wp.bool), out: wp.array(dtype=wp.bool, ndim=2)):
    i = wp.tid()
    p = a[i]
    q = b[i]
    out[i, 0] = p and q
    out[i, 1] = p or q
    out[i, 2] = not p
    out[i, 3] = p == q
    out[i, 4] = p != q
    out[i, 5] = (p and not q) or (q and not p)
    t = True
    out[i, 6] = t and p


@wp.kernel
def scalar_params(f32: wp.float32, f64: wp.float64, i32: wp.int32, i64: wp.int64, u32: wp.uint32,
                  flag: wp.bool, out32: wp.array(dtype=float), out64: wp.array(dtype=wp.float64),
                  outi: wp.array(dtype=wp.int64), outu: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    k = wp.float32(i)
    out32[i] = f32 * k + wp.float32(i32)
    out64[i] = f64 * wp.float64(k) - wp.float64(i64)
    outi[i] = i64 * wp.int64(i) + wp.int64(i32)
    outu[i] = u32 + wp.uint32(i)
    if flag:
        out32[i] = -out32[i]


@wp.kernel
def conversions(a: wp.array(dtype=float), out_i: wp.array(dtype=int), out_f: wp.array(dtype=wp.float64),
                out_u: wp.array(dtype=wp.uint32), out_b: wp.array(dtype=wp.bool)):
    i = wp.tid()
    x = a[i]
    out_i[i] = int(x)
    out_f[i] = wp.float64(x) * wp.float64(3.0)
    out_u[i] = wp.uint32(wp.abs(x))
    out_b[i] = x > 0.0 and bool(wp.int32(x))


@wp.kernel
def literal_precision(out: wp.array(dtype=wp.float64), out16: wp.array(dtype=wp.float16),
                      outi: wp.array(dtype=wp.int64)):
    out[0] = wp.float64(0.1)
    out[1] = wp.float64(3.141592653589793)
    out[2] = wp.float64(1.00000005)
    out[3] = wp.float64(1e300)
    out16[0] = wp.float16(0.1)
    out16[1] = wp.float16(65504.0)
    outi[0] = wp.int64(1099511627777)
    outi[1] = wp.int64(-7)


@wp.kernel
def half_storage(h: wp.array(dtype=wp.float16), out: wp.array(dtype=wp.float16),
                 out32: wp.array(dtype=float)):
    i = wp.tid()
    x = float(h[i])
    y = wp.float32(h[i]) * 2.0 + 0.5
    out[i] = wp.float16(y - x)
    out32[i] = x * x
    h[i] = wp.float16(wp.sqrt(wp.abs(x)))
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def _operands(rng, t, n=256):
    """Random operands of type ``t`` with no zero divisor, including negative values."""
    if t.startswith("float"):
        a = rng.uniform(-10, 10, n).astype(t)
        b = rng.uniform(0.5, 4, n).astype(t) * rng.choice([-1, 1], n).astype(t)
    elif t == "uint32":
        a = rng.integers(0, 2**31, n).astype(t)
        b = rng.integers(1, 1000, n).astype(t)
    else:
        a = rng.integers(-1000, 1000, n).astype(t)
        b = rng.integers(1, 50, n).astype(t) * rng.choice([-1, 1], n).astype(t)
    return a, b


@pytest.mark.parametrize("t", INT_TYPES + FLOAT_TYPES)
def test_arithmetic(mods, device, rng, t):
    a, b = _operands(rng, t)
    out = np.zeros((a.size, 10), dtype=t)
    got = launch_both(mods, f"arith_{t}", a.size, [Arr(a), Arr(b), Arr(out)], device)
    assert np.any(got[2] != 0)


@pytest.mark.parametrize("t", ("int32", "int64"))
def test_integer_division_of_negatives_truncates(mods, device, t):
    """Warp's int `/` and `%` follow C (quotient toward zero, remainder with the dividend's sign) while
    `//` rounds toward negative infinity, so ``a != (a // b) * b + a % b`` for mixed signs."""
    a = np.array([7, -7, 7, -7, 0, 1, -1, 13, -13], dtype=t)
    b = np.array([2, 2, -2, -2, 3, -3, 3, 5, -5], dtype=t)
    out = np.zeros((a.size, 10), dtype=t)
    got = launch_both(mods, f"arith_{t}", a.size, [Arr(a), Arr(b), Arr(out)], device)[2]
    np.testing.assert_array_equal(got[:, 3], np.trunc(a / b).astype(t))  # '/' truncates
    np.testing.assert_array_equal(got[:, 4], a // b)  # '//' floors
    np.testing.assert_array_equal(got[:, 5], np.fmod(a, b))  # '%' takes the dividend's sign


def test_float_modulo_and_floordiv_of_negatives(mods, device):
    a = np.array([7.5, -7.5, 7.5, -7.5, 1.0, -0.25], dtype=np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 4.0], dtype=np.float32)
    out = np.zeros((a.size, 10), dtype=np.float32)
    got = launch_both(mods, "arith_float32", a.size, [Arr(a), Arr(b), Arr(out)], device)[2]
    np.testing.assert_array_equal(got[:, 5], np.fmod(a, b))


@pytest.mark.parametrize("t", INT_TYPES + FLOAT_TYPES)
def test_comparisons(mods, device, rng, t):
    a, b = _operands(rng, t)
    c = _operands(rng, t)[0]
    b[::4] = a[::4]  # exercise equality
    c[1::5] = a[1::5]
    out = np.zeros((a.size, 11), dtype=bool)
    got = launch_both(mods, f"compare_{t}", a.size, [Arr(a), Arr(b), Arr(c), Arr(out)], device)
    assert got[3].any() and not got[3].all()


def test_float_operators(mods, device, rng):
    a = rng.uniform(-3, 3, 200).astype(np.float32)
    b = rng.uniform(-2, 2, 200).astype(np.float32)
    out = np.zeros((200, 5), dtype=np.float32)
    launch_both(mods, "float_only", 200, [Arr(a), Arr(b), Arr(out)], device, rtol=2e-6)


def test_bool_operators(mods, device):
    a = np.array([False, False, True, True] * 8)
    b = np.array([False, True, False, True] * 8)
    out = np.zeros((a.size, 7), dtype=bool)
    launch_both(mods, "bools", a.size, [Arr(a), Arr(b), Arr(out)], device)


@pytest.mark.parametrize("flag", [False, True])
def test_scalar_parameters(mods, device, flag):
    n = 64
    outs = [Arr(np.zeros(n, np.float32)), Arr(np.zeros(n, np.float64)), Arr(np.zeros(n, np.int64)),
            Arr(np.zeros(n, np.uint32))]
    launch_both(mods, "scalar_params", n, [1.25, -2.5e-3, -17, 2**40 + 3, 4_000_000_000, flag, *outs], device)


def test_conversions(mods, device, rng):
    a = rng.uniform(-100, 100, 300).astype(np.float32)
    outs = [Arr(np.zeros(300, np.int32)), Arr(np.zeros(300, np.float64)), Arr(np.zeros(300, np.uint32)),
            Arr(np.zeros(300, bool))]
    got = launch_both(mods, "conversions", 300, [Arr(a), *outs], device)
    np.testing.assert_array_equal(got[1], np.trunc(a).astype(np.int32))


def test_float16_storage(mods, device, rng):
    h = rng.uniform(-20, 20, 500).astype(np.float16)
    out = np.zeros(500, np.float16)
    out32 = np.zeros(500, np.float32)
    got = launch_both(mods, "half_storage", 500, [Arr(h), Arr(out), Arr(out32)], device)
    x = h.astype(np.float32)
    np.testing.assert_array_equal(got[0], np.sqrt(np.abs(x)).astype(np.float16))
    np.testing.assert_array_equal(got[1], (x * 2 + 0.5 - x).astype(np.float16))



def test_literal_arguments_of_type_constructors_keep_their_precision(mods, device):
    """``wp.float64(0.1)`` is the double 0.1 (Warp 1.19 fixed its float32 rounding, warp#485)."""
    outs = [Arr(np.zeros(4, np.float64)), Arr(np.zeros(2, np.float16)), Arr(np.zeros(2, np.int64))]
    got = launch_both(mods, "literal_precision", 1, outs, device)
    np.testing.assert_array_equal(got[0], [0.1, 3.141592653589793, 1.00000005, 1e300])
    np.testing.assert_array_equal(got[2], [2**40 + 1, -7])



LITERALS = """
import WP as wp


@wp.kernel
def literals64(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64, ndim=2)):
    i = wp.tid()
    x = a[i]
    out[i, 0] = wp.float64(0.1)
    out[i, 1] = x * 0.1
    out[i, 2] = x + 1.0e-10
"""


def test_float64_literals_are_exact_doubles(device):
    """tilewarp only (docs/ARCHITECTURE.md, weak literals): Warp rejects ``x * 0.1`` for a float64
    ``x``; tilewarp computes it with the double 0.1, never a float32-rounded one."""
    mod = load_module(LITERALS, "tilewarp")
    a = np.array([3.0, -7.25, 1e6], np.float64)
    got = run(mod, "literals64", 3, [Arr(a), Arr(np.zeros((3, 3), np.float64))], device)[1]
    np.testing.assert_array_equal(got[:, 0], 0.1)
    np.testing.assert_array_equal(got[:, 1], a * 0.1)
    np.testing.assert_array_equal(got[:, 2], a + 1.0e-10)
