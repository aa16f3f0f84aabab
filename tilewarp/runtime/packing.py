"""A kernel's launch arguments: the argument struct (``ArgPacker``: the same layout as the C++
``<kernel>_args``), one converter per parameter (checks and errors naming the parameter), the launch
bounds of a ``dim``, and the same block as ``bytes`` (``make_pack_bytes``), byte for byte the
``ctypes`` struct at a fraction of its cost (issue 4: a launch's host time).

Building a ctypes Structure with nested struct fields costs ~0.4 us per launch; one precompiled
``struct.Struct.pack`` of the same layout (padding taken from the ctypes field offsets) costs
~0.06 us. Array descriptors are cached as bytes in the array's token (``native_launch.array_token``),
which the array drops whenever its descriptor changes (grad, requires_grad), so cached bytes never
outlive the array's state; the native launch path (``native_launch``) reads the same token. The
per-kernel function is generated, unrolled over the parameters, with the common array
case (right dtype, ndim and device) inlined; everything else goes through the parameter's
converter, which raises the same errors (naming the parameter) as ``pack``.
"""
from __future__ import annotations

import ctypes
import struct

import numpy as np

from ..errors import LaunchError
from ..ir import nodes as ir
from ..language import names
from ..language import types as T
from .array import array
from .indexedarray import converter as indexed_converter
from . import retired
from .native_launch import array_token

#: struct codes for scalar fields by (kind, byte size); float16 and bfloat16 arrive as their uint16 bits
_SCALAR_CODES = {("float", 4): "f", ("float", 8): "d", ("float", 2): "H", ("bool", 1): "?",
                 ("int", 1): "b", ("int", 2): "h", ("int", 4): "i", ("int", 8): "q",
                 ("uint", 1): "B", ("uint", 2): "H", ("uint", 4): "I", ("uint", 8): "Q"}


def _bytes_converter(t, conv):
    """``conv`` (value, device) -> ctypes object, turned into bytes; for arrays the bytes are
    cached in the array's token (the inlined fast path reads them back)."""
    if not T.is_array(t) or isinstance(t, T.IndexedArrayType):
        return lambda value, device: bytes(conv(value, device))

    def array_bytes(value, device):
        desc = conv(value, device)  # raises naming the parameter; None gives an empty descriptor
        if type(value) is array and value._desc is desc:
            return array_token(value)[1]
        return bytes(desc)

    return array_bytes


def _layout(packer):
    """The struct format of the argument block and, per parameter, its converter and array type
    (None for scalars, which ``struct`` packs from the converter's Python value)."""
    fmt, at, params = "=", 0, []
    for k, (fname, _) in enumerate(packer.struct._fields_):
        field = getattr(packer.struct, fname)
        fmt += f"{field.offset - at}x" if field.offset > at else ""
        at = field.offset + field.size
        if k == 0:  # the launch bounds, given as bytes
            fmt += f"{field.size}s"
            continue
        t, conv = packer.fn.params[k - 1].type, packer.converters[k - 1]
        code = _SCALAR_CODES.get((t._kind_, field.size)) if T.is_scalar(t) else None
        fmt += code or f"{field.size}s"
        fast_array = T.is_array(t) and not isinstance(t, T.IndexedArrayType)
        params.append((conv if code else _bytes_converter(t, conv), t if fast_array else None))
    size = ctypes.sizeof(packer.struct)
    return fmt + (f"{size - at}x" if size > at else ""), params


def make_pack_bytes(packer):
    """``pack_bytes(values, device, bounds_bytes) -> bytes`` for ``packer``'s kernel. Values
    ``struct`` refuses (a float32 beyond its range, which ctypes rounds to inf) go through
    ``packer.pack``, so both ways give the same bytes."""
    fmt, params = _layout(packer)
    n = len(params)
    lines = [f"def pack_bytes(v, d, b):", f"    if len(v) != {n}:", "        raise bad(v)"]
    scope = {"P": struct.Struct(fmt).pack, "bad": packer._count_error, "struct_error": struct.error,
             "A": array, "slow": lambda v, d, b: bytes(packer.pack(v, d, T.LaunchBounds.from_buffer_copy(b)))}
    for k, (conv, t) in enumerate(params):
        scope[f"c{k}"] = conv
        if t is None:
            lines.append(f"    a{k} = c{k}(v[{k}], d)")
            continue
        scope[f"t{k}"] = t.dtype
        lines += [f"    x = v[{k}]",
                  f"    if type(x) is A and x.dtype is t{k} and x.ndim == {t.ndim} and x.device is d:",
                  "        try:",
                  f"            a{k} = x._tw_token[1]",
                  "        except TypeError:  # no token: not launched since made or changed",
                  f"            a{k} = c{k}(x, d)",
                  "    else:",
                  f"        a{k} = c{k}(x, d)"]
    args = "".join(f", a{k}" for k in range(n))
    lines += ["    try:", f"        return P(b{args})", "    except (OverflowError, struct_error):",
              "        return slow(v, d, b)"]
    exec("\n".join(lines), scope)  # noqa: S102 - generated from the parameter layout only
    return scope["pack_bytes"]


