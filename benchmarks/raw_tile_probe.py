"""Hand-written CUDA for the two tile benchmarks whose targets are open (issue 10), to learn which
structure reaches them before changing the code generator: one warp per tile-block (as tilewarp
runs them now), several such warps packed in one CUDA block (more warps per SM: an SM holds at most
32 blocks), 16-byte loads. Needs CuPy (on the device image). Prints ms and GB/s per variant.

    python benchmarks/raw_tile_probe.py
"""
import cupy as cp
import numpy as np

SRC = r"""
extern "C" __global__ void row_sum(const float* __restrict__ a, float* __restrict__ b, int rows) {
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int row = blockIdx.x * warps + (threadIdx.x >> 5); row < rows; row += gridDim.x * warps) {
        const float* r = a + (long long)row * 256;
        float v[8];
        #pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = r[lane + 32 * k];
        float s = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
        #pragma unroll
        for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
        if (lane == 0) b[row] = s;
    }
}
extern "C" __global__ void row_sum_v4(const float* __restrict__ a, float* __restrict__ b, int rows) {
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int row = blockIdx.x * warps + (threadIdx.x >> 5); row < rows; row += gridDim.x * warps) {
        const float4* r = (const float4*)(a + (long long)row * 256);
        const float4 x = r[lane], y = r[lane + 32];
        float s = (x.x + x.y) + (x.z + x.w) + ((y.x + y.y) + (y.z + y.w));
        #pragma unroll
        for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
        if (lane == 0) b[row] = s;
    }
}
extern "C" __global__ void sum_squares(const double* __restrict__ a, double* __restrict__ out, long long blocks) {
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    double acc = 0.0;
    for (long long blk = blockIdx.x * warps + (threadIdx.x >> 5); blk < blocks; blk += (long long)gridDim.x * warps) {
        const double* r = a + blk * 256;
        double v[8];
        #pragma unroll
        for (int k = 0; k < 8; ++k) { v[k] = r[lane + 32 * k]; }
        double s = 0.0;
        #pragma unroll
        for (int k = 0; k < 8; ++k) s += v[k] * v[k];
        #pragma unroll
        for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
        acc += s;
    }
    if (lane == 0) atomicAdd(out, acc);
}
extern "C" __global__ void sum_squares_v2(const double* __restrict__ a, double* __restrict__ out, long long blocks) {
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    double acc = 0.0;
    for (long long blk = blockIdx.x * warps + (threadIdx.x >> 5); blk < blocks; blk += (long long)gridDim.x * warps) {
        const double2* r = (const double2*)(a + blk * 256);
        double2 v[4];
        #pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = r[lane + 32 * k];
        double s = 0.0;
        #pragma unroll
        for (int k = 0; k < 4; ++k) s += v[k].x * v[k].x + v[k].y * v[k].y;
        #pragma unroll
        for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
        acc += s;
    }
    if (lane == 0) atomicAdd(out, acc);
}
extern "C" __global__ void row_sum_x2(const float* a, float* b, int rows) {
    // two rows per step, no __restrict__: the second row's loads may not pass the first row's store
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const int step = gridDim.x * warps;
    for (int row = blockIdx.x * warps + (threadIdx.x >> 5); row < rows; row += 2 * step) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int rr = row + h * step;
            if (rr >= rows) break;
            const float* r = a + (long long)rr * 256;
            float v[8];
            #pragma unroll
            for (int k = 0; k < 8; ++k) v[k] = r[lane + 32 * k];
            float s = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
            #pragma unroll
            for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
            if (lane == 0) b[rr] = s;
        }
    }
}
extern "C" __global__ void row_sum_x2_pre(const float* a, float* b, int rows) {
    // two rows per step, both rows' loads issued first
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const int step = gridDim.x * warps;
    for (int row = blockIdx.x * warps + (threadIdx.x >> 5); row < rows; row += 2 * step) {
        float v[2][8];
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int rr = row + h * step;
            const float* r = a + (long long)(rr < rows ? rr : row) * 256;
            #pragma unroll
            for (int k = 0; k < 8; ++k) v[h][k] = r[lane + 32 * k];
        }
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int rr = row + h * step;
            float s = ((v[h][0] + v[h][1]) + (v[h][2] + v[h][3])) + ((v[h][4] + v[h][5]) + (v[h][6] + v[h][7]));
            #pragma unroll
            for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
            if (lane == 0 && rr < rows) b[rr] = s;
        }
    }
}
extern "C" __global__ void sum_squares_x2(const double* a, double* __restrict__ out, long long blocks) {
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const long long step = (long long)gridDim.x * warps;
    double acc = 0.0;
    for (long long blk = blockIdx.x * warps + (threadIdx.x >> 5); blk < blocks; blk += 2 * step) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const long long bb = blk + h * step;
            if (bb >= blocks) break;
            const double* r = a + bb * 256;
            double v[8];
            #pragma unroll
            for (int k = 0; k < 8; ++k) { v[k] = r[lane + 32 * k]; }
            double s = 0.0;
            #pragma unroll
            for (int k = 0; k < 8; ++k) s += v[k] * v[k];
            #pragma unroll
            for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
            acc += s;
        }
    }
    if (lane == 0) atomicAdd(out, acc);
}
#define TW_SUMSQ_VARIANT(NAME, LOAD)                                                                 \
extern "C" __global__ void NAME(const double* a, double* out, long long blocks) {                    \
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;                                      \
    double acc = 0.0;                                                                                \
    for (long long blk = blockIdx.x * warps + (threadIdx.x >> 5); blk < blocks; blk += (long long)gridDim.x * warps) { \
        const double* r = a + blk * 256;                                                             \
        double v[8];                                                                                 \
        _Pragma("unroll") for (int k = 0; k < 8; ++k) v[k] = LOAD(r + lane + 32 * k);               \
        double s = 0.0;                                                                              \
        _Pragma("unroll") for (int k = 0; k < 8; ++k) s += v[k] * v[k];                              \
        _Pragma("unroll") for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d); \
        acc += s;                                                                                    \
    }                                                                                                \
    if (lane == 0) atomicAdd(out, acc);                                                              \
}
#define TW_PLAIN(p) (*(p))
TW_SUMSQ_VARIANT(sumsq_plain, TW_PLAIN)
TW_SUMSQ_VARIANT(sumsq_ldg, __ldg)
TW_SUMSQ_VARIANT(sumsq_ldcs, __ldcs)
TW_SUMSQ_VARIANT(sumsq_ldlu, __ldlu)
"""


