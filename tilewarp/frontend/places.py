"""Assignment targets as *places*: ``v.x = a``, ``m[i, j] = a``, ``s.inner.v[1] = a``, ``arr[i].f = a``.

A place can be read (``get``) and written (``set``). Writing a part of a value rebuilds the whole
value (values stay SSA) and writes that to the enclosing place, up to a name (rebound) or an
array element (stored back, as Warp does for ``arr[i].x = a``). Indices are evaluated once, in
source order, and the enclosing value is read once however deep the target is.
"""
from __future__ import annotations

import ast

from ..language import types as T
from ..builtins.vector import component_builtin
from ..errors import KernelSyntaxError, KernelTypeError


class _Place:
    def __init__(self, lw, node):
        self.lw, self.node = lw, node
        self._value = None

    def get(self):
        if self._value is None:
            self._value = self.read()
        return self._value


class _Name(_Place):
    def read(self):
        return self.lw.value(self.node)

    def set(self, value, stmt):
        self.lw.bind(self.node.id, value, stmt)


class _Temporary(_Place):
    """A value that is no variable (a call's result, a sub-array): its parts cannot be assigned."""

    def __init__(self, lw, node, value=None):
        super().__init__(lw, node)
        self._value = value

    def read(self):
        return self.lw.value(self.node)

    def set(self, value, stmt):
        raise KernelSyntaxError("component assignment needs a local variable or an array element: "
                                "v[i] = x, a[i].x = x, s.f = x", self.lw.src.loc(stmt))


class Element(_Place):
    """``arr[i, j]`` with one index per dimension."""

    def __init__(self, lw, node, arr, indices):
        super().__init__(lw, node)
        self.arr, self.indices = arr, indices

    def read(self):
        return self.lw.call("load", [self.arr, *self.indices], self.node)

    def set(self, value, stmt):
        value = self.lw.coerce(value, self.arr.type.dtype, stmt, "array element")
        self.lw.call("store", [self.arr, *self.indices, value], stmt)


class _Field(_Place):
    def __init__(self, lw, node, parent, field):
        super().__init__(lw, node)
        self.parent, self.field = parent, field

    def read(self):
        return self.lw.call("struct_get", [self.parent.get()], self.node, (self.field,))

    def set(self, value, stmt):
        s = self.parent.get()
        value = self.lw.coerce(value, s.type._tw_fields_[self.field], stmt,
                               f"field '{self.field}' of {T.type_name(s.type)}")
        self.parent.set(self.lw.call("struct_set", [s, value], stmt, (s.type, self.field)), stmt)


class _Component(_Place):
    """``v[i]``, ``v.x``, ``m[i, j]``, ``m[i]`` (a row) of a vector or matrix place."""

    def __init__(self, lw, node, parent, indices):
        super().__init__(lw, node)
        self.parent, self.indices = parent, indices

    def read(self):
        base = self.parent.get()
        name = component_builtin("extract", base.type, len(self.indices))
        return self.lw.call(name, [base, *self.indices], self.node)

    def set(self, value, stmt):
        base = self.parent.get()
        t = base.type
        scalar = len(self.indices) == (2 if T.is_matrix(t) else 1)
        if value.weak and scalar:
            value = self.lw.coerce(value, T.scalar_of(t), stmt, "component")
        if isinstance(self.parent, Element) and scalar and value.type == T.scalar_of(t):
            # one component of an array element, written in place: its gradient is that component's
            # (a whole-element store would hand the other components' gradients back once per write)
            e = self.parent
            cols = t._wp_shape_[1] if T.is_matrix(t) else 1
            self.lw.call("store_component", [e.arr, *e.indices, *self.indices, value], stmt, (e.arr.type.ndim, cols))
            return
        name = component_builtin("with_component", t, len(self.indices))
        self.parent.set(self.lw.call(name, [base, *self.indices, value], stmt), stmt)


def place(lw, node) -> _Place:
    """The place an assignment target expression names (its indices evaluated now)."""
    loc = lw.src.loc(node)
    if isinstance(node, ast.Name):
        return _Name(lw, node)
    if isinstance(node, ast.Attribute):
        parent = place(lw, node.value)
        t = parent.get().type
        if T.is_struct(t) and node.attr in t._tw_fields_:
            return _Field(lw, node, parent, node.attr)
        if T.is_composite(t):  # v.x = a, q.w = a, t.p = a, t.q = a
            from .composites import attribute_place

            part = attribute_place(lw, node, parent, t)
            if part is not None:
                return part
        raise KernelTypeError(f"cannot assign attribute '{node.attr}' of a {T.type_name(t)} value", loc)
    if isinstance(node, ast.Subscript):
        if lw.names_adjoint(node):  # wp.adjoint[x] in a @wp.func_grad function
            return lw.adjoint_place(node)
        ref = lw.symbols.get(node.value.id) if isinstance(node.value, ast.Name) else None
        if hasattr(ref, "_tw_place"):  # ref[...] = x in a block program (tilewarp/blocks)
            return ref._tw_place(lw, node)
        from .slices import SlicePlace, has_slice, lower_slice

        if has_slice(node):  # v[1:3] = x: those components; a[1:3][0] = x: through the view
            parent = place(lw, node.value)
            if T.is_tile(parent.get().type):  # t[2:6] = x: a region of the tile
                from .tiles import TileRegion, view_of

                entries = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                return TileRegion(lw, node, view_of(lw, parent.get(), entries, node))
            if T.is_composite(parent.get().type):
                return SlicePlace(lw, node, parent)
            return _Temporary(lw, node, lower_slice(lw, node, parent.get()))
        parent = place(lw, node.value)
        base = parent.get()
        index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        indices = [lw.index(i) for i in index_nodes]
        if T.is_array(base.type):
            if len(indices) == base.type.ndim:
                return Element(lw, node, base, indices)
            return _Temporary(lw, node, lw.call("view", [base, *indices], node))  # a[i][j] = x, 2-d a
        if T.is_composite(base.type):
            return _Component(lw, node, parent, lw.component_indices(base.type, indices, node))
        if T.is_tile(base.type):
            from .tiles import TileElement

            n = len(base.type.shape)
            if len(indices) == n:
                return TileElement(lw, node, base, indices)
            if len(indices) > n:  # t[i][c] / t[i, c]: a component of a vector or matrix element
                element = TileElement(lw, node, base, indices[:n])
                return _Component(lw, node, element, lw.component_indices(base.type.dtype, indices[n:], node))
            from .tiles import TileRegion, view_of

            return TileRegion(lw, node, view_of(lw, base, index_nodes, node))
        raise KernelTypeError(f"cannot assign an element of a {T.type_name(base.type)} value", loc)
    return _Temporary(lw, node)

