"""Prepared IR -> backward C++: a replay of the forward body, then its adjoint statements reversed.

Per DESIGN decision 4. The replay recomputes every value but leaves memory alone (stores, atomics
and prints are side effects of the forward launch, not repeated). The reverse pass walks the same
statements last to first; each builtin call becomes its ``tw::adj_<name>`` call, accumulating into
the adjoints of its arguments, then clears the adjoint of its result (a value written again in an
earlier loop iteration must start that iteration from zero). Adjoints of arrays are the gradient
arrays themselves, computed forward alongside the replay.

Loops are reversed iteration by iteration: iteration j is replayed from the loop-carried state it
started with (recovered by ``tw::rewind_t`` checkpoints) and then reversed, so dynamic loops get
exact gradients, not Warp's silent zeros.
"""
from __future__ import annotations

import copy
import dataclasses

from ..language import types as T
from ..autodiff.access import only_loaded_arrays, own_element_arrays
from ..autodiff.custom import replay_of
from ..autodiff.prepare import Prepared, carries_gradient
from ..errors import AutodiffError
from ..ir import nodes as ir
from ..language import names
from .cpp import cpp_type, expression, headers, ref
from .replay_needs import CHECKPOINT, DECLARATION, needed_values, prunable
from ..language import structs
from ..autodiff.prepare import prepare
from ..tiling.lanes import uses_tiles

#: checkpoints per level and levels of tw::rewind_t (linear cost up to CAP**LEVELS iterations)
REWIND_CAP, REWIND_LEVELS = 16, 3


def adj(v) -> str:
    return names.adjoint(v)


def adjoint_signature(f: ir.Function) -> str:
    """``adj_<symbol>(params, their adjoints, adj_ret)``: generated and @wp.func_grad adjoints share it."""
    params = [f"{cpp_type(p.type)} {names.value(p)}" for p in f.params]
    params += [f"{cpp_type(p.type)}& {adj(p)}" for p in f.params]
    if f.return_type is not None:
        params.append(f"const {cpp_type(f.return_type)}& adj_ret")
    return f"TW_FUNC void {names.adjoint_function(f.symbol)}({', '.join(params)})"


