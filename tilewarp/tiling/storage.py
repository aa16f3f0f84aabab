"""Where each tile lives, and the block's shared memory, planned from the tiles' lifetimes.

A tile stays in registers (its elements spread over the lanes) unless an operation reads it at
elements other than those a lane owns (an element read, a transpose, a broadcast, an axis
reduction, a matmul, a sort...), its result is read by every lane (reductions), or the user asked
for ``storage="shared"``. Shared tiles get byte offsets in one block allocation: a tile occupies
its bytes from its first definition to its last use (through the end of any loop that reads it
from before the loop, or that carries it), and tiles whose lifetimes do not overlap share bytes
(DESIGN decision 9; Warp sums every tile).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..language import types as T
from ..builtins.tile import AXIS_SHARED, SHARED_ARGS, SHARED_RESULT, STORAGE_REQUEST, VIEWS
from ..ir import nodes as ir

ALIGN = 16
SWIZZLE_ALIGN = 1024


@dataclass
class Storage:
    shared: set = field(default_factory=set)   # ids of the shared tiles
    offsets: dict = field(default_factory=dict)  # id(tile) -> byte offset in the block's shared memory
    bytes: int = 0
    views: dict = field(default_factory=dict)  # id(view) -> its element strides in its root's memory
    roots: dict = field(default_factory=dict)  # id(view) -> id of the tile owning the memory
    mma: dict = field(default_factory=dict)    # id(tile) -> mtile's template arguments after the threads
    swizzled: dict = field(default_factory=dict)  # id(tile) -> (strip columns, element bytes): wgmma, DMMA operands
    pipelined: dict = field(default_factory=dict)  # id(loop) -> prefetch.Pipelined: loads issued ahead
    buffers: dict = field(default_factory=dict)    # id(tile) -> (stages, byte stride) of a prefetched tile

    @property
    def wgmma(self) -> set:
        """ids of the tiles held in wgmma accumulators (mma.h kind 3, whose arguments name the columns)."""
        return {vid for vid, kind in self.mma.items() if isinstance(kind, str)}


def tile_bytes(t) -> int:
    if isinstance(t, T.TileStackType):  # the elements, then the count
        return T.type_size(t.dtype) * t.size + 16
    return T.type_size(t.dtype) * t.size


def choose(fn: ir.Function) -> set:
    """The ids of the tiles of ``fn`` that must be shared."""
    shared = set()
    for s in ir.walk(fn.body):
        if not (isinstance(s, ir.Assign) and isinstance(s.op, ir.Call)):
            continue
        name, op = s.op.builtin.name, s.op
        positions = SHARED_ARGS.get(name, ())
        if name in AXIS_SHARED and op.template and op.template[-1] is not None:
            positions = (0,)
            if s.dst is not None:
                shared.add(id(s.dst))
        for k in positions:
            if k < len(op.args) and T.is_tile(op.args[k].type):
                shared.add(id(op.args[k]))
        if s.dst is not None and T.is_tile(s.dst.type):
            k = STORAGE_REQUEST.get(name)
            if name in SHARED_RESULT or (k is not None and op.template[k] == "shared"):
                shared.add(id(s.dst))
    return shared


def row_major(shape) -> tuple:
    strides, n = [], 1
    for d in reversed(shape):
        strides.insert(0, n)
        n *= d
    return tuple(strides)


def view_strides(op, parent_strides) -> tuple:
    """The element strides of a view (``tile_view`` / ``tile_transpose``) of a tile with ``parent_strides``."""
    if op.builtin.name == "tile_transpose":
        return tuple(reversed(parent_strides))
    spec, _ = op.template
    out = []
    for d, p in enumerate(parent_strides):
        x = spec[d] if d < len(spec) else ("o",)
        if x[0] == "s":
            out.append(p * x[2])
        elif x[0] == "o":
            out.append(p)
    return tuple(out)


def aliases(fn: ir.Function, storage: Storage):
    """Fill ``storage.views`` / ``storage.roots`` from the view statements, in program order."""
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name in VIEWS:
            src = s.op.args[0]
            parent = storage.views.get(id(src)) or row_major(src.type.shape)
            storage.views[id(s.dst)] = view_strides(s.op, parent)
            storage.roots[id(s.dst)] = storage.roots.get(id(src), id(src))


def _positions(stmts, pos, loops, counter):
    """Number every statement (depth first); record each loop's span."""
    for s in stmts:
        counter[0] += 1
        pos[id(s)] = counter[0]
        start = counter[0]
        if isinstance(s, ir.If):
            _positions(s.body, pos, loops, counter)
            _positions(s.orelse, pos, loops, counter)
        elif isinstance(s, (ir.For, ir.While)):
            if isinstance(s, ir.While):
                _positions(s.test, pos, loops, counter)
            _positions(s.body, pos, loops, counter)
            loops.append((start, counter[0], s))


