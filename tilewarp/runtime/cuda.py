"""CUDA backend: every call into cuda.bindings.driver lives here, behind ``check``.

Pointers, streams, events and graphs cross this API as plain ints. Each backend owns a *current
stream* (a blocking stream it creates, as Warp does, so graph capture works on it; ``set_stream``
swaps it). Device->host copies and ``synchronize`` block, everything else is stream-ordered.
Async kernel faults (illegal address, ...) are sticky in CUDA: they surface at the next blocking
call as ``KernelFaultError``, naming the kernels launched since the last synchronisation.

Launches go through a tiny native entry (native/runtime/cuda_launch.cpp) called by ctypes;
cuda.bindings' ``cuLaunchKernel`` is the fallback when no host compiler exists. ``launcher`` gives
wp.launch its per-kernel entry: two pointers per call (a launch record and the packed arguments).
"""
from __future__ import annotations

import ctypes
import os
import threading

from ..errors import CudaError, DeviceError, LaunchError
from .native_launch import SubmitEntry
from ..compile import host as native_build  # read at call time: tests stand in for its folders
from ..language import types as T

_MAX_GRID_X = 2**31 - 1
_tls = threading.local()        # .ctx: int handle of the context current on this thread
_init_lock = threading.Lock()
_device_count: int | None = None
_init_error: str = ""
_drv = None                     # cuda.bindings.driver, imported lazily (import costs ~0.2 s)
_native = None                  # the native launch library (False: unavailable)
_FAULTS = {"CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
           "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_HARDWARE_STACK_ERROR",
           "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT"}


class KernelFaultError(CudaError, RuntimeError):
    """A kernel faulted on the device (reported at the next synchronisation); the CUDA context is
    unusable afterwards, as in every CUDA program."""


class CaptureError(CudaError, RuntimeError):
    """An operation that graph capture does not allow (synchronising, reading back, ...)."""


class LaunchRec(ctypes.Structure):
    """Mirror of ``tw_launch_rec`` in cuda_launch.cpp."""
    _fields_ = [("function", ctypes.c_void_p), ("stream_slot", ctypes.c_void_p),
                ("shared_mem", ctypes.c_uint32), ("block_dim", ctypes.c_uint32), ("context", ctypes.c_void_p)]


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


def _error_name(err) -> str:
    try:
        return _driver().CUresult(int(err)).name
    except Exception:  # noqa: BLE001
        return str(err)


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


def native_library():
    """The native launch entry (built into the kernel cache on first use), or None when it cannot
    be built or cuLaunchKernel cannot be resolved; ``TILEWARP_CUDA_NATIVE_LAUNCH=0`` disables it."""
    global _native
    if _native is None:
        with _init_lock:
            if _native is None:
                _native = _load_native() or False
    return _native or None


def build_native_library() -> str:
    """Build the launch entry (native/runtime/cuda_launch.cpp) once per install; needs no GPU."""
    return native_build.build_native(native_build.NATIVE_DIR / "runtime" / "cuda_launch.cpp", "libtilewarp_cuda",
                                     link_flags=["-ldl"])


def _load_native():
    if os.environ.get("TILEWARP_CUDA_NATIVE_LAUNCH", "1") == "0":
        return None
    try:
        lib = ctypes.CDLL(build_native_library())
    except Exception:  # noqa: BLE001 - no compiler / no source: the cuda.bindings path still works
        return None
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.tw_cuda_init.argtypes, lib.tw_cuda_init.restype = [], ctypes.c_int
    lib.tw_cuda_launch.argtypes, lib.tw_cuda_launch.restype = [vp, vp, i64, i64], ctypes.c_int
    lib.tw_cuda_launch_on.argtypes, lib.tw_cuda_launch_on.restype = [vp, vp, i64, i64, vp], ctypes.c_int
    lib.tw_cuda_submit.argtypes, lib.tw_cuda_submit.restype = [vp, ctypes.c_char_p], ctypes.c_int

    if T.LaunchBounds.size.offset != 24:  # tw_cuda_submit reads the task count there
        return None
    return lib if lib.tw_cuda_init() == 0 else None


