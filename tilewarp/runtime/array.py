"""``wp.array``: typed, strided memory on a device, with an optional gradient array.

``wp.array(dtype=wp.vec3)`` without data or shape is a kernel parameter annotation (as in Warp);
with data, shape or ptr it owns or views memory. The element layout matches the C++ types, so a
kernel receives a ``tw::array_t<T, D>`` descriptor pointing straight at this memory.
"""
from __future__ import annotations

import functools
import math
import operator
import typing
from typing import Any

import numpy as np

from ..language import structs
from ..language import types as T
from ..errors import LaunchError
from . import retired
from .device import Device, get_device
from ..frontend.local_arrays import local_zeros
from . import copy_adjoint, cpu_capture, host_views


class _Allocation:
    """Frees device memory when the last array viewing it goes away."""

    __slots__ = ("backend", "ptr", "writes", "host_views", "pending_reads", "__weakref__")

    def __init__(self, backend, nbytes):
        self.backend, self.ptr = backend, backend.alloc(max(nbytes, 1))
        if retired.ids:  # the address of a destroyed object's descriptor, in use again
            retired.reuse(self.ptr)
        self.writes = 0  # version counter of the memory (array.version)
        self.host_views, self.pending_reads = 0, None  # runtime/host_views.py

    def __del__(self):
        try:
            self.backend.free(self.ptr)
        except Exception:  # interpreter shutdown: the driver may already be gone
            pass


def _infer_dtype(np_dtype) -> type:
    return T.scalar_type(np_dtype)


#: kernels read an array's extents as int32 (``tw::array_t``) and its byte strides as int64
MAX_EXTENT = 2**31 - 1
MAX_BYTES = 2**63 - 1


def _as_extent(s, shape):
    """One extent as a Python int. Floats, bools, strings and None are refused: int(2.7) would
    silently make 2 elements of what was likely a computed size (Warp truncates; its own errors for
    such shapes, 2.5 or None, are TypeErrors)."""
    if not isinstance(s, (bool, np.bool_)):
        try:
            return operator.index(s)
        except TypeError:
            pass
    raise TypeError(f"array shape {shape!r}: extents must be ints, got {s!r} ({type(s).__name__})")


def _shape_tuple(shape) -> tuple:
    if type(shape) is int:  # the common spellings first: views and wp.zeros(n) go through here
        dims = (shape,)
    elif type(shape) is tuple and all(type(s) is int for s in shape):
        dims = shape
    elif isinstance(shape, np.integer):
        dims = (int(shape),)
    else:
        try:
            items = tuple(shape)
        except TypeError:
            raise TypeError(f"array shape must be an int or a tuple of ints, got {shape!r} "
                            f"({type(shape).__name__})") from None
        dims = tuple(_as_extent(s, shape) for s in items)
    if not 1 <= len(dims) <= 4:
        raise ValueError(f"arrays have 1 to 4 dimensions, got shape {dims}")
    for k, s in enumerate(dims):
        if s < 0:
            raise ValueError(f"negative array shape {dims}")
        if s > MAX_EXTENT:
            raise ValueError(f"array shape {dims}: dimension {k} has extent {s}, but kernels read extents as "
                             f"signed 32-bit ints (the array descriptor), so each must be below 2**31")
    return dims


