"""Queries on geometric primitives, with Warp 1.19's names and semantics:

* ``closest_point_edge_edge(p1, q1, p2, q2, epsilon) -> vec3(s, t, d)``: the closest points
  ``p1 + s (q1 - p1)`` and ``p2 + t (q2 - p2)`` of two segments and their distance; an edge whose
  squared length is ``<= epsilon`` is a point (weight 0). Differentiable: the distance's gradient is
  bounded for parallel edges (the envelope of the minimum), ``s`` and ``t`` are differentiated
  through the conditions that fix them.
* ``intersect_tri_tri(v0, v1, v2, u0, u1, u2) -> int``: 1 when two triangles share a point
  (touching and coplanar overlap included, degenerate triangles handled), else 0; no gradient.

Both take float32 or float64 vectors (Warp has closest_point_edge_edge for vec3 only; the vec3d form
is tilewarp's). The C++ is ``native/geometry/primitives.h``, included only by the kernels that call
these (``Builtin.header``), so no other kernel pays for compiling it.
"""
from __future__ import annotations

from ..language import types as T
from .registry import Builtin, fail, names, register

_HEADER = "geometry/primitives.h"
_FLOATS = (T.float32, T.float64)


def _vec3_of(args):
    """The float scalar type of ``args``, all one vec3 type; None otherwise."""
    s = T.scalar_of(args[0]) if args and T.is_vector(args[0]) else None
    ok = s in _FLOATS and all(a == T.vector(3, s) for a in args)
    return s if ok else None


def _closest_point_edge_edge(args, template):
    s = _vec3_of(args[:4]) if len(args) == 5 else None
    if s is None or args[4] is not s:
        fail("expects (p1: vec3, q1: vec3, p2: vec3, q2: vec3, epsilon: float) of one float type (float32 or "
             f"float64), got ({names(args)})")
    return T.vector(3, s)


def _intersect_tri_tri(args, template):
    if len(args) != 6 or _vec3_of(args) is None:
        fail(f"expects six vertices (v0, v1, v2, u0, u1, u2) of one type, vec3 or vec3d, got ({names(args)})")
    return T.int32


register(
    Builtin("closest_point_edge_edge", _closest_point_edge_edge, "tw::closest_point_edge_edge",
            adjoint="tw::adj_closest_point_edge_edge", header=_HEADER),
    Builtin("intersect_tri_tri", _intersect_tri_tri, "tw::intersect_tri_tri", differentiable=False,
            header=_HEADER),
)
