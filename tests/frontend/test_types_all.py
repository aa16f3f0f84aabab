"""Every scalar type of Warp 1.19 (bool, int8..uint64, float16/32/64) in kernels.

Differential against Warp on CPU, exact for integers and bits: arithmetic with wraparound, ``/``
(truncating), ``//`` (flooring), ``%`` (dividend's sign), bit operations, unsigned comparisons,
float16 arithmetic (computed in float32, rounded back), casts between every pair of types, scalar
parameters and arrays of every type, and literals typed as Warp types them. Shift counts outside
``[0, width)`` are undefined in Warp (x86 masks them, CUDA clamps); tilewarp defines them as the
count modulo the promoted width, checked here against a numpy model.
"""
import os

import numpy as np
import pytest
from conftest import Arr, Val, launch_both, load_both, load_module, run

import tilewarp as wp
from tilewarp import KernelTypeError

INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_TYPES = ("float16", "float32", "float64")
ALL_TYPES = ("bool",) + INT_TYPES + FLOAT_TYPES

INT_OPS = '''
@wp.kernel
def int_{T}(a: wp.array(dtype=wp.{T}), b: wp.array(dtype=wp.{T}), s: wp.array(dtype=wp.{T}),
            out: wp.array(dtype=wp.{T}, ndim=2), cmp: wp.array(dtype=wp.bool, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = x // y
    out[i, 5] = x % y
    out[i, 6] = x & y
    out[i, 7] = x | y
    out[i, 8] = x ^ y
    out[i, 9] = x << s[i]
    out[i, 10] = x >> s[i]
    out[i, 11] = ~x
    out[i, 12] = -x
    out[i, 13] = wp.abs(x)
    out[i, 14] = wp.min(x, y)
    out[i, 15] = wp.max(x, y)
    out[i, 16] = wp.sign(x)
    out[i, 17] = wp.clamp(x, y, wp.{T}(10))
    out[i, 18] = x * wp.{T}(3) + y * y - wp.{T}(1)
    cmp[i, 0] = x < y
    cmp[i, 1] = x <= y
    cmp[i, 2] = x > y
    cmp[i, 3] = x >= y
    cmp[i, 4] = x == y
    cmp[i, 5] = x != y
'''
N_INT_OPS = 19

FLOAT_OPS = '''
@wp.kernel
def float_{T}(a: wp.array(dtype=wp.{T}), b: wp.array(dtype=wp.{T}), out: wp.array(dtype=wp.{T}, ndim=2),
              cmp: wp.array(dtype=wp.bool, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = x // y
    out[i, 5] = x % y
    out[i, 6] = -x
    out[i, 7] = wp.abs(x)
    out[i, 8] = wp.min(x, y)
    out[i, 9] = wp.max(x, y)
    out[i, 10] = wp.sign(x)
    out[i, 11] = wp.sqrt(wp.abs(x))
    out[i, 12] = wp.floor(x)
    out[i, 13] = wp.trunc(x)
    out[i, 14] = wp.round(x)
    out[i, 15] = x * y + x
    out[i, 16] = wp.clamp(x, y, wp.{T}(2.0))
    out[i, 17] = wp.sin(x)
    out[i, 18] = wp.exp(y)
    out[i, 19] = wp.log(wp.abs(x))
    out[i, 20] = wp.pow(wp.abs(x), y)
    out[i, 21] = wp.atan2(x, y)
    out[i, 22] = wp.tanh(x)
    out[i, 23] = wp.cbrt(x)
    cmp[i, 0] = x < y
    cmp[i, 1] = x <= y
    cmp[i, 2] = x > y
    cmp[i, 3] = x == y
'''
N_FLOAT_OPS, N_EXACT_FLOAT_OPS = 24, 17  # columns before N_EXACT are correctly rounded: bit-exact

PARAMS = '''
@wp.kernel
def params_all({PARAMS}, {OUTS}):
    i = wp.tid()
{BODY}
'''


