"""Array access, launch indices and atomics."""
from __future__ import annotations

from .. import types as T
from .registry import Builtin, fail, names, register


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
    return T.ArrayType(arr.dtype, arr.ndim - len(idx))


def _store(args, template):
    arr, *idx, value = args
    _indices(arr, idx)
    if len(idx) != arr.ndim:
        fail(f"storing into a {arr.ndim}-d array needs {arr.ndim} indices, got {len(idx)}")
    if value != arr.dtype:
        fail(f"cannot store {T.type_name(value)} into an array of {T.type_name(arr.dtype)}")
    return None


def _atomic(args, template):
    arr, *idx, value = args
    _store(args, template)
    return arr.dtype


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
    if n == 1:  # a lone wp.tid(): in a multi-dimensional launch the first coordinate, as in Warp 1.19
        return "tw::tid_first(args.bounds, task)"
    return f"tw::tid<{k}, {n}>(args.bounds, task)"


def _view_cpp(args, template):
    """``a[i, j]`` of a 3-d array: one dimension peeled per index (``tw::view`` takes one)."""
    arr, *idx = args
    for i in idx:
        arr = f"tw::view({arr}, {i})"
    return arr


def _address(args):
    return f"tw::address({', '.join(args[:-1])})"


def _atomic_entry(name, differentiable=True):
    return Builtin(f"atomic_{name}", _atomic, f"tw::atomic_{name}", side_effect=True, unify_literals=False,
                   differentiable=differentiable, adjoint=f"tw::adj_atomic_{name}" if differentiable else None,
                   emit=lambda a, t: f"tw::atomic_{name}({_address(a)}, {a[-1]})")


register(
    Builtin("load", _load, "tw::load", unify_literals=False, adjoint="tw::adj_load"),
    # a[i] with fewer indices than dimensions: the sub-array, sharing memory
    Builtin("view", _view, "tw::view", unify_literals=False, adjoint="tw::adj_view", emit=_view_cpp),
    Builtin("store", _store, "tw::store", side_effect=True, unify_literals=False, adjoint="tw::adj_store"),
    Builtin("shape", _shape, "tw::shape", unify_literals=False, differentiable=False),
    Builtin("tid", _tid, "tw::tid", kernel_context=True, differentiable=False,
            emit=_tid_cpp),
    _atomic_entry("add"),
    _atomic_entry("sub"),
    _atomic_entry("min"),
    _atomic_entry("max"),
)
