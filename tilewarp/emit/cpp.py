"""Typed IR -> C++ source. One emitter: the text is the same for CUDA and the host."""
from __future__ import annotations

import math

import numpy as np

from .. import config
from ..language import structs
from ..language import types as T
from ..builtins.array import LOCATED, emit_located
from ..ir import nodes as ir
from ..language import names
from ..language.names import MATHDX_MARK
from ..tiling.combine import combined_adds, combined_atomics, folded_sums, is_call
from ..tiling.streaming import streams_reads
from .block import (LaneGrouping, block_analysis, block_args, declare, deferred_struct, into_expression, loads_in_flight,
                    prologue, blocks_per_sm, pack_factor)
from .block import constants as block_constants
from .block import localise_lane_values, soa_lane_values
from .block import entry as block_entry
from ..tiling.lanes import uses_tiles


def emit_module(kernel: ir.Function, sites=None, block=None, mathdx: bool = False, shared_limit: int = 0) -> str:
    """The whole translation unit of one kernel: its functions, argument struct, body, entry.

    With ``sites`` (an ``emit.sites.SiteTable``, debug builds) every checked array access and
    ``assert`` carries its site number, and the table records what each number means. A kernel
    that uses tiles is emitted per block (``emit/block.py``) for ``block`` (a ``BlockShape``)."""
    from .block import BlockShape
    from .custom import definitions, forward_plan

    if block is None and uses_tiles(kernel):
        block = BlockShape(256)
    elif block is not None and not uses_tiles(kernel):
        block = None
    out = ['#include "tilewarp.h"', "", "namespace {", ""]
    printer = _Printer(kernel, sites, block, mathdx and block is not None, shared_limit)
    if printer.mathdx:  # cuBLASDx's headers only where asked for (compile/nvrtc.py adds their paths)
        out[1:1] = ['#include "tile/dx.h"', MATHDX_MARK]
    if block is not None:
        if sites is None and streams_reads(kernel, block.block_dim):  # ld.global.cs (tiling/streaming.py)
            out[1:1] = ["namespace tw::detail {", "template <> struct stream_reads<0> {",
                        "    static constexpr bool value = true;", "};", "}  // namespace tw::detail"]
        pack = pack_factor(kernel, printer.storage, printer.lanes, block, bool(printer.combined) or printer.mathdx)
        if pack > 1:  # before the headers, which read it (native/tile/tile.h); CUDA only
            out[:0] = ["#ifdef __CUDACC__", f"#define TW_PACK {pack}", "#endif"]
        out += block_constants(block, blocks_per_sm(kernel, printer.storage, block.threads), pack)
    plan = forward_plan(kernel)  # the callees, and the adjoints wp.grad(f) calls
    at = out.index('#include "tilewarp.h"') + 1  # after it: the CPU's PCH must come first
    out[at:at] = headers([*plan.functions, kernel])
    out += structs.definitions([*plan.functions, kernel])  # @wp.struct types, each after those it contains
    if plan.adjoints:
        from .adjoint import struct_accumulators

        out += struct_accumulators([*plan.functions, kernel])
    out += definitions(plan, sites)
    with names.block_kernel(block):
        body = printer.kernel()
    if block is not None:
        body = soa_lane_values(localise_lane_values(body, printer.fn, printer.lanes), printer.fn, printer.lanes)
    out += body
    entry = f"{names.kernel_entry(kernel.symbol)}, {names.args_struct(kernel.symbol)}, {names.body(kernel.symbol)}"
    out += ["}  // namespace", ""]
    if block is not None:
        out += [block_entry(entry, block, printer.deferred), "",
                f"// tilewarp: shared memory {printer.storage.bytes} bytes",
                f"// tilewarp: combined atomics {len(printer.combined)}",
                f"// tilewarp: tile blocks per CUDA block {pack}", ""]
    else:
        small = "_SMALL" if small_body(kernel) else ""
        out += [f"TW_KERNEL_ENTRY{small}({entry}, {printer.deferred})", ""]
    return "\n".join(out)