class CudaModule:
    """A loaded CUBIN; ``function(symbol)`` returns a launch handle (an int) for ``backend.launch``."""

    def __init__(self, backend: CudaBackend, handle):
        self.backend = backend
        self.handle = handle
        self._functions: dict[str, int] = {}

    def function(self, symbol: str, kernel: str = "", shared_mem: int = 0) -> int:
        """A launch handle of ``symbol``, whose blocks take ``shared_mem`` bytes of dynamic shared
        memory (a tile kernel's plan): refused here, before any launch, when the static and dynamic
        shared memory together exceed the device's limit; above 48 KiB the kernel opts in."""
        fn = self._functions.get(symbol)
        if fn is None:
            self.backend.make_current()
            d = _driver()
            cufn = check(d.cuModuleGetFunction(self.handle, symbol.encode()), f"cuModuleGetFunction('{symbol}')")
            if shared_mem:
                attr = d.CUfunction_attribute
                static = int(check(d.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, cufn),
                                   "cuFuncGetAttribute"))
                limit = self.backend.max_shared_memory_per_block_optin
                if static + shared_mem > limit:
                    raise LaunchError(f"kernel '{kernel}' needs {static + shared_mem} bytes of shared memory per "
                                      f"block ({shared_mem} for its tiles, {static} static); the device's limit is "
                                      f"{limit} bytes: use smaller tiles or fewer tiles live at once")
                if shared_mem > 48 * 1024:
                    check(d.cuFuncSetAttribute(cufn, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               shared_mem), "cuFuncSetAttribute")
            fn = self._functions[symbol] = self.backend.prepare(cufn, symbol, shared_mem)
        return fn

    def unload(self):
        if self.handle is not None:
            self.backend.make_current()
            check(_driver().cuModuleUnload(self.handle), "cuModuleUnload")
            self.handle = None
            self._functions.clear()


