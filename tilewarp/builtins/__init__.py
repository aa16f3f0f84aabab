"""The builtin tables; importing this package registers every entry."""
from . import (  # noqa: F401
    array, bvh, bvh_tile, control, frames, hash_grid, linalg, local, mesh, noise, operators, primitives, random, scalar,
    slicing, spatial, special, struct, texture, tile, vector, volume)
from .registry import REGISTRY, Builtin, BuiltinTypeError, lookup  # noqa: F401