def lifetimes(fn: ir.Function, tiles: set, roots=None, carried=frozenset()) -> dict:
    """id(tile) -> [first, last] statement position it must keep its bytes for (a view's uses count
    for the tile whose memory it shows, ``roots``; ``carried`` tiles hold theirs through any loop they
    are used in, as loop-carried ones do: prefetched buffers are written an iteration ahead)."""
    pos, loops = {}, []
    _positions(fn.body, pos, loops, [0])
    span: dict = {}
    roots = roots or {}

    def touch(v, p):
        vid = roots.get(id(v), id(v)) if isinstance(v, ir.Value) else None
        if vid in tiles:
            lo, hi = span.get(vid, (p, p))
            span[vid] = [min(lo, p), max(hi, p)]

    def visit(stmts):
        for s in stmts:
            p = pos[id(s)]
            if isinstance(s, ir.Assign):
                touch(s.dst, p)
                for a in ir.operands(s):
                    touch(a, p)
            elif isinstance(s, ir.If):
                visit(s.body)
                visit(s.orelse)
            elif isinstance(s, (ir.For, ir.While)):
                if isinstance(s, ir.While):
                    visit(s.test)
                visit(s.body)

    visit(fn.body)
    values = {id(v): v for v in fn.values}
    for start, end, loop in loops:  # used in a loop but made before it, or carried: the whole loop
        for vid, (lo, hi) in list(span.items()):
            inside = start <= hi and lo <= end
            if inside and (lo < start or vid in carried or getattr(values.get(vid), "mutable", False)):
                span[vid] = [min(lo, start), max(hi, end)]
    return span


def accumulations(fn: ir.Function, storage: Storage) -> dict:
    """id(result) -> id(out) for each ``tile_matmul(a, b, out)`` whose result only goes back into
    ``out`` by the very next statement (the copy that carries ``out`` around a K loop): the product can
    be written into ``out``'s own bytes, which makes that copy a no-op (``tw::tile_copy`` of a tile
    onto itself), instead of a second tile and a copy per iteration."""
    uses: dict = {}
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign):
            for a in ir.operands(s):
                uses[id(a)] = uses.get(id(a), 0) + 1
        elif isinstance(s, (ir.If, ir.While)):
            uses[id(getattr(s, "cond", None))] = uses.get(id(getattr(s, "cond", None)), 0) + 1
    pairs = {}

    def scan(stmts):
        for k, s in enumerate(stmts):
            if isinstance(s, ir.If):
                scan(s.body)
                scan(s.orelse)
            elif isinstance(s, (ir.For, ir.While)):
                scan(s.body)
            elif isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tile_matmul" \
                    and s.op.template[2] and k + 1 < len(stmts):
                c, nxt = s.op.args[2], stmts[k + 1]
                if isinstance(nxt, ir.Assign) and isinstance(nxt.op, ir.Copy) and nxt.op.src is s.dst \
                        and nxt.dst is c and c.type == s.dst.type and uses.get(id(s.dst)) == 1 \
                        and {id(c), id(s.dst)} <= storage.shared and id(c) not in storage.views:
                    pairs[id(s.dst)] = id(c)

    scan(fn.body)
    return pairs


def _warp_tiles(extent: int, unit: int, most: int) -> int:
    while most > 1 and extent % (unit * most):
        most //= 2
    return most


