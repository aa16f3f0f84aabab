"""The backward kernel of a kernel that uses tiles: the replay and the reverse pass, per block.

Same structure as the forward (``emit/block.py``): statements each lane runs itself are grouped
into lane sections, in the replay and in the (reversed) adjoint statements alike, and a per-lane
value's adjoint is per lane too. Tile adjoints are tiles of the same storage; the shared ones get
their own bytes, zeroed when the block starts.

Adjoints of values the same in every lane are spread over the lanes: on CUDA each thread
accumulates its own share (the elements it owns), on the CPU the block's code accumulates all of
them, and the array gradients they finally reach sum the shares. Every adjoint is linear in the
adjoints it reads, so the total is exact.
"""
from __future__ import annotations

from ..language import types as T
from ..tiling.lanes import analyse
from ..tiling.storage import ALIGN, choose, tile_bytes
from ..builtins.tile import INTO, MUTATES, VIEWS
from ..errors import AutodiffError
from ..ir import nodes as ir
from ..language import names
from ..autodiff.prepare import carries_gradient
from .adjoint import REWIND_CAP, REWIND_LEVELS, AdjointPrinter
from .block import LaneGrouping, block_args, declare, prologue, shape_cpp, tile_cpp
from .cpp import expression, ref
from ..tiling.storage import Storage, aliases
from ..tiling.combine import combined_adjoint_loads


#: tile operations whose adjoints never read the value of the tile they take (linear in it): a later
#: in-place change of that tile does not disturb them
_VALUE_FREE = {"tile_store", "tile_atomic_add", "tile_sum", "tile_extract", "tile_assign", "tile_fft", "tile_ifft",
               "tile_reshape", "tile_squeeze", "tile_astype", "tile_broadcast", *VIEWS,
               *(f"_tile_element_{op}" for op in ("set", "add", "sub"))}


def in_place_snapshots(fn: ir.Function) -> dict:
    """The reverse pass sees a tile that an operation changes in place (tile_fft, tile_assign, t[i] = x)
    only as it ends up. Where an adjoint of an earlier reader needs the value from before the change,
    a block-level change outside loops saves the tile in the replay and puts it back after its own
    adjoint: id(statement) -> the tile to save. Element writes, and changes inside a loop (each
    iteration would need its own copy), raise instead, naming both lines."""
    order = []

    def walk(stmts, loops):
        for s in stmts:
            if isinstance(s, ir.Assign):
                order.append((s, loops))
            elif isinstance(s, ir.If):
                walk(s.body, loops)
                walk(s.orelse, loops)
            elif isinstance(s, (ir.For, ir.While)):
                walk(getattr(s, "test", None) or [], loops | {id(s)})
                walk(s.body, loops | {id(s)})

    walk(fn.body, frozenset())
    roots: dict = {}
    for s, _ in order:
        if isinstance(s.op, ir.Call) and s.op.builtin.name in VIEWS:
            roots[id(s.dst)] = roots.get(id(s.op.args[0]), id(s.op.args[0]))
    values = {id(v): v for v in fn.values}
    snapshots = {}
    for k, (s, loops) in enumerate(order):
        b = s.op.builtin if isinstance(s.op, ir.Call) else None
        if b is None or b.name not in MUTATES or not b.differentiable or not carries_gradient(s.op.args[0].type):
            continue
        target = roots.get(id(s.op.args[0]), id(s.op.args[0]))
        for j, (t, t_loops) in enumerate(order):
            if t is s or not isinstance(t.op, ir.Call) or t.op.builtin.name in _VALUE_FREE:
                continue
            if not ((j < k or loops & t_loops) and any(roots.get(id(a), id(a)) == target for a in t.op.args)):
                continue
            if not loops and not b.name.startswith("_") and target in values:
                snapshots[id(s)] = values[target]
                break
            where = "in the same loop" if j > k else "before"
            what = "an element write (t[i] = x)" if b.name.startswith("_") else f"wp.{b.name}() in a loop"
            raise AutodiffError(f"{what} changes a tile in place that line {getattr(t.loc, 'line', '?')} reads "
                                f"{where}, and that line's gradient needs the value from before the change: "
                                f"change a copy of the tile instead (e.g. load it again)", s.loc)
    return snapshots