def timed(fn, it=50):
    fn()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    best = []
    for _ in range(7):
        start.record()
        for _ in range(it):
            fn()
        end.record()
        end.synchronize()
        best.append(cp.cuda.get_elapsed_time(start, end) / it)
    return float(np.median(best))


def main():
    import sys
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    if "--once" in sys.argv:  # one launch of each reference configuration (for Nsight Compute)
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        rows, n = 1 << 16, 4096
        a = cp.random.random((rows, 256), dtype=cp.float32)
        b = cp.zeros(rows, dtype=cp.float32)
        d = cp.random.random((n, n))
        out = cp.zeros(1, dtype=cp.float64)
        for _ in range(2):
            mod.get_function("row_sum")((32 * sms * 4,), (32,), (a, b, np.int32(rows)))
            mod.get_function("sum_squares")((32 * sms,), (32,), (d, out, np.int64(n * n // 256)))
        cp.cuda.Device().synchronize()
        return
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    x = cp.zeros(1 << 27, dtype=cp.float32)
    y = cp.zeros_like(x)
    ms = timed(lambda: cp.copyto(y, x))
    copy = 2 * x.nbytes / ms / 1e6
    print(f"device copy {copy:.0f} GB/s ({sms} SMs)")
    rows = 1 << 16
    a = cp.random.random((rows, 256), dtype=cp.float32)
    b = cp.zeros(rows, dtype=cp.float32)
    want = a.sum(axis=1)
    for name in ("row_sum", "row_sum_v4", "row_sum_x2", "row_sum_x2_pre"):
        k = mod.get_function(name)
        for warps in (1, 4):
            for waves in (0, 1, 4):
                per_sm = min(32, 64 // warps)
                grid = -(-rows // warps) if waves == 0 else min(-(-rows // warps), per_sm * sms * waves)
                run = lambda: k((grid,), (32 * warps,), (a, b, np.int32(rows)))  # noqa: E731
                t = timed(run)
                ok = bool(cp.allclose(b, want, rtol=1e-4))
                print(f"{name:11s} warps/block {warps} waves {waves} grid {grid:6d}: {t:.4f} ms "
                      f"{a.nbytes / t / 1e6:6.0f} GB/s {a.nbytes / t / 1e6 / copy * 100:5.1f}% of copy ok={ok}")
    n = 4096
    d = cp.random.random((n, n))
    out = cp.zeros(1, dtype=cp.float64)
    want = float((d * d).sum())
    for name in ("sum_squares", "sum_squares_v2", "sum_squares_x2", "sumsq_plain", "sumsq_ldg", "sumsq_ldcs", "sumsq_ldlu"):
        k = mod.get_function(name)
        for warps in (1, 2):
            for waves in (1, 2):
                per_sm = min(32, 64 // warps)
                grid = per_sm * sms * waves
                run = lambda: k((grid,), (32 * warps,), (d, out, np.int64(n * n // 256)))  # noqa: E731
                t = timed(run)
                out.fill(0)
                run()
                rel = abs(float(out[0]) - want) / want
                print(f"{name:14s} warps/block {warps} waves {waves} grid {grid:6d}: {t:.4f} ms "
                      f"{d.nbytes / t / 1e6:6.0f} GB/s {d.nbytes / t / 1e6 / copy * 100:5.1f}% of copy rel={rel:.1e}")


if __name__ == "__main__":
    main()
