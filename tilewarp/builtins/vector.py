"""Vector and matrix builtins: construction, components, products, norms."""
from __future__ import annotations

from ..language import types as T
from .registry import Builtin, arity, fail, names, register, same


def _vec_rule(pred, result=lambda t: t, what="vector", floats_only=True):
    def rule(args, template):
        t = same(args)
        s = T.scalar_of(t)
        if not pred(t) or not (T.is_float(s) or (not floats_only and T.is_int(s))):
            fail(f"expects {'float ' if floats_only else ''}{what} arguments, got ({names(args)})")
        return result(t)

    return rule


_vec = T.is_vector
_vec_or_quat = lambda t: T.is_vector(t) or T.is_quaternion(t)  # noqa: E731
_scalar_result = lambda t: t._wp_scalar_type_  # noqa: E731


@arity(2)
def _cw(args, template):
    t = same(args)
    if not (T.is_vector(t) or T.is_matrix(t)):
        fail(f"expects two vectors or matrices, got ({names(args)})")
    return t


@arity(2)
def _outer(args, template):
    a, b = args
    if not (T.is_vector(a) and T.is_vector(b)) or a._wp_scalar_type_ != b._wp_scalar_type_:
        fail(f"expects two vectors of one scalar type, got ({names(args)})")
    return T.matrix((a._length_, b._length_), a._wp_scalar_type_)


def _square(result, sizes=None, floats_only=False):
    def rule(args, template):
        (m,) = args
        if not T.is_matrix(m) or m._wp_shape_[0] != m._wp_shape_[1]:
            fail(f"expects a square matrix, got ({names(args)})")
        if sizes and m._wp_shape_[0] not in sizes:
            fail(f"is defined for 2x2, 3x3 and 4x4 matrices, got ({names(args)})")
        if floats_only and not T.is_float(m._wp_scalar_type_):
            fail(f"expects a float matrix, got ({names(args)})")
        return result(m)

    return arity(1)(rule)


@arity(1)
def _diag(args, template):
    (v,) = args
    if not T.is_vector(v):
        fail(f"expects a vector, got ({names(args)})")
    return T.matrix((v._length_, v._length_), v._wp_scalar_type_)


@arity(1)
def _skew(args, template):
    (v,) = args
    if not T.is_vector(v) or v._length_ != 3:
        fail(f"expects a 3-vector, got ({names(args)})")
    return T.matrix((3, 3), v._wp_scalar_type_)


@arity(2)
def _ddot(args, template):
    t = same(args)
    if not T.is_matrix(t):
        fail(f"expects two matrices of one type, got ({names(args)})")
    return t._wp_scalar_type_


def _huber(result):
    """``norm_huber(v, delta=1.0)`` and kin: a float vector and, optionally, its scalar type."""

    def rule(args, template):
        if len(args) not in (1, 2):
            fail(f"takes (v, delta=1.0), got {len(args)} arguments")
        v = args[0]
        if not T.is_vector(v) or not T.is_float(v._wp_scalar_type_):
            fail(f"expects a float vector, got ({names(args)})")
        if len(args) == 2 and args[1] != v._wp_scalar_type_:
            fail(f"delta must be a {T.type_name(v._wp_scalar_type_)}, got ({names(args)})")
        return result(v)

    return rule


def _from_vectors(transpose):
    def rule(args, template):
        if not args or not T.is_vector(args[0]):
            fail(f"expects one or more vectors, got ({names(args)})")
        v = same(args)
        shape = (len(args), v._length_)
        return T.matrix(shape[::-1] if transpose else shape, v._wp_scalar_type_)

    return rule


@arity(1)
def _transpose(args, template):
    (m,) = args
    if not T.is_matrix(m):
        fail(f"expects a matrix, got ({names(args)})")
    return T.matrix(m._wp_shape_[::-1], m._wp_scalar_type_)


def _kind(t):
    return (T.is_vector(t), T.is_quaternion(t), T.is_transformation(t), T.is_matrix(t))


def _structured(t):
    """Constructor forms from parts: ``quat(ijk, w)``, ``transform(p, q)``, ``transform(p)``,
    ``spatial_vector(w, v)`` (any 6-vector, as in Warp)."""
    s = T.scalar_of(t)
    v3 = T.vector(3, s)
    if T.is_quaternion(t):
        return [(v3, s)]
    if T.is_transformation(t):
        return [(v3, T.quaternion(s)), (v3,)]
    if T.is_vector(t) and t._length_ == 6:
        return [(v3, v3)]
    return []