#: the block-cooperative BVH / mesh queries' batches (builtins/bvh_tile.py)
_QUERY_NEXT = {"tile_bvh_query_next", "tile_mesh_query_aabb_next"}


def _no_gradient_through_query(loop):
    """A loop driven by a tile query (each batch advances the query's state in shared memory, which no
    checkpoint holds) cannot be replayed iteration by iteration in the reverse pass: a gradient inside
    it raises, naming both lines (Warp's gradient there is silently zero)."""
    inner = list(ir.walk(list(getattr(loop, "test", None) or []) + list(loop.body)))
    calls = [x for x in inner if isinstance(x, ir.Assign) and isinstance(x.op, ir.Call)]
    drive = next((x for x in calls if x.op.builtin.name in _QUERY_NEXT), None)
    if drive is None:
        return
    for x in inner:
        if not isinstance(x, ir.Assign) or isinstance(x.op, ir.Copy) or (isinstance(x.op, ir.Call)
                                                                         and not x.op.builtin.differentiable):
            continue
        if any(isinstance(v, ir.Value) and not v.is_const and not T.is_array(v.type) and carries_gradient(v.type)
               for v in (x.dst, *x.op.args)):
            raise AutodiffError(f"wp.{drive.op.builtin.name}() (line {getattr(drive.loc, 'line', '?')}) drives this "
                                "loop from the query's shared state, which the reverse pass cannot replay batch by "
                                "batch, and this line needs a gradient: differentiate around the query loop (or "
                                "launch with enable_backward=False)", x.loc)


