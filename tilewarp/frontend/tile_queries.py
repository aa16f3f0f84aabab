"""Warp's block-cooperative BVH and mesh queries (``builtins/bvh_tile.py``): Warp's parameter names
bound, the block size put in the template (a query's shared words and the result tile depend on it),
and the deprecated ``*_tiled`` names lowered as the ``tile_*`` builtins they stand for."""
from __future__ import annotations

from ..builtins.bvh_tile import ALIASES
from ..errors import KernelTypeError, warn_user

#: Warp's parameter names per builtin
_PARAMS = {"tile_bvh_query_aabb": ("id", "low", "high"), "tile_bvh_query_ray": ("id", "start", "dir"),
           "tile_mesh_query_aabb": ("id", "low", "high"), "tile_bvh_query_next": ("query",),
           "tile_mesh_query_aabb_next": ("query",), "tile_query_valid": ("query",)}


def lower_query(lw, name: str, node):
    if name in ALIASES:
        warn_user(f"wp.{name}() is deprecated in Warp 1.18 and is targeted for removal in Warp 1.22. "
                  f"Use wp.{ALIASES[name]}() instead.", DeprecationWarning)
        name = ALIASES[name]
    params, loc = _PARAMS[name], lw.src.loc(node)
    if len(node.args) > len(params):
        raise KernelTypeError(f"{name}() takes {len(params)} argument(s), got {len(node.args)}", loc)
    given = dict(zip(params, node.args))
    for kw in node.keywords:
        if kw.arg not in params or kw.arg in given:
            raise KernelTypeError(f"{name}() got an unexpected or repeated argument '{kw.arg}'", loc)
        given[kw.arg] = kw.value
    missing = [p for p in params if p not in given]
    if missing:
        raise KernelTypeError(f"{name}() is missing argument '{missing[0]}'", loc)
    lw.fn.block_dependent = True
    return lw.call(name, [lw.value(given[p]) for p in params], node, (lw.block_dim,))
