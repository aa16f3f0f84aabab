"""Library operations that repeat with the same inputs, issued as one CUDA graph launch.

A hash-grid build or a volume rebuild is a few dozen launches from Python: on a GPU the host takes
longer to issue them than the device to run them (0.4 ms against 0.1 ms for a 1M-point hash grid on
an H200). A simulation calls them every frame with the same arrays, whose contents change. ``Replay``
runs an operation normally the first time it sees a key (everything the operation reads from the
host: array addresses and shapes, scalars, its own buffers), captures it as a graph the second time,
and launches that graph whenever the key comes again. The last few keys are kept, each with its
graph: simulations swap two buffers every step (positions in, positions out), so a build alternates
between two keys, and keeping only the last key would capture nothing. The graph reads the arrays'
current contents, as the operation would. Scratch memory the operation allocates and frees
becomes the graph's own. Not used where it cannot be: the CPU, a stream already capturing (the
user's graph takes the launches), a device without a memory pool (allocations inside a capture need
one), or an operation that has no key.
"""
from __future__ import annotations

from .cuda import CaptureError
from .device import is_mempool_enabled
from .graph import capture_begin, capture_end, capture_launch


_NEW = object()


def array_key(a):
    """What an operation reads of an array from the host, for a ``Replay`` key (None: no array)."""
    return None if a is None else (a.ptr, a.shape, a.strides, a.dtype)


class Replay:
    """One operation's graphs (see the module docstring); ``run(device, key, body)`` does ``body()``."""

    #: keys remembered, with their graphs (the least recently used is dropped first)
    KEEP = 4

    def __init__(self):
        # key -> None (seen once), a graph, or False (it cannot be captured); the most recent last
        self._seen: dict = {}

    @property
    def graphs(self) -> int:
        """How many graphs are kept (for tests)."""
        return sum(1 for g in self._seen.values() if g)

    def run(self, device, key, body) -> None:
        if key is None or not device.is_cuda or device.is_capturing or not is_mempool_enabled(device):
            self._seen.clear()
            body()
            return
        key = (device.stream.cuda_stream, key)
        graph = self._seen.pop(key, _NEW)
        if graph is _NEW:  # a new key: run it; the same key next time is captured
            graph = None
            body()
        else:
            if graph is None:  # (capturing records the launches without running them)
                graph = self._capture(device, body)
            if graph is False:  # it cannot be captured (a readback, the legacy stream): as it is
                body()
            else:
                capture_launch(graph)
        self._seen[key] = graph
        while len(self._seen) > self.KEEP:
            del self._seen[next(iter(self._seen))]

    @staticmethod
    def _capture(device, body):
        try:
            capture_begin(device, force_module_load=False)
        except CaptureError:
            return False
        try:
            body()
        except CaptureError:
            try:
                capture_end(device)
            except Exception:  # noqa: BLE001 - an invalidated capture: nothing of it is kept
                pass
            return False
        except BaseException:
            capture_end(device)
            raise
        return capture_end(device)
