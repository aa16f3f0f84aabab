"""Python-scope arithmetic on scalar and vector/matrix values (``wp.float16(2) * wp.float16(3)``,
``v % w``, ``wp.int8(24) / v``).

Results follow the kernel semantics, not Python's, so a value computed on the host matches the same
expression in a kernel: integers wrap at their width, integer ``/`` and ``%`` truncate toward zero
(C), float ``%`` is ``fmod``, and every result is rounded to the operands' type. Where a kernel would
silently produce a defined-but-arbitrary value (an integer divided by zero), Python scope raises.

Operands must share one scalar type, as in kernels; a plain Python number adapts to the other
operand's type (an ``int`` anywhere, a ``float`` only with float types), the way NumPy treats Python
literals. As in Warp, results of the default types (float32, int32, bool) come back as Python numbers
and other types as typed scalars.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

#: operator name -> symbol, for messages
SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "floordiv": "//", "pow": "**"}


def compute(op: str, a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    """``a <op> b`` elementwise on arrays of one dtype, with the kernel semantics of ``kind``
    ("int", "uint" or "float")."""
    is_int = kind in ("int", "uint")
    with np.errstate(all="ignore"):  # wrapping and inf/nan are the intended results, not warnings
        if op == "add":
            return np.add(a, b)
        if op == "sub":
            return np.subtract(a, b)
        if op == "mul":
            return np.multiply(a, b)
        if op == "pow":
            if is_int:
                raise TypeError(f"'**' is defined for float types only (kernels have no integer pow), got "
                                f"{a.dtype.name}")
            return np.power(a, b)
        if not is_int:
            if op == "div":
                return np.true_divide(a, b)
            if op == "mod":
                return np.fmod(a, b)
            if op == "floordiv":
                return np.floor(np.true_divide(a, b)).astype(a.dtype)
            raise ValueError(op)
        if np.any(b == 0):
            raise ZeroDivisionError(f"integer {SYMBOLS[op]} by zero ({a.dtype.name})")
        minus_one = b == -1 if kind == "int" else np.zeros(np.shape(b), bool)
        safe_b = np.where(minus_one, 1, b).astype(a.dtype)  # MIN / -1 overflows: its wrapped value is -MIN
        if op == "mod":
            return np.where(minus_one, 0, np.fmod(a, safe_b)).astype(a.dtype)  # fmod: sign of the dividend, as C
        if op == "div":
            q = (a - np.fmod(a, safe_b)) // safe_b  # exact, so the floor division truncates
        elif op == "floordiv":  # `//` floors on integers (as kernels do), unlike `/` and `%`
            q = np.floor_divide(a, safe_b)
        else:
            raise ValueError(op)
        return np.where(minus_one, np.negative(a), q).astype(a.dtype)


def unary(op: str, a: np.ndarray, kind: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op == "neg":
            return np.negative(a)
        if op == "abs":  # abs of the most negative integer wraps to itself, as in C
            return np.abs(a)
        if op == "invert":
            if kind not in ("int", "uint"):
                raise TypeError(f"'~' is defined for integer types only, got {a.dtype.name}")
            return np.invert(a)
        raise ValueError(op)


def weak_value(t, x, op: str):
    """A Python number ``x`` as an operand of scalar type ``t`` (NumPy's rule for Python literals),
    or None when ``x`` is not a Python number."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float)):
        return None
    if isinstance(x, float) and t._kind_ != "float":
        raise TypeError(f"unsupported operand types for {SYMBOLS.get(op, op)}: {t.__name__} and a Python float "
                        f"(convert explicitly, e.g. {t.__name__}(x) or float(value))")
    if isinstance(x, int) and t._kind_ != "float":
        info = np.iinfo(t._np_)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} is out of range for {t.__name__} ({info.min} to {info.max})")
    return x


def box(t, value):
    """A result of scalar type ``t`` as Warp returns it: Python numbers for float32, int32 and bool,
    typed scalars for the others."""
    v = np.asarray(value).reshape(()).item()
    return v if t.__name__ in ("float32", "int32", "bool") else t(v)


