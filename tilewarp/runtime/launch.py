"""``wp.launch``: argument checking and packing (one packer for CPU and CUDA), then the backend call."""
from __future__ import annotations

import ctypes

import numpy as np

from .. import config
from .. import types as T
from ..emit import names
from ..errors import LaunchError, TileWarpError
from ..frontend.captures import check as check_captures
from ..ir import nodes as ir
from .array import array
from .debug import checked_launch
from .indexedarray import converter as indexed_converter
from .packing import make_pack_bytes
from .device import Device, get_device
from . import native_launch, tape_state
from .host_views import record_read
from .tiled import launch_key, remember, remembered


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
        return ctype(value).value

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
        self._bounds: dict = {}  # dim (an int or a tuple of ints, see _memo_key) -> validated LaunchBounds
        self._bb: dict = {}      # the same -> (task count, the bounds as bytes): wp.launch's memo
        self.pack = self._unrolled_pack()
        self.pack_bytes = make_pack_bytes(self)  # wp.launch's packer: the same block as bytes

    def bounds(self, dim):
        """Validated launch bounds for ``dim``, remembered per distinct ``dim`` (the struct is copied
        into each argument block, so sharing one is safe)."""
        key = _memo_key(dim)
        b = self._bounds.get(key) if key is not None else None
        if b is None:
            b = launch_bounds(dim, self.tid_arity)
            if key is not None and len(self._bounds) < self.MAX_CACHED_BOUNDS:
                self._bounds[key] = b
        return b

    def bounds_bytes(self, dim):
        """``(task count, bounds as bytes)`` for ``dim``, remembered as ``bounds`` remembers."""
        key = _memo_key(dim)
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


def _exact_ints(dim) -> bool:
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


def _memo_key(dim):
    """The bounds memo's key for ``dim``: the ints as Python ints (NumPy ints included), or None
    for a spelling never memoised (lists; floats and bools, which launch_bounds refuses)."""
    if _exact_ints(dim):
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


class Launch:
    """A packed launch that can be replayed cheaply (``record_cmd=True``)."""

    def __init__(self, compiled, args, size, block_dim, values=()):
        self.compiled, self.args, self.size, self.block_dim = compiled, args, size, block_dim
        self.values = values  # kept for the checks after a debug / verify_fp launch

    def launch(self):
        if self.size:
            if self.compiled.checks is not None or config.verify_fp:
                checked_launch(self.compiled, self.args, self.size, self.block_dim, self.values)
                return
            backend = self.compiled.device.backend
            backend.launch(self.compiled.handle, ctypes.addressof(self.args),
                           *self.compiled.launch_dims(self.size, self.block_dim))


def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None, stream=None,
           adjoint=False, record_tape=True, record_cmd=False, max_blocks=0, block_dim=256, _tracked=False):
    """Run ``kernel`` over ``dim`` threads (Warp's signature and defaults; ``_tracked``: internal,
    the Tape bookkeeping is done by the caller)."""
    fast = native_launch.fast  # the native hot path: True when it launched, False when it did nothing
    native_ok = stream is None and not (adjoint or record_cmd or max_blocks) and (_tracked or not tape_state.tracking)
    if fast is not None and native_ok and fast(kernel, dim, inputs, outputs, device, block_dim):
        return None
    key = None
    if kernel.__dict__.get("_tw_tiles"):  # tile kernels: a plain launch made before (runtime/tiled.py)
        key = launch_key("launch", dim, block_dim, device, stream, adjoint, record_cmd, max_blocks)
        if key is not None and remembered(kernel, key, inputs, outputs):
            return None
    if adjoint:
        return launch_adjoint(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device, stream, block_dim)
    if tape_state.tracking and not record_cmd and not _tracked:  # a Tape is in use: versions, recording
        return _launch_tracked(kernel, dim, inputs, outputs, device, stream, record_tape, max_blocks, block_dim)
    if stream is not None:  # the stream decides the device; issue there instead of the current stream
        from .stream import on_stream

        with on_stream(stream, device):
            return launch(kernel, dim, inputs, outputs, device=stream.device, record_tape=record_tape,
                          record_cmd=record_cmd, max_blocks=max_blocks, block_dim=block_dim, _tracked=_tracked)
    values = [*inputs, *outputs] if outputs else inputs if type(inputs) is list else list(inputs)
    named_device = device
    if device is None:
        for v in values:
            if isinstance(v, array) and v.device is not None:
                device = v.device
                break
    if type(device) is not Device:
        device = get_device(device)
    try:
        generic = kernel._generic
    except AttributeError:
        raise LaunchError(f"wp.launch() needs a @wp.kernel, got {type(kernel).__name__}") from None
    if generic is not False:  # first launch, or a generic kernel: the specialisation for these arguments
        specialized = kernel.specialization_for(values)
        generic = kernel._generic  # known now: False for a plain kernel, so its first launch makes it native
        kernel = specialized
    if kernel.__dict__.get("_tw_tiles") is False:
        compiled = kernel.compiled(device)
    else:  # maybe a tile kernel: compiled per block shape
        compiled, block_dim = _compiled_for(kernel, device, dim, block_dim, backward=False)
    if kernel._tw_captures:  # globals compiled in: warn if one was rebound since
        check_captures(kernel)
    packer = compiled.packer
    if record_cmd or compiled.checks is not None or config.verify_fp:  # debug build / wp.config.verify_fp
        return _launch_checked(compiled, dim, values, device, block_dim, record_cmd)
    try:  # the hot path: memoised bounds (looked up here for exact ints only), arguments packed as bytes
        size, bounds = packer._bb[dim] if type(dim) is int or _exact_ints(dim) else packer.bounds_bytes(dim)
    except KeyError:
        size, bounds = packer.bounds_bytes(dim)
    args = packer.pack_bytes(values, device, bounds)
    submit = compiled.submit
    if submit is None:
        submit = compiled.submit = device.backend.launcher(compiled.handle)
    if size:
        tasks, threads = compiled.launch_dims(size, block_dim, max_blocks)
        if tasks == size:
            submit(args, tasks, threads)
        else:  # a grid not of the launch's size: the submit entry reads the size from the bounds
            device.backend.launch(compiled.handle, args, tasks, threads)
    if generic is False and compiled.launcher is not False and compiled.block is None:  # the next launch can go native
        native_launch.remember(kernel, compiled)
    elif key is not None and compiled.block is not None:
        remember(kernel, key, dim, block_dim, device, named_device)
    return None


