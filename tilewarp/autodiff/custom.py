"""User-written gradients: ``@wp.func_grad``, ``@wp.func_replay``, ``wp.grad(f)`` and ``wp.adjoint[x]``.

* ``@wp.func_grad(f)`` attaches a gradient to the overload of ``f`` whose parameter types begin its
  own: f's parameters, then one adjoint per result of ``f`` (Warp's convention: several return
  values give several adjoints, none for a function without a result). Its body writes
  ``wp.adjoint[x]``; the backward pass calls it instead of the generated ``adj_<f>`` (emit/custom.py).
* ``@wp.func_replay(f)`` replaces ``f`` wherever a backward pass replays a call of it.
* ``wp.grad(f)(args)`` evaluates f's gradients in forward code, with an adjoint of one for every
  component of the result; gradients do not flow through it (as in Warp).

The grad body is lowered as an ordinary function returning, for each parameter that has one, its
adjoint contribution: ``wp.adjoint[x]`` is a local that starts at zero, so ``=`` sets this call's
contribution and a read sees only it (Warp hands the body the caller's accumulator, whose content
depends on the caller's statement order). Arrays' adjoints are their gradient arrays.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..language import types as T
from ..builtins import Builtin, BuiltinTypeError
from ..errors import KernelTypeError
from ..frontend import Lowerer, get_source
from ..frontend.function import Function
from ..language import generics
from ..ir import nodes as ir
from .prepare import carries_gradient
from ..frontend.funcs import bind_call
from ..language import names


class _Adjoint:
    """``wp.adjoint``: indexed by a parameter inside a ``@wp.func_grad`` function."""

    __tw_adjoint__ = True

    def __getitem__(self, key):
        raise RuntimeError("wp.adjoint[...] can only be used inside a @wp.func_grad function")

    def __repr__(self):
        return "wp.adjoint"


adjoint = _Adjoint()


def _has_adjoint(t) -> bool:
    """Parameters of type ``t`` get a slot the grad body writes (arrays get their gradient array)."""
    return carries_gradient(t) and not T.is_array(t)


def _decorator_loc(fn, what: str):
    """Where the user wrote ``@wp.<what>(...)`` above ``fn`` (else its ``def`` line)."""
    src = get_source(fn)
    for d in src.tree.decorator_list:
        if what in ast.unparse(d):
            return src, src.loc(d)
    return src, src.loc(src.tree)


def _parameters(fn, src) -> list:
    """``(name, type, ast.arg)`` of each parameter; every one needs a concrete annotation."""
    
    params = Function(fn).parameters()
    out = []
    for (name, t, _), node in zip(params, src.tree.args.args):
        if t is None or generics.is_generic(t):
            what = "a type annotation" if t is None else "a concrete type (custom gradients are not generic)"
            raise KernelTypeError(f"parameter '{name}' of {fn.__name__} needs {what}", src.loc(node))
        out.append((name, t, node))
    return out


def _check_target(forward_fn, fn, what: str):
    
    src, loc = _decorator_loc(fn, what)
    if not isinstance(forward_fn, Function):
        name = getattr(forward_fn, "__name__", None) or getattr(forward_fn, "name", "?")
        raise KernelTypeError(f"@wp.{what}() takes a @wp.func function, got {type(forward_fn).__name__} "
                              f"{name!r}", loc)
    generic = [f for f in forward_fn.overloads if f.is_generic]
    if generic:
        raise KernelTypeError(f"@wp.{what}(): {forward_fn.__name__} is generic; custom gradients need "
                              "concrete parameter types (as in Warp)", loc)
    return src, loc


def _check_names(f, params, src, what):
    """A parameter named like one of f's at another position would name the wrong adjoint."""
    f_names = [p[0] for p in f.parameters()]
    for k, (name, _, node) in enumerate(params):
        if name in f_names and f_names.index(name) != k:
            raise KernelTypeError(f"@wp.{what}: parameter {k + 1} is named '{name}', the name of parameter "
                                  f"{f_names.index(name) + 1} of {f.__name__}({', '.join(f_names)}); "
                                  "parameters follow f's order", src.loc(node))


def result_types(r) -> list:
    """The adjoints a gradient receives for a result of type ``r``: one per returned value."""
    return [] if r is None else list(r.types) if isinstance(r, T.TupleType) else [r]


def _signature(types) -> str:
    return ", ".join(T.type_name(t) for t in types)


# ---- @wp.func_grad ---------------------------------------------------------------------------------


