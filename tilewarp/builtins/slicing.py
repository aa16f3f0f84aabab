"""Array slicing in kernels (``a[1:3]``, ``a[i, ::2]``, ``a[:, j]``): views with Python's slice rules.

``slice_view(arr, part...)`` with ``template = (kinds, ndim)``: per indexed dimension ``"i"`` (an
integer index, one argument; drops the dimension) or ``"s"`` (a slice: start, stop, step; a bound
left out is ``SLICE_NONE``), and the view's dimension count. C++ in ``native/runtime/slice.h``.
"""
from __future__ import annotations

from ..language import types as T
from .array import LOCATED
from .registry import Builtin, fail, names, register

SLICE_NONE = -(2**31)  # tw::slice_none


def _slice_view(args, template):
    kinds, ndim = template
    arr, *parts = args
    if not T.is_array(arr) or isinstance(arr, T.IndexedArrayType):
        fail(f"only arrays can be sliced in kernels, got {T.type_name(arr)}")
    if len(kinds) > arr.ndim:
        fail(f"a {arr.ndim}-d array indexed with {len(kinds)} indices")
    if any(not T.is_int(p) for p in parts):
        fail(f"slice bounds and indices must be integers, got ({names(parts)})")
    assert ndim == arr.ndim - kinds.count("i")
    return T.ArrayType(arr.dtype, ndim)


def _slice_view_cpp(args, template):
    kinds, ndim = template
    arity = 1 + sum(3 if k == "s" else 1 for k in kinds)
    loc, args = (args[:1], args[1:]) if len(args) == arity + 1 else ([], args)  # debug builds: TW_LOC first
    out, rest = [args[0]], iter(args[1:])
    for k in kinds:
        out.append(f"tw::slice_t{{{next(rest)}, {next(rest)}, {next(rest)}}}" if k == "s" else next(rest))
    return f"tw::slice_view<{ndim}>({', '.join([*loc, *out])})"


LOCATED.add("slice_view")  # debug builds: an out-of-range integer index names the user's line

register(
    # a view: its gradient is the same view of the gradient array (computed forward, as view's)
    Builtin("slice_view", _slice_view, "tw::slice_view", unify_literals=False, adjoint="tw::adj_slice_view",
            emit=_slice_view_cpp),
)
