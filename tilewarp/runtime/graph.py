"""Graphs with Warp's API: ``wp.ScopedCapture``, ``capture_begin``/``capture_end``/``capture_launch``.

Capture records the launches, memsets and device copies issued on a (created, non-legacy) stream
into a CUDA graph instead of running them (cuStreamBeginCapture); ``capture_launch`` replays
the whole sequence with one driver call. The graph keeps the argument values it was captured
with: arrays are baked in by address, so replays see their current contents. On the CPU the work
runs as issued and is recorded as operations that ``capture_launch`` runs again (cpu_capture.py).
"""
from __future__ import annotations

import enum

from . import cpu_capture
from .device import get_device
from .stream import NotCudaError, Stream


class CaptureMode(enum.IntEnum):
    """How strictly CUDA guards against unsafe calls from other threads during a capture."""
    GLOBAL = 0
    THREAD_LOCAL = 1
    RELAXED = 2


class Graph:
    """A captured sequence of device work; instantiated lazily at its first ``capture_launch``."""

    def __init__(self, device, capture_id: int = 0):
        self.device = device
        self.capture_id = capture_id
        self.graph = 0
        self.graph_exec = 0
        self._external = False
        self.apic = False  # captured to be saved (capture_save): work that cannot be saved refuses
        self.cpu_ops = None  # a CPU capture: its recorded operations (cpu_capture.py)

    @property
    def node_count(self) -> int:
        if self.cpu_ops is not None:
            return len(self.cpu_ops)
        return self.device.backend.graph_node_count(self.graph) if self.graph else 0

    def __del__(self):
        if self.graph or self.graph_exec:
            try:
                self.device.backend.destroy_graph(self.graph, self.graph_exec)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass

    def __repr__(self):
        return f"Graph(device='{self.device}', nodes={self.node_count if self.graph else '?'})"


def _target(device, stream):
    if stream is not None:
        return stream.device, stream
    device = get_device(device)
    return device, device.stream if device.is_cuda else None


def saveable_capture(device) -> bool:
    """Whether a capture meant to be saved (``apic=True``) is open on ``device``, on any stream."""
    return any(g.apic for g in get_device(device).captures.values())


def capture_begin(device=None, stream: Stream | None = None, force_module_load=None, external: bool = False,
                  apic: bool = False, capture_mode: CaptureMode = CaptureMode.THREAD_LOCAL):
    """Start capturing the work issued on ``stream`` (the device's current stream when None).

    Kernels compile and load on first launch even inside a capture (drivers >= 12.3 allow module
    loads then), so ``force_module_load`` is accepted and ignored.
    """
    device, stream = _target(device, stream)
    if device.is_cpu:  # work runs as issued and is recorded (cpu_capture.py)
        graph = Graph(device)
        graph.apic = bool(apic)
        graph.cpu_ops = cpu_capture.begin(device, apic)
        device.captures["cpu"] = graph
        return
    backend = device.backend
    if external:
        if not stream.is_capturing:
            raise NotCudaError("External capture reported, but the stream is not capturing")
        backend.capturing += 1
    else:
        if stream.is_capturing:
            raise NotCudaError("Graph capture already in progress on this stream")
        backend.begin_capture(stream.cuda_stream, int(capture_mode))
    graph = Graph(device)
    graph._external = external
    graph.apic = bool(apic)
    device.captures[stream.cuda_stream] = graph


def capture_end(device=None, stream: Stream | None = None) -> Graph:
    """Stop the capture begun on ``stream`` and return its Graph."""
    device, stream = _target(device, stream)
    if device.is_cpu:
        graph = device.captures.pop("cpu", None)
        cpu_capture.end(device)
        return graph
    graph = device.captures.pop(stream.cuda_stream, None)
    if graph is None:
        raise NotCudaError("Graph capture is not active on this stream")
    backend = device.backend
    if graph._external:  # the capture belongs to its owner, who ends it
        backend.capturing -= 1
        return graph
    graph.graph = backend.end_capture(stream.cuda_stream)
    return graph


def capture_launch(graph: Graph, stream: Stream | None = None):
    """Replay ``graph`` on ``stream`` (its device's current stream when None)."""
    if graph.cpu_ops is not None:
        cpu_capture.replay(graph.cpu_ops)
        return
    if not graph.graph:
        raise NotCudaError("this graph holds no captured CUDA graph (an external capture, or capture failed)")
    backend = graph.device.backend
    if not graph.graph_exec:
        graph.graph_exec = backend.instantiate_graph(graph.graph)
    backend.launch_graph(graph.graph_exec, (stream or graph.device.stream).cuda_stream)


class ScopedCapture:
    """``with wp.ScopedCapture() as capture:`` records the block; replay with
    ``wp.capture_launch(capture.graph)``. An exception inside the block ends the capture and
    discards the graph."""

    def __init__(self, device=None, stream=None, force_module_load=None, external=False, apic: bool = False,
                 capture_mode: CaptureMode = CaptureMode.THREAD_LOCAL):
        self.device, self.stream = device, stream
        self.force_module_load, self.external, self.apic = force_module_load, external, apic
        self.capture_mode = capture_mode
        self.active = False
        self.graph = None

    def __enter__(self):
        capture_begin(self.device, self.stream, self.force_module_load, self.external, self.apic, self.capture_mode)
        self.active = True
        return self

    def __exit__(self, exc_type, exc, tb):
        self.active = False
        if exc_type is None:
            self.graph = capture_end(self.device, self.stream)
            return
        try:  # the block failed: end the capture so the stream is usable, drop the graph
            capture_end(self.device, self.stream)
        except Exception:  # noqa: BLE001 - the original exception matters more
            pass