class ScalarArithmetic:
    """Operators of the scalar classes (mixed into ``types.Scalar``)."""

    __slots__ = ()

    def _operand(self, other, op):
        t = type(self)
        if type(other) is t:
            return other.value
        from .types import Scalar

        if isinstance(other, Scalar):
            raise TypeError(f"unsupported operand types for {SYMBOLS[op]}: {t.__name__} and {type(other).__name__} "
                            f"(kernel types do not mix: convert one, e.g. {t.__name__}(x))")
        if isinstance(other, np.generic) and not isinstance(other, np.bool_):
            if other.dtype != t._np_ or t._np_ != t._value_np_:  # bfloat16 has no numpy scalar
                raise TypeError(f"unsupported operand types for {SYMBOLS[op]}: {t.__name__} and numpy "
                                f"{other.dtype.name}")
            return other.item()
        return weak_value(t, other, op)

    def _binary(self, other, op, reflected=False):
        t = type(self)
        if t._kind_ == "bool":
            return NotImplemented
        b = self._operand(other, op)
        if b is None:
            return NotImplemented
        x, y = np.asarray(self.value, t._value_np_), np.asarray(b, t._value_np_)
        return box(t, compute(op, y, x, t._kind_) if reflected else compute(op, x, y, t._kind_))

    def _unary(self, op):
        t = type(self)
        if t._kind_ == "bool":
            raise TypeError(f"bad operand type for unary {op}: 'bool'")
        return box(t, unary(op, np.asarray(self.value, t._value_np_), t._kind_))

    def __add__(self, o):
        return self._binary(o, "add")

    def __radd__(self, o):
        return self._binary(o, "add", True)

    def __sub__(self, o):
        return self._binary(o, "sub")

    def __rsub__(self, o):
        return self._binary(o, "sub", True)

    def __mul__(self, o):
        return self._binary(o, "mul")

    def __rmul__(self, o):
        return self._binary(o, "mul", True)

    def __truediv__(self, o):
        return self._binary(o, "div")

    def __rtruediv__(self, o):
        return self._binary(o, "div", True)

    def __floordiv__(self, o):
        return self._binary(o, "floordiv")

    def __rfloordiv__(self, o):
        return self._binary(o, "floordiv", True)

    def __mod__(self, o):
        return self._binary(o, "mod")

    def __rmod__(self, o):
        return self._binary(o, "mod", True)

    def __pow__(self, o, modulo=None):
        if modulo is not None:
            return NotImplemented
        return self._binary(o, "pow")

    def __rpow__(self, o):
        return self._binary(o, "pow", True)

    def __neg__(self):
        return self._unary("neg")

    def __pos__(self):
        if type(self)._kind_ == "bool":
            raise TypeError("bad operand type for unary +: 'bool'")
        return box(type(self), self.value)

    def __abs__(self):
        return self._unary("abs")

    def __invert__(self):
        return self._unary("invert")

    # comparisons are by value, across types (wp.int8(1) < wp.int16(2)), as in Warp and Python

    def _compared(self, other):
        from .types import Scalar

        if isinstance(other, Scalar):
            return other.value
        if isinstance(other, (numbers.Real, np.generic)):
            return other
        return NotImplemented

    def __eq__(self, other):
        o = self._compared(other)
        return o if o is NotImplemented else self.value == o

    def __ne__(self, other):
        o = self._compared(other)
        return o if o is NotImplemented else self.value != o

    def __lt__(self, other):
        o = self._compared(other)
        return o if o is NotImplemented else self.value < o

    def __le__(self, other):
        o = self._compared(other)
        return o if o is NotImplemented else self.value <= o

    def __gt__(self, other):
        o = self._compared(other)
        return o if o is NotImplemented else self.value > o

    def __ge__(self, other):
        o = self._compared(other)
        return o if o is NotImplemented else self.value >= o

    def __hash__(self):
        return hash(self.value)

    def __round__(self, ndigits=None):
        return round(self.value, ndigits)

    def __trunc__(self):
        return math.trunc(self.value)

    def __floor__(self):
        return math.floor(self.value)

    def __ceil__(self):
        return math.ceil(self.value)


