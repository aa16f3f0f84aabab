"""``wp.ScopedTimer``: wall-clock time of a ``with`` block, with Warp's arguments and output."""
from __future__ import annotations

import threading
import time
from ..runtime.device import synchronize

_depth = threading.local()  # nesting level of active, printing timers in this thread


class ScopedTimer:
    """Times the ``with`` block: ``elapsed`` (ms) afterwards; ``print`` writes ``<name> took <t> ms``
    indented by nesting level; ``dict`` collects ``{name: [ms, ...]}``; ``synchronize`` waits for the
    device before and after, so GPU work issued inside is counted (launches are asynchronous).

    ``detailed`` prints a cProfile report of the block. ``use_nvtx`` marks the range for Nsight
    Systems when the ``nvtx`` package is installed. CUDA activity timing (``cuda_filter``) is not
    collected: ``timing_results`` stays empty. ``skip_tape`` is accepted for compatibility.
    """

    enabled = True  # class-wide switch, as Warp's

    def __init__(self, name: str, active: bool = True, print: bool = True, detailed: bool = False,
                 dict: dict | None = None, use_nvtx: bool = False, color="rapids", synchronize: bool = False,
                 cuda_filter: int = 0, report_func=None, skip_tape: bool = False):
        self.name, self.active, self.print, self.detailed = name, active and self.enabled, print, detailed
        self.dict, self.use_nvtx, self.color, self.synchronize = dict, use_nvtx, color, synchronize
        self.cuda_filter, self.report_func, self.skip_tape = cuda_filter, report_func, skip_tape
        self.elapsed = 0.0
        self.extra_msg = ""
        self.timing_results: list = []
        self.start = 0.0
        self._profile = self._range = None

    def __enter__(self):
        if not self.active:
            return self
        if self.synchronize:
            _synchronize()
        if self.use_nvtx:
            self._range = _nvtx_start(self.name)
        if self.detailed:
            import cProfile

            self._profile = cProfile.Profile()
            self._profile.enable()
        if self.print:
            _depth.level = getattr(_depth, "level", 0) + 1
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if not self.active:
            return False
        if self.synchronize:
            _synchronize()
        self.elapsed = (time.perf_counter() - self.start) * 1000.0
        if self._profile is not None:
            self._profile.disable()
            import pstats

            pstats.Stats(self._profile).sort_stats("cumulative").print_stats(20)
        if self._range is not None:
            _nvtx_end(self._range)
        if self.dict is not None:
            self.dict.setdefault(self.name, []).append(self.elapsed)
        if self.report_func is not None:
            self.report_func(self.timing_results, "")
        if self.print:
            _depth.level -= 1
            message = f"{'    ' * _depth.level}{self.name} took {self.elapsed:.2f} ms"
            print(f"{message} {self.extra_msg}" if self.extra_msg else message)
        return False


def _synchronize():
    synchronize()


def _nvtx_start(name):
    try:
        import nvtx
    except ImportError:
        return None
    return nvtx.start_range(message=name)


def _nvtx_end(handle):
    import nvtx

    nvtx.end_range(handle)