# ---- the argument struct ----------------------------------------------------------------------------

def _converter(t, name):
    """A function (value, device) -> ctypes value for parameter ``name`` of kernel type ``t``."""

    def bad(value, what=None):
        got = what or (f"array of {T.type_name(value.dtype)}" if isinstance(value, array) else type(value).__name__)
        return LaunchError(f"argument '{name}' expects {T.type_name(t)}, got {got}")

    if isinstance(t, T.IndexedArrayType):
        return indexed_converter(t, name)
    if T.is_array(t):
        empty = T.array_descriptor(t.ndim)
        dtype, ndim = t.dtype, t.ndim

        def conv_array(value, device):
            # fast path: the common case costs a few attribute reads (every launch goes through here)
            if type(value) is array and value.dtype is dtype and value.ndim == ndim and value.device is device:
                desc = value._desc
                return desc if desc is not None else value.__ctype__()
            if value is None:
                return empty()
            if not isinstance(value, array) or value.shape is None:
                raise bad(value)
            if value.dtype != dtype:
                raise bad(value)
            if value.ndim != ndim:
                raise bad(value, f"a {value.ndim}-d array")
            if value.device != device:
                raise LaunchError(f"argument '{name}' is on device '{value.device}' but the launch is on '{device}'")
            return value.__ctype__()

        return conv_array
    if T.is_scalar(t) and t._kind_ in ("int", "uint"):
        return _int_converter(t, name, bad)
    if T.is_scalar(t):
        kind = t._kind_
        ok = (int, float, np.integer, np.floating) if kind == "float" else (bool, np.bool_, int, np.integer)

        def conv_scalar(value, device):
            if isinstance(value, T.Scalar):
                value = value.value
            if not isinstance(value, ok):  # a Python bool is an int, and Warp takes it for numbers too
                raise bad(value)
            if kind != "float":  # bool: any int by its truth, as Warp (nothing is cut off)
                return t._type_(value).value
            try:
                if t in T.f16_types:  # their bits
                    return int(T.to_storage(t, float(value)).view(np.uint16))
                return float(value)
            except OverflowError:  # an int beyond a double
                raise LaunchError(f"argument '{name}' expects {T.type_name(t)}, got {value}, "
                                  f"too large for a float") from None

        return conv_scalar
    if T.is_composite(t):
        def conv_composite(value, device):
            if isinstance(value, t):
                return value
            if isinstance(value, (T.VectorBase, T.MatrixBase)) or isinstance(value, (int, float, str)):
                raise bad(value)
            flat = np.asarray(value, dtype=T.scalar_of(t)._value_np_).reshape(-1)
            if flat.size != t._length_:
                raise bad(value, f"{flat.size} values")
            return t(*flat)

        return conv_composite
    if T.is_struct(t):
        def conv_struct(value, device):
            if not isinstance(value, t):
                raise bad(value)
            try:
                value._tw_check_devices(device, "")
            except ValueError as e:
                raise LaunchError(f"argument '{name}': {e} but the launch is on '{device}'") from None
            return value._tw_ctype  # the instance's own ctypes struct, laid out as the C++ one

        return conv_struct
    raise LaunchError(f"argument '{name}': unsupported parameter type {T.type_name(t)}")


def int_range(t) -> tuple[int, int]:
    """The Python ints an integer parameter of type ``t`` takes. Signed types: their own range.
    Unsigned types also take negatives down to -2**(bits-1), passed as their two's complement bits
    (-1 is all ones), as Warp and C pass them; anything wider is refused rather than cut to its low
    bits (Warp keeps the low bits: 2**40 + 7 arrives as 7)."""
    bits = 8 * ctypes.sizeof(t._type_)
    return -(1 << (bits - 1)), (1 << (bits if t._kind_ == "uint" else bits - 1)) - 1


def _int_converter(t, name, bad):
    lo, hi = int_range(t)
    ctype, ok = t._type_, (int, np.integer)

    def conv_int(value, device):
        if isinstance(value, T.Scalar):
            value = value.value
        if not isinstance(value, ok):  # a Python bool is an int, and Warp takes it for numbers too
            raise bad(value)
        if not lo <= value <= hi:
            raise LaunchError(f"argument '{name}' expects {T.type_name(t)}, got {value}, outside the "
                              f"{lo} to {hi} it takes")
        if ids_checked and retired.ids and value in retired.ids:
            raise LaunchError(retired.message(name, int(value)))
        return ctype(value).value

    ids_checked = t is T.uint64  # library objects' ids are uint64 (runtime/retired.py)
    return conv_int


def tid_arity(fn: ir.Function) -> int:
    n = 0
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tid":
            n = max(n, s.op.template[1])
    return n


