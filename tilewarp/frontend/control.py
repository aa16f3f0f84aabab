"""Structured control flow: if/elif/else, for-range, while (with carried and merged values)."""
from __future__ import annotations

import ast
import builtins as py

from ..language import types as T
from ..builtins.random import ADVANCE
from ..errors import KernelSyntaxError, KernelTypeError
from ..ir import nodes as ir
from ..builtins import REGISTRY


def assigned_names(body) -> set:
    """Names a block (re)binds: plain targets, augmented targets, and v[i]= / v.x= component writes."""
    names = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                root = node.value
                while isinstance(root, (ast.Subscript, ast.Attribute)):  # s.inner.v[1] = x rebinds s
                    root = root.value
                if isinstance(root, ast.Name):
                    names.add(root.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Call) and advances_state(node):  # wp.randf(state) rebinds state
                names.add(node.args[0].id)
            elif isinstance(node, ast.Call):  # wp.svd3(A, U, sigma, V) rebinds U, sigma, V
                names.update(a.id for a in _written(node) if isinstance(a, ast.Name))
    return names


def _written(call: ast.Call) -> list:
    """The arguments a builtin (by name) writes back into, as ``wp.svd3(A, U, sigma, V)``."""
    from .calls import written_arguments

    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if name == "tile_matmul":  # tile_matmul(a, b, out): out accumulates in place
        return call.args[2:3] + [k.value for k in call.keywords if k.arg == "out"]
    if name == "tile_axpy":  # tile_axpy(alpha, src, dest): dest too
        return call.args[2:3] + [k.value for k in call.keywords if k.arg == "dest"]
    return written_arguments(REGISTRY[name], call.args) if name in REGISTRY else []


def advances_state(call: ast.Call) -> bool:
    """A call of a random builtin (by name) whose state argument is a plain variable."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name in ADVANCE and bool(call.args) and isinstance(call.args[0], ast.Name)


def carry(lw, body, node) -> tuple:
    """Turn every name the loop body rebinds, and that exists before the loop, into a carried value."""
    carried = []
    names = set(assigned_names(body))
    for name in list(names):  # a block program's output ref: writing it rebinds its accumulator
        names.update(getattr(lw.symbols.get(name), "_tw_carries", ()))
    for name in sorted(names):
        current = lw.symbols.get(name)
        if not isinstance(current, ir.Value) or isinstance(current.type, T.ArrayType):
            continue
        if not current.mutable:
            m = lw.new_value(current.type, name, mutable=True)
            lw.stmts.append(ir.Assign(m, ir.Copy(current), lw.src.loc(node)))
            lw.symbols[name] = m
            current = m
        carried.append(current)
    return tuple(carried)


def lower_body(lw, body) -> list:
    saved, lw.stmts = lw.stmts, []
    lw.loop_depth += 1
    try:
        lw.block(body)
        return lw.stmts
    finally:
        lw.loop_depth -= 1
        lw.stmts = saved


def lower_for(lw, node: ast.For):
    loc = lw.src.loc(node)
    if node.orelse:
        raise KernelSyntaxError("for ... else is not supported", loc)
    call = node.iter
    if not isinstance(node.target, ast.Name):
        raise KernelSyntaxError("the loop variable must be a plain name", loc)
    func = lw.visit(call.func) if isinstance(call, ast.Call) else None
    reverse = func is py.reversed and len(call.args) == 1 and not call.keywords
    if reverse:
        call = call.args[0]
        func = lw.visit(call.func) if isinstance(call, ast.Call) else None
    if func is not py.range:
        if reverse:
            raise KernelSyntaxError("reversed() in a kernel loop takes a range(...)", loc)
        return lower_for_components(lw, node)
    start, stop, step = range_bounds(lw, call, loc)
    if reverse:
        start, stop, step = reversed_bounds(lw, start, stop, step, call)
    constant = start.is_const and stop.is_const and step.is_const
    if constant and _static_reads(lw, node.body, node.target.id):
        return _unroll(lw, node, py.range(start.const, stop.const, step.const), start.type)
    carried = carry(lw, node.body, node)
    counter = lw.new_value(start.type, node.target.id, mutable=True)
    saved, lw.stmts = lw.stmts, []
    lw.bind(node.target.id, counter, node)
    head = lw.stmts
    lw.stmts = saved
    body = head + lower_body(lw, node.body)
    lw.stmts.append(ir.For(counter, start, stop, step, body, carried, loc))
    values = py.range(start.const, stop.const, step.const) if constant else ()
    if values and not _exits(node.body) and node.target.id not in assigned_names(node.body):
        # after the loop its variable holds the last value, known now (a later wp.static() may read it)
        lw.symbols[node.target.id] = lw.const(values[-1], start.type)


def _static_reads(lw, body, name: str) -> bool:
    """Whether a ``wp.static(...)`` in ``body`` reads the variable ``name`` (the loop is then unrolled,
    so each copy of the body sees it as a constant, as in Warp)."""
    from .lower import _STATIC_MARK

    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Call) and getattr(_resolve(lw, node.func), _STATIC_MARK, False):
            if any(isinstance(n, ast.Name) and n.id == name for a in node.args for n in ast.walk(a)):
                return True
    return False


def _resolve(lw, expr):
    """The object a name or dotted name (``wp.static``) refers to, without lowering anything; None
    for a local variable or anything else."""
    if isinstance(expr, ast.Attribute):
        base = _resolve(lw, expr.value)
        return getattr(base, expr.attr, None) if base is not None else None
    if isinstance(expr, ast.Name) and expr.id not in lw.symbols:
        from .source import MISSING

        found = lw.src.lookup(expr.id)
        return None if found is MISSING else found
    return None


def _exits(body) -> bool:
    """A ``break`` (or ``return``) of this loop's body, not of a loop nested in it."""
    for stmt in body:
        for node in _walk_same_loop(stmt):
            if isinstance(node, (ast.Break, ast.Return)):
                return True
    return False