def _noun(t) -> str:
    """What Warp's constructor messages call ``t``."""
    if T.is_quaternion(t):
        return "quaternion"
    if T.is_transformation(t):
        return "transform"
    return "matrix" if T.is_matrix(t) else "vector"


def _size(t) -> str:
    return f"shape {tuple(t._wp_shape_)}" if T.is_matrix(t) else f"length {t._length_}"


def _construct(args, template):
    """``vec3(...)``, ``mat33(...)``, ``quat(...)``, ``float64(x)``: the type is ``template[0]``.
    Messages use Warp's wording (scripts and Warp's tests match it)."""
    (t,) = template
    s = T.scalar_of(t)
    n = t._length_ if T.is_composite(t) else 1
    if T.is_scalar(t):
        if len(args) != 1 or not T.is_scalar(args[0]):
            fail(f"takes one scalar, got ({names(args)})")
        return t
    noun = _noun(t)
    if len(args) == 1 and T.is_composite(args[0]) and _kind(args[0]) == _kind(t):
        src = args[0]
        if src._wp_shape_ != t._wp_shape_:  # Warp's words: the target's size, then the source's
            fail(f"incompatible {noun} of {_size(t)} given when copy constructing a {noun} of {_size(src)}")
        if T.is_transformation(t) and T.scalar_of(src) is not s:
            fail(f"copy constructing a transform requires matching source and target dtypes, got "
                 f"`{T.type_name(T.scalar_of(src))}` and `{T.type_name(s)}`")
        return t  # conversion between scalar types of the same shape
    if T.is_matrix(t) and any(T.is_vector(a) for a in args):
        fail("passing vectors to a matrix constructor isn't supported (as in Warp 1.19), "
             "use wp.matrix_from_rows() or wp.matrix_from_cols() instead")
    if any(T.is_composite(a) for a in args):
        if tuple(args) not in _structured(t):
            if all(T.scalar_of(a) is s for a in args if T.is_composite(a) or T.is_scalar(a)):
                forms = " or ".join(f"({names(f)})" for f in _structured(t)) or f"{n} {T.type_name(s)} values"
                fail(f"takes {forms}, got ({names(args)})")
            fail(f"all values used to initialize this {noun} are expected to be of the type `{T.type_name(s)}`")
        return t
    if len(args) == 1:
        if args[0] != s:
            fail(f"the value used to fill this {noun} is expected to be of the type `{T.type_name(s)}`")
    elif len(args) not in (0, n):
        if T.is_transformation(t) or T.is_quaternion(t):
            fail(f"incompatible number of values given ({len(args)}) when constructing a {noun}; expected 0, 1, "
                 f"or {n}")
        fail(f"incompatible number of values given ({len(args)}) when constructing a {noun} of {_size(t)}")
    elif any(a != s for a in args):
        fail(f"all values used to initialize this {noun} are expected to be of the type `{T.type_name(s)}`")
    return t


def _construct_cpp(a, template):
    (t,) = template
    if T.is_scalar(t):
        return f"tw::cast<{t._cpp_}>({a[0]})"
    return f"{t._cpp_}({', '.join(a)})"


def _identity(args, template):
    n, dtype = template
    if args or not isinstance(n, int) or isinstance(n, bool) or n < 1:
        fail("takes a constant size and a scalar type: wp.identity(n=3, dtype=float)")
    return T.matrix((n, n), dtype)


