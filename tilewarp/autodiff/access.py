"""Which array parameters a kernel reads and which it writes (through views, structs and funcs).

The Tape uses it to bump the version of arrays a launch writes and to check, before running a
launch's backward, that the arrays it read still hold what it read.
"""
from __future__ import annotations

from .. import types as T
from ..ir import nodes as ir

_WRITES = {"store", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_cas", "atomic_exch",
           "atomic_and", "atomic_or", "atomic_xor"}
_READS = {"load", "atomic_min", "atomic_max", "lower_bound"}  # min/max adjoints read the element


def param_access(fn: ir.Function) -> tuple:
    """``(read, written)``: frozensets of parameter positions of ``fn`` holding arrays."""
    cached = getattr(fn, "_tw_access", None)
    if cached is not None:
        return cached
    roots = {p: {k} for k, p in enumerate(fn.params) if _holds_arrays(p.type)}
    read, written = set(), set()
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Assign):
            continue
        op = s.op
        if isinstance(op, ir.Copy):
            sources = roots.get(op.src, set())
        elif isinstance(op, ir.FuncCall):
            callee_read, callee_written = param_access(op.func)
            for k, a in enumerate(op.args):
                read |= roots.get(a, set()) if k in callee_read else set()
                written |= roots.get(a, set()) if k in callee_written else set()
            sources = set().union(*(roots.get(a, set()) for a in op.args))
        else:
            name = op.builtin.name
            first = roots.get(op.args[0], set()) if op.args else set()
            if name in _READS:
                read |= first
            if name in _WRITES:
                written |= first
            sources = set().union(*(roots.get(a, set()) for a in op.args))
        if s.dst is not None and _holds_arrays(s.dst.type) and sources:  # a view, a struct field...
            roots.setdefault(s.dst, set()).update(sources)
    fn._tw_access = (frozenset(read), frozenset(written))
    return fn._tw_access


def _holds_arrays(t) -> bool:
    if T.is_array(t):
        return True
    if isinstance(t, T.TupleType):
        return any(_holds_arrays(e) for e in t.types)
    return T.is_struct(t) and any(_holds_arrays(f) for f in t._tw_fields_.values())
