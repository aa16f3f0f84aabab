"""The CPU backend: host memory, dlopen'ed kernel libraries, launches through the native thread pool.

Memory is plain process memory, so "device" pointers are host pointers and every copy is a memmove.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from tilewarp.errors import LaunchError, ModuleLoadError, TileWarpError

from .native_launch import SubmitEntry

ALIGNMENT = 64
#: Launches of at most this many tasks run inline on the caller (no thread wake-up). Waking the pool
#: costs ~2-10 us, about the time 2-4k trivial tasks take; above this the work is split over threads.
MIN_PARALLEL_TASKS = 4096

_runtime_lock = threading.Lock()
_runtime: ctypes.CDLL | None = None


def runtime_library() -> ctypes.CDLL:
    """The native thread pool (libtilewarp_cpu), built on first use (``build_lib.py``), loaded once."""
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                from tilewarp.compile.host import build_runtime
                lib = ctypes.CDLL(build_runtime())
                i64, vp = ctypes.c_int64, ctypes.c_void_p
                lib.tw_cpu_launch_ex.argtypes = [vp, vp, i64, i64, i64]
                lib.tw_cpu_launch_ex.restype = None
                lib.tw_cpu_submit.argtypes = [vp, ctypes.c_char_p]
                lib.tw_cpu_submit.restype = ctypes.c_int
                lib.tw_cpu_launch.argtypes = [vp, vp, i64, i64]
                lib.tw_cpu_launch.restype = None
                lib.tw_cpu_partition.argtypes = [i64, i64, i64, ctypes.POINTER(i64), i64]
                lib.tw_cpu_partition.restype = i64
                lib.tw_cpu_num_threads.argtypes = []
                lib.tw_cpu_num_threads.restype = ctypes.c_int
                lib.tw_cpu_set_num_threads.argtypes = [ctypes.c_int]
                lib.tw_cpu_set_num_threads.restype = None
                _runtime = lib
    return _runtime


#: block memory of one CPU block (on a worker thread's 8 MiB stack, beside the per-lane values)
CPU_SHARED_LIMIT = 1 << 20


class CpuModule:
    """One dlopen'ed kernel library. ctypes never dlcloses, so handles stay valid for the process."""

    def __init__(self, path):
        self.path = str(path)
        try:
            self.lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise ModuleLoadError(f"cannot load kernel library {e}") from None

    def function(self, symbol: str, kernel: str = "", shared_mem: int = 0) -> int:
        """Address of the C symbol `symbol` (an entry ``void(const void*, int64_t, int64_t)``); a tile
        kernel's block memory (``shared_mem`` bytes) lives on the worker's stack, so it is capped."""
        if shared_mem > CPU_SHARED_LIMIT:
            raise LaunchError(f"kernel '{kernel}' needs {shared_mem} bytes of block (shared) memory; the CPU "
                              f"limit is {CPU_SHARED_LIMIT} bytes: use smaller tiles")
        try:
            fn = getattr(self.lib, symbol)
        except AttributeError:
            raise TileWarpError(f"symbol {symbol!r} not found in {self.path}") from None
        return ctypes.cast(fn, ctypes.c_void_p).value


class CpuRec(ctypes.Structure):
    """Mirror of ``tw_cpu_rec`` in thread_pool.cpp."""
    _fields_ = [("fn", ctypes.c_void_p), ("min_parallel_tasks", ctypes.c_void_p),
                ("block_dim", ctypes.c_int64), ("grain", ctypes.c_int64)]


