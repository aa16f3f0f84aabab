"""Calls (builtins, types, user functions, ``wp.static``) and assignment targets."""
from __future__ import annotations

import ast
import builtins as py

from ..language import types as T
from ..builtins import REGISTRY, Builtin
from ..builtins.operators import BINARY
from ..builtins import params as signatures
from ..builtins.params import bind
from ..builtins.random import ADVANCE, PARAMS
from ..errors import KernelSyntaxError, KernelTypeError
from ..ir import nodes as ir
from .composites import composite_call
from .lower import PY_BUILTINS, _STATIC_MARK
from .places import Element, place


def lower_call(lw, node: ast.Call):
    declared = lw.src.static_values.get(_position(node), _NONE)
    if declared is not _NONE:  # a wp.static() evaluated when the function was declared (frontend/static.py)
        from .static import checked

        return checked(lw, declared, node)
    func = lw.visit(node.func)
    loc = lw.src.loc(node)
    if isinstance(func, ir.Value):
        raise KernelTypeError(f"a {T.type_name(func.type)} value is not callable", loc)
    if getattr(func, _STATIC_MARK, False):
        if len(node.args) != 1 or node.keywords:
            raise KernelSyntaxError("wp.static() takes exactly one expression", loc)
        from .static import evaluate

        return evaluate(lw, node.args[0], node)
    if getattr(func, "_tw_specialize", None) is not None:
        return call_user_function(lw, func, node)
    lower = getattr(func, "_tw_lower_call", None)  # wp.grad (autodiff/custom.py), wp.zeros (runtime/array.py)
    if lower is not None:
        return lower(lw, node)
    special = composite_call(lw, func, node)  # wp.vector(..), wp.quat(x=..), wp.identity(3, float), ...
    if special is not None:
        return special
    if func in T.python_scalar_aliases:
        func = T.python_scalar_aliases[func]
    if T.is_scalar(func) or T.is_composite(func):
        _no_keywords(lw, node, T.type_name(func))
        # a literal argument is a literal of the constructed scalar type: wp.float64(0.1) is the double 0.1,
        # also through a name (x = 0.1; wp.float64(x)), as Warp folds constants
        s = T.scalar_of(func)
        args = [lw.cast_const(v.const, s) if v.is_const and T.is_scalar(v.type) else v
                for v in map(lw.value, node.args)]
        return lw.call("construct", args, node, (func,))
    if T.is_struct(func):
        return _struct(lw, func, node)
    if func is py.type and len(node.args) == 1 and not node.keywords:  # type(x)(0): a value of x's type
        return lw.value(node.args[0]).type
    if func is py.len:
        return _len(lw, node)
    if func in PY_BUILTINS:
        func = REGISTRY[PY_BUILTINS[func]]
    if isinstance(func, Builtin):
        return _builtin(lw, func, node)
    if type(func).__name__ == "NativeFunction":
        raise KernelTypeError(f"{func.__name__}() is a wp.func_native (C++ source) function: tilewarp compiles "
                              "Python kernel code only", loc)
    raise KernelTypeError(f"cannot call {getattr(func, '__name__', type(func).__name__)!s} in kernel code: "
                          "only builtins, types and @wp.func functions", loc)


_NONE = object()


def _position(node) -> tuple:
    """Where a call is in the function's source (``f(x)(y)`` starts where ``f(x)`` does, ends later)."""
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def _no_keywords(lw, node, what):
    if node.keywords:
        raise KernelSyntaxError(f"{what}() takes no keyword arguments", lw.src.loc(node))


def _builtin(lw, func: Builtin, node):
    from .tiles import is_tile_call, lower_tile_call

    if is_tile_call(func.name):
        return lower_tile_call(lw, func.name, node)
    if func.name == "tid":
        if node.args or node.keywords:
            raise KernelSyntaxError("wp.tid() takes no arguments", lw.src.loc(node))
        return lw.call("tid", [], node, (0, 1))
    node = _positional(lw, func.name, node)
    if func.name in _OUTPUT_AND_CHOICE:
        return _OUTPUT_AND_CHOICE[func.name](lw, func.name, node)
    if func.name.startswith("atomic_"):
        return _atomic(lw, func.name, node)
    if func.name in ADVANCE:
        return _advancing(lw, func.name, node)
    if func.in_place or (func.outputs and len(node.args) > func.outputs):
        return _writing_arguments(lw, func, node)
    if func.updates:
        return _updating_arguments(lw, func, node)
    if func.legacy and len(node.args) >= func.legacy[0] + len(func.legacy[1]):
        return _legacy_outputs(lw, func, node)
    return lw.call(func.name, [lw.value(a) for a in node.args], node)