def _walk_same_loop(node):
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            yield from _walk_same_loop(child)
        elif isinstance(child, (ast.For, ast.While)):
            yield from (n for n in ast.walk(child) if isinstance(n, ast.Return))


def _unroll(lw, node: ast.For, values: range, t):
    """One copy of the body per value of a constant range, the variable a constant in each."""
    if any(isinstance(n, (ast.Break, ast.Continue)) for stmt in node.body for n in _walk_same_loop(stmt)):
        raise KernelSyntaxError("a loop whose variable a wp.static() expression reads is unrolled when the kernel "
                                "compiles, so it cannot use 'break' or 'continue'", lw.src.loc(node))
    for value in values:
        lw.symbols[node.target.id] = lw.const(value, t)
        lw.block(node.body)


def range_bounds(lw, call, loc) -> tuple:
    """``(start, stop, step)`` of ``range(...)``: integers of one type, a literal step not zero."""
    if call.keywords or not 1 <= len(call.args) <= 3:
        raise KernelSyntaxError("kernel loops must be 'for i in range(...)'", loc)
    bounds = lw.unify([lw.index(a) for a in call.args])
    bounds = [lw.const(b.const, T.int32) if b.weak else b for b in bounds]
    if any(not T.is_int(b.type) for b in bounds) or len({b.type for b in bounds}) != 1:
        raise KernelTypeError(f"range() takes integers of one type, got "
                              f"({', '.join(T.type_name(b.type) for b in bounds)})", loc)
    if len(bounds) == 1:
        bounds = [lw.const(0, bounds[0].type), bounds[0]]
    start, stop, step = bounds if len(bounds) == 3 else (*bounds, lw.const(1, bounds[0].type))
    if step.is_const and step.const == 0:
        raise KernelTypeError("range() step must not be zero", loc)
    return start, stop, step


def reversed_bounds(lw, start, stop, step, node) -> tuple:
    """``reversed(range(a, b, s))`` as a range: the same elements, last first (as Python and Warp)."""
    t = start.type
    if t._kind_ != "int":  # the reversed range may end below zero
        raise KernelTypeError(f"reversed(range()) takes signed integers, got {T.type_name(t)}", lw.src.loc(node))
    if start.is_const and stop.is_const and step.is_const:
        r = py.range(start.const, stop.const, step.const)[::-1]
        return lw.const(r.start, t), lw.const(r.stop, t), lw.const(r.step, t)
    pair = lw.call("reverse_range", [start, stop, step], node)
    return lw.tuple_get(pair, 0, node), lw.tuple_get(pair, 1, node), lw.call("neg", [step], node)


