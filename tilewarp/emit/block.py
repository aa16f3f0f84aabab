"""C++ of kernels that use tiles: a body per block, with lane sections (docs/ARCHITECTURE.md, "Tiles").

The statements keep their order; consecutive statements each lane runs for itself
(``tiling/lanes.py``) are wrapped in ``TW_LANES_BEGIN`` / ``TW_LANES_END``, inside which a per-lane
value is named ``TW_L(v)``. ``native/tile/block.h`` turns that into a guarded section of each CUDA
thread, or a loop over the lanes on the CPU whose per-lane values are arrays. Tiles are declared
as register tiles or as shared tiles at their planned offsets (``tiling/storage.py``).
"""
from __future__ import annotations

import re

from dataclasses import dataclass

from ..language import types as T
from ..tiling.lanes import Lanes, analyse
from ..tiling.prefetch import pure_scalar
from ..tiling.storage import Storage, plan, tile_bytes
from ..builtins.tile import ELEMENT, INTO, VARYING_ARGS
from ..errors import KernelSyntaxError
from ..ir import nodes as ir
from ..language import names


@dataclass(frozen=True)
class BlockShape:
    """What a kernel that uses tiles is compiled for: lanes per block, which ``wp.tid()``
    components are the same in every lane of a block (``(k, n)`` of ``tid<k, n>``), and how many
    CUDA threads run a block (each runs ``block_dim // cuda_threads`` lanes; the CPU runs a block on
    one thread)."""

    block_dim: int
    uniform_tids: frozenset = frozenset()
    cuda_threads: int = 0  # 0: one per lane
    # tid components that are their value at the block's first lane plus the lane's index (the
    # innermost launch dimension, a whole number of blocks wide): no division per lane
    lane_tids: frozenset = frozenset()
    # the launch's last dimension is the block's lanes (wp.launch_tiled): its uniform tid components
    # are coordinates of the block index, read once per block without dividing by the lanes
    rows: bool = False
    ndim: int = 0  # the launch's dimensions (0: not known): wp.tid() skips the padded extents

    @property
    def block_tids(self) -> frozenset:
        return self.uniform_tids if self.rows else frozenset()

    @property
    def threads(self) -> int:
        return self.cuda_threads or self.block_dim


