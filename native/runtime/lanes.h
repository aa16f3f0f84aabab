// Lane-level helpers for the library's own kernels (tilewarp/utils.py's radix sort).
#pragma once

namespace tw {

// (how many lanes of this warp below this one hold the same digit d, how many hold it in all): on
// the GPU the 32 lanes of a warp, which hold 32 consecutive tasks (the launch's grid-stride loop
// keeps them so); on the CPU each task is a warp of its own, (0, 1). A stable rank within the warp
// without atomics or shared memory.
TW_FUNC vec_t<2, int32_t> lane_digit_rank(int32_t d) {
#if TW_IS_CUDA
    unsigned active = __activemask();
    unsigned peers = __match_any_sync(active, d);
    unsigned below = (1u << (threadIdx.x & 31u)) - 1u;
    return vec_t<2, int32_t>(__popc(peers & below), __popc(peers));
#else
    return vec_t<2, int32_t>(0, 1);
#endif
}

// The lanes lane_digit_rank groups: 32 on the GPU, 1 on the CPU.
TW_FUNC int32_t lane_width() {
#if TW_IS_CUDA
    return 32;
#else
    return 1;
#endif
}

}  // namespace tw
