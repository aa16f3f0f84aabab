"""Devices: ``"cpu"`` and ``"cuda:N"``, each wrapping one backend from the table below."""
from __future__ import annotations

import threading

from ..errors import DeviceError


def _cpu_backend(ordinal):
    from .cpu import CpuBackend

    return CpuBackend()


def _cuda_backend(ordinal):
    from .cuda import CudaBackend

    return CudaBackend(ordinal)


BACKENDS = {"cpu": _cpu_backend, "cuda": _cuda_backend}


class Device:
    """One device; ``backend`` is created on first use (no CUDA work for CPU-only scripts)."""

    def __init__(self, kind: str, ordinal: int = 0):
        self.kind, self.ordinal = kind, ordinal
        self.alias = "cpu" if kind == "cpu" else f"cuda:{ordinal}"
        self._backend = None
        self._lock = threading.Lock()

    @property
    def backend(self):
        if self._backend is None:
            with self._lock:
                if self._backend is None:
                    self._backend = BACKENDS[self.kind](self.ordinal)
        return self._backend

    is_cpu = property(lambda self: self.kind == "cpu")
    is_cuda = property(lambda self: self.kind == "cuda")

    @property
    def arch(self) -> int:
        return self.backend.arch if self.is_cuda else 0

    @property
    def name(self) -> str:
        return self.backend.name if self.is_cuda else "CPU"

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
        return self.device

    def __exit__(self, *exc):
        _default.pop()


def synchronize() -> None:
    """Wait for all work on every CUDA device that has been used."""
    for d in list(_devices.values()):
        if d.is_cuda and d._backend is not None:
            d.backend.synchronize()