@dataclass(eq=False)
class CustomGrad:
    """A ``@wp.func_grad`` function for one overload of a ``@wp.func``."""

    fn: object  # the user's Python function
    forward: object  # the kernel.Function overload it differentiates
    _ir: object = None
    slots: tuple = ()  # positions of f's parameters whose adjoint the body returns, in order

    def ir(self, f_ir) -> ir.Function:
        """The body as a function of (f's parameters, adjoints of f's results, gradient arrays)."""
        if self._ir is None:
            lw = _GradLowerer(self, f_ir, names.function(self.fn.__name__, f"{self.fn.__module__}."
                                                         f"{self.fn.__qualname__}#grad"))
            self._ir = lw.run()
            self.slots = tuple(lw.slot_order)
        return self._ir


def func_grad(forward_fn):
    """Decorator: the function below is the gradient of ``forward_fn`` (one of its overloads, chosen by
    the parameter types). It takes f's parameters, then the adjoint of each of f's results, returns
    nothing, and accumulates into ``wp.adjoint[param]``."""

    def register(grad_fn):
        src, loc = _check_target(forward_fn, grad_fn, "func_grad")
        params = _parameters(grad_fn, src)
        f = _matching_overload(forward_fn, params, src, loc, "func_grad")
        f_types = tuple(t for _, t, _ in f.parameters())
        f_ir = f._tw_specialize(f_types, loc)
        _check_adjoint_parameters(f, f_ir, params, src, loc)
        _check_names(f, params, src, "func_grad")
        f.custom_grad = CustomGrad(grad_fn, f)
        return grad_fn

    return register


def _matching_overload(forward_fn, params, src, loc, what):
    """The overload whose parameter types begin (func_grad) or equal (func_replay) ``params``'."""
    types = [t for _, t, _ in params]
    for f in forward_fn.overloads:
        f_types = [t for _, t, _ in f.parameters()]
        n = len(f_types)
        if types[:n] == f_types and (what == "func_grad" or len(types) == n):
            return f
    if len(forward_fn.overloads) == 1:
        f_params = forward_fn.parameters()
        for (name, t, node), (f_name, f_t, _) in zip(params, f_params):
            if t != f_t:
                raise KernelTypeError(f"@wp.{what}: parameter '{name}' is {T.type_name(t)}, but parameter "
                                      f"'{f_name}' of {forward_fn.__name__} is {T.type_name(f_t)}",
                                      src.loc(node))
        raise KernelTypeError(f"@wp.{what}: {forward_fn.__name__} takes {len(f_params)} parameter(s) "
                              f"({_signature(t for _, t, _ in f_params)}), the {what} function "
                              f"{len(params)}", loc)
    overloads = "; ".join(f"({_signature(t for _, t, _ in f.parameters())})" for f in forward_fn.overloads)
    raise KernelTypeError(f"@wp.{what}: no overload of {forward_fn.__name__} takes ({_signature(types)}) "
                          f"first; its overloads take {overloads}", loc)


def _check_adjoint_parameters(f, f_ir, params, src, loc):
    n = len(f.parameters())
    want, got = result_types(f_ir.return_type), params[n:]
    spelled = ", ".join(f"adj_ret: {T.type_name(t)}" if len(want) == 1 else f"adj_ret_{k}: {T.type_name(t)}"
                        for k, t in enumerate(want))
    if len(got) < len(want):
        raise KernelTypeError(f"@wp.func_grad: after the parameters of {f.__name__}, add the adjoint of its "
                              f"result ({spelled})", loc)
    if len(got) > len(want):
        what = f"({spelled})" if want else f"nothing: {f.__name__} returns no value"
        raise KernelTypeError(f"@wp.func_grad: after the parameters of {f.__name__} come the adjoints of its "
                              f"results {what}; '{got[len(want)][0]}' is one too many", src.loc(got[len(want)][2]))
    for (name, t, node), w in zip(got, want):
        if t != w:
            raise KernelTypeError(f"@wp.func_grad: '{name}' receives the adjoint of a {T.type_name(w)} result "
                                  f"of {f.__name__}, but is annotated {T.type_name(t)}", src.loc(node))


class _AdjointPlace:
    """``wp.adjoint[x]`` as an assignment target: the slot of parameter ``x`` (frontend/places.py)."""

    def __init__(self, lw, node, name, value, writable):
        self.lw, self.node, self.name, self.value, self.writable = lw, node, name, value, writable

    def get(self):
        return self.value

    def set(self, value, stmt):
        if not self.writable:
            raise KernelTypeError(f"wp.adjoint[{self.name}] is the gradient array of '{self.name}': write "
                                  f"its elements (wp.adjoint[{self.name}][i] += g)", self.lw.src.loc(stmt))
        value = self.lw.coerce(value, self.value.type, stmt, f"wp.adjoint[{self.name}]")
        self.lw.stmts.append(ir.Assign(self.value, ir.Copy(value), self.lw.src.loc(stmt)))


