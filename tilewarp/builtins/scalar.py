"""Scalar math builtins (Warp's names and semantics)."""
from __future__ import annotations

import math

import numpy as np

from ..language import types as T
from .registry import Builtin, arity, fail, names, numeric, register, returns

_float1 = arity(1)(numeric(kinds=("float",)))
_float2 = arity(2)(numeric(kinds=("float",)))
_any1 = arity(1)(numeric(vectors=True))
_any2 = arity(2)(numeric(vectors=True))


@arity((1, 2))
def _min_max(args, template):
    """``min(a, b)`` elementwise, or ``min(v)``: the smallest component of a vector (as Warp)."""
    if len(args) == 1:
        if not T.is_vector(args[0]):
            fail(f"with one argument takes a vector, got ({names(args)})")
        return T.scalar_of(args[0])
    return _any2(args, template)


def _math1(name, host=None, differentiable=True):
    return Builtin(name, _float1, f"tw::{name}", adjoint=f"tw::adj_{name}" if differentiable else None,
                   differentiable=differentiable, host=host)


@arity(1)
def _cast_rule(args, template):
    (src,), (dst,) = args, template
    if not (T.is_scalar(src) and T.is_scalar(dst)):
        fail(f"cannot convert {names(args)} to {T.type_name(dst)}")
    return dst


@arity(3)
def _clamp(args, template):
    return numeric(vectors=True)(args, template)


@arity(3)
def _lerp(args, template):
    a, b, t = args
    if a != b or T.scalar_of(a) != t or not T.is_float(t):
        fail(f"expects (x, y, t) with x, y of one float type and t its scalar, got ({names(args)})")
    return a


register(
    Builtin("cast", _cast_rule, "tw::cast", unify_literals=False,
            emit=lambda a, t: f"tw::cast<{t[0]._cpp_}>({a[0]})",
            adjoint_emit=lambda a, adj, adj_ret, t: f"tw::adj_cast<{t[0]._cpp_}>({a[0]}, {adj[0]}, {adj_ret})"),
    Builtin("abs", _any1, "tw::abs", adjoint="tw::adj_abs", host=abs),
    Builtin("sign", _any1, "tw::sign", differentiable=False, host=lambda x: float(np.sign(x))),
    Builtin("min", _min_max, "tw::min", adjoint="tw::adj_min", host=min),
    Builtin("max", _min_max, "tw::max", adjoint="tw::adj_max", host=max),
    Builtin("clamp", _clamp, "tw::clamp", adjoint="tw::adj_clamp", host=lambda x, a, b: min(max(x, a), b)),
    Builtin("atan2", _float2, "tw::atan2", adjoint="tw::adj_atan2", host=math.atan2),
    Builtin("lerp", _lerp, "tw::lerp", adjoint="tw::adj_lerp", host=lambda a, b, t: a * (1 - t) + b * t),
    Builtin("smoothstep", arity(3)(numeric(kinds=("float",))), "tw::smoothstep", adjoint="tw::adj_smoothstep"),
    Builtin("step", arity(1)(numeric()), "tw::step", differentiable=False),
    Builtin("isfinite", arity(1)(returns(T.bool_, numeric(kinds=("float",)))), "tw::isfinite",
            differentiable=False, host=math.isfinite),
    Builtin("isnan", arity(1)(returns(T.bool_, numeric(kinds=("float",)))), "tw::isnan",
            differentiable=False, host=math.isnan),
    Builtin("isinf", arity(1)(returns(T.bool_, numeric(kinds=("float",)))), "tw::isinf",
            differentiable=False, host=math.isinf),
    *[_math1(n, host=getattr(math, n)) for n in (
        "sqrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
        "tanh", "degrees", "radians")],
    _math1("cbrt", host=lambda x: float(np.cbrt(x))),
    _math1("frac", host=lambda x: x - math.trunc(x)),
    *[_math1(n, differentiable=False, host=h) for n, h in (
        ("floor", math.floor), ("ceil", math.ceil), ("trunc", math.trunc),
        ("round", lambda x: float(math.copysign(math.floor(abs(x) + 0.5), x))))],
)
