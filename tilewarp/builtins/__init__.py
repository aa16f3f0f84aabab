"""The builtin tables; importing this package registers every entry."""
from . import array, control, frames, linalg, operators, random, scalar, spatial, struct, vector  # noqa: F401
from .registry import REGISTRY, Builtin, BuiltinTypeError, lookup  # noqa: F401
