"""Zero-copy exchange with other array libraries: DLPack both ways, ``__cuda_array_interface__``,
and PyTorch (``wp.from_torch``/``wp.to_torch``, imported only when called).

DLPack tensors are built and read through ctypes (the legacy, unversioned ``"dltensor"`` capsule,
which every consumer accepts). Exported tensors keep their array alive in ``_exported`` until the
consumer calls the deleter; imported ones keep the producer's capsule alive through the array's
owner and call its deleter when the last view goes away.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..language import types as T
from .array import array
from .device import get_device

kDLCPU, kDLCUDA, kDLCUDAHost = 1, 2, 3
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}          # numpy kind -> DLDataTypeCode
_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}
kDLBfloat = 4  # bfloat16 has a code of its own (its numpy storage is uint16)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

def _capi(name, restype, *argtypes):
    """A private prototype of a Python C-API function: ``ctypes.pythonapi``'s function objects are
    shared, and other libraries (warp among them) set their own argtypes on them."""
    addr = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
    return ctypes.PYFUNCTYPE(restype, *argtypes)(addr)  # PYFUNCTYPE: the GIL stays held


_vp, _cp, _po = ctypes.c_void_p, ctypes.c_char_p, ctypes.py_object
_capsule_new = _capi("PyCapsule_New", _po, _vp, _cp, _vp)
_capsule_is_valid = _capi("PyCapsule_IsValid", ctypes.c_int, _vp, _cp)  # raw pointer: used in destructors
_capsule_get_raw = _capi("PyCapsule_GetPointer", _vp, _vp, _cp)
_capsule_get = _capi("PyCapsule_GetPointer", _vp, _po, _cp)
_capsule_set_name = _capi("PyCapsule_SetName", ctypes.c_int, _po, _cp)

_exported: dict = {}  # DLManagedTensor address -> (struct, shape, strides, array): alive until deleted


@_Deleter
def _delete_exported(ptr):
    _exported.pop(ptr, None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    # an unconsumed capsule still owns its tensor (a consumer renames it "used_dltensor")
    if _capsule_is_valid(capsule, b"dltensor"):
        _exported.pop(_capsule_get_raw(capsule, b"dltensor"), None)


# ---- export ---------------------------------------------------------------------------------------


def _dl_dtype(scalar) -> DLDataType:
    dt = scalar._np_
    return DLDataType(kDLBfloat if scalar is T.bfloat16 else _CODES[dt.kind], dt.itemsize * 8, 1)


def dlpack_device(a: array) -> tuple:
    if a.device is None:
        raise RuntimeError("Array has no device assigned")
    if a.device.is_cuda:
        return (kDLCUDA, a.device.ordinal)
    # pinned memory too is reported as plain CPU memory (Warp says kDLCUDAHost, which CPU builds
    # of torch reject); it is host-addressable either way
    return (kDLCPU, 0)


def to_dlpack(a: array):
    """A DLPack capsule viewing ``a`` (vector/matrix components become trailing dimensions)."""
    scalar = T.scalar_of(a.dtype)
    item = scalar._np_.itemsize
    shape, strides = a._full_shape(), a._full_strides()
    if any(s % item for s in strides):
        raise RuntimeError("DLPack needs strides that are a whole number of elements")
    n = len(shape)
    c_shape = (ctypes.c_int64 * max(n, 1))(*shape)
    c_strides = (ctypes.c_int64 * max(n, 1))(*[s // item for s in strides])
    dev_type, dev_id = dlpack_device(a)
    m = DLManagedTensor()
    m.dl_tensor = DLTensor(a.ptr or None, DLDevice(dev_type, dev_id), n, _dl_dtype(scalar),
                           ctypes.cast(c_shape, ctypes.POINTER(ctypes.c_int64)),
                           ctypes.cast(c_strides, ctypes.POINTER(ctypes.c_int64)), 0)
    m.deleter = _delete_exported
    addr = ctypes.addressof(m)
    _exported[addr] = (m, c_shape, c_strides, a)
    return _capsule_new(addr, b"dltensor", ctypes.cast(_capsule_destructor, ctypes.c_void_p).value)


def array_dlpack(a: array, stream=None, max_version=None, dl_device=None, copy=None):
    """``array.__dlpack__``: for CUDA arrays, the consumer's ``stream`` first waits (on the device)
    for the work issued so far on the array's device's current stream."""
    if copy:
        raise BufferError("tilewarp arrays export by reference only (copy=True is not supported)")
    if a.device is None:
        raise RuntimeError("Array has no device assigned")
    if a.device.is_cuda:
        if stream != -1:
            if stream is None:
                stream = 1  # CU_STREAM_LEGACY
            elif not isinstance(stream, int) or stream < -1:
                raise TypeError("DLPack stream must be None or an integer >= -1")
            current = a.device.stream
            if stream != current.cuda_stream:
                ev = current.cached_event
                current.record_event(ev)
                a.device.backend.wait_event(stream, ev.cuda_event)
    elif stream not in (None, -1):
        raise TypeError("DLPack stream must be None or -1 for CPU device")
    else:  # a writable host view whose lifetime the consumer owns: the Tape checksums from now on
        from .host_views import view_opened

        view_opened(a, permanent=True)
    return to_dlpack(a)


def cuda_array_interface(a: array) -> dict:
    """``__cuda_array_interface__`` (version 3) of a CUDA array; consumers synchronise with
    ``stream``, the device's current stream."""
    if a.device is None or not a.device.is_cuda:
        raise AttributeError(f"__cuda_array_interface__ is not supported because device is {a.device}")
    s = a.device.stream.cuda_stream
    return {"data": (a.ptr, False), "shape": a._full_shape(), "strides": a._full_strides(),
            "typestr": a._np_dtype().str, "version": 3, "stream": s if s else 1}


