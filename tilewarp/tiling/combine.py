"""Which ``tile_atomic_add`` calls a thread may combine over the blocks it runs (docs/TILES.md).

The seed's reduction adds one value per block into one total: ``tile_atomic_add(out, tile_sum(t))``.
With 65536 blocks that is 65536 atomics on one address, which the memory system serialises (on
an H100 about 2 ns each, more than the whole read of the data). A CUDA block (a CPU worker) runs
many blocks in turn, so it can add their values itself and make one atomic per address instead
(``tw::atomic_combiner``, at the end of its blocks or when the address changes). Atomics have no
order, so only the rounding of the total can differ, as between two runs of the original.

A call is combined when nothing could tell: it adds a one-element tile, nobody reads the old
values it returns, and the kernel uses the array for nothing else (no read could see the
deferred adds).

A combined call that adds ``tile_sum(t)`` made just before it (scalar arithmetic between), and
read nowhere else, is folded into the sum (``tw::folded_sum``): each thread adds its own elements
of ``t`` over its blocks, and the threads' totals are reduced once per run of blocks instead of
once per block (measured on an H100 in benchmarks/RESULTS.md). The target offsets must be the
same in every lane, so that all threads flush together.
"""
from __future__ import annotations

import os

from ..language import types as T
from ..ir import nodes as ir


def combined_atomics(fn: ir.Function) -> dict:
    """``{id(statement): slot}`` of the combinable ``tile_atomic_add`` calls of kernel ``fn``."""
    def one_element_tile(name, target, second):  # (tile_atomic_add's second argument: the tile added)
        return name == "tile_atomic_add" and T.is_tile(second.type) and second.type.size == 1

    return _combined(fn, one_element_tile)


def combined_adds(fn: ir.Function) -> dict:
    """``{id(statement): slot}`` of a SIMT kernel's ``atomic_add`` / ``atomic_sub`` calls a thread may
    combine over the tasks it runs, on the same terms as ``combined_atomics``: nobody reads the old
    values they return, and the kernel uses the array for nothing else (``atomic_sub`` on scalars).
    On the CPU, where two threads adding into one address take turns owning its cache line, a sum
    into one total runs at the speed of plain adds."""
    def simt_add(name, target, second):
        return name == "atomic_add" or (name == "atomic_sub" and T.is_scalar(target.type.dtype))

    return _combined(fn, simt_add)


def combined_adjoint_loads(fn: ir.Function) -> dict:
    """``{id(statement): slot}`` of the ``tile_load`` calls whose adjoints (atomic adds into the
    gradient array) a CPU thread may sum over the blocks it runs before adding once: those on an
    array parameter the kernel uses for nothing else, so that its backward pass only ever adds into
    that gradient array (an MLP's weights, loaded whole by every block: one add per element and
    worker instead of one per block). Which offsets repeat is seen at run time
    (``tw::adj_load_combiner``)."""
    def load(name, target, second):
        return name == "tile_load"

    return _combined(fn, load, results_read=True)


def _combined(fn: ir.Function, candidate, results_read: bool = False) -> dict:
    """The calls ``candidate(builtin name, target, second argument)`` accepts on an array parameter
    of ``fn``, kept where ``_slots`` finds nothing could tell them combined (``results_read``: the
    calls' results may be read, as a load's are)."""
    if os.environ.get("TILEWARP_COMBINE_ATOMICS", "1") == "0":  # (for measurements)
        return {}
    params = {id(p) for p in fn.params if T.is_array(p.type) and not isinstance(p.type, T.IndexedArrayType)}
    candidates, used = [], {}  # used: id(value) -> number of reads
    for s in ir.walk(fn.body):
        for v in statement_reads(s):
            used[id(v)] = used.get(id(v), 0) + 1
        if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and len(s.op.args) >= 2:
            target = s.op.args[0]
            if id(target) in params and candidate(s.op.builtin.name, target, s.op.args[1]):
                candidates.append(s)
    return _slots(candidates, used, results_read)


def _slots(candidates, used, results_read: bool = False) -> dict:
    """The candidates on arrays read by them alone whose results nobody reads (or may be read),
    numbered."""
    per_array = {}
    for s in candidates:
        per_array.setdefault(id(s.op.args[0]), []).append(s)
    slots = {}
    for target, calls in per_array.items():
        if used.get(target, 0) != len(calls):  # the array is read elsewhere
            continue
        for s in calls:
            if results_read or s.dst is None or used.get(id(s.dst), 0) == 0:
                slots[id(s)] = len(slots)
    return slots


def statement_reads(s) -> list:
    """The values statement ``s`` itself reads (not those of the statements inside it)."""
    if isinstance(s, ir.Assign):
        op = s.op
        return [op.src] if isinstance(op, ir.Copy) else [a for a in op.args if isinstance(a, ir.Value)]
    out = []
    for name in ("cond", "start", "stop", "step", "value"):
        v = getattr(s, name, None)
        if isinstance(v, ir.Value):
            out.append(v)
    return out


def folded_sums(fn: ir.Function, combined: dict, varying: set) -> dict:
    """``{id(atomic statement): sum statement}`` of combined calls that fold the ``tile_sum`` made
    before them with only scalar arithmetic between (top level of the body only: every thread runs
    both)."""
    used = {}
    for s in ir.walk(fn.body):
        for v in statement_reads(s):
            used[id(v)] = used.get(id(v), 0) + 1
    folded, last_sum = {}, None
    for s in fn.body:
        if id(s) in combined and last_sum is not None:
            target, added, *offsets = s.op.args
            if added is last_sum.dst and used.get(id(added)) == 1 and not any(id(o) in varying for o in offsets):
                folded[id(s)] = last_sum
        if is_call(s, "tile_sum") and s.op.template[-1] is None:
            last_sum = s
        elif not _pure_scalar(s):  # could change the summed tile: the sum stays where it is
            last_sum = None
    return folded


def is_call(s, name: str) -> bool:
    return isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == name


def _pure_scalar(s) -> bool:
    """A statement that only computes a non-tile value (the target's offsets, say)."""
    if not isinstance(s, ir.Assign) or s.dst is None or T.is_tile(s.dst.type):
        return False
    return isinstance(s.op, ir.Copy) or isinstance(s.op, ir.Call) and not s.op.builtin.side_effect