class AdjointPrinter:
    def __init__(self, prep: Prepared):
        self.prep = prep
        self.lines: list = []
        self.depth = 1
        self.loop_ids: dict = {}  # id(loop statement) -> its number (names of its helpers)
        self.scratch = 0
        # arrays each thread reads only at its own index: their gradients need no atomics
        self.own = own_element_arrays(prep.fn) if prep.fn.is_kernel else {}
        # SIMT kernels' arrays only read: their gradient scatters go through a per-thread cache
        # (tw::scatter_cache), one a gradient element type, slot k of the thread's deferred struct
        self.cached, self.caches = {}, []
        if prep.fn.is_kernel and self.index == "task":
            for p in only_loaded_arrays(prep.fn):
                element = cpp_type(p.type.dtype)
                if element not in self.caches:
                    self.caches.append(element)
                self.cached[p] = self.caches.index(element)
        self.needed = None  # ids of the values the reverse pass needs (None: replay everything)
        self.tags, self.owner = None, None  # while probing (replay_needs.py): line number -> what printed it

    def line(self, text: str):
        if self.tags is not None and self.owner is not None:
            self.tags[len(self.lines)] = self.owner
        self.lines.append("    " * self.depth + text)

    def owned(self, owner, emit, *args):
        """``emit(*args)`` with its lines tagged ``owner`` while probing."""
        outer, self.owner = self.owner, owner
        try:
            emit(*args)
        finally:
            self.owner = outer

    def find_needed(self):
        """Print the body once, tagged, on a copy of this printer, and keep the values the reverse
        pass needs (replay_needs.py): the printing that follows leaves out the rest of the replay."""
        probe = copy.copy(self)
        for name, value in vars(self).items():  # its own containers: this printer's stay untouched
            if isinstance(value, (list, dict, set)):
                setattr(probe, name, type(value)(value))
        probe.lines, probe.tags, probe.needed = [], {}, None
        probe.owned(DECLARATION, probe.declarations)
        probe.body()
        self.needed = needed_values(probe.lines, probe.tags, self.prep.values)

    def carried(self, s) -> tuple:
        """The loop's carried values its checkpoints keep: those the reverse pass needs."""
        return tuple(c for c in s.carried if self.needed is None or id(c) in self.needed)

    def replay_one(self, s):
        if not prunable(s):
            getattr(self, "replay_" + type(s).__name__)(s)
        elif self.needed is None or id(s.dst) in self.needed:
            self.owned(s, self.replay_Assign, s)

    def lv(self, k: int, what: str) -> str:
        """The name of loop k's counter (``n``) or checkpoints (``rewind``)."""
        return f"L{k}_{what}"

    # ---- the function ----------------------------------------------------------------------------

    def declarations(self, params=()):
        for v in self.prep.values:
            self.line(f"{cpp_type(v.type)} {names.value(v)}{{}};")
        for v in self.prep.values:
            self.line(f"{cpp_type(v.type)} {adj(v)}{{}};")
        for s in ir.walk(self.prep.body):
            if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.storage is not None:
                raise AutodiffError("wp.zeros() local arrays have no gradient yet: the backward pass cannot "
                                    "replay their stores (launch with enable_backward=False)", s.loc)
            if isinstance(s, (ir.For, ir.While)):
                k = self.loop_ids.setdefault(id(s), len(self.loop_ids))
                members = " ".join(f"{cpp_type(c.type)} m{i};" for i, c in enumerate(self.carried(s)))
                self.line(f"int64_t L{k}_n = 0;")
                if self.carried(s):
                    self.line(f"struct L{k}_state {{ {members} }};")
                    self.line(f"tw::rewind_t<L{k}_state, {REWIND_CAP}, {REWIND_LEVELS}> L{k}_rewind;")

    def body(self):
        self.replay(self.prep.body)
        if self.prep.result is not None:
            self.line(f"tw::adj_accum({adj(self.prep.result)}, adj_ret);")
        self.reverse(self.prep.body)

    def function(self) -> list:
        f = self.prep.fn
        self.find_needed()
        self.lines.append(f"// adjoint of func {f.name}")
        self.lines.append(adjoint_signature(f) + " {")
        self.declarations()
        self.body()
        self.lines += ["}", ""]
        return self.lines

    #: what the kernel body is called with: a task (SIMT kernels) or a block (kernels with tiles)
    index = "task"
    #: what a thread defers over the tasks or blocks it runs (a struct with flush())
    deferred = "tw::no_deferred"

    def prologue(self) -> list:
        return []

    def kernel(self, args_struct: str, body_name: str, param_names) -> list:
        f = self.prep.fn
        self.find_needed()
        self.lines.append(f"// backward of kernel {f.name}")
        index = f"TW_TASK task, {self.deferred}& tw_deferred" if self.index == "task" else f"int64_t block, {self.deferred}& tw_deferred"
        self.lines.append(f"TW_FORCEINLINE TW_FUNC void {body_name}(const {args_struct}& args, {index}) {{")
        for text in self.prologue():
            self.line(text)
        for p, name in zip(f.params, param_names):
            self.line(f"{cpp_type(p.type)} {names.value(p)} = args.{names.field(name)};")
            # gradient arrays come from the launch; other parameters' adjoints stay local (as Warp)
            init = f"args.{names.field('adj_' + name)}" if T.is_array(p.type) or T.is_struct(p.type) else "{}"
            self.line(f"{cpp_type(p.type)} {adj(p)} = {init};")
        self.declarations()
        self.body()
        self.lines += ["}", ""]
        return self.lines

    # ---- replay (forward, without side effects) ------------------------------------------------

    def replay(self, stmts):
        for s in stmts:
            self.replay_one(s)

    def replay_Assign(self, s: ir.Assign):
        op = s.op
        if isinstance(op, ir.Call) and op.builtin.side_effect:
            return
        if isinstance(op, ir.FuncCall):  # a @wp.func_replay replaces the callee here
            op = dataclasses.replace(op, func=replay_of(op.func))
        self.line(f"{names.value(s.dst)} = {expression(op)};" if s.dst is not None else f"{expression(op)};")
        if s.dst is not None and T.is_array(s.dst.type):  # the gradient array follows the array
            self.line(f"{adj(s.dst)} = {self.forward_adjoint(op)};")
        elif s.dst is not None and _holds_array(s.dst.type):  # so do the array fields of a struct
            self.line(f"tw::adj_take_arrays({adj(s.dst)}, {self.forward_adjoint(op)});")

    def forward_adjoint(self, op) -> str:
        if isinstance(op, ir.Copy):
            return adj(op.src)
        return expression(op, args=[adj(a) if T.is_array(a.type) or T.is_struct(a.type) else ref(a)
                                    for a in op.args])

    def replay_If(self, s: ir.If):
        self.branches(s, self.replay)

    def branches(self, s: ir.If, walk):
        """``if`` / ``else`` with each branch printed by ``walk`` (the replay or the reverse pass)."""
        self.line(f"if ({ref(s.cond)}) {{")
        self.nested(walk, s.body)
        if s.orelse:
            self.line("} else {")
            self.nested(walk, s.orelse)
        self.line("}")

    def nested(self, walk, stmts):
        self.depth += 1
        walk(stmts)
        self.depth -= 1

    def loop_parts(self, s):
        k = self.loop_ids[id(s)]
        ex = self.prep.loops[id(s)]
        flags = [f for f in (ex.cont, ex.brk, self.prep.done) if f is not None]
        reset = " ".join(f"{names.value(f)} = false;" for f in flags)
        ends = [f for f in (ex.brk, self.prep.done) if f is not None]
        return k, reset, ends

    def replay_For(self, s: ir.For):
        k, reset, ends = self.loop_parts(s)
        self.save_entry(s, k)
        i, stop, step = names.value(s.var), ref(s.stop), ref(s.step)
        test = (f"{i} {'<' if s.step.const > 0 else '>'} {stop}" if s.step.is_const
                else f"({step} > 0) ? ({i} < {stop}) : ({i} > {stop})")
        self.line(f"for ({i} = {ref(s.start)}; {test}; {i} += {step}) {{")
        self.iteration(s, k, reset, ends)

    def replay_While(self, s: ir.While):
        k, reset, ends = self.loop_parts(s)
        self.save_entry(s, k)
        self.line("while (true) {")
        self.nested(self.replay, s.test)
        self.line(f"    if (!{ref(s.cond)}) break;")
        self.iteration(s, k, reset, ends)

    def state(self, s, k) -> str:
        return f"L{k}_state{{{', '.join(self.carried_value(c) for c in self.carried(s))}}}"

    def carried_value(self, c) -> str:
        """A loop-carried value as a checkpoint stores it."""
        return names.value(c)

    def carried_restore(self, c, member: str) -> str:
        """The statement that sets a loop-carried value back from a checkpoint."""
        return f"{names.value(c)} = {member};"

    def save_entry(self, s, k):
        if self.carried(s):
            self.owned(CHECKPOINT, self.line, f"{self.lv(k, 'rewind')}.start({self.state(s, k)});")
        self.line(f"{self.lv(k, 'n')} = 0;")

    def iteration(self, s, k, reset, ends):
        if self.carried(s):
            self.owned(CHECKPOINT, self.line, f"    {self.lv(k, 'rewind')}.record({self.state(s, k)}, {self.lv(k, 'n')});")
        if reset:
            self.line(f"    {reset}")
        self.nested(self.replay, s.body)
        self.line(f"    ++{self.lv(k, 'n')};")
        if ends:
            self.line(f"    if ({' || '.join(names.value(f) for f in ends)}) break;")
        self.line("}")
        if self.carried(s):
            self.line(f"{self.lv(k, 'rewind')}.finish({self.lv(k, 'n')});")

    # ---- reverse ----------------------------------------------------------------------------------

    def reverse(self, stmts):
        for s in reversed(stmts):
            getattr(self, "reverse_" + type(s).__name__)(s)

    def reverse_Assign(self, s: ir.Assign):
        op, dst = s.op, s.dst
        if dst is not None and T.is_array(dst.type):
            return  # computed forward
        if isinstance(op, ir.Copy):
            if carries_gradient(dst.type):
                if not op.src.is_const:
                    self.line(f"tw::adj_accum({adj(op.src)}, {adj(dst)});")
                self.clear(dst)
            return
        if isinstance(op, ir.FuncCall):
            self.adjoint_call(s, lambda a, g, r: f"{names.adjoint_function(op.func.symbol)}({', '.join(a + g + r)})")
            return
        b = op.builtin
        if not b.side_effect and not carries_gradient(dst.type if dst is not None else None):
            return  # nothing flows back from an integer or boolean result
        if all(a.is_const for a in op.args):
            self.clear(dst)  # a constant: nothing to flow into
            return
        if not b.differentiable:
            if b.undefined_gradient:
                self.check_no_gradient(s)
            self.clear(dst)
            return
        scatter = (lambda a, g, r: f"tw::adj_load_cached(tw_deferred.g{self.cached[op.args[0]]}, {g[0]}, {r[0]}, "
                                     f"{', '.join(a[1:])})") if b.name == "load" and op.args[0] in self.cached else None
        if b.name == "load" and op.args[0] in self.own:  # atomics only if the launch shape differs
            n = self.own[op.args[0]]
            other = scatter or (lambda a, g, r: b.adjoint_emit(a, g, r[0], op.template))
            self.adjoint_call(s, lambda a, g, r: f"if (args.bounds.ndim == {n}) tw::adj_load_own({g[0]}, {r[0]}, "
                                                 f"{', '.join(a[1:])}); else {other(a, g, r)}")
        elif scatter is not None:
            self.adjoint_call(s, scatter)
        elif b.adjoint_emit is not None:
            self.adjoint_call(s, lambda a, g, r: b.adjoint_emit(a, g, r[0] if r else None, op.template))
        else:
            self.adjoint_call(s, lambda a, g, r: f"{b.adjoint}({', '.join(a + g + r)})")

    def adjoint_call(self, s: ir.Assign, make):
        """``make(args, adjoint args, [adjoint of the result])``: constants get scratch adjoints."""
        args = self.call_args(s.op)
        grads, scratch = [], []
        for a in s.op.args:
            if not a.is_const:
                grads.append(adj(a))
            else:
                self.scratch += 1
                name = f"adj_const{self.scratch}"
                scratch.append(f"{cpp_type(a.type)} {name}{{}};")
                grads.append(name)
        result = [adj(s.dst)] if s.dst is not None else []
        call = make(args, grads, result)
        if scratch:
            self.line("{ " + " ".join(scratch) + f" {call}; }}")
        else:
            self.line(f"{call};")
        self.clear(s.dst)

    def call_args(self, op) -> list:
        return [ref(a) for a in op.args]

    def clear(self, v):
        if v is not None and _holds_array(v.type):  # keep its gradient arrays, zero the rest
            self.line(f"tw::adj_clear({adj(v)});")
        elif v is not None and carries_gradient(v.type):
            self.line(f"{adj(v)} = {{}};")

    def check_no_gradient(self, s: ir.Assign):
        """A call without a correct gradient may only touch values no gradient flows through."""
        values = [a for a in s.op.args if isinstance(a, ir.Value) and not a.is_const and not T.is_array(a.type)]
        if s.dst is not None:
            values.append(s.dst)
        if any(carries_gradient(v.type) for v in values):
            loc = s.loc
            raise AutodiffError(f"wp.{s.op.builtin.name}() has no gradient; its float arguments would need one "
                                f"(differentiate around it, or launch with enable_backward=False)", loc)

    def reverse_If(self, s: ir.If):
        self.branches(s, self.reverse)

    def reverse_For(self, s):
        self.reverse_loop(s)

    def reverse_While(self, s):
        self.reverse_loop(s)

    def reverse_loop(self, s):
        k, reset, _ = self.loop_parts(s)
        self.line("{")
        self.depth += 1
        self.line(f"auto L{k}_step = [&](int64_t m) {{")
        self.depth += 1
        if isinstance(s, ir.For):
            self.line(f"{names.value(s.var)} = {ref(s.start)} + ({cpp_type(s.var.type)})m * {ref(s.step)};")
        if reset:
            self.line(reset)
        if isinstance(s, ir.While):
            self.replay(s.test)
        self.replay(s.body)
        self.depth -= 1
        self.line("};")
        carried = self.carried(s)
        if carried:
            sets = " ".join(self.carried_restore(c, f"st.m{i}") for i, c in enumerate(carried))
            self.owned(CHECKPOINT, self.line, f"auto L{k}_get = [&]() {{ return {self.state(s, k)}; }};")
            self.owned(CHECKPOINT, self.line, f"auto L{k}_set = [&](const L{k}_state& st) {{ {sets} }};")
        self.line(f"for (int64_t L{k}_j = {self.lv(k, 'n')} - 1; L{k}_j >= 0; --L{k}_j) {{")
        if carried:
            self.line(f"    {self.lv(k, 'rewind')}.restore(L{k}_j, L{k}_get, L{k}_set, L{k}_step);")
        self.line(f"    L{k}_step(L{k}_j);")
        self.nested(self.reverse, s.body)
        self.line("}")
        if carried:  # the carried values as they entered the loop, for what precedes it
            self.line(f"L{k}_set({self.lv(k, 'rewind')}.entry);")
        self.depth -= 1
        self.line("}")


