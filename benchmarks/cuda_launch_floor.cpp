// Launch-overhead floor, measured in C so no Python sits between the launches: loops of
// cuLaunchKernel / cuLaunchKernelEx / cuEventRecord timed with the host clock, with the
// submission time (before any synchronisation) and the total (after cuCtxSynchronize) kept
// apart. Built by benchmarks/cuda_launch_floor.py with the host compiler; libcuda is found with
// dlsym, so no CUDA headers are needed. Benchmark code only: the library's launch path is
// native/runtime/cuda_launch.cpp.
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

namespace {

typedef int (*launch_t)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                        void**, void**);
struct LaunchConfig {  // CUlaunchConfig
    unsigned grid[3], block[3], smem;
    void* stream;
    void* attrs;
    unsigned n_attrs;
};
typedef int (*launch_ex_t)(const LaunchConfig*, void*, void**, void**);
typedef int (*sync_t)();
typedef int (*event_record_t)(void*, void*);
typedef int (*ctx_get_current_t)(void**);

launch_t g_launch;
launch_ex_t g_launch_ex;
sync_t g_sync;
event_record_t g_event_record;
ctx_get_current_t g_ctx_get_current;

double now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int launch_one(int mode, void* fn, void* stream, void* args, size_t size, unsigned block) {
    void* params[1] = {args};
    if (mode == 0) return g_launch(fn, 1, 1, 1, block, 1, 1, 0, stream, params, nullptr);
    if (mode == 1) {  // one packed buffer: CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE / _END
        void* extra[5] = {reinterpret_cast<void*>(1), args, reinterpret_cast<void*>(2), &size, nullptr};
        return g_launch(fn, 1, 1, 1, block, 1, 1, 0, stream, nullptr, extra);
    }
    if (mode == 2) {
        LaunchConfig c = {{1, 1, 1}, {block, 1, 1}, 0, stream, nullptr, 0};
        return g_launch_ex(&c, fn, params, nullptr);
    }
    return g_launch(fn, 1, 1, 1, block, 1, 1, 0, stream, nullptr, nullptr);  // 3: kernel without params
}

}  // namespace

extern "C" {

int twb_init() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return -1;
    g_launch = reinterpret_cast<launch_t>(dlsym(lib, "cuLaunchKernel"));
    g_launch_ex = reinterpret_cast<launch_ex_t>(dlsym(lib, "cuLaunchKernelEx"));
    g_sync = reinterpret_cast<sync_t>(dlsym(lib, "cuCtxSynchronize"));
    g_event_record = reinterpret_cast<event_record_t>(dlsym(lib, "cuEventRecord"));
    g_ctx_get_current = reinterpret_cast<ctx_get_current_t>(dlsym(lib, "cuCtxGetCurrent"));
    return g_launch && g_launch_ex && g_sync && g_event_record && g_ctx_get_current ? 0 : -2;
}

// n launches of fn (1 block of `block` threads); out[0] = ns per launch until the last one
// returned, out[1] = ns per launch including the final cuCtxSynchronize. flags: 1 synchronise
// before, 2 after (neither inside a capture). stamps (may be null): the host clock after each
// launch, to see where the host starts waiting for a full queue. Returns the first error.
int twb_launch_loop(void* fn, void* stream, void* args, int64_t size, int n, int mode, unsigned block,
                    int flags, double* out, double* stamps) {
    int err = (flags & 1) ? g_sync() : 0;
    if (err) return err;
    double t0 = now_ns();
    for (int i = 0; i < n; ++i) {
        err = launch_one(mode, fn, stream, args, static_cast<size_t>(size), block);
        if (err) return err;
        if (stamps) stamps[i] = now_ns() - t0;
    }
    double t1 = now_ns();
    if (flags & 2) err = g_sync();
    double t2 = now_ns();
    out[0] = (t1 - t0) / n;
    out[1] = (t2 - t0) / n;
    return err;
}

// n cuEventRecord calls on `stream`: a submission that is not a kernel launch.
int twb_event_loop(void* event, void* stream, int n, double* out) {
    int err = g_sync();
    double t0 = now_ns();
    for (int i = 0; i < n && !err; ++i) err = g_event_record(event, stream);
    out[0] = (now_ns() - t0) / n;
    return err;
}

// n cuCtxGetCurrent calls: what tw_cuda_submit's context check adds to a launch.
int twb_ctx_loop(int n, double* out) {
    void* ctx = nullptr;
    int err = 0;
    double t0 = now_ns();
    for (int i = 0; i < n && !err; ++i) err = g_ctx_get_current(&ctx);
    out[0] = (now_ns() - t0) / n;
    return err;
}

// What a system call and the clock cost on this host (a VM exits show up here).
void twb_host_costs(int n, double* out) {
    double t0 = now_ns();
    for (int i = 0; i < n; ++i) (void)now_ns();
    double t1 = now_ns();
    for (int i = 0; i < n; ++i) (void)getppid();
    double t2 = now_ns();
    out[0] = (t1 - t0) / n;
    out[1] = (t2 - t1) / n;
}

}  // extern "C"
