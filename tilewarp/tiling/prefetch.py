"""Software pipelining of a GEMM's K loop: the tile loads of later iterations in flight while this
one multiplies (issue 11).

The chapter's GEMM loads its operand tiles at the top of each iteration and multiplies them; as
written, every iteration waits for a full memory latency. For a ``for`` loop whose body starts with
pure scalar statements and shared-memory ``tile_load``s (the offsets, then the loads) and goes on to
a ``tile_matmul``, each loaded tile gets ``stages`` buffers: before the loop the loads of the first
``stages - 1`` iterations are issued (cp.async on CUDA); each iteration waits only for its own, and
at its end issues those of the iteration ``stages - 1`` ahead into the buffer the previous iteration
used (emit/cpp.py prints it; native/tile/memory.h ``tile_prefetch`` / ``async_commit`` /
``async_wait``). The scalar statements are pure, so the emitter runs them once as written and once
with the loop variable moved ahead (for the loads). A wgmma product of two loaded tiles is left
running (``asynchronous``): the next iteration's product waits for it, and only then are its
buffers refilled; other tensor-core products of them skip the syncs around them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import nodes as ir
from ..language import types as T

# shared memory the prefetched buffers of one loop may take: 96 KB fits any GPU we target (sm_86/89
# allow 99 KB a block) and two such blocks an H100 SM; a block that holds an SM alone (wgmma
# accumulators of over 64 registers a thread) may take up to 200 KB where its device allows
# (H100, 128 x 256 x 64 tiles: 318 TFLOP/s with 2 stages, 482 with 4)
BUDGET, BUDGET_ALONE = 96 * 1024, 200 * 1024


@dataclass
class Pipelined:
    stages: int
    scalars: list  # the pure scalar statements before the last load, in order
    loads: list    # the tile_load statements
    asynchronous: set = field(default_factory=set)  # ids of the products of the loads (wgmma: left running)
    affine: bool = False  # every load's array fixed and offsets affine in the loop variable


def pure_scalar(s) -> bool:
    """Scalar arithmetic: no tile, no side effect, no call of a user function, no control flow."""
    return isinstance(s, ir.Assign) and not (s.dst is not None and T.is_tile(s.dst.type)) and (
        isinstance(s.op, ir.Copy) or (isinstance(s.op, ir.Call) and not s.op.builtin.side_effect
                                      and not any(T.is_tile(a.type) for a in s.op.args)))


def _writes_arrays(s) -> bool:
    """A store, an atomic, or a user function given an array: it may write what a later load reads."""
    if not (isinstance(s, ir.Assign) and isinstance(s.op, (ir.Call, ir.FuncCall))):
        return False
    effect = isinstance(s.op, ir.FuncCall) or s.op.builtin.side_effect
    return effect and any(T.is_array(a.type) for a in s.op.args)


def candidates(fn: ir.Function, shared: set, fixed: set) -> dict:
    """id(loop) -> Pipelined (stages still 0) for the loops whose loads can run ahead. ``shared``: the
    shared tiles; ``fixed``: tiles whose memory other tiles alias (views, products written in place)."""
    out = {}
    outside_uses = _uses_outside_loops(fn)
    for loop in ir.walk(fn.body):
        if not (isinstance(loop, ir.For) and loop.step.is_const and loop.step.const > 0):
            continue
        body = loop.body
        if any(isinstance(x, (ir.Break, ir.Continue, ir.Return)) or _writes_arrays(x) for x in ir.walk(body)):
            continue  # (a load issued ahead would miss what this iteration writes)
        if not any(isinstance(x, ir.Assign) and isinstance(x.op, ir.Call) and x.op.builtin.name == "tile_matmul"
                   for x in ir.walk(body)):
            continue
        loads = [k for k, s in enumerate(body) if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call)
                 and s.op.builtin.name == "tile_load" and s.dst is not None and id(s.dst) in shared]
        if not loads:
            continue
        head = body[:loads[-1] + 1]
        scalars = [s for k, s in enumerate(head) if k not in loads]
        if not all(pure_scalar(s) for s in scalars):
            continue
        assigned = {id(x.dst) for x in ir.walk(body) if isinstance(x, ir.Assign) and x.dst is not None}
        known = {id(loop.var)} | {id(s.dst) for s in scalars}
        # what the head reads: the loop variable, its own results, or values the loop never changes
        if not all(id(a) in known or id(a) not in assigned for s in head for a in ir.operands(s)
                   if isinstance(a, ir.Value) and not T.is_tile(a.type)):
            continue
        tiles = [body[k].dst for k in loads]
        if any(id(t) in fixed or getattr(t, "mutable", False) or id(t) in outside_uses.get(id(loop), ())
               for t in tiles):
            continue
        pipe = Pipelined(0, scalars, [body[k] for k in loads])
        pipe.affine = _affine_loads(pipe, loop, assigned)
        out[id(loop)] = pipe
    return out


_LINEAR = {"add", "sub", "neg", "pos"}


def _affine_loads(pipe: Pipelined, loop: ir.For, assigned: set) -> bool:
    """Whether each load reads an array the loop does not change at offsets affine in the loop
    variable (sums, differences and multiples by loop-invariant values of it). Then the boxes of all
    iterations lie between those of the first and the last, and their 16-byte alignment repeats
    from the second on: three probes decide for the whole loop (emit/cpp.py)."""
    defined = {id(x.dst): x for x in pipe.scalars}

    def degree(v) -> int | None:  # 0: invariant, 1: affine, None: neither
        if v is loop.var:
            return 1
        if id(v) not in assigned:
            return 0
        x = defined.get(id(v))
        if x is None:
            return None
        if isinstance(x.op, ir.Copy):
            return degree(x.op.src)
        name, args = x.op.builtin.name, x.op.args
        ds = [degree(a) for a in args]
        if None in ds or not all(T.is_int(a.type) for a in args):
            return None
        if name in _LINEAR:
            return max(ds, default=0)
        if name == "mul" and len(ds) == 2 and min(ds) == 0:
            return max(ds)
        return None

    for x in pipe.loads:
        array, *offsets = x.op.args
        if id(array) in assigned or type(array.type) is not T.ArrayType or not offsets:
            return False
        if any(not T.is_int(o.type) or degree(o) is None for o in offsets):
            return False
    return True


def _uses_outside_loops(fn: ir.Function) -> dict:
    """id(loop) -> ids of the values read anywhere outside that loop's body."""
    loops = [x for x in ir.walk(fn.body) if isinstance(x, ir.For)]
    out = {}
    for loop in loops:
        inside = {id(x) for x in ir.walk(loop.body)}
        read = set()
        for x in ir.walk(fn.body):
            if id(x) in inside:
                continue
            if isinstance(x, ir.Assign):
                read.update(id(a) for a in ir.operands(x) if isinstance(a, ir.Value))
            for attr in ("cond", "value", "stop", "start", "step"):
                v = getattr(x, attr, None)
                if isinstance(v, ir.Value):
                    read.add(id(v))
        out[id(loop)] = read
    return out