def _positional(lw, name, node):
    """``node`` with its keyword arguments moved to their positions (Warp's parameter names,
    ``builtins/params.py``) and omitted defaults filled in, so every later path reads ``node.args``.
    Keyword values are lowered in parameter order, not source order, as they are pure expressions
    in practice (a keyword rarely names a random state advanced by another argument)."""
    if any(kw.arg is None for kw in node.keywords):
        raise KernelSyntaxError(f"{name}() does not take **kwargs", lw.src.loc(node))
    by_name = {kw.arg: kw.value for kw in node.keywords}
    try:
        extra = bind(name, len(node.args), [kw.arg for kw in node.keywords])
    except TypeError as e:
        raise KernelTypeError(str(e), lw.src.loc(node)) from None
    if not extra and not node.keywords:
        return node
    args = [by_name[a] if isinstance(a, str) else ast.copy_location(ast.Constant(a[0]), node) for a in extra]
    return ast.copy_location(ast.Call(func=node.func, args=[*node.args, *args], keywords=[]), node)


def written_arguments(func: Builtin, args: list) -> list:
    """The argument nodes a call writes to: Warp's output arguments / in-place first argument."""
    if func.in_place:
        return args[:1]
    if func.updates:
        return [args[k] for k in func.updates if k < len(args)]
    if func.legacy and len(args) >= func.legacy[0] + len(func.legacy[1]):
        k, fields = func.legacy
        return args[k:k + len(fields)]
    return args[len(args) - func.outputs:] if func.outputs and len(args) > func.outputs else []


def _writing_arguments(lw, func: Builtin, node):
    """``wp.svd3(A, U, sigma, V)`` / ``wp.transform_set_translation(xform, p)``: the IR call is the pure
    value form (``U, sigma, V = wp.svd3(A)``) and the named variables are rebound to its results, so
    values stay single-assignment. Only local variables qualify: Warp writes into a discarded copy
    of anything else (an array element, a field), which tilewarp refuses rather than imitate."""
    targets = written_arguments(func, node.args)
    for t in targets:
        if not (isinstance(t, ast.Name) and isinstance(lw.symbols.get(t.id), ir.Value)):
            raise KernelTypeError(f"{func.name}() writes into its argument '{ast.unparse(t)}': pass a local "
                                  "variable assigned before the call", lw.src.loc(t))
    inputs = node.args if func.in_place else node.args[:len(node.args) - func.outputs]
    result = lw.call(func.name, [lw.value(a) for a in inputs], node)
    values = [result] if len(targets) == 1 else [lw.tuple_get(result, k, node) for k in range(len(targets))]
    for t, v in zip(targets, values):
        declared = lw.symbols[t.id].type
        if declared != v.type:
            raise KernelTypeError(f"{func.name}(): output argument '{t.id}' is a {T.type_name(declared)}, "
                                  f"the result stored there is a {T.type_name(v.type)}", lw.src.loc(t))
        lw.bind(t.id, v, node)
    return None


def _updating_arguments(lw, func: Builtin, node):
    """``wp.hash_grid_query_next(query, index)``: the IR call reads every argument and returns its value
    followed by the new value of each argument in ``func.updates``; those local variables are rebound
    to them (a loop that calls it carries them, frontend/control.py)."""
    targets = written_arguments(func, node.args)
    for t in targets:
        if not (isinstance(t, ast.Name) and isinstance(lw.symbols.get(t.id), ir.Value)):
            raise KernelTypeError(f"{func.name}() writes into its argument '{ast.unparse(t)}': pass a local "
                                  "variable assigned before the call", lw.src.loc(t))
    result = lw.call(func.name, [lw.value(a) for a in node.args], node)
    for k, t in enumerate(targets):
        lw.bind(t.id, lw.tuple_get(result, k + 1, node), node)
    return lw.tuple_get(result, 0, node)


