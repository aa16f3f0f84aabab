"""Tile calls and tile syntax: Warp's signatures bound to IR calls, operators, indexing, inlining.

A tile builtin takes some arguments as values (arrays, tiles, offsets, fill values) and some as
compile-time constants (shapes, dtypes, storage, axes, the function ``tile_map`` applies): the
constants go into the IR call's template. ``a + b`` on tiles is ``tile_map`` of the scalar
builtin; ``t[i, j]`` reads an element, ``t[i, j] = x`` / ``+=`` write one (each lane that runs
the statement does, as in Warp). A ``@wp.func`` that takes or makes tiles is inlined into its
caller, so every tile is a value of the kernel (storage planning and the block structure then
see the whole kernel).
"""
from __future__ import annotations

import ast
import builtins as py

from ..language import types as T
from ..builtins import REGISTRY
from ..builtins.tile import ElementOp
from ..builtins.bvh_tile import QUERY_CALLS
from ..builtins.tile_linalg import IN_PLACE, RESULTS as LINALG_RESULTS
from ..errors import KernelTypeError, KernelValueError
from ..ir import nodes as ir
from ..builtins import BuiltinTypeError
from ..builtins.vector import component_builtin

_REQUIRED = object()

#: Warp's parameters per builtin: (name, default, kind); kinds other than "value" are constants
SIGNATURES = {
    "tile": [("x", _REQUIRED, "value"), ("preserve_type", False, "const")],
    "untile": [("a", _REQUIRED, "value")],
    "tile_full": [("shape", _REQUIRED, "shape"), ("value", _REQUIRED, "value"), ("dtype", None, "dtype"),
                  ("storage", "register", "storage")],
    "tile_load": [("a", _REQUIRED, "value"), ("shape", _REQUIRED, "shape"), ("offset", None, "offset"),
                  ("storage", "register", "storage"), ("bounds_check", True, "const"), ("aligned", False, "const")],
    "tile_store": [("a", _REQUIRED, "value"), ("t", _REQUIRED, "value"), ("offset", None, "offset"),
                   ("bounds_check", True, "const"), ("aligned", False, "const")],
    "tile_atomic_add": [("a", _REQUIRED, "value"), ("t", _REQUIRED, "value"), ("offset", None, "offset"),
                        ("bounds_check", True, "const")],
    "tile_reduce": [("op", _REQUIRED, "func"), ("a", _REQUIRED, "value"), ("axis", None, "const")],
    "tile_sort": [("keys", _REQUIRED, "value"), ("values", _REQUIRED, "value")],
    "tile_broadcast": [("a", _REQUIRED, "value"), ("shape", _REQUIRED, "shape")],
    "tile_transpose": [("a", _REQUIRED, "value")],
    "tile_reshape": [("t", _REQUIRED, "value"), ("shape", _REQUIRED, "shape")],
    "tile_squeeze": [("t", _REQUIRED, "value"), ("axis", None, "const")],
    "tile_astype": [("t", _REQUIRED, "value"), ("dtype", _REQUIRED, "dtype")],
    "tile_view": [("t", _REQUIRED, "value"), ("offset", _REQUIRED, "view"), ("shape", None, "shape")],
    "tile_assign": [("dst", _REQUIRED, "value"), ("src", _REQUIRED, "value"), ("offset", None, "offset")],
    "tile_load_indexed": [("a", _REQUIRED, "value"), ("indices", _REQUIRED, "value"), ("shape", _REQUIRED, "shape"),
                          ("offset", None, "offset"), ("axis", 0, "const"), ("storage", "register", "storage")],
    "tile_store_indexed": [("a", _REQUIRED, "value"), ("indices", _REQUIRED, "value"), ("t", _REQUIRED, "value"),
                           ("offset", None, "offset"), ("axis", 0, "const")],
    "tile_from_thread": [("shape", _REQUIRED, "shape"), ("value", _REQUIRED, "value"), ("thread_idx", None, "value"),
                         ("storage", "register", "storage")],
    "tile_dot": [("a", _REQUIRED, "value"), ("b", _REQUIRED, "value")],
    "tile_stack": [("capacity", _REQUIRED, "const"), ("dtype", _REQUIRED, "dtype")],
    "tile_stack_push": [("s", _REQUIRED, "value"), ("value", _REQUIRED, "value"), ("has_value", True, "value")],
    "tile_stack_pop": [("s", _REQUIRED, "value")],
    "tile_stack_count": [("s", _REQUIRED, "value")],
    "tile_stack_clear": [("s", _REQUIRED, "value")],
    "tile_axpy": [("alpha", _REQUIRED, "value"), ("src", _REQUIRED, "value"), ("dest", _REQUIRED, "value")],
    "tile_matmul": [("a", _REQUIRED, "value"), ("b", _REQUIRED, "value"), ("out", None, "value"),
                    ("alpha", 1.0, "scale"), ("beta", 1.0, "scale"), ("precision", "default", "const")],
}
for _n in ("tile_cholesky", "tile_cholesky_inplace"):
    SIGNATURES[_n] = [("A", _REQUIRED, "value"), ("fill_mode", "lower", "const")]
for _n in ("tile_cholesky_solve", "tile_cholesky_solve_inplace"):
    SIGNATURES[_n] = [("L", _REQUIRED, "value"), ("y", _REQUIRED, "value"), ("fill_mode", "lower", "const")]
