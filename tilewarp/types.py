"""Kernel value types: scalars, vectors, matrices and array annotations.

Types are Python classes (as in Warp), so ``wp.vec3(1, 2, 3)`` builds a host value and the class
itself is the type the compiler reasons about. Every type knows its C++ spelling, its ctypes
layout (shared by the CPU and CUDA argument packer) and its numpy dtype.
"""
from __future__ import annotations

import builtins
import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np


# ----------------------------------------------------------------------------------------------
# scalars


class Scalar:
    """Base of the scalar type classes. An instance is a host-side boxed value."""

    _type_: type  # ctypes type
    _np_: np.dtype
    _cpp_: str
    _kind_: str  # "bool" | "int" | "uint" | "float"
    _size_: int

    def __init__(self, x=0):
        self.value = self._np_.type(x).item() if self._kind_ != "float" or self._size_ != 2 else float(
            np.float16(x))

    def __repr__(self):
        return f"{type(self).__name__}({self.value!r})"

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __bool__(self):
        return bool(self.value)

    def __eq__(self, other):
        return self.value == (other.value if isinstance(other, Scalar) else other)

    def __hash__(self):
        return hash(self.value)


def _scalar(name: str, ctype, npdtype: str, cpp: str, kind: str) -> type:
    cls = type(name, (Scalar,), {})
    cls._type_, cls._np_, cls._cpp_, cls._kind_ = ctype, np.dtype(npdtype), cpp, kind
    cls._size_ = np.dtype(npdtype).itemsize
    return cls


bool_ = _scalar("bool", ctypes.c_bool, "bool", "bool", "bool")
int8 = _scalar("int8", ctypes.c_int8, "int8", "int8_t", "int")
int16 = _scalar("int16", ctypes.c_int16, "int16", "int16_t", "int")
int32 = _scalar("int32", ctypes.c_int32, "int32", "int32_t", "int")
int64 = _scalar("int64", ctypes.c_int64, "int64", "int64_t", "int")
uint8 = _scalar("uint8", ctypes.c_uint8, "uint8", "uint8_t", "uint")
uint16 = _scalar("uint16", ctypes.c_uint16, "uint16", "uint16_t", "uint")
uint32 = _scalar("uint32", ctypes.c_uint32, "uint32", "uint32_t", "uint")
uint64 = _scalar("uint64", ctypes.c_uint64, "uint64", "uint64_t", "uint")
float16 = _scalar("float16", ctypes.c_uint16, "float16", "tw::half", "float")
float32 = _scalar("float32", ctypes.c_float, "float32", "float", "float")
float64 = _scalar("float64", ctypes.c_double, "float64", "double", "float")

half = float16


class bfloat16:
    """Warp's bfloat16 (8-bit exponent, 7-bit mantissa). Named so that scripts mentioning it load;
    tilewarp has no bfloat16 arithmetic yet, so using it as a kernel or array type is an error."""

    @staticmethod
    def __tw_annotation__():
        raise TypeError("bfloat16 is not supported by tilewarp yet (use float16 or float32)")


scalar_types = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64)
int_types = tuple(t for t in scalar_types if t._kind_ in ("int", "uint"))
float_types = (float16, float32, float64)

#: Python annotations that stand for a kernel type (``x: float`` means float32, as in Warp).
python_scalar_aliases = {builtins.float: float32, builtins.int: int32, builtins.bool: bool_}


class Float:
    """Generic annotation: any floating-point scalar type (Warp's ``wp.Float``)."""


class Int:
    """Generic annotation: any integer scalar type (Warp's ``wp.Int``); ``Scalar`` means any number."""


def _is_generic_scalar(t) -> bool:
    return t is Any or t is Scalar or t is Float or t is Int


# ----------------------------------------------------------------------------------------------
# vectors and matrices (ctypes arrays, so a host value packs straight into a kernel argument)


