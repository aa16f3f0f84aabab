// wp.zeros(shape, dtype) inside kernels: a fixed-size array in the thread's own (local) memory. The
// emitter declares the buffer at the top of the function (Builtin.storage); each call zeroes it and
// returns an ordinary contiguous array_t over it, so indexing, views, slices, len and shape (and
// debug bounds checks) are the global arrays' own. No gradient array: grad is null.
#pragma once
#include "array.h"

namespace tw {
template <typename T, int D, typename... S>
TW_FUNC array_t<T, D> local_zeros(T* storage, S... shape) {
    static_assert(sizeof...(S) == D, "one extent per dimension");
    array_t<T, D> a;
    const int32_t extents[D] = {(int32_t)shape...};
    int64_t n = 1;
    for (int d = D - 1; d >= 0; --d) {
        a.shape[d] = extents[d];
        a.strides[d] = n * (int64_t)sizeof(T);
        n *= extents[d];
    }
    for (int64_t k = 0; k < n; ++k) storage[k] = T();
    a.data = storage;
    a.grad = nullptr;
    return a;
}
}  // namespace tw
