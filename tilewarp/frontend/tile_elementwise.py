"""Scalar operations given tiles (beyond Warp): ``a @ b``, comparisons, ``wp.exp(t)``, ``acc += a @ b``."""
from __future__ import annotations

from ..language import types as T
from ..errors import KernelTypeError
from ..ir import nodes as ir
from .tiles import ELEMENTWISE, _matmul, is_tile_call, map_values, tile_operator

#: builtins with tile arguments that are not applied element by element
_NOT_ELEMENTWISE = frozenset({"construct", "make_tuple", "tuple_get", "print", "printf", "len", "tid"})
_COMPARISONS = frozenset({"lt", "le", "gt", "ge", "eq", "ne"})


def tile_call_of_scalar_builtin(lw, b, args, node):
    """A scalar builtin given tiles (beyond Warp): ``a @ b`` is ``tile_matmul``; arithmetic,
    comparisons, ``wp.exp(t)``, ``wp.where(m, a, b)``, ``wp.max(t, 0.0)`` apply element by element,
    as ``tile_map`` of that builtin. None for tile builtins themselves, which take tiles as tiles."""
    name = b.name
    if name == "matmul":
        if not all(T.is_tile(a.type) for a in args):
            raise KernelTypeError("'@' takes two tiles (tile_matmul) or two matrices", lw.src.loc(node))
        return _matmul(lw, {"a": args[0], "b": args[1], "out": None, "alpha": 1.0, "beta": 1.0,
                            "precision": "default"}, node)
    if name in ELEMENTWISE:
        return tile_operator(lw, name, args, node)
    if is_tile_call(name) or name.startswith("_tile") or name in _NOT_ELEMENTWISE or b.side_effect \
            or b.kernel_context:
        return None
    if name in _COMPARISONS or name == "where":
        _check_same_shapes(lw, name, args, node)
    return map_values(lw, b, args, node)


def _check_same_shapes(lw, name, args, node):
    shapes = {a.type.shape for a in args if T.is_tile(a.type)}
    if len(shapes) > 1:
        raise KernelTypeError(f"{name}() on tiles of different shapes {sorted(shapes)}: broadcast one first "
                              "(tile_broadcast)", lw.src.loc(node))


def accumulate_product(lw, target, product, node) -> bool:
    """``acc += a @ b`` with tiles: ``tile_matmul(a, b, acc)``, accumulating in place (and in the
    accumulator's type: float32 sums of float16 products). False when ``acc`` is no tile variable."""
    acc = lw.symbols.get(target.id)
    if not (isinstance(acc, ir.Value) and T.is_tile(acc.type)):
        return False
    a, b = lw.value(product.left), lw.value(product.right)
    if T.is_tile(a.type) and T.is_tile(b.type):
        result = lw.call("tile_matmul", [a, b, acc], node, (1.0, 1.0, True))
    else:
        result = lw.call("add", [acc, lw.call("matmul", [a, b], product)], node)
    lw.bind(target.id, result, node)
    return True