def _valid_block_dim(block_dim) -> int:
    return block_dim if isinstance(block_dim, int) and 0 < block_dim <= 1024 else 0


def _ir(kernel, block_dim):
    """The kernel's IR for this launch's block size (some tile shapes type-check at that size only)."""
    return kernel.ir_for(block_dim) if _valid_block_dim(block_dim) else kernel.ir


def _compiled_for(kernel, device, dim, block_dim, backward):
    """``(compiled kernel, block size)``: tile kernels per block shape (runtime/tiled.py)."""
    from .tiled import block_shape, effective_block_dim, uses_tiles

    get = kernel.compiled_backward if backward else kernel.compiled
    if not uses_tiles(kernel, _valid_block_dim(block_dim)):
        return get(device), block_dim
    block_dim = effective_block_dim(block_dim, device)
    return get(device, block_shape(kernel, dim, block_dim)), block_dim


def _launch_tracked(kernel, dim, inputs, outputs, device, stream, record_tape, max_blocks, block_dim):
    """A launch while Tapes are in use: bump the versions of the arrays it writes, and record it
    (with the versions of the arrays it read) on the active tape."""
    from ..autodiff.access import param_access

    launch(kernel, dim, inputs, outputs, device=device, stream=stream, max_blocks=max_blocks, block_dim=block_dim,
           _tracked=True)
    values = [*inputs, *outputs]
    read, written = param_access(_ir(kernel.specialization_for(values), block_dim))
    for k in written:
        for a in tape_state.arrays_in(values[k]):
            a._bump_version()
    if record_tape and tape_state.active is not None:
        versions = [record_read(a) for k in read for a in tape_state.arrays_in(values[k])]
        tape_state.active.record_launch(kernel, dim, inputs, outputs, device, block_dim, versions)


def _launch_checked(compiled, dim, values, device, block_dim, record_cmd):
    """Launches that keep a ctypes argument struct: replayable ones, and those checked afterwards."""
    bounds = compiled.packer.bounds(dim)
    args = compiled.packer.pack(values, device, bounds)
    if record_cmd:
        return Launch(compiled, args, bounds.size, block_dim, list(values))
    if bounds.size:
        checked_launch(compiled, args, bounds.size, block_dim, values)
    return None


def launch_adjoint(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, device=None, stream=None,
                   block_dim=256):
    """The backward kernel over ``dim``: gradients flow from ``adj_outputs`` into ``adj_inputs``
    (arrays accumulate; scalar parameters' adjoints are not returned, as in Warp)."""
    if stream is not None:
        from .stream import on_stream

        with on_stream(stream, device):
            return launch_adjoint(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, stream.device,
                                  None, block_dim)
    values = [*inputs, *outputs]
    grads = [*_padded(adj_inputs, len(inputs), "adj_inputs"), *_padded(adj_outputs, len(outputs), "adj_outputs")]
    if device is None:
        device = next((v.device for v in values if isinstance(v, array) and v.device is not None), None)
    if type(device) is not Device:
        device = get_device(device)
    if getattr(kernel, "_generic", None) is None and not hasattr(kernel, "specialization_for"):
        raise LaunchError(f"wp.launch() needs a @wp.kernel, got {type(kernel).__name__}")
    kernel = kernel.specialization_for(values)
    compiled, block_dim = _compiled_for(kernel, device, dim, block_dim, backward=True)
    names_ = _ir(kernel, block_dim).param_names
    if len(values) != len(names_):
        raise LaunchError(f"kernel takes {len(names_)} argument(s) ({', '.join(names_)}), got {len(values)}")
    grads = [_adjoint_value(v, g, n) for v, g, n in zip(values, grads, names_)]
    packer = compiled.packer
    bounds = packer.bounds(dim)
    args = packer.pack([*values, *grads], device, bounds)
    if bounds.size:
        device.backend.launch(compiled.handle, ctypes.addressof(args), *compiled.launch_dims(bounds.size, block_dim))


def _padded(given, n, what):
    given = list(given or ())
    if len(given) > n:
        raise LaunchError(f"{what} has {len(given)} entries for {n} parameters")
    return given + [None] * (n - len(given))


def _adjoint_value(value, grad, name):
    """What the backward kernel gets as ``adj_<name>``: a gradient array of the primal's shape."""
    if isinstance(value, array):
        if grad is None:
            return None
        if not isinstance(grad, array) or grad.shape != value.shape:
            got = grad.shape if isinstance(grad, array) else type(grad).__name__
            raise LaunchError(f"argument 'adj_{name}' must be an array of shape {value.shape}, got {got}")
        return grad
    if T.is_struct(type(value)):
        if isinstance(grad, type(value)):  # an adjoint struct given (adj_inputs, the Tape)
            return grad
        return value._tw_adjoint() if hasattr(value, "_tw_adjoint") else type(value)()
    return value  # scalars: passed for symmetry, the kernel does not return their adjoints