def _cast_kernel(src: str) -> str:
    """One kernel converting an array of ``src`` to every type (Warp cannot convert bool <-> float16)."""
    outs = ", ".join(f"o_{d}: wp.array(dtype=wp.{d})" for d in ALL_TYPES)
    body = "\n".join(f"    o_{d}[i] = wp.{d}(x)" for d in ALL_TYPES if {src, d} != {"bool", "float16"})
    head = f"\n@wp.kernel\ndef cast_{src}(a: wp.array(dtype=wp.{src}), {outs}):\n"
    return head + f"    i = wp.tid()\n    x = a[i]\n{body}\n"


def _params_kernel() -> str:
    params = ", ".join(f"p_{t}: wp.{t}" for t in ALL_TYPES)
    outs = ", ".join(f"o_{t}: wp.array(dtype=wp.{t}, ndim=2)" for t in ALL_TYPES)
    body = "\n".join(f"    o_{t}[i, 0] = p_{t}\n    o_{t}[i, 1] = wp.{t}(i) "
                     + ("" if t == "bool" else f"+ p_{t}") for t in ALL_TYPES)
    return PARAMS.format(PARAMS=params, OUTS=outs, BODY=body)


SRC = ("import WP as wp\n" + "".join(INT_OPS.format(T=t) for t in INT_TYPES)
       + "".join(FLOAT_OPS.format(T=t) for t in FLOAT_TYPES) + "".join(_cast_kernel(t) for t in ALL_TYPES)
       + _params_kernel())


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def _int_operands(rng, t, n=512):
    """Full-range operands (so + - * overflow and wrap), no zero divisor, no MIN / -1."""
    info = np.iinfo(t)
    a = rng.integers(info.min, info.max, n, endpoint=True, dtype=t)
    b = rng.integers(info.min, info.max, n, endpoint=True, dtype=t)
    a[:64] = rng.integers(-20 if info.min else 0, 20, 64)  # small values: exact division cases, signs
    b[:64] = rng.integers(-7 if info.min else 1, 8, 64)
    b[b == 0] = 3
    if info.min < 0:
        b[(a == info.min) & (b == -1)] = 5
    b[100:110] = a[100:110]  # equality
    return a, b


@pytest.mark.parametrize("t", INT_TYPES)
def test_integer_operators(mods, device, rng, t):
    a, b = _int_operands(rng, t)
    width = 32 if np.dtype(t).itemsize < 4 else 8 * np.dtype(t).itemsize  # promoted width: defined counts
    s = rng.integers(0, width, a.size).astype(t)
    out, cmp = np.zeros((a.size, N_INT_OPS), t), np.zeros((a.size, 6), bool)
    _, _, _, res, flags = launch_both(mods, f"int_{t}", a.size, [Arr(a), Arr(b), Arr(s), Arr(out), Arr(cmp)],
                                      device)
    # numpy wraps the same way: overflow is modular, comparisons of unsigned values are unsigned
    np.testing.assert_array_equal(res[:, 0], a + b)
    np.testing.assert_array_equal(res[:, 1], a - b)
    np.testing.assert_array_equal(res[:, 2], a * b)
    np.testing.assert_array_equal(res[:, 6:9], np.stack([a & b, a | b, a ^ b], 1))
    np.testing.assert_array_equal(res[:, 11], ~a)
    np.testing.assert_array_equal(flags, np.stack([a < b, a <= b, a > b, a >= b, a == b, a != b], 1))