SMALL_BODY = 24  # statements: where a task's loop overhead is a large share of its work


def small_body(fn, budget: int = SMALL_BODY) -> bool:
    """True where ``fn`` (with the functions it calls) is a few straight-line statements: its CPU
    entry also gets a one-dimensional loop of its own (native/core/target.h TW_KERNEL_ENTRY_SMALL),
    worth inlining the body twice only when the body is small."""
    count = 0
    for s in ir.walk(fn.body):
        if isinstance(s, (ir.For, ir.While)):
            return False
        if isinstance(s, ir.Assign):
            count += 1
            if isinstance(s.op, ir.FuncCall):
                if not small_body(s.op.func, budget - count):
                    return False
                count += sum(1 for _ in ir.walk(s.op.func.body))
        if count > budget:
            return False
    return True


def headers(functions) -> list:
    """``#include`` lines of the native headers beyond ``tilewarp.h`` the IR ``functions`` need: those
    of the builtins they call (``Builtin.header``) and of the native structs their values have."""
    found = set()

    def visit(t):  # native structs inside @wp.struct fields, arrays and tuples too
        t = t.dtype if T.is_array(t) else t
        if isinstance(t, T.TupleType):
            for u in t.types:
                visit(u)
        elif T.is_struct(t):
            found.add(getattr(t, "_tw_header_", None))
            for u in t._tw_fields_.values():
                visit(u)

    for fn in functions:
        for v in (*fn.params, *fn.values):
            visit(v.type)
        for s in ir.walk(fn.body):
            if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call):
                found.add(s.op.builtin.header)
    found.discard(None)
    return [f'#include "{h}"' for h in sorted(found)]


def cpp_type(t) -> str:
    return "void" if t is None else t._cpp_


def literal(v: ir.Value) -> str:
    t, c = v.type, v.const
    if t is T.bool_:
        return "true" if c else "false"
    if T.is_float(t):
        narrow = t in T.f16_types  # float16, bfloat16: a float literal, converted
        cpp = "float" if narrow else t._cpp_
        if t is not T.float64:  # a literal beyond float's range is inf, as in Warp
            with np.errstate(over="ignore"):
                c = float(np.float32(c))
        if math.isnan(c):
            text = f"tw::nan<{cpp}>()"
        elif math.isinf(c):
            text = f"{'-' if c < 0 else ''}tw::inf<{cpp}>()"
        else:
            text = repr(float(np.float32(c))) if t is not T.float64 else repr(float(c))
            text += "f" if t is not T.float64 else ""
        text = f"({text})" if text.startswith("-") else text
        return f"tw::cast<{t._cpp_}>({text})" if narrow else text
    suffix = {T.int64: "ll", T.uint32: "u", T.uint64: "ull"}.get(t)
    bits = 8 * t._size_  # wrap into the type's range (x = 3000000000 is an int32, as in Warp)
    c = c % (1 << bits) - ((1 << bits) if t._kind_ == "int" and c % (1 << bits) >= 1 << (bits - 1) else 0)
    if t is T.int32 and c == -(2**31):
        return "(-2147483647 - 1)"
    if t is T.int64 and c == -(2**63):
        return "((int64_t)(-9223372036854775807ll - 1))"
    if t in (T.int64, T.uint64):  # int64_t is `long` on LP64 hosts: `1ll` would not deduce as int64_t
        return f"(({t._cpp_}){c}{suffix})"
    if suffix is not None or t is T.int32:
        text = f"{c}{suffix or ''}"
        return f"({text})" if c < 0 else text
    return f"(({t._cpp_}){c})"


def ref(v: ir.Value) -> str:
    return literal(v) if v.is_const else names.value(v)