def _mma_kind(op, threads: int) -> int:
    """native/tile/mma.h's kind for ``tile_matmul(a, b, out)`` on ``threads`` CUDA threads when its
    output can stay in registers (every warp owns as many warp tiles; float32: every thread as many
    outputs, 32 or 64), else 0."""
    a, b, c = (x.type for x in op.args[:3])
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    halves = (a.dtype is b.dtype is T.float16 and c.dtype in (T.float32, T.float16)) or \
        (a.dtype is b.dtype is T.bfloat16 and c.dtype is T.float32)
    if halves and m % 16 == 0 and n % 8 == 0 and k % 16 == 0:
        kind, tiles = 1, (m // (16 * _warp_tiles(m, 16, 2))) * (n // (8 * _warp_tiles(n, 8, 4)))
    elif a.dtype is b.dtype is c.dtype is T.float64 and (n % 16 == 0 or m % 16 == 0) and m % 8 == 0 \
            and n % 8 == 0 and k % 4 == 0:  # (dmma.h)
        return 2 if threads % 32 == 0 and _dmma_tiles(m, n, threads // 32)[2] else 0
    elif a.dtype is b.dtype is c.dtype is T.float64 and m % 8 == 0 and n % 8 == 0 and k % 4 == 0:
        kind, tiles = 2, (m // (8 * _warp_tiles(m, 8, 4))) * (n // (8 * _warp_tiles(n, 8, 2)))
    elif a.dtype is b.dtype is c.dtype is T.float32:  # kind 4: RM x 8 outputs a thread (mma.h simt_tiling)
        held = m * n // threads if threads and (m * n) % threads == 0 else 0
        return 4 if held in (32, 64) and m % (held // 8) == 0 and n % 8 == 0 and k % 4 == 0 else 0
    else:
        return 0
    return kind if threads % 32 == 0 and tiles % (threads // 32) == 0 else 0


def _dmma_tiles(m: int, n: int, warps: int) -> tuple:
    """(TM, TN, even) of native/tile/dmma.h's float64 warp tiles over an m x n output on ``warps``
    warps: TM x TN blocks of 8 x 16 outputs where n % 16 == 0 (its transposed path), else of 16 x 8
    (m % 16 == 0). dmma_pick, which this mirrors: the most blocks a tile (at most 16), then the fewest
    operand words a k step reads, then the tallest, among the tilings whose tiles the warps share
    evenly (``even``), else among all."""
    bm, bn, most_m, most_n = (8, 16, 8, 4) if n % 16 == 0 else (16, 8, 4, 8)
    for even in (True, False):
        for area in (16, 8, 4, 2, 1):
            fits = [(bm * tm + bn * (area // tm), -tm) for tm in (8, 4, 2, 1) if tm <= most_m and area % tm == 0
                    and area // tm <= most_n and m % (bm * tm) == 0 and n % (bn * (area // tm)) == 0
                    and not (even and ((m // (bm * tm)) * (n // (bn * (area // tm)))) % max(warps, 1))]
            if fits:
                tm = -min(fits)[1]
                return tm, area // tm, even
    return 1, 1, False


def _dmma_swizzles(s) -> bool:
    """Whether the operands of a float64 product (statement ``s``) take the swizzled layout of
    dmma.h's transposed path (16-column strips, tile.h swizzled_t<16, 8>): whole strips and 8-row
    groups (m % 8, k % 16, n % 16 == 0)."""
    a, b, c = s.op.args[0].type, s.op.args[1].type, s.dst.type
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    return a.dtype is b.dtype is c.dtype is T.float64 and m % 8 == 0 and k % 16 == 0 and n % 16 == 0


def _wgmma_columns(op, threads: int) -> int:
    """The output columns of one warpgroup tile (mma.h kind 3) for ``tile_matmul(a, b, out)`` of
    float16 (or bfloat16) operands into float32 on ``threads`` CUDA threads, or 0 where wgmma tiles do
    not fit: 64-row tiles, as many per warpgroup, starting at whole strips of b's swizzled layout."""
    a, b, c = (x.type for x in op.args[:3])
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    if not (a.dtype is b.dtype and a.dtype in (T.float16, T.bfloat16) and c.dtype is T.float32) \
            or threads % 128 or m % 64 or k % 16 or n % 16 or m * n // threads > 128:
        return 0
    strip = _strip(n)
    for wn in (256, 128, 64, 32, 16):
        if wn % strip == 0 and n % wn == 0 and ((m // 64) * (n // wn)) % (threads // 128) == 0:
            return wn
    return 0


def _strip(columns: int) -> int:
    """Columns of a 16-bit tile's swizzle strips (128, 64 or 32 bytes wide: tile.h swizzled_t)."""
    return 64 if columns % 64 == 0 else 32 if columns % 32 == 0 else 16


def _wgmma_matmuls(stmts, threads: int) -> dict:
    """id(stmt) -> warpgroup columns for the matmuls that take wgmma (``_swizzled_operands``)."""
    cand = {}
    for s in stmts:
        if isinstance(s.op, ir.Call) and s.op.builtin.name == "tile_matmul" and s.op.template[2]:
            wn = _wgmma_columns(s.op, threads)
            if wn and s.dst.type == s.op.args[2].type:
                cand[id(s)] = wn
    return _swizzled_operands(stmts, cand)


def _dmma_matmuls(stmts, threads: int) -> dict:
    """id(stmt) -> True for the float64 products whose operands take dmma.h's swizzled layout
    (``_dmma_swizzles``, ``_swizzled_operands``): whether their output stays in registers or not,
    the tensor-core path reads them (mma.h)."""
    cand = {id(s): True for s in stmts if isinstance(s.op, ir.Call) and s.op.builtin.name == "tile_matmul"
            and threads % 32 == 0 and s.dst is not None and _dmma_swizzles(s)}
    return _swizzled_operands(stmts, cand)


def _swizzled_operands(stmts, cand: dict) -> dict:
    """The candidate matmuls (id(stmt) -> anything) that keep it where each operand is made only by
    tile_load and used only as an operand of candidates (a swizzled layout has no strides, so no view
    or other reader may see it)."""
    made, read = {}, {}
    for s in stmts:
        if s.dst is not None:
            made.setdefault(id(s.dst), []).append(s)
        for k, a in enumerate(ir.operands(s)):
            read.setdefault(id(a), []).append((s, k))
    while True:
        def fits(x):
            return all(d is not None and isinstance(d.op, ir.Call) and d.op.builtin.name == "tile_load"
                       for d in made.get(id(x)) or [None]) \
                and all(id(u) in cand and k < 2 for u, k in read.get(id(x), ()))
        drop = [s for s in stmts if id(s) in cand and not (fits(s.op.args[0]) and fits(s.op.args[1]))]
        if not drop:
            return cand
        for s in drop:
            del cand[id(s)]


def accumulators(fn: ir.Function, threads: int) -> tuple:
    """(id(tile) -> mtile's kind arguments, id(tile) -> swizzle (strip columns, element bytes) of the
    operands of wgmma and of float64 tensor-core products) for the tiles
    that can live in tensor-core accumulator registers: groups of
    tiles joined by ``tile_matmul(a, b, out)`` (out and its result) and by copies (a loop carrying
    ``out``), each made only by tile_zeros / tile_full / those products / copies within the group, and
    used only as such an ``out``, by those copies and by tile_store. Their sums then stay in registers
    across a K loop (no shared-memory accumulator read and written by every product)."""
    if threads % 32:
        return {}, {}
    parent: dict = {}

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    def union(x, y):
        parent.setdefault(x, x)
        parent.setdefault(y, y)
        parent[find(x)] = find(y)

    stmts = [s for s in ir.walk(fn.body) if isinstance(s, ir.Assign)]
    wgmma = _wgmma_matmuls(stmts, threads)
    views = {id(s.dst) for s in stmts if isinstance(s.op, ir.Call) and s.op.builtin.name in VIEWS}
    kinds = {}
    for s in stmts:
        if isinstance(s.op, ir.Call) and s.op.builtin.name == "tile_matmul" and s.op.template[2]:
            strided = id(s.op.args[0]) in views or id(s.op.args[1]) in views  # the paths read row-major tiles
            kind = f"3, {wgmma[id(s)]}" if id(s) in wgmma else 0 if strided else _mma_kind(s.op, threads)
            if kind and s.dst.type == s.op.args[2].type:
                union(id(s.dst), id(s.op.args[2]))
                kinds[id(s)] = kind
        elif isinstance(s.op, ir.Copy) and T.is_tile(getattr(s.dst, "type", None)) and T.is_tile(s.op.src.type):
            union(id(s.dst), id(s.op.src))
    groups: dict = {}
    for x in parent:
        groups.setdefault(find(x), set()).add(x)
    bad, kind_of = set(), {}
    for s in stmts:  # every definition and use of a group member must be one the layout supports
        root = find(id(s.dst)) if s.dst is not None and id(s.dst) in parent else None
        if isinstance(s.op, ir.Call):
            name = s.op.builtin.name
            if root is not None:
                if name == "tile_matmul" and id(s) in kinds:
                    kind_of.setdefault(root, set()).add(kinds[id(s)])
                elif name not in ("tile_zeros", "tile_full"):
                    bad.add(root)
            for k, a in enumerate(s.op.args):
                if id(a) in parent and not ((name == "tile_matmul" and id(s) in kinds and k == 2)
                                            or (name == "tile_store" and k == 1)):
                    bad.add(find(id(a)))
        elif isinstance(s.op, ir.Copy) and id(s.op.src) in parent and root is None:
            bad.add(find(id(s.op.src)))
    out = {}
    for root, members in groups.items():
        ks = kind_of.get(root, set())
        if root not in bad and len(ks) == 1:
            out.update(dict.fromkeys(members, ks.pop()))
    swizzled = {id(x): (_strip(x.type.shape[1]), 2) for s in stmts if id(s) in wgmma for x in s.op.args[:2]}
    dmma = _dmma_matmuls(stmts, threads)
    swizzled.update({id(x): (16, 8) for s in stmts if id(s) in dmma for x in s.op.args[:2]})
    return out, swizzled


def plan(fn: ir.Function, extra_shared=(), threads: int = 0, pipeline: bool = False, shared_limit: int = 0) -> Storage:
    """Storage of every tile of ``fn`` and the shared-memory offsets (first fit by start position);
    ``threads``: the CUDA threads of a block, for the tensor-core accumulators (0: none); ``pipeline``:
    give the loads of GEMM K loops buffers to run ahead in (prefetch.py), within ``shared_limit``."""
    shared = choose(fn) | set(extra_shared)
    mma, swizzled = accumulators(fn, threads) if threads else ({}, {})
    shared -= set(mma)
    out = Storage(shared=shared, mma=mma, swizzled=swizzled)
    aliases(fn, out)
    into = accumulations(fn, out)
    sizes = {id(v): tile_bytes(v.type) for v in fn.values
             if T.is_tile(v.type) and id(v) in shared and id(v) not in out.views and id(v) not in into}
    if pipeline:
        _pipeline(fn, out, sizes, set(out.roots.values()) | set(into) | set(into.values()), threads, shared_limit)
    span = lifetimes(fn, set(sizes), {**out.roots, **into}, set(out.buffers))
    placed = []  # (offset, size, last)
    for vid in sorted(sizes, key=lambda v: (span.get(v, [0, 0])[0], -sizes[v])):
        lo, hi = span.get(vid, [0, 0])
        size = -(-sizes[vid] // ALIGN) * ALIGN
        align = _alignment(vid, out)
        live = sorted((o, n) for o, n, l_lo, l_hi in placed if not (l_hi < lo or hi < l_lo))
        offset = 0
        for o, n in live:  # the first gap big enough
            if offset + size <= o:
                break
            offset = -(-max(offset, o + n) // align) * align
        placed.append((offset, size, lo, hi))
        out.offsets[vid] = offset
        out.bytes = max(out.bytes, offset + size)
    for vid, root in into.items():
        out.offsets[vid] = out.offsets[root]
    return out


def _dmma_alone(fn: ir.Function, storage: Storage, threads: int) -> bool:
    """Whether float64 register sums (mma.h kind 2) leave registers for one block an SM only: their
    words and 64 more a thread (fragments, addresses) for two blocks exceed the SM's 64 K. Such a block
    may then take the shared memory of two for its prefetched loads (128 x 128 x 32 tiles on 256
    threads: 3 stages instead of none)."""
    held = [T.type_size(v.type.dtype) * v.type.size // (4 * threads) for v in fn.values
            if storage.mma.get(id(v)) == 2 and v.type.dtype is T.float64]
    return bool(held) and 2 * threads * (max(held) + 64) > 65536


def _alignment(vid, storage: Storage) -> int:
    return SWIZZLE_ALIGN if vid in storage.swizzled else ALIGN  # a swizzle's phase follows the address


def _pipeline(fn: ir.Function, storage: Storage, sizes: dict, fixed: set, threads: int, shared_limit: int) -> None:
    """Pick the K loops whose loads run ahead and give each loaded tile its stages' bytes."""
    from .prefetch import asynchronous, candidates, stages_for

    wgmma = storage.wgmma
    alone = any(v.type.size > 64 * threads for v in fn.values if id(v) in wgmma) \
        or _dmma_alone(fn, storage, threads)
    loops = {id(x): x for x in ir.walk(fn.body) if isinstance(x, ir.For)}
    for loop_id, pipe in candidates(fn, storage.shared, fixed | set(storage.views)).items():
        tiles = [s.dst for s in pipe.loads]
        strides = {id(t): -(-sizes[id(t)] // _alignment(id(t), storage)) * _alignment(id(t), storage) for t in tiles}
        pipe.stages = stages_for(sum(strides.values()), alone, shared_limit)
        if pipe.stages < 2:
            continue
        pipe.asynchronous = asynchronous(pipe, loops[loop_id], set(storage.mma))
        storage.pipelined[loop_id] = pipe
        for t in tiles:
            storage.buffers[id(t)] = (pipe.stages, strides[id(t)])
            sizes[id(t)] = strides[id(t)] * pipe.stages
