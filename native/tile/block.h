// The block execution model of kernels that use tiles (docs/ARCHITECTURE.md, "Tiles").
//
// The emitted body runs once per block: statements every lane executes for itself (SIMT code) sit
// between TW_LANES_BEGIN and TW_LANES_END, tile operations and values the same in every lane
// ("uniform") sit outside. On CUDA each thread is one lane, so the lane section is just a guard
// for the lanes past the end of the launch; on the CPU the block's tile code runs once and each
// lane section is a loop over the lanes, whose per-lane values (TW_VARYING) are arrays indexed by
// the lane (TW_L), so the loop vectorises.
#pragma once
#include "../core/target.h"

#if TW_IS_CUDA
#define TW_VARYING(NAME, ...) __VA_ARGS__ NAME{}
#define TW_L(NAME) NAME
#define TW_LANE0(NAME) NAME  // a per-lane operand of a tile op: this thread's
#define TW_LANES_BEGIN                                       \
    {                                                        \
        const int64_t task = tw_base + (int64_t)threadIdx.x; \
        if (task < args.bounds.size) {
#define TW_LANES_END \
    }                \
    }
#define TW_ONCE_BEGIN if (threadIdx.x == 0) {
#define TW_ONCE_END }
// Shared memory of the block: the planned tiles live at fixed offsets of one dynamic allocation.
#define TW_BLOCK_SMEM(BYTES) extern __shared__ __align__(16) unsigned char tw_smem[]
#define TW_BLOCK_KERNEL_ENTRY(NAME, ARGS, BODY, BD)                                           \
    extern "C" __global__ void __launch_bounds__(BD) NAME(ARGS args) {                        \
        for (int64_t block = blockIdx.x; block * (BD) < args.bounds.size; block += gridDim.x) \
            BODY(args, block);                                                                \
    }
#else
#define TW_VARYING(NAME, ...) __VA_ARGS__ NAME[tw_block_dim]{}
#define TW_L(NAME) NAME[tw_lane]
#define TW_LANE0(NAME) NAME[0]  // a per-lane operand of a tile op: lane 0's
#define TW_LANES_BEGIN                                                                    \
    {                                                                                     \
        const int tw_lanes = args.bounds.size - tw_base < (int64_t)tw_block_dim           \
                                 ? (int)(args.bounds.size - tw_base) : tw_block_dim;      \
        for (int tw_lane = 0; tw_lane < tw_lanes; ++tw_lane) {                            \
            const int64_t task = tw_base + tw_lane;
#define TW_LANES_END \
    }                \
    }
#define TW_ONCE_BEGIN {
#define TW_ONCE_END }
#define TW_BLOCK_SMEM(BYTES) alignas(16) unsigned char tw_smem[(BYTES) > 0 ? (BYTES) : 16]
// The thread pool hands each worker a [begin, end) task range whose borders are whole blocks.
#define TW_BLOCK_KERNEL_ENTRY(NAME, ARGS, BODY, BD)                                          \
    extern "C" TW_EXPORT void NAME(const void* a, int64_t begin, int64_t end) {              \
        const ARGS& args = *static_cast<const ARGS*>(a);                                     \
        for (int64_t block = begin / (BD); block * (BD) < end; ++block) BODY(args, block);   \
    }
#endif

namespace tw {
// Zero a value, or every lane's entry of a per-lane value (adjoints cleared in block code).
template <typename T> TW_FUNC void clear_lanes(T& x) { x = T(); }
template <typename T, int N> TW_FUNC void clear_lanes(T (&x)[N]) {
    for (int l = 0; l < N; ++l) x[l] = T();
}
}  // namespace tw