class _GradLowerer(Lowerer):
    """Lowers a ``@wp.func_grad`` body: ``wp.adjoint[x]`` names a slot, every exit returns the slots."""

    def __init__(self, custom: CustomGrad, f_ir, symbol):
        src = get_source(custom.fn)
        params = _parameters(custom.fn, src)
        n = len(f_ir.params)
        self.inputs = [name for name, _, _ in params[:n]]
        types = {name: t for name, t, _ in params}
        # hidden parameters (not identifiers, so the body cannot name them): the gradient arrays
        types.update({f"{name}.grad": t for name, t, _ in params[:n] if T.is_array(t)})
        super().__init__(src, types, is_kernel=False, symbol=symbol)
        self.f_name = custom.forward.__name__
        self.slots = {}
        self.slot_order = []
        for k, (name, t, _) in enumerate(params[:n]):
            if _has_adjoint(t):
                self.slots[name] = self.new_value(t, "adj_" + name, mutable=True)
                self.slot_order.append(k)

    def run(self) -> ir.Function:
        fn = super().run()
        self.stmts.append(ir.Return(self.slot_result(self.src.tree), self.src.loc(self.src.tree)))
        slots = list(self.slots.values())
        fn.return_type = (None if not slots else slots[0].type if len(slots) == 1
                          else T.TupleType(tuple(s.type for s in slots)))
        return fn

    def slot_result(self, node):
        slots = list(self.slots.values())
        if len(slots) <= 1:
            return slots[0] if slots else None
        t = T.TupleType(tuple(s.type for s in slots))
        return self.call("make_tuple", slots, node, (t,))

    def visit_Return(self, node):
        if node.value is not None:
            raise KernelTypeError("a @wp.func_grad function returns nothing: it writes wp.adjoint[...]",
                                  self.src.loc(node))
        self.stmts.append(ir.Return(self.slot_result(node), self.src.loc(node)))

    def adjoint_place(self, node):
        name = node.slice.id if isinstance(node.slice, ast.Name) else None
        loc = self.src.loc(node)
        if name not in self.inputs:
            what = f"'{name}' is not one" if name else f"'{ast.unparse(node.slice)}' is not a parameter name"
            raise KernelTypeError(f"wp.adjoint[...] takes a parameter of {self.f_name} "
                                  f"({', '.join(self.inputs)}); {what}", loc)
        param = self.fn.params[self.inputs.index(name)]
        if self.symbols.get(name) is not param:
            raise KernelTypeError(f"wp.adjoint[{name}]: '{name}' was reassigned in this function, so it no longer "
                                  "names the parameter", loc)
        if T.is_array(param.type):
            return _AdjointPlace(self, node, name, self.fn.params[self.fn.param_names.index(name + ".grad")], False)
        if name not in self.slots:
            raise KernelTypeError(f"parameter '{name}' of {self.f_name} is {T.type_name(param.type)}: it has no "
                                  "adjoint", loc)
        if T.is_struct(param.type) and any(T.is_array(t) for t in param.type._tw_fields_.values()):
            raise KernelTypeError(f"wp.adjoint[{name}]: structs holding arrays have no adjoint in a "
                                  "@wp.func_grad function", loc)
        return _AdjointPlace(self, node, name, self.slots[name], True)


# ---- @wp.func_replay ------------------------------------------------------------------------------


def func_replay(forward_fn):
    """Decorator: the function below replaces ``forward_fn`` (the overload with the same parameter
    types) wherever a backward pass replays a call of it."""

    def register(replay_fn):
        
        src, loc = _check_target(forward_fn, replay_fn, "func_replay")
        params = _parameters(replay_fn, src)
        f = _matching_overload(forward_fn, params, src, loc, "func_replay")
        _check_names(f, params, src, "func_replay")
        replay = Function(replay_fn)
        replay.replay_loc = loc
        f.custom_replay = replay
        return replay_fn

    return register


def replay_of(f_ir):
    """The function a backward pass calls to replay ``f_ir`` (its @wp.func_replay, else itself
    without the memory writes: those happened in the forward launch)."""
    replay = getattr(f_ir.origin, "custom_replay", None)
    if replay is None:
        from .prepare import without_side_effects

        return without_side_effects(f_ir)
    types = tuple(p.type for p in f_ir.params)
    r_ir = replay._tw_specialize(types, replay.replay_loc)
    if r_ir.return_type != f_ir.return_type:
        raise KernelTypeError(f"@wp.func_replay: {replay.__name__} returns {T.type_name(r_ir.return_type)}, "
                              f"{f_ir.name} returns {T.type_name(f_ir.return_type)}", replay.replay_loc)
    return r_ir


