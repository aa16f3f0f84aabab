"""``@wp.struct``: user-defined aggregate types for kernel arguments, locals and array elements.

``@wp.struct`` turns an annotated class into a new class whose instances are host values: every
instance owns (or, nested in another, views) a ``ctypes.Structure`` laid out exactly like the
emitted C++ struct, so it packs straight into a kernel's argument block. The class itself is the
kernel type: it carries its fields, its ctypes and numpy layouts and its C++ name, which is a
digest of ``module.qualname`` and the field types, so it is the same in every process.
"""
from __future__ import annotations

import ctypes
import hashlib
import sys

import numpy as np

from . import types as T


class StructInstance:
    """Base of the classes ``@wp.struct`` makes. Fields are properties defined on each class."""

    _tw_fields_: dict = {}  # field name -> kernel type, in declaration order
    _tw_ctype_: type = ctypes.Structure

    def __init__(self, **fields):
        # keyword values are an addition to Warp, whose S() takes none
        object.__setattr__(self, "_tw_ctype", self._tw_ctype_())
        object.__setattr__(self, "_tw_values", {})
        self._tw_reset()
        for name, value in fields.items():
            if name not in self._tw_fields_:
                raise AttributeError(f"struct {type(self).__name__} has no field '{name}'")
            setattr(self, name, value)

    @classmethod
    def _tw_view(cls, ctype_obj):
        """An instance reading and writing ``ctype_obj`` (a field of a parent's ctypes struct)."""
        self = cls.__new__(cls)
        object.__setattr__(self, "_tw_ctype", ctype_obj)
        object.__setattr__(self, "_tw_values", {})
        self._tw_reset(keep_memory=True)
        return self

    def _tw_reset(self, keep_memory=False):
        for name, t in self._tw_fields_.items():
            if T.is_struct(t):
                self._tw_values[name] = t._tw_view(getattr(self._tw_ctype, name))
            elif T.is_scalar(t):  # Warp's defaults are instances of the field's scalar type
                self._tw_values[name] = t(_read_scalar(self._tw_ctype, name, t)) if keep_memory else t()
            elif T.is_array(t):
                self._tw_values[name] = None
            else:  # vectors and matrices: one view into the struct's memory, so s.v is s.v
                self._tw_values[name] = getattr(self._tw_ctype, name)

    def __setattr__(self, name, value):
        if name not in self._tw_fields_:
            raise AttributeError(f"struct {type(self).__name__} has no field '{name}'")
        object.__setattr__(self, name, value)  # the field's property setter

    def __repr__(self):
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._tw_fields_)
        return f"{type(self).__name__}({body})"

    def numpy_value(self):
        """This value as a numpy record of the class's ``numpy_dtype()`` (a copy)."""
        return np.frombuffer(bytes(self._tw_ctype), dtype=self._np_)[0].copy()

    def _tw_adjoint(self):
        """The adjoint a backward launch gets for this struct argument: array fields are their
        gradient arrays (None without one), so gradients reach arrays held in structs; nested
        structs likewise. Other fields start at zero: the backward kernel accumulates into them
        but never returns them (Warp copies the primal values there, which is equally unread)."""
        out = type(self)()
        for name, t in self._tw_fields_.items():
            v = self._tw_values.get(name)
            if T.is_array(t) and v is not None and v.requires_grad:
                setattr(out, name, v.grad)
            elif T.is_struct(t):
                setattr(out, name, v._tw_adjoint())
        return out

    def _tw_check_devices(self, device, what: str):
        """Raise ValueError naming the field when an array field lives on another device."""
        for name, t in self._tw_fields_.items():
            v = self._tw_values.get(name)
            if T.is_array(t) and v is not None and v.device != device:
                raise ValueError(f"field '{what}{name}' is an array on '{v.device}'")
            if T.is_struct(t):
                v._tw_check_devices(device, f"{what}{name}.")


def _read_scalar(cobj, name, t):
    raw = getattr(cobj, name)
    return float(T.from_storage(t, np.uint16(raw).view(t._np_))) if t in T.f16_types else raw


def _scalar_bits(t, value, where):
    """The ctypes value of scalar ``t`` for ``value``, rejecting what Warp rejects."""
    if isinstance(value, T.Scalar):
        value = value.value
    if isinstance(value, (str, bytes)) or not np.isscalar(value):
        raise TypeError(f"{where} expects {T.type_name(t)}, got {type(value).__name__}")
    if t in T.f16_types:  # the 16-bit floats: their bits
        return int(T.to_storage(t, float(value)).view(np.uint16))
    if t._kind_ == "float":
        return float(value)
    if t._kind_ == "bool":
        return bool(value)
    if isinstance(value, (float, np.floating)):
        raise TypeError(f"{where} expects {T.type_name(t)}, got float {value!r}")
    return int(value)  # ctypes wraps out-of-range integers, as Warp's fields do


