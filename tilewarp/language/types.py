"""Kernel value types: scalars, vectors, matrices and array annotations.

Types are Python classes (as in Warp), so ``wp.vec3(1, 2, 3)`` builds a host value and the class
itself is the type the compiler reasons about. Every type knows its C++ spelling, its ctypes
layout (shared by the CPU and CUDA argument packer) and its numpy dtype.
"""
from __future__ import annotations

import builtins
import ctypes
import typing
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .host_arith import CompositeArithmetic, IntegerIndex, ScalarArithmetic


# ----------------------------------------------------------------------------------------------
# scalars


class Scalar(ScalarArithmetic):
    """Base of the scalar type classes. An instance is a host-side boxed value; its operators follow
    the kernel semantics (language/host_arith.py)."""

    _type_: type  # ctypes type
    _np_: np.dtype  # storage (bfloat16: its uint16 bits, as Warp's .numpy() returns them)
    _value_np_: np.dtype  # values and host arithmetic (bfloat16: float32, rounded back)
    _cpp_: str
    _kind_: str  # "bool" | "int" | "uint" | "float"
    _size_: int

    def __init__(self, x=0):
        self.value = _convert(type(self), x)

    def __repr__(self):
        return f"{type(self).__name__}({self.value!r})"

    def __str__(self):
        return str(self.value)

    def __format__(self, spec):
        return format(self.value, spec)

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __bool__(self):
        return bool(self.value)


def _convert(t, x):
    """``x`` as a Python value of scalar type ``t``: integers wrap at the type's width (as a C cast,
    and as Warp), floats round to the type."""
    if isinstance(x, Scalar):
        x = x.value
    if t._kind_ == "bool":
        return bool(x)
    if t._kind_ == "float":
        with np.errstate(over="ignore"):  # a float16 overflow is inf, as the cast in C++
            return float(t._np_.type(x)) if t is not bfloat16 else float(bf16_values(bf16_bits(x)))
    if not isinstance(x, int):
        x = int(np.asarray(x).item()) if isinstance(x, np.generic) else int(x)
    bits = 8 * t._size_
    x &= (1 << bits) - 1
    return x - (1 << bits) if t._kind_ == "int" and x >> (bits - 1) else x


def _scalar(name: str, ctype, npdtype: str, cpp: str, kind: str) -> type:
    bases = (IntegerIndex, Scalar) if kind in ("int", "uint") else (Scalar,)
    cls = type(name, bases, {})
    cls._type_, cls._np_, cls._cpp_, cls._kind_ = ctype, np.dtype(npdtype), cpp, kind
    cls._value_np_ = cls._np_
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


bfloat16 = _scalar("bfloat16", ctypes.c_uint16, "uint16", "tw::bfloat16", "float")
bfloat16._value_np_ = np.dtype(np.float32)  # numpy has no bfloat16: values are float32, rounded


def bf16_bits(values) -> np.ndarray:
    """The bfloat16 bits (uint16) of float ``values``: rounded to float32 first, then to nearest even,
    as Warp does; a NaN stays a quiet NaN (its rounding carry could make it an infinity)."""
    with np.errstate(over="ignore", invalid="ignore"):
        u = np.array(values, dtype=np.float32).view(np.uint32)
        rounded = (u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)
        quiet_nan = (u >> np.uint32(16)) | np.uint32(0x40)
        is_nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
        return np.asarray(np.where(is_nan, quiet_nan, rounded), dtype=np.uint16)


