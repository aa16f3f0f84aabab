"""Tile builtins that move data between arrays and tiles (loads, stores, atomics, indexed forms)
and the block-shared stack; the rest of the tile table is ``tile.py``, whose helpers these use."""
from __future__ import annotations

from ..language import types as T
from .registry import Builtin, fail, names
from .tile import _into, _tile, tile_type


def _offsets(arr, offsets):
    if not T.is_array(arr) or isinstance(arr, T.IndexedArrayType):
        fail(f"expects an array, got {T.type_name(arr)}")
    if any(not T.is_int(o) for o in offsets):
        fail(f"offsets must be integers, got ({names(offsets)})")
    if len(offsets) != arr.ndim:
        fail(f"needs one offset per array dimension ({arr.ndim}), got {len(offsets)}")


def _load(args, template):
    arr, *offsets = args
    _offsets(arr, offsets)
    shape = template[0]
    if len(shape) > arr.ndim:
        fail(f"a {len(shape)}-d tile cannot be loaded from a {arr.ndim}-d array")
    return tile_type(arr.dtype, shape)


def _store(args, template):
    arr, t, *offsets = args
    _offsets(arr, offsets)
    _tile(t, "the value")
    if t.dtype != arr.dtype:
        fail(f"cannot store a tile of {T.type_name(t.dtype)} into an array of {T.type_name(arr.dtype)}")
    if len(t.shape) > arr.ndim:
        fail(f"a {len(t.shape)}-d tile cannot be stored into a {arr.ndim}-d array")
    return t if template and template[0] == "old" else None


def _atomic_tile(op):
    def rule(args, template):
        t = _store(args, ("old",))
        scalar = T.scalar_of(t.dtype)
        kinds = ("int", "uint") if op != "add" else ("int", "uint", "float")
        narrow = op == "add" and scalar.__name__ in ("int8", "uint8", "int16", "uint16", "bool")
        if T.is_struct(t.dtype) or not T.is_scalar(scalar) or scalar._kind_ not in kinds or narrow:
            wanted = "32- and 64-bit integers and floats" if op == "add" else "integers"
            fail(f"only supports tiles of {wanted} (or vectors and matrices of them), got {T.type_name(t.dtype)}")
        return t

    return rule


def _adj_load(a, adj, adj_ret, template):
    # a = [dst, arr, offsets...]; adj[1] is the gradient array
    return f"tw::adj_tile_load({adj[1]}, {adj_ret}, {', '.join(a[2:])})"


def _adj_store(a, adj, adj_ret, template):
    # a = [arr, t, offsets...]
    return f"tw::adj_tile_store({adj[0]}, {adj[1]}, {', '.join(a[2:])})"


def _adj_atomic_add(a, adj, adj_ret, template):
    # a = [dst(old), arr, t, offsets...]
    return f"tw::adj_tile_store({adj[1]}, {adj[2]}, {', '.join(a[3:])})"


def _indices_tile(idx, n):
    if not T.is_tile(idx) or len(idx.shape) != 1 or not T.is_int(idx.dtype):
        fail(f"indices must be a 1-d tile of integers, got {T.type_name(idx)}")
    if idx.shape[0] != n:
        fail(f"indices hold {idx.shape[0]} entries, the tile has {n} along the indexed axis")


def _load_indexed(args, template):
    arr, idx, *offsets = args
    shape, _, axis = template
    _offsets(arr, offsets)
    if not 0 <= axis < len(shape):
        fail(f"axis {axis} is out of range for a {len(shape)}-d tile")
    _indices_tile(idx, shape[axis])
    return tile_type(arr.dtype, shape)


def _store_indexed(args, template):
    arr, idx, t, *offsets = args
    (axis, *_) = template
    result = _store([arr, t, *offsets], ("old",) if template[-1] == "old" else ())
    if not 0 <= axis < len(t.shape):
        fail(f"axis {axis} is out of range for a {len(t.shape)}-d tile")
    _indices_tile(idx, t.shape[axis])
    return result


def _from_thread(args, template):
    value, lane = args
    shape, _, _ = template
    if not T.is_int(lane):
        fail(f"thread_idx must be an integer, got {T.type_name(lane)}")
    return tile_type(value, shape)


def stack_type(capacity, dtype) -> T.TileStackType:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity <= 0:
        fail(f"capacity must be a positive integer constant, got {capacity!r}")
    if not (T.is_scalar(dtype) or T.is_composite(dtype) or T.is_struct(dtype)):
        fail(f"stacks hold scalars, vectors, matrices or structs, not {T.type_name(dtype)}")
    return T.TileStackType(dtype, (capacity,))