def _holds_array(t) -> bool:
    return T.is_struct(t) and any(T.is_array(ft) or _holds_array(ft) for ft in t._tw_fields_.values())


def emit_backward_module(kernel: ir.Function, backward: ir.Function, block=None) -> str:
    """The backward translation unit: forward functions (for the replay), their adjoints, and the
    backward kernel over ``backward``'s parameters (the kernel's, then one adjoint per parameter);
    per block (``emit/block_adjoint.py``) for a kernel that uses tiles."""
    from .block import BlockShape
    from .custom import backward_plan, definitions

    if not uses_tiles(kernel):
        block = None
    elif block is None:
        block = BlockShape(256)
    out = ['#include "tilewarp.h"', "", "namespace {", ""]
    if block is not None:
        from .block import constants

        out += constants(block)
    plan = backward_plan(kernel)  # callees' forward (or replay) functions and adjoints
    callees = plan.functions
    out[1:1] = headers([*callees, kernel])
    out += structs.definitions([*callees, kernel])
    out += struct_accumulators([*callees, kernel])
    out += definitions(plan)
    args = names.args_struct(backward.symbol)
    out.append(f"struct {args} {{")
    out.append("    tw::launch_bounds_t bounds;")
    out += [f"    {cpp_type(p.type)} {names.field(n)};" for p, n in zip(backward.params, backward.param_names)]
    out += ["};", ""]
    body = names.body(backward.symbol)
    entry = f"{names.kernel_entry(backward.symbol)}, {args}, {body}"
    if block is None:
        printer = AdjointPrinter(prepare(kernel))
        if printer.caches:  # the thread's pending gradient adds, handed on after its last task
            printer.deferred = body + "_deferred"
            out += [f"struct {printer.deferred} {{",
                    *(f"    tw::scatter_cache<{t}> g{k};" for k, t in enumerate(printer.caches)),
                    f"    TW_FUNC void flush() {{ {' '.join(f'g{k}.flush();' for k in range(len(printer.caches)))} }}",
                    "};", ""]
        out += printer.kernel(args, body, kernel.param_names)
        return "\n".join(out + ["}  // namespace", "", f"TW_KERNEL_ENTRY({entry}, {printer.deferred})", ""])
    from .block_adjoint import BlockAdjointPrinter

    printer = BlockAdjointPrinter(prepare(kernel), block)
    if printer.combined:
        printer.deferred = body + "_deferred"
        out += printer.deferred_struct(printer.deferred)
    with names.block_kernel(block):
        out += printer.kernel(args, body, kernel.param_names)
    from .block import entry as block_entry

    return "\n".join(out + ["}  // namespace", "", block_entry(entry, block, printer.deferred), "",
                            f"// tilewarp: shared memory {printer.bytes} bytes", ""])