def _field_property(name, t):
    def get(self):  # vectors and matrices are views: s.v[0] = x writes into the struct, as in Warp
        return self._tw_values[name]

    def set(self, value):
        where = f"struct field '{name}'"
        if T.is_scalar(t):
            setattr(self._tw_ctype, name, _scalar_bits(t, value, where))
            self._tw_values[name] = value
        elif T.is_composite(t):
            if not isinstance(value, t):
                if np.isscalar(value) or isinstance(value, T.Scalar):
                    raise TypeError(f"{where} expects {T.type_name(t)}, got a single "
                                    f"{type(value).__name__}: construct it, e.g. {T.type_name(t)}(...)")
                flat = np.asarray(value, dtype=T.scalar_of(t)._value_np_).reshape(-1)
                if flat.size != t._length_:
                    raise ValueError(f"{where} expects {T.type_name(t)} ({t._length_} values), "
                                     f"got {flat.size}")
                value = t(*flat)
            setattr(self._tw_ctype, name, value)
        elif T.is_array(t):
            setattr(self._tw_ctype, name, _array_desc(t, value, where))
            self._tw_values[name] = value
        else:  # a nested struct: copy the value in (Warp copies too: later edits of `value` stay there)
            if not isinstance(value, t):
                raise TypeError(f"{where} expects struct {T.type_name(t)}, got {type(value).__name__}")
            inner = self._tw_values[name]
            for field in t._tw_fields_:
                setattr(inner, field, getattr(value, field))

    return property(get, set)


def _array_desc(t, value, where):
    if value is None:
        return T.array_descriptor(t.ndim)()
    if not isinstance(value, T.host_array) or value.shape is None:
        raise TypeError(f"{where} expects an array, got {type(value).__name__}")
    if value.dtype != t.dtype:
        raise TypeError(f"{where} expects an array of {T.type_name(t.dtype)}, got {T.type_name(value.dtype)}")
    if value.ndim != t.ndim:
        raise TypeError(f"{where} expects a {t.ndim}-d array, got a {value.ndim}-d array")
    return value.__ctype__()


# ---- the decorator ---------------------------------------------------------------------------------


def struct(cls):
    """Turn an annotated class into a kernel struct type (Warp's ``@wp.struct``)."""
    fields = {name: _field_type(cls, name, a) for name, a in cls.__dict__.get("__annotations__", {}).items()}
    if not fields:
        raise TypeError(f"struct {cls.__name__} has no annotated fields")
    key = f"{cls.__module__}.{cls.__qualname__}"
    ident = "".join(c if c.isascii() and c.isalnum() else "_" for c in cls.__name__)
    cpp = f"{ident}_{_digest(key, *(f'{n}:{cpp_field_type(t)}' for n, t in fields.items()))}"
    ctype = type(f"{cls.__name__}_ctype", (ctypes.Structure,),
                 {"_fields_": [(n, T.ctype_of(t)) for n, t in fields.items()]})
    attrs = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
             "_tw_fields_": fields, "_tw_ctype_": ctype, "_cpp_": cpp, "_np_": _numpy_dtype(fields, ctype)}
    attrs.update({n: _field_property(n, t) for n, t in fields.items()})
    new = type(cls.__name__, (StructInstance,), attrs)
    # Warp's names for the same facts, where no field takes the name
    extras = {"key": cls.__qualname__, "native_name": cpp, "ctype": ctype, "cls": cls, "vars": dict(fields),
              "numpy_dtype": classmethod(lambda c: c._np_)}
    for n, v in extras.items():
        if n not in fields:
            setattr(new, n, v)
    return new


def native_struct(cpp: str, header: str, name: str | None = None):
    """A struct type the native headers define (``header``, relative to native/, holds ``struct cpp``
    with members ``f_<field>`` in the annotated order): the query objects of the geometry builtins.
    Kernels use it like any ``@wp.struct`` (locals, loop-carried values, @wp.func parameters, field
    reads, adjoints); the emitter includes ``header`` instead of printing a definition."""

    def wrap(cls):
        new = struct(cls)
        new._cpp_ = new.native_name = cpp
        new._tw_header_ = header
        if name is not None:
            new.__name__ = new.__qualname__ = name
        return new

    return wrap


