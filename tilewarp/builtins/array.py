"""Array access, launch indices, atomics and debug-build checks (``assert``)."""
from __future__ import annotations

from ..language import types as T
from .registry import Builtin, fail, names, register
from ..language.names import block_tids, lane_tids, launch_ndim


def _indices(arr, idx):
    if not T.is_array(arr):
        fail(f"expects an array, got {T.type_name(arr)}")
    if any(not T.is_int(i) for i in idx):
        fail(f"array indices must be integers, got ({names(idx)})")
    if not 1 <= len(idx) <= arr.ndim:
        fail(f"{arr.ndim}-d array indexed with {len(idx)} indices")


def _load(args, template):
    arr, *idx = args
    _indices(arr, idx)
    if len(idx) != arr.ndim:
        fail(f"reading a {arr.ndim}-d array element needs {arr.ndim} indices, got {len(idx)}")
    return arr.dtype


def _view(args, template):
    arr, *idx = args
    _indices(arr, idx)
    if len(idx) >= arr.ndim:
        fail(f"a view of a {arr.ndim}-d array takes fewer than {arr.ndim} indices")
    return type(arr)(arr.dtype, arr.ndim - len(idx))  # a view of an indexedarray is one too


def _store(args, template):
    arr, *idx, value = args
    _indices(arr, idx)
    if len(idx) != arr.ndim:
        fail(f"storing into a {arr.ndim}-d array needs {arr.ndim} indices, got {len(idx)}")
    if value != arr.dtype:
        fail(f"cannot store {T.type_name(value)} into an array of {T.type_name(arr.dtype)}")
    return None


def _store_component(args, template):
    """``arr[i..][c] = v`` / ``arr[i..][r, c] = v``; template: (the array's ndim, the element's columns)."""
    ndim, cols = template
    arr, *idx, value = args
    idx, comp = idx[:ndim], idx[ndim:]
    _store([arr, *idx, arr.dtype], ())  # the element part: as a whole-element store
    elem = arr.dtype
    shape = getattr(elem, "_wp_shape_", ())  # vectors, quaternions, transforms: (n,); matrices: (rows, cols)
    if not shape or len(comp) != len(shape) or cols != (shape[1] if len(shape) == 2 else 1):
        fail(f"cannot assign {len(comp)} component index(es) of {T.type_name(elem)}")
    if any(not T.is_int(c) for c in comp):
        fail(f"component indices must be integers, got ({names(comp)})")
    if value != T.scalar_of(elem):
        fail(f"cannot assign {T.type_name(value)} to a component of {T.type_name(elem)}")
    return None


def _store_component_cpp(a, template):
    ndim, cols = template
    if a[0].startswith("TW_LOC("):  # debug builds (emit_located): the site first
        loc, arr, *idx, value = a
        return f"tw::store_component<{ndim}, {cols}>({loc}, {arr}, {value}, {', '.join(idx)})"
    arr, *idx, value = a
    return f"tw::store_component<{ndim}, {cols}>({arr}, {value}, {', '.join(idx)})"


def _adj_store_component(a, adj, adj_ret, template):
    ndim, cols = template
    return f"tw::adj_store_component<{ndim}, {cols}>({adj[0]}, {adj[-1]}, {', '.join(a[1:-1])})"


#: scalar types an explicit ``wp.atomic_x()`` call takes, as in Warp (the widths the hardware has
#: atomics for); ``a[i] += x`` on other arrays still updates atomically (template ``("update",)``)
_W32_64 = ("int32", "uint32", "int64", "uint64")
_ATOMIC_SCALARS = {
    "add": (*_W32_64, "float16", "bfloat16", "float32", "float64"),
    "sub": (*_W32_64, "float16", "bfloat16", "float32", "float64"),
    "min": (*_W32_64, "bfloat16", "float32", "float64"),  # Warp has no float16 atomic min/max
    "max": (*_W32_64, "bfloat16", "float32", "float64"),
    "cas": (*_W32_64, "float32", "float64"),
    "exch": (*_W32_64, "float32", "float64"),
    "and": _W32_64, "or": _W32_64, "xor": _W32_64,
}
_ATOMIC_LISTS = {  # Warp's wording of each set
    "add": "[u]int32, [u]int64, float16, bfloat16, float32, or float64",
    "min": "[u]int32, [u]int64, bfloat16, float32, or float64",
    "cas": "[u]int32, [u]int64, float32, or float64",
    "and": "[u]int32 or [u]int64",
}
for _a, _b in (("sub", "add"), ("max", "min"), ("exch", "cas"), ("or", "and"), ("xor", "and")):
    _ATOMIC_LISTS[_a] = _ATOMIC_LISTS[_b]


