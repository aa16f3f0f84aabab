"""Vector and matrix builtins: construction, components, products, norms."""
from __future__ import annotations

from .. import types as T
from .registry import Builtin, arity, fail, names, register, same


def _vec_rule(pred, result=lambda t: t, what="vector"):
    def rule(args, template):
        t = same(args)
        if not pred(t) or not T.is_float(T.scalar_of(t)):
            fail(f"expects float {what} arguments, got ({names(args)})")
        return result(t)

    return rule


_vec = T.is_vector
_scalar_result = lambda t: t._wp_scalar_type_  # noqa: E731


@arity(2)
def _cw(args, template):
    t = same(args)
    if not T.is_composite(t):
        fail(f"expects two vectors or matrices, got ({names(args)})")
    return t


@arity(2)
def _outer(args, template):
    a, b = args
    if not (T.is_vector(a) and T.is_vector(b)) or a._wp_scalar_type_ != b._wp_scalar_type_:
        fail(f"expects two vectors of one scalar type, got ({names(args)})")
    return T.matrix((a._length_, b._length_), a._wp_scalar_type_)


def _square(result):
    def rule(args, template):
        (m,) = args
        if not T.is_matrix(m) or m._wp_shape_[0] != m._wp_shape_[1]:
            fail(f"expects a square matrix, got ({names(args)})")
        return result(m)

    return arity(1)(rule)


@arity(1)
def _transpose(args, template):
    (m,) = args
    if not T.is_matrix(m):
        fail(f"expects a matrix, got ({names(args)})")
    return T.matrix(m._wp_shape_[::-1], m._wp_scalar_type_)


def _construct(args, template):
    """``vec3(...)``, ``mat33(...)``, ``float64(x)``: the type is ``template[0]``."""
    (t,) = template
    s = T.scalar_of(t)
    n = t._length_ if T.is_composite(t) else 1
    if T.is_scalar(t):
        if len(args) != 1 or not T.is_scalar(args[0]):
            fail(f"{T.type_name(t)}() takes one scalar, got ({names(args)})")
    elif len(args) == 1 and T.is_composite(args[0]) and args[0]._wp_shape_ == t._wp_shape_:
        pass  # conversion between scalar types of the same shape
    elif len(args) not in (0, 1, n) or any(a != s for a in args):
        fail(f"{T.type_name(t)}() takes 0, 1 or {n} {T.type_name(s)} values, got ({names(args)})")
    return t


def _construct_cpp(a, template):
    (t,) = template
    if T.is_scalar(t):
        return f"tw::cast<{t._cpp_}>({a[0]})"
    if len(a) == 1 and not a[0][:1].isdigit() and "(" not in a[0] and a[0].startswith("tw::vec"):
        return f"{t._cpp_}({a[0]})"
    return f"{t._cpp_}({', '.join(a)})"


def _identity(args, template):
    n, dtype = template
    if args:
        fail("takes no positional values: wp.identity(n=3, dtype=float)")
    return T.matrix((n, n), dtype)


def _index_rule(args, template):
    t, *idx = args
    if any(not T.is_int(i) for i in idx):
        fail(f"component indices must be integers, got ({names(idx)})")
    if T.is_vector(t) and len(idx) == 1:
        return t._wp_scalar_type_
    if T.is_matrix(t) and len(idx) == 2:
        return t._wp_scalar_type_
    if T.is_matrix(t) and len(idx) == 1:
        return T.vector(t._wp_shape_[1], t._wp_scalar_type_)
    fail(f"cannot index {T.type_name(t)} with {len(idx)} indices")


def _with_component_rule(args, template):
    t, *idx, value = args
    expected = _index_rule((t, *idx), template)
    if value != expected:
        fail(f"assigning {T.type_name(value)} to a component of type {T.type_name(expected)}")
    return t


#: ``m[i]`` of a matrix is its row: (builtin, matrix indexed with one index) -> the row builtin
ROW_VARIANTS = {"extract": "extract_row", "with_component": "with_row"}


def component_builtin(name: str, t, n_indices: int) -> str:
    """The builtin that reads (``extract``) or writes (``with_component``) ``t[idx]`` for ``n_indices``."""
    return ROW_VARIANTS[name] if T.is_matrix(t) and n_indices == 1 else name


register(
    Builtin("construct", _construct, "", unify_literals=True, emit=lambda a, t: _construct_cpp(a, t),
            adjoint="tw::adj_construct"),
    Builtin("identity", _identity, "tw::identity", differentiable=False,
            emit=lambda a, t: f"tw::identity<{t[0]}, {t[1]._cpp_}>()"),
    Builtin("extract", _index_rule, "tw::extract", unify_literals=False, adjoint="tw::adj_extract"),
    Builtin("with_component", _with_component_rule, "tw::with_component", unify_literals=False,
            adjoint="tw::adj_with_component"),
    Builtin("extract_row", _index_rule, "tw::extract_row", unify_literals=False,
            adjoint="tw::adj_extract_row"),
    Builtin("with_row", _with_component_rule, "tw::with_row", unify_literals=False, adjoint="tw::adj_with_row"),
    Builtin("dot", arity(2)(_vec_rule(_vec, _scalar_result)), "tw::dot", adjoint="tw::adj_dot"),
    Builtin("cross", arity(2)(_vec_rule(lambda t: _vec(t) and t._length_ == 3, what="3-vector")), "tw::cross",
            adjoint="tw::adj_cross"),
    Builtin("length", arity(1)(_vec_rule(_vec, _scalar_result)), "tw::length", adjoint="tw::adj_length"),
    Builtin("length_sq", arity(1)(_vec_rule(_vec, _scalar_result)), "tw::length_sq",
            adjoint="tw::adj_length_sq"),
    Builtin("normalize", arity(1)(_vec_rule(_vec)), "tw::normalize", adjoint="tw::adj_normalize"),
    Builtin("cw_mul", _cw, "tw::cw_mul", adjoint="tw::adj_cw_mul"),
    Builtin("cw_div", _cw, "tw::cw_div", adjoint="tw::adj_cw_div"),
    Builtin("outer", _outer, "tw::outer", adjoint="tw::adj_outer"),
    Builtin("transpose", _transpose, "tw::transpose", adjoint="tw::adj_transpose"),
    Builtin("determinant", _square(lambda m: m._wp_scalar_type_), "tw::determinant",
            adjoint="tw::adj_determinant"),
    Builtin("trace", _square(lambda m: m._wp_scalar_type_), "tw::trace", adjoint="tw::adj_trace"),
)