def struct_accumulators(functions) -> list:
    """``tw::adj_accum`` for each @wp.struct ``functions`` use (inside the anonymous namespace)."""
    out = ["}  // namespace", "", "namespace tw {"]
    for t in structs.in_dependency_order(_struct_types(functions)):
        fields = [structs.cpp_field(f) for f, ft in t._tw_fields_.items()
                  if carries_gradient(ft) and not T.is_array(ft)]
        body = " ".join(f"adj_accum(adj.{f}, g.{f});" for f in fields)
        out.append(f"TW_FUNC void adj_accum({t._cpp_}& adj, const {t._cpp_}& g) {{ {body} }}")
        out += _array_field_helpers(t)
    out += ["}  // namespace tw", "", "namespace {", ""]
    for t in structs.in_dependency_order(_struct_types(functions)):
        out += _gradient_array_helpers(t)
    return out


def _gradient_array_helpers(t) -> list:
    """``atomic_add`` and ``add`` on struct type ``t``, beside it (the array adjoints in
    native/runtime/array_adjoint.h find them by argument-dependent lookup): gradient arrays of
    structs accumulate field by field, as reads of struct arrays scatter into them."""
    s = t._cpp_
    fields = [structs.cpp_field(f) for f, ft in t._tw_fields_.items()
              if carries_gradient(ft) and not T.is_array(ft)]
    body = " ".join(f"tw::detail::atomic_accum(&p->{f}, g.{f});" for f in fields)
    return [f"TW_FUNC void atomic_add({s}* p, const {s}& g) {{ {body} }}",
            f"TW_FUNC {s} add({s} a, const {s}& b) {{ tw::adj_accum(a, b); return a; }}", ""]


