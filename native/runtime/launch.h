// Launch bounds and thread indices.
#pragma once
#include "../core/target.h"

namespace tw {
struct launch_bounds_t {
    int32_t shape[4];
    int32_t ndim;
    int64_t size;  // product of shape[0..ndim)
};

// Index along dimension K when the kernel unpacks N = wp.tid() components: row-major over the
// first N launch dimensions (last fastest), the first component taking the whole quotient.
// K and N are template arguments so every shape index is a constant: indexing the by-value
// kernel parameter with a runtime value would force it into local memory on CUDA and turn every
// array access into a generic (not global) load, halving bandwidth.
// Launch dimensions beyond N (wp.launch_tiled's lane dimension, say) are folded away, as in Warp.
template <int K, int N>
TW_FUNC int32_t tid(const launch_bounds_t& b, int64_t task) {
    if (b.size <= 0x7fffffff) {  // 32-bit division: several times cheaper on a GPU than 64-bit
        uint32_t t = (uint32_t)task;
        if (b.ndim > N) {
            uint32_t folded = 1;
            for (int d = N; d < 4; ++d) folded *= (uint32_t)b.shape[d];
            t /= folded;
        }
        for (int d = N - 1; d > K; --d) t /= (uint32_t)b.shape[d];
        return (int32_t)(K == 0 ? t : t % (uint32_t)b.shape[K]);
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
// A lone wp.tid(): the first coordinate of however many dimensions the launch has (as in Warp).
TW_FUNC int32_t tid_first(const launch_bounds_t& b, int64_t task) {
    if (b.ndim == 1) return (int32_t)task;
    if (b.size <= 0x7fffffff) return (int32_t)((uint32_t)task / (uint32_t)(b.size / b.shape[0]));
    return (int32_t)(task / (b.size / b.shape[0]));
}
TW_FUNC int32_t tid_linear(int64_t task) { return (int32_t)task; }
}  // namespace tw
