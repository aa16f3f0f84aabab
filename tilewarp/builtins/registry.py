"""The builtin table every stage reads: one ``Builtin`` entry per kernel-side function.

An entry gives the name users call, a type rule (argument types -> result type, raising
``BuiltinTypeError`` with a user-facing message), the C++ function implementing it (overloaded
by type in ``native/``), and what autodiff needs: the adjoint's C++ name, or
``differentiable=False`` for functions with no gradient (integer ops, comparisons, random).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..language import types as T


class BuiltinTypeError(Exception):
    """Raised by a type rule; the frontend adds the user's file:line and the builtin's name,
    ``name(): message``, or ``name() message`` where the text continues the name (``sentence``)."""

    def __init__(self, message: str, sentence: bool = False):
        super().__init__(message)
        self.separator = " " if sentence else ": "


@dataclass(frozen=True, eq=False)
class Builtin:
    name: str
    type_rule: Callable  # (arg_types: tuple, template: tuple) -> result type or None
    cpp: str
    adjoint: str | None = None
    differentiable: bool = True
    side_effect: bool = False  # stores, atomics: never replayed, never dropped
    unify_literals: bool = True  # bare Python literals take the other arguments' scalar type
    kernel_context: bool = False  # needs the launch bounds and task index (tid)
    emit: Callable | None = None  # (cpp_args: list[str], template: tuple) -> C++ expression
    host: Callable | None = None  # evaluation when called from Python outside kernels
    # (cpp_args, cpp_adj_args, cpp_adj_ret, template) -> C++ statement, for entries with `emit`
    adjoint_emit: Callable | None = None
    # the reverse pass raises (naming the user's line) when a gradient would have to flow through it
    undefined_gradient: bool = False
    # Warp's output-argument form: called with this many extra trailing arguments, those are local
    # variables that receive the elements of the (tuple) result, e.g. ``wp.svd3(A, U, sigma, V)``
    outputs: int = 0
    # the first argument is a local variable updated with the result and the call has no value,
    # e.g. ``wp.transform_set_translation(xform, p)``
    in_place: bool = False
    # (template) -> C++ declaration of a buffer the call uses, which the emitter places once at the
    # top of the function (the storage of ``wp.zeros`` local arrays)
    storage: Callable | None = None
    # arguments (by position) the call reads and writes back: the IR call returns a tuple of its value
    # then the new value of each, and the frontend rebinds those local variables, e.g.
    # ``wp.hash_grid_query_next(query, index)`` advances ``query`` and sets ``index``
    updates: tuple = ()
    # Warp's older output-argument form of a builtin returning a struct: ``(k, fields)`` says it may be
    # called with local variables after its first k arguments, which receive those fields of the
    # result, the call's value being the ``result`` field, e.g. ``wp.mesh_query_point(id, p, d, sign,
    # face, u, v)``
    legacy: tuple | None = None
    # a native header beyond the umbrella ``tilewarp.h`` (relative to native/), included only by the
    # kernels that call the builtin, so the geometry family costs nothing to the others' compiles
    header: str | None = None

    def __call__(self, *args, **kwargs):
        if self.host is None:  # the kernel implementation, run on the CPU (api/host_calls.py)
            return host_call(self, args, kwargs)
        return self.host(*args, **kwargs)

    def __repr__(self):
        return f"<builtin {self.name}>"


REGISTRY: dict[str, Builtin] = {}

#: builtins kernel code reaches through Python syntax (operators, subscripts, constructors, tuples):
#: not exported as ``wp.<name>``, except the operators Warp also has as functions (``wp.add``, ...)
SYNTAX_ONLY = frozenset({
    "matmul", "eq", "ne", "lt", "le", "gt", "ge", "bool_not", "construct", "extract", "with_component",
    "extract_row", "with_row", "load", "view", "store", "store_component", "shape", "cast", "make_tuple",
    "tuple_get", "struct_new", "struct_get", "struct_set"})


def public(name: str):
    """The builtin Warp scripts call as ``wp.<name>``, else None."""
    b = REGISTRY.get(name)
    return b if b is not None and name not in SYNTAX_ONLY else None


#: how a builtin called from Python runs: api/host_calls.py installs ``call(builtin, args, kwargs)``,
#: which compiles a one-thread kernel (the API layer sits above this table)
host_call = None


def register(*entries: Builtin) -> None:
    for b in entries:
        if b.name in REGISTRY:
            raise ValueError(f"builtin {b.name!r} registered twice")
        REGISTRY[b.name] = b


def lookup(name: str) -> Builtin:
    return REGISTRY[name]


# ---- type-rule helpers shared by the tables -----------------------------------------------------


def fail(msg: str, sentence: bool = False):
    raise BuiltinTypeError(msg, sentence)


def names(types) -> str:
    return ", ".join(T.type_name(t) for t in types)


def arity(n):
    """Wrap a rule so a wrong argument count gives one clear message."""

    def wrap(rule):
        def checked(args, template):
            if len(args) not in (n if isinstance(n, tuple) else (n,)):
                fail(f"takes {n} argument(s), got {len(args)}")
            return rule(args, template)

        return checked

    return wrap


def same(args):
    if any(a != args[0] for a in args[1:]):
        fail(f"arguments must have the same type, got ({names(args)})")
    return args[0]


def numeric(kinds=("int", "uint", "float"), vectors=False, matrices=False):
    """Rule for elementwise functions: all arguments one type, a scalar of ``kinds`` (or vec/mat)."""

    def rule(args, template):
        t = same(args)
        ok = (T.is_scalar(t) and t._kind_ in kinds) or (vectors and T.is_vector(t)) or (
            matrices and T.is_matrix(t))
        if not ok or (T.is_composite(t) and T.scalar_of(t)._kind_ not in kinds):
            fail(f"unsupported argument type ({names(args)})")
        return t

    return rule


def returns(result, rule):
    """Run ``rule`` for its checks, then return a fixed type (e.g. bool for comparisons)."""

    def wrapped(args, template):
        rule(args, template)
        return result

    return wrapped