@pytest.mark.parametrize("t", ("int8", "int16", "int32", "int64"))
def test_integer_division_rounding(mods, device, t):
    """``/`` truncates toward zero, ``//`` floors, ``%`` takes the dividend's sign, for every width."""
    a = np.array([7, -7, 7, -7, 0, 1, -1, 13, -13, 100, -100], dtype=t)
    b = np.array([2, 2, -2, -2, 3, -3, 3, 5, -5, 7, 7], dtype=t)
    args = [Arr(a), Arr(b), Arr(np.zeros_like(a)), Arr(np.zeros((a.size, N_INT_OPS), t)),
            Arr(np.zeros((a.size, 6), bool))]
    res = launch_both(mods, f"int_{t}", a.size, args, device)[3]
    np.testing.assert_array_equal(res[:, 3], np.trunc(a / b).astype(t))
    np.testing.assert_array_equal(res[:, 4], a // b)
    np.testing.assert_array_equal(res[:, 5], np.fmod(a, b))


def _shift_model(a, s, t):
    """The count modulo the promoted width (32, or 64 for 64-bit types), shifting the promoted value."""
    k = (s.astype(np.int64) & (63 if np.dtype(t).itemsize == 8 else 31)).astype(np.uint64)
    signed = np.dtype(t).kind == "i"
    left = (a.astype(np.int64).view(np.uint64) << k).astype(t)
    right = (a.astype(np.int64) >> k.astype(np.int64)) if signed else (a.astype(np.uint64) >> k)
    return left, right.astype(t)


@pytest.mark.parametrize("t", INT_TYPES)
def test_shift_counts_out_of_range(mods, device, rng, t):
    """tilewarp only: Warp leaves these undefined; tilewarp gives the same result on CPU and CUDA."""
    a, b = _int_operands(rng, t)
    lo = -70 if np.dtype(t).kind == "i" else 0
    s = rng.integers(lo, 70, a.size).astype(np.int64).astype(t)
    args = [Arr(a), Arr(b), Arr(s), Arr(np.zeros((a.size, N_INT_OPS), t)), Arr(np.zeros((a.size, 6), bool))]
    res = run(mods[0], f"int_{t}", a.size, args, device)[3]
    left, right = _shift_model(a, s, t)
    np.testing.assert_array_equal(res[:, 9], left)
    np.testing.assert_array_equal(res[:, 10], right)


@pytest.mark.parametrize("t", FLOAT_TYPES)
def test_float_operators(mods, device, rng, t):
    n = 2000
    a = rng.uniform(-10, 10, n).astype(t)
    b = (rng.uniform(0.25, 3, n) * rng.choice([-1, 1], n)).astype(t)
    b[:20] = a[:20]
    a[20:30] = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, -0.5, 3.0, 7.0], t)
    out, cmp = np.zeros((n, N_FLOAT_OPS), t), np.zeros((n, 4), bool)
    args = [Arr(a), Arr(b), Arr(out), Arr(cmp)]
    got = launch_both(mods, f"float_{t}", n, args, device, rtol=2e-6, atol=2e-6)[2]
    want = run(mods[1], f"float_{t}", n, args, "cpu")[2] if mods[1] is not None and device == "cpu" else None
    if want is not None:  # correctly rounded operations agree to the bit
        np.testing.assert_array_equal(got[:, :N_EXACT_FLOAT_OPS], want[:, :N_EXACT_FLOAT_OPS])


def test_float16_arithmetic_rounds_through_float32(mods, device, rng):
    """Warp computes half + half (and half math) in float32 and rounds the result to half once."""
    n = 2000
    a = rng.uniform(-60, 60, n).astype(np.float16)
    b = (rng.uniform(0.1, 9, n) * rng.choice([-1, 1], n)).astype(np.float16)
    args = [Arr(a), Arr(b), Arr(np.zeros((n, N_FLOAT_OPS), np.float16)), Arr(np.zeros((n, 4), bool))]
    res = run(mods[0], "float_float16", n, args, device)[2]
    x, y = a.astype(np.float32), b.astype(np.float32)
    for col, want in enumerate([x + y, x - y, x * y, x / y]):
        np.testing.assert_array_equal(res[:, col], want.astype(np.float16))
    np.testing.assert_array_equal(res[:, 11], np.sqrt(np.abs(x)).astype(np.float16))
    np.testing.assert_array_equal(res[:, 15], (x * y).astype(np.float16).astype(np.float32).__add__(x)
                                  .astype(np.float16))  # two roundings: x * y, then + x
    np.testing.assert_allclose(res[:, 17].astype(np.float32), np.sin(x).astype(np.float16), rtol=1e-3,
                               atol=1e-3)


