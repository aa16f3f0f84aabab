"""Structured control flow: if/elif/else, for-range, while (with carried and merged values)."""
from __future__ import annotations

import ast
import builtins as py

from .. import types as T
from ..errors import KernelSyntaxError, KernelTypeError
from ..ir import nodes as ir


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
    return names


def carry(lw, body, node) -> tuple:
    """Turn every name the loop body rebinds, and that exists before the loop, into a carried value."""
    carried = []
    for name in sorted(assigned_names(body)):
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
    if not (isinstance(call, ast.Call) and lw.visit(call.func) is py.range and not call.keywords
            and 1 <= len(call.args) <= 3):
        raise KernelSyntaxError("kernel loops must be 'for i in range(...)'", loc)
    if not isinstance(node.target, ast.Name):
        raise KernelSyntaxError("the loop variable must be a plain name", loc)
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
    carried = carry(lw, node.body, node)
    counter = lw.new_value(start.type, node.target.id, mutable=True)
    saved, lw.stmts = lw.stmts, []
    lw.bind(node.target.id, counter, node)
    head = lw.stmts
    lw.stmts = saved
    body = head + lower_body(lw, node.body)
    lw.stmts.append(ir.For(counter, start, stop, step, body, carried, loc))


def lower_while(lw, node: ast.While):
    loc = lw.src.loc(node)
    if node.orelse:
        raise KernelSyntaxError("while ... else is not supported", loc)
    carried = carry(lw, node.body, node)
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
