"""Which values differ between the lanes of a block, and which statements each lane runs itself.

In a kernel that uses tiles, a block's lanes run the same statements, but not always on the same
values: ``wp.tid()`` is the lane's own thread index in a ``wp.launch`` (one coordinate of it may be
the block's, the same for every lane), ``untile`` hands each lane its own element, an atomic
returns each lane its own old value. A value computed only from values the same in every lane is
*uniform*; any other is *varying*.

Statements are then sorted into two kinds (``docs/ARCHITECTURE.md``, "Tiles"):
* *block* statements run once for the block: every tile operation, and arithmetic on uniform
  values. A tile operation sees one value per operand: a per-lane operand (an offset computed
  from the lane's thread index, say) is read from lane 0 on the CPU and from each thread on CUDA,
  so, as in Warp, the lanes must agree on it;
* *lane* statements run once per lane: anything with a varying operand or result, and side
  effects (stores, atomics, prints), which each of Warp's GPU threads performs.
A loop or ``if`` that contains a tile operation is a block statement and must have uniform
bounds and conditions (otherwise lanes would disagree on whether the tile operation runs); one
that contains only lane work runs whole inside the lane section, and every value it updates is
per lane.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..language import types as T
from ..builtins.tile import ELEMENT
from ..errors import KernelTypeError
from ..ir import nodes as ir


@dataclass
class Lanes:
    varying: set = field(default_factory=set)  # ids of values that differ between lanes
    lane: set = field(default_factory=set)     # id(statement) of statements each lane runs
    once: set = field(default_factory=set)     # id(statement) of stores every lane would repeat alike

#: stores that every lane would make alike when their operands are uniform: made once per block, so
#: the backward pass takes the stored value's gradient once (not once per lane)
IDEMPOTENT = {"store", "_tile_element_set"}


def is_tile_op(op) -> bool:
    return isinstance(op, ir.Call) and (op.builtin.name.startswith("tile") or op.builtin.name in ("untile",)) \
        and op.builtin.name not in ELEMENT


def uses_tiles(fn: ir.Function) -> bool:
    return any(isinstance(s, ir.Assign) and (is_tile_op(s.op) or (s.dst is not None and T.is_tile(s.dst.type))
                                             or (isinstance(s.op, ir.Call) and s.op.builtin.name in ELEMENT))
               for s in ir.walk(fn.body))


def _side_effects(func: ir.Function, seen=None) -> bool:
    seen = seen if seen is not None else set()
    if id(func) in seen:
        return False
    seen.add(id(func))
    for s in ir.walk(func.body):
        if isinstance(s, ir.Assign):
            if isinstance(s.op, ir.Call) and s.op.builtin.side_effect:
                return True
            if isinstance(s.op, ir.FuncCall) and _side_effects(s.op.func, seen):
                return True
    return False


class _Analysis:
    def __init__(self, fn: ir.Function, uniform_tids: frozenset):
        self.fn = fn
        self.uniform_tids = uniform_tids
        self.out = Lanes()
        self.changed = True

    def varies(self, v) -> bool:
        return isinstance(v, ir.Value) and id(v) in self.out.varying

    def make_varying(self, v):
        if v is not None and id(v) not in self.out.varying and not T.is_tile(v.type):
            self.out.varying.add(id(v))
            self.changed = True

    def make_lane(self, s):
        if id(s) not in self.out.lane:
            self.out.lane.add(id(s))
            self.changed = True

    def run(self) -> Lanes:
        while self.changed:
            self.changed = False
            self.block(self.fn.body, divergent=False)
        return self.out

    # ---- one pass; repeated until nothing changes (loops carry values around) ---------------------

    def block(self, stmts, divergent):
        for s in stmts:
            getattr(self, "stmt_" + type(s).__name__)(s, divergent)

    def stmt_Assign(self, s: ir.Assign, divergent):
        op, dst = s.op, s.dst
        if isinstance(op, ir.Copy):
            if self.varies(op.src) or divergent:
                self.make_varying(dst)
        elif isinstance(op, ir.FuncCall):
            if divergent or any(map(self.varies, op.args)) or _side_effects(op.func):
                self.make_varying(dst)
                self.make_lane(s)
        else:
            name = op.builtin.name
            if name == "tid":
                if tuple(op.template) not in self.uniform_tids:
                    self.make_varying(dst)
            elif name == "untile":  # a block statement handing each lane its element
                self.make_varying(dst)
                return
            elif is_tile_op(op) or T.is_tile(getattr(dst, "type", None)):
                return  # checked by classify(): tile operations run once per block
            elif op.builtin.side_effect or divergent or any(map(self.varies, op.args)):
                self.make_varying(dst)
        if isinstance(op, ir.Call) and op.builtin.name in IDEMPOTENT and not divergent \
                and not any(map(self.varies, op.args)):
            if id(s) in self.out.lane:
                self.out.lane.discard(id(s))
                self.changed = True
            self.out.once.add(id(s))
            return
        self.out.once.discard(id(s))
        if dst is not None and self.varies(dst) or (isinstance(op, ir.Call) and op.builtin.side_effect) \
                or (isinstance(op, ir.FuncCall) and _side_effects(op.func)):
            self.make_lane(s)

    def stmt_If(self, s: ir.If, divergent):
        inner = divergent or self.varies(s.cond)
        self.block(s.body, inner)
        self.block(s.orelse, inner)
        if inner or self._lane_only(s):
            for m in s.merged:
                self.make_varying(m)
            self.make_lane(s)

    def stmt_For(self, s: ir.For, divergent):
        inner = divergent or any(map(self.varies, (s.start, s.stop, s.step))) or self._divergent_exit(s)
        if inner:
            self.make_varying(s.var)
        self.block(s.body, inner)
        self._loop_end(s, inner)

    def stmt_While(self, s: ir.While, divergent):
        self.block(s.test, divergent)  # decides whether the condition varies
        inner = divergent or self.varies(s.cond) or self._divergent_exit(s)
        self.block(s.test, inner)
        self.block(s.body, inner)
        self._loop_end(s, inner)

    def _loop_end(self, s, inner):
        if inner or self._lane_only(s):
            for c in s.carried:
                self.make_varying(c)
            for st in ir.walk(s.body):
                if isinstance(st, ir.Assign) and st.dst is not None and st.dst.mutable:
                    self.make_varying(st.dst)
            if inner or not _uniform_trip(s):
                self.make_lane(s)
            # else the loop runs once per block, its lane work in lane sections inside it: every
            # lane takes the same iterations, and the lanes' work of one iteration sits side by side
            # (the CPU vectorises across lanes; an N-body's inner loop over a tile of stars ran
            # ~4x faster than each lane looping over the stars alone)

    def _lane_only(self, s) -> bool:
        """A control statement with lane work and no tile operation runs whole inside a lane section."""
        inner = [x for x in ir.walk(s.body if not isinstance(s, ir.If) else s.body + s.orelse)]
        if isinstance(s, ir.While):
            inner += list(ir.walk(s.test))
        if any(isinstance(x, ir.Assign) and (is_tile_op(x.op) or T.is_tile(getattr(x.dst, "type", None)))
               for x in inner):
            return False
        return any(id(x) in self.out.lane for x in inner)

    def _divergent_exit(self, loop) -> bool:
        """A ``break``/``continue`` of this loop under a varying condition."""
        def scan(stmts, under_varying):
            for x in stmts:
                if isinstance(x, (ir.Break, ir.Continue)) and under_varying:
                    return True
                if isinstance(x, ir.If) and (scan(x.body, under_varying or self.varies(x.cond))
                                             or scan(x.orelse, under_varying or self.varies(x.cond))):
                    return True
            return False
        return scan(loop.body, False)

    def stmt_Break(self, s, divergent):
        pass

    stmt_Continue = stmt_Break

    def stmt_Return(self, s, divergent):
        pass


def _uniform_trip(loop) -> bool:
    """A ``for`` whose body never leaves early (no break, continue or return, which inside a lane
    section would leave the lane loop instead): with uniform bounds, every lane runs it alike."""
    return isinstance(loop, ir.For) and not any(isinstance(x, (ir.Break, ir.Continue, ir.Return))
                                                for x in ir.walk(loop.body))


def analyse(fn: ir.Function, uniform_tids: frozenset) -> Lanes:
    """Varying values and lane statements of kernel ``fn``; raises (at the user's line) where a tile
    operation would run in lanes that disagree."""
    lanes = _Analysis(fn, uniform_tids).run()
    _check(fn.body, lanes, divergent_loc=None)
    return lanes


def _check(stmts, lanes: Lanes, divergent_loc):
    for s in stmts:
        lane = id(s) in lanes.lane
        if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and (is_tile_op(s.op)):
            name = s.op.builtin.name
            if divergent_loc is not None:
                raise KernelTypeError(f"{name}() runs inside control flow that differs between the lanes of a "
                                      f"block (line {divergent_loc.line}): every lane must reach a tile operation",
                                      s.loc)
        elif isinstance(s, ir.Return) and lane:
            pass
        elif isinstance(s, ir.If):
            inner = divergent_loc or (s.loc if id(s.cond) in lanes.varying else None)
            _check(s.body, lanes, inner)
            _check(s.orelse, lanes, inner)
        elif isinstance(s, (ir.For, ir.While)):
            varying = (id(s.var) in lanes.varying) if isinstance(s, ir.For) else id(s.cond) in lanes.varying
            inner = divergent_loc or (s.loc if varying else None)
            if isinstance(s, ir.While):
                _check(s.test, lanes, inner)
            _check(s.body, lanes, inner)
