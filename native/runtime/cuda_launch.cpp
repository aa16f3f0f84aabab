// The CUDA launch hot path: one C call from Python per wp.launch.
//
// Python calls tw_cuda_launch through ctypes with four integers; argument conversion costs
// ~0.15 us per argument there, so everything that is fixed per kernel and device (function
// handle, the slot holding the device's current stream, dynamic shared memory) lives in a
// tw_launch_rec that Python prepares once. cuLaunchKernel is resolved with dlsym from the
// libcuda.so.1 the process already loaded (cuda.bindings loaded it), so this library needs no
// CUDA headers or link-time CUDA dependency and builds with the host compiler alone.
#include <dlfcn.h>
#include <stdint.h>

namespace {

typedef int (*launch_kernel_t)(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned smem, void* stream, void** params, void** extra);

launch_kernel_t g_launch = nullptr;

const int64_t kMaxGridX = 2147483647;  // the kernels run a grid-stride loop, so capping is safe
const int kNotInitialised = 3;          // CUDA_ERROR_NOT_INITIALIZED

}  // namespace

extern "C" {

// Fixed per (kernel, device). `stream_slot` points at the device's current-stream word, which
// Python rewrites on wp.set_stream / ScopedStream / capture, so records never go stale.
struct tw_launch_rec {
    void* function;
    void** stream_slot;
    uint32_t shared_mem;
    uint32_t reserved;
};

// 0 when cuLaunchKernel was found, else -1 (no libcuda in the process).
int tw_cuda_init() {
    if (g_launch) return 0;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) return -1;
    g_launch = reinterpret_cast<launch_kernel_t>(dlsym(lib, "cuLaunchKernel"));
    return g_launch ? 0 : -1;
}

static inline int launch_on(const tw_launch_rec* rec, void* args, int64_t n_tasks, int64_t block_dim,
                            void* stream) {
    if (!g_launch) return kNotInitialised;
    if (n_tasks <= 0) return 0;
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

}  // extern "C"
