"""IR -> IR for the reverse pass: structured exits and snapshots of overwritten values.

Two rewrites make every body reversible statement by statement:

* **Exits become flags.** ``break``, ``continue`` and ``return`` set a flag (and ``return v``
  writes the result value); what follows an exit point runs under ``if none_of(flags)``. After
  this only ``If``/``For``/``While`` remain, so the reverse of a block is its statements reversed.
  Each loop records its flags in :class:`LoopExits` (the continue flag is cleared before every
  iteration; the loop ends after one that set ``break`` or ``return``).
* **Reads of overwritten values read a snapshot.** A value written more than once (loop-carried,
  merged, the loop counter) may change between the statement that reads it and that statement's
  reverse, so the replay copies it into a fresh value right before the read. Per iteration of a
  replayed loop a snapshot is written once, which is all the reverse of that iteration needs.
  Inside a loop, such a value that the loop itself never writes is snapshotted once before the
  loop instead: a loop's iterations are replayed again during the reverse pass, after the
  enclosing block has moved the value on.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..language import types as T
from ..builtins.registry import Builtin
from ..ir import nodes as ir


def carries_gradient(t) -> bool:
    """Values of type ``t`` have adjoints that are accumulated (arrays' adjoints are not)."""
    if T.is_tile(t):
        return T.is_struct(t.dtype) or T.is_float(T.scalar_of(t.dtype))
    if isinstance(t, T.TupleType):
        return any(carries_gradient(e) for e in t.types)
    if T.is_struct(t):
        return True
    return T.is_float(T.scalar_of(t)) if (T.is_scalar(t) or T.is_composite(t)) else False


# !(a || b || ...) over exit flags (internal; never visible to users)
NONE_OF = Builtin("_none_of", lambda args, template: T.bool_, "", differentiable=False,
                  emit=lambda a, t: "!(" + " || ".join(a) + ")")


@dataclass(eq=False)
class LoopExits:
    cont: ir.Value | None = None  # set by `continue`: the rest of this iteration is skipped
    brk: ir.Value | None = None  # set by `break`: the loop ends after this iteration


@dataclass(eq=False)
class Prepared:
    """A function ready for the reverse pass: its rewritten body and what the rewrite introduced."""

    fn: ir.Function
    body: list
    values: list  # every value the adjoint declares (the function's and the new ones)
    result: ir.Value | None  # the value `return` writes (funcs with a result)
    done: ir.Value | None  # set by `return`
    loops: dict = field(default_factory=dict)  # id(For/While) -> LoopExits


class _Rewriter:
    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.values = list(fn.values)
        self.next_id = max([v.id for v in [*fn.values, *fn.params]] + [0]) + 1
        self.overwritten = _written_more_than_once(fn.body) | {v for v in fn.values if v.mutable}
        self.true = self.const(True)
        self.false = self.const(False)
        self.done = None
        self.result = None
        self.loops: dict = {}
        self.loop_stack: list = []
        self.hoisted: dict = {}  # value -> its snapshot taken before the innermost loop reading it

    def new(self, t, hint) -> ir.Value:
        v = ir.Value(self.next_id, t, hint)
        self.next_id += 1
        self.values.append(v)
        return v

    def const(self, c) -> ir.Value:
        v = ir.Value(self.next_id, T.bool_, const=c)
        self.next_id += 1
        return v

    # ---- snapshots ---------------------------------------------------------------------------

    def snap(self, v, out: list, loc):
        if not isinstance(v, ir.Value) or v.is_const or v not in self.overwritten:
            return v
        if v in self.hoisted:
            return self.hoisted[v]
        s = self.new(v.type, f"{v.hint}_at")
        out.append(ir.Assign(s, ir.Copy(v), loc))
        return s

    def snap_op(self, op, out, loc):
        if isinstance(op, ir.Call):
            return dataclasses.replace(op, args=tuple(self.snap(a, out, loc) for a in op.args))
        if isinstance(op, ir.FuncCall):
            return dataclasses.replace(op, args=tuple(self.snap(a, out, loc) for a in op.args))
        return op

    # ---- exits -------------------------------------------------------------------------------

    def flags_in_scope(self) -> list:
        flags = [self.done] if self.done is not None else []
        if self.loop_stack:
            ex = self.loop_stack[-1]
            flags += [f for f in (ex.cont, ex.brk) if f is not None]
        return flags

    def set_flag(self, flag, out, loc):
        out.append(ir.Assign(flag, ir.Copy(self.true), loc))

    def block(self, stmts) -> tuple:
        """``(rewritten statements, whether control may leave part-way)``."""
        out, may_exit = [], False
        for k, s in enumerate(stmts):
            exits = self.statement(s, out)
            if exits:
                rest, _ = self.block(stmts[k + 1:])
                if rest:
                    go_on = self.new(T.bool_, "go_on")
                    out.append(ir.Assign(go_on, ir.Call(NONE_OF, tuple(self.flags_in_scope())), s.loc))
                    out.append(ir.If(go_on, rest, [], (), s.loc))
                return out, True
            may_exit = may_exit or exits
        return out, may_exit

    def statement(self, s, out) -> bool:
        loc = getattr(s, "loc", None)
        if isinstance(s, ir.Assign):
            op = (ir.Copy(self.hoisted.get(s.op.src, s.op.src)) if isinstance(s.op, ir.Copy)
                  else self.snap_op(s.op, out, loc))
            out.append(dataclasses.replace(s, op=op))
            return False
        if isinstance(s, ir.If):
            cond = self.snap(s.cond, out, loc)
            body, a = self.block(s.body)
            orelse, b = self.block(s.orelse)
            out.append(dataclasses.replace(s, cond=cond, body=body, orelse=orelse))
            return a or b
        if isinstance(s, (ir.For, ir.While)):
            return self.loop(s, out, loc)
        if isinstance(s, ir.Return):
            if s.value is not None:
                if self.result is None:
                    self.result = self.new(s.value.type, "result")
                out.append(ir.Assign(self.result, ir.Copy(s.value), loc))
            if self.done is None:
                self.done = self.new(T.bool_, "returned")
            self.set_flag(self.done, out, loc)
            return True
        ex = self.loop_stack[-1]
        if isinstance(s, ir.Break):
            ex.brk = ex.brk or self.new(T.bool_, "broke")
            self.set_flag(ex.brk, out, loc)
        else:  # Continue
            ex.cont = ex.cont or self.new(T.bool_, "continued")
            self.set_flag(ex.cont, out, loc)
        return True

    def loop(self, s, out, loc) -> bool:
        ex = LoopExits()
        saved = dict(self.hoisted)
        written = _written_in([s])
        for v in _read_in([s]):
            if v in self.overwritten and v not in written and v not in self.hoisted:
                self.hoisted[v] = h = self.new(v.type, f"{v.hint}_in")
                out.append(ir.Assign(h, ir.Copy(v), loc))
        self.loop_stack.append(ex)
        try:
            body, _ = self.block(s.body)
            if isinstance(s, ir.For):
                start, step = self.snap(s.start, out, loc), self.snap(s.step, out, loc)
                stop = self.snap(s.stop, out, loc)
                new = dataclasses.replace(s, start=start, stop=stop, step=step, body=body)
            else:
                test, _ = self.block(s.test)
                new = dataclasses.replace(s, test=test, body=body)
        finally:
            self.loop_stack.pop()
            self.hoisted = saved
        self.loops[id(new)] = ex
        out.append(new)
        return _contains_return(s.body)  # a `return` inside ends the enclosing blocks too


def _contains_return(stmts) -> bool:
    return any(isinstance(s, ir.Return) for s in ir.walk(stmts))


def _written_in(stmts) -> set:
    out = set()
    for s in ir.walk(stmts):
        if isinstance(s, ir.Assign) and s.dst is not None:
            out.add(s.dst)
        elif isinstance(s, ir.For):
            out.add(s.var)
    return out


def _read_in(stmts) -> list:
    """Values read inside ``stmts`` (in first-read order, each once)."""
    seen = {}
    for s in ir.walk(stmts):
        if isinstance(s, ir.Assign):
            args = (s.op.src,) if isinstance(s.op, ir.Copy) else s.op.args
        elif isinstance(s, ir.If):
            args = (s.cond,)
        elif isinstance(s, ir.For):
            args = (s.start, s.stop, s.step)
        elif isinstance(s, ir.While):
            args = (s.cond,)
        elif isinstance(s, ir.Return):
            args = (s.value,)
        else:
            args = ()
        for a in args:
            if isinstance(a, ir.Value) and not a.is_const:
                seen.setdefault(a, None)
    return list(seen)


def _written_more_than_once(stmts) -> set:
    seen, twice = set(), set()
    for s in ir.walk(stmts):
        if isinstance(s, ir.Assign) and s.dst is not None:
            (twice if s.dst in seen else seen).add(s.dst)
        elif isinstance(s, ir.For):
            twice.add(s.var)
    return twice


def prepare(fn: ir.Function) -> Prepared:
    rw = _Rewriter(fn)
    body, _ = rw.block(fn.body)
    return Prepared(fn, body, rw.values, rw.result, rw.done, rw.loops)


def without_side_effects(fn: ir.Function) -> ir.Function:
    """What a backward pass replays for a call of ``fn``: ``fn`` without its stores, atomics and
    prints (nor those of the functions it calls), so replaying never writes memory twice."""
    pure = getattr(fn, "_tw_pure", None)
    if pure is None:
        if not _writes_memory(fn):
            pure = fn
        else:
            pure = dataclasses.replace(fn, symbol=fn.symbol + "_replay", body=_strip(fn.body),
                                       callees=[without_side_effects(c) for c in fn.callees])
            pure._tw_pure = pure
        fn._tw_pure = pure
    return pure


def _writes_memory(fn: ir.Function) -> bool:
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.side_effect:
            return True
    return any(_writes_memory(c) for c in fn.callees)


def _strip(stmts) -> list:
    out = []
    for s in stmts:
        if isinstance(s, ir.Assign):
            if isinstance(s.op, ir.Call) and s.op.builtin.side_effect:
                continue
            if isinstance(s.op, ir.FuncCall):
                s = dataclasses.replace(s, op=dataclasses.replace(s.op, func=without_side_effects(s.op.func)))
        elif isinstance(s, ir.If):
            s = dataclasses.replace(s, body=_strip(s.body), orelse=_strip(s.orelse))
        elif isinstance(s, ir.For):
            s = dataclasses.replace(s, body=_strip(s.body))
        elif isinstance(s, ir.While):
            s = dataclasses.replace(s, test=_strip(s.test), body=_strip(s.body))
        out.append(s)
    return out