def custom_grad_of(f_ir) -> CustomGrad | None:
    return getattr(f_ir.origin, "custom_grad", None)


# ---- wp.grad --------------------------------------------------------------------------------------


class GradWrapper:
    """``wp.grad(f)``: called in kernel code with f's arguments, gives f's gradient for each of them."""

    def __init__(self, func):
        self.func = func

    def __call__(self, *args, **kwargs):
        raise RuntimeError("wp.grad(f)(...) can only be called inside kernels and @wp.func functions")

    def __repr__(self):
        return f"wp.grad({getattr(self.func, '__name__', self.func)})"

    def _tw_lower_call(self, lw, node):
        return _lower_grad_call(lw, self.func, node)


def grad(func) -> GradWrapper:
    """The gradient of a ``@wp.func`` or builtin: ``wp.grad(f)(x, y)`` in kernel code gives
    ``(df/dx, df/dy)`` (one value for a single parameter) for an adjoint of one in every component of
    f's result. It is forward code: no gradient flows through it in a backward pass."""
    
    if not isinstance(func, (Function, Builtin)):
        raise TypeError(f"wp.grad() takes a @wp.func function or a builtin, got {type(func).__name__}")
    return GradWrapper(func)


def _lower_wp_grad(lw, node):
    """``wp.grad(f)`` in kernel code: a compile-time GradWrapper."""
    
    if len(node.args) != 1 or node.keywords:
        raise KernelTypeError("wp.grad() takes one function: wp.grad(f)(x)", lw.src.loc(node))
    target = lw.visit(node.args[0])
    if not isinstance(target, (Function, Builtin)):
        raise KernelTypeError("wp.grad() takes a @wp.func function or a builtin", lw.src.loc(node.args[0]))
    return GradWrapper(target)


grad._tw_lower_call = _lower_wp_grad


@dataclass(eq=False)
class GradTarget:
    """What a ``wp.grad`` call differentiates (the IR Call's template)."""

    func: object  # an ir.Function, or a Builtin
    arg_types: tuple
    result: object  # the type of the differentiated call's result

    def __repr__(self):
        return f"grad {getattr(self.func, 'name', self.func)}"


#: ``wp.grad(f)(args)``: no gradient flows through it (Warp treats it as a constant as well); its C++
#: (f's adjoint called on zeroed gradients) is printed by emit/custom.py: grad_call
GRAD = Builtin("grad", lambda args, template: _gradient_type(template[0].arg_types), "", differentiable=False,
               emit=lambda args, template: grad_call(args, template[0]))
grad_call = None  # set by emit/custom.py at import


def _gradient_type(types):
    return types[0] if len(types) == 1 else T.TupleType(tuple(types))


def _lower_grad_call(lw, target, node):
    loc = lw.src.loc(node)
    if isinstance(target, Function):
        func, args = bind_call(lw, target, node)
        f_ir = func._tw_specialize(tuple(a.type for a in args), loc)
        result = f_ir.return_type
    else:
        func, f_ir = target, target
        args, result = _builtin_call(lw, target, node)
    name = getattr(func, "__name__", None) or func.name
    if not args or result is None:
        raise KernelTypeError(f"wp.grad({name}): {name} needs arguments and a result to differentiate", loc)
    if any(T.is_array(a.type) for a in args):
        raise KernelTypeError(f"wp.grad({name}): the gradient of an array argument is an array; "
                              "wp.grad() takes values only", loc)
    if any(T.is_struct(t) for t in result_types(result)):
        raise KernelTypeError(f"wp.grad({name}): {name} returns a struct; wp.grad() seeds numbers, vectors "
                              "and matrices with ones", loc)
    t = GradTarget(f_ir, tuple(a.type for a in args), result)
    return lw.assign(ir.Call(GRAD, tuple(args), (t,)), _gradient_type(t.arg_types), node, "grad")


def _builtin_call(lw, b: Builtin, node):
    loc = lw.src.loc(node)
    if node.keywords:
        raise KernelTypeError(f"wp.grad({b.name})() takes no keyword arguments", loc)
    if not b.differentiable or b.side_effect or b.kernel_context or b.undefined_gradient or (
            b.adjoint is None and b.adjoint_emit is None):
        raise KernelTypeError(f"wp.grad({b.name}): {b.name}() has no gradient", loc)
    args = [lw.value(a) for a in node.args]
    if b.unify_literals:
        args = lw.unify(args)
    args = [lw.const(a.const, a.type) if a.weak else a for a in args]
    try:
        result = b.type_rule(tuple(a.type for a in args), ())
    except BuiltinTypeError as e:
        raise KernelTypeError(f"wp.grad({b.name}): {e}", loc) from None
    return args, result
