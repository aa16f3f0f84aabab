"""Devices: ``"cpu"`` and ``"cuda:N"``, each wrapping one backend from the table below."""
from __future__ import annotations

import os
import platform
import threading

from ..errors import DeviceError
from . import native_launch


def _cpu_backend(ordinal):
    from .cpu import CpuBackend

    return CpuBackend()


def _cuda_backend(ordinal):
    from .cuda import CudaBackend

    return CudaBackend(ordinal)


BACKENDS = {"cpu": _cpu_backend, "cuda": _cuda_backend}


class Device:
    """One device; ``backend`` is created on first use (no CUDA work for CPU-only scripts).

    The attributes follow Warp's ``Device`` (CPU ordinal -1, ``is_uva``, ``sm_count``, ...); CUDA
    properties are read from the driver when first asked for.
    """

    def __init__(self, kind: str, ordinal: int = 0):
        self.kind = kind
        self.ordinal = -1 if kind == "cpu" else ordinal
        self.alias = "cpu" if kind == "cpu" else f"cuda:{ordinal}"
        self.is_primary = kind == "cuda"
        self.captures: dict = {}  # stream handle -> Graph being captured on it
        self._backend = None
        self._stream = None       # the current Stream (CUDA), created with the backend
        self._null_stream = None
        self._lock = threading.Lock()

    @property
    def backend(self):
        if self._backend is None:
            with self._lock:
                if self._backend is None:
                    self._backend = BACKENDS[self.kind](self.ordinal if self.is_cuda else 0)
        return self._backend

    is_cpu = property(lambda self: self.kind == "cpu")
    is_cuda = property(lambda self: self.kind == "cuda")

    def _cuda(self, attr, cpu_value):
        return getattr(self.backend, attr) if self.kind == "cuda" else cpu_value

    arch = property(lambda self: self._cuda("arch", 0))
    sm_count = property(lambda self: self._cuda("sm_count", 0))
    max_shared_memory_per_block = property(lambda self: self._cuda("max_shared_memory_per_block", 0))
    is_uva = property(lambda self: self._cuda("is_uva", False))
    is_mempool_supported = property(lambda self: self._cuda("is_mempool_supported", False))
    is_mempool_enabled = property(lambda self: self.is_cuda and self.backend._pool is not None)
    is_managed_memory_supported = property(lambda self: self._cuda("is_managed_memory_supported", False))
    is_concurrent_managed_access_supported = property(
        lambda self: self._cuda("is_concurrent_managed_access_supported", False))
    is_cpu_gpu_atomic_supported = property(lambda self: self._cuda("is_cpu_gpu_atomic_supported", False))
    is_cpu_memory_access_from_gpu_supported = property(
        lambda self: self._cuda("is_cpu_memory_access_from_gpu_supported", False))
    is_gpu_memory_access_from_cpu_supported = property(
        lambda self: self._cuda("is_gpu_memory_access_from_cpu_supported", False))
    is_ipc_supported = property(lambda self: False)
    is_cubin_supported = property(lambda self: self.is_cuda)
    uuid = property(lambda self: self._cuda("uuid", None))
    pci_bus_id = property(lambda self: self._cuda("pci_bus_id", None))
    has_context = property(lambda self: self.is_cuda and self._backend is not None)
    has_stream = property(lambda self: self._stream is not None)

    @property
    def name(self) -> str:
        return self.backend.name if self.is_cuda else (platform.processor() or "CPU")

    @property
    def total_memory(self) -> int:
        if self.is_cuda:
            return self.backend.total_memory
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return 0

    @property
    def free_memory(self) -> int:
        if self.is_cuda:
            return self.backend.free_memory()
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    @property
    def context(self):
        """The CUDA context handle (an int; the device's primary context), None on the CPU."""
        return self.backend._ctx_id if self.is_cuda else None

    def _need_cuda(self, what):
        if not self.is_cuda:
            from .stream import NotCudaError

            raise NotCudaError(f"Device {self} is not a CUDA device ({what} needs one)")

    @property
    def stream(self):
        """The current stream: launches and copies on this device go there unless told otherwise."""
        self._need_cuda("a stream")
        if self._stream is None:
            from .stream import Stream

            with self._lock:
                if self._stream is None:
                    self._stream = Stream(self, cuda_stream=self.backend.default_stream)
        return self._stream

    @stream.setter
    def stream(self, stream):
        self.set_stream(stream)

    @property
    def null_stream(self):
        """The legacy default stream (handle 0)."""
        self._need_cuda("the null stream")
        if self._null_stream is None:
            from .stream import Stream

            self._null_stream = Stream(self, cuda_stream=None)
        return self._null_stream

    def set_stream(self, stream, sync: bool = True) -> None:
        """Make ``stream`` current; with ``sync`` it first waits (on the device) for the old one."""
        self._need_cuda("set_stream")
        if stream.device != self:
            from .stream import NotCudaError

            raise NotCudaError(f"Stream from device {stream.device} cannot be used on device {self}")
        old = self.stream
        if sync and old is not stream:
            stream.wait_stream(old)
        self._stream = stream
        self.backend.set_stream(stream.cuda_stream)

    @property
    def is_capturing(self) -> bool:
        if self.is_cpu:
            return bool(self.captures)
        if self._backend is None:
            return False
        return bool(self.captures) or self.stream.is_capturing

    def make_current(self):
        if self.is_cuda:
            self.backend.make_current()

    def can_access(self, other) -> bool:
        return self == get_device(other)  # peer access between GPUs is not enabled

    def synchronize(self):
        self.backend.synchronize()

    def __str__(self):
        return self.alias

    def __repr__(self):
        return f'Device("{self.alias}")'

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = get_device(other)
            except DeviceError:
                return False
        return isinstance(other, Device) and other.alias == self.alias

    def __hash__(self):
        return hash(self.alias)