class _Composite(ctypes.Array):
    _length_ = 0
    _type_ = ctypes.c_float

    def __init__(self, *args):
        n = self._length_
        if len(args) == 1 and n != 1 and not isinstance(args[0], (int, float, np.number, Scalar)):
            args = tuple(np.asarray(args[0], dtype=self._wp_scalar_type_._np_).reshape(-1))
        if len(args) == 1 and n != 1:
            args = args * n
        if len(args) not in (0, n):
            raise TypeError(f"{type(self).__name__} takes 0, 1 or {n} values, got {len(args)}")
        super().__init__()
        for i, a in enumerate(args):
            self[i] = a

    def __setitem__(self, i, value):
        if self._wp_scalar_type_ is float16:
            value = int(np.float16(value).view(np.uint16))
        elif self._wp_scalar_type_._kind_ == "float":
            value = float(value)
        else:
            value = int(value)
        super().__setitem__(i, value)

    def _values(self):
        raw = [super(_Composite, self).__getitem__(i) for i in range(self._length_)]
        if self._wp_scalar_type_ is float16:
            raw = [float(np.uint16(r).view(np.float16)) for r in raw]
        return raw

    def numpy(self):
        return np.array(self._values(), dtype=self._wp_scalar_type_._np_).reshape(self._wp_shape_)

    def __eq__(self, other):
        return np.array_equal(self.numpy(), np.asarray(other))

    __hash__ = None

    def __len__(self):
        return self._wp_shape_[0]


class VectorBase(_Composite):
    def __getitem__(self, i):
        return self._values()[i]

    def __repr__(self):
        return f"[{', '.join(repr(v) for v in self._values())}]"

    def __getattr__(self, name):
        idx = "xyzw".find(name)
        if len(name) == 1 and 0 <= idx < self._length_:
            return self[idx]
        raise AttributeError(name)

    def _binary(self, other, op):
        return type(self)(*op(self.numpy(), np.asarray(other, dtype=self._wp_scalar_type_._np_)))

    def __add__(self, o):
        return self._binary(o, np.add)

    def __sub__(self, o):
        return self._binary(o, np.subtract)

    def __mul__(self, o):
        return self._binary(o, np.multiply)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._binary(o, np.divide)

    def __neg__(self):
        return type(self)(*(-self.numpy()))


class MatrixBase(_Composite):
    def __getitem__(self, key):
        m = self.numpy()
        if isinstance(key, tuple):
            return m[key].item()
        return vector(self._wp_shape_[1], self._wp_scalar_type_)(*m[key])

    def __repr__(self):
        return repr(self.numpy().tolist())

    def _like(self, values):
        """A composite of this scalar type shaped as ``values`` (a vector, or a matrix of that shape)."""
        values = np.asarray(values)
        t = vector(values.shape[0], self._wp_scalar_type_) if values.ndim == 1 else \
            matrix(values.shape, self._wp_scalar_type_)
        return t(*values.reshape(-1))

    def _operand(self, o):
        return o.numpy() if isinstance(o, _Composite) else np.asarray(o, dtype=self._wp_scalar_type_._np_)

    def _elementwise(self, other, op):
        return self._like(op(self.numpy(), self._operand(other)))

    def __add__(self, o):
        return self._elementwise(o, np.add)

    def __sub__(self, o):
        return self._elementwise(o, np.subtract)

    def __truediv__(self, o):
        return self._elementwise(o, np.divide)

    def __neg__(self):
        return self._like(-self.numpy())

    def __matmul__(self, o):  # matrix times matrix or vector, as in kernels
        return self._like(self.numpy() @ self._operand(o))

    def __mul__(self, o):  # a matrix or vector operand multiplies as a product, a scalar per element
        if isinstance(o, _Composite):
            return self @ o
        return self._elementwise(o, np.multiply)

    def __rmul__(self, o):
        return self._elementwise(o, np.multiply)


def _hamilton(a, b):
    """Quaternion product of two (x, y, z, w) arrays."""
    av, bv = a[:3], b[:3]
    return np.concatenate([a[3] * bv + b[3] * av + np.cross(av, bv), [a[3] * b[3] - np.dot(av, bv)]])