for _n in ("tile_lower_solve", "tile_lower_solve_inplace"):
    SIGNATURES[_n] = [("L", _REQUIRED, "value"), ("y", _REQUIRED, "value")]
for _n in ("tile_upper_solve", "tile_upper_solve_inplace"):
    SIGNATURES[_n] = [("U", _REQUIRED, "value"), ("z", _REQUIRED, "value")]
for _n in ("tile_fft", "tile_ifft"):
    SIGNATURES[_n] = [("inout", _REQUIRED, "value")]
for _n in ("tile_zeros", "tile_ones", "tile_empty"):
    SIGNATURES[_n] = [("shape", _REQUIRED, "shape"), ("dtype", T.float32, "dtype"), ("storage", "register", "storage")]
for _n in ("tile_sum", "tile_min", "tile_max", "tile_argmin", "tile_argmax"):
    SIGNATURES[_n] = [("a", _REQUIRED, "value"), ("axis", None, "const")]
for _n in ("tile_scan_inclusive", "tile_scan_exclusive", "tile_scan_max_inclusive", "tile_scan_min_inclusive"):
    SIGNATURES[_n] = [("a", _REQUIRED, "value")]
for _n in ("tile_atomic_and", "tile_atomic_or", "tile_atomic_xor"):
    SIGNATURES[_n] = SIGNATURES["tile_atomic_add"]
SIGNATURES["tile_atomic_add_indexed"] = SIGNATURES["tile_store_indexed"]

#: scalar builtins that apply element by element to tiles (``a + b``, ``-t``)
ELEMENTWISE = {"add", "sub", "mul", "div", "neg", "bit_and", "bit_or", "bit_xor"}


def is_tile_call(name: str) -> bool:
    return name in SIGNATURES or name in QUERY_CALLS or name in ("tile_map", "tile_arange", "tile_extract", "block_dim",
                                                                 "tile_scatter_add", "tile_scatter_masked")


#: tile builtins Warp exposes that tilewarp composes from others (no table entry of their own)


# ---- binding Warp's signatures ----------------------------------------------------------------


def _bind(lw, name, node) -> dict:
    params = SIGNATURES[name]
    loc = lw.src.loc(node)
    given = {}
    if len(node.args) > len(params):
        raise KernelTypeError(f"{name}() takes at most {len(params)} arguments, got {len(node.args)}", loc)
    for (pname, _, _), a in zip(params, node.args):
        given[pname] = a
    for kw in node.keywords:
        if kw.arg not in {p[0] for p in params} or kw.arg in given:
            raise KernelTypeError(f"{name}() got an unexpected or repeated argument '{kw.arg}'", loc)
        given[kw.arg] = kw.value
    out = {}
    for pname, default, kind in params:
        if pname not in given:
            if default is _REQUIRED:
                raise KernelTypeError(f"{name}() is missing argument '{pname}'", loc)
            out[pname] = default if kind != "offset" else None
            continue
        arg = given[pname]
        if kind == "value":
            out[pname] = lw.value(arg)
        elif kind == "offset":
            out[pname] = _int_list(lw, arg)
        elif kind == "func":
            out[pname] = lw.visit(arg)
        elif kind == "scale":  # a constant where it is one (folded into the code), else a run-time value
            try:
                out[pname] = float(constant(lw, arg))
            except (KernelTypeError, TypeError, ValueError):
                out[pname] = lw.value(arg)
        elif kind == "view":  # tile_view's offset: integers and (constant) slices
            out[pname] = list(arg.elts) if isinstance(arg, ast.Tuple) else [arg]
        else:
            out[pname] = _convert(lw, kind, constant(lw, arg), arg, f"{name}(): '{pname}'")
    return out


def constant(lw, node):
    """The compile-time value of ``node``: a literal, a closure or global value, ``wp.constant``,
    ``wp.static(...)`` or a tuple of those; a local variable only if it holds a constant."""
    local = any(isinstance(n, ast.Name) and n.id in lw.symbols for n in ast.walk(node))
    if not local:
        try:
            value = lw.src.evaluate(node, {})
        except Exception as e:  # noqa: BLE001 - reported as the user's mistake below
            raise KernelTypeError(f"expected a compile-time constant ({type(e).__name__}: {e})",
                                  lw.src.loc(node)) from None
        return value.value if isinstance(value, T.Scalar) else value
    if isinstance(node, ast.Tuple):
        return tuple(constant(lw, e) for e in node.elts)
    v = lw.visit(node)
    if isinstance(v, ir.Value):
        if not v.is_const:
            raise KernelTypeError("expected a compile-time constant (a literal, wp.constant, a global or "
                                  "wp.static(...)), got a value computed at run time", lw.src.loc(node))
        return v.const
    return v


def _convert(lw, kind, value, node, what):
    loc = lw.src.loc(node)
    if kind == "shape":
        if isinstance(value, (py.int, T.Scalar)) and not isinstance(value, py.bool):
            value = (int(value),)
        if not isinstance(value, (tuple, list)) or not all(isinstance(int_or(d), py.int) for d in value):
            raise KernelTypeError(f"{what} must be an int or a tuple of ints, got {value!r}", loc)
        return tuple(int(int_or(d)) for d in value)
    if kind == "dtype":
        try:
            return T.value_type(value)
        except TypeError:
            raise KernelTypeError(f"{what} must be a type, got {value!r}", loc) from None
    if kind == "storage":
        if value not in ("register", "shared"):
            raise KernelTypeError(f"{what} must be 'register' or 'shared', got {value!r}", loc)
    return value


