"""Which array parameters a kernel reads and which it writes (through views, structs and funcs).

The Tape uses it to bump the version of arrays a launch writes and to check, before running a
launch's backward, that the arrays it read still hold what it read.
"""
from __future__ import annotations

from ..language import types as T
from ..ir import nodes as ir

# builtins that write or read the array that is their first argument: one element of it a lane...
_WRITES = {"store", "atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_cas", "atomic_exch",
           "atomic_and", "atomic_or", "atomic_xor"}
_READS = {"load", "atomic_min", "atomic_max", "lower_bound"}  # min/max adjoints read the element
# ...or a tile's worth (the bitwise tile atomics are tile_atomic_and, _or, _xor)
TILE_WRITES = {"tile_store", "tile_store_indexed", "tile_atomic_add", "tile_atomic_add_indexed"}
TILE_READS = {"tile_load", "tile_load_indexed"}


def writes_array(name: str) -> bool:
    """Whether builtin ``name`` writes the array that is its first argument."""
    return name in _WRITES or name == "store_component" or name in TILE_WRITES or name.startswith("tile_atomic_")


def reads_array(name: str) -> bool:
    """Whether builtin ``name`` (or its adjoint) reads the array that is its first argument."""
    return name in _READS or name in TILE_READS


def param_access(fn: ir.Function) -> tuple:
    """``(read, written)``: frozensets of parameter positions of ``fn`` holding arrays."""
    cached = getattr(fn, "_tw_access", None)
    if cached is not None:
        return cached
    roots = {p: {k} for k, p in enumerate(fn.params) if holds_arrays(p.type)}
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
            if reads_array(name):
                read |= first
            if writes_array(name):
                written |= first
            sources = set().union(*(roots.get(a, set()) for a in op.args))
        if s.dst is not None and holds_arrays(s.dst.type) and sources:  # a view, a struct field...
            roots.setdefault(s.dst, set()).update(sources)
    fn._tw_access = (frozenset(read), frozenset(written))
    return fn._tw_access


def holds_arrays(t) -> bool:
    if T.is_array(t):
        return True
    if isinstance(t, T.TupleType):
        return any(holds_arrays(e) for e in t.types)
    return T.is_struct(t) and any(holds_arrays(f) for f in t._tw_fields_.values())


def own_element_arrays(fn: ir.Function) -> dict:
    """Array parameters of kernel ``fn`` whose elements each thread only touches at its own launch
    index (every access is ``a[i]`` / ``a[i, j]`` with ``i, j = wp.tid()``): ``{param: tid arity}``.
    Their gradient needs no atomic scatter when the launch has that many dimensions."""
    tids = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tid":
            tids[s.dst] = s.op.template  # (component, of how many)
    arrays = {p for p in fn.params if T.is_array(p.type) and not isinstance(p.type, T.IndexedArrayType)}
    own = {p: None for p in arrays}
    for s, name, k, a in _uses(fn):
        if a not in own:
            continue
        if name == "shape" or (name in _WRITES | _READS and k == 0 and _own_index(s.op, a, tids)):
            if name != "shape":
                n = tids[s.op.args[1]][1]
                own[a] = n if own[a] in (None, n) else False
            continue
        own[a] = False
    return {p: n for p, n in own.items() if n}


def _uses(fn: ir.Function):
    """``(statement, builtin name or None, position, value)`` for every value a statement of ``fn``
    reads: a call's arguments, a copy's source, a condition, a loop's bounds."""
    for s in ir.walk(fn.body):
        uses = []
        if isinstance(s, ir.Assign):
            uses = [s.op.src] if isinstance(s.op, ir.Copy) else list(s.op.args)
        elif isinstance(s, (ir.If, ir.While)):
            uses = [s.cond]
        elif isinstance(s, ir.For):
            uses = [s.start, s.stop, s.step]
        name = s.op.builtin.name if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) else None
        for k, a in enumerate(uses):
            yield s, name, k, a


def _own_index(op, arr, tids) -> bool:
    n_values = 2 if op.builtin.name == "atomic_cas" else 0 if op.builtin.name in ("load", "lower_bound") else 1
    idx = op.args[1:len(op.args) - n_values]
    if len(idx) != arr.type.ndim or any(i not in tids for i in idx):
        return False
    n = tids[idx[0]][1]
    return n == len(idx) and all(tids[i] == (k, n) for k, i in enumerate(idx))


def only_loaded_arrays(fn: ir.Function) -> list:
    """Array parameters of kernel ``fn`` that it only reads element by element (``a[i]``; its shape
    too): their gradient arrays the backward only adds into, never reads, so a thread may hold its
    adds back and hand them on later (``tw::scatter_cache``, native/runtime/array_adjoint.h)."""
    arrays = [p for p in fn.params if T.is_array(p.type) and not isinstance(p.type, T.IndexedArrayType)]
    ok = dict.fromkeys(arrays, True)
    for _, name, k, a in _uses(fn):
        if a in ok:
            ok[a] = ok[a] and (name == "shape" or (name == "load" and k == 0))
    return [p for p in arrays if ok[p]]
