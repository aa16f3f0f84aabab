"""``wp.HashGrid`` in kernels: ``hash_grid_query`` (optionally restricted to a point group),
``hash_grid_query_next``, ``hash_grid_point_id``, and the query type ``wp.HashGridQuery``.

A grid id (``uint64``) is the address of the grid's descriptor (``HashGridDesc``), which the
``wp.HashGrid`` object (tilewarp/geometry/hash_grid.py) writes after every build. The query is a
native struct (C++ and the semantics in ``native/geometry/hash_grid.h``): ``hash_grid_query_next``
returns whether it found a candidate and rebinds the query and the ``index`` variable, so
``while wp.hash_grid_query_next(query, index):`` and ``for index in wp.hash_grid_query(...)`` both
work as in Warp. None of these has a gradient (Warp's neither): they return indices.
"""
from __future__ import annotations

from ..language import types as T
from ..language.structs import native_struct
from .registry import Builtin, arity, fail, names, register

HEADER = "geometry/hash_grid.h"


@native_struct("tw::hash_grid_t", HEADER, name="HashGridDesc")
class HashGridDesc:
    """What a grid id points to (the build writes it; kernels read it)."""

    point_ids: T.uint64
    cell_starts: T.uint64
    cell_ends: T.uint64
    groups: T.uint64
    cell_width: T.float64
    dim_x: T.int32
    dim_y: T.int32
    dim_z: T.int32
    num_points: T.int32


@native_struct("tw::hash_grid_query_t", HEADER, name="HashGridQuery")
class HashGridQuery:
    """The state of a neighbour query of a ``wp.HashGrid`` (Warp's ``wp.HashGridQuery``): returned by
    ``wp.hash_grid_query``, advanced by ``wp.hash_grid_query_next``."""

    grid: T.uint64
    ids: T.uint64
    x0: T.int32
    y0: T.int32
    z0: T.int32
    nx: T.int32
    ny: T.int32
    nz: T.int32
    i: T.int32
    j: T.int32
    k: T.int32
    cursor: T.int32
    end: T.int32
    group: T.int32
    grouped: T.int32


def _query_of_precision(dtype):
    """``wp.HashGridQuery[wp.float64]`` (Warp's annotation of a query's coordinate precision): one
    query type serves every precision here, as cells are computed in double precision."""
    if dtype not in (T.float16, T.float32, T.float64):
        raise TypeError(f"HashGridQuery[...] takes float16, float32 or float64, got {T.type_name(dtype)}")
    return HashGridQuery


HashGridQuery.__class_getitem__ = classmethod(lambda cls, dtype: _query_of_precision(dtype))
HashGridQuery._tw_next_ = "hash_grid_query_next"  # `for index in query` (frontend/control.py)

_POINT_SCALARS = (T.float16, T.float32, T.float64)


def _id(t, what="id"):
    if not (T.is_scalar(t) and t._kind_ in ("int", "uint")):
        fail(f"{what} must be a grid id (wp.uint64), got {T.type_name(t)}")


@arity((3, 4))
def _query(args, template):
    _id(args[0])
    point, radius = args[1], args[2]
    if not (T.is_vector(point) and point._wp_shape_ == (3,) and T.scalar_of(point) in _POINT_SCALARS):
        fail(f"point must be a vec3, vec3h or vec3d, got ({names(args)})")
    if not (T.is_scalar(radius) and radius._kind_ in ("float", "int")):
        fail(f"max_dist must be a number, got {T.type_name(radius)}")
    if len(args) == 4 and not (T.is_scalar(args[3]) and args[3]._kind_ in ("int", "uint")):
        fail(f"group must be an int32, got {T.type_name(args[3])}")
    return HashGridQuery


@arity(2)
def _next(args, template):
    if args[0] is not HashGridQuery or args[1] is not T.int32:
        fail(f"expects (query: HashGridQuery, index: int32), got ({names(args)})")
    return T.TupleType((T.bool_, HashGridQuery, T.int32))


@arity(2)
def _point_id(args, template):
    _id(args[0])
    if not (T.is_scalar(args[1]) and args[1]._kind_ in ("int", "uint")):
        fail(f"index must be an integer, got {T.type_name(args[1])}")
    return T.int32


@arity(5)
def _cell(args, template):
    return T.int32


def _internal(n):
    @arity(n)
    def rule(args, template):
        return None

    return rule


register(
    Builtin("hash_grid_query", _query, "tw::hash_grid_query", differentiable=False, unify_literals=False,
            header=HEADER),
    Builtin("hash_grid_query_next", _next, "tw::hash_grid_query_next", differentiable=False,
            unify_literals=False, updates=(0, 1), header=HEADER),
    Builtin("hash_grid_point_id", _point_id, "tw::hash_grid_point_id", differentiable=False,
            unify_literals=False, header=HEADER),
    # (point, 1 / cell width (float64), dim_x, dim_y, dim_z) -> bucket: the build's sort key, computed
    # by the same function as the queries' cells
    Builtin("_hash_grid_cell", _cell, "tw::hash_grid_cell", differentiable=False, unify_literals=False,
            header=HEADER),
    # the CPU build's sort steps (tilewarp/geometry/hash_grid.py: _cpu_build), one chunk per call
    Builtin("_hash_grid_partition", _internal(10), "tw::hash_grid_partition", differentiable=False,
            side_effect=True, unify_literals=False, header=HEADER),
    Builtin("_hash_grid_sort_cells", _internal(11), "tw::hash_grid_sort_cells", differentiable=False,
            side_effect=True, unify_literals=False, header=HEADER),
)