def expression(op, located=None, args=None) -> str:
    """C++ for ``op``; ``located`` is ``(site, arg)`` for a checked access in a debug build;
    ``args`` replaces the arguments' C++ (the backward applies an op to gradient arrays)."""
    if isinstance(op, ir.Copy):
        return ref(op.src) if args is None else args[0]
    args = [ref(a) for a in op.args] if args is None else args
    if isinstance(op, ir.FuncCall):
        return f"{op.func.symbol}({', '.join(args)})"
    b = op.builtin
    if located is not None:
        return emit_located(b, *located, args, op.template)
    if b.emit is not None:
        return b.emit(args, op.template)
    return f"{b.cpp}({', '.join(args)})"


def constant_trip(loop: ir.For) -> int:
    """The iterations of a ``for`` with constant integer bounds (0 where they are not constant)."""
    start, stop, step = loop.start, loop.stop, loop.step
    if not (start.is_const and stop.is_const and step.is_const) or not all(
            isinstance(v.const, (int, np.integer)) and not isinstance(v.const, bool) for v in (start, stop, step)):
        return 0
    a, b, c = int(start.const), int(stop.const), int(step.const)
    return len(range(a, b, c)) if c else 0


class _Printer(LaneGrouping):
    def __init__(self, fn: ir.Function, sites=None, block=None, mathdx: bool = False, shared_limit: int = 0):
        self.fn = fn
        self.mathdx = mathdx  # tile_matmul through cuBLASDx (native/tile/dx.h)
        self.sites = sites
        self.lines: list = []
        self.depth = 1
        self.last_text = None
        self.block_shape, self.in_lanes = block, False
        self.combined, self.deferred = {}, "tw::no_deferred"
        self.folded, self.folded_away = {}, set()  # combined atomics of a tile_sum, and those sums
        self.no_wait = set()  # ids of tile_loads whose copies the next load waits for
        if block is not None:
            self.lanes, self.storage = block_analysis(fn, block, registers=not mathdx, shared_limit=shared_limit)
            # no shared tile loaded: no asynchronous copy is ever in flight for a load to wait for
            self.drain = any(is_call(s, "tile_load") and id(s.dst) in self.storage.shared for s in ir.walk(fn.body))
            if sites is None:  # debug builds keep every atomic where it is
                self.combined = combined_atomics(fn)
                self.folded = folded_sums(fn, self.combined, self.lanes.varying)
                self.folded_away = {id(f) for f in self.folded.values()}
        elif sites is None and fn.is_kernel:
            self.combined = combined_adds(fn)

    def line(self, text: str):
        self.lines.append("    " * self.depth + text)

    def declarations(self):
        for v in self.fn.values:
            if self.block_shape is not None:
                self.line(declare(v, names.value(v), self.lanes, self.storage))
            else:
                self.line(f"{cpp_type(v.type)} {names.value(v)}{{}};")
        for s in ir.walk(self.fn.body):  # buffers of wp.zeros local arrays, one per call site
            if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.storage is not None:
                self.line(s.op.builtin.storage(s.op.template) + ";")

    def function(self) -> list:
        f = self.fn
        params = ", ".join(f"{cpp_type(p.type)} {names.value(p)}" for p in f.params)
        self.lines.append(f"// func {f.name}")  # no file:line here: moving code must not change the key
        self.lines.append(f"TW_FUNC {cpp_type(f.return_type)} {f.symbol}({params}) {{")
        self.declarations()
        self.statements(f.body)
        if f.return_type is not None:
            self.line("return {};")
        self.lines += ["}", ""]
        return self.lines

    def kernel(self) -> list:
        f = self.fn
        args = names.args_struct(f.symbol)
        self.lines.append(f"struct {args} {{")
        self.line("tw::launch_bounds_t bounds;")
        for p, name in zip(f.params, f.param_names):
            self.line(f"{cpp_type(p.type)} {names.field(name)};")
        self.lines += ["};", ""]
        self.lines.append(f"// kernel {f.name}")
        if self.combined:
            self.deferred = names.body(f.symbol) + "_deferred"
            self.lines += deferred_struct(self.deferred, self.combined, self.folded, f)
        index = f"TW_TASK task, {self.deferred}& tw_deferred"
        if self.block_shape is not None:
            index = f"int64_t block, {self.deferred}& tw_deferred"
        self.lines.append(f"TW_FORCEINLINE TW_FUNC void {names.body(f.symbol)}(const {args}& args, {index}) {{")
        if self.block_shape is not None:
            for text in prologue(self.storage.bytes, self.block_shape, self.lane_returns):
                self.line(text)
        for p, name in zip(f.params, f.param_names):
            self.line(f"{cpp_type(p.type)} {names.value(p)} = args.{names.field(name)};")
        self.declarations()
        self.statements(f.body)
        self.lines += ["}", ""]
        return self.lines

    # ---- statements ----------------------------------------------------------------------------

    def statements(self, stmts):
        if self.block_shape is not None:
            self.no_wait |= loads_in_flight(stmts, self.storage)
            self.grouped(stmts, self.one)
            return
        for s in stmts:
            self.one(s)

    def one(self, s):
        loc = getattr(s, "loc", None)
        if loc is not None and loc.text and loc.text.strip() != self.last_text:
            self.last_text = loc.text.strip()
            self.line(f"// {self.last_text.rstrip(chr(92))}")  # a trailing '\' would continue the comment
        getattr(self, "stmt_" + type(s).__name__)(s)

    def block(self, head: str, stmts, tail: str = "}"):
        self.line(head)
        self.depth += 1
        self.statements(stmts)
        self.depth -= 1
        self.line(tail)

    def stmt_Assign(self, s: ir.Assign):
        if id(s) in self.folded_away:
            self.line("// (the sum is folded into the tile_atomic_add after it)")
            return
        if id(s) in self.combined and self.block_shape is None:
            args = [ref(a) for a in s.op.args]
            kind = "tw::atomic_add_combined" if s.op.builtin.name == "atomic_add" else "tw::atomic_sub_combined"
            self.line(f"{kind}(tw_deferred.c{self.combined[id(s)]}, tw::address({', '.join(args[:-1])}), {args[-1]});")
            return
        if id(s) in self.combined:
            args = block_args(s.op, self.lanes, ref)
            slot = f"tw_deferred.c{self.combined[id(s)]}"
            if id(s) in self.folded:
                total = self.folded[id(s)]
                args[1] = ref(total.op.args[0])
                self.line(f"tw::tile_atomic_add_folded<decltype({ref(total.dst)})>({slot}, {', '.join(args)});")
            else:
                self.line(f"tw::tile_atomic_add_combined({slot}, {', '.join(args)});")
            return
        if self.block_shape is not None and s.dst is not None and T.is_tile(s.dst.type):
            if isinstance(s.op, ir.Copy):
                self.line(f"tw::tile_copy({names.value(s.dst)}, {ref(s.op.src)});")
            elif id(s) in self.no_wait:
                self.line(into_expression(s, self.lanes, ref).replace("tw::tile_load(", "tw::tile_load<false>(", 1))
            elif not self.drain and s.op.builtin.name == "tile_load":
                self.line(into_expression(s, self.lanes, ref).replace("tw::tile_load(", "tw::tile_load<true, false>(", 1))
            elif self.mathdx and s.op.builtin.name == "tile_matmul":
                self.line(into_expression(s, self.lanes, ref).replace("tw::tile_matmul(", "tw::tile_matmul_dx(", 1))
            else:
                self.line(into_expression(s, self.lanes, ref))
            return
        if self.block_shape is not None and not self.in_lanes and isinstance(s.op, ir.Call) and \
                s.op.builtin.name.startswith(("tile", "untile")):
            self.line(into_expression(s, self.lanes, ref))
            return
        located = self.sites.locate(self.fn, s, LOCATED) if self.sites is not None else None
        expr = expression(s.op, located)
        self.line(f"{names.value(s.dst)} = {expr};" if s.dst is not None else f"{expr};")

    def stmt_If(self, s: ir.If):
        if s.orelse:
            self.block(f"if ({ref(s.cond)}) {{", s.body, "} else {")
            self.depth += 1
            self.statements(s.orelse)
            self.depth -= 1
            self.line("}")
        else:
            self.block(f"if ({ref(s.cond)}) {{", s.body)

    def stmt_For(self, s: ir.For):
        if self.block_shape is not None and id(s) in self.storage.pipelined:
            self.pipelined_for(s, self.storage.pipelined[id(s)])
            return
        i, stop, step = names.value(s.var), ref(s.stop), ref(s.step)
        if s.step.is_const:
            test = f"{i} {'<' if s.step.const > 0 else '>'} {stop}"
        else:
            test = f"({step} > 0) ? ({i} < {stop}) : ({i} > {stop})"
        if 0 < constant_trip(s) <= config.max_unroll:
            self.line("TW_UNROLL_ALL")
        self.block(f"for ({i} = {ref(s.start)}; {test}; {i} += {step}) {{", s.body)

    def pipelined_for(self, s: ir.For, pipe):
        """A K loop whose loads run ``pipe.stages - 1`` iterations ahead (tiling/prefetch.py): stage
        buffers used round robin; the prologue fills all but one, each iteration waits for its own
        and at its end fills the one the previous iteration used; the loop variable is moved ahead
        for a fill and put back after it. Where the loads' offsets are affine in the loop variable,
        the boxes of the first, second and last iterations decide whether every load fits its fast
        copy: then a copy of the loop issues them without tests, each box a fixed number of bytes
        further per unit of the loop variable (``tw::box_walk``, native/tile/memory.h)."""
        i, start, stop, step = names.value(s.var), ref(s.start), ref(s.stop), ref(s.step)

        def tested(x):  # a load that tests its box (and falls back to element copies)
            return into_expression(x, self.lanes, ref).replace("tw::tile_load(", "tw::tile_prefetch(", 1)

        # all of it inside `if (start < stop)`: on the path that skips the loop the accumulators keep
        # their first values, which must not meet wgmma's products before the drain (ptxas would
        # then wait for every product at once)
        self.line(f"{i} = {start};")
        self.line(f"if ({i} < {stop}) {{")
        self.depth += 1
        if pipe.affine:
            fits = f"tw_fits_{i}"
            self.line(f"bool {fits} = true;")
            for x in pipe.loads:
                self.line(f"tw::box_walk tw_walk_{names.value(x.dst)};")
            second = f"({start} + {step} < {stop} ? {start} + {step} : {start})"
            probes = (start, second, f"({start} + ({stop} - 1 - {start}) / {step} * {step})")
            for n, probe in enumerate(probes):
                self.line(f"{i} = {probe};")
                for x in pipe.scalars:
                    self.one(x)
                for x in pipe.loads:  # (prefetch.py: an array the loop keeps, then int offsets)
                    t, (arr, *offs) = names.value(x.dst), block_args(x.op, self.lanes, ref)
                    self.line(f"{fits} = {fits} && tw::tile_prefetch_fits({t}, {arr}, {', '.join(offs)});")
                    # where each box starts, and how far it moves per unit of the loop variable
                    if n == 0:
                        self.line(f"tw::walk_from(tw_walk_{t}, {t}, {arr}, {', '.join(offs)});")
                    elif n == 1:
                        self.line(f"tw::walk_by(tw_walk_{t}, {t}, {arr}, {i} - {start}, {', '.join(offs)});")
            self.line(f"if ({fits}) {{")
            self.depth += 1

            def walked(x):
                t, arr = names.value(x.dst), block_args(x.op, self.lanes, ref)[0]
                return f"tw::tile_prefetch_walk({t}, {arr}, tw_walk_{t}, {i} - {start});"

            self.pipelined_loop(s, pipe, walked)
            self.depth -= 1
            self.line("} else {")
            self.depth += 1
            self.pipelined_loop(s, pipe, tested)
            self.depth -= 1
            self.line("}")
        else:
            self.pipelined_loop(s, pipe, tested)
        self.depth -= 1
        self.line("}")

    def pipelined_loop(self, s: ir.For, pipe, prefetch):
        i, start, stop, step, n = names.value(s.var), ref(s.start), ref(s.stop), ref(s.step), pipe.stages
        use, fill = f"tw_use_{i}", f"tw_fill_{i}"
        loads = {id(x) for x in pipe.loads}

        def point(load, stage):  # the tile's buffer of `stage`
            t = load.dst
            stride = self.storage.buffers[id(t)][1]
            self.line(f"{names.value(t)}.data = ({t.type.dtype._cpp_}*)(tw_smem + {self.storage.offsets[id(t)]} + "
                      f"{stage} * {stride});")

        def issue(stage):  # the loads of iteration `i` into `stage`, once every lane is done with it
            self.line("tw::block_sync();")
            self.line(f"if ({i} < {stop}) {{")
            self.depth += 1
            for x in pipe.scalars:
                self.one(x)
            for x in pipe.loads:
                point(x, stage)
                self.line(prefetch(x))
            self.depth -= 1
            self.line("}")
            self.line("tw::async_commit();")

        self.line(f"int {use} = 0, {fill} = {n - 1};")
        for k in range(n - 1):
            self.line(f"{i} = {start} + {k} * {step};")
            issue(k)
        self.line(f"for ({i} = {start}; {i} < {stop}; {i} += {step}) {{")
        self.depth += 1
        last = max(k for k, x in enumerate(s.body) if id(x) in loads)
        for k, x in enumerate(s.body):
            if id(x) in loads:
                point(x, use)
            elif id(x) in pipe.asynchronous:  # operands just published; wgmma's left running
                self.line(into_expression(x, self.lanes, ref).replace("tw::tile_matmul(", "tw::tile_matmul<true>(", 1))
            else:
                self.statements([x])
            if k == last:
                # the proxy fence only where wgmma reads the loads (swizzled operands)
                proxy = "" if any(id(x.dst) in self.storage.swizzled for x in pipe.loads) else ", false"
                self.line(f"tw::async_wait<{n - 2}{proxy}>();  // this iteration's loads")
        self.line(f"{{  // the loads of iteration +{n - 1}")
        self.depth += 1
        self.line(f"const auto tw_now = {i};")
        self.line(f"{i} = {i} + {n - 1} * {step};")
        issue(fill)
        self.line(f"{i} = tw_now;")
        self.depth -= 1
        self.line("}")
        self.line(f"{use} = {use} + 1 == {n} ? 0 : {use} + 1;")
        self.line(f"{fill} = {fill} + 1 == {n} ? 0 : {fill} + 1;")
        self.depth -= 1
        self.line("}")
        if pipe.asynchronous:
            self.line("tw::mma_drain();  // the last product's sums in the registers")

    def stmt_While(self, s: ir.While):
        self.line("while (true) {")
        self.depth += 1
        self.statements(s.test)
        self.line(f"if (!{ref(s.cond)}) break;")
        self.statements(s.body)
        self.depth -= 1
        self.line("}")

    def stmt_Break(self, s):
        self.line("break;")

    def stmt_Continue(self, s):
        self.line("continue;")

    def stmt_Return(self, s: ir.Return):
        if self.block_shape is not None and self.in_lanes:  # this lane is done: on to the next one
            self.line("TW_L(tw_done) = true;")
            self.line("continue;")
            return
        self.line(f"return {ref(s.value)};" if s.value is not None else "return;")