class ArgPacker:
    """The kernel's argument struct (same layout as the C++ ``<kernel>_args``) and how to fill it."""

    #: at most this many distinct launch shapes are remembered per kernel (see ``bounds``)
    MAX_CACHED_BOUNDS = 64

    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.names = list(fn.param_names)
        fields = [("bounds", T.LaunchBounds)] + [(names.field(n), T.ctype_of(p.type))
                                                 for n, p in zip(fn.param_names, fn.params)]
        self.struct = type(names.args_struct(fn.symbol), (ctypes.Structure,), {"_fields_": fields})
        self.converters = [_converter(p.type, n) for n, p in zip(fn.param_names, fn.params)]
        self.n_params = len(self.converters)
        self.tid_arity = tid_arity(fn)
        self._bounds: dict = {}  # dim (an int or a tuple of ints, see memo_key) -> validated LaunchBounds
        self._bb: dict = {}      # the same -> (task count, the bounds as bytes): wp.launch's memo
        self.pack = self._unrolled_pack()
        self.pack_bytes = make_pack_bytes(self)  # wp.launch's packer: the same block as bytes

    def bounds(self, dim):
        """Validated launch bounds for ``dim``, remembered per distinct ``dim`` (the struct is copied
        into each argument block, so sharing one is safe)."""
        key = memo_key(dim)
        b = self._bounds.get(key) if key is not None else None
        if b is None:
            b = launch_bounds(dim, self.tid_arity)
            if key is not None and len(self._bounds) < self.MAX_CACHED_BOUNDS:
                self._bounds[key] = b
        return b

    def bounds_bytes(self, dim):
        """``(task count, bounds as bytes)`` for ``dim``, remembered as ``bounds`` remembers."""
        key = memo_key(dim)
        entry = self._bb.get(key) if key is not None else None
        if entry is None:
            b = self.bounds(dim)
            entry = (b.size, bytes(b))
            if key is not None and len(self._bb) < self.MAX_CACHED_BOUNDS:
                self._bb[key] = entry
        return entry

    def pack(self, values, device, bounds):
        """The argument struct for ``values``; replaced per instance by a version unrolled over the
        parameters (no per-launch zip, list or star-call: ~0.3 us of a ~2 us launch)."""
        if len(values) != self.n_params:
            raise self._count_error(values)
        return self.struct(bounds, *[c(v, device) for c, v in zip(self.converters, values)])

    def _count_error(self, values):
        return LaunchError(f"kernel takes {self.n_params} argument(s) ({', '.join(self.names)}), got {len(values)}")

    def _unrolled_pack(self):
        n = self.n_params
        calls = "".join(f"c{k}(v[{k}], d), " for k in range(n))
        src = f"def pack(v, d, b):\n    if len(v) != {n}:\n        raise bad(v)\n    return S(b, {calls})\n"
        scope = {"S": self.struct, "bad": self._count_error, **{f"c{k}": c for k, c in enumerate(self.converters)}}
        exec(src, scope)  # noqa: S102 - generated from parameter counts only
        return scope["pack"]


def exact_ints(dim) -> bool:
    """Whether ``dim`` may key a bounds memo: an int or a tuple of ints, exactly. As dict keys 8.0 == 8
    and True == 1, so a float or bool would otherwise pick up an int's validated entry."""
    if type(dim) is int:
        return True
    if type(dim) is not tuple:
        return False
    for d in dim:  # a plain loop: a third of the cost of all() over a generator
        if type(d) is not int:
            return False
    return True


def memo_key(dim):
    """The bounds memo's key for ``dim``: the ints as Python ints (NumPy ints included), or None
    for a spelling never memoised (lists; floats and bools, which launch_bounds refuses)."""
    if exact_ints(dim):
        return dim
    if _is_int(dim):
        return int(dim)
    if type(dim) is tuple and all(_is_int(d) for d in dim):
        return tuple(int(d) for d in dim)
    return None


def _is_int(d) -> bool:
    return isinstance(d, (int, np.integer)) and not isinstance(d, bool)  # True is an int to Python


def launch_bounds(dim, tid_n: int):
    if _is_int(dim):
        dims = (int(dim),)
    else:
        try:
            dims = tuple(dim)
        except TypeError:
            dims = ()
    if not 1 <= len(dims) <= 4 or any(not _is_int(d) or d < 0 for d in dims):
        raise LaunchError(f"dim must be a non-negative int or a tuple of 1 to 4 of them, got {dim!r}")
    dims = tuple(int(d) for d in dims)
    if tid_n > len(dims):  # fewer is fine: the trailing dimensions fold away (launch_tiled's lanes)
        raise LaunchError(f"the kernel unpacks wp.tid() into {tid_n} indices but dim has {len(dims)} dimensions")
    if any(d > 2**31 - 1 for d in dims):
        raise LaunchError(f"each launch dimension must be below 2**31, got {dims}")
    size = 1
    for d in dims:
        size *= d
    b = T.LaunchBounds()
    b.shape[:] = list(dims) + [1] * (4 - len(dims))
    b.ndim, b.size = len(dims), size
    for d, extent in enumerate(b.shape):
        b.mul[d], b.shift[d] = T.reciprocal(extent)
    return b