class CpuBackend:
    name = "cpu"

    def __init__(self):
        self._buffers: dict[int, np.ndarray] = {}  # ptr -> owning buffer (keeps memory alive)
        self._launch = None
        self._min_parallel = ctypes.c_int64(MIN_PARALLEL_TASKS)  # native launches read it here
        self._recs: list = []  # keeps CpuRec structs alive

    @property
    def min_parallel_tasks(self) -> int:
        """Launches of at most this many tasks run inline on the calling thread."""
        return self._min_parallel.value

    @min_parallel_tasks.setter
    def min_parallel_tasks(self, n: int):
        self._min_parallel.value = int(n)

    # ---- memory ----
    def alloc(self, nbytes: int) -> int:
        """A 64-byte aligned block of `nbytes` (uninitialised); never returns 0, even for 0 bytes."""
        buf = np.empty(max(int(nbytes), 1) + ALIGNMENT, dtype=np.uint8)
        base = buf.ctypes.data
        ptr = base + (-base) % ALIGNMENT
        self._buffers[ptr] = buf
        return ptr

    def free(self, ptr: int) -> None:
        if ptr and self._buffers.pop(ptr, None) is None:
            raise TileWarpError(f"free of unknown CPU pointer 0x{ptr:x}")

    def memset(self, ptr: int, byte: int, nbytes: int) -> None:
        if nbytes:
            ctypes.memset(ptr, byte, nbytes)

    def memset_words(self, ptr: int, word: int, size: int, nbytes: int) -> None:
        """Fill ``nbytes`` (a multiple of ``size``, 2 or 4) with the ``size``-byte ``word`` (native order)."""
        if nbytes:
            view = np.frombuffer((ctypes.c_uint8 * nbytes).from_address(ptr), dtype=np.uint32 if size == 4 else np.uint16)
            view.fill(word)

    def copy_htod(self, dst: int, src: int, n: int) -> None:
        if n:
            ctypes.memmove(dst, src, n)

    copy_dtoh = copy_htod
    copy_dtod = copy_htod

    def synchronize(self) -> None:
        """Launches are synchronous on the CPU."""

    # ---- code ----
    def load_module(self, path) -> CpuModule:
        return CpuModule(path)

    def launch(self, handle: int, args_ptr: int, n_tasks: int, block_dim: int = 1) -> None:
        """Run entry `handle` over tasks [0, n_tasks); chunk borders fall on multiples of block_dim."""
        launch = self._launch
        if launch is None:
            launch = self._launch = runtime_library().tw_cpu_launch_ex
        if n_tasks > 0:
            launch(handle, args_ptr, n_tasks, self.min_parallel_tasks, block_dim)

    def launcher(self, handle: int, tiled: bool = True) -> SubmitEntry:
        """wp.launch's entry for ``handle``: ``tw_cpu_submit(rec, args)`` with a record per block size,
        ``args`` being the packed argument block as bytes (the task count is read from it). Chunks
        of a tile kernel's tasks keep its blocks whole; a SIMT kernel's may split anywhere."""
        return SubmitEntry(runtime_library().tw_cpu_submit, handle,
                           lambda block_dim: self._block_rec(handle, block_dim if tiled else 1), _never_fails)

    def _block_rec(self, handle: int, block_dim: int) -> int:
        rec = CpuRec(handle, ctypes.addressof(self._min_parallel), block_dim)
        self._recs.append(rec)
        return ctypes.addressof(rec)

    # ---- thread pool ----
    @property
    def num_threads(self) -> int:
        return runtime_library().tw_cpu_num_threads()

    def set_num_threads(self, n: int) -> None:
        """Resize the pool (n <= 0: back to $TILEWARP_NUM_THREADS or the core count)."""
        runtime_library().tw_cpu_set_num_threads(int(n))

    def partition(self, n_tasks: int, block_dim: int = 1) -> list[int]:
        """Chunk borders a launch of n_tasks uses now: chunk k is tasks [b[k], b[k+1])."""
        cap = 1025
        bounds = (ctypes.c_int64 * cap)()
        k = runtime_library().tw_cpu_partition(n_tasks, self.min_parallel_tasks, block_dim, bounds, cap)
        return list(bounds[: k + 1]) if k else [0]


def _never_fails(err, *_):
    raise TileWarpError(f"tw_cpu_submit returned {err}")  # it returns 0 always