def _atomic(op):
    """``atomic_op(arr, i[, j, k, l], value)``, and ``(arr, i.., compare, value)`` for cas: the old value."""
    n_values = 2 if op == "cas" else 1

    def rule(args, template):
        if len(args) < 2 + n_values:
            fail(f"takes an array, its indices and {n_values} value(s), got {len(args)} arguments")
        arr, idx, values = args[0], args[1:-n_values], args[-n_values:]
        _indices(arr, idx)
        if len(idx) != arr.ndim:
            fail(f"a {arr.ndim}-d array needs {arr.ndim} indices, got {len(idx)}")
        if any(v != arr.dtype for v in values):
            fail(f"value type ({names(values)}) must be the array's type {T.type_name(arr.dtype)}")
        scalar = T.scalar_of(arr.dtype)
        if template != ("update",) and T.type_name(scalar) not in _ATOMIC_SCALARS[op]:
            fail(f"operations only work on arrays with {_ATOMIC_LISTS[op]} as the underlying scalar types, but "
                 f"got {T.type_name(arr.dtype)} (with scalar type {T.type_name(scalar)})", sentence=True)
        if scalar._kind_ not in (("int", "uint") if op in ("and", "or", "xor") else ("int", "uint", "float")):
            fail(f"does not support arrays of {T.type_name(arr.dtype)}")
        return arr.dtype

    return rule


def _shape(args, template):
    (arr,) = args
    if not T.is_array(arr):
        fail(f"expects an array, got {T.type_name(arr)}")
    return T.vector(arr.ndim, T.int32)


def _tid(args, template):
    k, n = template
    return T.int32


def _tid_cpp(args, template):
    k, n = template

    if (k, n) in lane_tids():  # a block kernel's: the first lane's value plus the lane's index
        return f"tw::coordinate(tw_tid_{k}_{n} + (int32_t)(task - tw_base))"
    if (k, n) in block_tids():  # the same in every lane, from the block index (emit/block.py prologue)
        return f"tw_tid_{k}_{n}"
    if launch_ndim():  # a block kernel compiled for this many launch dimensions
        return f"tw::tid<{k}, {n}, {launch_ndim()}>(args.bounds, task)"
    if n == 1:  # a lone wp.tid(): in a multi-dimensional launch the first coordinate, as in Warp 1.19
        return "tw::tid_first(args.bounds, task)"
    return f"tw::tid<{k}, {n}>(args.bounds, task)"


def _view_cpp(args, template):
    """``a[i, j]`` of a 3-d array: one dimension peeled per index (``tw::view`` takes one)."""
    arr, *idx = args
    for i in idx:
        arr = f"tw::view({arr}, {i})"
    return arr


#: Builtins that debug builds emit with a ``tw::src_loc{site, arg}`` first argument, so a failed
#: check names the user's file:line and the array (see ``emit_located``).
LOCATED = {"load", "store", "store_component", "view", "_assert", "lower_bound", "div", "mod", "floordiv"}


def emit_located(b: Builtin, site: int, arg: int, args: list, template) -> str:
    """Debug-build C++ for a ``LOCATED`` builtin: the same call with its site and array argument."""
    loc = f"TW_LOC({site}, {arg})"
    if b.name == "_assert":
        return f"TW_ASSERT_AT({args[0]}, {site})"
    if b.name in ("div", "mod", "floordiv"):  # integer scalars only (sites.locate): a zero divisor
        return f"tw::{b.name}_at({loc}, {', '.join(args)})"
    if b.name == "view":  # one call, so a bad index names its dimension in the indexed array
        return f"tw::view({loc}, {', '.join(args)})"
    if b.emit is not None:  # atomics: tw::atomic_x(tw::address(loc, arr, i...), v)
        return b.emit([loc, *args], template)
    return f"{b.cpp}({loc}, {', '.join(args)})"