class QuatBase(VectorBase):
    """Quaternion ``(x, y, z, w)``; ``q * r`` of two quaternions is their product."""

    def __init__(self, *args):
        if len(args) == 2 and not isinstance(args[0], (int, float, np.number, Scalar)):
            args = (*args[0], args[1])  # (imaginary part, real part)
        super().__init__(*args)

    def __mul__(self, o):
        if isinstance(o, QuatBase):
            return type(self)(*_hamilton(self.numpy(), o.numpy()))
        return super().__mul__(o)


class TransformBase(VectorBase):
    """Rigid transform: translation ``p`` then rotation ``q`` (7 scalars, Warp's layout).
    On the host ``transform()`` is the identity and ``transform(p)`` has no rotation, as in Warp."""

    def __init__(self, *args, p=None, q=None):
        if p is not None or q is not None or not args or (
                len(args) <= 2 and not isinstance(args[0], (int, float, np.number, Scalar)) and len(args[0]) == 3):
            p, q = (args + (p, q))[:2] if len(args) == 2 else (args[0], q) if args else (p, q)
            args = (*(p if p is not None else (0, 0, 0)), *(q if q is not None else (0, 0, 0, 1)))
        super().__init__(*args)

    def __getattr__(self, name):
        raise AttributeError(name)

    @property
    def p(self):
        return vector(3, self._wp_scalar_type_)(*self._values()[:3])

    @p.setter
    def p(self, value):
        for i, v in enumerate(np.asarray(value).reshape(3)):
            self[i] = v

    @property
    def q(self):
        return quaternion(self._wp_scalar_type_)(*self._values()[3:])

    @q.setter
    def q(self, value):
        for i, v in enumerate(np.asarray(value).reshape(4)):
            self[3 + i] = v

    def __mul__(self, o):
        if isinstance(o, TransformBase):  # composition: self after o
            qa, x = self.q.numpy(), o.p.numpy()
            v, w = qa[:3], qa[3]  # Warp's rotation formula (also defined for non-unit q)
            p = x * (2 * w * w - 1) + np.cross(v, x) * 2 * w + v * np.dot(v, x) * 2 + self.p.numpy()
            return type(self)(p, _hamilton(qa, o.q.numpy()))
        return super().__mul__(o)


_composite_cache: dict = {}


def vector(length: int, dtype=float32) -> type:
    """The vector type of ``length`` components of scalar ``dtype`` (cached: same args, same class)."""
    if length is Any or _is_generic_scalar(dtype):  # an annotation of generic kernels/funcs
        from .generics import composite

        return composite((length,), dtype, False)
    dtype = scalar_type(dtype)
    key = ("vec", length, dtype)
    if key not in _composite_cache:
        name = f"vec{length}{_suffix(dtype)}"
        _composite_cache[key] = type(name, (VectorBase,), {
            "_length_": length, "_type_": dtype._type_, "_wp_scalar_type_": dtype,
            "_wp_shape_": (length,), "_cpp_": f"tw::vec_t<{length}, {dtype._cpp_}>"})
    return _composite_cache[key]


def matrix(shape, dtype=float32) -> type:
    """The matrix type of ``shape == (rows, cols)`` and scalar ``dtype``."""
    rows, cols = shape
    if rows is Any or cols is Any or _is_generic_scalar(dtype):
        from .generics import composite

        return composite((rows, cols), dtype, True)
    dtype = scalar_type(dtype)
    key = ("mat", rows, cols, dtype)
    if key not in _composite_cache:
        name = f"mat{rows}{cols}{_suffix(dtype)}"
        _composite_cache[key] = type(name, (MatrixBase,), {
            "_length_": rows * cols, "_type_": dtype._type_, "_wp_scalar_type_": dtype,
            "_wp_shape_": (rows, cols), "_cpp_": f"tw::mat_t<{rows}, {cols}, {dtype._cpp_}>"})
    return _composite_cache[key]