def _cast_source(rng, src, n=1500):
    if src == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if src.startswith("float"):
        a = rng.uniform(-127, 127, n)
        a[: n // 3] = rng.uniform(-3e4, 6e4, n // 3)
        a[n // 3: n // 2] = rng.uniform(0, 255, n - n // 2 - n // 3)
        a[:8] = [0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.0, -1.0]
        return a.astype(src)
    info = np.iinfo(src)
    a = rng.integers(info.min, info.max, n, endpoint=True, dtype=src)
    a[:4] = [0, 1, info.max, info.min]
    return a


def _in_range(a, dst):
    """Where converting float ``a`` to integer ``dst`` is defined (the truncated value fits)."""
    if not np.dtype(dst).kind in "iu" or a.dtype.kind != "f":
        return np.ones(a.shape, bool)
    info, v = np.iinfo(dst), np.trunc(a.astype(np.float64))
    return (v >= info.min) & (v <= info.max)


@pytest.mark.parametrize("src", ALL_TYPES)
def test_casts_between_every_pair(mods, device, rng, src):
    """``wp.T(x)`` for every pair: ints wrap, floats truncate toward zero, bool is ``x != 0``. Float to
    integer conversion of a value outside the target's range is undefined (C++, Warp): not compared."""
    a = _cast_source(rng, src)
    args = [Arr(a)] + [Arr(np.zeros(a.size, d)) for d in ALL_TYPES]
    got = run(mods[0], f"cast_{src}", a.size, args, device)[1:]
    want = run(mods[1], f"cast_{src}", a.size, args, "cpu")[1:] if mods[1] is not None else [None] * len(got)
    for d, g, w in zip(ALL_TYPES, got, want):
        ok = _in_range(a, d)
        if w is None or {src, d} == {"bool", "float16"}:  # Warp cannot compile bool <-> float16
            continue
        np.testing.assert_array_equal(g[ok], w[ok], err_msg=f"{src} -> {d}")
        if src.startswith("float") and d in INT_TYPES:
            np.testing.assert_array_equal(g[ok], np.trunc(a[ok].astype(np.float64)).astype(d))


HALF_BOOL = """
import WP as wp


@wp.kernel
def half_bool(h: wp.array(dtype=wp.float16), b: wp.array(dtype=wp.bool), to_bool: wp.array(dtype=wp.bool),
              to_half: wp.array(dtype=wp.float16)):
    i = wp.tid()
    to_bool[i] = wp.bool(h[i])
    to_half[i] = wp.float16(b[i])
"""


def test_bool_float16_casts(device, rng):
    """tilewarp only (Warp's C++ rejects these conversions as ambiguous): ``x != 0`` and 0 / 1."""
    h = rng.uniform(-2, 2, 100).astype(np.float16)
    h[:3] = [0.0, -0.0, 1e-7]
    b = rng.integers(0, 2, 100).astype(bool)
    got = run(load_module(HALF_BOOL, "tilewarp"), "half_bool", 100,
              [Arr(h), Arr(b), Arr(np.zeros(100, bool)), Arr(np.zeros(100, np.float16))], device)
    np.testing.assert_array_equal(got[2], h != 0)
    np.testing.assert_array_equal(got[3], b.astype(np.float16))


PARAM_VALUES = [True, -100, -30000, -(2**31), -(2**63), 200, 60000, 2**32 - 1, 2**64 - 1, 1.5, 2.25, 1e300]


@pytest.mark.parametrize("typed", [False, True], ids=["python", "wp-typed"])
def test_scalar_parameters_of_every_type(mods, device, typed):
    args = [Val(t, v) if typed else v for t, v in zip(ALL_TYPES, PARAM_VALUES)]
    got = launch_both(mods, "params_all", 5, args + [Arr(np.zeros((5, 2), t)) for t in ALL_TYPES], device)
    for t, v, g in zip(ALL_TYPES, PARAM_VALUES, got):
        assert g[0, 0] == np.array(v).astype(t), t


ARRAYS = """
import WP as wp


@wp.kernel
def arrays_{T}(a1: wp.array(dtype=wp.{T}), a2: wp.array2d(dtype=wp.{T}), a3: wp.array3d(dtype=wp.{T}),
               a4: wp.array4d(dtype=wp.{T}), out: wp.array(dtype=wp.{T}, ndim=2)):
    i = wp.tid()
    out[i, 0] = a1[i]
    out[i, 1] = a2[i, 1]
    out[i, 2] = a3[1, i, 0]
    out[i, 3] = a4[0, 1, i, 1]
    a2[i, 0] = a1[i]
    a4[1, 0, i, 0] = a3[0, i, 1]
"""


@pytest.mark.parametrize("t", ALL_TYPES)
def test_arrays_of_every_type(device, rng, t):
    mods = load_both(ARRAYS.replace("{T}", t))
    n = 6
    def data(shape):
        if t == "bool":
            return rng.integers(0, 2, shape).astype(bool)
        if t.startswith("float"):
            return rng.uniform(-5, 5, shape).astype(t)
        return rng.integers(np.iinfo(t).min, np.iinfo(t).max, shape, endpoint=True, dtype=t)
    args = [Arr(data(n)), Arr(data((n, 2))), Arr(data((2, n, 2))), Arr(data((2, 2, n, 2))),
            Arr(np.zeros((n, 4), t))]
    got = launch_both(mods, f"arrays_{t}", n, args, device)
    np.testing.assert_array_equal(got[4][:, 0], args[0].data)
    np.testing.assert_array_equal(got[1][:, 0], args[0].data)


LITERALS = """
import WP as wp


@wp.kernel
def literals(i32: wp.array(dtype=wp.int32), i64: wp.array(dtype=wp.int64), u64: wp.array(dtype=wp.uint64),
             f32: wp.array(dtype=wp.float32), f64: wp.array(dtype=wp.float64), i8: wp.array(dtype=wp.int8)):
    big = 3000000000
    i32[0] = wp.int32(big) + wp.int32(1)
    i32[1] = wp.int32(big)
    i32[2] = 5 * 1000000000
    i32[3] = 1 << 31
    i32[4] = 7 // 2 + (-7) // 2 + (-7) % 3
    i32[5] = 7 / 2
    i64[0] = wp.int64(big)
    i64[1] = wp.int64(-9223372036854775808)
    i64[2] = wp.int64(1099511627776)
    u64[0] = wp.uint64(18446744073709551615)
    u64[1] = wp.uint64(-1)
    x = 0.1
    f64[0] = wp.float64(x)
    f64[1] = wp.float64(0.1)
    huge = 1e40
    f32[0] = huge
    f32[1] = float(7) / 2.0
    f32[2] = 7.5 // 2.0 + (-7.5) % 2.0
    i8[0] = wp.int8(300)
    i8[1] = wp.int8(100) * wp.int8(3)
    i8[2] = wp.int8(-128) - wp.int8(1)
"""


def test_literals_are_typed_as_in_warp(device):
    """An int literal is an int32 (wrapping if it does not fit), a float literal a float32 (inf past its
    range); a type constructor of a literal, even through a name, sees the exact Python value. (Warp's
    own C++ fails to compile ``big + wp.int32(1)`` for a literal past int32: not compared.)"""
    mods = load_both(LITERALS)
    outs = [Arr(np.zeros(8, t)) for t in ("int32", "int64", "uint64", "float32", "float64", "int8")]
    i32, i64, u64, f32, f64, i8 = launch_both(mods, "literals", 1, outs, device)
    np.testing.assert_array_equal(i32[:6], [-1294967295, -1294967296, 705032704, -(2**31), -2, 3])
    np.testing.assert_array_equal(i64[:3], [3000000000, -(2**63), 2**40])
    np.testing.assert_array_equal(u64[:2], [2**64 - 1, 2**64 - 1])
    np.testing.assert_array_equal(f64[:2], [0.1, 0.1])
    np.testing.assert_array_equal(f32[:3], [np.inf, 3.5, 1.5])
    np.testing.assert_array_equal(i8[:3], [44, 44, 127])


# ---- bad input -------------------------------------------------------------------------------------

MARK = "# <- error"
BAD = """
import tilewarp as wp


@wp.kernel
def mixed_widths(a: wp.array(dtype=wp.int64), b: wp.array(dtype=wp.int32)):
    a[0] = a[0] + b[0]  # <- error


@wp.kernel
def bits_of_float(a: wp.array(dtype=float)):
    a[0] = a[0] & a[0]  # <- error


@wp.kernel
def shift_of_float(a: wp.array(dtype=wp.float64)):
    a[0] = a[0] << wp.float64(1.0)  # <- error


@wp.kernel
def invert_bool(a: wp.array(dtype=wp.bool)):
    a[0] = ~a[0]  # <- error


@wp.kernel
def add_bools(a: wp.array(dtype=wp.bool)):
    a[0] = a[0] + a[0]  # <- error


@wp.kernel
def signed_unsigned(a: wp.array(dtype=wp.uint8), b: wp.array(dtype=wp.int8)):
    c = a[0] < b[0]  # <- error


@wp.kernel
def store_narrow(a: wp.array(dtype=wp.int16), b: wp.array(dtype=wp.int32)):
    a[0] = b[0]  # <- error
"""
BAD_CASES = {"mixed_widths": ("int64", "int32"), "bits_of_float": ("float32",),
             "shift_of_float": ("float64",), "invert_bool": ("bool",), "add_bools": ("bool",),
             "signed_unsigned": ("uint8", "int8"), "store_narrow": ("int16", "int32")}


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_type_errors_name_the_users_line(tmp_path, name):
    path = tmp_path / "bad_types.py"
    path.write_text(BAD)
    mod = load_module_from(path)
    kernel = getattr(mod, name)
    src = BAD.splitlines()
    start = next(k for k, line in enumerate(src) if line.startswith(f"def {name}("))
    line = next(k for k in range(start, len(src)) if MARK in src[k]) + 1
    arrays = [wp.zeros(1, dtype=getattr(wp, t), device="cpu") for t in BAD_CASES[name]]
    with pytest.raises(KernelTypeError) as info:
        wp.launch(kernel, dim=1, inputs=arrays, device="cpu")
    msg = str(info.value)
    assert f"{path}:{line}:" in msg, msg
    assert src[line - 1].split(MARK)[0].strip() in msg, msg
    assert f"tilewarp{os.sep}" not in msg, msg


def load_module_from(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bad_types_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ANNOTATED = """
import WP as wp


@wp.kernel
def annotated(out: wp.array(dtype=wp.int8), f: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec3)):
    x: wp.int8 = 5
    out[0] = x * wp.int8(30)
    y: wp.float64 = 0.1
    f[0] = y
    z: float = 2
    f[1] = wp.float64(z)
    w: wp.vec3 = wp.vec3(1.0, 2.0, 3.0)
    v[0] = w
"""


def test_annotated_assignment_gives_the_type(device):
    """tilewarp only (Warp rejects annotated assignments): a literal takes the annotated type."""
    mod = load_module(ANNOTATED, "tilewarp")
    out, f, v = run(mod, "annotated", 1, [Arr(np.zeros(1, np.int8)), Arr(np.zeros(2)),
                                          Arr(np.zeros((1, 3), np.float32), "vec3")], device)
    assert out[0] == -106 and f[0] == 0.1 and f[1] == 2.0 and (v[0] == [1, 2, 3]).all()


def test_annotation_mismatch_is_a_located_error(tmp_path):
    path = tmp_path / "annotated_bad.py"
    path.write_text("import tilewarp as wp\n\n\n@wp.kernel\ndef k(a: wp.array(dtype=wp.int8)):\n"
                    "    x: wp.int8 = wp.int32(5)\n    a[0] = x\n")
    mod = load_module_from(path)
    with pytest.raises(KernelTypeError) as info:
        wp.launch(mod.k, dim=1, inputs=[wp.zeros(1, dtype=wp.int8, device="cpu")], device="cpu")
    assert f"{path}:6:" in str(info.value) and "int8" in str(info.value)