def _legacy_outputs(lw, func: Builtin, node):
    """``wp.mesh_query_point(id, p, d, sign, face, u, v)``: Warp's older form, lowered to the struct form
    (``r = wp.mesh_query_point(id, p, d)``) with the output variables rebound to ``r``'s fields and
    ``r.result`` as the value. Parameters after the outputs that the call leaves out take Warp's
    defaults."""
    k, fields = func.legacy
    targets = node.args[k:k + len(fields)]
    for t in targets:
        if not (isinstance(t, ast.Name) and isinstance(lw.symbols.get(t.id), ir.Value)):
            raise KernelTypeError(f"{func.name}() writes into its argument '{ast.unparse(t)}': pass a local "
                                  "variable assigned before the call", lw.src.loc(t))
    inputs = [lw.value(a) for a in node.args[:k] + node.args[k + len(fields):]]
    form = signatures.PARAMS.get(func.name, ((),))[0]
    defaults = signatures.DEFAULTS.get(func.name, {})
    for name in form[len(inputs):]:
        if name in defaults:
            inputs.append(lw.value(ast.copy_location(ast.Constant(defaults[name]), node)))
    result = lw.call(func.name, inputs, node)
    for t, field in zip(targets, fields):
        value = lw.call("struct_get", [result], node, (field,))
        declared = lw.symbols[t.id].type
        if declared != value.type:
            raise KernelTypeError(f"{func.name}(): output argument '{t.id}' is a {T.type_name(declared)}, "
                                  f"the {field} stored there is a {T.type_name(value.type)}", lw.src.loc(t))
        lw.bind(t.id, value, node)
    return lw.call("struct_get", [result], node, ("result",))


def _advancing(lw, name, node):
    """``wp.randf(state, ..)``: the value, and a local ``state`` variable rebound to the advanced state
    (Warp advances it in place; a @wp.func's state parameter is the callee's own copy)."""
    args = [lw.value(a) for a in node.args]
    want = PARAMS.get(name, {}).get(len(args), ())
    args = [lw.unify([ir.Value(0, t), a])[1] if a.weak else a for a, t in zip(args, want)] + args[len(want):]
    result = lw.call(name, args, node)
    first = node.args[0] if node.args else None
    if isinstance(first, ast.Name) and isinstance(lw.symbols.get(first.id), ir.Value):
        lw.bind(first.id, lw.call(ADVANCE[name], args, node), node)
    return result


def _atomic(lw, name, node):
    """``wp.atomic_x(arr, i.., value)``: literal values (and cas's compare) take the array's dtype."""
    args = [lw.value(a) for a in node.args]
    n = 2 if name == "atomic_cas" else 1
    if len(args) > n and T.is_array(args[0].type):
        dtype = ir.Value(0, args[0].type.dtype)
        args = args[:-n] + [lw.unify([dtype, v])[1] if v.weak else v for v in args[-n:]]
    return lw.call(name, args, node)


def _struct(lw, t, node):
    """``S()``, ``S(a, b)``, ``S(x=a)``: fields not given are zero (Warp takes all fields or none)."""
    fields, loc = t._tw_fields_, lw.src.loc(node)
    if len(node.args) > len(fields):
        raise KernelTypeError(f"{t.__name__}() takes at most {len(fields)} field values, "
                              f"got {len(node.args)}", loc)
    given = dict(zip(fields, map(lw.value, node.args)))  # evaluated in source order
    for kw in node.keywords:
        if kw.arg not in fields or kw.arg in given:
            raise KernelTypeError(f"{t.__name__}() got an unknown or repeated field '{kw.arg}'", loc)
        given[kw.arg] = lw.value(kw.value)
    names = tuple(n for n in fields if n in given)
    values = [lw.coerce(given[n], fields[n], node, f"field '{n}' of {t.__name__}") for n in names]
    return lw.call("struct_new", values, node, (t, names))