_devices: dict = {}
_default: list = []


def get_cuda_device_count() -> int:
    from .cuda import device_count

    return device_count()


def is_cuda_available() -> bool:
    return get_cuda_device_count() > 0


def is_cpu_available() -> bool:
    """Warp's ``wp.is_cpu_available()``: the CPU device always runs kernels here (the host compiler
    is found, or the first CPU launch says why not)."""
    return True


def is_cubql_available() -> bool:
    """Warp's ``wp.is_cubql_available()``: tilewarp builds its trees itself, without NVIDIA's cuBQL."""
    return False


def _make(kind: str, ordinal: int) -> Device:
    alias = "cpu" if kind == "cpu" else f"cuda:{ordinal}"
    if alias not in _devices:
        if kind == "cuda":
            count = get_cuda_device_count()
            if count == 0:
                raise DeviceError(f"'{alias}' was requested but no CUDA device is available "
                                  "(no NVIDIA driver or GPU found); use device='cpu'")
            if ordinal >= count:
                raise DeviceError(f"'{alias}' does not exist: {count} CUDA device(s) found")
        _devices[alias] = Device(kind, ordinal)
    return _devices[alias]


def get_preferred_device() -> Device:
    return _make("cuda", 0) if is_cuda_available() else _make("cpu", 0)


def get_device(ident=None) -> Device:
    """``None`` -> the default device; ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a Device."""
    if isinstance(ident, Device):
        return ident
    if ident is None:
        if not _default:
            _default.append(get_preferred_device())
            publish_defaults()
        return _default[-1]
    if not isinstance(ident, str):
        raise DeviceError(f"not a device: {ident!r}")
    if ident == "cpu":
        return _make("cpu", 0)
    if ident == "cuda":
        current = get_device(None)
        return current if current.is_cuda else _make("cuda", 0)
    if ident.startswith("cuda:") and ident[5:].isdigit():
        return _make("cuda", int(ident[5:]))
    raise DeviceError(f"unknown device '{ident}': expected 'cpu', 'cuda' or 'cuda:N'")


def set_device(ident) -> None:
    device = get_device(ident)
    _default[:] = [device]
    publish_defaults()


def get_cuda_devices() -> list:
    return [_make("cuda", i) for i in range(get_cuda_device_count())]


def get_devices() -> list:
    return [_make("cpu", 0), *get_cuda_devices()]


class ScopedDevice:
    """``with wp.ScopedDevice("cuda:0"):`` makes a device the default inside the block."""

    def __init__(self, device):
        self.device = get_device(device)

    def __enter__(self):
        get_device(None)
        _default.append(self.device)
        publish_defaults()
        return self.device

    def __exit__(self, *exc):
        _default.pop()
        publish_defaults()


def publish_defaults() -> None:
    """Tell the native launch path what device=None (no array arguments) and device="cuda" mean now."""
    current = _default[-1] if _default else None
    native_launch.publish_defaults(current, current if current is not None and current.is_cuda else None)


def synchronize() -> None:
    """Wait for all work on every CUDA device that has been used; raises the first device's fault
    after synchronising the others."""
    error = None
    for d in list(_devices.values()):
        if d.is_cuda and d._backend is not None:
            try:
                d.backend.synchronize()
            except Exception as e:  # noqa: BLE001 - finish the other devices first
                error = error or e
    if error is not None:
        raise error


def synchronize_device(device=None) -> None:
    """Wait for all work on ``device`` (nothing to wait for on the CPU)."""
    device = get_device(device)
    if device.is_cuda:
        device.backend.synchronize()


def is_mempool_supported(device=None) -> bool:
    return get_device(device).is_mempool_supported


def is_mempool_enabled(device=None) -> bool:
    return get_device(device).is_mempool_enabled


class _PinnedHost:
    """Allocator for ``pinned=True`` CPU arrays: page-locked memory from the CUDA driver."""

    def __init__(self, cuda_backend):
        self.alloc, self.free = cuda_backend.alloc_pinned, cuda_backend.free_pinned


_pinned: list = []


def pinned_backend():
    """The pinned host allocator, or None without a GPU (pinned arrays are then ordinary memory,
    as in Warp)."""
    if not _pinned:
        _pinned.append(_PinnedHost(_make("cuda", 0).backend) if is_cuda_available() else None)
    return _pinned[0]