def stages_for(stage_bytes: int, alone: bool, shared_limit: int = 0) -> int:
    """Buffers per loaded tile: up to four where they fit the budget, at least two, else no
    prefetch (1). ``shared_limit``: the CUDA device's shared memory a block (0: not known)."""
    budget = BUDGET
    if alone and shared_limit:
        budget = max(BUDGET, min(BUDGET_ALONE, shared_limit - 16 * 1024))  # room for the other tiles
    for stages in (4, 3, 2):
        if stages * stage_bytes <= budget:
            return stages
    return 1


def asynchronous(pipe: Pipelined, loop: ir.For, mma: set) -> set:
    """The tensor-core products (``mma``: ids of register accumulator tiles) of two of the loop's
    loaded tiles that follow the last load with only scalar statements between (tw::async_wait has
    just published their operands), where the loop does nothing else with those tiles (nothing may
    write them while a product still reads them): a wgmma product is left running, the others skip
    the block syncs around them (the refill of their buffers syncs first)."""
    loaded = {id(x.dst) for x in pipe.loads}
    for s in ir.walk(loop.body):
        operands = 2 if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tile_matmul" \
            else 0  # a product may read them as a and b
        if isinstance(s, ir.Assign) and any(id(a) in loaded for a in ir.operands(s)[operands:]):
            return set()
    last = max(k for k, s in enumerate(loop.body) if id(s) in {id(x) for x in pipe.loads})
    out = set()
    for s in loop.body[last + 1:]:
        if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tile_matmul" \
                and id(s.dst) in mma and id(s.op.args[0]) in loaded and id(s.op.args[1]) in loaded:
            out.add(id(s))
        elif not pure_scalar(s):
            break
    return out
