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
"""
from __future__ import annotations

import os

from .. import types as T
from ..ir import nodes as ir


def combined_atomics(fn: ir.Function) -> dict:
    """``{id(statement): slot}`` of the combinable ``tile_atomic_add`` calls of kernel ``fn``."""
    if os.environ.get("TILEWARP_COMBINE_ATOMICS", "1") == "0":  # (for measurements)
        return {}
    params = {id(p) for p in fn.params if T.is_array(p.type) and not isinstance(p.type, T.IndexedArrayType)}
    candidates, used = [], {}  # used: id(value) -> number of reads
    for s in ir.walk(fn.body):
        for v in _reads(s):
            used[id(v)] = used.get(id(v), 0) + 1
        if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tile_atomic_add":
            target, tile = s.op.args[0], s.op.args[1]
            if id(target) in params and T.is_tile(tile.type) and tile.type.size == 1:
                candidates.append(s)
    per_array = {}
    for s in candidates:
        per_array.setdefault(id(s.op.args[0]), []).append(s)
    slots = {}
    for target, calls in per_array.items():
        if used.get(target, 0) != len(calls):  # the array is read elsewhere
            continue
        for s in calls:
            if s.dst is None or used.get(id(s.dst), 0) == 0:
                slots[id(s)] = len(slots)
    return slots


def _reads(s) -> list:
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
