"""``wp.Mesh`` in kernels: closest-point queries (``mesh_query_point`` and its ``_no_sign``,
``_sign_normal``, ``_sign_winding_number`` forms, ``mesh_query_furthest_point_no_sign``), rays
(``mesh_query_ray``, ``_anyhit``, ``_count_intersections``), box and sphere queries with
``mesh_query_next``, evaluation on faces and access to the mesh's data; the result types
``wp.MeshQueryPoint`` and ``wp.MeshQueryRay``.

The C++ and the adjoints are in ``native/geometry/mesh.h``. Gradients follow Warp: the closest
point's and the ray hit's barycentrics (and the hit distance) with respect to the query point or
ray, and ``mesh_eval_*`` / ``mesh_get_point`` / ``mesh_eval_face_normal`` into the gradient arrays
of the mesh's points and velocities (when the mesh was made from arrays that require one).
"""
from __future__ import annotations

from ..language import types as T
from ..language.structs import native_struct
from .bvh import MeshQueryAABB, BvhDesc, _next_rule, check_float, check_id, check_int, is_vec3
from .registry import Builtin, fail, names, register

HEADER = "geometry/mesh.h"


@native_struct("tw::mesh_t", HEADER, name="MeshDesc")
class MeshDesc:
    """What a mesh id points to: its triangle tree first (so it is that tree's id too)."""

    bvh: BvhDesc
    velocities: T.uint64
    points_grad: T.uint64
    velocities_grad: T.uint64
    num_points: T.int32
    num_faces: T.int32
    average_edge: T.float32
    winding: T.int32
    winding_data: T.uint64


@native_struct("tw::mesh_query_point_t", HEADER, name="MeshQueryPoint")
class MeshQueryPoint:
    """The result of a closest-point query (Warp's ``wp.MeshQueryPoint``): ``result`` (a face was found),
    ``sign`` (< 0 inside), ``face``, and the barycentrics ``u``, ``v`` of the closest point."""

    result: T.bool_
    sign: T.float32
    face: T.int32
    u: T.float32
    v: T.float32


@native_struct("tw::mesh_query_ray_t", HEADER, name="MeshQueryRay")
class MeshQueryRay:
    """The result of a ray query (Warp's ``wp.MeshQueryRay``): ``result``, ``sign`` (> 0 when the ray
    hits the front of the face), ``face``, the distance ``t`` (in units of the direction's length),
    the barycentrics ``u``, ``v`` and the face's unit ``normal``."""

    result: T.bool_
    sign: T.float32
    face: T.int32
    t: T.float32
    u: T.float32
    v: T.float32
    normal: T.vec3


@native_struct("tw::mesh_view_t", HEADER, name="MeshView")
class MeshView:
    """What ``wp.mesh_get(id)`` returns in kernels (Warp's kernel-side ``Mesh``): the mesh's arrays."""

    points: T.ArrayType(T.vec3)
    velocities: T.ArrayType(T.vec3)
    indices: T.ArrayType(T.int32)


def _rule(result, *spec):
    """Argument checks by kind ('id', 'vec3', 'float', 'int'); optional trailing ones after '|'."""
    required = spec.index("|") if "|" in spec else len(spec)
    kinds = [k for k in spec if k != "|"]

    def rule(args, template):
        if not required <= len(args) <= len(kinds):
            count = f"{required}" if required == len(kinds) else f"{required} to {len(kinds)}"
            fail(f"takes {count} arguments, got {len(args)}")
        for k, (kind, t) in enumerate(zip(kinds, args)):
            what = f"argument {k + 1}"
            if kind == "id":
                check_id(t)
            elif kind == "vec3" and not is_vec3(t):
                fail(f"{what} must be a vec3, got ({names(args)})")
            elif kind == "float":
                check_float(t, what)
            elif kind == "int":
                check_int(t, what)
        return result

    return rule


def _entry(name, rule, adjoint=False, **kw):
    return Builtin(name, rule, "tw::" + name, adjoint=f"tw::adj_{name}" if adjoint else None,
                   differentiable=adjoint, unify_literals=False, header=HEADER, **kw)


_POINT = ("id", "vec3", "float")
_SIGNED = (3, ("sign", "face", "u", "v"))  # Warp's older forms: outputs after the first 3 arguments
_UNSIGNED = (3, ("face", "u", "v"))
register(
    _entry("mesh_query_point", _rule(MeshQueryPoint, *_POINT), adjoint=True, legacy=_SIGNED),
    _entry("mesh_query_point_no_sign", _rule(MeshQueryPoint, *_POINT), adjoint=True, legacy=_UNSIGNED),
    _entry("mesh_query_point_sign_normal", _rule(MeshQueryPoint, *_POINT, "float"), adjoint=True, legacy=_SIGNED),
    _entry("mesh_query_point_sign_winding_number", _rule(MeshQueryPoint, *_POINT, "float", "float"), adjoint=True,
           legacy=_SIGNED),
    _entry("mesh_query_point_sign_parity", _rule(MeshQueryPoint, *_POINT, "int", "float"), adjoint=True,
           legacy=_SIGNED),
    _entry("mesh_query_furthest_point_no_sign", _rule(MeshQueryPoint, *_POINT), adjoint=True, legacy=_UNSIGNED),
    _entry("mesh_query_ray", _rule(MeshQueryRay, "id", "vec3", "vec3", "float", "int"), adjoint=True,
           legacy=(4, ("t", "u", "v", "sign", "normal", "face"))),
    _entry("mesh_query_ray_anyhit", _rule(T.bool_, "id", "vec3", "vec3", "float", "int")),
    _entry("mesh_query_ray_count_intersections", _rule(T.int32, "id", "vec3", "vec3", "int")),
    _entry("mesh_query_aabb", _rule(MeshQueryAABB, "id", "vec3", "vec3")),
    _entry("mesh_query_sphere", _rule(MeshQueryAABB, "id", "vec3", "float")),
    _entry("mesh_query_next", _next_rule(MeshQueryAABB, max_dist=False), updates=(0, 1)),
    Builtin("mesh_query_aabb_next", _next_rule(MeshQueryAABB, max_dist=False), "tw::mesh_query_next", differentiable=False,
            unify_literals=False, header=HEADER, updates=(0, 1)),
    _entry("mesh_eval_position", _rule(T.vec3, "id", "int", "float", "float"), adjoint=True),
    _entry("mesh_eval_velocity", _rule(T.vec3, "id", "int", "float", "float"), adjoint=True),
    _entry("mesh_eval_face_normal", _rule(T.vec3, "id", "int"), adjoint=True),
    _entry("mesh_get_point", _rule(T.vec3, "id", "int"), adjoint=True),
    _entry("mesh_get_velocity", _rule(T.vec3, "id", "int"), adjoint=True),
    _entry("mesh_get_index", _rule(T.int32, "id", "int")),
    _entry("mesh_get_bvh", _rule(T.uint64, "id")),
    _entry("mesh_get", _rule(MeshView, "id")),
    _entry("mesh_get_group_root", _rule(T.int32, "id", "int")),
    # the winding data of one node and up (tilewarp/geometry/mesh.py, with support_winding_number)
    Builtin("_mesh_winding_refit", _rule(None, "id", "int"), "tw::mesh_winding_refit", differentiable=False,
            side_effect=True, unify_literals=False, header=HEADER),
)
