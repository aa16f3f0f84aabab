"""``wp.launch``: argument checking and packing (one packer for CPU and CUDA), then the backend call."""
from __future__ import annotations

import ctypes

import numpy as np

from .. import types as T
from ..emit import names
from ..errors import LaunchError, TileWarpError
from ..ir import nodes as ir
from .array import array
from .device import get_device


def _converter(t, name):
    """A function (value, device) -> ctypes value for parameter ``name`` of kernel type ``t``."""

    def bad(value, what=None):
        got = what or (f"array of {T.type_name(value.dtype)}" if isinstance(value, array) else type(value).__name__)
        return LaunchError(f"argument '{name}' expects {T.type_name(t)}, got {got}")

    if T.is_array(t):
        empty = T.array_descriptor(t.ndim)

        def conv_array(value, device):
            if value is None:
                return empty()
            if not isinstance(value, array) or value.shape is None:
                raise bad(value)
            if value.dtype != t.dtype:
                raise bad(value)
            if value.ndim != t.ndim:
                raise bad(value, f"a {value.ndim}-d array")
            if value.device != device:
                raise LaunchError(f"argument '{name}' is on device '{value.device}' but the launch is on '{device}'")
            return value.__ctype__()

        return conv_array
    if T.is_scalar(t):
        kind = t._kind_
        ok = {"float": (int, float, np.integer, np.floating), "int": (int, np.integer),
              "uint": (int, np.integer), "bool": (bool, np.bool_, int, np.integer)}[kind]

        def conv_scalar(value, device):
            if isinstance(value, T.Scalar):
                value = value.value
            if not isinstance(value, ok) or (kind != "bool" and isinstance(value, (bool, np.bool_))):
                raise bad(value)
            if t is T.float16:
                return int(np.float16(value).view(np.uint16))
            return t._type_(value).value if kind != "float" else float(value)

        return conv_scalar
    if T.is_composite(t):
        def conv_composite(value, device):
            if isinstance(value, t):
                return value
            if isinstance(value, (T.VectorBase, T.MatrixBase)) or isinstance(value, (int, float, str)):
                raise bad(value)
            flat = np.asarray(value, dtype=T.scalar_of(t)._np_).reshape(-1)
            if flat.size != t._length_:
                raise bad(value, f"{flat.size} values")
            return t(*flat)

        return conv_composite
    raise LaunchError(f"argument '{name}': unsupported parameter type {T.type_name(t)}")


def tid_arity(fn: ir.Function) -> int:
    n = 0
    for s in ir.walk(fn.body):
        if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tid":
            n = max(n, s.op.template[1])
    return n


class ArgPacker:
    """The kernel's argument struct (same layout as the C++ ``<kernel>_args``) and how to fill it."""

    def __init__(self, fn: ir.Function):
        self.names = list(fn.param_names)
        fields = [("bounds", T.LaunchBounds)] + [(names.field(n), T.ctype_of(p.type))
                                                 for n, p in zip(fn.param_names, fn.params)]
        self.struct = type(names.args_struct(fn.symbol), (ctypes.Structure,), {"_fields_": fields})
        self.converters = [_converter(p.type, n) for n, p in zip(fn.param_names, fn.params)]
        self.tid_arity = tid_arity(fn)

    def pack(self, values, device, bounds):
        if len(values) != len(self.converters):
            raise LaunchError(f"kernel takes {len(self.converters)} arguments ({', '.join(self.names)}), "
                              f"got {len(values)}")
        return self.struct(bounds, *[c(v, device) for c, v in zip(self.converters, values)])


def launch_bounds(dim, tid_n: int):
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    if not 1 <= len(dims) <= 4 or any(not isinstance(d, (int, np.integer)) or d < 0 for d in dims):
        raise LaunchError(f"dim must be a non-negative int or a tuple of 1 to 4 of them, got {dim!r}")
    if tid_n > 1 and tid_n != len(dims):
        raise LaunchError(f"the kernel unpacks wp.tid() into {tid_n} indices but dim has {len(dims)} dimensions")
    size = int(np.prod(dims))
    if any(d > 2**31 - 1 for d in dims):
        raise LaunchError(f"each launch dimension must be below 2**31, got {dims}")
    b = T.LaunchBounds()
    b.shape[:] = [int(d) for d in dims] + [1] * (4 - len(dims))
    b.ndim, b.size = len(dims), size
    return b


class Launch:
    """A packed launch that can be replayed cheaply (``record_cmd=True``)."""

    def __init__(self, compiled, args, size, block_dim):
        self.compiled, self.args, self.size, self.block_dim = compiled, args, size, block_dim

    def launch(self):
        if self.size:
            backend = self.compiled.device.backend
            backend.launch(self.compiled.handle, ctypes.addressof(self.args), self.size, self.block_dim)


def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None, stream=None,
           adjoint=False, record_tape=True, record_cmd=False, max_blocks=0, block_dim=256):
    """Run ``kernel`` over ``dim`` threads (Warp's signature and defaults)."""
    if adjoint:
        raise TileWarpError("adjoint launches are not available yet in this version of tilewarp")
    values = [*inputs, *outputs]
    if device is None:
        device = next((v.device for v in values if isinstance(v, array) and v.device is not None), None)
    device = get_device(device)
    compiled = kernel.compiled(device)
    packer = compiled.packer
    bounds = launch_bounds(dim, packer.tid_arity)
    args = packer.pack(values, device, bounds)
    cmd = Launch(compiled, args, bounds.size, block_dim)
    if record_cmd:
        return cmd
    cmd.launch()
    return None
