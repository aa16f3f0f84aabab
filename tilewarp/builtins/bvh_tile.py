"""Block-cooperative BVH and mesh queries (Warp's tile queries): ``tile_bvh_query_aabb`` / ``_ray`` and
``tile_mesh_query_aabb`` start a query the whole block traverses, ``tile_bvh_query_next`` /
``tile_mesh_query_aabb_next`` hand each lane its next hit as a ``(block_dim,)`` int tile (-1: none),
``tile_query_valid`` says whether the last batch held a hit; Warp's deprecated ``*_tiled`` names too.

A query is a shared tile of int32 words (``TiledQueryType``): the storage plan places it as any other
shared tile and the C++ (``native/geometry/bvh_tile.h``) keeps the query's state in it. Its size
follows the block size, so every call's template holds ``block_dim``. No gradients (as in Warp).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..language import types as T
from .bvh import check_id, is_vec3
from .registry import Builtin, fail, names, register
from .tile import INTO, SHARED_ARGS, SHARED_RESULT

HEADER = "geometry/bvh_tile.h"
#: words of a query's shared tile: a head, then a record per lane (bvh_tile.h BVH_TILE_HEAD / _LANE)
HEAD_WORDS, LANE_WORDS = 32, 8


@dataclass(frozen=True, repr=False)
class TiledQueryType(T.TileType):
    """The type of a block's query: its state in ``HEAD_WORDS + LANE_WORDS * block_dim`` shared words."""

    mesh: bool = False

    def __repr__(self):
        return "MeshQueryAABBTiled" if self.mesh else "BvhQueryTiled"

    def __eq__(self, other):  # an annotation (wp.BvhQueryTiled) stands for the query of any block size
        if isinstance(other, _Annotation):
            return other._tw_mesh_ == self.mesh
        return type(other) is type(self) and (self.dtype, self.shape, self.mesh) == (other.dtype, other.shape,
                                                                                     other.mesh)

    __hash__ = T.TileType.__hash__


def query_type(block_dim: int, mesh: bool) -> TiledQueryType:
    return TiledQueryType(T.int32, (HEAD_WORDS + LANE_WORDS * block_dim,), mesh)


class _Annotation(type):
    def __eq__(cls, other):
        return other is cls or (isinstance(other, TiledQueryType) and other.mesh == cls._tw_mesh_)

    __hash__ = type.__hash__

    def __tw_annotation__(cls):
        return cls


class BvhQueryTiled(metaclass=_Annotation):
    """The state of a block-cooperative BVH query (Warp's ``wp.BvhQueryTiled``), from
    ``wp.tile_bvh_query_aabb`` or ``_ray``, advanced by ``wp.tile_bvh_query_next``."""

    _tw_mesh_ = False


class MeshQueryAABBTiled(metaclass=_Annotation):
    """The state of a block-cooperative mesh box query (Warp's ``wp.MeshQueryAABBTiled``), from
    ``wp.tile_mesh_query_aabb``, advanced by ``wp.tile_mesh_query_aabb_next``."""

    _tw_mesh_ = True


def _start(mesh, a_name, b_name):
    def rule(args, template):
        if len(args) != 3:
            fail(f"takes 3 arguments (id, {a_name}, {b_name}), got {len(args)}")
        check_id(args[0])
        for name, t in zip((a_name, b_name), args[1:]):
            if not is_vec3(t):
                fail(f"{name} must be a vec3, got ({names(args)})")
        return query_type(template[0], mesh)

    return rule


def _query_arg(args, mesh):
    wanted = "MeshQueryAABBTiled (from tile_mesh_query_aabb)" if mesh else \
        "BvhQueryTiled (from tile_bvh_query_aabb or tile_bvh_query_ray)"
    if len(args) != 1 or not (isinstance(args[0], TiledQueryType) and (mesh is None or args[0].mesh == mesh)):
        if mesh is None:
            wanted = "BvhQueryTiled or MeshQueryAABBTiled (from a tile query)"
        fail(f"expects a {wanted}, got ({names(args)})")
    return args[0]


def _next(mesh):
    def rule(args, template):
        _query_arg(args, mesh)
        return T.TileType(T.int32, (template[0],))

    return rule


def _valid(args, template):
    _query_arg(args, None)
    return T.bool_


def _start_cpp(kind):
    return lambda a, t: f"tw::tile_bvh_query_start<{t[0]}>({a[0]}, {a[1]}, {kind}, {a[2]}, {a[3]}, tw_active)"


def _entry(name, rule, emit):
    return Builtin(name, rule, "tw::" + name, differentiable=False, unify_literals=False, emit=emit, header=HEADER)


_NEXT_CPP = lambda a, t: f"tw::tile_bvh_query_next<{t[0]}>({a[0]}, {a[1]}, tw_active, tw_done)"  # noqa: E731
_AABB, _RAY = 0, 1  # bvh.h BVH_AABB / BVH_RAY
#: Warp's deprecated names (1.18) and the builtins they stand for
ALIASES = {"bvh_query_aabb_tiled": "tile_bvh_query_aabb", "bvh_query_ray_tiled": "tile_bvh_query_ray",
           "bvh_query_next_tiled": "tile_bvh_query_next", "mesh_query_aabb_tiled": "tile_mesh_query_aabb",
           "mesh_query_aabb_next_tiled": "tile_mesh_query_aabb_next"}
CANONICAL = {
    "tile_bvh_query_aabb": (_start(False, "low", "high"), _start_cpp(_AABB)),
    "tile_bvh_query_ray": (_start(False, "start", "dir"), _start_cpp(_RAY)),
    "tile_mesh_query_aabb": (_start(True, "low", "high"), _start_cpp(_AABB)),
    "tile_bvh_query_next": (_next(False), _NEXT_CPP),
    "tile_mesh_query_aabb_next": (_next(True), _NEXT_CPP),
    "tile_query_valid": (_valid, lambda a, t: f"tw::tile_query_valid<{t[0]}>({a[0]})"),
}
#: every name of these builtins (the frontend lowers them: their template is the block size)
QUERY_CALLS = frozenset(CANONICAL) | frozenset(ALIASES)

register(*(_entry(name, *spec) for name, spec in CANONICAL.items()),
         *(_entry(alias, *CANONICAL[name]) for alias, name in ALIASES.items()))
_STARTS = {"tile_bvh_query_aabb", "tile_bvh_query_ray", "tile_mesh_query_aabb"}
INTO.update(_STARTS | {"tile_bvh_query_next", "tile_mesh_query_aabb_next"})  # written into their destination
SHARED_RESULT.update(_STARTS)  # the query lives in shared memory
SHARED_ARGS.update({"tile_bvh_query_next": (0,), "tile_mesh_query_aabb_next": (0,), "tile_query_valid": (0,)})
