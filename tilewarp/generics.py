"""Generic annotations and their matching: ``typing.Any``, ``wp.Scalar``/``wp.Float``/``wp.Int``, and
vectors, matrices and arrays of them (``wp.array(dtype=Any)``, ``vector(length=Any, dtype=Float)``).

A parameter annotated with one of these is a *template*. A ``@wp.func`` is specialised per call from
the argument types; a ``@wp.kernel`` at launch from the Python arguments (``infer``), as in Warp:
Python ``int``/``float``/``bool`` are int32/float32/bool, arrays give ``array(dtype, ndim)``.
"""
from __future__ import annotations

import ast
import builtins as py
import inspect
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import types as T
from .errors import KernelSyntaxError, KernelTypeError
from .frontend.source import get_source

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
    from .runtime.array import array

    if isinstance(value, array):
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
_ARRAY = []  # runtime.array.array, imported on first use (runtime imports this package's types)


def fast_key(values, positions):
    """A hashable key fixing the kernel types of ``values[positions]``, or None where a value's class
    alone does not (only plain arrays, Python numbers and tilewarp scalars/vectors/matrices qualify)."""
    if not _ARRAY:
        from .runtime.array import array

        _ARRAY.append(array)
    array = _ARRAY[0]
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


# ---- wp.overload: explicit specialisations of generic kernels ----------------------------------------


def overload_types(kernel, arg_types) -> tuple:
    """The concrete argument types ``wp.overload(kernel, arg_types)`` asks for, checked against the
    kernel's annotations (a dict names some parameters; the others keep their annotations)."""
    src = kernel.source()
    loc = src.loc(src.tree)
    templates = kernel.templates()
    if not kernel.is_generic:
        raise KernelTypeError(f"only generic kernels can be overloaded: {kernel.key} has no generic parameter", loc)
    if isinstance(arg_types, dict):
        unknown = [n for n in arg_types if n not in templates]
        if unknown:
            raise KernelTypeError(f"kernel {kernel.key} has no parameter '{unknown[0]}'", loc)
        given = [arg_types.get(n, t) for n, t in templates.items()]
    elif isinstance(arg_types, (list, tuple)):
        if len(arg_types) != len(templates):
            raise KernelTypeError(f"kernel {kernel.key} takes {len(templates)} argument types, got {len(arg_types)}",
                                  loc)
        given = list(arg_types)
    else:
        raise TypeError("wp.overload() takes the argument types as a list or a dict")
    types = []
    for (name, tmpl), a in zip(templates.items(), given):
        if template(a) is not None:
            raise KernelTypeError(f"argument '{name}' of kernel {kernel.key} cannot be generic, got {describe(a)}", loc)
        try:
            t = T.value_type(a)
        except TypeError as e:
            raise KernelTypeError(f"argument '{name}' of kernel {kernel.key}: {e}", loc) from None
        if not matches(tmpl, t):
            raise KernelTypeError(f"argument '{name}' of kernel {kernel.key} expects {describe(tmpl)}, "
                                  f"got {T.type_name(t)}", loc)
        types.append(t)
    return tuple(types)


def overload(kernel, arg_types=None):
    """``wp.overload(kernel, [types] or {name: type})`` -> the specialised kernel; as a decorator on a stub
    ``def kernel(a: wp.array(dtype=float), ...): ...`` it adds that specialisation and returns the kernel."""
    from .kernel import Kernel, _annotation_type

    if isinstance(kernel, Kernel):
        return kernel.add_overload([] if arg_types is None else arg_types)
    if not inspect.isfunction(kernel):
        raise TypeError(f"wp.overload() takes a generic kernel, got {type(kernel).__name__}")
    stub = kernel
    returns = inspect.signature(stub).return_annotation
    if returns not in (inspect.Signature.empty, None, type(None), "None"):
        raise TypeError(f"Return annotations are not allowed on @wp.overload stubs ({stub.__qualname__} returns "
                        f"{returns!r}): kernels return nothing")
    target = sys._getframe(1).f_locals.get(stub.__name__, stub.__globals__.get(stub.__name__))
    if not isinstance(target, Kernel):  # the stub's def rebound the name: the kernel of that function
        from .kernel import declared_kernels

        found = declared_kernels(stub)
        if len(found) > 1:
            raise RuntimeError(f"Ambiguous kernel lookup for the @wp.overload stub {stub.__qualname__}: "
                               f"{len(found)} kernels ({', '.join(sorted(k.key for k in found))}) were declared "
                               "from functions of that name; call wp.overload(kernel, arg_types) instead")
        target = found[0] if found else None
    if not isinstance(target, Kernel):
        raise TypeError(f"wp.overload: there is no kernel named '{stub.__name__}' to overload")
    src = get_source(stub)
    for stmt in src.tree.body:
        is_doc = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and (
            isinstance(stmt.value.value, str) or stmt.value.value is Ellipsis)
        if not (is_doc or isinstance(stmt, ast.Pass)):
            raise KernelSyntaxError("an overload stub's body is only '...', 'pass' or a docstring", src.loc(stmt))
    types = []
    for p in inspect.signature(stub).parameters.values():
        if p.annotation is inspect.Parameter.empty:
            raise KernelTypeError(f"overload stub parameter '{p.name}' needs a type annotation", src.loc(src.tree))
        types.append(_annotation_type(stub, p.name, p.annotation, lambda: src))
    target.add_overload(types)
    return target