def _digest(*parts: str) -> str:
    """Stable across processes (never Python's salted hash())."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


def _field_type(cls, name, annotation):
    if isinstance(annotation, str):  # `from __future__ import annotations`
        module = sys.modules.get(cls.__module__)
        try:
            annotation = eval(annotation, dict(vars(module)) if module else {}, dict(vars(cls)))
        except Exception as e:
            raise TypeError(f"struct {cls.__name__}: annotation of field '{name}' cannot be evaluated: "
                            f"{e}") from None
    try:
        return T.value_type(annotation)
    except TypeError as e:
        raise TypeError(f"struct {cls.__name__}: field '{name}': {e}") from None


def _numpy_dtype(fields, ctype) -> np.dtype:
    """Structured dtype with the ctypes offsets (so padding matches the C++ layout)."""
    formats = [_field_np(t) for t in fields.values()]
    offsets = [getattr(ctype, n).offset for n in fields]
    return np.dtype({"names": list(fields), "formats": formats, "offsets": offsets,
                     "itemsize": ctypes.sizeof(ctype)})


def _field_np(t):
    if T.is_array(t):
        desc = T.array_descriptor(t.ndim)
        return np.dtype({"names": ["data", "grad", "shape", "strides"],
                         "formats": ["<u8", "<u8", ("<i4", (t.ndim,)), ("<i8", (t.ndim,))],
                         "offsets": [getattr(desc, n).offset for n in ("data", "grad", "shape", "strides")],
                         "itemsize": ctypes.sizeof(desc)})
    return T.numpy_dtype(t)


# ---- C++ --------------------------------------------------------------------------------------------


def cpp_field(name: str) -> str:
    """The C++ member name of field ``name`` (prefixed: a field may be named like a C macro)."""
    return "f_" + name


def cpp_field_type(t) -> str:
    return t._cpp_


def definition(t) -> list:
    """The C++ struct definition of struct type ``t``; natural alignment matches its ctypes twin."""
    if getattr(t, "_tw_header_", None):  # a native_struct: its header defines it
        return []
    lines = [f"struct {t._cpp_} {{  // {t.__qualname__}"]
    lines += [f"    {cpp_field_type(ft)} {cpp_field(n)};" for n, ft in t._tw_fields_.items()]
    return lines + ["};", ""]


def dependencies(t) -> list:
    """Struct types a field of ``t`` mentions (directly or as an array's dtype)."""
    out = []
    for ft in t._tw_fields_.values():
        ft = ft.dtype if T.is_array(ft) else ft
        if T.is_struct(ft):
            out.append(ft)
    return out


def definitions(functions) -> list:
    """C++ definitions of every struct the IR ``functions`` use, dependencies first."""
    types = []
    for fn in functions:
        types += [v.type for v in (*fn.params, *fn.values)] + [fn.return_type]
    flat = []
    while types:
        t = types.pop()
        if isinstance(t, T.TupleType):  # a func returning (S, float)
            types += list(t.types)
        else:
            flat.append(t)
    lines = []
    for t in in_dependency_order(reversed(flat)):
        lines += definition(t)
    return lines


def in_dependency_order(types) -> list:
    """Every struct type reachable from ``types``, each after the structs it contains, each once."""
    order, seen = [], set()

    def visit(t):
        t = t.dtype if T.is_array(t) else t
        if not T.is_struct(t) or t._cpp_ in seen:
            return
        seen.add(t._cpp_)
        for d in dependencies(t):
            visit(d)
        order.append(t)

    for t in types:
        visit(t)
    return order


# ---- host data --------------------------------------------------------------------------------------


def to_numpy(data, t) -> np.ndarray:
    """Struct instances (one, or a nested list of them) or structured numpy data as ``t`` records."""
    if isinstance(data, StructInstance):
        data = [data]
    if np.isscalar(data) and data == 0:  # fill_(0) / zero_(): zero bytes, padding included
        return np.zeros(1, dtype=t._np_)
    if isinstance(data, np.ndarray):
        return np.asarray(data, dtype=t._np_)
    items = list(data)
    if items and not all(isinstance(x, StructInstance) for x in items):
        return np.array([to_numpy(x, t) for x in items])
    for x in items:
        if not isinstance(x, t):
            raise TypeError(f"expected {T.type_name(t)} values, got {type(x).__name__}")
    return np.frombuffer(b"".join(bytes(x._tw_ctype) for x in items), dtype=t._np_).copy()


def from_record(t, record) -> StructInstance:
    """An instance holding the bytes of one numpy record (array fields come back as None)."""
    s = t.__new__(t)
    buf = t._tw_ctype_.from_buffer_copy(np.ascontiguousarray(record).tobytes())
    object.__setattr__(s, "_tw_ctype", buf)
    object.__setattr__(s, "_tw_values", {})
    s._tw_reset(keep_memory=True)
    for name, ft in t._tw_fields_.items():
        if T.is_array(ft):
            setattr(buf, name, T.array_descriptor(ft.ndim)())
    return s
