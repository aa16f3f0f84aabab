"""CUDA backend: every call into cuda.bindings.driver lives here, behind ``check``.

Pointers cross this API as plain ints. Work is issued on one stream per backend (the legacy default
stream unless one is given); device->host copies and ``synchronize`` block, everything else is
stream-ordered. Async kernel faults (illegal address, ...) are sticky in CUDA and surface as
CudaError at the next blocking call.
"""
from __future__ import annotations

import ctypes
import os
import threading

from ..errors import CudaError, DeviceError

_MAX_GRID_X = 2**31 - 1
_tls = threading.local()        # .ctx: int handle of the context current on this thread; .params
_init_lock = threading.Lock()
_device_count: int | None = None
_init_error: str = ""
_drv = None                     # cuda.bindings.driver, imported lazily (import costs ~0.2 s)


def _driver():
    global _drv
    if _drv is None:
        from cuda.bindings import driver
        _drv = driver
    return _drv


def _error_text(err) -> str:
    d = _driver()
    try:
        e1, name = d.cuGetErrorName(err)
        e2, desc = d.cuGetErrorString(err)
        name = name.decode() if not e1 and name else str(err)
        desc = desc.decode() if not e2 and desc else ""
    except Exception:  # noqa: BLE001 - never mask the original failure
        return str(err)
    return f"{name} ({desc})" if desc else name


def check(result, what: str):
    """Unpack a cuda.bindings result tuple ``(CUresult, *values)``; raise CudaError on failure.

    Returns None, the single value, or a tuple of values.
    """
    err = result[0]
    if err:  # CUresult is an int enum and CUDA_SUCCESS == 0
        raise CudaError(f"{what} failed: {_error_text(err)}")
    n = len(result)
    return None if n == 1 else result[1] if n == 2 else result[1:]


def device_count() -> int:
    """Number of CUDA devices; 0 (never an exception) without driver, without GPU or on cuInit failure."""
    global _device_count, _init_error
    if _device_count is not None:
        return _device_count
    with _init_lock:
        if _device_count is None:
            n = 0
            try:
                d = _driver()
                (err,) = d.cuInit(0)
                if err:
                    _init_error = f"cuInit failed: {_error_text(err)}"
                else:
                    err, n = d.cuDeviceGetCount()
                    if err:
                        _init_error, n = f"cuDeviceGetCount failed: {_error_text(err)}", 0
                    elif n == 0:
                        _init_error = "the CUDA driver reports no device"
            except (ImportError, RuntimeError, OSError) as e:
                # No libcuda: cuda.pathfinder raises DynamicLibNotFoundError (a RuntimeError).
                _init_error = f"CUDA driver not available: {e}"
            _device_count = int(n)
    return _device_count


class CudaModule:
    """A loaded CUBIN; ``function(symbol)`` returns a cached CUfunction handle for ``launch``."""

    def __init__(self, backend: CudaBackend, handle):
        self.backend = backend
        self.handle = handle
        self._functions: dict[str, object] = {}

    def function(self, symbol: str):
        fn = self._functions.get(symbol)
        if fn is None:
            self.backend.make_current()
            fn = check(_driver().cuModuleGetFunction(self.handle, symbol.encode()),
                       f"cuModuleGetFunction('{symbol}')")
            self._functions[symbol] = fn
        return fn

    def unload(self):
        if self.handle is not None:
            self.backend.make_current()
            check(_driver().cuModuleUnload(self.handle), "cuModuleUnload")
            self.handle = None
            self._functions.clear()


