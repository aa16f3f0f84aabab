"""Builtins called from plain Python (``wp.length(v)``, ``wp.transpose(m)``), as Warp allows.

A builtin without a Python implementation of its own runs as a one-thread kernel on the CPU: the
same C++ as in kernels, so the two can never disagree. The kernel is made once per argument types
(its source registered with ``linecache`` so the frontend can read it) and compiled through the
kernel cache, so only the first call with new types ever waits for the compiler.
"""
from __future__ import annotations

import itertools
import linecache
import threading

import numpy as np

from ..builtins import registry
from ..builtins.registry import BuiltinTypeError
from ..language import types as T
from ..runtime.array import array, zeros
from ..runtime.launch import launch
from .kernel import kernel as make_kernel

_kernels: dict = {}  # (builtin name, argument types) -> (kernel, result types)
_lock = threading.Lock()
_serial = itertools.count()


def value_type(value):
    """The kernel type of a Python-scope value, as Warp reads it (a float is a float32)."""
    if isinstance(value, (bool, np.bool_)):
        return T.bool_
    if isinstance(value, int):
        return T.int32
    if isinstance(value, float):
        return T.float32
    if isinstance(value, np.generic):
        return T.scalar_type(value.dtype)
    if isinstance(value, T.Scalar) or T.is_composite(type(value)):
        return type(value)
    raise TypeError(f"{type(value).__name__} is not a value builtins take outside kernels")


def call(builtin, args, kwargs):
    """``builtin(*args)`` evaluated on the CPU."""
    name = builtin.name
    memory = builtin.kernel_context or (builtin.side_effect and not name.startswith("expect_"))
    if kwargs or memory or name.startswith(("tile", "untile")):
        raise RuntimeError(f"wp.{name}() can only be called inside a kernel or wp.func")
    types = tuple(value_type(a) for a in args)
    kernel, results = _kernel(builtin, types)
    outs = [zeros(1, dtype=r, device="cpu") for r in results]
    launch(kernel, dim=1, inputs=[*(a.value if isinstance(a, T.Scalar) else a for a in args), *outs], device="cpu")
    values = tuple(_python_value(o, r) for o, r in zip(outs, results))
    return None if not values else values[0] if len(values) == 1 else values


def _kernel(builtin, types):
    key = (builtin.name, types)
    with _lock:
        if key not in _kernels:
            try:
                result = builtin.type_rule(types, ())
            except BuiltinTypeError as e:
                raise TypeError(f"wp.{builtin.name}(): {e}") from None
            results = result.types if isinstance(result, T.TupleType) else () if result is None else (result,)
            _kernels[key] = (_make_kernel(builtin, types, results), results)
        return _kernels[key]


def _make_kernel(builtin, types, results):
    name = builtin.name
    params = [f"a{k}: A{k}" for k in range(len(types))] + [f"out{k}: array(dtype=R{k})" for k in range(len(results))]
    call_text = f"F({', '.join(f'a{k}' for k in range(len(types)))})"
    if not results:
        body = f"    {call_text}\n"
    elif len(results) == 1:
        body = f"    out0[0] = {call_text}\n"
    else:
        outs = ", ".join(f"r{k}" for k in range(len(results)))
        body = f"    {outs} = {call_text}\n" + "".join(f"    out{k}[0] = r{k}\n" for k in range(len(results)))
    source = f"def host_{name}({', '.join(params)}):\n{body}"
    filename = f"<tilewarp host call {name} #{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = {"F": builtin, "array": array, **{f"A{k}": t for k, t in enumerate(types)},
             **{f"R{k}": t for k, t in enumerate(results)}}
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - text made from a builtin name and types
    return make_kernel(scope[f"host_{name}"], module="unique")


def _python_value(out, t):
    """As Warp returns them: Python numbers for float32, int32 and bool, typed scalars otherwise."""
    v = out.numpy()[0]
    if T.is_composite(t):
        return t(*np.asarray(v).reshape(-1).tolist())
    return v.item() if t in (T.float32, T.int32, T.bool_) else t(v.item())


registry.host_call = call  # builtins called from Python run here
