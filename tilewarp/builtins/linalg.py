"""Small dense linear algebra builtins (Warp 1.19): svd3, svd2, qr3, eig3, inverse_approx, argmin/argmax.

The factorisations return tuples (``U, sigma, V = wp.svd3(A)``) and also take Warp's
output-argument form (``wp.svd3(A, U, sigma, V)`` assigns the local variables U, sigma, V; see
``Builtin.outputs``). C++ in ``native/core/linalg.h`` (argmin/argmax in ``vec.h``).
"""
from __future__ import annotations

from ..language import types as T
from .registry import Builtin, fail, names, register


def _factorisation(name, n, parts, outputs):
    """Rule for ``name(A)`` with A a float n x n matrix; ``parts`` maps the scalar type to the results."""

    def rule(args, template):
        m = args[0] if len(args) == 1 else None
        if not (T.is_matrix(m) and m._wp_shape_ == (n, n) and T.is_float(m._wp_scalar_type_)):
            fail(f"expects a float {n}x{n} matrix: wp.{name}(A) or wp.{name}(A, {outputs}), "
                 f"got ({names(args)})")
        return T.TupleType(parts(m._wp_scalar_type_))

    return rule


def _mat(n):
    return lambda s: T.matrix((n, n), s)


def _svd(n):
    return lambda s: (_mat(n)(s), T.vector(n, s), _mat(n)(s))


def _inverse_approx(args, template):
    m = args[0] if len(args) == 1 else None
    if not (T.is_matrix(m) and m._wp_shape_ in ((2, 2), (3, 3), (4, 4)) and T.is_float(m._wp_scalar_type_)):
        fail(f"expects a float 2x2, 3x3 or 4x4 matrix, got ({names(args)})")
    return m


def _arg_extreme(args, template):
    v = args[0] if len(args) == 1 else None
    if not T.is_vector(v):
        fail(f"expects one vector, got ({names(args)})")
    return T.uint32


register(
    # Singular values by decreasing magnitude, U and V rotations (sigma[2] has the sign of det A);
    # at repeated singular values the adjoint uses Warp's clamped formula (large, finite gradients).
    Builtin("svd3", _factorisation("svd3", 3, _svd(3), "U, sigma, V"), "tw::svd3", adjoint="tw::adj_svd3",
            outputs=3),
    Builtin("svd2", _factorisation("svd2", 2, _svd(2), "U, sigma, V"), "tw::svd2", adjoint="tw::adj_svd2",
            outputs=3),
    Builtin("qr3", _factorisation("qr3", 3, lambda s: (_mat(3)(s), _mat(3)(s)), "Q, R"), "tw::qr3",
            adjoint="tw::adj_qr3", outputs=2),
    Builtin("eig3", _factorisation("eig3", 3, lambda s: (_mat(3)(s), T.vector(3, s)), "Q, d"), "tw::eig3",
            adjoint="tw::adj_eig3", outputs=2),
    Builtin("inverse_approx", _inverse_approx, "tw::inverse_approx", adjoint="tw::adj_inverse_approx"),
    Builtin("argmin", _arg_extreme, "tw::argmin", differentiable=False),
    Builtin("argmax", _arg_extreme, "tw::argmax", differentiable=False),
)