def _float_composite(kind: str, base: type, length: int, dtype, cpp: str) -> type:
    dtype = scalar_type(dtype)
    if not is_float(dtype):
        raise TypeError(f"{kind} needs a float dtype, got {type_name(dtype)}")
    key = (kind, dtype)
    if key not in _composite_cache:
        _composite_cache[key] = type(f"{kind}{_suffix(dtype)}", (base,), {
            "_length_": length, "_type_": dtype._type_, "_wp_scalar_type_": dtype, "_wp_shape_": (length,),
            "_cpp_": f"tw::{cpp}<{dtype._cpp_}>"})
    return _composite_cache[key]


def quaternion(dtype=float32) -> type:
    """The quaternion type ``(x, y, z, w)`` of float ``dtype``."""
    return _float_composite("quat", QuatBase, 4, dtype, "quat_t")


def transformation(dtype=float32) -> type:
    """The rigid transform type (``p``: vec3, then ``q``: quat) of float ``dtype``."""
    return _float_composite("transform", TransformBase, 7, dtype, "transform_t")


def _suffix(dtype) -> str:
    return {float32: "", float64: "d", float16: "h", int32: "i", int64: "l", uint32: "ui",
            int8: "b", uint8: "ub", int16: "s", uint16: "us", uint64: "ul", bool_: "bool"}[dtype]




# ----------------------------------------------------------------------------------------------
# arrays (the annotation side; runtime/array.py holds the data side)


@dataclass(frozen=True)
class ArrayType:
    """``array(dtype=T, ndim=D)`` as a kernel parameter or value type."""

    dtype: type
    ndim: int = 1

    def __post_init__(self):
        if not (isinstance(self.ndim, int) and 1 <= self.ndim <= 4):  # the descriptors have 1 to 4 extents
            raise TypeError(f"arrays have 1 to 4 dimensions, got ndim={self.ndim!r}")

    @property
    def _cpp_(self) -> str:
        return f"tw::array_t<{self.dtype._cpp_}, {self.ndim}>"

    def __repr__(self):
        return f"array(dtype={type_name(self.dtype)}, ndim={self.ndim})"


@dataclass(frozen=True, repr=False)
class IndexedArrayType(ArrayType):
    """``indexedarray(dtype=T, ndim=D)``: an array (``is_array``) read through per-dimension index arrays."""

    @property
    def _cpp_(self) -> str:
        return f"tw::indexedarray_t<{self.dtype._cpp_}, {self.ndim}>"

    def __repr__(self):
        return f"indexedarray(dtype={type_name(self.dtype)}, ndim={self.ndim})"


@dataclass(frozen=True)
class TupleType:
    """Several values at once: ``wp.tid()`` in a multi-dimensional launch, multiple returns."""

    types: tuple

    @property
    def _cpp_(self) -> str:
        return f"tw::tuple_t<{', '.join(t._cpp_ for t in self.types)}>"

    def __repr__(self):
        return f"tuple({', '.join(type_name(t) for t in self.types)})"


@dataclass(frozen=True)
class TileType:
    """A tile: a block-wide array of ``dtype`` elements of a compile-time ``shape`` (1 to 4 extents).

    Where it lives (registers spread over the block's lanes, or shared memory) is not part of the
    type: ``block/storage.py`` decides that per value after lowering."""

    dtype: type
    shape: tuple

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self):
        return f"tile(dtype={type_name(self.dtype)}, shape={self.shape})"


# ----------------------------------------------------------------------------------------------
# queries used by every stage


def is_scalar(t) -> bool:
    return isinstance(t, type) and issubclass(t, Scalar)


def is_float(t) -> bool:
    return is_scalar(t) and t._kind_ == "float"


def is_int(t) -> bool:
    return is_scalar(t) and t._kind_ in ("int", "uint")


def is_vector(t) -> bool:
    """A plain vector (as in Warp, quaternions and transforms are not vectors)."""
    return isinstance(t, type) and issubclass(t, VectorBase) and not issubclass(t, (QuatBase, TransformBase))