def int_or(d):
    return int(d.value) if isinstance(d, T.Scalar) else d


def _int_list(lw, node) -> list:
    """Offsets / indices: a tuple of integer values, or one integer."""
    if isinstance(node, ast.Tuple):
        values = [lw.value(e) for e in node.elts]
    else:
        v = lw.visit(node)
        if isinstance(v, tuple):
            values = [lw.materialize(e, node) for e in v]
        elif isinstance(v, ir.Value) and isinstance(v.type, T.TupleType):
            values = [lw.tuple_get(v, k, node) for k in range(len(v.type.types))]
        elif isinstance(v, ir.Value) and T.is_vector(v.type) and T.is_int(T.scalar_of(v.type)):
            values = [lw.call("extract", [v, lw.const(k, T.int32)], node) for k in range(v.type._wp_shape_[0])]
        else:
            values = [v if isinstance(v, ir.Value) else lw.materialize(v, node)]
    return [_as_int32(lw, v, node) for v in values]


def _as_int32(lw, v, node):
    if v.weak and isinstance(v.const, py.int):
        return lw.const(v.const, T.int32)
    if not T.is_int(v.type):
        raise KernelTypeError(f"offsets and indices must be integers, got {T.type_name(v.type)}", lw.src.loc(node))
    return v


# ---- the calls -----------------------------------------------------------------------------------


def lower_tile_call(lw, name: str, node):
    if name in ("block_dim", "tile", "untile"):
        lw.fn.block_dependent = True
    if name == "block_dim":
        return lw.const(lw.block_dim, T.int32)
    if name == "tile_map":
        return _tile_map(lw, node)
    if name == "tile_arange":
        from .tile_arange import tile_arange  # late: it builds on this module's constant helpers

        return tile_arange(lw, node)
    if name in ("tile_scatter_add", "tile_scatter_masked"):
        return _scatter(lw, name, node)
    if name in QUERY_CALLS:  # the block-cooperative BVH / mesh queries
        from .tile_queries import lower_query

        return lower_query(lw, name, node)
    if name == "tile_extract":
        if node.keywords:
            raise KernelTypeError("tile_extract() takes no keyword arguments", lw.src.loc(node))
        t, *idx = [lw.value(a) for a in node.args]
        return lw.call("tile_extract", [t, *[_as_int32(lw, i, node) for i in idx]], node)
    a = _bind(lw, name, node)
    for group in (_construction, _memory):
        result = group(lw, name, a, node)
        if result is not _NOT_MINE:
            return result
    return _compute(lw, name, a, node)


_NOT_MINE = object()
#: tile_reduce with these builtins is the named reduction (which has a gradient)
_REDUCE_AS = {"add": "tile_sum", "min": "tile_min", "max": "tile_max", "mul": "_tile_prod"}


def _construction(lw, name, a, node):
    if name == "tile":
        x = a["x"]
        x = lw.const(x.const, x.type) if x.weak else x
        split = bool(T.is_composite(x.type) and not a["preserve_type"])
        return lw.call("tile", [x], node, (bool(a["preserve_type"]), lw.block_dim, split))
    if name == "untile":
        t = a["a"]
        return lw.call("untile", [t], node, (lw.block_dim, T.is_tile(t.type) and len(t.type.shape) > 1))
    if name in ("tile_zeros", "tile_ones", "tile_empty"):
        return lw.call(name, [], node, (a["shape"], a["dtype"], a["storage"]))
    if name == "tile_full":
        value = a["value"]
        dtype = a["dtype"] or (T.float32 if value.weak and T.is_float(value.type) else value.type)
        if value.weak or (T.is_scalar(value.type) and value.type != dtype and T.is_scalar(dtype)):
            value = lw.const(value.const, dtype) if value.is_const else lw.call("construct", [value], node, (dtype,))
        return lw.call(name, [value], node, (a["shape"], dtype, a["storage"]))
    if name == "tile_from_thread":
        value = a["value"]
        value = lw.const(value.const, value.type) if value.weak else value
        lane = a["thread_idx"] if a["thread_idx"] is not None else lw.const(0, T.int32)
        return lw.call(name, [value, _as_int32(lw, lane, node)], node, (a["shape"], value.type, a["storage"]))
    if name.startswith("tile_stack"):
        return _stack(lw, name, a, node)
    return _NOT_MINE


def _memory(lw, name, a, node):
    if name == "tile_load":
        arr = a["a"]
        offsets = a["offset"] or [lw.const(0, T.int32)] * _ndim(arr)
        _check_offsets(lw, arr, offsets, node)
        return lw.call(name, [arr, *offsets], node, (a["shape"], a["storage"]))
    if name in ("tile_store", "tile_atomic_add", "tile_atomic_and", "tile_atomic_or", "tile_atomic_xor"):
        arr, t = a["a"], a["t"]
        offsets = a["offset"] or [lw.const(0, T.int32)] * _ndim(arr)
        _check_offsets(lw, arr, offsets, node)
        return lw.call(name, [arr, t, *offsets], node, discard=name == "tile_store")
    if name in ("tile_load_indexed", "tile_store_indexed", "tile_atomic_add_indexed"):
        return _indexed(lw, name, a, node)
    if name == "tile_assign":
        dst, src = a["dst"], a["src"]
        n = len(dst.type.shape) if T.is_tile(dst.type) else 1
        offsets = a["offset"] or [lw.const(0, T.int32)] * n
        return lw.call(name, [dst, src, *offsets], node, discard=True)
    return _NOT_MINE