def _index_rule(args, template):
    t, *idx = args
    if any(not T.is_int(i) for i in idx):
        fail(f"component indices must be integers, got ({names(idx)})")
    if T.is_composite(t) and not T.is_matrix(t) and len(idx) == 1:  # vectors, quaternions, transforms
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
    # every constructor form is linear: its adjoint needs only the adjoints (native/core/mat.h)
    Builtin("construct", _construct, "", unify_literals=True, emit=lambda a, t: _construct_cpp(a, t),
            adjoint="tw::adj_construct", adjoint_emit=lambda a, adj, adj_ret, t: (
                f"tw::adj_construct({', '.join([adj_ret, *adj])})")),
    Builtin("identity", _identity, "tw::identity", differentiable=False,
            emit=lambda a, t: f"tw::identity<{t[0]}, {t[1]._cpp_}>()"),
    Builtin("extract", _index_rule, "tw::extract", unify_literals=False, adjoint="tw::adj_extract"),
    Builtin("with_component", _with_component_rule, "tw::with_component", unify_literals=False,
            adjoint="tw::adj_with_component"),
    Builtin("extract_row", _index_rule, "tw::extract_row", unify_literals=False,
            adjoint="tw::adj_extract_row"),
    Builtin("with_row", _with_component_rule, "tw::with_row", unify_literals=False, adjoint="tw::adj_with_row"),
    # dot/cross/length_sq take integer vectors too; dot/length/normalize take quaternions (Warp 1.19)
    Builtin("dot", arity(2)(_vec_rule(_vec_or_quat, _scalar_result, floats_only=False)), "tw::dot",
            adjoint="tw::adj_dot"),
    Builtin("cross", arity(2)(_vec_rule(lambda t: _vec(t) and t._length_ == 3, what="3-vector",
                                        floats_only=False)), "tw::cross", adjoint="tw::adj_cross"),
    Builtin("length", arity(1)(_vec_rule(_vec_or_quat, _scalar_result)), "tw::length", adjoint="tw::adj_length"),
    Builtin("length_sq", arity(1)(_vec_rule(_vec_or_quat, _scalar_result, floats_only=False)), "tw::length_sq",
            adjoint="tw::adj_length_sq"),
    Builtin("normalize", arity(1)(_vec_rule(_vec_or_quat)), "tw::normalize", adjoint="tw::adj_normalize"),
    Builtin("norm_l1", arity(1)(_vec_rule(_vec_or_quat, _scalar_result)), "tw::norm_l1", adjoint="tw::adj_norm_l1"),
    Builtin("norm_l2", arity(1)(_vec_rule(_vec_or_quat, _scalar_result)), "tw::norm_l2", adjoint="tw::adj_norm_l2"),
    # the default delta (1.0) is a C++ default argument
    Builtin("norm_huber", _huber(_scalar_result), "tw::norm_huber", adjoint="tw::adj_norm_huber"),
    Builtin("norm_pseudo_huber", _huber(_scalar_result), "tw::norm_pseudo_huber",
            adjoint="tw::adj_norm_pseudo_huber"),
    Builtin("smooth_normalize", _huber(lambda v: v), "tw::smooth_normalize", adjoint="tw::adj_smooth_normalize"),
    Builtin("cw_mul", _cw, "tw::cw_mul", adjoint="tw::adj_cw_mul"),
    Builtin("cw_div", _cw, "tw::cw_div", adjoint="tw::adj_cw_div"),
    Builtin("outer", _outer, "tw::outer", adjoint="tw::adj_outer"),
    Builtin("transpose", _transpose, "tw::transpose", adjoint="tw::adj_transpose"),
    Builtin("determinant", _square(lambda m: m._wp_scalar_type_, (2, 3, 4), True), "tw::determinant",
            adjoint="tw::adj_determinant"),
    Builtin("inverse", _square(lambda m: m, (2, 3, 4), True), "tw::inverse", adjoint="tw::adj_inverse"),
    Builtin("trace", _square(lambda m: m._wp_scalar_type_), "tw::trace", adjoint="tw::adj_trace"),
    Builtin("get_diag", _square(lambda m: T.vector(m._wp_shape_[0], m._wp_scalar_type_)), "tw::get_diag",
            adjoint="tw::adj_get_diag"),
    Builtin("diag", _diag, "tw::diag", adjoint="tw::adj_diag"),
    Builtin("skew", _skew, "tw::skew", adjoint="tw::adj_skew"),
    Builtin("ddot", _ddot, "tw::ddot", adjoint="tw::adj_ddot"),
    Builtin("matrix_from_rows", _from_vectors(False), "tw::matrix_from_rows", adjoint="tw::adj_matrix_from_rows"),
    Builtin("matrix_from_cols", _from_vectors(True), "tw::matrix_from_cols", adjoint="tw::adj_matrix_from_cols"),
)