def is_quaternion(t) -> bool:
    return isinstance(t, type) and issubclass(t, QuatBase)


def is_transformation(t) -> bool:
    return isinstance(t, type) and issubclass(t, TransformBase)


def is_matrix(t) -> bool:
    return isinstance(t, type) and issubclass(t, MatrixBase)


def is_composite(t) -> bool:
    """A vector, quaternion, transform or matrix type."""
    return isinstance(t, type) and issubclass(t, (VectorBase, MatrixBase))


def is_array(t) -> bool:
    return isinstance(t, ArrayType)


@dataclass(frozen=True, repr=False)
class TileStackType(TileType):
    """``wp.tile_stack(capacity, dtype)``: a block-shared LIFO of up to ``shape[0]`` elements, which
    lanes push to and pop from (its count lives beside the elements, in shared memory)."""

    def __repr__(self):
        return f"tile_stack(capacity={self.shape[0]}, dtype={type_name(self.dtype)})"


def is_tile(t) -> bool:
    return isinstance(t, TileType)


def is_struct(t) -> bool:
    """A ``@wp.struct`` class (structs.py; recognised by its field table to avoid an import cycle)."""
    return isinstance(t, type) and bool(getattr(t, "_tw_fields_", None))


def scalar_of(t):
    """The scalar type of a scalar, vector or matrix type."""
    return t._wp_scalar_type_ if is_composite(t) else t


def scalar_type(t):
    """Normalise a Python/numpy/tilewarp scalar spelling to a tilewarp scalar type."""
    if is_scalar(t):
        return t
    if t in python_scalar_aliases:
        return python_scalar_aliases[t]
    try:
        dt = np.dtype(t)
    except TypeError:
        raise TypeError(f"not a scalar type: {t!r}") from None
    for s in scalar_types:
        if s._np_ == dt:
            return s
    raise TypeError(f"unsupported scalar type: {t!r}")


def value_type(t):
    """Normalise an annotation (``float``, ``wp.vec3``, ``wp.array(...)``) to a kernel type."""
    if t in python_scalar_aliases:
        return python_scalar_aliases[t]
    if is_scalar(t) or is_composite(t) or is_struct(t) or isinstance(t, (ArrayType, TupleType, TileType)):
        return t
    as_annotation = getattr(t, "__tw_annotation__", None)
    if as_annotation is not None:
        return as_annotation()
    raise TypeError(f"unsupported kernel type annotation: {t!r}")


def type_size(t) -> int:
    return ctypes.sizeof(ctype_of(t))


def ctype_of(t):
    """The ctypes layout of a kernel value of type ``t`` (same as its C++ layout)."""
    if is_scalar(t):
        return t._type_
    if is_composite(t):
        return t
    if isinstance(t, IndexedArrayType):
        return indexed_descriptor(t.ndim)
    if is_array(t):
        return array_descriptor(t.ndim)
    if is_struct(t):
        return t._tw_ctype_
    raise TypeError(f"no ctypes layout for {t!r}")


def dtype_to_numpy(t):
    """Warp's ``wp.dtype_to_numpy``: the NumPy scalar type of a tilewarp scalar type (vectors and
    matrices: of their scalar)."""
    return scalar_of(value_type(t))._np_.type


def dtype_from_numpy(np_dtype):
    """Warp's ``wp.dtype_from_numpy``: the tilewarp scalar type of a NumPy dtype or scalar type."""
    return scalar_type(np.dtype(np_dtype))


def numpy_dtype(t) -> np.dtype:
    """The numpy dtype of one element of type ``t`` (vectors and matrices as subarrays)."""
    if is_scalar(t) or is_struct(t):  # a struct's _np_ is a structured dtype
        return t._np_
    return np.dtype((t._wp_scalar_type_._np_, t._wp_shape_))


def type_name(t) -> str:
    return t.__name__ if isinstance(t, type) else repr(t)


_descriptors: dict = {}