class CudaBackend:
    """One CUDA device: its primary context, a current stream, a stream-ordered memory pool."""

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
        self._read_properties()

        # Stream-ordered allocation from the device's current pool. A release threshold of
        # "never" keeps freed blocks cached across synchronize() (otherwise every sync returns
        # memory to the OS and the next alloc pays for it again).
        self._pool = None
        if self.is_mempool_supported and os.environ.get("TILEWARP_CUDA_MEMPOOL", "1") != "0":
            self._pool = check(d.cuDeviceGetMemPool(self._dev), "cuDeviceGetMemPool")
            check(d.cuMemPoolSetAttribute(self._pool, d.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                          d.cuuint64_t(2**64 - 1)), "cuMemPoolSetAttribute")

        self._names: dict[int, str] = {}      # launch handle -> kernel symbol (for fault messages)
        self._cufn: dict[int, object] = {}    # launch handle -> CUfunction (cuda.bindings path)
        self._recs: list = []                 # keeps LaunchRec structs alive
        self._pending: set = set()            # handles launched since the last synchronisation
        self.capturing = 0                    # captures tilewarp began on this device
        self._deferred_frees: list = []       # frees held back while a capture runs
        self._deferred_graphs: list = []      # graphs dropped while a capture runs, destroyed after it
        self._capture_allocs: set = set()     # pool blocks allocated inside the running capture
        self._blocking_cache: dict = {}

        # The word native launches read the current stream from (see cuda_launch.cpp).
        self._stream_slot = (ctypes.c_void_p * 1)()
        self._stream_slot_addr = ctypes.addressof(self._stream_slot)
        self.stream = 0
        self.default_stream = self.create_stream() if stream is None else int(stream)
        self.set_stream(self.default_stream)
        lib = native_library()
        self._native = lib.tw_cuda_launch if lib is not None else None
        self._native_on = lib.tw_cuda_launch_on if lib is not None else None
        self._submit = lib.tw_cuda_submit if lib is not None else None
        self._launch = d.cuLaunchKernel

    def _read_properties(self):
        d = _driver()
        a = d.CUdevice_attribute
        raw = check(d.cuDeviceGetName(256, self._dev), "cuDeviceGetName")
        self.name = raw.split(b"\0", 1)[0].decode(errors="replace")
        self.arch = self._attr(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 + \
            self._attr(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        self.sm_count = self._attr(a.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.max_shared_memory_per_block = self._attr(a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
        self.max_shared_memory_per_block_optin = self._attr(a.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.total_memory = int(check(d.cuDeviceTotalMem(self._dev), "cuDeviceTotalMem"))
        self.is_uva = bool(self._attr(a.CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING))
        self.is_mempool_supported = bool(self._attr(a.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED))
        self.is_managed_memory_supported = bool(self._attr(a.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY))
        self.is_concurrent_managed_access_supported = bool(self._attr(a.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS))
        self.is_cpu_gpu_atomic_supported = bool(self._attr(a.CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED))
        self.is_gpu_memory_access_from_cpu_supported = bool(
            self._attr(a.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES))
        self.is_cpu_memory_access_from_gpu_supported = bool(self._attr(a.CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS))
        self.pci_bus_id = "{:08X}:{:02X}:{:02X}".format(self._attr(a.CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
                                                       self._attr(a.CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
                                                       self._attr(a.CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID))
        try:
            h = bytes(check(d.cuDeviceGetUuid(self._dev), "cuDeviceGetUuid").bytes).hex()
            self.uuid = f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        except Exception:  # noqa: BLE001 - informational only
            self.uuid = None

    def __repr__(self):
        return f"CudaBackend({self.ordinal}, name={self.name!r}, sm_{self.arch})"

    def _attr(self, attr) -> int:
        return int(check(_driver().cuDeviceGetAttribute(attr, self._dev), f"cuDeviceGetAttribute({attr.name})"))

    def make_current(self, force: bool = False):
        """Make this device's primary context current on the calling thread (cached per thread).

        The cache assumes nobody else switches contexts on this thread behind our back; libraries
        using the runtime API share the same primary context, so that holds in practice (``force``
        skips the cache: the native entry found another context current).
        """
        if force or getattr(_tls, "ctx", None) != self._ctx_id:
            check(_driver().cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
            _tls.ctx = self._ctx_id

    def free_memory(self) -> int:
        self.make_current()
        free, _total = check(_driver().cuMemGetInfo(), "cuMemGetInfo")
        return int(free)

    # -- faults ---------------------------------------------------------------------------------

    def _sync_check(self, result, what: str):
        """``check`` for calls that report earlier asynchronous work: a sticky kernel fault names the
        kernels launched since the last synchronisation; success forgets them."""
        err = result[0]
        if not err:
            self._pending.clear()
            return None
        name = _error_name(err)
        if name in _FAULTS:
            kernels = sorted(self._names.get(h, hex(h)) for h in self._pending) or ["(none recorded)"]
            raise KernelFaultError(
                f"a kernel failed on cuda:{self.ordinal}: {_error_text(err)}, reported by {what}; "
                f"kernel(s) launched since the last synchronisation: {', '.join(kernels)}. "
                "The CUDA context cannot be used any more; restart the process.")
        return check(result, what)

    def _no_capture(self, what: str):
        if self.capturing:
            raise CaptureError(f"cannot {what} on cuda:{self.ordinal} while graph capture is active")

    # -- memory ---------------------------------------------------------------------------------

    def alloc(self, nbytes: int) -> int:
        if nbytes <= 0:
            return 0
        self.make_current()
        d = _driver()
        if self._pool is not None:
            err, ptr = d.cuMemAllocAsync(nbytes, self.stream)
            if err == d.CUresult.CUDA_ERROR_OUT_OF_MEMORY and not self.capturing:
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
        if self.capturing and self._pool is not None:
            self._capture_allocs.add(int(ptr))  # a graph allocation node: freed in the graph, if at all
        return int(ptr)

    def free(self, ptr: int):
        if not ptr:
            return
        if self.capturing:
            if ptr in self._capture_allocs:
                # allocated inside this capture (a library's scratch, say): its free is a graph node
                # too, so every replay allocates and frees it in order
                self._capture_allocs.discard(ptr)
                self.make_current()
                check(_driver().cuMemFreeAsync(ptr, self.stream), "cuMemFreeAsync (in capture)")
                return
            # older memory the graph may still read: free it after the capture
            self._deferred_frees.append(ptr)
            return
        d = _driver()
        self.make_current()
        res = d.cuMemFreeAsync(ptr, self.stream) if self._pool is not None else d.cuMemFree(ptr)
        if res[0] == d.CUresult.CUDA_ERROR_DEINITIALIZED:
            return  # interpreter shutdown: the driver already tore the context down
        check(res, "cuMemFree")

    def alloc_pinned(self, nbytes: int) -> int:
        """Page-locked host memory (fast, truly asynchronous copies); visible to every context."""
        self.make_current()
        d = _driver()
        err, ptr = d.cuMemHostAlloc(max(int(nbytes), 1), 0x1)  # CU_MEMHOSTALLOC_PORTABLE
        if err == d.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise CudaError(f"out of memory allocating {nbytes} bytes of pinned host memory")
        return int(check((err, ptr), f"cuMemHostAlloc({nbytes})"))

    def free_pinned(self, ptr: int):
        if ptr:
            d = _driver()
            res = d.cuMemFreeHost(ptr)
            if res[0] != d.CUresult.CUDA_ERROR_DEINITIALIZED:
                check(res, "cuMemFreeHost")

    def memset(self, ptr: int, byte: int, nbytes: int):
        if nbytes <= 0:
            return
        self.make_current()
        check(_driver().cuMemsetD8Async(ptr, byte & 0xFF, nbytes, self.stream), "cuMemsetD8Async")

    def memset_words(self, ptr: int, word: int, size: int, nbytes: int):
        """Fill ``nbytes`` (a multiple of ``size``, 2 or 4) with the ``size``-byte ``word`` (native order)."""
        if nbytes <= 0:
            return
        self.make_current()
        d = _driver()
        if size == 4:
            check(d.cuMemsetD32Async(ptr, word, nbytes // 4, self.stream), "cuMemsetD32Async")
        else:
            check(d.cuMemsetD16Async(ptr, word, nbytes // 2, self.stream), "cuMemsetD16Async")

    def copy_htod(self, dst: int, src_host_ptr: int, nbytes: int, stream=None):
        """Host->device. On return the host buffer may be reused or freed."""
        if nbytes <= 0:
            return
        self.make_current()
        d = _driver()
        s = self.stream if stream is None else stream
        if self.capturing:
            # captured: becomes a graph node that reads the host buffer at every replay
            check(d.cuMemcpyHtoDAsync(dst, src_host_ptr, nbytes, s), "cuMemcpyHtoDAsync (in capture)")
        elif self._blocking(s):
            # Synchronous cuMemcpyHtoD returns once pageable data is staged, so the caller may
            # drop its buffer; the legacy stream orders it after earlier work on blocking streams.
            check(d.cuMemcpyHtoD(dst, src_host_ptr, nbytes), "cuMemcpyHtoD")
        else:
            check(d.cuMemcpyHtoDAsync(dst, src_host_ptr, nbytes, s), "cuMemcpyHtoDAsync")
            self._sync_check(d.cuStreamSynchronize(s), "cuStreamSynchronize after host->device copy")

    def copy_dtoh(self, dst_host_ptr: int, src: int, nbytes: int, stream=None):
        """Device->host; complete on return (and reports any earlier async fault on the stream)."""
        if nbytes <= 0:
            return
        self._no_capture("copy device memory to the host")
        self.make_current()
        d = _driver()
        s = self.stream if stream is None else stream
        self._sync_check(d.cuMemcpyDtoHAsync(dst_host_ptr, src, nbytes, s), "cuMemcpyDtoHAsync")
        self._sync_check(d.cuStreamSynchronize(s), "cuStreamSynchronize after device->host copy")

    def copy_dtod(self, dst: int, src: int, nbytes: int, stream=None):
        if nbytes <= 0:
            return
        self.make_current()
        s = self.stream if stream is None else stream
        check(_driver().cuMemcpyDtoDAsync(dst, src, nbytes, s), "cuMemcpyDtoDAsync")

    def copy_peer(self, dst: int, dst_backend: CudaBackend, src: int, nbytes: int, stream=None):
        """Device (this) -> another device, ordered on this device's stream."""
        if nbytes <= 0:
            return
        self.make_current()
        s = self.stream if stream is None else stream
        check(_driver().cuMemcpyPeerAsync(dst, dst_backend._ctx, src, self._ctx, nbytes, s), "cuMemcpyPeerAsync")

    # -- modules and launches -------------------------------------------------------------------

    def load_module(self, cubin) -> CudaModule:
        """Load a CUBIN given as bytes, or as a path to a .cubin file."""
        if not isinstance(cubin, (bytes, bytearray, memoryview)):
            with open(cubin, "rb") as f:
                cubin = f.read()
        self.make_current()
        handle = check(_driver().cuModuleLoadData(bytes(cubin)), "cuModuleLoadData")
        return CudaModule(self, handle)

    def prepare(self, cufn, symbol: str = "", shared_mem: int = 0) -> int:
        """A launch handle for ``cufn``: the address of its LaunchRec (what the native entry reads)."""
        rec = LaunchRec(int(cufn), self._stream_slot_addr, shared_mem, 0, self._ctx_id)
        self._recs.append(rec)
        h = ctypes.addressof(rec)
        self._names[h], self._cufn[h] = symbol or hex(int(cufn)), cufn
        return h

    def resident_blocks(self, handle: int, threads: int) -> int:
        """How many blocks of ``threads`` threads of ``handle`` the whole device runs at once."""
        fn, rec = self._cufn[handle], LaunchRec.from_address(handle)
        per_sm = check(_driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(fn, threads, rec.shared_mem),
                       "cuOccupancyMaxActiveBlocksPerMultiprocessor")
        return max(int(per_sm), 1) * self.sm_count

    def launcher(self, handle: int, tiled: bool = True):
        """wp.launch's entry for ``handle``: ``submit(args, n_tasks, block_dim)`` launches on the
        current stream, ``args`` being the packed argument block as bytes (``n_tasks`` > 0).

        Natively that is ``tw_cuda_submit(rec, args)``: a record per block size (made on first use)
        and the block, whose launch bounds give the task count; the context check happens in C.
        """
        native = self._submit
        if native is None:
            return lambda args, n_tasks, block_dim: self.launch(handle, args, n_tasks, block_dim)

        def failed(err, rec, args, n_tasks, block_dim):
            self._submit_failed(err, native, rec, args, handle, n_tasks, block_dim)

        return SubmitEntry(native, handle, lambda block_dim: self._block_rec(handle, block_dim), failed,
                           self._pending)

    def _block_rec(self, handle: int, block_dim: int) -> int:
        if not 0 < block_dim < 2**31:  # the native entry divides by it; the driver checks the rest
            raise LaunchError(f"block_dim must be a positive int, got {block_dim}")
        base = LaunchRec.from_address(handle)
        rec = LaunchRec(base.function, base.stream_slot, base.shared_mem, block_dim, base.context)
        self._recs.append(rec)
        return ctypes.addressof(rec)

    def _submit_failed(self, err, native, rec, args, handle, n_tasks, block_dim):
        if err == -1:  # another context (or none) is current on this thread: set ours and retry
            self.make_current(force=True)
            err = native(rec, args)
        if err:
            self._sync_check((err,), f"cuLaunchKernel of {self._names.get(handle, '?')} "
                                     f"(block={block_dim}, n={n_tasks})")

    def launch(self, handle: int, args_ptr: int, n_tasks: int, block_dim: int = 256, shared_mem: int = 0,
               stream=None):
        """Launch ``handle`` over ``n_tasks`` with one by-value struct parameter at ``args_ptr``.

        The kernel runs a grid-stride loop, so capping the grid is safe. The driver copies the
        parameter during cuLaunchKernel, so ``args_ptr`` may be reused once this returns.
        """
        if n_tasks <= 0:
            return
        if getattr(_tls, "ctx", None) != self._ctx_id:
            self.make_current()
        self._pending.add(handle)
        native = self._native
        if native is not None and not shared_mem:
            err = native(handle, args_ptr, n_tasks, block_dim) if stream is None else \
                self._native_on(handle, args_ptr, n_tasks, block_dim, stream)
        else:
            err = self._launch_bindings(handle, args_ptr, n_tasks, block_dim, shared_mem, stream)
        if err:
            self._sync_check((err,), f"cuLaunchKernel of {self._names.get(handle, '?')} "
                                     f"(block={block_dim}, n={n_tasks})")

    def _launch_bindings(self, handle, args_ptr, n_tasks, block_dim, shared_mem, stream):
        if isinstance(args_ptr, bytes):  # a packed block from wp.launch: point into it (no copy)
            args_ptr = ctypes.cast(ctypes.c_char_p(args_ptr), ctypes.c_void_p).value
        params = (ctypes.c_void_p * 1)(args_ptr)
        grid = min((n_tasks + block_dim - 1) // block_dim, _MAX_GRID_X)
        s = self.stream if stream is None else stream
        (err,) = self._launch(self._cufn[handle], grid, 1, 1, block_dim, 1, 1, shared_mem, s,
                              ctypes.addressof(params), 0)
        return int(err)

    def synchronize(self):
        """Wait for all work on this device (like wp.synchronize_device); raises deferred faults."""
        self._no_capture("synchronize the device")
        self.make_current()
        self._sync_check(_driver().cuCtxSynchronize(), f"cuCtxSynchronize (cuda:{self.ordinal})")

    def synchronize_stream(self, stream=None):
        self._no_capture("synchronize a stream")
        self.make_current()
        s = self.stream if stream is None else stream
        self._sync_check(_driver().cuStreamSynchronize(s), f"cuStreamSynchronize (cuda:{self.ordinal})")

    # -- streams and events (handles are ints) ---------------------------------------------------

    def set_stream(self, stream: int):
        self.stream = int(stream)
        self._stream_slot[0] = self.stream or None

    def _blocking(self, stream: int) -> bool:
        """Whether ``stream`` orders with the legacy default stream (cached per handle)."""
        b = self._blocking_cache.get(stream)
        if b is None:
            flags = check(_driver().cuStreamGetFlags(stream), "cuStreamGetFlags") if stream else 0
            b = self._blocking_cache[stream] = not int(flags) & 1  # CU_STREAM_NON_BLOCKING
        return b

    def create_stream(self, priority: int = 0, blocking: bool = True) -> int:
        self.make_current()
        d = _driver()
        lo, hi = check(d.cuCtxGetStreamPriorityRange(), "cuCtxGetStreamPriorityRange")
        prio = max(min(int(priority), int(lo)), int(hi))  # numerically lower = higher priority
        flags = 0 if blocking else 1  # CU_STREAM_DEFAULT orders with the legacy stream; NON_BLOCKING not
        return int(check(d.cuStreamCreateWithPriority(flags, prio), "cuStreamCreateWithPriority"))

    def destroy_stream(self, stream: int):
        if stream:
            self._blocking_cache.pop(stream, None)  # the handle value may be reused
            d = _driver()
            res = d.cuStreamDestroy(stream)
            if res[0] not in (d.CUresult.CUDA_ERROR_DEINITIALIZED, d.CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED):
                check(res, "cuStreamDestroy")

    def stream_query(self, stream: int) -> bool:
        d = _driver()
        (err,) = d.cuStreamQuery(stream)
        if err == d.CUresult.CUDA_ERROR_NOT_READY:
            return False
        self._sync_check((err,), "cuStreamQuery")
        return True

    def stream_priority(self, stream: int) -> int:
        return int(check(_driver().cuStreamGetPriority(stream), "cuStreamGetPriority"))

    def stream_is_capturing(self, stream: int) -> bool:
        status = check(_driver().cuStreamIsCapturing(stream), "cuStreamIsCapturing")
        return int(status) == 1  # CU_STREAM_CAPTURE_STATUS_ACTIVE

    def create_event(self, enable_timing=False, interprocess=False, blocking_sync=False) -> int:
        self.make_current()
        flags = (0 if enable_timing else 0x2) | (0x4 if interprocess else 0) | (0x1 if blocking_sync else 0)
        return int(check(_driver().cuEventCreate(flags), "cuEventCreate"))

    def destroy_event(self, event: int):
        if event:
            d = _driver()
            res = d.cuEventDestroy(event)
            if res[0] not in (d.CUresult.CUDA_ERROR_DEINITIALIZED, d.CUresult.CUDA_ERROR_CONTEXT_IS_DESTROYED):
                check(res, "cuEventDestroy")

    def record_event(self, event: int, stream: int, external: bool = False):
        self.make_current()
        d = _driver()
        if external and self.capturing:  # the flag only means something inside a capture
            check(d.cuEventRecordWithFlags(event, stream, 1), "cuEventRecordWithFlags")  # RECORD_EXTERNAL
        else:
            check(d.cuEventRecord(event, stream), "cuEventRecord")

    def wait_event(self, stream: int, event: int, external: bool = False):
        self.make_current()
        flags = 1 if external and self.capturing else 0  # CU_EVENT_WAIT_EXTERNAL
        check(_driver().cuStreamWaitEvent(stream, event, flags), "cuStreamWaitEvent")

    def event_query(self, event: int) -> bool:
        d = _driver()
        (err,) = d.cuEventQuery(event)
        if err == d.CUresult.CUDA_ERROR_NOT_READY:
            return False
        self._sync_check((err,), "cuEventQuery")
        return True

    def event_synchronize(self, event: int):
        self._no_capture("synchronize an event")
        self._sync_check(_driver().cuEventSynchronize(event), "cuEventSynchronize")

    def event_elapsed_ms(self, start: int, end: int) -> float:
        return float(check(_driver().cuEventElapsedTime(start, end), "cuEventElapsedTime"))

    # -- graphs ---------------------------------------------------------------------------------

    def begin_capture(self, stream: int, mode: int = 1):
        """Start capturing ``stream`` (mode: 0 global, 1 thread-local, 2 relaxed)."""
        if not stream:
            raise CaptureError("graph capture needs a created stream, not the legacy default stream")
        self.make_current()
        d = _driver()
        check(d.cuStreamBeginCapture(stream, d.CUstreamCaptureMode(mode)), "cuStreamBeginCapture")
        self.capturing += 1

    def end_capture(self, stream: int) -> int:
        self.make_current()
        try:
            graph = check(_driver().cuStreamEndCapture(stream), "cuStreamEndCapture")
        finally:
            self.capturing -= 1
            if not self.capturing:
                self._capture_allocs.clear()  # what was not freed inside belongs to the graph now
                frees, self._deferred_frees = self._deferred_frees, []
                for p in frees:
                    self.free(p)
                graphs, self._deferred_graphs = self._deferred_graphs, []
                for g in graphs:
                    self.destroy_graph(*g)
        return int(graph)

    def instantiate_graph(self, graph: int) -> int:
        # AUTO_FREE_ON_LAUNCH: memory a capture allocated and did not free (a volume or a scratch array
        # the program keeps) is released and allocated again, at the same address, by the next launch;
        # without it a graph holding such memory cannot be launched twice
        self.make_current()
        return int(check(_driver().cuGraphInstantiate(graph, 1), "cuGraphInstantiate"))

    def launch_graph(self, graph_exec: int, stream=None):
        self.make_current()
        s = self.stream if stream is None else stream
        check(_driver().cuGraphLaunch(graph_exec, s), "cuGraphLaunch")

    def graph_node_count(self, graph: int) -> int:
        _nodes, n = check(_driver().cuGraphGetNodes(graph, 0), "cuGraphGetNodes")
        return int(n)

    def destroy_graph(self, graph: int = 0, graph_exec: int = 0):
        if self.capturing:  # destroying a graph is not allowed while a stream captures: after it
            self._deferred_graphs.append((graph, graph_exec))
            return
        d = _driver()
        if graph_exec:
            d.cuGraphExecDestroy(graph_exec)
        if graph:
            d.cuGraphDestroy(graph)