def wgmma_blocks(fn: ir.Function, storage: Storage, threads: int) -> int:
    """CUDA blocks per SM to ask of a kernel with wgmma accumulators (mma.h kind 3): two where the
    registers that leaves a thread (64 K / 2 blocks) hold its accumulators and 64 more, so that one
    block's barriers and load waits hide behind the other's products (H100, 128 x 128 x 64 GEMM
    tiles on 256 threads: 338 -> 454 TFLOP/s, benchmarks/RESULTS.md); else 1."""
    held = [v.type.size // threads for v in fn.values if id(v) in storage.wgmma]
    return 2 if held and max(held) + 64 <= 65536 // (2 * threads) else 1


#: register tiles of at most this many 4-byte words a thread leave a kernel room under 64 registers
LIGHT_TILE_WORDS = 16


def blocks_per_sm(fn: ir.Function, storage: Storage, threads: int) -> int:
    """CUDA blocks per SM to ask of a tile kernel (__launch_bounds__' second argument: it caps the
    registers a thread may use). wgmma kernels: ``wgmma_blocks``. A kernel of 128 or more threads
    whose register tiles are light (<= 16 words a thread, no mma accumulators) is held to 64
    registers, so half the SM's threads stay resident: ptxas otherwise spends registers on loads in
    flight (a row softmax of 4096 floats on 256 threads took 96, 2 blocks an SM: 75 % of the copy
    rate; at 64 registers 4 blocks: 95 %, benchmarks/RESULTS.md)."""
    if storage.wgmma:
        return wgmma_blocks(fn, storage, threads)
    if threads < 128 or storage.mma:
        return 1
    words = [-(-tile_bytes(v.type) // (4 * threads)) for v in fn.values
             if isinstance(v.type, T.TileType) and id(v) not in storage.shared]
    return max(1, 65536 // (64 * threads)) if words and max(words) <= LIGHT_TILE_WORDS else 1


#: tile blocks of one warp a CUDA block runs side by side (pack_factor); the most 4-byte words of
#: register tiles and per-lane values a thread of such a kernel may hold (it gets 32 registers), and
#: the most shared memory a tile block of it may plan (64 of them on an SM)
PACK = 4
PACK_WORDS = 16
PACK_SHARED = 1024


def pack_factor(fn: ir.Function, storage: Storage, lanes: Lanes, block: BlockShape, combines: bool) -> int:
    """Tile blocks per CUDA block (TW_PACK, native/tile/tile.h). A launch of many blocks whose
    blocks were narrowed to one warp each (runtime/block_shape.py cuda_threads) is held to 32 resident
    warps an SM by the CUDA block limit; PACK of them per CUDA block, at 32 registers a thread,
    fill the SM (64 warps) and keep twice the loads in flight: the row-sum seed on an H100 0.0252 ->
    0.0242 ms, 89.7 -> 93 % of copy (benchmarks/RESULTS.md). Only for light kernels: little
    planned shared memory (each tile block has its own slot), no tensor-core tiles, no combined
    atomics (those keep their own grid: pipeline._waves). $TILEWARP_PACK overrides PACK, for
    measurements."""
    import os

    pack = int(os.environ.get("TILEWARP_PACK", PACK))
    if pack <= 1 or block.threads != 32 or block.block_dim == 32 or storage.bytes > PACK_SHARED or storage.mma or combines:
        return 1
    regs = sum(-(-tile_bytes(v.type) // (4 * 32)) for v in fn.values
               if isinstance(v.type, T.TileType) and id(v) not in storage.shared)
    per_lane = sum(-(-T.type_size(v.type) // 4) for v in fn.values if id(v) in lanes.varying)
    return pack if regs + per_lane * (block.block_dim // 32) <= PACK_WORDS else 1


def constants(block: BlockShape, blocks: int = 1, pack: int = 1) -> list:
    """The per-kernel constants of native/tile/block.h; ``blocks``: CUDA blocks an SM should hold at
    once (__launch_bounds__' second argument: it caps registers); ``pack``: tile blocks a CUDA block
    runs (pack_factor), which then asks for a full SM."""
    import os

    if pack > 1:
        blocks = 2048 // (block.threads * pack)
    # $TILEWARP_MIN_BLOCKS overrides, for measurements
    min_blocks = max(1, min(int(os.environ.get("TILEWARP_MIN_BLOCKS", blocks)), 2048 // max(block.threads * pack, 1)))
    out = [f"constexpr int tw_block_dim = {block.block_dim};",
           f"constexpr int tw_threads = TW_IS_CUDA ? {block.threads} : 1;",
           "constexpr int tw_lanes = tw_block_dim / tw_threads;", ""]
    if min_blocks > 1:
        out[-1:] = ["#undef TW_MIN_BLOCKS", f"#define TW_MIN_BLOCKS {min_blocks}", ""]
    return out


def entry(name: str, block: BlockShape, deferred: str = "tw::no_deferred") -> str:
    return f"TW_BLOCK_KERNEL_ENTRY({name}, {deferred}, {block.block_dim}, tw_threads)"


def deferred_struct(name: str, combined: dict, folded: dict, fn: ir.Function) -> list:
    """What a thread defers over the blocks it runs: a combiner per combined atomic, a partial sum
    per folded one (tiling/combine.py)."""
    slots = {k: s for s in ir.walk(fn.body) if (k := combined.get(id(s))) is not None}
    lines = [f"struct {name} {{"]
    for k in sorted(slots):
        dtype = slots[k].op.args[0].type.dtype._cpp_
        kind = f"folded_sum<{dtype}, tw_threads>" if id(slots[k]) in folded else f"atomic_combiner<{dtype}>"
        lines.append(f"    tw::{kind} c{k};")
    lines.append(f"    TW_FUNC void flush() {{ {' '.join(f'c{k}.flush();' for k in sorted(slots))} }}")
    return lines + ["};", ""]


def shape_cpp(shape) -> str:
    return f"tw::shape_t<{', '.join(map(str, shape))}>"


def tile_cpp(t, shared: bool, strides=None, swizzle=None) -> str:
    kind = "stile" if shared else "rtile"
    layout = f", tw::strides_t<{', '.join(map(str, strides))}>" if strides is not None else \
        f", tw::swizzled_t<{swizzle[0]}, {swizzle[1]}>" if swizzle is not None else ""
    return f"tw::{kind}<{t.dtype._cpp_}, {shape_cpp(t.shape)}, tw_threads{layout}>"


def declare(v, name: str, lanes: Lanes, storage: Storage, offset_base: int = 0) -> str:
    """The declaration of value ``v`` named ``name`` in a block body."""
    t = v.type
    if isinstance(t, T.TileStackType):
        off = storage.offsets[id(v)] + offset_base
        return f"tw::tile_stack_t<{t.dtype._cpp_}, {t.shape[0]}> {name}{{({t.dtype._cpp_}*)(tw_smem + {off})}};"
    if T.is_tile(t):
        shared = id(v) in storage.shared
        if id(v) in storage.views:  # points into another tile's memory (tw::tile_alias)
            return f"{tile_cpp(t, True, storage.views[id(v)])} {name}{{}};"
        if shared:
            off = storage.offsets[id(v)] + offset_base
            return f"{tile_cpp(t, True, swizzle=storage.swizzled.get(id(v)))} {name}{{({t.dtype._cpp_}*)(tw_smem + {off})}};"
        if id(v) in storage.mma:  # tensor-core accumulator registers (native/tile/mma.h)
            return f"tw::mtile<{t.dtype._cpp_}, {shape_cpp(t.shape)}, tw_threads, {storage.mma[id(v)]}> {name}{{}};"
        return f"{tile_cpp(t, False)} {name}{{}};"
    if id(v) in lanes.varying:
        return f"TW_VARYING({name}, {t._cpp_});"
    return f"{t._cpp_} {name}{{}};"


def prologue(smem_bytes: int, block: BlockShape, lane_returns: bool = False) -> list:
    lines = [f"TW_BLOCK_SMEM({smem_bytes});",
             "const int64_t tw_base = block * tw_block_dim;",
             "const int64_t task = tw_base;  // lane 0's: what a uniform wp.tid() reads",
             "const int tw_active = args.bounds.size - tw_base < tw_block_dim ? (int)(args.bounds.size - tw_base)"
             " : tw_block_dim;  // lanes inside the launch",
             "(void)task; (void)tw_active;"]
    for k, n in sorted(block.lane_tids):
        first = f"tw::tid<{k}, {n}, {block.ndim}>(args.bounds, tw_base)" if n > 1 or block.ndim else \
            "tw::tid_first(args.bounds, tw_base)"
        lines.append(f"const int32_t tw_tid_{k}_{n} = {first};")
    for k, n in sorted(block.block_tids):
        lines.append(f"const int32_t tw_tid_{k}_{n} = tw::block_tid<{k}, {n}, {block.ndim}>(args.bounds, block);")
    if lane_returns:
        lines.append("TW_VARYING(tw_done, bool);  // lanes that returned")
    return lines


def block_args(op, lanes: Lanes, ref) -> list:
    """A block statement's operands: a per-lane value is lane 0's (TW_LANE0), except where the op
    gathers every lane's (``tile(x)``), and tile operations' destinations/sources are whole."""
    keep = VARYING_ARGS.get(op.builtin.name, ())
    return [f"TW_LANE0({ref(a)})" if isinstance(a, ir.Value) and id(a) in lanes.varying and k not in keep
            else ref(a) for k, a in enumerate(op.args)]


def into_expression(s: ir.Assign, lanes: Lanes, ref) -> str:
    """A tile op writing its destination: the C++ call takes it first."""
    b = s.op.builtin
    args = block_args(s.op, lanes, ref)
    if b.name in INTO:
        return b.emit([names.value(s.dst), *args], s.op.template) + ";"
    expr = b.emit(args, s.op.template) if b.emit is not None else f"{b.cpp}({', '.join(args)})"
    return f"{names.value(s.dst)} = {expr};" if s.dst is not None else f"{expr};"


class LaneGrouping:
    """Statement printing shared by the forward and backward block printers: ``emit_one(s)`` prints
    one statement; lane statements are gathered into lane sections."""

    def grouped(self, stmts, emit_one, reverse=False):
        order = list(reversed(stmts)) if reverse else list(stmts)
        group = []
        for s in order:
            if self.in_lanes or id(s) in self.lanes.lane:
                if self.in_lanes:
                    emit_one(s)
                else:
                    group.append(s)
                    if _writes_elements(s):  # as Warp: a barrier after each write of tile elements
                        self.flush(group, emit_one)
                        group = []
                continue
            self.flush(group, emit_one)
            group = []
            if isinstance(s, ir.Return):
                self.line("return;")
                continue
            if id(s) in self.lanes.once:  # a store every lane would repeat: one lane makes it
                self.line("TW_ONCE_BEGIN")
                self.depth += 1
                emit_one(s)
                self.depth -= 1
                self.line("TW_ONCE_END")
                if _writes_elements(s):
                    self.line("tw::block_sync();")
                continue
            emit_one(s)
        self.flush(group, emit_one)

    def flush(self, group, emit_one):
        if not group:
            return
        for s in group:
            _check_lane_returns(s.body if isinstance(s, (ir.For, ir.While)) else [s], in_loop=isinstance(s, (ir.For, ir.While)))
        self.in_lanes = True
        with names.lane_section(self.lanes.varying):
            for mark in ("TW_LANES_BEGIN", "TW_LANES_PARTIAL"):  # full blocks, then the last one
                self.line(mark)
                self.depth += 1
                if self.lane_returns:  # a lane that returned sits out the rest of the kernel
                    self.line("if (TW_L(tw_done)) continue;")
                for s in group:
                    emit_one(s)
                self.depth -= 1
        self.in_lanes = False
        self.line("TW_LANES_END")
        if any(_writes_elements(x) for x in group):
            self.line("tw::block_sync();  // lanes wrote tile elements")

    @property
    def lane_returns(self) -> bool:
        """The kernel has a ``return`` in per-lane code: each lane keeps a done flag (TW_L(tw_done))."""
        flag = getattr(self, "_lane_returns", None)
        if flag is None:
            body = self.fn.body if hasattr(self, "fn") else self.prep.body
            flag = self._lane_returns = any(isinstance(x, ir.Return) for x in ir.walk(body))
        return flag


_MARK = re.compile(r"^\s*(TW_LANES_BEGIN|TW_LANES_PARTIAL|TW_LANES_END)\s*$")


def _varying(name: str, v) -> str:
    """The declaration block.declare prints for per-lane value ``v`` named ``name``."""
    return f"TW_VARYING({name}, {v.type._cpp_});"


def localise_lane_values(lines: list, fn: ir.Function, lanes: Lanes) -> list:
    """``lines`` of a block kernel with each per-lane value that lives within one lane section
    declared inside that section, a plain local of the lane loop's body, instead of an array over
    the block's lanes (TW_VARYING). On the CPU one thread runs every lane: an array entry is
    memory, stored and read back by each statement, and the lane loop over vec3 entries does not
    vectorise; a local stays in registers (the tile N-body's inner loop is six such values). A
    value qualifies when every line naming it, its declaration aside, lies in one section (both of
    its printings) and no uniform loop carries it (it must outlive the section's run)."""
    section, opens = [None] * len(lines), {}  # line -> its section; a section's marks -> its number
    number, inside = -1, False
    for k, text in enumerate(lines):
        m = _MARK.match(text)
        if m and m.group(1) == "TW_LANES_END":
            inside = False
        elif m:  # BEGIN opens a section's full-block printing, PARTIAL its last block's
            number += m.group(1) == "TW_LANES_BEGIN"
            inside, opens[k] = True, number
        elif inside:
            section[k] = number
    carried = {id(c) for s in ir.walk(fn.body) if isinstance(s, (ir.For, ir.While)) and id(s) not in lanes.lane
               for c in s.carried}
    by_name = {names.raw(v): v for v in fn.values if id(v) in lanes.varying and id(v) not in carried}
    declared, where = {}, {}
    for k, text in enumerate(lines):
        for name in set(names.RAW_NAME.findall(text)) & by_name.keys():
            if text.strip() == _varying(name, by_name[name]):
                declared[k] = name
            else:
                where.setdefault(name, set()).add(section[k])
    local = {name: w.pop() for name, w in where.items()
             if name in declared.values() and len(w) == 1 and None not in w}
    if not local:
        return lines
    out = []
    for k, text in enumerate(lines):
        if declared.get(k) in local:
            continue
        if section[k] is not None:
            for name in local:
                text = text.replace(f"TW_L({name})", name)
        out.append(text)
        if k in opens:  # each printing of a section declares its locals first
            indent = text[:len(text) - len(text.lstrip())] + "    "
            out += [f"{indent}{by_name[name].type._cpp_} {name}{{}};" for name, at in local.items() if at == opens[k]]
    return out


def soa_lane_values(lines: list, fn: ir.Function, lanes: Lanes) -> list:
    """``lines`` with each per-lane float vector or matrix that is only written whole
    (``TW_L(v) = ...;``) and read as a call argument declared TW_SOA_VARYING, written by TW_SOA_SET
    and read by TW_SOA_GET (native/tile/block.h: components by lanes on the CPU). A value named any
    other way (a member, a tile operation's first lane, a reference) keeps its array of records."""
    by_name = {names.raw(v): v for v in fn.values
               if id(v) in lanes.varying and T.is_composite(v.type) and T.is_float(T.scalar_of(v.type))}
    declared, ok = {}, dict.fromkeys(by_name, True)
    for k, text in enumerate(lines):
        for name in set(names.RAW_NAME.findall(text)) & by_name.keys():
            if text.strip() == _varying(name, by_name[name]):
                declared[name] = k
                continue
            body = text.strip()
            if body.startswith(f"TW_L({name}) = ") and body.endswith(";"):
                body = body[len(f"TW_L({name}) = "):]
            rest = re.sub(rf"TW_L\({name}\)(?=\s*[,)])", "", body)  # its reads as call arguments
            if re.search(rf"\b{name}\b", rest):
                ok[name] = False
    soa = {name for name, good in ok.items() if good and name in declared}
    if not soa:
        return lines
    out = []
    for text in lines:
        for name in set(names.RAW_NAME.findall(text)) & soa:
            t = by_name[name].type
            stripped = text.strip()
            indent = text[:len(text) - len(stripped)]
            if stripped == _varying(name, by_name[name]):
                text = f"{indent}TW_SOA_VARYING({name}, {T.scalar_of(t)._cpp_}, {t._cpp_});"
                continue
            if stripped.startswith(f"TW_L({name}) = "):
                text = f"{indent}TW_SOA_SET({name}, {stripped[len(f'TW_L({name}) = '):-1]});"
            text = text.replace(f"TW_L({name})", f"TW_SOA_GET({name})")
        out.append(text)
    return out


def _check_lane_returns(stmts, in_loop):
    """A lane returns by leaving its lane loop (``continue``): not possible from inside a loop of its own."""
    for x in stmts:
        if isinstance(x, ir.Return) and in_loop:
            raise KernelSyntaxError("return inside a loop of per-lane code in a kernel that uses tiles is not "
                                    "supported (every lane must reach the tile operations): use break and a flag",
                                    x.loc)
        if isinstance(x, ir.If):
            _check_lane_returns(x.body + x.orelse, in_loop)
        elif isinstance(x, (ir.For, ir.While)):
            _check_lane_returns(x.body, True)


def _writes_elements(s) -> bool:
    return any(isinstance(x, ir.Assign) and isinstance(x.op, ir.Call) and x.op.builtin.name in ELEMENT
               and x.op.builtin.side_effect for x in ir.walk([s]))


def _shared_load(s, storage) -> bool:
    return isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tile_load" \
        and s.dst is not None and id(s.dst) in storage.shared and id(s.dst) not in storage.views


def loads_in_flight(stmts, storage) -> set:
    """ids of the tile_loads into shared tiles that need not wait for their copies: the next statement
    that touches a tile is another such load, which waits for both (the operands of a GEMM step load
    together: one memory latency instead of two)."""
    out = set()
    for k, s in enumerate(stmts):
        if not _shared_load(s, storage):
            continue
        nxt = next((x for x in stmts[k + 1:] if not pure_scalar(x)), None)
        if nxt is not None and _shared_load(nxt, storage):
            out.add(id(s))
    return out


def block_analysis(fn: ir.Function, shape: BlockShape, registers: bool = True, shared_limit: int = 0):
    """Lanes and storage of a block body; ``registers``: tensor-core / register accumulators allowed
    (not for cuBLASDx products, which read and write shared tiles); ``shared_limit``: the CUDA
    device's shared memory per block (0: the CPU, or not known)."""
    return analyse(fn, shape.uniform_tids), plan(fn, threads=shape.threads if registers else 0, pipeline=True,
                                                 shared_limit=shared_limit)