def array_interface(a: array) -> dict:
    if a.device is None or not a.device.is_cpu:
        raise AttributeError(f"__array_interface__ not supported because device is {a.device}")
    return {"data": (a.ptr if a.size else 0, False), "shape": a._full_shape(), "strides": a._full_strides(),
            "typestr": a._np_dtype().str, "version": 3}


# ---- import ---------------------------------------------------------------------------------------


class _Imported:
    """Owns an imported DLManagedTensor: calls the producer's deleter when the arrays go away."""

    __slots__ = ("managed", "writes", "host_views", "pending_reads", "__weakref__")

    def __init__(self, managed):
        self.managed = managed
        self.writes = 0  # version counter of the memory (array.version)

    def __del__(self):
        m = self.managed
        if m and m.contents.deleter:
            m.contents.deleter(ctypes.cast(m, ctypes.c_void_p).value)


def _device_of(dev: DLDevice):
    if dev.device_type in (kDLCPU, kDLCUDAHost):
        return get_device("cpu")
    if dev.device_type == kDLCUDA:
        return get_device(f"cuda:{dev.device_id}")
    raise RuntimeError(f"unsupported DLPack device type {dev.device_type}")


def _scalar_of(dt: DLDataType):
    if (dt.code, dt.bits, dt.lanes) == (kDLBfloat, 16, 1):
        return T.bfloat16
    if dt.lanes != 1 or dt.code not in _KINDS:
        raise RuntimeError(f"unsupported DLPack dtype (code {dt.code}, bits {dt.bits}, lanes {dt.lanes})")
    kind = _KINDS[dt.code]
    return T.scalar_type(np.dtype("bool") if kind == "b" else np.dtype(f"{kind}{dt.bits // 8}"))


def _capsule_from(source):
    if type(source).__name__ == "PyCapsule":
        return source
    if not hasattr(source, "__dlpack__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__ or a DLPack capsule, got "
                        f"{type(source).__name__}")
    dev_type, dev_id = source.__dlpack_device__()
    if dev_type == kDLCUDA:  # ask the producer to order its work before our current stream
        s = get_device(f"cuda:{dev_id}").stream.cuda_stream
        return source.__dlpack__(stream=s if s else 1)
    return source.__dlpack__()


def from_dlpack(source, dtype=None) -> array:
    """A tilewarp array sharing the memory of a DLPack tensor (an object with ``__dlpack__`` or a
    capsule). ``dtype`` may be a vector/matrix type whose components are the trailing dimensions."""
    capsule = _capsule_from(source)
    ptr = _capsule_get(capsule, b"dltensor")
    if not ptr:
        raise RuntimeError("not an unconsumed DLPack 'dltensor' capsule")
    managed = ctypes.cast(ptr, ctypes.POINTER(DLManagedTensor))
    _capsule_set_name(capsule, b"used_dltensor")  # we own it now
    owner = _Imported(managed)
    t = managed.contents.dl_tensor
    scalar = _scalar_of(t.dtype)
    item = scalar._np_.itemsize
    shape = [t.shape[i] for i in range(t.ndim)]
    if t.strides:
        strides = [t.strides[i] * item for i in range(t.ndim)]
    else:
        strides = list(array._contiguous_strides(tuple(shape), item))
    dtype = scalar if dtype is None else T.value_type(dtype)
    if T.scalar_of(dtype) is not scalar:
        raise RuntimeError(f"DLPack tensor of {T.type_name(scalar)} cannot be viewed as {T.type_name(dtype)}")
    inner = getattr(dtype, "_wp_shape_", ())
    if inner:
        k = len(inner)
        if tuple(shape[-k:]) != tuple(inner) or tuple(strides[-k:]) != array._contiguous_strides(inner, item):
            raise RuntimeError(f"the trailing dimensions {tuple(shape[-k:])} must be contiguous and match "
                               f"{T.type_name(dtype)}")
        shape, strides = shape[:-k] or [1], strides[:-k] or [T.type_size(dtype)]
    if not shape:  # 0-d tensor: one element
        shape, strides = [1], [T.type_size(dtype)]
    data = (t.data or 0) + t.byte_offset
    a = array(ptr=data, dtype=dtype, shape=tuple(shape), strides=tuple(strides), device=_device_of(t.device))
    a._owner = owner
    a.pinned = t.device.device_type == kDLCUDAHost
    return a