def lower_for_components(lw, node: ast.For):
    """``for x in v``: a vector's components or a matrix's rows (beyond Warp, which only loops over ranges)."""
    loc = lw.src.loc(node)
    if not isinstance(node.iter, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        raise KernelSyntaxError("kernel loops run over range(...), a vector or a matrix", loc)
    seq = lw.value(node.iter)
    t = seq.type
    if getattr(t, "_tw_next_", None):
        return _lower_for_query(lw, node, seq)
    if not T.is_composite(t):
        raise KernelSyntaxError(f"kernel loops run over range(...), a vector or a matrix, not a "
                                f"{T.type_name(t)} value", loc)
    if seq.mutable:  # the loop reads the value it started with, whatever the body rebinds
        seq = lw.assign(ir.Copy(seq), t, node.iter, "seq")
    carried = carry(lw, node.body, node)
    counter = lw.new_value(T.int32, "k", mutable=True)
    saved, lw.stmts = lw.stmts, []
    extract = "extract_row" if T.is_matrix(t) else "extract"
    lw.bind(node.target.id, lw.call(extract, [seq, counter], node), node)
    head, lw.stmts = lw.stmts, saved
    body = head + lower_body(lw, node.body)
    n = t._wp_shape_[0]
    lw.stmts.append(ir.For(counter, lw.const(0, T.int32), lw.const(n, T.int32), lw.const(1, T.int32), body,
                           carried, loc))


def _lower_for_query(lw, node: ast.For, seq):
    """``for index in wp.hash_grid_query(...)``: Warp's spelling of ``while next(query, index)``. The
    query and the index it yields are hidden carried values, so the body may rebind the loop
    variable (or reuse the query's name) without changing what the loop visits."""
    loc = lw.src.loc(node)
    step = REGISTRY[seq.type._tw_next_]
    query = lw.new_value(seq.type, "query", mutable=True)
    lw.stmts.append(ir.Assign(query, ir.Copy(seq), loc))
    index = lw.new_value(T.int32, "index", mutable=True)
    lw.stmts.append(ir.Assign(index, ir.Copy(lw.const(0, T.int32)), loc))
    carried = carry(lw, node.body, node) + (query, index)
    saved, lw.stmts = lw.stmts, []
    found = lw.call(step.name, [query, index], node)
    lw.stmts.append(ir.Assign(query, ir.Copy(lw.tuple_get(found, 1, node)), loc))
    lw.stmts.append(ir.Assign(index, ir.Copy(lw.tuple_get(found, 2, node)), loc))
    cond = lw.tuple_get(found, 0, node)
    test, lw.stmts = lw.stmts, []
    lw.bind(node.target.id, index, node)
    head, lw.stmts = lw.stmts, saved
    body = head + lower_body(lw, node.body)
    lw.stmts.append(ir.While(test, cond, body, carried, loc))


def lower_while(lw, node: ast.While):
    loc = lw.src.loc(node)
    if node.orelse:
        raise KernelSyntaxError("while ... else is not supported", loc)
    carried = carry(lw, [*node.body, node.test], node)  # the test may advance a random state too
    saved, lw.stmts = lw.stmts, []
    cond = lw.truth(lw.value(node.test), node)
    test, lw.stmts = lw.stmts, saved
    body = lower_body(lw, node.body)
    lw.stmts.append(ir.While(test, cond, body, carried, loc))


def lower_if(lw, node: ast.If):
    cond = lw.truth(lw.value(node.test), node)
    if cond.is_const:  # static condition (constants, wp.static): only the taken branch exists
        lw.block(node.body if cond.const else node.orelse)
        return
    before = dict(lw.symbols)
    saved = lw.stmts
    branches = []
    for body in (node.body, node.orelse):
        lw.stmts, lw.symbols = [], dict(before)
        lw.block(body)
        branches.append((lw.stmts, lw.symbols))
    lw.stmts = saved
    (then_stmts, then_syms), (else_stmts, else_syms) = branches
    merged, symbols = [], {}
    for name in list(then_syms) + [n for n in else_syms if n not in then_syms]:
        a, b = then_syms.get(name), else_syms.get(name)
        if a is b:
            symbols[name] = a
            continue
        if not (isinstance(a, ir.Value) and isinstance(b, ir.Value)):
            continue  # bound on one path only: using it afterwards is an undefined-name error
        a, b = lw.unify([a, b])
        if a.type != b.type:
            raise KernelTypeError(f"'{name}' has type {T.type_name(a.type)} in one branch and "
                                  f"{T.type_name(b.type)} in the other", lw.src.loc(node))
        m = lw.new_value(a.type, name)
        then_stmts.append(ir.Assign(m, ir.Copy(a), lw.src.loc(node)))
        else_stmts.append(ir.Assign(m, ir.Copy(b), lw.src.loc(node)))
        merged.append(m)
        symbols[name] = m
    lw.symbols = symbols
    lw.stmts.append(ir.If(cond, then_stmts, else_stmts, tuple(merged), lw.src.loc(node)))