def _compute(lw, name, a, node):
    if name in ("tile_sum", "tile_min", "tile_max", "tile_argmin", "tile_argmax"):
        return lw.call(name, [a["a"]], node, (_axis(lw, a["a"], a["axis"], node),))
    if name == "tile_reduce":
        t = a["a"]
        named = _REDUCE_AS.get(getattr(a["op"], "name", None)) if getattr(a["op"], "type_rule", None) else None
        if named in ("tile_min", "tile_max") and T.is_tile(t.type) and T.is_struct(t.type.dtype):
            raise KernelTypeError(f"tile_reduce(): no overload of {a['op'].name}() takes elements of "
                                  f"{T.type_name(t.type.dtype)}, a Warp struct", lw.src.loc(node))
        if named is not None:  # wp.add / wp.min / wp.max: the reductions that have gradients
            return lw.call(named, [t], node, (_axis(lw, t, a["axis"], node),))
        op = element_op(lw, a["op"], [t.type.dtype if T.is_tile(t.type) else t.type] * 2, node)
        return lw.call(name, [t], node, (op, _axis(lw, t, a["axis"], node)))
    if name == "tile_squeeze":
        return _squeeze(lw, a, node)
    if name == "tile_broadcast" and not 1 <= len(a["shape"]) <= 4:
        raise KernelValueError(f"tile_broadcast() output must have between one and four dimensions, got "
                               f"{len(a['shape'])}", lw.src.loc(node))
    if name in ("tile_broadcast", "tile_reshape"):
        return lw.call(name, [a["a" if name == "tile_broadcast" else "t"]], node, (a["shape"],))
    if name == "tile_astype":
        return lw.call(name, [a["t"]], node, (a["dtype"],))
    if name == "tile_view":
        return _view(lw, a["t"], a["offset"], a["shape"], node)
    if name == "tile_sort":
        return lw.call(name, [a["keys"], a["values"]], node, discard=True)
    if name in IN_PLACE or name in LINALG_RESULTS:
        return _linalg(lw, name, a, node)
    if name == "tile_matmul":
        return _matmul(lw, a, node)
    if name == "tile_dot":
        return _dot(lw, a["a"], a["b"], node)
    if name == "tile_axpy":
        return _axpy(lw, a, node)
    return lw.call(name, [a["a"]], node)  # transpose, scans


def _linalg(lw, name, a, node):
    """Solves, factorisations, FFTs: the tiles are values, ``fill_mode`` the template's ``upper``."""
    template = ()
    if "fill_mode" in a:
        if a["fill_mode"] not in ("lower", "upper"):
            raise KernelValueError(f"{name}(): fill_mode must be 'lower' or 'upper', got {a['fill_mode']!r}",
                                   lw.src.loc(node))
        template = (a["fill_mode"] == "upper",)
    values = [v for k, v in a.items() if k != "fill_mode"]
    return lw.call(name, values, node, template, discard=name in IN_PLACE)


def _ndim(arr) -> int:
    return arr.type.ndim if T.is_array(arr.type) else 1


def _check_offsets(lw, arr, offsets, node):
    """Even a tile of fewer dimensions than its array takes an offset for every array dimension, as Warp."""
    if T.is_array(arr.type) and len(offsets) < arr.type.ndim:
        raise KernelTypeError(f"a {arr.type.ndim}-d array needs {arr.type.ndim} offsets, got {len(offsets)}",
                              lw.src.loc(node))


def _axis(lw, t, axis, node):
    if axis is None:
        return None
    if not isinstance(axis, py.int) or isinstance(axis, py.bool):
        raise KernelTypeError(f"axis must be a constant int, got {axis!r}", lw.src.loc(node))
    return axis


def _squeeze(lw, a, node):
    t, axis = a["t"], a["axis"]
    if not T.is_tile(t.type):
        raise KernelTypeError(f"tile_squeeze() needs a tile, got {T.type_name(t.type)}", lw.src.loc(node))
    shape = t.type.shape
    if axis is None:
        axes = [k for k, d in enumerate(shape) if d == 1]
    else:
        axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
        for k, ax in enumerate(axes):
            if not -len(shape) <= ax < len(shape):
                raise KernelValueError(f"tile_squeeze() axis {ax} is out of bounds for tile with {len(shape)} "
                                       "dimensions", lw.src.loc(node))
            axes[k] = ax % len(shape)
            if shape[axes[k]] != 1:
                raise KernelTypeError(f"tile_squeeze(): axis {ax} has extent {shape[axes[k]]}, not 1",
                                      lw.src.loc(node))
    new = tuple(d for k, d in enumerate(shape) if k not in axes) or (1,)
    return lw.call("tile_squeeze", [t], node, (new,))


