"""Calls of ``@wp.func`` functions: argument binding, generic parameters, overload resolution.

An overload set (several ``@wp.func`` of one name in one scope) is resolved as Warp does: first the
non-generic overloads whose annotations equal the argument types, then the generic ones; only then
(beyond Warp) those a bare literal argument converts to (``f(2)`` for ``f(x: float64)``).
"""
from __future__ import annotations

import inspect

from ..language import generics
from ..language import types as T
from ..errors import KernelTypeError
from ..ir import nodes as ir


def bind_call(lw, func, node) -> tuple:
    """``(chosen function, argument values in parameter order)`` for the call ``node``."""
    loc = lw.src.loc(node)
    positional = [lw.value(a) for a in node.args]
    keywords = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise KernelTypeError(f"{func.__name__}() cannot take **kwargs in kernel code", loc)
        keywords[kw.arg] = lw.value(kw.value)
    if len(func.overloads) > 1:
        func = _resolve(lw, func, positional, keywords, node)
    return func, _bind(lw, func, positional, keywords, node)


def call_with_values(lw, func, values, node):
    """Call ``func`` (a @wp.func, maybe overloaded) on values already lowered (an operator's operands);
    None when no overload takes them."""
    fitting = sorted((f for f in func.overloads if _fits(f, values, {}, "exact")), key=lambda f: f.is_generic)
    if not fitting:
        return None
    func = fitting[0]
    args = _bind(lw, func, values, {}, node)
    callee = func._tw_specialize(tuple(a.type for a in args), lw.src.loc(node))
    if callee not in lw.fn.callees:
        lw.fn.callees.append(callee)
    return lw.assign(ir.FuncCall(callee, tuple(args)), callee.return_type, node, func.__name__)


def _bind(lw, func, positional, keywords, node) -> list:
    params = func.parameters()
    loc, name = lw.src.loc(node), func.__name__
    if len(positional) > len(params):
        raise KernelTypeError(f"{name}() takes {len(params)} arguments, got {len(positional)}", loc)
    given = {p[0]: v for p, v in zip(params, positional)}
    for key, value in keywords.items():
        if key not in {p[0] for p in params} or key in given:
            raise KernelTypeError(f"{name}() got an unexpected or repeated argument '{key}'", loc)
        given[key] = value
    args = []
    for pname, annotation, default in params:
        if pname not in given:
            if default is inspect.Parameter.empty:
                raise KernelTypeError(f"{name}() is missing argument '{pname}'", loc)
            given[pname] = lw.materialize(default, node)
        value = given[pname]
        if annotation is None or generics.is_generic(annotation):
            value = lw.const(value.const, value.type) if value.weak else value
            if annotation is not None and not generics.matches(annotation, value.type):
                raise KernelTypeError(f"argument '{pname}' of {name}() expects {generics.describe(annotation)}, "
                                      f"got {T.type_name(value.type)}", loc)
        else:
            value = lw.coerce(value, annotation, node, f"argument '{pname}' of {name}()")
        args.append(value)
    return args


def _literal_fits(value, t) -> bool:
    """A bare literal converts to ``t``: an int literal to any number type, a float one to floats."""
    if not value.weak or not T.is_scalar(t) or t is T.bool_ or value.type is T.bool_:
        return False
    return T.is_float(t) or T.is_int(value.type)


def _fits(func, positional, keywords, mode: str) -> bool:
    params = func.parameters()
    if len(positional) > len(params):
        return False
    given = {p[0]: v for p, v in zip(params, positional)}
    for key, value in keywords.items():
        if key not in {p[0] for p in params} or key in given:
            return False
        given[key] = value
    for pname, annotation, default in params:
        value = given.get(pname)
        if value is None:
            if default is inspect.Parameter.empty:
                return False
        elif annotation is None or generics.is_generic(annotation):
            if annotation is not None and not generics.matches(annotation, value.type):
                return False
        elif value.type != annotation and (mode == "exact" or not _literal_fits(value, annotation)):
            return False
    return True


def _resolve(lw, func, positional, keywords, node):
    concrete = [f for f in func.overloads if not f.is_generic]
    generic = [f for f in func.overloads if f.is_generic]
    # Warp's order first (exact, then generic), so a literal conversion never changes what Warp picks
    for candidates, mode in ((concrete, "exact"), (generic, "exact"), (concrete, "literal"), (generic, "literal")):
        for f in candidates:
            if _fits(f, positional, keywords, mode):
                return f
    got = ", ".join([T.type_name(v.type) for v in positional] + [f"{k}={T.type_name(v.type)}"
                                                                  for k, v in keywords.items()])
    signatures = "; ".join(f"{func.__name__}({', '.join(_describe_param(p) for p in f.parameters())})"
                           for f in func.overloads)
    raise KernelTypeError(f"no overload of {func.__name__}() takes ({got}); overloads: {signatures}",
                          lw.src.loc(node))


def _describe_param(p) -> str:
    name, t, _ = p
    return name if t is None else f"{name}: {generics.describe(t)}"
