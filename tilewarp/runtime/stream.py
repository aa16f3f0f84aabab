"""CUDA streams and events with Warp's API (``wp.Stream``, ``wp.Event``, ``wp.ScopedStream``, ...).

A Stream or Event wraps an int handle owned by its device's backend (``runtime/cuda.py``). Work
issued without an explicit stream goes to the device's *current* stream (``Device.stream``);
``set_stream``/``ScopedStream`` swap it. Ordering between streams is expressed on the device
with events (``wait_event``/``wait_stream``) and never blocks the host.
"""
from __future__ import annotations

from ..errors import DeviceError
from .device import Device, get_device
from ..errors import LaunchError


class NotCudaError(DeviceError, RuntimeError):
    """A stream, event or capture operation asked of a device that is not a CUDA device (Warp raises
    RuntimeError here, so this is one too)."""


def _cuda_device(device) -> Device:
    device = get_device(device)
    if not device.is_cuda:
        raise NotCudaError(f"Device {device} is not a CUDA device")
    return device


class Event:
    """A CUDA event: a point in a stream that other streams (or the host) can wait for."""

    class Flags:
        DEFAULT = 0x0
        BLOCKING_SYNC = 0x1
        DISABLE_TIMING = 0x2
        INTERPROCESS = 0x4

    def __init__(self, device=None, cuda_event=None, enable_timing: bool = False, interprocess: bool = False):
        self.owner = False
        self.cuda_event = 0
        self.device = _cuda_device(device)
        self.enable_timing = bool(enable_timing)
        if cuda_event is not None:
            self.cuda_event = int(cuda_event)
            return
        if interprocess and enable_timing:
            raise ValueError("The combination of 'enable_timing=True' and 'interprocess=True' is not allowed.")
        if interprocess:
            raise NotCudaError("interprocess events are not supported by tilewarp")
        self.cuda_event = self.device.backend.create_event(enable_timing=self.enable_timing)
        self.owner = True

    @property
    def is_complete(self) -> bool:
        """Whether all work before the event's last record has finished (never blocks)."""
        return self.device.backend.event_query(self.cuda_event)

    def synchronize(self):
        synchronize_event(self)

    def __del__(self):
        if self.owner and self.cuda_event:
            try:
                self.device.backend.destroy_event(self.cuda_event)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass

    def __repr__(self):
        return f"Event(device='{self.device}', timing={self.enable_timing})"


class Stream:
    """A CUDA stream on a device; ``Stream(device, priority)`` creates one, ``cuda_stream=h`` wraps one."""

    def __init__(self, device=None, priority: int = 0, **kwargs):
        self.owner = False
        self.cuda_stream = 0
        self._cached_event = None
        self.device = _cuda_device(device)
        if "cuda_stream" in kwargs:  # external (or the device's own): the caller keeps it alive
            self.cuda_stream = int(kwargs["cuda_stream"] or 0)
            return
        if not isinstance(priority, int):
            raise TypeError("Stream priority must be an integer.")
        self.cuda_stream = self.device.backend.create_stream(max(-1, min(priority, 0)))
        self.owner = True

    def __del__(self):
        if self.owner and self.cuda_stream:
            try:
                self.device.backend.destroy_stream(self.cuda_stream)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass

    def __cuda_stream__(self):
        """The CUDA stream protocol (cuda.core, cupy, ...): ``(version, handle)``."""
        return (0, self.cuda_stream)

    def __repr__(self):
        return f"Stream(device='{self.device}', handle=0x{self.cuda_stream:x})"

    @property
    def cached_event(self) -> Event:
        if self._cached_event is None:
            self._cached_event = Event(self.device)
        return self._cached_event

    def record_event(self, event: Event | None = None, external: bool = False) -> Event:
        """Record ``event`` (a new one when None) at this point of the stream; returns it."""
        if event is None:
            event = Event(self.device)
        elif event.device != self.device:
            raise NotCudaError(f"Event from device {event.device} cannot be recorded on stream from device "
                               f"{self.device}")
        # a timing event inside a capture must be an external node to keep its timestamp
        self.device.backend.record_event(event.cuda_event, self.cuda_stream, external or event.enable_timing)
        return event

    def wait_event(self, event: Event, external: bool = False):
        """Later work on this stream waits until ``event`` completes (the host does not block)."""
        self.device.backend.wait_event(self.cuda_stream, event.cuda_event, external)

    def wait_stream(self, other_stream: Stream, event: Event | None = None, external: bool = False):
        """Later work on this stream waits for everything issued so far on ``other_stream``."""
        if other_stream is self:
            return
        event = other_stream.cached_event if event is None else event
        other_stream.record_event(event, external)
        self.wait_event(event, external)

    @property
    def is_complete(self) -> bool:
        return self.device.backend.stream_query(self.cuda_stream)

    @property
    def is_capturing(self) -> bool:
        return self.device.backend.stream_is_capturing(self.cuda_stream)

    @property
    def is_blocking(self) -> bool:
        return self.device.backend._blocking(self.cuda_stream)

    @property
    def priority(self) -> int:
        return self.device.backend.stream_priority(self.cuda_stream)

    def synchronize(self):
        synchronize_stream(self)


