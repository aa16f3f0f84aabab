"""Integer expressions of a block program's grid indices, traced from the user's index maps.

An index map (``lambda i, j: (i, 0)``) runs once, in Python, on ``Index`` objects; what it returns
says which grid axes each block offset depends on, becomes kernel code (an AST over the program
indices) and can be evaluated on NumPy arrays of every grid point to check the blocks before a
launch.
"""
from __future__ import annotations

import ast
import operator

import numpy as np

_OPS = {"+": (ast.Add, operator.add), "-": (ast.Sub, operator.sub), "*": (ast.Mult, operator.mul),
        "//": (ast.FloorDiv, operator.floordiv), "%": (ast.Mod, operator.mod)}


class IndexMapError(TypeError):
    pass


class Index:
    """An integer computed from grid indices with ``+ - * // %`` and integer constants."""

    def __init__(self, tree: ast.expr, axes: frozenset, evaluate):
        self.tree, self.axes, self._evaluate = tree, axes, evaluate

    @staticmethod
    def axis(k: int, name: str) -> "Index":
        return Index(ast.Name(name, ast.Load()), frozenset((k,)), lambda pids: pids[k])

    @staticmethod
    def of(value) -> "Index":
        if isinstance(value, Index):
            return value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise IndexMapError(f"an index map returned {value!r}: block indices are integers computed from the "
                                "grid indices with + - * // %")
        v = int(value)
        tree = ast.Constant(v) if v >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-v))
        return Index(tree, frozenset(), lambda pids, v=v: v)

    def evaluate(self, pids):
        """The value for grid indices ``pids`` (ints, or NumPy arrays of every grid point)."""
        return self._evaluate(pids)

    def _binary(self, other, symbol, swap=False):
        other = Index.of(other)
        a, b = (other, self) if swap else (self, other)
        node_op, fn = _OPS[symbol]
        tree = ast.BinOp(a.tree, node_op(), b.tree)
        return Index(tree, a.axes | b.axes, lambda pids: fn(a.evaluate(pids), b.evaluate(pids)))

    def __add__(self, o): return self._binary(o, "+")
    def __radd__(self, o): return self._binary(o, "+", True)
    def __sub__(self, o): return self._binary(o, "-")
    def __rsub__(self, o): return self._binary(o, "-", True)
    def __mul__(self, o): return self._binary(o, "*")
    def __rmul__(self, o): return self._binary(o, "*", True)
    def __floordiv__(self, o): return self._binary(o, "//")
    def __rfloordiv__(self, o): return self._binary(o, "//", True)
    def __mod__(self, o): return self._binary(o, "%")
    def __rmod__(self, o): return self._binary(o, "%", True)

    def __neg__(self):
        return Index.of(0) - self

    def __pos__(self):
        return self

    def _refuse(self, *args):
        raise IndexMapError("an index map can only compute with + - * // % on the grid indices (no comparisons, "
                            "conditions or calls that need a Python int)")

    __bool__ = __index__ = __int__ = __lt__ = __le__ = __gt__ = __ge__ = __truediv__ = __rtruediv__ = _refuse
    __pow__ = __and__ = __or__ = _refuse

    def __repr__(self):
        return ast.unparse(self.tree)


def trace(index_map, grid_rank: int, names, what: str) -> tuple:
    """``index_map`` applied to the grid indices: a tuple of ``Index`` (an int result is a 1-tuple)."""
    indices = [Index.axis(k, names[k]) for k in range(grid_rank)]
    try:
        result = index_map(*indices)
    except IndexMapError as e:
        raise IndexMapError(f"{what}: {e}") from None
    except TypeError as e:
        raise IndexMapError(f"{what}: the index map takes the {grid_rank} grid indices and returned an error "
                            f"({e})") from None
    if not isinstance(result, (tuple, list)):
        result = (result,)
    try:
        return tuple(Index.of(r) for r in result)
    except IndexMapError as e:
        raise IndexMapError(f"{what}: {e}") from None


def grid_points(grid: tuple) -> list:
    """Every grid point's indices as one NumPy array per axis (row-major order)."""
    if not grid:
        return []
    return [a.reshape(-1) for a in np.indices(grid, dtype=np.int64)]
