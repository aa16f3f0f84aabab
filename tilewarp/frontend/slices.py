"""``a[1:3]``, ``a[i, ::2]``, ``a[:, j]`` on arrays in kernels: one ``slice_view`` call (a view)."""
from __future__ import annotations

import ast

from .. import types as T
from ..builtins.slicing import SLICE_NONE
from ..errors import KernelTypeError


def index_parts(node: ast.Subscript) -> list:
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]


def has_slice(node: ast.Subscript) -> bool:
    return any(isinstance(p, ast.Slice) for p in index_parts(node))


def lower_slice(lw, node: ast.Subscript):
    base = lw.value(node.value)
    if not T.is_array(base.type):
        raise KernelTypeError(f"only arrays can be sliced in kernels, got a {T.type_name(base.type)} value",
                              lw.src.loc(node))
    kinds, args = [], [base]
    for part in index_parts(node):
        if not isinstance(part, ast.Slice):
            kinds.append("i")
            args.append(lw.index(part))
            continue
        kinds.append("s")
        step = lw.index(part.step) if part.step is not None else lw.const(1, T.int32)
        if step.is_const and step.const == 0:
            raise KernelTypeError("slice step cannot be zero", lw.src.loc(part.step))
        for bound in (part.lower, part.upper):
            args.append(lw.index(bound) if bound is not None else lw.const(SLICE_NONE, T.int32))
        args.append(step)
    ndim = base.type.ndim - kinds.count("i") if T.is_array(base.type) else 0
    return lw.call("slice_view", args, node, (tuple(kinds), ndim))