def _value_or_text(lw, node):
    """A string constant (literal or global) as ``str``, anything else as a value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    obj = lw.visit(node)
    if isinstance(obj, str):
        return obj
    return obj if isinstance(obj, ir.Value) else lw.materialize(obj, node)


def _print(lw, name, node):
    if len(node.args) != 1:
        raise KernelTypeError(f"print() takes one value, got {len(node.args)}", lw.src.loc(node))
    arg = _value_or_text(lw, node.args[0])
    if isinstance(arg, str):
        return lw.call("print", [], node, (arg,), discard=True)
    if T.is_tile(arg.type):  # the block's lane 0 prints the whole tile
        return lw.call("tile_print", [arg], node, discard=True)
    return lw.call("print", [lw.const(arg.const, arg.type) if arg.weak else arg], node, discard=True)


def _printf(lw, name, node):
    args = [_value_or_text(lw, a) for a in node.args]
    if not args or not isinstance(args[0], str):
        raise KernelTypeError("wp.printf() needs a format string first", lw.src.loc(node))
    strings = tuple((k, a) for k, a in enumerate(args[1:]) if isinstance(a, str))
    values = [lw.const(a.const, a.type) if a.weak else a for a in args[1:] if not isinstance(a, str)]
    return lw.call("printf", values, node, (args[0], strings), discard=True)


def _choose(lw, name, node):
    """``wp.where(cond, a, b)`` / ``wp.select(cond, b, a)``: literals take the other value's type."""
    args = [lw.value(a) for a in node.args]
    if len(args) == 3 and any(T.is_tile(a.type) for a in args):  # element by element (frontend/tiles.py)
        return lw.call(name, args, node)
    if len(args) == 3:
        cond = lw.const(args[0].const, args[0].type) if args[0].weak else args[0]
        args = [cond, *lw.unify(args[1:])]
    return lw.call(name, args, node)


_OUTPUT_AND_CHOICE = {"print": _print, "printf": _printf, "where": _choose, "select": _choose}


def _len(lw, node):
    if len(node.args) != 1 or node.keywords:
        raise KernelTypeError(f"len() takes exactly one argument, got {len(node.args)}", lw.src.loc(node))
    (arg,) = node.args
    v = lw.visit(arg)
    if isinstance(v, (tuple, list)):  # a tuple the kernel sees as a constant (a closure's grid, ...)
        return lw.const(len(v), T.int32)
    if not isinstance(v, ir.Value):
        v = lw.materialize(v, arg)
    if T.is_composite(v.type):
        return lw.const(v.type._wp_shape_[0], T.int32)
    if T.is_array(v.type):
        return lw.call("extract", [lw.call("shape", [v], node), lw.const(0, T.int32)], node)
    if isinstance(v.type, T.TupleType):
        return lw.const(len(v.type.types), T.int32)
    if T.is_tile(v.type):
        return lw.const(v.type.shape[0], T.int32)
    raise KernelTypeError(f"len() of a {T.type_name(v.type)} value", lw.src.loc(node))


def call_user_function(lw, func, node):
    from .funcs import bind_call
    from .tiles import inline_call, names_tile_builtins

    if names_tile_builtins(func) or any(T.is_tile(getattr(lw.symbols.get(getattr(a, "id", None)), "type", None))
                               for a in node.args):
        if not names_tile_builtins(func) and _takes_elements(func, node):  # relu(t): element by element
            from .tiles import map_values

            return map_values(lw, func, [lw.value(a) for a in node.args], node)
        return inline_call(lw, func, node)  # tiles are values of the kernel: the body goes inline
    loc = lw.src.loc(node)
    func, args = bind_call(lw, func, node)  # the overload the argument types fit, its arguments in order
    callee = func._tw_specialize(tuple(a.type for a in args), loc)
    if callee not in lw.fn.callees:
        lw.fn.callees.append(callee)
    return lw.assign(ir.FuncCall(callee, tuple(args)), callee.return_type, node, func.__name__)


def _takes_elements(func, node) -> bool:
    """Every overload of ``func`` declares scalar, vector or matrix parameters (no templates), so
    tiles given to it are mapped over (beyond Warp, where that is an error)."""
    if node.keywords:
        return False
    for f in func.overloads:
        params = f.parameters()
        if len(params) < len(node.args) or any(t is None or not (T.is_scalar(t) or T.is_composite(t))
                                               for _, t, _ in params[:len(node.args)]):
            return False
    return True


# ---- assignment targets ----------------------------------------------------------------------