def array_descriptor(ndim: int):
    """ctypes twin of ``tw::array_t<T, ndim>``: data, grad, shape (int32), strides (int64 bytes)."""
    if ndim not in _descriptors:
        _descriptors[ndim] = type(f"array_desc{ndim}", (ctypes.Structure,), {"_fields_": [
            ("data", ctypes.c_uint64), ("grad", ctypes.c_uint64),
            ("shape", ctypes.c_int32 * ndim), ("strides", ctypes.c_int64 * ndim)]})
    return _descriptors[ndim]


def indexed_descriptor(ndim: int):
    """ctypes twin of ``tw::indexedarray_t<T, ndim>``: the data array, index pointers, shape (int32)."""
    key = ("indexed", ndim)
    if key not in _descriptors:
        _descriptors[key] = type(f"indexedarray_desc{ndim}", (ctypes.Structure,), {"_fields_": [
            ("arr", array_descriptor(ndim)), ("indices", ctypes.c_uint64 * ndim), ("shape", ctypes.c_int32 * ndim)]})
    return _descriptors[key]


class LaunchBounds(ctypes.Structure):
    """ctypes twin of ``tw::launch_bounds_t``."""

    _fields_ = [("shape", ctypes.c_int32 * 4), ("ndim", ctypes.c_int32), ("size", ctypes.c_int64)]


def constant(x):
    """Mark a module-level value as a compile-time constant (Warp's ``wp.constant``)."""
    if not isinstance(x, (builtins.bool, builtins.int, builtins.float, Scalar, _Composite)):
        raise TypeError(f"wp.constant() takes a number, bool, vector or matrix, got {type(x).__name__}")
    return x


# Warp's aliases
vec2, vec3, vec4 = (vector(n, float32) for n in (2, 3, 4))
vec2d, vec3d, vec4d = (vector(n, float64) for n in (2, 3, 4))
vec2h, vec3h, vec4h = (vector(n, float16) for n in (2, 3, 4))
vec2i, vec3i, vec4i = (vector(n, int32) for n in (2, 3, 4))
mat22, mat33, mat44 = (matrix((n, n), float32) for n in (2, 3, 4))
mat22d, mat33d, mat44d = (matrix((n, n), float64) for n in (2, 3, 4))

_INT_SUFFIXES = {"ui": uint32, "b": int8, "ub": uint8, "s": int16, "us": uint16, "l": int64, "ul": uint64}
_FLOAT_SUFFIXES = {"": float32, "f": float32, "h": float16, "d": float64}
#: every composite alias Warp defines (vec3ub, mat44h, quatd, transformf, spatial_vectord, ...)
COMPOSITE_ALIASES = {
    **{f"vec{n}{s}": vector(n, t) for n in (2, 3, 4) for s, t in {**_FLOAT_SUFFIXES, "i": int32,
                                                                  **_INT_SUFFIXES}.items()},
    **{f"mat{n}{n}{s}": matrix((n, n), t) for n in (2, 3, 4) for s, t in _FLOAT_SUFFIXES.items()},
    **{f"quat{s}": quaternion(t) for s, t in _FLOAT_SUFFIXES.items()},
    **{f"transform{s}": transformation(t) for s, t in _FLOAT_SUFFIXES.items()},
    **{f"spatial_vector{s}": vector(6, t) for s, t in _FLOAT_SUFFIXES.items()},
    **{f"spatial_matrix{s}": matrix((6, 6), t) for s, t in _FLOAT_SUFFIXES.items()},
}
globals().update(COMPOSITE_ALIASES)


def type_repr(t) -> str:
    """Warp's ``wp.types.type_repr``: the name of a kernel type, or of a value's type (arrays with
    their dtype and ndim)."""
    if getattr(t, "shape", None) is not None and hasattr(t, "ndim") and hasattr(t, "dtype"):  # an array
        return f"{type(t).__name__}(ndim={t.ndim}, dtype={type_name(t.dtype)})"
    if not isinstance(t, type) and not isinstance(t, (ArrayType, TupleType)):
        t = type(t)
    return type_name(t)
