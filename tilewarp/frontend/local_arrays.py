"""``wp.zeros(shape, dtype)`` in kernel code: a fixed-size local array (``local_zeros``)."""
from __future__ import annotations

import ast

from ..language import types as T
from ..errors import KernelTypeError


def _constant(lw, expr, what):
    """A compile-time value: a literal or global (evaluated), or a local name bound to a constant."""
    try:
        return lw.src.evaluate(expr, {})
    except Exception:  # noqa: BLE001 - a local name: its lowered value may still be a constant
        v = lw.value(expr)
        if v.is_const:
            return v.const
    raise KernelTypeError(f"wp.zeros(): '{what}' must be a compile-time constant", lw.src.loc(expr))


def local_zeros(lw, node: ast.Call):
    loc = lw.src.loc(node)
    given = dict(zip(("shape", "dtype"), node.args))
    for kw in node.keywords:
        if kw.arg not in ("shape", "dtype") or kw.arg in given:
            raise KernelTypeError(f"wp.zeros() got an unexpected or repeated argument '{kw.arg}'", loc)
        given[kw.arg] = kw.value
    if len(node.args) > 2 or set(given) != {"shape", "dtype"}:
        raise KernelTypeError("wp.zeros() in kernels takes (shape, dtype), both compile-time constants", loc)
    shape = _constant(lw, given["shape"], "shape")
    shape = (shape,) if isinstance(shape, int) else shape
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and not isinstance(n, bool) for n in shape):
        raise KernelTypeError(f"wp.zeros(): shape must be an int or a tuple of ints, got {shape!r}",
                              lw.src.loc(given["shape"]))
    try:
        dtype = T.value_type(_constant(lw, given["dtype"], "dtype"))
    except TypeError as e:
        raise KernelTypeError(f"wp.zeros(): dtype: {e}", lw.src.loc(given["dtype"])) from None
    lw._next_id += 1  # the buffer's number: unique in this function
    return lw.call("local_zeros", [], node, (dtype, shape, lw._next_id))
