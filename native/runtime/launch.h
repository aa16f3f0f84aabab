// Launch bounds and thread indices.
#pragma once
#include "../core/target.h"

namespace tw {
struct launch_bounds_t {
    int32_t shape[4];
    int32_t ndim;
    int64_t size;  // product of shape[0..ndim)
};

// Index along dimension k when the kernel unpacks n = wp.tid() components. Row-major over the
// first n launch dimensions (last fastest); the first component takes the whole quotient. A lone
// wp.tid() is emitted with n = bounds.ndim, k = 0, giving the first coordinate as in Warp.
TW_FUNC int32_t tid(const launch_bounds_t& b, int64_t task, int k, int n) {
    int64_t t = task;
    for (int d = n - 1; d > k; --d) t /= b.shape[d];
    return (int32_t)(k == 0 ? t : t % b.shape[k]);
}
TW_FUNC int32_t tid_linear(int64_t task) { return (int32_t)task; }
}  // namespace tw