class CudaBackend:
    """One CUDA device: its primary context, one stream, a stream-ordered memory pool."""

    kind = "cuda"

    def __init__(self, ordinal: int = 0, stream=None):
        n = device_count()
        if n == 0:
            raise DeviceError(f"no CUDA device available ({_init_error or 'unknown reason'})")
        if not 0 <= ordinal < n:
            raise DeviceError(f"CUDA device {ordinal} does not exist (this machine has {n})")
        d = _driver()
        self.ordinal = ordinal
        self._dev = check(d.cuDeviceGet(ordinal), f"cuDeviceGet({ordinal})")
        self._ctx = check(d.cuDevicePrimaryCtxRetain(self._dev), "cuDevicePrimaryCtxRetain")
        self._ctx_id = int(self._ctx)
        self.make_current()

        raw = check(d.cuDeviceGetName(256, self._dev), "cuDeviceGetName")
        self.name = raw.split(b"\0", 1)[0].decode(errors="replace")
        major = self._attr(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self._attr(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        self.arch = major * 10 + minor
        self.sm_count = self._attr(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.max_shared_memory_per_block = self._attr(
            d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
        self.max_shared_memory_per_block_optin = self._attr(
            d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.total_memory = int(check(d.cuDeviceTotalMem(self._dev), "cuDeviceTotalMem"))

        # Stream 0 is the legacy default stream: it orders with every blocking stream, so
        # synchronous copies below are correctly ordered with our kernels and allocations.
        self.stream = d.CUstream(0) if stream is None else (
            stream if isinstance(stream, d.CUstream) else d.CUstream(int(stream)))
        self._legacy_stream = int(self.stream) == 0

        # Stream-ordered allocation from the device's current pool. A release threshold of
        # "never" keeps freed blocks cached across synchronize() (otherwise every sync returns
        # memory to the OS and the next alloc pays for it again).
        self._pool = None
        if self._attr(d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) and \
                os.environ.get("TILEWARP_CUDA_MEMPOOL", "1") != "0":
            self._pool = check(d.cuDeviceGetMemPool(self._dev), "cuDeviceGetMemPool")
            check(d.cuMemPoolSetAttribute(self._pool, d.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                          d.cuuint64_t(2**64 - 1)), "cuMemPoolSetAttribute")

        self._launch = d.cuLaunchKernel  # bound once: launch is the hot path

    def __repr__(self):
        return f"CudaBackend({self.ordinal}, name={self.name!r}, sm_{self.arch})"

    def _attr(self, attr) -> int:
        return int(check(_driver().cuDeviceGetAttribute(attr, self._dev), f"cuDeviceGetAttribute({attr.name})"))

    def make_current(self):
        """Make this device's primary context current on the calling thread (cached per thread).

        The cache assumes nobody else switches contexts on this thread behind our back; libraries
        using the runtime API share the same primary context, so that holds in practice.
        """
        if getattr(_tls, "ctx", None) != self._ctx_id:
            check(_driver().cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
            _tls.ctx = self._ctx_id

    # -- memory ---------------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> int:
        if nbytes <= 0:
            return 0
        self.make_current()
        d = _driver()
        if self._pool is not None:
            err, ptr = d.cuMemAllocAsync(nbytes, self.stream)
            if err == d.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
                # Cached-but-free blocks may be pinned by pending frees: drain and trim, then retry.
                check(d.cuStreamSynchronize(self.stream), "cuStreamSynchronize")
                check(d.cuMemPoolTrimTo(self._pool, 0), "cuMemPoolTrimTo")
                err, ptr = d.cuMemAllocAsync(nbytes, self.stream)
        else:
            err, ptr = d.cuMemAlloc(nbytes)
        if err == d.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise CudaError(f"out of memory allocating {nbytes} bytes on cuda:{self.ordinal} "
                            f"({self.name}, {self.total_memory} bytes total)")
        check((err,), f"allocating {nbytes} bytes on cuda:{self.ordinal}")
        return int(ptr)

    def free(self, ptr: int):
        if not ptr:
            return
        d = _driver()
        self.make_current()
        res = d.cuMemFreeAsync(ptr, self.stream) if self._pool is not None else d.cuMemFree(ptr)
        if res[0] == d.CUresult.CUDA_ERROR_DEINITIALIZED:
            return  # interpreter shutdown: the driver already tore the context down
        check(res, "cuMemFree")

    def memset(self, ptr: int, byte: int, nbytes: int):
        if nbytes <= 0:
            return
        self.make_current()
        check(_driver().cuMemsetD8Async(ptr, byte & 0xFF, nbytes, self.stream), "cuMemsetD8Async")

    def copy_htod(self, dst: int, src_host_ptr: int, nbytes: int):
        """Host->device. On return the host buffer may be reused or freed."""
        if nbytes <= 0:
            return
        self.make_current()
        d = _driver()
        if self._legacy_stream:
            # Synchronous cuMemcpyHtoD returns once pageable data is staged, so the caller may
            # drop its buffer; it is ordered after earlier work on the legacy stream.
            check(d.cuMemcpyHtoD(dst, src_host_ptr, nbytes), "cuMemcpyHtoD")
        else:
            check(d.cuMemcpyHtoDAsync(dst, src_host_ptr, nbytes, self.stream), "cuMemcpyHtoDAsync")
            check(d.cuStreamSynchronize(self.stream), "cuStreamSynchronize after host->device copy")

    def copy_dtoh(self, dst_host_ptr: int, src: int, nbytes: int):
        """Device->host; complete on return (and reports any earlier async fault on the stream)."""
        if nbytes <= 0:
            return
        self.make_current()
        d = _driver()
        check(d.cuMemcpyDtoHAsync(dst_host_ptr, src, nbytes, self.stream), "cuMemcpyDtoHAsync")
        check(d.cuStreamSynchronize(self.stream), "cuStreamSynchronize after device->host copy")

    def copy_dtod(self, dst: int, src: int, nbytes: int):
        if nbytes <= 0:
            return
        self.make_current()
        check(_driver().cuMemcpyDtoDAsync(dst, src, nbytes, self.stream), "cuMemcpyDtoDAsync")

    # -- modules and launches -------------------------------------------------------------------

    def load_module(self, cubin) -> CudaModule:
        """Load a CUBIN given as bytes, or as a path to a .cubin file."""
        if not isinstance(cubin, (bytes, bytearray, memoryview)):
            with open(cubin, "rb") as f:
                cubin = f.read()
        self.make_current()
        handle = check(_driver().cuModuleLoadData(bytes(cubin)), "cuModuleLoadData")
        return CudaModule(self, handle)

    def launch(self, handle, args_ptr: int, n_tasks: int, block_dim: int = 256, shared_mem: int = 0):
        """Launch ``handle`` over ``n_tasks`` with one by-value struct parameter at ``args_ptr``.

        The kernel runs a grid-stride loop, so capping the grid is safe. The driver copies the
        parameter during cuLaunchKernel, so a per-thread void* slot is reused for every launch.
        """
        if n_tasks <= 0:
            return
        t = _tls
        if getattr(t, "ctx", None) != self._ctx_id:
            self.make_current()
        params = getattr(t, "params", None)
        if params is None:
            params = t.params = (ctypes.c_void_p * 1)()
            t.params_addr = ctypes.addressof(params)
        params[0] = args_ptr
        grid = (n_tasks + block_dim - 1) // block_dim
        if grid > _MAX_GRID_X:
            grid = _MAX_GRID_X
        (err,) = self._launch(handle, grid, 1, 1, block_dim, 1, 1, shared_mem, self.stream, t.params_addr, 0)
        if err:
            check((err,), f"cuLaunchKernel(grid={grid}, block={block_dim}, n={n_tasks})")

    def synchronize(self):
        """Wait for all work on this device (like wp.synchronize_device); raises deferred faults."""
        self.make_current()
        check(_driver().cuCtxSynchronize(), f"cuCtxSynchronize (cuda:{self.ordinal})")

    def synchronize_stream(self):
        self.make_current()
        check(_driver().cuStreamSynchronize(self.stream), f"cuStreamSynchronize (cuda:{self.ordinal})")
