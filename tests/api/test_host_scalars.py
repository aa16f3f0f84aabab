"""Python-scope arithmetic on scalar values (``wp.int8(5) / wp.int8(2)``): kernel (C) semantics,
checked against an independent integer/NumPy model and, where installed, against Warp itself."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tilewarp as wp

try:
    import warp
except ImportError:  # the oracle comparisons skip themselves
    warp = None

INT_TYPES = [wp.int8, wp.int16, wp.int32, wp.int64, wp.uint8, wp.uint16, wp.uint32, wp.uint64]
FLOAT_TYPES = [wp.float16, wp.float32, wp.float64]


def _wrap(x: int, t) -> int:
    bits = 8 * t._size_
    x &= (1 << bits) - 1
    return x - (1 << bits) if t._kind_ == "int" and x >> (bits - 1) else x


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _value(x) -> float | int:
    return x.value if isinstance(x, wp.Scalar) else x


def _random_ints(rng, t, n):
    info = np.iinfo(t._np_)
    lo, hi = max(info.min, -1000), min(info.max, 1000)  # also near the edges below
    vals = [int(v) for v in rng.integers(lo, hi, n)] + [int(info.min), int(info.max)]
    return vals


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.__name__)
def test_integer_arithmetic_wraps_and_truncates(t):
    rng = np.random.default_rng(7)
    a_vals, b_vals = _random_ints(rng, t, 40), _random_ints(rng, t, 40)
    for a, b in zip(a_vals, b_vals):
        x, y = t(a), t(b)
        assert _value(x + y) == _wrap(a + b, t)
        assert _value(x - y) == _wrap(a - b, t)
        assert _value(x * y) == _wrap(a * b, t)
        assert _value(-x) == _wrap(-a, t)
        assert _value(abs(x)) == _wrap(abs(a), t)
        if b != 0:
            q = _wrap(_c_div(a, b), t)
            assert _value(x / y) == q
            assert _value(x % y) == (0 if b == -1 else _wrap(a - _c_div(a, b) * b, t))  # C remainder
            assert _value(x // y) == _wrap(a // b, t)  # `//` floors, as in kernels


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=lambda t: t.__name__)
def test_float_arithmetic_rounds_to_the_type(t):
    rng = np.random.default_rng(11)
    npt = t._np_.type
    for a, b in rng.uniform(-50, 50, (40, 2)):
        x, y = t(a), t(b)
        a16, b16 = npt(a), npt(b)  # the operands as the type holds them
        with np.errstate(all="ignore"):
            expect = {"+": a16 + b16, "-": a16 - b16, "*": a16 * b16, "/": a16 / b16, "%": np.fmod(a16, b16),
                      "**": np.power(np.abs(a16), b16 / npt(10))}
        got = {"+": x + y, "-": x - y, "*": x * y, "/": x / y, "%": x % y, "**": abs(x) ** (y / t(10))}
        for op, want in expect.items():
            assert float(_value(got[op])) == pytest.approx(float(want), rel=2e-3 if t is wp.float16 else 1e-6), op
    assert _value(t(-7) % t(2)) == -1.0  # fmod: the sign of the dividend, not Python's floor modulo
    assert math.isinf(_value(t(1) / t(0)))  # IEEE, as in kernels


def test_result_types_follow_warp():
    # float32, int32 (and bool) results are Python numbers; other types stay typed
    assert type(wp.float32(1) + wp.float32(2)) is float
    assert type(wp.int32(1) + wp.int32(2)) is int
    assert type(wp.float16(1) + wp.float16(2)) is wp.float16
    assert type(wp.int8(1) * wp.int8(2)) is wp.int8
    assert type(+wp.uint64(3)) is wp.uint64
    assert wp.float32(1) / wp.float32(3) == float(np.float32(1) / np.float32(3))


def test_python_numbers_take_the_scalar_type():
    assert type(wp.float16(1.5) + 2) is wp.float16 and _value(wp.float16(1.5) + 2) == 3.5
    assert type(3 * wp.int8(5)) is wp.int8 and _value(3 * wp.int8(50)) == _wrap(150, wp.int8)
    assert wp.float32(2) * 0.5 == 1.0
    with pytest.raises(TypeError, match="Python float"):
        wp.int16(2) * 0.5
    with pytest.raises(OverflowError, match="out of range for int8"):
        wp.int8(1) + 300


@pytest.mark.parametrize("expr, error, fragment", [
    (lambda: wp.int8(1) + wp.int16(1), TypeError, "int8 and int16"),
    (lambda: wp.float16(1) * wp.float32(1), TypeError, "float16 and float32"),
    (lambda: wp.int32(2) ** wp.int32(3), TypeError, "float types only"),
    (lambda: wp.int32(2) / wp.int32(0), ZeroDivisionError, "by zero"),
    (lambda: wp.uint8(2) % wp.uint8(0), ZeroDivisionError, "by zero"),
    (lambda: wp.bool(True) + wp.bool(True), TypeError, "unsupported operand"),
    (lambda: ~wp.float32(1), TypeError, "integer types only"),
    (lambda: wp.float32(1) + "1", TypeError, "unsupported operand"),
    (lambda: [1, 2][wp.float32(1)], TypeError, "indices must be integers"),
])
def test_bad_operands_raise_typed_errors(expr, error, fragment):
    with pytest.raises(error, match=fragment):
        expr()


def test_comparisons_indexing_and_conversions():
    assert wp.int8(1) < wp.int16(2) and wp.float16(2.5) == 2.5 and wp.uint8(3) >= 3
    assert wp.float64(2.0) != wp.float64(3.0)
    assert hash(wp.int16(7)) == hash(7)
    assert ["a", "b", "c"][wp.int8(2)] == "c" and ["a", "b"][wp.uint64(1)] == "b"
    assert wp.int8(300).value == 44 and wp.uint8(-1).value == 255  # construction wraps, as a C cast
    assert math.isinf(wp.float16(1e6).value)
    assert round(wp.float64(2.6)) == 3 and math.floor(wp.float32(-1.5)) == -2 and math.trunc(wp.float16(-1.5)) == -1
    assert f"{wp.float64(2.5):.2f}" == "2.50" and str(wp.int8(-3)) == "-3"
    assert ~wp.int8(5) == -6


@pytest.mark.skipif(warp is None, reason="needs warp-lang as the oracle")
@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "int32", "uint32", "int64", "float16", "float32",
                                  "float64"])
def test_matches_warp(name):
    ours, theirs = getattr(wp, name), getattr(warp, name)
    rng = np.random.default_rng(3)
    is_float = ours._kind_ == "float"
    pairs = rng.uniform(-20, 20, (20, 2)) if is_float else rng.integers(1, 40, (20, 2))
    for a, b in pairs:
        a, b = (float(a), float(b)) if is_float else (int(a), int(b))
        for op in ("__add__", "__sub__", "__mul__", "__truediv__", "__mod__", "__neg__", "__abs__"):
            mine = getattr(ours(a), op)(*(() if op in ("__neg__", "__abs__") else (ours(b),)))
            ref = getattr(theirs(a), op)(*(() if op in ("__neg__", "__abs__") else (theirs(b),)))
            if is_float and name != "float64":  # Warp keeps unrounded Python values; compare at the type's precision
                np.testing.assert_allclose(float(mine), float(ref), rtol=2e-3 if name == "float16" else 1e-6)
            else:
                assert float(mine) == float(ref), (name, op, a, b)
