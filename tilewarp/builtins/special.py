"""Scalar builtins beyond the basic math table (Warp 1.19): the error-function family, copysign, rint,
nonzero, bit_count, div_approx, and the expect_eq / expect_neq / expect_near checks.

C++ in ``native/core/special.h`` (erf, erfc, rint in ``scalar.h``) and ``native/core/expect.h``.
"""
from __future__ import annotations

import math

import numpy as np

from ..language import types as T
from .registry import Builtin, arity, fail, names, numeric, register, returns

_float1 = arity(1)(numeric(kinds=("float",)))


@arity(2)
def _div_approx(args, template):
    """Float scalars, or a float vector / quaternion / matrix with its scalar type on either side."""
    a, b = args
    if T.is_scalar(a) and T.is_scalar(b):
        return numeric(kinds=("float",))(args, template)
    comp, s = (a, b) if T.is_composite(a) else (b, a)
    if (T.is_vector(comp) or T.is_quaternion(comp) or T.is_matrix(comp)) and T.is_float(s) and (
            T.scalar_of(comp) is s):
        return comp
    fail("expects float values, or a float vector, quaternion or matrix and its scalar type, "
         f"got ({names(args)})")


def _checkable(t) -> bool:
    return t is T.bool_ or T.is_scalar(t) or T.is_composite(t)


@arity(2)
def _expect_eq(args, template):
    if args[0] != args[1]:  # Warp's wording
        fail(f"comparing ({names(args)}): Can't test equality for objects with different types")
    t = args[0]
    if not _checkable(t):
        fail(f"compares scalars, vectors, matrices, quaternions or transforms, got ({names(args)})")
    return None


@arity(3)
def _expect_near(args, template):
    a, b, tol = args
    ok = a == b and T.is_float(tol) and (
        a is tol or ((T.is_vector(a) or T.is_quaternion(a) or T.is_matrix(a)) and T.scalar_of(a) is tol))
    if not ok:
        fail("expects (a, b, tolerance) with a, b one float scalar, vector, quaternion or matrix type and "
             f"tolerance its scalar type, got ({names(args)})")
    return None


def _newton(g, dg, y):
    """Newton on a concave function from the side where the tangent never crosses the root (left of
    it when rising: erf on [0, inf); right when falling: log erfc), so iterates approach monotonically."""
    for _ in range(100):
        step = g(y) / dg(y)
        y -= step
        if abs(step) <= 1e-17 * abs(y):
            break
    return y


def _host_erfcinv(x):
    """Host erfcinv with the tails' relative accuracy: log erfc's residual below 1/2, erf's above."""
    if not 0.0 < x < 2.0:
        return math.inf if x == 0.0 else -math.inf if x == 2.0 else math.nan
    if x > 1.0:
        return -_host_erfcinv(2.0 - x)
    if x > 0.5:
        return _host_erfinv(1.0 - x)
    c = 2 / math.sqrt(math.pi)
    if x < 1e-300:  # erfc underflows near the root: its asymptote erfc(y) ~ exp(-y^2) / (y sqrt(pi))
        y = math.sqrt(-math.log(x))
        for _ in range(50):
            y = math.sqrt(-math.log(x) - math.log(y * math.sqrt(math.pi)))
        return y
    return _newton(lambda y: math.log(math.erfc(y)) - math.log(x),
                   lambda y: -c * math.exp(-y * y) / math.erfc(y),
                   math.sqrt(-math.log(x)))  # erfc(y) < exp(-y^2): right of the root


def _host_erfinv(z):
    if not -0.5 <= z <= 0.5:
        return math.copysign(_host_erfcinv(1.0 - abs(z)), z) if -1.0 <= z <= 1.0 else math.nan
    c = 2 / math.sqrt(math.pi)
    return math.copysign(_newton(lambda y: math.erf(y) - abs(z), lambda y: c * math.exp(-y * y), 0.0), z)


_HOST_FLOATS = {"erf": math.erf, "erfc": math.erfc, "erfinv": _host_erfinv, "erfcinv": _host_erfcinv}


def _host_bit_count(x):
    width = 8 * T.scalar_of(type(x))._size_ if isinstance(x, T.Scalar) else 32
    return bin(int(getattr(x, "value", x)) & ((1 << width) - 1)).count("1")


register(
    *[Builtin(n, _float1, f"tw::{n}", adjoint=f"tw::adj_{n}", host=h) for n, h in _HOST_FLOATS.items()],
    Builtin("copysign", arity(2)(numeric(kinds=("float",))), "tw::copysign", adjoint="tw::adj_copysign",
            host=math.copysign),
    Builtin("rint", _float1, "tw::rint", differentiable=False, host=lambda x: float(np.rint(x))),
    Builtin("nonzero", arity(1)(numeric()), "tw::nonzero", differentiable=False,
            host=lambda x: type(x)(0 if x == 0 else 1)),
    Builtin("bit_count", arity(1)(returns(T.int32, numeric(kinds=("int", "uint")))), "tw::bit_count",
            differentiable=False, host=_host_bit_count),
    # approximate (fast) division on GPUs for float32; exact on the CPU, as Warp
    Builtin("div_approx", _div_approx, "tw::div_approx", adjoint="tw::adj_div_approx"),
    Builtin("expect_eq", _expect_eq, "tw::expect_eq", differentiable=False, side_effect=True),
    Builtin("expect_neq", _expect_eq, "tw::expect_neq", differentiable=False, side_effect=True),
    Builtin("expect_near", _expect_near, "tw::expect_near", differentiable=False, side_effect=True),
)
