"""Slicing in kernels. Arrays: ``a[1:3]``, ``a[i, ::2]``, ``a[:, j]`` are one ``slice_view`` call (a
view). Vectors, quaternions, transforms and matrices (``v[1:]``, ``m[0, 1:]``, ``m[:, j]``, Warp's
constant-bound slices): a new vector or matrix built from the selected components."""
from __future__ import annotations

import ast

from ..language import types as T
from ..builtins.slicing import SLICE_NONE
from ..errors import KernelTypeError


def index_parts(node: ast.Subscript) -> list:
    return node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]


def has_slice(node: ast.Subscript) -> bool:
    return any(isinstance(p, ast.Slice) for p in index_parts(node))


def lower_slice(lw, node: ast.Subscript, base=None):
    base = lw.value(node.value) if base is None else base
    if T.is_composite(base.type):
        return _composite_slice(lw, node, base)
    if not T.is_array(base.type):
        raise KernelTypeError("only arrays, vectors and matrices can be sliced, got a "
                              f"{T.type_name(base.type)} value", lw.src.loc(node))
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


def _constant_bound(lw, expr, what):
    if expr is None:
        return None
    v = lw.index(expr)
    if not (v.is_const and isinstance(v.const, int)):
        raise KernelTypeError(f"a {what} of a vector or matrix slice must be a compile-time constant integer",
                              lw.src.loc(expr))
    return v.const


def _selection(lw, node, base):
    """The components ``v[...]`` selects: per dimension an index (constant or runtime; the dimension
    is dropped) or the constant positions of a slice (Python's rules). ``(rows, cols, result type)``."""
    t, loc = base.type, lw.src.loc(node)
    parts = index_parts(node)
    if len(parts) > len(t._wp_shape_):
        raise KernelTypeError(f"cannot index {T.type_name(t)} with {len(parts)} indices", loc)
    picks = []
    for dim, n in enumerate(t._wp_shape_):
        part = parts[dim] if dim < len(parts) else ast.Slice()
        if not isinstance(part, ast.Slice):
            picks.append([_index(lw, part, n, t)])
            continue
        step = _constant_bound(lw, part.step, "step")
        if step == 0:
            raise KernelTypeError("slice step cannot be zero", lw.src.loc(part.step))
        lower, upper = (_constant_bound(lw, b, "bound") for b in (part.lower, part.upper))
        bounds = slice(lower, upper, step)
        picks.append(range(*bounds.indices(n)))
    shape = tuple(len(p) for p in picks if isinstance(p, range))
    if 0 in shape:
        raise KernelTypeError(f"the slice selects no component of the {T.type_name(t)}", loc)
    s = T.scalar_of(t)
    result = T.vector(shape[0], s) if len(shape) == 1 else T.matrix(shape, s)
    return list(picks[0]), list(picks[1]) if len(picks) > 1 else [None], result


def _composite_slice(lw, node, base):
    rows, cols, result = _selection(lw, node, base)
    comps = [_component(lw, base, r, c, node) for r in rows for c in cols]
    return lw.call("construct", comps, node, (result,))


class SlicePlace:
    """``v[1:3] = x``, ``m[0, 1:] += x``: each selected component of the enclosing place is replaced
    by the matching component of the assigned value (a vector, or a matrix for 2-d selections)."""

    def __init__(self, lw, node, parent):
        self.lw, self.node, self.parent = lw, node, parent
        self.rows, self.cols, self.type = _selection(lw, node, parent.get())
        self._value = None

    def get(self):
        if self._value is None:
            base = self.parent.get()
            comps = [_component(self.lw, base, r, c, self.node) for r in self.rows for c in self.cols]
            self._value = self.lw.call("construct", comps, self.node, (self.type,))
        return self._value

    def set(self, value, stmt):
        lw = self.lw
        value = lw.coerce(value, self.type, stmt, "slice")
        base, k, ncols = self.parent.get(), 0, len(self.cols)
        for r in self.rows:
            for c in self.cols:
                at = [k] if T.is_vector(self.type) else [k // ncols, k % ncols]
                part = lw.call("extract", [value, *(lw.const(i, T.int32) for i in at)], stmt)
                idx = [_as_value(lw, r)] + ([] if c is None else [_as_value(lw, c)])
                base = lw.call("with_component", [base, *idx, part], stmt)
                k += 1
        self.parent.set(base, stmt)


def _as_value(lw, i):
    return lw.const(i, T.int32) if isinstance(i, int) else i


def _index(lw, part, n, t):
    """An index among the slices: a constant (checked, negative from the end) or a runtime value."""
    v = lw.index(part)
    if not v.is_const:
        return v
    if not -n <= v.const < n:
        raise KernelTypeError(f"index {v.const} is out of range for {T.type_name(t)} (size {n})",
                              lw.src.loc(part))
    return v.const % n


def _component(lw, base, r, c, node):
    idx = [_as_value(lw, r)] + ([] if c is None else [_as_value(lw, c)])
    return lw.call("extract", [base, *idx], node)
