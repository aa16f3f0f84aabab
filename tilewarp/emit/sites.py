"""Debug-build sites: every checked array access and ``assert`` gets a number in the emitted code.

The C++ carries only ``TW_LOC(site, arg)`` (no file names or line numbers, so moving a script
keeps its cache entries); this table maps a site back to the user's file:line and to the array
the access reaches, which is how a failure recorded in ``tw_error_state`` becomes a message.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..language import types as T
from ..ir import nodes as ir


#: Integer ``/``, ``%`` and ``//``: debug builds report a zero divisor at the user's line.
INT_DIVISIONS = ("div", "mod", "floordiv")


@dataclass(frozen=True)
class Site:
    kind: str  # "access" | "assert" | "divide"
    loc: object  # ir.Loc of the statement in the user's source
    function: str  # the kernel or @wp.func the statement is in
    array: str | None  # how to name the array, e.g. "array 'x'" or "'row' (a view of array 'x')"
    param: str | None  # the parameter the array comes from (kernel or func), if known
    arg: int  # the kernel argument index the array comes from, -1 if not a kernel parameter
    dim_offset: int  # dimensions peeled off by views before this access


class SiteTable:
    """Collects the sites of one module (a kernel and the functions it calls), numbered from 0."""

    def __init__(self):
        self.sites: list[Site] = []
        self._views: dict = {}  # id(fn) -> {value id: (base value, indices taken)}

    def locate(self, fn: ir.Function, stmt: ir.Assign, located: set):
        """``(site, arg)`` for a statement calling a located builtin, else None."""
        op = stmt.op
        if not isinstance(op, ir.Call) or op.builtin.name not in located:
            return None
        if op.builtin.name in INT_DIVISIONS:
            if not (T.is_scalar(op.args[1].type) and T.is_int(op.args[1].type)):
                return None  # float division is defined everywhere; integer vectors are not located
            site = Site("divide", stmt.loc, fn.name, None, None, -1, 0)
        elif op.builtin.name == "_assert":
            site = Site("assert", stmt.loc, fn.name, None, None, -1, 0)
        else:
            site = self._access(fn, stmt.loc, op.args[0])
        self.sites.append(site)
        return len(self.sites) - 1, site.arg

    def _access(self, fn, loc, arr) -> Site:
        views = self._view_map(fn)
        peeled, hint, v, seen = 0, None, arr, set()
        while v.id in views and v.id not in seen:  # a carried array may be copied into itself
            seen.add(v.id)
            if hint is None and v.hint:
                hint = v.hint
            v, n = views[v.id]
            peeled += n
        name, arg = None, -1
        if v in fn.params:
            name = fn.param_names[fn.params.index(v)]
            arg = fn.params.index(v) if fn.is_kernel else -1
        kind = "indexedarray" if isinstance(v.type, T.IndexedArrayType) else "array"
        root = f"{kind} '{name}'" if name is not None else f"array '{v.hint or '?'}'"
        if name is not None and not fn.is_kernel:
            root += f" (a parameter of {fn.name}())"
        if v is not arr and hint and hint != name:
            return Site("access", loc, fn.name, f"'{hint}' (a view of {root})", name, arg, peeled)
        return Site("access", loc, fn.name, root, name, arg, peeled)

    def _view_map(self, fn) -> dict:
        views = self._views.get(id(fn))
        if views is None:
            views = self._views[id(fn)] = {}
            for s in ir.walk(fn.body):
                if isinstance(s, ir.Assign) and s.dst is not None and isinstance(s.op, ir.Call) \
                        and s.op.builtin.name == "view":
                    views[s.dst.id] = (s.op.args[0], len(s.op.args) - 1)
                elif isinstance(s, ir.Assign) and s.dst is not None and isinstance(s.op, ir.Copy) \
                        and T.is_array(s.dst.type):
                    views[s.dst.id] = (s.op.src, 0)
        return views
