// Lane- and block-level helpers for the library's own kernels (tilewarp/utils.py's radix sort, the
// geometry builds' reductions).
#pragma once

namespace tw {

// The radix sort's stable rank (tilewarp/utils.py): (how many tasks of this block before this one
// hold the same digit d, how many hold it in all). On the GPU a block of up to 256 consecutive tasks
// (a launch of a multiple of the block size, so every thread of a block arrives: the call
// synchronises the block); d in [0, 256), or negative for a task without a digit (a padding task,
// ranked (0, 0)). On the CPU each task is a block of its own: (0, 1). No atomics: each warp ranks its
// lanes by a vote, and the warps' counts per digit meet in shared memory.
TW_FUNC vec_t<2, int32_t> lane_digit_rank(int32_t d) {
#if TW_IS_CUDA
    __shared__ int32_t counts[8][256];  // per warp of the block, how many of its lanes hold each digit
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = (blockDim.x + 31u) >> 5;
    for (unsigned k = lane; k < 256u; k += 32u) counts[warp][k] = 0;
    __syncwarp();
    const unsigned peers = __match_any_sync(__activemask(), d);
    int32_t rank = __popc(peers & ((1u << lane) - 1u)), total = 0;
    if (d >= 0 && rank == 0) counts[warp][d] = __popc(peers);
    __syncthreads();
    if (d >= 0) {
        for (unsigned w = 0; w < warps; ++w) {
            const int32_t c = counts[w][d];
            rank += w < warp ? c : 0;
            total += c;
        }
    }
    __syncthreads();  // every warp has read the counts before a next call clears them
    return vec_t<2, int32_t>(d >= 0 ? rank : 0, total);
#else
    return vec_t<2, int32_t>(0, d >= 0 ? 1 : 0);
#endif
}

// Folds over a warp's active lanes, for reductions that would otherwise send one atomic per thread
// to the same address (a scene box, a validation count): every active lane gets the fold of all
// active lanes' values, and lane_leader() picks the one lane that writes it. On the CPU a task is a
// warp of its own: the value itself, and every task leads.
namespace detail {
struct lane_min_op { template <typename T> TW_FUNC T operator()(const T& a, const T& b) const { return tw::min(a, b); } };
struct lane_max_op { template <typename T> TW_FUNC T operator()(const T& a, const T& b) const { return tw::max(a, b); } };
struct lane_add_op { template <typename T> TW_FUNC T operator()(const T& a, const T& b) const { return a + b; } };

#if TW_IS_CUDA
template <typename T> TW_FUNC T lane_shfl(unsigned mask, T v, int src) { return __shfl_sync(mask, v, src); }
template <int N, typename T> TW_FUNC vec_t<N, T> lane_shfl(unsigned mask, vec_t<N, T> v, int src) {
    for (int i = 0; i < N; ++i) v.c[i] = __shfl_sync(mask, v.c[i], src);
    return v;
}
template <typename T> TW_FUNC T lane_shfl_xor(T v, int offset) { return __shfl_xor_sync(0xffffffffu, v, offset); }
template <int N, typename T> TW_FUNC vec_t<N, T> lane_shfl_xor(vec_t<N, T> v, int offset) {
    for (int i = 0; i < N; ++i) v.c[i] = __shfl_xor_sync(0xffffffffu, v.c[i], offset);
    return v;
}
#endif

template <typename T, typename Op> TW_FUNC T lane_fold(T v, Op op) {
#if TW_IS_CUDA
    unsigned active = __activemask();
    if (active == 0xffffffffu) {  // a full warp: a butterfly, five shuffles
        for (int offset = 16; offset > 0; offset >>= 1) v = op(v, lane_shfl_xor(v, offset));
        return v;
    }
    // a partial warp (a launch's tail, a divergent branch): every active lane reads every active
    // lane in lane order, so all of them fold the same values the same way
    T acc = lane_shfl(active, v, __ffs(active) - 1);
    for (unsigned rest = active & (active - 1); rest; rest &= rest - 1) acc = op(acc, lane_shfl(active, v, __ffs(rest) - 1));
    return acc;
#else
    (void)op;
    return v;
#endif
}
}  // namespace detail

template <typename T> TW_FUNC T lane_min(T v) { return detail::lane_fold(v, detail::lane_min_op()); }
template <typename T> TW_FUNC T lane_max(T v) { return detail::lane_fold(v, detail::lane_max_op()); }
template <typename T> TW_FUNC T lane_sum(T v) { return detail::lane_fold(v, detail::lane_add_op()); }

// Whether this is the lowest active lane of its warp (always on the CPU).
TW_FUNC bool lane_leader() {
#if TW_IS_CUDA
    return (threadIdx.x & 31u) == (unsigned)(__ffs(__activemask()) - 1);
#else
    return true;
#endif
}

}  // namespace tw