# ---- PyTorch --------------------------------------------------------------------------------------


def _torch_dtypes():
    import torch

    return {T.float16: torch.float16, T.bfloat16: torch.bfloat16, T.float32: torch.float32,
            T.float64: torch.float64, T.int8: torch.int8, T.int16: torch.int16, T.int32: torch.int32,
            T.int64: torch.int64, T.uint8: torch.uint8, T.uint16: torch.uint16, T.uint32: torch.uint32,
            T.uint64: torch.uint64, T.bool_: torch.bool}


def dtype_to_torch(warp_dtype):
    """The torch dtype of a tilewarp scalar type (vector/matrix types give their scalar's)."""
    try:
        return _torch_dtypes()[T.scalar_of(T.value_type(warp_dtype))]
    except KeyError:
        raise TypeError(f"cannot convert {warp_dtype} to a Torch type") from None


def dtype_from_torch(torch_dtype):
    for w, t in _torch_dtypes().items():
        if t == torch_dtype:
            return w
    raise TypeError(f"cannot convert Torch type {torch_dtype} to a tilewarp type")


def device_to_torch(device) -> str:
    device = get_device(device)
    return "cpu" if device.is_cpu else f"cuda:{device.ordinal}"


def device_from_torch(torch_device):
    import torch

    d = torch.device(torch_device)
    if d.type == "cuda":
        return get_device(f"cuda:{d.index if d.index is not None else torch.cuda.current_device()}")
    if d.type == "cpu":
        return get_device("cpu")
    raise RuntimeError(f"unsupported Torch device {torch_device}")


def from_torch(t, dtype=None, requires_grad=None, grad=None, return_ctype=False, retain_grad=False) -> array:
    """A tilewarp array sharing ``t``'s memory. With ``requires_grad`` (default: the tensor's), the
    array's grad wraps ``t.grad``, which is allocated (zeros) when missing."""
    import torch

    requires_grad = t.requires_grad if requires_grad is None else requires_grad
    a = from_dlpack(t.detach(), dtype=dtype)
    a._tensor = t  # keep the tensor (not only its storage) alive, like the view it is
    if grad is not None:
        a.grad = grad if isinstance(grad, array) else from_dlpack(grad.detach(), dtype=dtype)
    elif requires_grad:
        if t.grad is None:
            t.grad = torch.zeros_like(t)
        a.grad = from_dlpack(t.grad.detach(), dtype=dtype)
    if requires_grad or grad is not None:
        a._requires_grad = True
    return a.__ctype__() if return_ctype else a


def to_torch(a: array, requires_grad=None):
    """A torch tensor sharing ``a``'s memory (vector/matrix components become trailing dimensions)."""
    import torch

    requires_grad = a.requires_grad if requires_grad is None else requires_grad
    t = torch.from_dlpack(a)
    if requires_grad:
        t.requires_grad = True
        if a.grad is not None:
            t.grad = torch.from_dlpack(a.grad)
    return t


def stream_from_torch(stream_or_device=None):
    """The tilewarp Stream wrapping torch's current CUDA stream (or the given torch stream)."""
    import torch

    from .stream import Stream

    if isinstance(stream_or_device, torch.cuda.Stream):
        s = stream_or_device
    else:
        s = torch.cuda.current_stream(stream_or_device)
    return Stream(device_from_torch(s.device), cuda_stream=s.cuda_stream)


def stream_to_torch(stream_or_device=None):
    """A torch ExternalStream for a tilewarp Stream (or a device's current stream)."""
    import torch

    from .stream import Stream

    s = stream_or_device if isinstance(stream_or_device, Stream) else get_device(stream_or_device).stream
    return torch.cuda.ExternalStream(s.cuda_stream, device=device_to_torch(s.device))