class array:
    """A typed array on a device (Warp's ``wp.array``)."""

    def __init__(self, data=None, dtype: Any = Any, shape=None, strides=None, length=None, ptr=None,
                 capacity=None, device=None, pinned=False, copy=True, owner=False, deleter=None, ndim=None,
                 grad=None, requires_grad=False, retain_grad=False):
        self._desc = None
        self._tw_token = None  # (signature, descriptor bytes) for native launches, dropped with _desc
        self._grad = None
        self._requires_grad = False
        self._owner = None
        self.pinned = False
        if length is not None and shape is None:
            shape = (length,)
        if data is None and shape is None and ptr is None:  # an annotation: wp.array(dtype=float, ndim=2)
            self.dtype, self.ndim, self.shape, self.ptr, self.device = dtype, ndim or 1, None, 0, None
            return
        self.device = get_device(device) if device is not None or not isinstance(data, array) else data.device
        self.pinned = bool(pinned) and self.device.is_cpu  # page-locked host memory when a GPU exists
        if isinstance(data, array):
            data = data.numpy()
        if data is not None:
            self._from_data(data, dtype, shape)
        else:
            self.dtype = T.float32 if dtype is Any else T.value_type(dtype)
            self._set_layout(_shape_tuple(shape), strides)
            if ptr is not None:
                self.ptr = int(ptr)
            else:
                self._allocate()
                self.zero_()
        self._retain_grad = False
        self.requires_grad = requires_grad
        self.retain_grad = retain_grad
        if grad is not None:
            self._grad = grad

    # ---- construction ------------------------------------------------------------------------

    def _from_data(self, data, dtype, shape):
        # without a dtype, numpy's inference decides, as in Warp: Python floats -> float64, ints -> int64
        self.dtype = _infer_dtype(np.asarray(data).dtype) if dtype is Any else T.value_type(dtype)
        inner = getattr(self.dtype, "_wp_shape_", ())
        src = np.ascontiguousarray(structs.to_numpy(data, self.dtype) if T.is_struct(self.dtype) else
                                   T.to_storage(T.scalar_of(self.dtype), data))
        if inner:
            n_inner = int(np.prod(inner))
            if src.ndim > len(inner) and src.shape[src.ndim - len(inner):] == inner:  # (N, 3) -> N vec3, N may be 0
                outer = src.shape[: src.ndim - len(inner)]
            elif src.size == 0:
                outer = (0,)
            elif src.ndim == len(inner) and src.shape == inner:
                outer = (1,)
            elif src.ndim and src.shape[-1] % n_inner == 0:  # (N, 9) -> N mat33; (N, 3k) -> (N, k) vec3
                k = src.shape[-1] // n_inner
                outer = (src.shape[:-1] + ((k,) if k != 1 else ())) or (1,)
            elif shape is not None and src.size % n_inner == 0:
                outer = None
            else:
                raise ValueError(f"data of shape {src.shape} cannot be viewed as {T.type_name(self.dtype)} "
                                 f"elements: the inner dimensions must be {inner} or a multiple of {n_inner}")
        else:
            outer = src.shape if src.ndim else (1,)
        self._set_layout(_shape_tuple(shape if shape is not None else outer), None)
        if math.prod(self.shape) * math.prod(inner) != src.size:
            raise ValueError(f"data of size {src.size} does not fit shape {self.shape} of {T.type_name(self.dtype)}")
        self._allocate()
        self.device.backend.copy_htod(self.ptr, src.ctypes.data, src.nbytes)

    def _set_layout(self, shape, strides):
        item = T.type_size(self.dtype)
        nbytes = math.prod(shape) * item  # Python ints: np.prod wraps and would allocate 0 bytes
        if nbytes > MAX_BYTES:
            raise ValueError(f"array shape {shape} of {T.type_name(self.dtype)} needs {nbytes} bytes, more than "
                             f"the 2**63 - 1 that kernels' 64-bit byte offsets can address")
        self.shape = shape
        self.ndim = len(shape)
        if strides is None:
            strides, acc = [], item
            for s in reversed(shape):
                strides.insert(0, acc)
                acc *= s
        self.strides = tuple(int(s) for s in strides)

    def _allocate(self):
        backend = self.device.backend
        if self.pinned:
            from .device import pinned_backend

            backend = pinned_backend() or backend
        self._owner = _Allocation(backend, self.capacity)
        self.ptr = self._owner.ptr

    # ---- properties ----------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def capacity(self) -> int:
        return self.size * T.type_size(self.dtype)

    @property
    def is_contiguous(self) -> bool:
        return self.strides == array._contiguous_strides(self.shape, T.type_size(self.dtype))

    @staticmethod
    def _contiguous_strides(shape, item):
        out, acc = [], item
        for s in reversed(shape):
            out.insert(0, acc)
            acc *= s
        return tuple(out)

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        """As in Warp: assigning a gradient array turns gradients on (None turns them off); it must
        match the array's dtype, shape and device."""
        if value is not None:
            for what, mine, theirs in (("dtype", self.dtype, value.dtype), ("shape", self.shape, value.shape),
                                       ("device", self.device, value.device)):
                if mine != theirs:
                    raise ValueError(f"the given gradient array is incompatible: expected {what} {mine}, got {theirs}")
        self._grad = value
        self._requires_grad = value is not None
        self._desc = self._tw_token = None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        if value and self._grad is None:
            self._grad = zeros(self.shape, dtype=self.dtype, device=self.device)
        self._requires_grad = bool(value)
        if not value:
            self._retain_grad = False
        self._desc = self._tw_token = None

    @property
    def retain_grad(self) -> bool:
        """Keep this array's gradient through the backward pass instead of consuming it where the
        array is overwritten (Warp 1.19's flag; needs ``requires_grad``)."""
        return getattr(self, "_retain_grad", False)

    @retain_grad.setter
    def retain_grad(self, value: bool):
        if value and not self._requires_grad:
            raise ValueError("retain_grad=True needs requires_grad=True (the array has no gradient to retain)")
        self._retain_grad = bool(value)

    def __class_getitem__(cls, params):
        """``wp.array[float]``, ``wp.array[wp.vec3, 2]``: an annotation, as in Warp 1.19."""
        dtype, ndim = subscript_params("array", params)
        return cls(dtype=dtype, ndim=ndim)

    def __tw_annotation__(self):
        return T.ArrayType(T.value_type(self.dtype if self.dtype is not Any else T.float32), self.ndim)

    def __ctype__(self):
        """The ``tw::array_t`` descriptor (cached; rebuilt when the grad changes)."""
        if self._desc is None:
            d = T.array_descriptor(self.ndim)()
            d.data = self.ptr
            d.grad = self._grad.ptr if self._grad is not None else 0
            d.shape[:] = self.shape
            d.strides[:] = self.strides
            self._desc = d
        return self._desc

    # interop (runtime/interop.py): zero-copy views for other libraries
    @property
    def __cuda_array_interface__(self):
        from .interop import cuda_array_interface

        return cuda_array_interface(self)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        from .interop import array_dlpack

        return array_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        from .interop import dlpack_device

        return dlpack_device(self)

    def __len__(self):
        return self.shape[0]

    def __str__(self):
        if self.shape is None:
            return repr(self)
        return str(self.numpy())

    def __repr__(self):
        if self.shape is None:
            return f"array(dtype={T.type_name(self.dtype)}, ndim={self.ndim})"
        return f"array({self.numpy()!r}, dtype={T.type_name(self.dtype)}, device='{self.device}')"

    # ---- host access ---------------------------------------------------------------------------

    def _np_dtype(self):
        return T.scalar_of(self.dtype)._np_

    def _full_shape(self):
        return self.shape + getattr(self.dtype, "_wp_shape_", ())

    def _full_strides(self):
        inner = getattr(self.dtype, "_wp_shape_", ())
        item = self._np_dtype().itemsize
        return self.strides + array._contiguous_strides(inner, item)

    def _extent(self) -> tuple[int, int]:
        """Byte offsets (lo, hi) from ptr covering every element: [ptr + lo, ptr + hi) holds the whole
        (possibly strided, possibly negatively strided) array; (0, 0) when it is empty."""
        if self.size == 0:
            return 0, 0
        lo = sum((s - 1) * st for s, st in zip(self.shape, self.strides) if st < 0)
        hi = sum((s - 1) * st for s, st in zip(self.shape, self.strides) if st > 0)
        return lo, hi + T.type_size(self.dtype)

    def _host_window(self, host: np.ndarray, lo: int) -> np.ndarray:
        """The array's elements as a numpy view into ``host``, a copy of bytes [ptr + lo, ...)."""
        return np.ndarray(self._full_shape(), dtype=self._np_dtype(), buffer=host, offset=-lo,
                          strides=self._full_strides())

    def numpy(self) -> np.ndarray:
        """A numpy view sharing memory (CPU) or a host copy (CUDA; waits for pending work). bfloat16
        elements come as their uint16 bits (numpy has no bfloat16), as in Warp."""
        if self.device.is_cpu:
            host = np.asarray(_HostView(self))  # struct elements come through as raw bytes ('V<n>')
            return host.view(self._np_dtype()) if T.is_struct(self.dtype) else host
        lo, hi = self._extent()
        if hi == lo:
            return np.zeros(self._full_shape(), dtype=self._np_dtype())
        host = np.empty(hi - lo, dtype=np.uint8)
        self.device.backend.copy_dtoh(host.ctypes.data, self.ptr + lo, hi - lo)
        return self._host_window(host, lo).copy()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a.astype(dtype) if dtype is not None else a

    def list(self):
        values = self.numpy().reshape(self.size, -1) if getattr(self.dtype, "_wp_shape_", ()) else self.numpy()
        if T.scalar_of(self.dtype) is T.bfloat16:  # bfloat16 values, not their bits (as Warp)
            values = T.from_storage(T.bfloat16, values)
            if self.dtype is T.bfloat16:
                return [T.bfloat16(v) for v in values.reshape(-1).tolist()]
        if T.is_composite(self.dtype):
            return [self.dtype(*row) for row in values]
        if T.is_struct(self.dtype):
            return [structs.from_record(self.dtype, r) for r in values.reshape(-1)]
        return values.reshape(-1).tolist()

    def assign(self, src):
        """Copy values (numpy data, a list or another array) into this array."""
        if isinstance(src, array):
            copy(self, src)
            return
        values = np.broadcast_to(T.to_storage(T.scalar_of(self.dtype), src), self._full_shape())
        self._write_host(np.ascontiguousarray(values))

    def _write_host(self, values: np.ndarray):
        self._bump_version()
        if self.is_contiguous:
            self.device.backend.copy_htod(self.ptr, values.ctypes.data, values.nbytes)
        elif self.device.is_cpu:
            self.numpy()[...] = values
        else:  # strided device memory: read-modify-write the bytes it covers
            lo, hi = self._extent()
            if hi == lo:
                return
            host = np.empty(hi - lo, dtype=np.uint8)
            self.device.backend.copy_dtoh(host.ctypes.data, self.ptr + lo, hi - lo)
            self._host_window(host, lo)[...] = values
            self.device.backend.copy_htod(self.ptr + lo, host.ctypes.data, hi - lo)

    def fill_(self, value):
        """Set every element to ``value`` (a scalar, or a vector/matrix for composite arrays)."""
        if self.size == 0:
            return
        if cpu_capture.recording:  # a CPU graph capture replays the memset too
            cpu_capture.record(self.device, functools.partial(self.fill_, value))
        v = structs.to_numpy(value, self.dtype).reshape(()) if T.is_struct(self.dtype) else T.to_storage(
            T.scalar_of(self.dtype), value.numpy() if hasattr(value, "numpy") else value)
        raw = np.ascontiguousarray(v).reshape(-1).view(np.uint8)
        if self.is_contiguous and not raw.any():  # zero bytes: memset
            self._bump_version()
            self.device.backend.memset(self.ptr, 0, self.capacity)
            return
        word = _repeating_word(raw) if self.is_contiguous else None
        if word is not None and self.capacity % word[1] == 0:  # one 2- or 4-byte word over and over (-1, 1.0, a vec3 of one value): a memset too
            self._bump_version()
            self.device.backend.memset_words(self.ptr, *word, self.capacity)
            return
        self._write_host(np.ascontiguousarray(np.broadcast_to(v, self._full_shape())))

    def zero_(self):
        if self.size and self.is_contiguous and not cpu_capture.recording:  # the common case: one memset
            self._bump_version()
            self.device.backend.memset(self.ptr, 0, self.capacity)
            return
        self.fill_(0)

    # ---- version counter (beyond Warp: a Tape detects inputs overwritten after their launch) ----

    @property
    def version(self) -> int:
        """Bumped by every write to the memory this array views (launch outputs, assign, fill_,
        copies); views of one allocation share it."""
        memory = self._owner if self._owner is not None else self
        return getattr(memory, "writes", 0)

    def _bump_version(self):
        memory = self._owner if self._owner is not None else self
        memory.writes = getattr(memory, "writes", 0) + 1

    def to(self, device):
        device = get_device(device)
        return self if device == self.device else clone(self, device=device)

    # ---- views -------------------------------------------------------------------------------

    def transpose(self, axes=None):
        """A view with the dimensions in the order ``axes`` (default: reversed), as Warp's."""
        axes = tuple(reversed(range(self.ndim))) if axes is None else tuple(int(a) for a in axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"transpose: axes {axes} are not a permutation of the {self.ndim} dimensions")
        return self._view([self.shape[a] for a in axes], [self.strides[a] for a in axes],
                          grad=lambda g: g.transpose(axes))

    def _view(self, shape, strides, dtype=None, grad=None):
        """A view of this array's memory, sharing its version counter; ``grad(g)`` makes the same view
        of the gradient ``g`` (whose strides may differ), None for a view without one."""
        view = array(ptr=self.ptr, dtype=dtype or self.dtype, shape=tuple(shape), strides=tuple(strides),
                     device=self.device)
        view._owner = self._owner or self
        if grad is not None and self._grad is not None:
            view._grad = grad(self._grad)
            view._requires_grad = self._requires_grad
        return view

    def reshape(self, shape):
        """A view with another shape of the same size (one extent may be -1), as Warp's: contiguous
        arrays only."""
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        if shape.count(-1) == 1:
            known = int(np.prod([s for s in shape if s != -1]))
            shape = tuple(self.size // known if known and s == -1 else s for s in shape)
        if int(np.prod(shape)) != self.size or any(s < 0 for s in shape):
            raise RuntimeError(f"cannot reshape array of shape {self.shape} (size {self.size}) into shape "
                               f"{shape} (size {int(np.prod(shape))})")
        if not self.is_contiguous:
            raise RuntimeError("Reshaping non-contiguous arrays is unsupported.")
        return self._view(shape, array._contiguous_strides(shape, T.type_size(self.dtype)),
                          grad=lambda g: g.reshape(shape))

    def flatten(self):
        """A 1-d view of a contiguous array."""
        if not self.is_contiguous:
            raise RuntimeError("Flattening non-contiguous arrays is unsupported.")
        return self.reshape((self.size,))

    def contiguous(self):
        """This array if contiguous, else a contiguous copy."""
        return self if self.is_contiguous else clone(self)

    def view(self, dtype):
        """The same memory as elements of ``dtype``: of the same size, or the scalar type of this
        array's vectors/matrices (a trailing dimension per component)."""
        dtype = T.value_type(dtype)
        if T.type_size(dtype) == T.type_size(self.dtype):
            return self._view(self.shape, self.strides, dtype)
        inner = getattr(self.dtype, "_wp_shape_", ())
        if inner and dtype is T.scalar_of(self.dtype) and self.ndim + len(inner) <= 4:
            item = T.type_size(dtype)
            return self._view(self.shape + inner, self.strides + array._contiguous_strides(inner, item), dtype)
        raise TypeError(f"cannot view an array of {T.type_name(self.dtype)} as {T.type_name(dtype)}: "
                        f"the element sizes differ")

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > self.ndim:
            raise IndexError(f"{len(key)} indices for a {self.ndim}-d array")
        ptr, shape, strides = self.ptr, [], []
        for dim, k in enumerate(key + (slice(None),) * (self.ndim - len(key))):
            n, st = self.shape[dim], self.strides[dim]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                ptr += start * st
                shape.append(len(range(start, stop, step)))
                strides.append(st * step)
            else:
                k = int(k) + (n if int(k) < 0 else 0)
                if not 0 <= k < n:
                    raise IndexError(f"index {k} out of range for dimension {dim} of size {n}")
                ptr += k * st
        if not shape:
            return self.numpy()[key]
        view = array(ptr=ptr, dtype=self.dtype, shape=tuple(shape), strides=tuple(strides), device=self.device)
        view._owner = self._owner or self
        if self._grad is not None:
            view._grad = self._grad[key]  # the same offset into the gradient's own memory
            view._requires_grad = self._requires_grad
        return view


T.register_host_array(array)  # the language and compiler layers recognise launch values by it


def _repeating_word(raw: np.ndarray):
    """``(word, size)`` when the element bytes ``raw`` are one 4- or 2-byte word repeated (the 2-byte
    form only for 2-byte patterns: a memset takes whole words), else None."""
    for size, dt in ((4, np.uint32), (2, np.uint16)):
        if raw.size % size == 0:
            words = raw.view(dt)
            if (words == words[0]).all() and (size == 2 or raw.size >= 4):
                return int(words[0]), size
    return None


def _strided_copy(dst: array, src: array):
    """Elementwise copy between arrays of one shape and dtype, any strides, same or other device."""
    dst._bump_version()
    if dst.is_contiguous and src.is_contiguous:
        n = src.capacity
        if dst.device.is_cpu and src.device.is_cpu:
            dst.device.backend.copy_dtod(dst.ptr, src.ptr, n)
        elif src.device.is_cpu:
            dst.device.backend.copy_htod(dst.ptr, src.ptr, n)
        elif dst.device.is_cpu:
            src.device.backend.copy_dtoh(dst.ptr, src.ptr, n)
        elif dst.device == src.device:
            dst.device.backend.copy_dtod(dst.ptr, src.ptr, n)
        else:
            dst.assign(src.numpy())
        return
    dst._write_host(np.ascontiguousarray(src.numpy()))


class _HostView:
    """Exposes CPU array memory to numpy; numpy keeps this (and so the array) alive as ``base``."""

    def __init__(self, arr: array):
        self.owner = arr
        self.__array_interface__ = {
            "version": 3, "shape": arr._full_shape(), "typestr": arr._np_dtype().str,
            "data": (arr.ptr if arr.size else 0, False), "strides": arr._full_strides()}
        host_views.view_opened(arr)  # writable: the Tape checksums what recorded launches read

    def __del__(self):
        host_views.view_closed(self.owner)


# ---- creation functions (Warp's names and defaults) ------------------------------------------------


def _creation_args(shape, kwargs, what):
    """Warp's creation functions take ``n`` (a length, overriding ``shape``) and ``retain_grad``;
    anything else is a mistake worth reporting rather than ignoring."""
    n = kwargs.pop("n", None)
    retain_grad = kwargs.pop("retain_grad", False)
    if kwargs:
        raise TypeError(f"wp.{what}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if n is not None:
        shape = (n,)
    return (shape if shape is not None else 0), retain_grad


def empty(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, **kwargs) -> array:
    shape, retain_grad = _creation_args(shape, kwargs, "empty")
    return array(shape=shape, dtype=dtype, device=device, requires_grad=requires_grad, pinned=pinned,
                 retain_grad=retain_grad)


def uninitialized(shape, dtype=float, device=None, requires_grad=False) -> array:
    """Memory left as allocated (no zero fill): for outputs a kernel then writes entirely, as the
    block programs' outputs every block covers (tilewarp/pallas/)."""
    # the fields array.__init__ sets on its allocating path, without its argument handling (a block
    # program's call allocates its outputs every time: 12 of its 60 us on an H100 host went here)
    a = array.__new__(array)
    a._desc = a._tw_token = a._grad = None
    a._requires_grad = a._retain_grad = a.pinned = False
    a.device = device if type(device) is Device else get_device(device)
    a.dtype = T.value_type(dtype)
    a._set_layout(_shape_tuple(shape), None)
    a._owner = _Allocation(a.device.backend, max(a.capacity, 1))
    a.ptr = a._owner.ptr
    if requires_grad:
        a.requires_grad = True
    return a


def zeros(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, **kwargs) -> array:
    shape, retain_grad = _creation_args(shape, kwargs, "zeros")
    return empty(shape, dtype, device, requires_grad, pinned, retain_grad=retain_grad)  # new memory is zeroed


def full(shape=None, value=0, dtype=Any, device=None, requires_grad=False, pinned=False, **kwargs) -> array:
    shape, retain_grad = _creation_args(shape, kwargs, "full")
    if dtype is Any:
        dtype = type(value) if T.is_composite(type(value)) or T.is_struct(type(value)) else (
            T.bool_ if isinstance(value, bool) else T.int32 if isinstance(value, int) else T.float32)
    a = empty(shape, dtype, device, requires_grad, pinned, retain_grad=retain_grad)
    a.fill_(value)
    return a


def ones(shape=None, dtype=float, device=None, requires_grad=False, pinned=False, **kwargs) -> array:
    shape, retain_grad = _creation_args(shape, kwargs, "ones")
    return full(shape, 1, dtype, device, requires_grad, pinned, retain_grad=retain_grad)


def _like(src: array, device, requires_grad):
    return dict(shape=src.shape, dtype=src.dtype, device=device if device is not None else src.device,
                requires_grad=src.requires_grad if requires_grad is None else requires_grad)


def empty_like(src: array, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    return empty(**_like(src, device, requires_grad), pinned=pinned, retain_grad=retain_grad)


zeros._tw_lower_call = local_zeros  # wp.zeros(shape, dtype) in kernel code: a fixed-size local array


def zeros_like(src: array, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    return zeros(**_like(src, device, requires_grad), pinned=pinned, retain_grad=retain_grad)


def ones_like(src: array, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    return ones(**_like(src, device, requires_grad), pinned=pinned, retain_grad=retain_grad)


def full_like(src: array, value, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    return full(value=value, **_like(src, device, requires_grad), pinned=pinned, retain_grad=retain_grad)


def clone(src: array, device=None, requires_grad=None, pinned=False, retain_grad=False) -> array:
    dst = empty(**_like(src, device, requires_grad), pinned=pinned, retain_grad=retain_grad)
    _strided_copy(dst, src)
    copy_adjoint.record(dst, src)
    return dst


def copy(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0, stream=None) -> None:
    """Copy ``count`` elements (all when 0) between arrays, across devices if needed; on ``stream``
    (a CUDA Stream) instead of the device's current stream when given."""
    if stream is not None:
        from .stream import ScopedStream

        with ScopedStream(stream, sync_enter=False):
            return copy(dest, src, dest_offset, src_offset, count)
    if dest.dtype != src.dtype:
        raise LaunchError(f"copy between arrays of {T.type_name(src.dtype)} and {T.type_name(dest.dtype)}")
    if dest_offset or src_offset or count:
        count = count or min(src.size - src_offset, dest.size - dest_offset)
        if count < 0 or src_offset < 0 or dest_offset < 0 or src_offset + count > src.size or \
                dest_offset + count > dest.size:
            raise LaunchError(f"copy of {count} elements out of bounds (src size {src.size}, dest size {dest.size})")
        try:  # logical elements, so 1-d strided views work too
            dest, src = copy_adjoint.window(dest, dest_offset, count), copy_adjoint.window(src, src_offset, count)
        except ValueError as e:
            raise LaunchError(f"wp.copy(): {e}") from None
    elif dest.size != src.size:
        raise LaunchError(f"copy between arrays of {src.size} and {dest.size} elements")
    elif dest.shape != src.shape:  # same size: view the contiguous one in the other's shape
        if dest.is_contiguous:
            dest = dest.reshape(src.shape)
        elif src.is_contiguous:
            src = src.reshape(dest.shape)
        else:
            raise LaunchError(f"copy between non-contiguous arrays of shapes {src.shape} and {dest.shape}")
    _strided_copy(dest, src)
    copy_adjoint.record(dest, src)
    if cpu_capture.recording:
        cpu_capture.record(dest.device, functools.partial(_strided_copy, dest, src))


def from_numpy(arr, dtype=None, shape=None, device=None, requires_grad=False) -> array:
    """An array copied from numpy data. Without a dtype, a 2-d ``(N, n)`` array becomes N vectors of
    n components and a 3-d ``(N, r, c)`` array N r x c matrices, as in Warp."""
    if dtype is None:
        src = np.asarray(arr)
        scalar = _infer_dtype(src.dtype)
        if src.ndim == 2:
            dtype = T.vector(src.shape[1], scalar)
        elif src.ndim == 3:
            dtype = T.matrix(src.shape[1:], scalar)
        else:
            dtype = scalar
    return array(arr, dtype=dtype, shape=shape, device=device, requires_grad=requires_grad)


def subscript_params(what: str, params, ndim: int = 1) -> tuple:
    """``(dtype, ndim)`` from ``wp.array[dtype]`` / ``wp.array[dtype, ndim]`` (ndim may be ``Literal[n]``)."""
    if not isinstance(params, tuple):
        return params, ndim
    if len(params) != 2:
        raise TypeError(f"wp.{what} expects 1 or 2 type parameters, got {len(params)}")
    dtype, n = params
    n = typing.get_args(n)[0] if typing.get_args(n) else n
    if not isinstance(n, int):
        raise TypeError(f"ndim must be an integer, got {n!r}")
    if not 1 <= n <= 4:
        raise ValueError(f"ndim must be between 1 and 4, got {n}")
    return dtype, n


class _Alias:
    """``wp.array2d``: called like ``wp.array(..., ndim=2)``, or subscripted (``wp.array2d[float]``)."""

    def __init__(self, ndim):
        self.ndim, self.__name__ = ndim, f"array{ndim}d"

    def __call__(self, data=None, dtype=Any, **kwargs):
        if data is None:
            return array(dtype=dtype, ndim=self.ndim, **kwargs)
        return array(data, dtype=dtype, ndim=self.ndim, **kwargs)  # wp.array2d(np_data): Warp's data first

    def __getitem__(self, dtype):
        return array(dtype=dtype, ndim=self.ndim)

    def __repr__(self):
        return f"wp.{self.__name__}"


def _annotation(ndim):
    return _Alias(ndim)


array1d, array2d, array3d, array4d = (_annotation(n) for n in (1, 2, 3, 4))