def _array_field_helpers(t) -> list:
    """``adj_take_arrays`` (the replay sets an adjoint struct's gradient arrays) and ``adj_clear``
    (zero the accumulated fields, keep the arrays) for struct type ``t``; nested structs recurse."""
    take, zero = [], []
    for f, ft in t._tw_fields_.items():
        m = structs.cpp_field(f)
        if T.is_struct(ft):
            take.append(f"adj_take_arrays(adj.{m}, g.{m});")
            zero.append(f"adj_clear(adj.{m});")
        elif T.is_array(ft):
            take.append(f"adj.{m} = g.{m};")
        else:
            zero.append(f"adj.{m} = {{}};")
    return [f"TW_FUNC void adj_take_arrays({t._cpp_}& adj, const {t._cpp_}& g) {{ {' '.join(take)} }}",
            f"TW_FUNC void adj_clear({t._cpp_}& adj) {{ {' '.join(zero)} }}"]


def _struct_types(functions) -> list:
    types = []
    for fn in functions:
        types += [v.type.dtype if T.is_array(v.type) else v.type for v in (*fn.params, *fn.values)]
    return types


def backward_signature(kernel: ir.Function) -> ir.Function:
    """The backward kernel's IR signature: the kernel's parameters, then ``adj_<name>`` for each."""
    adj_params = [ir.Value(-p.id, p.type, "adj_" + n) for p, n in zip(kernel.params, kernel.param_names)]
    return ir.Function(name=kernel.name, symbol=kernel.symbol + "_bwd", params=[*kernel.params, *adj_params],
                       param_names=[*kernel.param_names, *("adj_" + n for n in kernel.param_names)],
                       body=kernel.body, is_kernel=True, loc=kernel.loc)
