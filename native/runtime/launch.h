// Launch bounds and thread indices.
#pragma once
#include "../core/target.h"

namespace tw {
struct launch_bounds_t {
    int32_t shape[4];
    int32_t ndim;
    int64_t size;  // product of shape[0..ndim)
    // Per dimension, a reciprocal of its extent, filled by the host (runtime/launch.py, launch_ext.cpp):
    // for an extent e >= 2, l = ceil(log2 e), mul = ceil(2^(31 + l) / e) and shift = l - 1, so that
    // n / e = umulhi(n, mul) >> shift for every n < 2^31 (the error mul * e - 2^(31 + l) is below e,
    // too small to reach the next multiple); mul = 0 for an extent of 0 or 1 (n itself).
    uint32_t mul[4];
    uint32_t shift[4];
};

// n / shape[d] for n < 2^31 by the host's reciprocal: a multiply and a shift instead of a division
// (~20 instructions and a reciprocal's latency), which sat between a tile block's start and its
// loads (the tile sum of squares 2-3 % faster on an H100).
TW_FUNC uint32_t quotient(const launch_bounds_t& b, int d, uint32_t n) {
    if (b.mul[d] == 0) return n;
#if TW_IS_CUDA
    return __umulhi(n, b.mul[d]) >> b.shift[d];
#else
    return (uint32_t)(((uint64_t)n * b.mul[d]) >> 32) >> b.shift[d];
#endif
}

// Index along dimension K when the kernel unpacks N = wp.tid() components: row-major over the
// first N launch dimensions (last fastest), the first component taking the whole quotient.
// K and N are template arguments so every shape index is a constant: indexing the by-value
// kernel parameter with a runtime value would force it into local memory on CUDA and turn every
// array access into a generic (not global) load, halving bandwidth.
// Launch dimensions beyond N (wp.launch_tiled's lane dimension, say) are folded away, as in Warp.
// A launch coordinate is never negative: said to the compiler, an index built from it skips the
// wrap of negative indices (array.h) and steps along the lanes by constant offsets.
TW_FUNC int32_t coordinate(int32_t c) {
#if TW_IS_CUDA
    __builtin_assume(c >= 0);
#endif
    return c;
}
// NDIM: the launch's dimensions where the kernel was compiled for them (a tile kernel's block
// shape), so that the padded extents cost nothing; 0 where any launch may come.
template <int K, int N, int NDIM = 0>
TW_FUNC int32_t tid_of(const launch_bounds_t& b, int64_t task) {
    if (b.size <= 0x7fffffff) {
        // coordinate K: the task over the extents after K (those from N on fold away with them),
        // modulo extent K unless K is first; padded extents are 1s
        uint32_t t = (uint32_t)task;
        TW_UNROLL
        for (int d = 3; d > K; --d)
            if (NDIM == 0 || d < NDIM) t = quotient(b, d, t);
        return (int32_t)(K == 0 ? t : t - quotient(b, K, t) * (uint32_t)b.shape[K]);
    }
    int64_t t = task;
    if (b.ndim > N) {  // the shape is padded with 1s: fold every dimension from N on
        int64_t folded = 1;
        for (int d = N; d < 4; ++d) folded *= b.shape[d];
        t /= folded;
    }
    for (int d = N - 1; d > K; --d) t /= b.shape[d];
    return (int32_t)(K == 0 ? t : t % b.shape[K]);
}
// (said non-negative once, after both paths: an assumption made inside each did not survive their
// merge, and views of the coordinate kept their negative-index wrap)
template <int K, int N, int NDIM = 0> TW_FUNC int32_t tid(const launch_bounds_t& b, int64_t task) {
    return coordinate(tid_of<K, N, NDIM>(b, task));
}
// A lone wp.tid(): the first coordinate of however many dimensions the launch has (as in Warp).
TW_FUNC int32_t tid_first(const launch_bounds_t& b, int64_t task) {
    // by the trailing extents' reciprocals (64-bit: folded, divided)
    return coordinate(b.ndim == 1 ? (int32_t)task : tid_of<0, 1>(b, task));
}
TW_FUNC int32_t tid_linear(int64_t task) { return (int32_t)task; }
// tid<K, N> of a block whose launch's last dimension is its lanes (wp.launch_tiled): the other
// coordinates are those of the block index, so no division by the lanes (a one-dimensional
// wp.launch_tiled's wp.tid() is the block index itself: the row sum ran 3 % faster on an H100).
template <int K, int NDIM, typename U> TW_FUNC int32_t block_tid_in(const launch_bounds_t& b, U t) {
    const int last = NDIM ? NDIM - 1 : b.ndim - 1;  // the lanes: not part of the block index
    TW_UNROLL
    for (int d = 3; d > K; --d)
        if (d != last && (NDIM == 0 || d < NDIM))
            t = sizeof(U) == 4 ? (U)quotient(b, d, (uint32_t)t) : t / (U)b.shape[d];
    if (K == 0) return (int32_t)t;
    const U q = sizeof(U) == 4 ? (U)quotient(b, K, (uint32_t)t) : t / (U)b.shape[K];
    return (int32_t)(t - q * (U)b.shape[K]);
}
template <int K, int N, int NDIM = 0> TW_FUNC int32_t block_tid(const launch_bounds_t& b, int64_t block) {
    return coordinate(b.size <= 0x7fffffff ? block_tid_in<K, NDIM>(b, (uint32_t)block)
                                           : block_tid_in<K, NDIM>(b, (uint64_t)block));
}

#if !TW_IS_CUDA
// A CPU worker runs a contiguous range of tasks: their launch coordinates (row-major, last fastest;
// the shape is padded with 1s) are worked out once per row and stepped along it (TW_KERNEL_ENTRY),
// so wp.tid() costs no division per task (two 32-bit divisions made a 2-d launch ~3x slower than
// a 1-d one). The division-based tid() above stays for the GPU, where every thread starts from its
// own task number.
struct cpu_task {
    int64_t linear;
    int32_t inner;  // the coordinate along the innermost launch dimension, stepped along a row
    int32_t last;   // that dimension's number (ndim - 1)
    int32_t c[4];   // every coordinate where the row starts (only those before `last` are read)
    cpu_task(const launch_bounds_t& b, int64_t task) : linear(task), last(b.ndim - 1) {
        for (int d = 3; d > 0; --d) {
            const int64_t extent = b.shape[d] > 0 ? b.shape[d] : 1;  // an empty launch runs no task
            c[d] = (int32_t)(task % extent);
            task /= extent;
        }
        c[0] = (int32_t)task;
        inner = c[last];
    }
    // a one-dimensional launch's task: `last` is a constant 0 the inlined body folds on
    explicit cpu_task(int64_t task) : linear(task), inner((int32_t)task), last(0), c{} {}
    operator int64_t() const { return linear; }
};
TW_FUNC int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
// Launch dimensions beyond N fold away: the first N coordinates are the same either way. K and
// `last` are fixed for a launch, so the choice is made once, not per task.
template <int K, int N> TW_FUNC int32_t tid(const launch_bounds_t&, const cpu_task& t) {
    return K == t.last ? t.inner : t.c[K];
}
TW_FUNC int32_t tid_first(const launch_bounds_t&, const cpu_task& t) { return t.last == 0 ? t.inner : t.c[0]; }
#endif
}  // namespace tw