def _view(lw, t, entries, shape, node):
    """``tile_view(t, offset, shape=None)``: without ``shape`` each offset entry, an integer (removes
    that dimension) or a slice, applies to the leading dimensions; with ``shape`` the integers are
    the origin of a box of that shape."""
    if not T.is_tile(t.type):
        raise KernelTypeError(f"tile_view() needs a tile, got {T.type_name(t.type)}", lw.src.loc(node))
    if shape is None:
        return view_of(lw, t, entries, node, wrap=False)
    if any(isinstance(_as_slice(lw, e), ast.Slice) for e in entries):
        raise KernelTypeError("tile_view(): 'shape' together with a slice offset is ambiguous: give integer "
                              "offsets with a shape, or slices alone", lw.src.loc(node))
    full = t.type.shape
    if len(shape) != len(full) or len(entries) != len(full) or any(isinstance(e, ast.Slice) for e in entries):
        raise KernelTypeError(f"tile_view(t, offset, shape): one integer offset and extent per dimension of the "
                              f"{len(full)}-d tile", lw.src.loc(node))
    indices = [_as_int32(lw, lw.value(e), node) for e in entries]
    for k, (i, n) in enumerate(zip(indices, shape)):
        if i.is_const and not 0 <= i.const <= full[k] - n:
            raise KernelTypeError(f"tile_view(): a box of {n} from {i.const} does not fit dimension {k} "
                                  f"(extent {full[k]})", lw.src.loc(node))
    return lw.call("tile_view", [t, *indices], node, ((("o",),) * len(full), tuple(shape)))


def _gather_entries(lw, t, entries, values, node):
    tiles = [k for k, v in enumerate(values) if T.is_tile(v.type)]
    if len(tiles) != 1 or len(entries) != 1:
        raise KernelTypeError("indexing a tile with a tile of indices takes one index tile and full slices "
                              "(t[idx, :]) elsewhere", lw.src.loc(node))
    return lw.call("_tile_gather", [t, values[tiles[0]]], node, (tiles[0],))


