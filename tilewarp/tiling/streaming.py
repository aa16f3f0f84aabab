"""Which tile kernels stream their input: their reads are ``ld.global.cs`` on CUDA (the emitted
source specialises ``tw::detail::stream_reads``; native/runtime/array.h ``read``).

A streaming read marks its cache lines to be evicted first. That pays where the data is read once
and nothing else is worth keeping: a block-wise reduction whose every read moves with the block,
so no other block reads the same bytes (H100: the tile sum of squares 1-2 %, the row sum 3-5 %
faster). It does not pay for a copy, which writes as much as it reads (3 % slower), nor for data
every block reads alike (a weight tile at a fixed offset: the cache should keep it). So a kernel
streams when each of its reads depends on the launch coordinate and it reads at least
``READS_PER_WRITE`` elements per element it writes.
"""
from __future__ import annotations

from ..language import types as T
from ..autodiff.access import TILE_READS, writes_array
from ..ir import nodes as ir
from .combine import statement_reads

READS = {"load", *TILE_READS}
READS_PER_WRITE = 8


def streams_reads(fn: ir.Function, block_dim: int) -> bool:
    moving = _moving_values(fn)
    reads = writes = 0
    for s in ir.walk(fn.body):
        if not isinstance(s, ir.Assign):
            continue
        if isinstance(s.op, ir.FuncCall):  # a callee's reads are not looked at
            if any(T.is_array(a.type) for a in s.op.args if isinstance(a, ir.Value)):
                return False
            continue
        if not isinstance(s.op, ir.Call):
            continue
        name = s.op.builtin.name
        if name in READS:
            if not any(id(a) in moving for a in s.op.args if isinstance(a, ir.Value)):
                return False
            reads += s.dst.type.size if T.is_tile(s.dst.type) else block_dim
        elif writes_array(name):
            tiles = [a for a in s.op.args if isinstance(a, ir.Value) and T.is_tile(a.type)]
            writes += max((t.type.size for t in tiles), default=block_dim)  # a tile, or one element a lane
    return reads > 0 and writes * READS_PER_WRITE <= reads


def _moving_values(fn: ir.Function) -> set:
    """ids of the values computed from ``wp.tid()`` (to a fixed point: loops carry values)."""
    moving: set = set()
    statements = list(ir.walk(fn.body))
    changed = True
    while changed:
        changed = False
        for s in statements:
            if not isinstance(s, ir.Assign) or s.dst is None or id(s.dst) in moving:
                continue
            tid = isinstance(s.op, ir.Call) and s.op.builtin.name == "tid"
            if tid or any(id(v) in moving for v in statement_reads(s)):
                moving.add(id(s.dst))
                changed = True
    return moving
