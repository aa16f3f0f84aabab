"""wp.launch's argument block as ``bytes``: byte for byte the ``ctypes`` struct ``ArgPacker.pack``
builds, at a fraction of the cost (issue 4: a launch's host time).

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

from .. import types as T
from .array import array
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