class BlockAdjointPrinter(LaneGrouping, AdjointPrinter):
    def __init__(self, prep, shape):
        AdjointPrinter.__init__(self, prep)
        self.shape, self.in_lanes = shape, False
        fn = prep.fn
        whole = ir.Function(name=fn.name, symbol=fn.symbol, params=fn.params, param_names=fn.param_names,
                            body=prep.body, is_kernel=True, values=prep.values, loc=fn.loc)
        self.whole = whole
        self.lanes = analyse(whole, shape.uniform_tids)
        self.snapshots = in_place_snapshots(whole)
        self._layout(choose(whole))
        self.lane_loops: set = set()
        self.combined = combined_adjoint_loads(whole)

    def deferred_struct(self, name: str) -> list:
        """What a thread defers over the blocks it runs: the combined loads' adjoint sums."""
        slots = {k: s for s in ir.walk(self.whole.body) if (k := self.combined.get(id(s))) is not None}
        lines = [f"struct {name} {{"]
        for k in sorted(slots):
            arr, tile = slots[k].op.args[0].type, slots[k].dst.type
            lines.append(f"    tw::adj_load_combiner<{arr.dtype._cpp_}, {shape_cpp(tile.shape)}, {arr.ndim}> c{k};")
        lines.append(f"    TW_FUNC void flush() {{ {' '.join(f'c{k}.flush();' for k in sorted(slots))} }}")
        return lines + ["};", ""]

    def _layout(self, shared):
        """Shared primal tiles, then shared adjoints, each with its own bytes (the reverse pass reads
        primals long after the replay wrote them)."""
        self.storage, self.adj_storage, offset = Storage(shared=shared), Storage(shared=shared), 0
        aliases(self.whole, self.storage)
        self.adj_storage.views, self.adj_storage.roots = self.storage.views, self.storage.roots
        for v in self.prep.values:
            if T.is_tile(v.type) and id(v) in shared and id(v) not in self.storage.views:
                self.storage.offsets[id(v)] = offset
                offset += -(-tile_bytes(v.type) // ALIGN) * ALIGN
        for v in self.prep.values:
            if T.is_tile(v.type) and id(v) in shared and carries_gradient(v.type) and id(v) not in self.storage.views:
                self.adj_storage.offsets[id(v)] = offset
                offset += -(-tile_bytes(v.type) // ALIGN) * ALIGN
        self.snapshot_at = {}  # id(statement) -> the byte offset of its saved tile
        for sid, v in self.snapshots.items():
            self.snapshot_at[sid] = offset
            offset += -(-tile_bytes(v.type) // ALIGN) * ALIGN
        self.bytes = offset

    def _snapshot(self, s, save: bool) -> str:
        """Copy the tile statement ``s`` changes in place into its saved bytes (``save``) or back."""
        v = self.snapshots[id(s)]
        t = v.type
        copy = f"tw::tile_copy(tw_saved, {names.value(v)})" if save else f"tw::tile_copy({names.value(v)}, tw_saved)"
        return f"{{ {tile_cpp(t, True)} tw_saved{{({t.dtype._cpp_}*)(tw_smem + {self.snapshot_at[id(s)]})}}; {copy}; }}"

    def carried_value(self, c) -> str:
        if T.is_tile(c.type):
            return f"tw::tile_snapshot({names.value(c)})"
        return names.value(c)

    def carried_restore(self, c, member: str) -> str:
        if T.is_tile(c.type):
            return f"tw::tile_copy({names.value(c)}, {member});"
        return f"{names.value(c)} = {member};"

    def lv(self, k: int, what: str) -> str:
        name = f"L{k}_{what}"
        return f"TW_L({name})" if self.in_lanes and k in self.lane_loops else name

    # ---- declarations and the kernel ------------------------------------------------------------

    def declarations(self, params=()):
        for v in self.prep.values:
            self.line(declare(v, names.raw(v), self.lanes, self.storage))
        for v in self.prep.values:
            if T.is_tile(v.type) and not carries_gradient(v.type):
                continue
            self.line(declare(v, "adj_" + names.raw(v), self.lanes, self.adj_storage))
        for s in ir.walk(self.prep.body):
            if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.storage is not None:
                raise AutodiffError("wp.zeros() local arrays have no gradient yet: the backward pass cannot "
                                    "replay their stores (launch with enable_backward=False)", s.loc)
            if isinstance(s, (ir.For, ir.While)):
                self._declare_loop(s)
        for v in self.prep.values:  # shared adjoints start at zero (register ones are zero-initialised)
            if T.is_tile(v.type) and id(v) in self.adj_storage.offsets:
                self.line(f"tw::tile_zero(adj_{names.raw(v)});")

    def _declare_loop(self, s):
        _no_gradient_through_query(s)
        k = self.loop_ids.setdefault(id(s), len(self.loop_ids))
        lane = id(s) in self.lanes.lane
        for c in s.carried:
            if not lane and id(c) in self.lanes.varying:
                raise AutodiffError("the backward pass of a loop with tile operations that carries a per-lane value "
                                    "is not supported yet: accumulate in a tile or an array, or launch with "
                                    "enable_backward=False", s.loc)
        if lane:
            self.lane_loops.add(k)
        wrap = (lambda t, n: f"TW_VARYING({n}, {t});") if lane else (lambda t, n: f"{t} {n}{{}};")
        self.line(wrap("int64_t", f"L{k}_n"))
        if self.carried(s):  # tiles are checkpointed as the register copy each thread owns
            members = " ".join(f"{tile_cpp(c.type, False) if T.is_tile(c.type) else c.type._cpp_} m{i};"
                               for i, c in enumerate(self.carried(s)))
            self.line(f"struct L{k}_state {{ {members} }};")
            self.line(wrap(f"tw::rewind_t<L{k}_state, {REWIND_CAP}, {REWIND_LEVELS}>", f"L{k}_rewind"))

    index = "block"

    def prologue(self) -> list:
        return prologue(self.bytes, self.shape)

    # ---- replay and reverse, grouped into lane sections ------------------------------------------

    def replay(self, stmts):
        self.grouped(stmts, self.replay_one)

    def reverse(self, stmts):
        self.grouped(stmts, lambda s: getattr(self, "reverse_" + type(s).__name__)(s), reverse=True)

    def replay_Assign(self, s: ir.Assign):
        op, dst = s.op, s.dst
        if isinstance(op, ir.Call) and op.builtin.name in MUTATES:  # tiles changed in place: redone
            if id(s) in self.snapshots:  # saved first: an earlier reader's adjoint needs the old value
                self.line(self._snapshot(s, save=True))
            self.line(expression(op, args=self.call_args(op)) + ";")
            return
        if dst is not None and T.is_tile(dst.type):
            if isinstance(op, ir.Copy):
                self.line(f"tw::tile_copy({names.value(dst)}, {ref(op.src)});")
            elif not op.builtin.side_effect:
                self.line(op.builtin.emit([names.value(dst), *self.call_args(op)], op.template) + ";")
                if op.builtin.name in VIEWS and carries_gradient(dst.type):  # the same view of the adjoint
                    adj_args = [names.adjoint(dst), names.adjoint(op.args[0]), *map(ref, op.args[1:])]
                    self.line(op.builtin.emit(adj_args, op.template) + ";")
            return
        if isinstance(op, ir.Call) and op.builtin.name == "untile":
            self.line(op.builtin.emit([names.value(dst), *self.call_args(op)], op.template) + ";")
            return
        super().replay_Assign(s)

    def reverse_Assign(self, s: ir.Assign):
        op, dst = s.op, s.dst
        if isinstance(op, ir.Call) and op.builtin.name in VIEWS:
            return  # a view's adjoint is a view of its source's adjoint: nothing to move
        into = isinstance(op, ir.Call) and op.builtin.name in INTO
        if not into and not (dst is not None and T.is_tile(dst.type) and isinstance(op, ir.Copy)):
            super().reverse_Assign(s)
            if id(s) in self.snapshots:  # the tile as the statements before this one left it
                self.line(self._snapshot(s, save=False))
            return
        if not carries_gradient(dst.type):
            return
        if isinstance(op, ir.Copy):
            if not op.src.is_const:
                self.line(f"tw::adj_accum({names.adjoint(op.src)}, {names.adjoint(dst)});")
            self.clear(dst)
            return
        b = op.builtin
        if not b.differentiable:
            if b.undefined_gradient:
                self.check_no_gradient(s)
            self.clear(dst)
            return
        grads = [names.adjoint(a) if not a.is_const and (carries_gradient(a.type) or T.is_array(a.type))
                 else "tw::adj_discard" for a in op.args]
        if id(s) in self.combined:  # summed over the thread's blocks first (tiling/combine.py)
            offsets = self.call_args(op)[1:]
            self.line(f"tw::adj_tile_load_combined(tw_deferred.c{self.combined[id(s)]}, {grads[0]}, "
                      f"{names.adjoint(dst)}, {', '.join(offsets)});")
        else:
            self.line(b.adjoint_emit([names.value(dst), *self.call_args(op)], [names.adjoint(dst), *grads],
                                     names.adjoint(dst), op.template) + ";")
        self.clear(dst)

    def call_args(self, op) -> list:
        if self.in_lanes or not isinstance(op, ir.Call):
            return [ref(a) for a in op.args]
        return block_args(op, self.lanes, ref)

    def clear(self, v):
        if v is not None and T.is_tile(v.type):
            if carries_gradient(v.type):
                self.line(f"tw::adj_tile_clear({names.adjoint(v)});")
            return
        if v is not None and not self.in_lanes and id(v) in self.lanes.varying and carries_gradient(v.type):
            self.line(f"tw::clear_lanes({names.adjoint(v)});")  # every lane's entry
            return
        super().clear(v)
