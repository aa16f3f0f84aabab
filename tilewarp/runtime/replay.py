"""Library operations that repeat with the same inputs, issued as one CUDA graph launch.

A hash-grid build or a volume rebuild is a few dozen launches from Python: on a GPU the host takes
longer to issue them than the device to run them (0.4 ms against 0.1 ms for a 1M-point hash grid on
an H200). A simulation calls them every frame with the same arrays, whose contents change. ``Replay``
runs an operation normally the first time it sees a key (everything the operation reads from the
host: array addresses and shapes, scalars, its own buffers), captures it as a graph the second time
in a row, and launches that graph from then on while the key stays the same. The graph reads the
arrays' current contents, as the operation would. Scratch memory the operation allocates and frees
becomes the graph's own. Not used where it cannot be: the CPU, a stream already capturing (the
user's graph takes the launches), a device without a memory pool (allocations inside a capture need
one), or an operation that has no key.
"""
from __future__ import annotations

from .cuda import CaptureError
from .device import is_mempool_enabled
from .graph import capture_begin, capture_end, capture_launch


def array_key(a):
    """What an operation reads of an array from the host, for a ``Replay`` key (None: no array)."""
    return None if a is None else (a.ptr, a.shape, a.strides, a.dtype)


class Replay:
    """One operation's graph (see the module docstring); ``run(device, key, body)`` does ``body()``."""

    def __init__(self):
        self._key, self._graph = None, None

    def run(self, device, key, body) -> None:
        if key is None or not device.is_cuda or device.is_capturing or not is_mempool_enabled(device):
            self._key, self._graph = None, None
            body()
            return
        key = (device.stream.cuda_stream, key)
        if key != self._key:  # a new key: run it; the same key next time is captured
            self._key, self._graph = key, None
            body()
            return
        if self._graph is None:
            self._graph = self._capture(device, body)
            if self._graph is False:  # it cannot be captured (a readback, the legacy stream): as it is
                body()
                return
        elif self._graph is False:
            body()
            return
        capture_launch(self._graph)

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
