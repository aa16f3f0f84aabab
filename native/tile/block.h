// The block execution model of kernels that use tiles (docs/ARCHITECTURE.md, "Tiles").
//
// A block of tw_block_dim lanes runs on tw_threads threads, each running tw_lanes = block_dim /
// threads of the lanes: on the CPU one thread runs every lane, on CUDA each thread one lane or, for
// kernels heavy in per-lane memory reads, a few (more loads in flight per thread). The emitted body
// runs once per block and thread: statements each lane executes for itself sit between
// TW_LANES_BEGIN and TW_LANES_END, a loop over the thread's lanes (guarded at the end of the launch);
// their per-lane values (TW_VARYING) are arrays over those lanes, indexed by TW_L. Tile operations,
// and values the same in every lane, sit outside, once per thread.
#pragma once
#include "../core/target.h"

#define TW_VARYING(NAME, ...) __VA_ARGS__ NAME[tw_lanes]{}
#define TW_L(NAME) NAME[tw_c]
#define TW_LANE0(NAME) NAME[0]  // a per-lane operand of a tile op: the thread's first lane's

// A per-lane vector or matrix that is only ever written whole and read as a value (emit/block.py
// soa_lane_values): on the CPU its lanes are stored component by component (structure of arrays),
// so the vectorised lane loop reads and writes each component of 8 lanes with one plain load or
// store instead of shuffling 3-float records (the tile N-body: most of its lane loop's work).
#if TW_IS_CUDA
#define TW_SOA_VARYING(NAME, S, ...) TW_VARYING(NAME, __VA_ARGS__)
#define TW_SOA_GET(NAME) TW_L(NAME)
#define TW_SOA_SET(NAME, ...) TW_L(NAME) = (__VA_ARGS__)
#else
namespace tw {
template <typename V, typename S, int L> struct soa_lanes {
    static constexpr int K = sizeof(V) / sizeof(S);  // V is K scalars S (vec_t, mat_t, quat_t, transform_t)
    S c[K][L];
    TW_FUNC V get(int i) const {
        V v;
        S* p = reinterpret_cast<S*>(&v);
        for (int k = 0; k < K; ++k) p[k] = c[k][i];
        return v;
    }
    TW_FUNC void set(int i, const V& v) {
        const S* p = reinterpret_cast<const S*>(&v);
        for (int k = 0; k < K; ++k) c[k][i] = p[k];
    }
};
}  // namespace tw
#define TW_SOA_VARYING(NAME, S, ...) tw::soa_lanes<__VA_ARGS__, S, tw_lanes> NAME{}
#define TW_SOA_GET(NAME) NAME.get(tw_c)
#define TW_SOA_SET(NAME, ...) NAME.set(tw_c, __VA_ARGS__)
#endif

// A lane section is printed twice: for a block whose lanes all lie inside the launch (all but the
// last block) without any guard, so the unrolled lanes' loads can all be in flight together (and
// the CPU's lane loop has a constant trip count to vectorise), then guarded, for the last block.
#if TW_IS_CUDA
#define TW_LANE_TASK (tw_base + (int64_t)tw::lane_index() + (int64_t)tw_c * tw_threads)
#define TW_LANE_LOOP TW_UNROLL for (int tw_c = 0; tw_c < tw_lanes; ++tw_c)
#else
#define TW_LANE_TASK (tw_base + tw_c)
#define TW_LANE_LOOP for (int tw_c = 0; tw_c < tw_lanes; ++tw_c)
#endif
#define TW_LANES_BEGIN                                           \
    if (tw_base + tw_block_dim <= args.bounds.size) {            \
        TW_LANE_LOOP {                                           \
            const int64_t task = TW_LANE_TASK;                   \
            {
#define TW_LANES_PARTIAL                                         \
    }                                                            \
    }                                                            \
    }                                                            \
    else {                                                       \
        TW_LANE_LOOP {                                           \
            const int64_t task = TW_LANE_TASK;                   \
            if (task < args.bounds.size) {
#define TW_LANES_END \
    }                \
    }                \
    }

// CUDA blocks an SM should hold at once (__launch_bounds__' second argument, which caps registers);
// a kernel's source may #undef and #define it before its entry
#ifndef TW_MIN_BLOCKS
#define TW_MIN_BLOCKS 1
#endif
#if TW_IS_CUDA
#define TW_ONCE_BEGIN if (tw::lane_index() == 0) {
#define TW_ONCE_END }
// A CUDA block runs TW_PACK tile blocks of one warp each side by side where the kernel's source
// defines it before the include (tilewarp/emit/block.py pack_factor), else one. Each has its own
// slot of the dynamic shared memory, TW_PACK_SLOT(BYTES) bytes apart.
#ifndef TW_PACK
#define TW_PACK 1
#endif
#define TW_PACK_SLOT(BYTES) (((BYTES) + 127) / 128 * 128)
// Shared memory of the block: the planned tiles live at fixed offsets of one dynamic allocation.
#if TW_PACK > 1
#define TW_BLOCK_SMEM(BYTES)                                   \
    extern __shared__ __align__(1024) unsigned char tw_slots[]; \
    unsigned char* const tw_smem = tw_slots + (threadIdx.x >> 5) * TW_PACK_SLOT(BYTES)
#else
#define TW_BLOCK_SMEM(BYTES) extern __shared__ __align__(1024) unsigned char tw_smem[]
#endif
// P threads per tile block of BD lanes, TW_PACK tile blocks (one warp each when more than one) per
// CUDA block; the grid strides over the tile blocks. DEFERRED holds what a thread defers over the
// blocks it runs (combined atomics: tilewarp/block/combine.py), done at its end.
#define TW_BLOCK_KERNEL_ENTRY(NAME, ARGS, BODY, DEFERRED, BD, P)                                          \
    extern "C" __global__ void __launch_bounds__((P) * TW_PACK, TW_MIN_BLOCKS) NAME(ARGS args) {          \
        DEFERRED deferred;                                                                                \
        const int64_t first = (int64_t)blockIdx.x * TW_PACK + (TW_PACK > 1 ? (int)(threadIdx.x >> 5) : 0); \
        for (int64_t block = first; block * (BD) < args.bounds.size; block += (int64_t)gridDim.x * TW_PACK) \
            BODY(args, block, deferred);                                                                  \
        deferred.flush();                                                                                 \
    }
#else
#define TW_ONCE_BEGIN {
#define TW_ONCE_END }
#define TW_BLOCK_SMEM(BYTES) alignas(16) unsigned char tw_smem[(BYTES) > 0 ? (BYTES) : 16]
// The thread pool hands each worker a [begin, end) task range whose borders are whole blocks.
#define TW_BLOCK_KERNEL_ENTRY(NAME, ARGS, BODY, DEFERRED, BD, P)                             \
    extern "C" TW_EXPORT void NAME(const void* a, int64_t begin, int64_t end) {              \
        const ARGS& args = *static_cast<const ARGS*>(a);                                     \
        DEFERRED deferred;                                                                   \
        for (int64_t block = begin / (BD); block * (BD) < end; ++block)                      \
            BODY(args, block, deferred);                                                     \
        deferred.flush();                                                                    \
    }
#endif

namespace tw {
struct no_deferred {
    TW_FUNC void flush() {}
};
// Zero a value, or every lane's entry of a per-lane value (adjoints cleared in block code).
template <typename T> TW_FUNC void clear_lanes(T& x) { x = T(); }
template <typename T, int N> TW_FUNC void clear_lanes(T (&x)[N]) {
    for (int l = 0; l < N; ++l) x[l] = T();
}
}  // namespace tw