def _as_slice(lw, e):
    """``slice(a, b, c)`` written as a call (tile_view's offsets) is the slice ``a:b:c``."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "slice" and not e.keywords \
            and lw.src.lookup("slice") is slice and e.func.id not in lw.symbols:
        parts = list(e.args) + [None] * (3 - len(e.args))
        lower, upper, step = (None, parts[0], None) if len(e.args) == 1 else parts[:3]
        return ast.Slice(lower=lower, upper=upper, step=step)
    return e


def view_of(lw, t, entries, node, wrap=True):
    """``t[...]`` with fewer integers than dimensions, or with slices: a view (no copy); with one
    entry an integer tile (``t[idx, :]``), a copy gathering those entries along its axis. ``wrap``:
    negative integers count from the end (subscripts; tile_view's offsets do not)."""
    full, loc = t.type.shape, lw.src.loc(node)
    entries = [_as_slice(lw, e) for e in entries]
    if len(entries) > len(full):
        raise KernelTypeError(f"a {len(full)}-d tile indexed with {len(entries)} entries", loc)
    values = [None if isinstance(e, ast.Slice) else lw.value(e) for e in entries]  # lowered once
    for v in values:
        if v is not None and not T.is_tile(v.type) and not T.is_int(v.type):
            raise KernelTypeError(f"tile indices must be integers or slices, got {T.type_name(v.type)}", loc)
    gathers = [k for k, v in enumerate(values) if isinstance(v, ir.Value) and T.is_tile(v.type)]
    if gathers:
        k = gathers[0]
        full_slices = all(isinstance(e, ast.Slice) and e.lower is None and e.upper is None and e.step is None
                          for j, e in enumerate(entries) if j != k)
        if len(gathers) > 1 or not full_slices:
            raise KernelTypeError("indexing a tile with an integer index tile requires ':' on all other axes "
                                  "(t[idx, :])", loc)
        return lw.call("_tile_gather", [t, values[k]], node, (k,))
    spec, shape, indices = [], [], []
    for k, e in enumerate(entries):
        if isinstance(e, ast.Slice):
            try:
                parts = [None if p is None else constant(lw, p) for p in (e.lower, e.upper, e.step)]
            except KernelTypeError:
                raise KernelTypeError("tile slice bounds must be compile-time constant integers", loc) from None
            if any(p is not None and (isinstance(int_or(p), py.bool) or not isinstance(int_or(p), py.int))
                   for p in parts):
                raise KernelTypeError("tile indices must be integers or slices (slice bounds constant integers)",
                                      loc)
            start, stop, step = slice(*[None if p is None else int_or(p) for p in parts]).indices(full[k])
            n = len(range(start, stop, step))
            if n <= 0:
                raise KernelTypeError(f"the slice of dimension {k} (extent {full[k]}) is empty: a zero-length "
                                      "tile", loc)
            spec.append(("s", start, step))
            shape.append(n)
        else:
            i = _as_int32(lw, values[k], node)
            if i.is_const and not (-full[k] if wrap else 0) <= i.const < full[k]:
                raise KernelTypeError(f"index {i.const} is out of bounds for dimension {k} (extent {full[k]})", loc)
            spec.append(("i",))
            indices.append(i)
    shape += list(full[len(entries):])
    if not shape:
        return lw.call("tile_extract", [t, *indices], node)
    return lw.call("tile_view", [t, *indices], node, (tuple(spec), tuple(shape)))


def _matmul(lw, a, node):
    """Arguments (a, b[, out][, alpha][, beta]); template (alpha, beta, has out), a scale that is
    None there being the run-time argument (beta only with out)."""
    out = a["out"]
    args = [a["a"], a["b"]] + ([out] if out is not None else [])
    precision = a["precision"]
    if precision not in ("default", "tf32"):
        raise KernelValueError(f"tile_matmul(): precision must be 'default' or 'tf32', got {precision!r}",
                               lw.src.loc(node))
    if precision == "tf32" and not all(T.is_tile(x.type) and x.type.dtype is T.float32 for x in args[:2]):
        raise KernelTypeError("tile_matmul(): precision='tf32' needs float32 tiles a and b", lw.src.loc(node))
    # precision='tf32' computes in full float32 (as Warp does wherever cuBLASDx does not run): the
    # result is at least as accurate as TF32's, and the same on every target
    scales = []
    for name in ("alpha", "beta") if out is not None else ("alpha",):
        v = a[name]
        if isinstance(v, ir.Value):
            if not (T.is_scalar(v.type) and T.scalar_of(v.type)._kind_ in ("float", "int", "uint")):
                raise KernelTypeError(f"tile_matmul(): {name} must be a number, got {T.type_name(v.type)}",
                                      lw.src.loc(node))
            args.append(v)
            v = None
        scales.append(v)
    if out is None:
        scales.append(1.0)
    result = lw.call("tile_matmul", args, node, (*scales, out is not None))
    if out is None:
        return result
    # the accumulating form writes `out` in place: rebind the variable it names to the new value
    target = node.args[2] if len(node.args) > 2 else next(k.value for k in node.keywords if k.arg == "out")
    if not isinstance(target, ast.Name):
        raise KernelTypeError("tile_matmul(a, b, out): out must be a local tile variable", lw.src.loc(node))
    lw.bind(target.id, result, node)
    return None


def _scatter(lw, name, node):
    """``tile_scatter_add(t, i[, j, ...], value, has_value, atomic=True)`` / ``tile_scatter_masked(...)``:
    each lane with ``has_value`` adds (writes) ``value`` at its index of a shared tile: an element
    update under the lane's own condition."""
    loc = lw.src.loc(node)
    kw = {k.arg: k.value for k in node.keywords}
    if set(kw) - {"value", "has_value", "atomic"}:
        raise KernelTypeError(f"{name}() got an unexpected argument '{sorted(set(kw) - {'value', 'has_value', 'atomic'})[0]}'",
                              loc)
    pos = list(node.args)
    has_node = kw.get("has_value") or pos.pop()
    value_node = kw.get("value") or pos.pop()
    if len(pos) < 2:
        raise KernelTypeError(f"{name}(t, i, ..., value, has_value) needs a tile and its indices", loc)
    t = lw.value(pos[0])
    if not T.is_tile(t.type):
        raise KernelTypeError(f"{name}() needs a tile, got {T.type_name(t.type)}", loc)
    indices = [_as_int32(lw, lw.value(i), node) for i in pos[1:]]
    value = lw.coerce(lw.value(value_node), t.type.dtype, node, "the scattered value")
    has = lw.truth(lw.value(has_node), node)
    body, saved = [], lw.stmts
    lw.stmts = body
    op = "add" if name == "tile_scatter_add" else "set"
    lw.call(f"_tile_element_{op}", [t, *indices, value], node, (op,), discard=True)
    lw.stmts = saved
    lw.stmts.append(ir.If(has, body, [], (), loc))
    return None


def _stack(lw, name, a, node):
    if name == "tile_stack":
        return lw.call(name, [], node, (a["capacity"], a["dtype"]))
    s = a["s"]
    if name == "tile_stack_push":
        value, flag = a["value"], a["has_value"]
        if isinstance(flag, bool):
            flag = lw.const(flag, T.bool_)
        if isinstance(s.type, T.TileStackType):
            if value.weak:
                try:
                    value = lw.coerce(value, s.type.dtype, node, "the pushed value")
                except KernelTypeError:
                    pass  # reported by tile_stack_push's type rule, in the stack's terms
        return lw.call(name, [s, value, lw.truth(flag, node)], node)
    if name == "tile_stack_count":
        return lw.call(name, [s], node, ("count",))
    if name == "tile_stack_clear":
        return lw.call(name, [s], node, ("clear",), discard=True)
    return lw.call(name, [s], node)


def _indexed(lw, name, a, node):
    arr, idx = a["a"], a["indices"]
    if name == "tile_load_indexed":
        offsets = a["offset"] or [lw.const(0, T.int32)] * _ndim(arr)
        return lw.call(name, [arr, idx, *offsets], node, (a["shape"], a["storage"], _axis(lw, None, a["axis"], node)))
    offsets = a["offset"] or [lw.const(0, T.int32)] * _ndim(arr)
    axis = _axis(lw, None, a["axis"], node)
    if name == "tile_store_indexed":
        return lw.call(name, [arr, idx, a["t"], *offsets], node, (axis,), discard=True)
    return lw.call(name, [arr, idx, a["t"], *offsets], node, (axis, "old"))


def _dot(lw, x, y, node):
    """tile_dot(a, b): the sum over elements of a * b (dot for vectors, a Frobenius product for
    matrices), as a one-element tile; composed of tile_map and tile_sum, so its gradient is theirs."""
    if not (T.is_tile(x.type) and T.is_tile(y.type)) or x.type != y.type:
        raise KernelTypeError(f"tile_dot() needs two tiles of one type and shape, got {T.type_name(x.type)} and "
                              f"{T.type_name(y.type)}", lw.src.loc(node))
    dtype = x.type.dtype
    op = "dot" if T.is_vector(dtype) or T.is_quaternion(dtype) else "ddot" if T.is_matrix(dtype) else "mul"
    return lw.call("tile_sum", [map_values(lw, REGISTRY[op], [x, y], node)], node, (None,))


def _axpy(lw, a, node):
    """tile_axpy(alpha, src, dest): dest += alpha * src, in place (dest names a local tile)."""
    target = node.args[2] if len(node.args) > 2 else next(k.value for k in node.keywords if k.arg == "dest")
    if not isinstance(target, ast.Name):
        raise KernelTypeError("tile_axpy(alpha, src, dest): dest must be a local tile variable", lw.src.loc(node))
    dest, src, alpha = a["dest"], a["src"], a["alpha"]
    if not T.is_tile(dest.type) or dest.type != src.type:
        raise KernelTypeError(f"tile_axpy(): src and dest must be tiles of one type and shape, got "
                              f"{T.type_name(src.type)} and {T.type_name(dest.type)}", lw.src.loc(node))
    scaled = map_values(lw, REGISTRY["mul"], [src, alpha], node)
    lw.bind(target.id, tile_operator(lw, "add", [dest, scaled], node), node)
    return None


def element_op(lw, fn, arg_types, node) -> ElementOp:
    """``fn`` (a builtin or a @wp.func) applied to one element of each argument."""
    from .calls import PY_BUILTINS

    loc = lw.src.loc(node)
    if fn in PY_BUILTINS:
        fn = REGISTRY[PY_BUILTINS[fn]]
    if getattr(fn, "_tw_specialize", None) is not None:  # a @wp.func: the overload for these types
        from .funcs import _fits

        probes = [ir.Value(0, t) for t in arg_types]
        candidates = [f for f in fn.overloads if _fits(f, probes, {}, "exact")]
        if not candidates:
            raise KernelTypeError(f"{fn.__name__}() takes no ({', '.join(map(T.type_name, arg_types))}) elements",
                                  loc)
        callee = candidates[0]._tw_specialize(tuple(arg_types), loc)
        if callee not in lw.fn.callees:
            lw.fn.callees.append(callee)
        if callee.return_type is None:
            raise KernelTypeError(f"{fn.__name__}() must return a value per element", loc)
        return ElementOp(func=callee, result=callee.return_type)
    if not hasattr(fn, "type_rule"):
        raise KernelTypeError(f"cannot apply {getattr(fn, '__name__', fn)!r} to tile elements: pass a builtin "
                              "(wp.sin, wp.add, ...) or a @wp.func", loc)

    try:
        result = fn.type_rule(tuple(arg_types), ())
    except BuiltinTypeError as e:
        raise KernelTypeError(f"{fn.name}() on tile elements: {e}", loc) from None
    return ElementOp(builtin=fn, result=result)


def _tile_map(lw, node):
    loc = lw.src.loc(node)
    if node.keywords or len(node.args) < 2:
        raise KernelTypeError("tile_map(op, a, b, ...) takes a function and 1 to 8 arguments", loc)
    fn = lw.visit(node.args[0])
    args = [lw.value(a) for a in node.args[1:]]
    return map_values(lw, fn, args, node)


def map_values(lw, fn, args, node):
    tiles = [a for a in args if T.is_tile(a.type)]
    if not tiles:
        raise KernelTypeError("tile_map() needs at least one tile argument", lw.src.loc(node))
    dtype = T.scalar_of(tiles[0].type.dtype) if not T.is_struct(tiles[0].type.dtype) else None
    fixed = []
    for a in args:  # literals take the tiles' scalar type
        if a.weak and dtype is not None:
            a = lw.const(a.const, dtype if T.is_float(dtype) or isinstance(a.const, py.int) else T.float32)
        fixed.append(a)
    op = element_op(lw, fn, [a.type.dtype if T.is_tile(a.type) else a.type for a in fixed], node)
    return lw.call("tile_map", fixed, node, (op,))


def tile_operator(lw, name, args, node):
    """``a + b``, ``t * 2.0``, ``-t`` on tiles: the scalar builtin mapped over the elements."""
    if name in ("mul", "div") and len(args) == 2:
        _check_scalar_operand(lw, name, *args, node)
    return map_values(lw, REGISTRY[name], args, node)


def _describe_operand(t) -> str:
    return f"tile<{T.type_name(t.dtype)}, {t.shape}>" if T.is_tile(t) else T.type_name(t)


def _check_scalar_operand(lw, name, a, b, node):
    """Warp's rule for ``*`` and ``/`` with tiles: at least one side's elements are scalars."""
    ea, eb = (v.type.dtype if T.is_tile(v.type) else v.type for v in (a, b))
    if T.is_scalar(ea) or T.is_scalar(eb):
        return
    verb = "multiply" if name == "mul" else "divide"
    if T.is_tile(a.type) and T.is_tile(b.type):
        raise KernelTypeError(f"cannot {verb} two tiles of {T.type_name(ea)} and {T.type_name(eb)}: the element "
                              "type must be scalar on one side", lw.src.loc(node))
    raise KernelTypeError(f"Cannot {verb} {_describe_operand(a.type)} by {_describe_operand(b.type)}: at least one "
                          "operand must be a scalar type", lw.src.loc(node))


# ---- indexing ------------------------------------------------------------------------------------


def tile_subscript(lw, base, node):
    """``t[i, j]`` (an element, or a component of a vector/matrix element), or a view: ``t[i]`` of a
    2-d tile (a row), ``t[1:3, ::2]``."""
    entries = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    shape = base.type.shape
    if any(isinstance(e, ast.Slice) for e in entries) or len(entries) < len(shape):
        return view_of(lw, base, entries, node)
    values = [lw.value(e) for e in entries]
    if any(T.is_tile(v.type) for v in values):  # t[idx] with an index tile: a gather
        return _gather_entries(lw, base, entries, values, node)
    indices = [_as_int32(lw, v, node) for v in values]
    if len(indices) > len(shape):  # components of a vector or matrix element
        element = lw.call("tile_extract", [base, *indices[:len(shape)]], node)
        rest = lw.component_indices(element.type, indices[len(shape):], node)

        return lw.call(component_builtin("extract", element.type, len(rest)), [element, *rest], node)
    return lw.call("tile_extract", [base, *indices], node)


class TileElement:
    """``t[i, j]`` as an assignment target (frontend/places.py)."""

    def __init__(self, lw, node, tile, indices):
        self.lw, self.node, self.tile, self.indices = lw, node, tile, indices
        self._value = None

    def get(self):
        if self._value is None:
            self._value = self.lw.call("tile_extract", [self.tile, *self.indices], self.node)
        return self._value

    def set(self, value, stmt):
        value = self.lw.coerce(value, self.tile.type.dtype, stmt, "tile element")
        self.lw.call("_tile_element_set", [self.tile, *self.indices, value], stmt, ("set",), discard=True)

    def update(self, op, value, stmt):
        value = self.lw.coerce(value, self.tile.type.dtype, stmt, "tile element")
        self.lw.call(f"_tile_element_{op}", [self.tile, *self.indices, value], stmt, (op,), discard=True)


class TileRegion:
    """``t[i] = row`` / ``t[1:3] = src``: the source tile written into a view of ``t``."""

    def __init__(self, lw, node, view):
        self.lw, self.node, self.view = lw, node, view

    def get(self):
        return self.view

    def set(self, value, stmt):
        zeros = [self.lw.const(0, T.int32)] * len(self.view.type.shape)
        self.lw.call("tile_assign", [self.view, value, *zeros], stmt, discard=True)


def tile_place(lw, node, base):
    index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    indices = [_as_int32(lw, lw.index(i), node) for i in index_nodes]
    if len(indices) != len(base.type.shape):
        raise KernelTypeError(f"assigning into a {len(base.type.shape)}-d tile needs {len(base.type.shape)} indices, "
                              f"got {len(indices)}", lw.src.loc(node))
    return TileElement(lw, node, base, indices)


# ---- @wp.func with tiles: inlined ------------------------------------------------------------------


def names_tile_builtins(func) -> bool:
    """The function's body names a tile builtin (so it is inlined into its callers); walked once per
    function, not at every call site."""
    flag = getattr(func, "_tw_names_tiles", None)
    if flag is None:
        names = (n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else ""
                 for n in ast.walk(func.source().tree))
        flag = func._tw_names_tiles = any(name.startswith("tile") or name == "untile" or name in QUERY_CALLS
                                          for name in names)
    return flag


def inline_call(lw, func, node):
    """Lower ``func``'s body into the caller with its parameters bound to the argument values.

    A tile parameter the body rebinds (``t += u``) is passed back to a caller variable named as the
    argument, since Warp passes tiles by reference."""
    from .funcs import bind_call
    from .lower import Lowerer

    loc = lw.src.loc(node)
    func, args = bind_call(lw, func, node)
    if func.custom_grad is not None or func.custom_replay is not None:
        raise KernelTypeError(f"{func.__name__}() works on tiles and has a custom gradient: not supported yet", loc)
    depth = getattr(lw, "inline_depth", 0)
    if depth > 16:
        raise KernelTypeError(f"{func.__name__}(): tile functions nest more than 16 deep (recursion?)", loc)
    sub = Lowerer(func.source(), {}, is_kernel=False, symbol=lw.fn.symbol, block_dim=lw.block_dim)
    sub.fn, sub.stmts, sub._next_id, sub.inline_depth = lw.fn, lw.stmts, lw._next_id, depth + 1
    names = [p[0] for p in func.parameters()]
    for name, value in zip(names, args):
        sub.symbols[name] = value
    sub.inline_result = _NO_RESULT
    for stmt in func.source().tree.body:  # a return before the end is refused by sub.visit_Return
        sub.visit(stmt)
    lw._next_id = sub._next_id
    lw.stmts = sub.stmts
    for name, value, arg_node in zip(names, args, node.args):
        if T.is_tile(value.type) and sub.symbols.get(name) is not value and isinstance(arg_node, ast.Name) \
                and arg_node.id in lw.symbols:
            lw.bind(arg_node.id, sub.symbols[name], node)
    result = sub.inline_result
    return None if result is _NO_RESULT else result


_NO_RESULT = object()
