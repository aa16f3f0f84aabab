// The CUDA launch hot path: one C call from Python per wp.launch.
//
// Python calls through ctypes, where every integer argument costs ~0.13 us to convert and a
// pointer (a bytes object, an int address) ~0.1 us, so everything that is fixed per kernel, device
// and block size (function handle, the slot holding the device's current stream, the context,
// dynamic shared memory, block size) lives in a tw_launch_rec that Python prepares once, and the
// launch size is read from the argument block itself. cuLaunchKernel is resolved with dlsym from
// the libcuda.so.1 the process already loaded (cuda.bindings loaded it), so this library needs no
// CUDA headers or link-time CUDA dependency and builds with the host compiler alone.
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

namespace {

typedef int (*launch_kernel_t)(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned smem, void* stream, void** params, void** extra);
typedef int (*ctx_get_current_t)(void** ctx);

launch_kernel_t g_launch = nullptr;
ctx_get_current_t g_ctx_get_current = nullptr;

const int64_t kMaxGridX = 2147483647;  // the kernels run a grid-stride loop, so capping is safe
const int kInvalidValue = 1;            // CUDA_ERROR_INVALID_VALUE
const int kNotInitialised = 3;          // CUDA_ERROR_NOT_INITIALIZED
const int kWrongContext = -1;           // not a CUresult: Python makes the context current and retries
const int kBoundsSizeOffset = 24;       // offsetof(tw::launch_bounds_t, size): int32 shape[4], int32 ndim

}  // namespace

extern "C" {

// Fixed per (kernel, device[, block size]). `stream_slot` points at the device's current-stream
// word, which Python rewrites on wp.set_stream / ScopedStream / capture, so records never go stale.
struct tw_launch_rec {
    void* function;
    void** stream_slot;
    uint32_t shared_mem;
    uint32_t block_dim;  // read by tw_cuda_submit only (one record per kernel, device and block size)
    void* context;       // the device's context, which tw_cuda_submit checks is current
};

// 0 when cuLaunchKernel was found, else -1 (no libcuda in the process).
int tw_cuda_init() {
    if (g_launch) return 0;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) return -1;
    g_launch = reinterpret_cast<launch_kernel_t>(dlsym(lib, "cuLaunchKernel"));
    g_ctx_get_current = reinterpret_cast<ctx_get_current_t>(dlsym(lib, "cuCtxGetCurrent"));
    return g_launch && g_ctx_get_current ? 0 : -1;
}

static inline int launch_on(const tw_launch_rec* rec, void* args, int64_t n_tasks, int64_t block_dim,
                            void* stream) {
    if (!g_launch) return kNotInitialised;
    if (n_tasks <= 0) return 0;
    if (block_dim <= 0) return kInvalidValue;
    int64_t grid = (n_tasks + block_dim - 1) / block_dim;
    if (grid > kMaxGridX) grid = kMaxGridX;
    void* params[1] = {args};  // the kernel's one by-value struct; the driver copies it now
    return g_launch(rec->function, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block_dim), 1, 1,
                    rec->shared_mem, stream, params, nullptr);
}

// Launch on the device's current stream. Returns the CUresult.
int tw_cuda_launch(const tw_launch_rec* rec, void* args, int64_t n_tasks, int64_t block_dim) {
    return launch_on(rec, args, n_tasks, block_dim, *rec->stream_slot);
}

// Launch on an explicit stream (wp.launch(..., stream=s)).
int tw_cuda_launch_on(const tw_launch_rec* rec, void* args, int64_t n_tasks, int64_t block_dim, void* stream) {
    return launch_on(rec, args, n_tasks, block_dim, stream);
}

// wp.launch's entry: `args` is the kernel's argument block, which starts with its
// tw::launch_bounds_t, so the task count comes from there; block size and stream from `rec`.
// Checking the context here (a thread-local read in the driver) spares Python its own check.
// Returns the CUresult, or kWrongContext when another context (or none) is current.
int tw_cuda_submit(const tw_launch_rec* rec, const char* args) {
    if (!g_launch) return kNotInitialised;
    void* current = nullptr;
    if (g_ctx_get_current(&current) != 0 || current != rec->context) return kWrongContext;
    int64_t n_tasks;
    memcpy(&n_tasks, args + kBoundsSizeOffset, sizeof n_tasks);
    return launch_on(rec, const_cast<char*>(args), n_tasks, rec->block_dim, *rec->stream_slot);
}

}  // extern "C"