def _stack(args, template):
    return stack_type(*template)


def _stack_of(t):
    if not isinstance(t, T.TileStackType):
        fail(f"expects a tile_stack, got {T.type_name(t)}")
    return t


def _push(args, template):
    s, value, has_value = args
    _stack_of(s)
    if value != s.dtype:
        fail(f"the pushed value's type {T.type_name(value)} does not match the stack's element type "
             f"{T.type_name(s.dtype)}")
    if has_value is not T.bool_:
        fail(f"has_value must be a bool, got {T.type_name(has_value)}")
    return T.int32


def _pop(args, template):
    return T.TupleType((_stack_of(args[0]).dtype, T.int32))


def _stack_query(args, template):
    _stack_of(args[0])
    return T.int32 if template == ("count",) else None


def _host_stack(capacity=None, dtype=None):
    """``wp.tile_stack(capacity=..., dtype=...)`` in Python: the type, for @wp.func annotations."""
    from .registry import BuiltinTypeError

    try:
        return stack_type(int(getattr(capacity, "value", capacity)) if not isinstance(capacity, bool) else capacity,
                          T.value_type(dtype))
    except BuiltinTypeError as e:
        raise TypeError(f"tile_stack(): {e}") from None


def memory_entries() -> list:
    E = []
    add = E.append
    add(Builtin("tile_load", _load, "tw::tile_load", emit=_into("tw::tile_load"), adjoint_emit=_adj_load))
    add(Builtin("tile_store", _store, "tw::tile_store", side_effect=True, emit=_into("tw::tile_store"),
                adjoint_emit=_adj_store))
    add(Builtin("tile_atomic_add", _atomic_tile("add"), "tw::tile_atomic_add", side_effect=True,
                emit=_into("tw::tile_atomic_add"), adjoint_emit=_adj_atomic_add))
    for op in ("and", "or", "xor"):
        add(Builtin(f"tile_atomic_{op}", _atomic_tile(op), f"tw::tile_atomic_{op}", side_effect=True,
                    differentiable=False, emit=_into(f"tw::tile_atomic_{op}")))
    add(Builtin("tile_load_indexed", _load_indexed, "tw::tile_load_indexed",
                emit=lambda a, t: f"tw::tile_load_indexed<{t[2]}>({', '.join(a)})",
                adjoint_emit=lambda a, adj, r, t: f"tw::adj_tile_load_indexed<{t[2]}>({adj[1]}, {a[2]}, {r}, "
                                                  f"{', '.join(a[3:])})"))
    add(Builtin("tile_store_indexed", _store_indexed, "tw::tile_store_indexed", side_effect=True,
                emit=lambda a, t: f"tw::tile_store_indexed<{t[0]}>({', '.join(a)})",
                adjoint_emit=lambda a, adj, r, t: f"tw::adj_tile_store_indexed<{t[0]}>({adj[0]}, {a[1]}, {adj[2]}, "
                                                  f"{', '.join(a[3:])})"))
    add(Builtin("tile_atomic_add_indexed", _store_indexed, "tw::tile_atomic_add_indexed", side_effect=True,
                emit=lambda a, t: f"tw::tile_atomic_add_indexed<{t[0]}>({', '.join(a)})",
                adjoint_emit=lambda a, adj, r, t: f"tw::adj_tile_store_indexed<{t[0]}>({adj[1]}, {a[2]}, {adj[3]}, "
                                                  f"{', '.join(a[4:])})"))
    add(Builtin("tile_stack", _stack, "tw::tile_stack_init", differentiable=False,
                emit=lambda a, t: f"tw::tile_stack_init({a[0]})", host=lambda capacity, dtype: _host_stack(capacity, dtype)))
    add(Builtin("tile_stack_push", _push, "tw::tile_stack_push", side_effect=True, differentiable=False,
                undefined_gradient=True, unify_literals=False))
    add(Builtin("tile_stack_pop", _pop, "tw::tile_stack_pop", side_effect=True, differentiable=False,
                undefined_gradient=True))
    add(Builtin("tile_stack_count", _stack_query, "tw::tile_stack_count", differentiable=False,
                emit=lambda a, t: f"tw::tile_stack_count({a[0]})"))
    add(Builtin("tile_stack_clear", _stack_query, "tw::tile_stack_clear", side_effect=True, differentiable=False,
                emit=lambda a, t: f"tw::tile_stack_clear({a[0]})"))
    return E