def bf16_values(bits) -> np.ndarray:
    """The float32 values of bfloat16 ``bits`` (exact: a bfloat16 is the top half of a float32)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_storage(t, values) -> np.ndarray:
    """``values`` as an ndarray in the storage of scalar ``t``. For bfloat16, floats are rounded to
    their bits, and a uint16 ndarray is taken as bits already, as in Warp."""
    if t is not bfloat16:
        return np.asarray(values, dtype=t._np_)
    if isinstance(values, np.ndarray) and values.dtype == np.uint16:
        return values
    return bf16_bits(values)


def from_storage(t, stored) -> np.ndarray:
    """The values (``t._value_np_``) of an ndarray in the storage of scalar ``t``."""
    return bf16_values(stored) if t is bfloat16 else np.asarray(stored, dtype=t._np_)


scalar_types = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
                float64)
int_types = tuple(t for t in scalar_types if t._kind_ in ("int", "uint"))
float_types = (float16, bfloat16, float32, float64)
#: the 16-bit float types, kept as their bits in host values (ctypes has no 16-bit float)
f16_types = (float16, bfloat16)

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


class _Composite(CompositeArithmetic, ctypes.Array):
    _length_ = 0
    _type_ = ctypes.c_float

    def __init__(self, *args):
        n = self._length_
        if len(args) == 1 and n != 1 and not isinstance(args[0], (int, float, np.number, Scalar)):
            args = tuple(np.asarray(args[0], dtype=self._wp_scalar_type_._value_np_).reshape(-1))
        if len(args) == 1 and n != 1:
            args = args * n
        if len(args) not in (0, n):
            raise TypeError(f"{type(self).__name__} takes 0, 1 or {n} values, got {len(args)}")
        super().__init__()
        for i, a in enumerate(args):
            self._set_flat(i, a)

    # storage: flat, row-major; 16-bit float components are kept as their bits

    def _set_flat(self, i, value):
        if isinstance(value, Scalar):
            value = value.value
        t = self._wp_scalar_type_
        if t in f16_types:
            with np.errstate(over="ignore"):
                value = int(to_storage(t, float(value)).view(np.uint16))
        elif t._kind_ == "float":
            value = float(value)
        else:
            value = int(value)
        ctypes.Array.__setitem__(self, i, value)

    def _values(self):
        raw = [ctypes.Array.__getitem__(self, i) for i in range(self._length_)]
        t = self._wp_scalar_type_
        if t in f16_types:
            raw = from_storage(t, np.array(raw, dtype=np.uint16).view(t._np_)).tolist()
        return raw

    def _assign(self, values):
        for i, v in enumerate(np.asarray(values).reshape(-1).tolist()):
            self._set_flat(i, v)

    def numpy(self):
        return np.array(self._values(), dtype=self._wp_scalar_type_._value_np_).reshape(self._wp_shape_)

    def __eq__(self, other):
        try:
            theirs = other.numpy() if isinstance(other, _Composite) else np.asarray(other)
        except (TypeError, ValueError):
            return NotImplemented
        return theirs.shape == self._wp_shape_ and bool(np.array_equal(self.numpy(), theirs))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __len__(self):
        return self._wp_shape_[0]

    def __repr__(self):
        return f"{type(self).__name__}({self})"


class VectorBase(_Composite):
    _tw_swizzle_ = True  # components are also .x .y .z .w (not on transforms)

    def _index(self, i):
        n = self._length_
        try:
            k = operator.index(i)
        except TypeError:
            raise TypeError(f"{type(self).__name__} indices must be integers or slices, not "
                            f"{type(i).__name__}") from None
        if not -n <= k < n:
            raise IndexError(f"{type(self).__name__} index {k} out of range (length {n})")
        return k % n

    def __getitem__(self, i):
        values = self._values()
        if isinstance(i, slice):  # a slice is a vector of its own length, as in Warp
            part = values[i]
            return vector(len(part), self._wp_scalar_type_)(*part)
        return values[self._index(i)]

    def __setitem__(self, i, value):
        if isinstance(i, slice):
            idx = range(*i.indices(self._length_))
            items = list(value.numpy().reshape(-1)) if isinstance(value, _Composite) else list(value)
            if len(items) != len(idx):
                raise ValueError(f"cannot assign {len(items)} values to a slice of {len(idx)} components of "
                                 f"{type(self).__name__}")
            for k, v in zip(idx, items):
                self._set_flat(k, v)
            return
        self._set_flat(self._index(i), value)

    def __str__(self):
        return f"[{', '.join(repr(v) for v in self._values())}]"

    def __getattr__(self, name):
        idx = "xyzw".find(name)
        if len(name) == 1 and 0 <= idx < self._length_ and self._tw_swizzle_:
            return self[idx]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        idx = "xyzw".find(name)
        if len(name) == 1 and 0 <= idx < self._length_ and self._tw_swizzle_:
            self[idx] = value
        else:
            super().__setattr__(name, value)


class MatrixBase(_Composite):
    def __getitem__(self, key):
        m = self.numpy()
        if isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, (int, np.integer)) for k in key):
            return m[key].item()
        part = m[key]
        if part.ndim == 0:
            return part.item()
        return self._result(part)

    def __setitem__(self, key, value):
        m = self.numpy()
        m[key] = value.numpy() if isinstance(value, _Composite) else (value.value if isinstance(value, Scalar)
                                                                       else np.asarray(value))
        self._assign(m)

    def __len__(self):
        return self._wp_shape_[0]

    def __str__(self):
        rows = [f"[{', '.join(repr(v) for v in row)}]" for row in self.numpy().tolist()]
        return "[" + ",\n ".join(rows) + "]"

    def __matmul__(self, o):  # matrix times matrix or vector, as in kernels
        theirs = o.numpy() if isinstance(o, _Composite) else np.asarray(o, self._wp_scalar_type_._value_np_)
        with np.errstate(all="ignore"):
            return self._result(self.numpy() @ theirs)

    def __rmatmul__(self, o):  # vector times matrix (a row vector)
        theirs = o.numpy() if isinstance(o, _Composite) else np.asarray(o, self._wp_scalar_type_._value_np_)
        with np.errstate(all="ignore"):
            return self._result(theirs @ self.numpy())

    def __mul__(self, o):  # a matrix or vector operand multiplies as a product, a scalar per element
        if isinstance(o, _Composite):
            return self @ o
        return self._arith(o, "mul")


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

    _tw_swizzle_ = False  # a transform's parts are .p and .q, not .x .y .z .w

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
            "_wp_shape_": (length,), "_shape_": (length,), "_wp_type_params_": (length, dtype),
            "_wp_generic_type_str_": "vec_t", "_cpp_": f"tw::vec_t<{length}, {dtype._cpp_}>"})
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
            "_wp_shape_": (rows, cols), "_shape_": (rows, cols), "_wp_type_params_": (rows, cols, dtype),
            "_wp_generic_type_str_": "mat_t", "_cpp_": f"tw::mat_t<{rows}, {cols}, {dtype._cpp_}>"})
    return _composite_cache[key]


def _float_composite(kind: str, base: type, length: int, dtype, cpp: str) -> type:
    dtype = scalar_type(dtype)
    if not is_float(dtype):
        raise TypeError(f"{kind} needs a float dtype, got {type_name(dtype)}")
    key = (kind, dtype)
    if key not in _composite_cache:
        _composite_cache[key] = type(f"{kind}{_suffix(dtype)}", (base,), {
            "_length_": length, "_type_": dtype._type_, "_wp_scalar_type_": dtype, "_wp_shape_": (length,),
            "_shape_": (length,), "_wp_type_params_": (dtype,), "_wp_generic_type_str_": cpp,
            "_cpp_": f"tw::{cpp}<{dtype._cpp_}>"})
    return _composite_cache[key]


def quaternion(dtype=float32) -> type:
    """The quaternion type ``(x, y, z, w)`` of float ``dtype``."""
    return _float_composite("quat", QuatBase, 4, dtype, "quat_t")


def transformation(dtype=float32) -> type:
    """The rigid transform type (``p``: vec3, then ``q``: quat) of float ``dtype``."""
    return _float_composite("transform", TransformBase, 7, dtype, "transform_t")


def _suffix(dtype) -> str:
    return {float32: "", float64: "d", float16: "h", bfloat16: "bf", int32: "i", int64: "l", uint32: "ui",
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
    type: ``tiling/storage.py`` decides that per value after lowering."""

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