def _is_tid_call(lw, node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    try:
        f = lw.visit(node.func)
    except KernelTypeError:
        return False
    return isinstance(f, Builtin) and f.name == "tid"


def assign_target(lw, target, value_node, node):
    if isinstance(target, ast.Tuple):
        names = target.elts
        if _is_tid_call(lw, value_node):
            values = [lw.call("tid", [], value_node, (k, len(names))) for k in range(len(names))]
        elif isinstance(value_node, ast.Tuple):
            if len(value_node.elts) != len(names):
                raise KernelTypeError(f"cannot unpack {len(value_node.elts)} values into {len(names)} names",
                                      lw.src.loc(node))
            values = [lw.value(v) for v in value_node.elts]
        else:
            values = _unpack(lw, lw.value(value_node), len(names), node)
        for t, v in zip(names, values):
            store_to(lw, t, v, node)
        return
    value = lw.visit(value_node)
    if isinstance(target, ast.Name) and getattr(value, "_tw_lower_call", None) is not None:
        lw.symbols[target.id] = value  # g = wp.grad(f): a compile-time callable (Warp allows it)
        return
    store_to(lw, target, value if isinstance(value, ir.Value) else lw.materialize(value, value_node), node)


def _unpack(lw, value, n, node) -> list:
    """``a, b = f(x)``: the elements of a tuple value (a function's several return values)."""
    if not isinstance(value.type, T.TupleType):
        raise KernelTypeError(f"cannot unpack a {T.type_name(value.type)} value into {n} names",
                              lw.src.loc(node))
    if len(value.type.types) != n:
        raise KernelTypeError(f"cannot unpack {len(value.type.types)} values into {n} names", lw.src.loc(node))
    return [lw.tuple_get(value, k, node) for k in range(n)]


def store_to(lw, target, value, node):
    if isinstance(target, ast.Name):
        lw.bind(target.id, value, node)
    elif isinstance(target, (ast.Subscript, ast.Attribute)):  # a[i] = x, v.x = x, arr[i].s.v[k] = x
        place(lw, target).set(value, node)
    else:
        raise KernelSyntaxError(f"cannot assign to {type(target).__name__}", lw.src.loc(node))


_AUG_ATOMIC = {"add": "atomic_add", "sub": "atomic_sub", "bit_and": "atomic_and", "bit_or": "atomic_or",
               "bit_xor": "atomic_xor"}


_TILE_UPDATE = {"add": "add", "sub": "sub", "bit_and": "and", "bit_or": "or", "bit_xor": "xor"}


_OP_SYMBOL = {"bit_and": "&", "bit_or": "|", "bit_xor": "^"}


def _aug_value(lw, op, node):
    rhs = lw.value(node.value)
    rhs_dtype = rhs.type.dtype if isinstance(rhs.type, T.TileType) else rhs.type
    if op in _OP_SYMBOL and T.is_struct(rhs_dtype):
        raise KernelTypeError(f"bitwise inplace {_OP_SYMBOL[op]}= is not defined for a Warp struct "
                              f"({T.type_name(rhs_dtype)})", lw.src.loc(node))
    return rhs


def aug_assign(lw, node: ast.AugAssign):
    op = BINARY.get(type(node.op).__name__)
    if op is None:
        raise KernelSyntaxError(f"unsupported operator {type(node.op).__name__}=", lw.src.loc(node))
    if op == "add" and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.MatMult) \
            and isinstance(node.target, ast.Name):
        from .tile_elementwise import accumulate_product

        if accumulate_product(lw, node.target, node.value, node):  # acc += a @ b: tile_matmul in place
            return
    target = place(lw, node.target)
    if hasattr(target, "aug_assign"):  # ref[...] += x in a block program (tilewarp/blocks)
        target.aug_assign(op, node)
        return
    from .tiles import TileElement

    if isinstance(target, TileElement) and op in _TILE_UPDATE:  # each lane updates atomically, as Warp
        target.update(_TILE_UPDATE[op], _aug_value(lw, op, node), node)
        return
    if isinstance(target, Element) and op in _AUG_ATOMIC and not T.is_struct(target.arr.type.dtype):
        # as in Warp: a[i] += x is an atomic add (and differentiable); -=, &=, |=, ^= atomic too
        value = lw.coerce(_aug_value(lw, op, node), target.arr.type.dtype, node, "array element")
        # ("update",): every numeric width, where an explicit wp.atomic_x() takes Warp's set only
        lw.call(_AUG_ATOMIC[op], [target.arr, *target.indices, value], node, ("update",), discard=True)
        return
    current = target.get()  # Python's order: the target's current value, then the right-hand side
    rhs = _aug_value(lw, op, node)
    target.set(lw.call(op, [current, rhs], node), node)