def _lower_bound(args, template):
    """``lower_bound(arr, value)`` / ``lower_bound(arr, arr_begin, arr_end, value)`` on a 1-d array."""
    if len(args) not in (2, 4):
        fail(f"takes (arr, value) or (arr, arr_begin, arr_end, value), got {len(args)} arguments")
    arr, *bounds, value = args
    if not T.is_array(arr) or isinstance(arr, T.IndexedArrayType) or arr.ndim != 1 or not T.is_scalar(arr.dtype):
        fail(f"expects a 1-d array of scalars, got {T.type_name(arr)}")
    if any(not T.is_int(b) for b in bounds):
        fail(f"arr_begin and arr_end must be integers, got ({names(bounds)})")
    if value != arr.dtype:
        fail(f"value must be the array's type {T.type_name(arr.dtype)}, got {T.type_name(value)}")
    return T.int32


def _assert_rule(args, template):
    if len(args) != 1 or args[0] is not T.bool_:
        fail(f"expects one bool, got ({names(args)})")
    return None


# Adjoints (native/runtime/array_adjoint.h), given (args, adjoint args, adjoint of the result):
# the indices go last so the C++ side needs no pack in the middle of its parameters.
def _adj_load(a, adj, adj_ret, t):
    return f"tw::adj_load({adj[0]}, {adj_ret}, {', '.join(a[1:])})"


def _adj_write(fn):
    return lambda a, adj, adj_ret, t: f"tw::{fn}({adj[0]}, {adj[-1]}, {', '.join(a[1:-1])})"


def _adj_minmax(a, adj, adj_ret, t):
    return f"tw::adj_atomic_minmax({a[0]}, {adj[0]}, {a[-1]}, {adj[-1]}, {', '.join(a[1:-1])})"


_ATOMIC_ADJOINTS = {"add": _adj_write("adj_store"), "sub": _adj_write("adj_atomic_sub"),
                    "min": _adj_minmax, "max": _adj_minmax}


def _atomic_entry(name, differentiable=True):
    LOCATED.add(f"atomic_{name}")
    n = 2 if name == "cas" else 1  # trailing value arguments after the array and its indices
    adjoint = f"tw::adj_atomic_{name}" if differentiable else None
    return Builtin(f"atomic_{name}", _atomic(name), f"tw::atomic_{name}", side_effect=True,
                   unify_literals=False, differentiable=differentiable, adjoint=adjoint,
                   undefined_gradient=not differentiable, adjoint_emit=_ATOMIC_ADJOINTS.get(name),
                   emit=lambda a, t: f"tw::atomic_{name}(tw::address({', '.join(a[:-n])}), {', '.join(a[-n:])})")


register(
    Builtin("load", _load, "tw::load", unify_literals=False, adjoint="tw::adj_load", adjoint_emit=_adj_load),
    # a[i] with fewer indices than dimensions: the sub-array, sharing memory
    Builtin("view", _view, "tw::view", unify_literals=False, adjoint="tw::adj_view", emit=_view_cpp),
    Builtin("store", _store, "tw::store", side_effect=True, unify_literals=False, adjoint="tw::adj_store",
            adjoint_emit=_adj_write("adj_store")),
    Builtin("store_component", _store_component, "tw::store_component", side_effect=True, unify_literals=False,
            emit=_store_component_cpp, adjoint_emit=_adj_store_component),
    Builtin("shape", _shape, "tw::shape", unify_literals=False, differentiable=False),
    Builtin("tid", _tid, "tw::tid", kernel_context=True, differentiable=False,
            emit=_tid_cpp),
    _atomic_entry("add"),
    _atomic_entry("sub"),
    _atomic_entry("min"),
    _atomic_entry("max"),
    *(_atomic_entry(name, differentiable=False) for name in ("cas", "exch", "and", "or", "xor")),
    Builtin("lower_bound", _lower_bound, "tw::lower_bound", differentiable=False, unify_literals=False),
    # `assert cond` (frontend): `if (tw::debug_build()) TW_ASSERT_AT(cond, site)`, so release builds
    # drop the check and its condition, as Warp compiles asserts out of release kernels
    Builtin("_debug_build", lambda args, template: T.bool_, "tw::debug_build", differentiable=False),
    Builtin("_assert", _assert_rule, "TW_ASSERT_AT", side_effect=True, differentiable=False,
            emit=lambda a, t: f"TW_ASSERT_AT({a[0]}, -1)"),
)