#: the runtime's array class (``wp.array``), registered by runtime/array.py where it is defined: the
#: language and compiler layers recognise a host array (a launch argument, a struct field, a global)
#: by it without importing the runtime, which sits above them. ``()`` until then: no value is one.
host_array: type | tuple = ()


def register_host_array(cls) -> None:
    global host_array
    host_array = cls


@dataclass(frozen=True, repr=False)
class TileStackType(TileType):
    """``wp.tile_stack(capacity, dtype)``: a block-shared LIFO of up to ``shape[0]`` elements, which
    lanes push to and pop from (its count lives beside the elements, in shared memory)."""

    def __repr__(self):
        return f"tile_stack(capacity={self.shape[0]}, dtype={type_name(self.dtype)})"


def is_tile(t) -> bool:
    return isinstance(t, TileType)


def is_struct(t) -> bool:
    """A ``@wp.struct`` class (language/structs.py; recognised by its field table to avoid an import cycle)."""
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
        if s._np_ == dt and s is not bfloat16:  # uint16 data is uint16: bfloat16 must be asked for
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
    """ctypes twin of ``tw::launch_bounds_t``: the shape, and per extent the reciprocal that divides
    by it on the device (``reciprocal``)."""

    _fields_ = [("shape", ctypes.c_int32 * 4), ("ndim", ctypes.c_int32), ("size", ctypes.c_int64),
                ("mul", ctypes.c_uint32 * 4), ("shift", ctypes.c_uint32 * 4)]


def reciprocal(extent: int) -> tuple:
    """``(mul, shift)`` with ``n // extent == (n * mul >> 32) >> shift`` for every ``0 <= n < 2**31``
    (native/runtime/launch.h explains why); ``(0, 0)`` for an extent of 0 or 1 (no division)."""
    if extent < 2:
        return 0, 0
    bits = (extent - 1).bit_length()  # ceil(log2(extent))
    return -(-(1 << (31 + bits)) // extent), bits - 1


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

#: the scalar, vector and matrix types Warp scripts name ``wp.<name>`` (``wp.float32``, ``wp.vec3``,
#: ``wp.quatd``, ``wp.half``); kernel code may also name them bare (frontend/lower.py)
PUBLIC_TYPES = {name: t for name, t in globals().items()
                if isinstance(t, type) and name[:1].islower() and (is_scalar(t) or is_composite(t))}
PUBLIC_TYPES["bool"] = PUBLIC_TYPES.pop("bool_")


def types_equal(a, b, match_generic: bool = False) -> bool:
    """Warp's ``wp.types.types_equal``: whether two kernel types are the same (Python scalar spellings
    normalised, ``float`` is ``float32``); ``match_generic`` lets ``typing.Any`` match anything."""
    if match_generic and (a is typing.Any or b is typing.Any):
        return True
    try:
        return value_type(a) == value_type(b)
    except TypeError:
        return a == b


def type_repr(t) -> str:
    """Warp's ``wp.types.type_repr``: the name of a kernel type, or of a value's type (arrays with
    their dtype and ndim)."""
    if getattr(t, "shape", None) is not None and hasattr(t, "ndim") and hasattr(t, "dtype"):  # an array
        return f"{type(t).__name__}(ndim={t.ndim}, dtype={type_name(t.dtype)})"
    if not isinstance(t, type) and not isinstance(t, (ArrayType, TupleType)):
        t = type(t)
    return type_name(t)
