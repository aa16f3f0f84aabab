"""Arithmetic operators on whole arrays (``a + b``, ``a * wp.float32(2)``, ``-a``, ``a += b``), as
Warp's: elementwise, computed by a kernel on the arrays' device into a new array (into the left
operand for the in-place forms), so values and rules are exactly those of the same expression in a
kernel. Inside a Tape the launch is recorded like any other, so the result is differentiable.

One generic kernel per operator and operand form (array-array, array-value, value-array, unary)
serves every dtype and dimensionality: arrays are viewed as 4-d (leading extents of 1), and the
kernel is specialised per dtype on first use.
"""
from __future__ import annotations

import linecache
import threading
from typing import Any

import numpy as np

from ..builtins import REGISTRY
from ..builtins.registry import BuiltinTypeError
from ..language import types as T
from ..language.host_arith import weak_value
from ..runtime.array import array, array4d, empty
from ..runtime.launch import launch
from .kernel import kernel as make_kernel

# operator name -> Python spelling in kernel code
_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "pow": "**"}
_UNARY = {"neg": "-", "pos": "+"}
_kernels: dict = {}
_lock = threading.Lock()


def _kernel(op: str, form: str):
    """The kernel computing ``op`` for operand ``form`` ("aa", "as", "sa" or "a")."""
    key = (op, form)
    with _lock:
        if key not in _kernels:
            _kernels[key] = _make(op, form)
        return _kernels[key]


def _make(op, form):
    idx = "[i, j, k, l]"
    if form == "a":
        params, expr = "a: array4d(dtype=Any)", f"{_UNARY[op]}a{idx}"
    else:
        left = f"a{idx}" if form[0] == "a" else "a"
        right = f"b{idx}" if form[1] == "a" else "b"
        kind = {"a": "array4d(dtype=Any)", "s": "Any"}
        params = f"a: {kind[form[0]]}, b: {kind[form[1]]}"
        expr = f"{left} {_BINARY[op]} {right}"
    name = f"tw_array_{op}_{form}"
    source = (f"def {name}({params}, out: array4d(dtype=Any)):\n"
              f"    i, j, k, l = tid()\n"
              f"    out{idx} = {expr}\n")
    filename = f"<tilewarp array operator {op} {form}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = {"array4d": array4d, "tid": REGISTRY["tid"], "Any": Any}
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - text made from fixed operator tables
    return make_kernel(scope[name], module="unique")


def _as4d(a):
    pad = 4 - a.ndim
    return a._view((1,) * pad + tuple(a.shape), (0,) * pad + tuple(a.strides),
                   grad=lambda g: g._view((1,) * pad + tuple(g.shape), (0,) * pad + tuple(g.strides)))


def _value(x, like):
    """A non-array operand as a typed kernel value matching array dtype ``like`` (a Python number
    takes the array's scalar type, as a literal does), or None when it is no such value."""
    if isinstance(x, T.Scalar) or T.is_composite(type(x)):
        return x
    if isinstance(x, np.generic) and not isinstance(x, np.bool_):
        return T.scalar_type(x.dtype)(x.item())  # a NumPy scalar keeps its own type
    scalar = T.scalar_of(like) if (T.is_scalar(like) or T.is_composite(like)) else None
    if scalar is None:
        return None
    if isinstance(x, (bool,)) or not isinstance(x, (int, float)):
        return None
    weak = weak_value(scalar, x, "add")
    return None if weak is None else scalar(weak)


def _type_of(x):
    return x.dtype if hasattr(x, "dtype") and hasattr(x, "shape") else type(x)


def apply(op: str, a, b=None, reflected=False, out=None):
    """``a <op> b`` (``b <op> a`` when ``reflected``), or ``<op> a`` for unary operators; ``a`` is an array."""
    if op in _UNARY:
        operands, form = [a], "a"
    else:
        if isinstance(b, array):
            if b.shape != a.shape:
                raise ValueError(f"array {_BINARY[op]}: shapes {a.shape} and {b.shape} differ (arrays do not "
                                 f"broadcast)")
            if b.device != a.device:
                raise ValueError(f"array {_BINARY[op]}: arrays on '{a.device}' and '{b.device}'")
            other = b
        else:
            other = _value(b, a.dtype)
            if other is None:
                return NotImplemented
        operands = [other, a] if reflected else [a, other]
        form = "".join("a" if isinstance(v, array) else "s" for v in operands)
    try:
        result_type = REGISTRY[op].type_rule(tuple(T.value_type(_type_of(v)) for v in operands), ())
    except BuiltinTypeError as e:
        symbol = _UNARY.get(op) or _BINARY[op]
        raise TypeError(f"array operator {symbol}: {e}") from None
    if out is None:
        grad = any(isinstance(v, array) and v.requires_grad for v in operands)
        out = empty(a.shape, dtype=result_type, device=a.device, requires_grad=grad)
    elif out.dtype is not result_type:
        raise TypeError(f"in-place {_BINARY[op]}=: the result is {T.type_name(result_type)}, the array holds "
                        f"{T.type_name(out.dtype)}")
    if a.size:
        args = [_as4d(v) if isinstance(v, array) else v for v in operands]
        launch(_kernel(op, form), dim=_as4d(a).shape, inputs=[*args, _as4d(out)], device=a.device)
    return out


def install(cls):
    """Give the array class ``cls`` its arithmetic operators."""
    def binary(op, reflected=False, inplace=False):
        if inplace:
            def method(self, other):
                result = apply(op, self, other, out=self)
                return NotImplemented if result is NotImplemented else self
        else:
            def method(self, other):
                return apply(op, self, other, reflected=reflected)
        return method

    for op, name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "truediv"),
                     ("floordiv", "floordiv"), ("mod", "mod"), ("pow", "pow")):
        setattr(cls, f"__{name}__", binary(op))
        setattr(cls, f"__r{name}__", binary(op, reflected=True))
        setattr(cls, f"__i{name}__", binary(op, inplace=True))
    cls.__neg__ = lambda self: apply("neg", self)
    cls.__pos__ = lambda self: apply("pos", self)


install(array)  # the runtime's arrays get their operators here, where kernels can be made
