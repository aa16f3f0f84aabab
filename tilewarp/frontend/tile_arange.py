"""``wp.tile_arange``: its bounds are compile-time constants, checked and rounded here as the fill
will compute them, so the tile's length is exact and every bad bound is a located error."""
from __future__ import annotations

import builtins as py
import math

import numpy as np

from ..language import types as T
from ..errors import KernelTypeError
from .tiles import _convert, constant, int_or

_ARANGE_NAMES = {1: ("stop",), 2: ("start", "stop"), 3: ("start", "stop", "step")}


def tile_arange(lw, node):
    """``tile_arange(stop)`` / ``(start, stop[, step], dtype=float32, storage=)``: the bounds are
    constants, rounded to ``dtype`` before the length is counted (as the fill computes in it)."""
    loc = lw.src.loc(node)
    kw = {k.arg: k.value for k in node.keywords}
    if set(kw) - {"dtype", "storage"}:
        raise KernelTypeError(f"tile_arange() got an unexpected argument '{sorted(set(kw) - {'dtype', 'storage'})[0]}'",
                              loc)
    if not 1 <= len(node.args) <= 3:
        raise KernelTypeError(f"tile_arange() accepts at most 3 positional arguments, got {len(node.args)}", loc)
    values = []
    for name, arg in zip(_ARANGE_NAMES[len(node.args)], node.args):
        try:
            v = int_or(constant(lw, arg))
        except KernelTypeError:
            raise KernelTypeError(f"tile_arange() arguments must be compile time constants, but {name} is not",
                                  loc) from None
        if isinstance(v, py.bool) or not isinstance(v, (py.int, py.float)):
            raise KernelTypeError(f"tile_arange(): {name} must be a number, got {v!r}", loc)
        values.append(v)
    start, stop, step = (0, values[0], 1) if len(values) == 1 else (*values, 1)[:3]
    dtype = _convert(lw, "dtype", constant(lw, kw["dtype"]), kw["dtype"], "dtype") if "dtype" in kw else T.float32
    storage = _convert(lw, "storage", constant(lw, kw["storage"]), kw["storage"], "storage") if "storage" in kw \
        else "register"
    if not T.is_scalar(dtype) or dtype is T.bool_:
        raise KernelTypeError(f"tile_arange() requires a numeric scalar dtype (an integer or float type), got "
                              f"{T.type_name(dtype)}", loc)
    start, stop, step = _arange_bounds(start, stop, step, dtype, loc)
    if step == 0:
        raise KernelTypeError("tile_arange(): step cannot be zero (in the output type)", loc)
    try:
        n = -(-(stop - start) // step) if T.is_int(dtype) else _float_count(stop - start, step, dtype)
    except OverflowError:  # a subnormal float step: the quotient is infinite
        raise KernelTypeError(f"tile_arange({', '.join(map(repr, values))}) spans more elements than can be counted",
                              loc) from None
    if n <= 0:
        raise KernelTypeError(f"tile_arange({', '.join(map(str, values))}) needs a non-empty range", loc)
    return lw.call("tile_arange", [], node, ((int(n),), dtype, storage, start, step))


def _float_count(span, step, dtype) -> int:
    """ceil(span / step) with the quotient rounded to ``dtype``, as the fill computes it (0.3f / 0.1f is
    3 there, not the 3.0000001 of the float64 quotient); a quotient that underflows keeps one element."""
    q = span / step
    with np.errstate(over="ignore", under="ignore"):
        n = math.ceil(float(dtype._np_.type(q)))
    return 1 if n <= 0 < q else n


def _round_int(v: int, dtype) -> float:
    """``v`` rounded once, to nearest even, to ``dtype``'s precision: going through float64 first
    would round twice (2**54 + 3 * 2**30 - 1 would become 2**54 + 2**32 in float32, not 2**54 + 2**31)."""
    bits = np.finfo(dtype._np_).nmant + 1
    shift = max(0, abs(v).bit_length() - bits)
    q, r = divmod(abs(v), 1 << shift)
    half = (1 << shift) >> 1
    if shift and (r > half or (r == half and q & 1)):
        q += 1
    with np.errstate(over="ignore"):
        return float(dtype._np_.type(float(q << shift) * (1 if v >= 0 else -1)))


def _arange_bounds(start, stop, step, dtype, loc):
    """The bounds as ``dtype`` holds them: exact integers in range, or floats rounded to ``dtype``."""
    named = (("start", start), ("stop", stop), ("step", step))
    if T.is_int(dtype):
        info = np.iinfo(dtype._np_)
        for name, v in named:
            if isinstance(v, py.float) and math.isfinite(v) and v != int(v):
                raise KernelTypeError(f"tile_arange(): {name}={v!r} has a fractional part, but "
                                      f"{T.type_name(dtype)} holds whole numbers only", loc)
            if (isinstance(v, py.float) and not math.isfinite(v)) or not info.min <= int(v) <= info.max:
                raise KernelTypeError(f"tile_arange(): {name}={v!r} is out of range for {T.type_name(dtype)}", loc)
        # every element lies between start and stop, so checking the bounds checks the whole range
        return tuple(int(v) for _, v in named)
    for name, v in named:
        # Exact rounding needs an integer type as wide as the bound; none is wider than 64 bits.
        if isinstance(v, py.int) and not -(2**64) < v < 2**64:
            raise KernelTypeError(f"tile_arange() {name}={v} is too wide to use as an integer bound; write it "
                                  f"as a float ({float(v)!r})", loc)
    with np.errstate(over="ignore"):
        out = tuple(_round_int(v, dtype) if isinstance(v, py.int) else float(dtype._np_.type(v)) for _, v in named)
    for (name, v), r in zip(named, out):
        if not math.isfinite(r):
            raise KernelTypeError(f"tile_arange(): {name}={v!r} is out of range for {T.type_name(dtype)}", loc)
    return out