class ScopedStream:
    """``with wp.ScopedStream(s):`` makes ``s`` (and its device) current inside the block.

    ``sync_enter``: ``s`` first waits for the previous current stream; ``sync_exit``: the previous
    stream waits for ``s`` afterwards. ``None`` makes the block a no-op.
    """

    def __init__(self, stream: Stream | None, sync_enter: bool = True, sync_exit: bool = False):
        self.stream, self.sync_enter, self.sync_exit = stream, sync_enter, sync_exit
        self.saved_stream = None
        if stream is not None:
            from .device import ScopedDevice

            self.device = stream.device
            self.device_scope = ScopedDevice(self.device)

    def __enter__(self):
        if self.stream is not None:
            self.device_scope.__enter__()
            self.saved_stream = self.device.stream
            self.device.set_stream(self.stream, self.sync_enter)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            self.device.set_stream(self.saved_stream, self.sync_exit)
            self.device_scope.__exit__(*exc)


def get_stream(device=None) -> Stream:
    """The current stream of ``device`` (the default device when None)."""
    return get_device(device).stream


def set_stream(stream: Stream, device=None, sync: bool = False) -> None:
    get_device(device if device is not None else stream.device).set_stream(stream, sync=sync)


def record_event(event: Event | None = None, external: bool = False) -> Event:
    return get_stream().record_event(event, external=external)


def wait_event(event: Event, external: bool = False):
    get_stream().wait_event(event, external=external)


def wait_stream(other_stream: Stream, event: Event | None = None, external: bool = False):
    get_stream().wait_stream(other_stream, event=event, external=external)


def synchronize_stream(stream_or_device=None):
    """Block the host until the stream (or the device's current stream) has finished its work."""
    if isinstance(stream_or_device, Stream):
        stream = stream_or_device
    else:
        device = get_device(stream_or_device)
        if not device.is_cuda:
            return
        stream = device.stream
    stream.device.backend.synchronize_stream(stream.cuda_stream)


def synchronize_event(event: Event):
    """Block the host until ``event`` has completed."""
    event.device.backend.event_synchronize(event.cuda_event)


def get_event_elapsed_time(start_event: Event, end_event: Event, synchronize: bool = True) -> float:
    """Milliseconds between two recorded events created with ``enable_timing=True``."""
    if synchronize:
        synchronize_event(end_event)
    return start_event.device.backend.event_elapsed_ms(start_event.cuda_event, end_event.cuda_event)


class on_stream:
    """Temporarily issue this device's work on ``stream`` (no event, no device switch): what
    ``wp.launch(..., stream=s)`` and friends use."""

    def __init__(self, stream: Stream, device=None):
        if device is not None and get_device(device) != stream.device:
            raise LaunchError(f"the stream is on {stream.device} but device={device} was given")
        self.backend, self.handle = stream.device.backend, stream.cuda_stream

    def __enter__(self):
        self.saved = self.backend.stream
        self.backend.set_stream(self.handle)

    def __exit__(self, *exc):
        self.backend.set_stream(self.saved)
