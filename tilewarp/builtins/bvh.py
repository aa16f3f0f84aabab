"""``wp.Bvh`` in kernels: the iterating queries ``bvh_query_aabb`` / ``_ray`` / ``_sphere`` /
``_capsule`` with ``bvh_query_next``, ``bvh_get_group_root``, the query type ``wp.BvhQuery``, and the
build steps ``tilewarp/geometry/bvh.py`` launches (internal, ``_bvh_*``).

A BVH id is the address of its descriptor (``BvhDesc``); a mesh's descriptor starts with one, so
a mesh id is also the id of its tree. The C++, the node layout and the stackless walk the queries
use are in ``native/geometry/bvh.h``. Queries return item indices: no gradient (as in Warp).
"""
from __future__ import annotations

from ..language import types as T
from ..language.structs import native_struct
from .registry import Builtin, arity, fail, names, register

HEADER = "geometry/bvh.h"
SAH_HEADER = "geometry/bvh_sah.h"  # the CPU's SAH / median builds, included only by their kernels


@native_struct("tw::bvh_t", HEADER, name="BvhDesc")
class BvhDesc:
    """What a BVH id points to (the build writes it; kernels read it)."""

    nodes: T.uint64
    ends: T.uint64
    parents: T.uint64
    count: T.uint64
    items: T.uint64
    num_items: T.int32
    leaf_size: T.int32
    num_groups: T.int32
    num_nodes: T.int32
    links: T.uint64
    build_parents: T.uint64
    ranges: T.uint64
    sizes: T.uint64
    remap: T.uint64
    counters: T.uint64
    keys: T.uint64
    lowers: T.uint64
    uppers: T.uint64
    points: T.uint64
    indices: T.uint64
    tris: T.uint64
    group_ids: T.uint64
    group_roots: T.uint64
    prims: T.uint64
    tasks: T.uint64
    num_points: T.int32
    spare: T.int32
    group_count: T.uint64


def _query_fields(cls):
    cls.__annotations__ = {
        "bvh": T.uint64, "a": T.vec3, "b": T.vec3, "inv": T.vec3, "radius": T.float32, "kind": T.int32,
        "root": T.int32, "node": T.int32, "down": T.int32, "prev": T.int32, "cursor": T.int32, "end": T.int32}
    return cls


@native_struct("tw::bvh_query_t", HEADER, name="BvhQuery")
@_query_fields
class BvhQuery:
    """The state of an iterating BVH query (Warp's ``wp.BvhQuery``): from ``wp.bvh_query_aabb``,
    ``_ray``, ``_sphere`` or ``_capsule``, advanced by ``wp.bvh_query_next``."""


@native_struct("tw::bvh_query_t", HEADER, name="MeshQueryAABB")
@_query_fields
class MeshQueryAABB:
    """The state of a mesh box or sphere query (Warp's ``wp.MeshQueryAABB`` / ``wp.MeshQuery``), advanced
    by ``wp.mesh_query_next``: the same walk as a BVH query, over the mesh's triangles."""


BvhQuery._tw_next_ = "bvh_query_next"
MeshQueryAABB._tw_next_ = "mesh_query_next"
QUERIES = (BvhQuery, MeshQueryAABB)


def is_vec3(t) -> bool:
    return t is T.vec3


def check_id(t, what="id"):
    if not (T.is_scalar(t) and t._kind_ in ("int", "uint")):
        fail(f"{what} must be an object id (wp.uint64), got {T.type_name(t)}")


def check_int(t, what):
    if not (T.is_scalar(t) and t._kind_ in ("int", "uint")):
        fail(f"{what} must be an integer, got {T.type_name(t)}")


def check_float(t, what):
    if not (T.is_scalar(t) and t._kind_ in ("float", "int")):
        fail(f"{what} must be a float, got {T.type_name(t)}")


def _shape(*spec):
    """A query constructor's rule: ``spec`` names each argument after the id ('vec3', 'float'), then
    an optional int root."""

    def rule(args, template):
        if len(args) not in (len(spec) + 1, len(spec) + 2):
            fail(f"takes {len(spec) + 1} or {len(spec) + 2} arguments, got {len(args)}")
        check_id(args[0])
        for (name, kind), t in zip(spec, args[1:]):
            if kind == "vec3" and not is_vec3(t):
                fail(f"{name} must be a vec3, got ({names(args)})")
            if kind == "float":
                check_float(t, name)
        if len(args) == len(spec) + 2:
            check_int(args[-1], "root")
        return BvhQuery

    return rule


def _next_rule(query_type, max_dist=True):
    def rule(args, template):
        counts = (2, 3) if max_dist else (2,)
        if len(args) not in counts or args[0] not in QUERIES or args[1] is not T.int32:
            extra = "[, max_dist: float]" if max_dist else ""
            fail(f"expects (query: {query_type.__name__}, index: int32{extra}), got ({names(args)})")
        if len(args) == 3:
            check_float(args[2], "max_dist")
        return T.TupleType((T.bool_, args[0], T.int32))

    return rule


@arity(2)
def _group_root(args, template):
    check_id(args[0])
    check_int(args[1], "group")
    return T.int32


def _internal(result, n):
    @arity(n)
    def rule(args, template):
        return result

    return rule


def _query(name, *spec):
    return Builtin(name, _shape(*spec), "tw::" + name, differentiable=False, unify_literals=False, header=HEADER)


register(
    _query("bvh_query_aabb", ("low", "vec3"), ("high", "vec3")),
    _query("bvh_query_ray", ("start", "vec3"), ("dir", "vec3")),
    _query("bvh_query_sphere", ("center", "vec3"), ("radius", "float")),
    _query("bvh_query_capsule", ("start", "vec3"), ("dir", "vec3"), ("radius", "float")),
    Builtin("bvh_query_next", _next_rule(BvhQuery), "tw::bvh_query_next", differentiable=False,
            unify_literals=False, updates=(0, 1), header=HEADER),
    Builtin("bvh_get_group_root", _group_root, "tw::bvh_get_group_root", differentiable=False,
            unify_literals=False, header=HEADER),
    # the build steps (tilewarp/geometry/bvh.py), one thread each
    Builtin("_bvh_item_lower", _internal(T.vec3, 2), "tw::bvh_item_lower", differentiable=False,
            unify_literals=False, header=HEADER),
    Builtin("_bvh_item_upper", _internal(T.vec3, 2), "tw::bvh_item_upper", differentiable=False,
            unify_literals=False, header=HEADER),
    Builtin("_bvh_item_key", _internal(T.uint64, 6), "tw::bvh_item_key", differentiable=False,
            unify_literals=False, header=HEADER),
    *(Builtin(f"_bvh_{step}", _internal(None, n), f"tw::bvh_{step}", differentiable=False, side_effect=True,
              unify_literals=False, header=HEADER)
      for step, n in (("build_internal", 2), ("build_leaf", 2), ("collapse", 3), ("layout_serial", 1),
                      ("layout_count", 2), ("layout_place", 2), ("refit", 2), ("refit_sweep", 3),
                      ("group_root", 4))),
    Builtin("_bvh_sah_prim", _internal(T.vec3, 3), "tw::bvh_sah_prim", differentiable=False, side_effect=True,
            unify_literals=False, header=SAH_HEADER),
    *(Builtin(f"_bvh_{step}", _internal(None, n), f"tw::bvh_{step}", differentiable=False, side_effect=True,
              unify_literals=False, header=SAH_HEADER)
      for step, n in (("build_sah", 5), ("build_sah_tasks", 3))),
)
