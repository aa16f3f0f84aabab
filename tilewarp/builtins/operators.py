"""Python operators (``+ - * / // % ** @``, comparisons, bit operations) as builtins."""
from __future__ import annotations

from ..language import types as T
from .registry import Builtin, arity, fail, names, numeric, register, returns


@arity(2)
def _mul(args, template):
    a, b = args
    sa, sb = T.scalar_of(a), T.scalar_of(b)
    if T.is_scalar(a) and T.is_scalar(b) and a == b and a is not T.bool_:
        return a
    if sa != sb:
        fail(f"operands have different scalar types ({names(args)})")
    if T.is_composite(a) and T.is_scalar(b):
        return a
    if T.is_scalar(a) and T.is_composite(b):
        return b
    return _product(a, b, "*")


@arity(2)
def _matmul(args, template):
    a, b = args
    if T.scalar_of(a) != T.scalar_of(b) or not (T.is_matrix(a) or T.is_matrix(b)):
        fail(f"'@' needs a matrix operand of matching scalar type, got ({names(args)})")
    return _product(a, b, "@")


def _product(a, b, op):
    if op == "*" and a == b and (T.is_quaternion(a) or T.is_transformation(a)):
        return a  # quaternion product, transform composition
    if T.is_matrix(a) and T.is_vector(b) and a._wp_shape_[1] == b._length_:
        return T.vector(a._wp_shape_[0], b._wp_scalar_type_)
    if T.is_vector(a) and T.is_matrix(b) and b._wp_shape_[0] == a._length_:
        return T.vector(b._wp_shape_[1], a._wp_scalar_type_)
    if T.is_matrix(a) and T.is_matrix(b) and a._wp_shape_[1] == b._wp_shape_[0]:
        return T.matrix((a._wp_shape_[0], b._wp_shape_[1]), a._wp_scalar_type_)
    if T.is_vector(a) and T.is_vector(b):
        fail(f"'{op}' of two vectors is ambiguous: use wp.dot, wp.cw_mul or wp.outer")
    fail(f"shapes do not match for '{op}': ({names((a, b))})")


@arity(2)
def _div(args, template):
    a, b = args
    if T.scalar_of(a) != T.scalar_of(b) or a is T.bool_:
        fail(f"operands have different scalar types ({names(args)})")
    if T.is_scalar(b) and (T.is_scalar(a) or T.is_composite(a)):
        return a
    if T.is_scalar(a) and (T.is_vector(b) or T.is_quaternion(b) or T.is_matrix(b)):
        return b  # s / v and s / m: element by element
    fail(f"unsupported operands for '/': ({names(args)})")


def _or_spatial(rule, transforms=True):
    """``rule``, also accepting quaternions (and transforms) of one type: Warp adds, subtracts and
    compares both, and negates quaternions."""

    def wrapped(args, template):
        t = args[0] if args else None
        if all(a == t for a in args) and (T.is_quaternion(t) or (transforms and T.is_transformation(t))):
            return T.bool_ if rule is _compare else t
        return rule(args, template)

    return wrapped


_arith = numeric(vectors=True, matrices=True)
_ints = numeric(kinds=("int", "uint"))
_logical = numeric(kinds=("int", "uint", "bool"))  # &, |, ^ on bools too (beyond Warp: masks, conditions)
_scalars = numeric()


def _compare(args, template):
    numeric(kinds=("int", "uint", "float", "bool"), vectors=True, matrices=True)(args, template)
    return T.bool_


register(
    Builtin("add", arity(2)(_or_spatial(_arith)), "tw::add", adjoint="tw::adj_add"),
    Builtin("sub", arity(2)(_or_spatial(_arith)), "tw::sub", adjoint="tw::adj_sub"),
    Builtin("mul", _mul, "tw::mul", adjoint="tw::adj_mul"),
    Builtin("matmul", _matmul, "tw::mul", adjoint="tw::adj_mul"),
    Builtin("div", _div, "tw::div", adjoint="tw::adj_div"),
    # componentwise on two vectors of one type, as Warp (fmod for floats, C's % for integers)
    Builtin("mod", arity(2)(numeric(vectors=True)), "tw::mod", adjoint="tw::adj_mod"),
    Builtin("floordiv", arity(2)(_scalars), "tw::floordiv", differentiable=False),
    Builtin("pow", arity(2)(numeric()), "tw::pow", adjoint="tw::adj_pow"),  # integers: beyond Warp
    Builtin("neg", arity(1)(_or_spatial(_arith, transforms=False)), "tw::neg", adjoint="tw::adj_neg"),
    Builtin("pos", arity(1)(_or_spatial(_arith, transforms=False)), "tw::pos", adjoint="tw::adj_pos"),
    Builtin("bit_and", arity(2)(_logical), "tw::bit_and", differentiable=False),
    Builtin("bit_or", arity(2)(_logical), "tw::bit_or", differentiable=False),
    Builtin("bit_xor", arity(2)(_logical), "tw::bit_xor", differentiable=False),
    Builtin("lshift", arity(2)(_ints), "tw::lshift", differentiable=False),
    Builtin("rshift", arity(2)(_ints), "tw::rshift", differentiable=False),
    Builtin("invert", arity(1)(_ints), "tw::invert", differentiable=False),
    Builtin("eq", arity(2)(_or_spatial(_compare)), "tw::eq", differentiable=False),
    Builtin("ne", arity(2)(_or_spatial(_compare)), "tw::ne", differentiable=False),
    Builtin("lt", arity(2)(returns(T.bool_, _scalars)), "tw::lt", differentiable=False),
    Builtin("le", arity(2)(returns(T.bool_, _scalars)), "tw::le", differentiable=False),
    Builtin("gt", arity(2)(returns(T.bool_, _scalars)), "tw::gt", differentiable=False),
    Builtin("ge", arity(2)(returns(T.bool_, _scalars)), "tw::ge", differentiable=False),
    Builtin("bool_not", arity(1)(returns(T.bool_, numeric(kinds=("bool",)))), "!",
            differentiable=False, emit=lambda a, t: f"(!{a[0]})"),
)

#: ast operator class name -> builtin name (data, not an if-ladder)
BINARY = {"Add": "add", "Sub": "sub", "Mult": "mul", "Div": "div", "Mod": "mod", "FloorDiv": "floordiv",
          "Pow": "pow", "MatMult": "matmul", "BitAnd": "bit_and", "BitOr": "bit_or", "BitXor": "bit_xor",
          "LShift": "lshift", "RShift": "rshift"}
UNARY = {"USub": "neg", "UAdd": "pos", "Invert": "invert", "Not": "bool_not"}
COMPARE = {"Eq": "eq", "NotEq": "ne", "Lt": "lt", "LtE": "le", "Gt": "gt", "GtE": "ge"}
