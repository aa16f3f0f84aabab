"""Read ceilings of the tile benchmarks' memory-bound reductions, hand-written (CuPy, on the device
image): a streaming sum of squares with per-thread sums reduced once, the same as one-warp blocks
over 256-element chunks, a pure 64 MB read, and the row sum with several warps a CUDA block.
Prints ms, GB/s and % of the device copy rate (benchmarks/RESULTS.md, 2026-11-26 sixth session).

    python benchmarks/read_ceiling.py
"""
import cupy as cp
import numpy as np

SRC = r"""
template <typename T, typename V, int U>
__device__ void stream_sum(const V* __restrict__ a, long long nvec, double* out) {
    double acc = 0.0;
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (; i + (U - 1) * step < nvec; i += U * step) {
        V v[U];
        #pragma unroll
        for (int u = 0; u < U; ++u) v[u] = __ldcs(a + i + u * step);
        #pragma unroll
        for (int u = 0; u < U; ++u) { const T* p = (const T*)&v[u]; for (int c = 0; c < (int)(sizeof(V) / sizeof(T)); ++c) acc += (double)p[c] * p[c]; }
    }
    for (; i < nvec; i += step) { V v = a[i]; const T* p = (const T*)&v; for (int c = 0; c < (int)(sizeof(V) / sizeof(T)); ++c) acc += (double)p[c] * p[c]; }
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}
extern "C" __global__ void d2u1(const double2* a, long long n, double* out) { stream_sum<double, double2, 1>(a, n, out); }
extern "C" __global__ void d2u2(const double2* a, long long n, double* out) { stream_sum<double, double2, 2>(a, n, out); }
extern "C" __global__ void d2u4(const double2* a, long long n, double* out) { stream_sum<double, double2, 4>(a, n, out); }
extern "C" __global__ void d1u8(const double* a, long long n, double* out) { stream_sum<double, double, 8>(a, n, out); }
extern "C" __global__ void f4u2(const float4* a, long long n, double* out) { stream_sum<float, float4, 2>(a, n, out); }
extern "C" __global__ void f4u4(const float4* a, long long n, double* out) { stream_sum<float, float4, 4>(a, n, out); }
// one-warp blocks over 256-element chunks, partial sums kept per lane, reduced once at the end
extern "C" __global__ void sq_deferred(const double* __restrict__ a, double* out, long long blocks) {
    const int lane = threadIdx.x & 31;
    double acc = 0.0;
    for (long long blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
        const double* r = a + blk * 256;
        double v[8];
        #pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = r[lane + 32 * k];
        #pragma unroll
        for (int k = 0; k < 8; ++k) acc += v[k] * v[k];
    }
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
    if (lane == 0) atomicAdd(out, acc);
}
// row sum: W warps per block, a warp per row, rows strided
extern "C" __global__ void rows_w(const float* __restrict__ a, float* __restrict__ b, int rows) {
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int row = blockIdx.x * warps + (threadIdx.x >> 5); row < rows; row += gridDim.x * warps) {
        const float4* r = (const float4*)(a + (long long)row * 256);
        const float4 x = __ldcs(r + lane), y = __ldcs(r + lane + 32);
        float s = (x.x + x.y) + (x.z + x.w) + ((y.x + y.y) + (y.z + y.w));
        for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
        if (lane == 0) b[row] = s;
    }
}
"""
def timed(fn, it=50):
    fn(); cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event(); ts = []
    for _ in range(9):
        s.record()
        for _ in range(it): fn()
        e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) / it)
    return float(np.median(ts))
mod = cp.RawModule(code=SRC, options=("-std=c++17",))
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
x = cp.zeros(1 << 27, dtype=cp.float32); y = cp.zeros_like(x)
copy = 2 * x.nbytes / timed(lambda: cp.copyto(y, x)) / 1e6
print(f"device copy {copy:.0f} GB/s")
n = 4096
d = cp.random.random((n, n)); out = cp.zeros(1, dtype=cp.float64); want = float((d * d).sum())
for name, vec in (("d2u1", 2), ("d2u2", 2), ("d2u4", 2), ("d1u8", 1)):
    k = mod.get_function(name)
    for threads in (256, 512, 1024):
        for per_sm in (1, 2, 4, 8):
            if threads * per_sm > 2048: continue
            g = sms * per_sm
            run = lambda: k((g,), (threads,), (d, np.int64(d.size // vec), out))
            t = timed(run); out.fill(0); run(); rel = abs(float(out[0]) - want) / want
            print(f"sumsq {name} {threads}x{g}: {t:.4f} ms {d.nbytes / t / 1e6:5.0f} GB/s {d.nbytes / t / 1e6 / copy * 100:5.1f}% rel {rel:.0e}")
k = mod.get_function("sq_deferred")
for per_sm in (16, 32):
    g = sms * per_sm
    run = lambda: k((g,), (32,), (d, out, np.int64(d.size // 256)))
    t = timed(run); out.fill(0); run(); rel = abs(float(out[0]) - want) / want
    print(f"sumsq deferred one-warp x{g}: {t:.4f} ms {d.nbytes / t / 1e6:5.0f} GB/s {d.nbytes / t / 1e6 / copy * 100:5.1f}% rel {rel:.0e}")
rows = 1 << 16
a = cp.random.random((rows, 256), dtype=cp.float32)
for name in ("f4u2", "f4u4"):
    k = mod.get_function(name)
    for threads in (256, 1024):
        for per_sm in (1, 2, 4):
            if threads * per_sm > 2048: continue
            g = sms * per_sm
            t = timed(lambda: k((g,), (threads,), (a, np.int64(a.size // 4), out)))
            print(f"read 64MB f32 {name} {threads}x{g}: {t:.4f} ms {a.nbytes / t / 1e6:5.0f} GB/s {a.nbytes / t / 1e6 / copy * 100:5.1f}%")
b = cp.zeros(rows, dtype=cp.float32); want = a.sum(axis=1)
k = mod.get_function("rows_w")
for warps in (1, 2, 4, 8, 16):
    for waves in (0, 1, 2, 4):
        per_sm = min(32, 64 // warps)
        g = -(-rows // warps) if waves == 0 else min(-(-rows // warps), per_sm * sms * waves)
        t = timed(lambda: k((g,), (32 * warps,), (a, b, np.int32(rows))))
        ok = bool(cp.allclose(b, want, rtol=1e-4))
        print(f"rows_w {warps} warps waves {waves} grid {g}: {t:.4f} ms {a.nbytes / t / 1e6:5.0f} GB/s {a.nbytes / t / 1e6 / copy * 100:5.1f}% ok={ok}")