class IntegerIndex:
    """Integer scalars index Python sequences and size arrays (``items[wp.int8(2)]``)."""

    __slots__ = ()

    def __index__(self):
        return int(self.value)


class CompositeArithmetic:
    """Elementwise operators of the vector, quaternion, transform and matrix classes (mixed into
    ``types._Composite``); products that are not elementwise live on the classes themselves."""

    __slots__ = ()

    def _operand(self, other, op):
        """``other`` as an ndarray of this value's dtype (a composite, a scalar or a sequence), or None."""
        from .types import Scalar

        t = self._wp_scalar_type_
        if isinstance(other, CompositeArithmetic):
            if other._wp_scalar_type_ is not t:
                raise TypeError(f"unsupported operand types for {SYMBOLS[op]}: {type(self).__name__} and "
                                f"{type(other).__name__} (kernel types do not mix: convert one first)")
            return other.numpy()
        if isinstance(other, Scalar):
            if type(other) is not t:
                raise TypeError(f"unsupported operand types for {SYMBOLS[op]}: {type(self).__name__} and "
                                f"{type(other).__name__} (kernel types do not mix: convert one first)")
            return np.asarray(other.value, t._value_np_)
        if isinstance(other, np.generic) and not isinstance(other, np.bool_):
            if other.dtype != t._np_ or t._np_ != t._value_np_:
                raise TypeError(f"unsupported operand types for {SYMBOLS[op]}: {type(self).__name__} and numpy "
                                f"{other.dtype.name}")
            return np.asarray(other)
        weak = weak_value(t, other, op)
        if weak is not None:
            return np.asarray(weak, t._value_np_)
        if isinstance(other, (list, tuple, np.ndarray)):
            values = np.asarray(other)
            if values.dtype.kind == "f" and t._kind_ != "float":
                raise TypeError(f"unsupported operand types for {SYMBOLS[op]}: {type(self).__name__} and float values")
            if values.dtype.kind not in "biuf":
                return None
            return values.astype(t._value_np_)
        return None

    def _arith(self, other, op, reflected=False):
        b = self._operand(other, op)
        if b is None:
            return NotImplemented
        a = self.numpy()
        if b.ndim and b.shape != a.shape:
            raise ValueError(f"{SYMBOLS[op]}: shapes {a.shape} ({type(self).__name__}) and {b.shape} differ")
        kind = self._wp_scalar_type_._kind_
        if kind == "bool":
            return NotImplemented
        b = np.broadcast_to(b, a.shape)
        return self._result(compute(op, b, a, kind) if reflected else compute(op, a, b, kind))

    def _result(self, values):
        """A composite of this class (or of this scalar type, shaped as ``values``) holding ``values``."""
        if values.shape == self._wp_shape_:
            return type(self)(*values.reshape(-1))
        from .types import matrix, vector

        t = self._wp_scalar_type_
        return (vector(values.shape[0], t) if values.ndim == 1 else matrix(values.shape, t))(*values.reshape(-1))

    def __add__(self, o):
        return self._arith(o, "add")

    def __radd__(self, o):
        return self._arith(o, "add", True)

    def __sub__(self, o):
        return self._arith(o, "sub")

    def __rsub__(self, o):
        return self._arith(o, "sub", True)

    def __mul__(self, o):
        return self._arith(o, "mul")

    def __rmul__(self, o):
        return self._arith(o, "mul", True)

    def __truediv__(self, o):
        return self._arith(o, "div")

    def __rtruediv__(self, o):
        return self._arith(o, "div", True)

    def __floordiv__(self, o):
        return self._arith(o, "floordiv")

    def __rfloordiv__(self, o):
        return self._arith(o, "floordiv", True)

    def __mod__(self, o):
        return self._arith(o, "mod")

    def __rmod__(self, o):
        return self._arith(o, "mod", True)

    def __neg__(self):
        return self._result(unary("neg", self.numpy(), self._wp_scalar_type_._kind_))

    def __pos__(self):
        return self._result(self.numpy())

    def __abs__(self):
        return self._result(unary("abs", self.numpy(), self._wp_scalar_type_._kind_))
