"""Generic annotations and their matching: ``typing.Any``, ``wp.Scalar``/``wp.Float``/``wp.Int``, and
vectors, matrices and arrays of them (``wp.array(dtype=Any)``, ``vector(length=Any, dtype=Float)``).

A parameter annotated with one of these is a *template*. A ``@wp.func`` is specialised per call from
the argument types; a ``@wp.kernel`` at launch from the Python arguments (``infer``), as in Warp:
Python ``int``/``float``/``bool`` are int32/float32/bool, arrays give ``array(dtype, ndim)``.
"""
from __future__ import annotations

import builtins as py
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import types as T

#: generic scalar annotations (``T.Scalar`` is the base class of the scalar types: "any number")
GENERIC_SCALARS = (Any, T.Scalar, T.Float, T.Int)


@dataclass(frozen=True)
class GenericComposite:
    """``vector(length=Any, dtype=Float)`` / ``matrix(shape=(Any, Any), dtype=Scalar)``; None = any size."""

    shape: tuple
    dtype: object
    is_matrix: bool

    def __repr__(self):
        dims = ", ".join("Any" if d is None else str(d) for d in self.shape)
        kind = f"matrix(shape=({dims}), " if self.is_matrix else f"vector(length={dims}, "
        return f"{kind}dtype={describe(self.dtype)})"


@dataclass(frozen=True)
class GenericArray:
    """``wp.array(dtype=<generic>, ndim=n)``."""

    dtype: object
    ndim: int

    def __repr__(self):
        return f"array(dtype={describe(self.dtype)}, ndim={self.ndim})"


def composite(shape: tuple, dtype, is_matrix: bool) -> GenericComposite:
    """What ``T.vector``/``T.matrix`` return when the length/shape or the dtype is generic."""
    if dtype in T.python_scalar_aliases:
        dtype = T.python_scalar_aliases[dtype]
    return GenericComposite(tuple(None if d is Any else d for d in shape), dtype, is_matrix)


def is_generic(t) -> bool:
    return any(t is g for g in GENERIC_SCALARS) or isinstance(t, (GenericComposite, GenericArray))


def template(annotation):
    """The template an annotation stands for, or None when it names one concrete type."""
    if is_generic(annotation):
        return annotation
    dtype = getattr(annotation, "dtype", None)
    if getattr(annotation, "__tw_annotation__", None) is not None and is_generic(dtype):
        return GenericArray(dtype, annotation.ndim)
    return None


def matches(tmpl, t) -> bool:
    """Whether the concrete type ``t`` is an instance of ``tmpl`` (a template or a concrete type)."""
    if tmpl is Any:
        return True
    if tmpl is T.Scalar:
        return T.is_scalar(t) and t is not T.bool_
    if tmpl is T.Float:
        return T.is_float(t)
    if tmpl is T.Int:
        return T.is_int(t)
    if isinstance(tmpl, GenericComposite):
        if not (T.is_matrix(t) if tmpl.is_matrix else T.is_vector(t)):
            return False
        if any(d is not None and d != s for d, s in zip(tmpl.shape, t._wp_shape_)):
            return False
        return matches(tmpl.dtype, t._wp_scalar_type_)
    if isinstance(tmpl, GenericArray):
        return T.is_array(t) and t.ndim == tmpl.ndim and matches(tmpl.dtype, t.dtype)
    return tmpl == t


def infer(value):
    """The kernel type of a Python launch argument (raises TypeError when it has none)."""
    if isinstance(value, T.host_array):
        return T.ArrayType(value.dtype, value.ndim)
    if isinstance(value, py.bool):
        return T.bool_
    if isinstance(value, py.int):
        return T.int32
    if isinstance(value, py.float):
        return T.float32
    if isinstance(value, T.Scalar):
        return type(value)
    if isinstance(value, (T.VectorBase, T.MatrixBase)) or T.is_struct(type(value)):
        return type(value)
    if isinstance(value, np.generic):  # beyond Warp, which rejects numpy scalars here
        return T.scalar_type(value.dtype)
    raise TypeError(f"cannot infer a kernel type from {'None' if value is None else type(value).__name__}")


_PLAIN = (py.bool, py.int, py.float)


def fast_key(values, positions):
    """A hashable key fixing the kernel types of ``values[positions]``, or None where a value's class
    alone does not (only plain arrays, Python numbers and tilewarp scalars/vectors/matrices qualify)."""
    array = T.host_array
    key = []
    for k in positions:
        v = values[k]
        t = type(v)
        if t is array:
            key.append((v.dtype, v.ndim))
        elif t in _PLAIN or issubclass(t, (T.Scalar, T.VectorBase, T.MatrixBase)):
            key.append(t)
        else:
            return None
    return tuple(key)


def describe(t) -> str:
    if t is Any:
        return "Any"
    if t is T.Scalar:
        return "Scalar"
    return T.type_name(t)
