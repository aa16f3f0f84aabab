// Lane- and block-level helpers for the library's own kernels (tilewarp/utils/'s radix sort, the
// geometry builds' reductions).
#pragma once

namespace tw {

// The radix sort's stable ranks (tilewarp/utils/radix.py). A block of tasks takes a chunk of elements in
// rounds, one element per task a round, in task order. lane_digit_rank(d, round): the element's rank
// among the chunk's elements so far holding digit d (earlier rounds, then earlier tasks of this
// round); round 0 starts a chunk. d in [0, 256), or negative for no element (a padding task).
// GPU: a block of up to 256 threads, a launch of a multiple of the block size, every thread calling
// in every round (the call synchronises the block). Each warp ranks its lanes by votes, the warps'
// counts meet in shared memory: no atomics. CPU: a block is one task, its counts the worker
// thread's own (a task runs all its rounds before the pool hands that thread another).
namespace detail {
#if TW_IS_CUDA
TW_FUNC int32_t* lane_digit_running() {
    __shared__ int32_t running[256];  // one per block: a function's __shared__ variable is static
    return running;
}
#else
inline int32_t* lane_digit_running() {
    static thread_local int32_t running[256];
    return running;
}
#endif
}  // namespace detail

#if TW_IS_CUDA
namespace detail {
// The lanes of this warp holding digit d (d in [0, 256), or all lanes with a negative d): one vote per
// digit bit, then the validity vote, rather than __match_any_sync, whose cost grows with the distinct
// values in the warp (32 distinct digits are common: consecutive grid cells).
TW_FUNC unsigned lane_digit_peers(int32_t d) {
    const unsigned active = __activemask();
    unsigned peers = __ballot_sync(active, d >= 0);
    if (d < 0) peers = ~peers & active;
    for (int bit = 0; bit < 8; ++bit) {
        const unsigned votes = __ballot_sync(active, (d >> bit) & 1);
        peers &= ((d >> bit) & 1) ? votes : ~votes;
    }
    return peers;
}
}  // namespace detail
#endif

TW_FUNC int32_t lane_digit_rank(int32_t d, int32_t round) {
    int32_t* running = detail::lane_digit_running();
#if TW_IS_CUDA
    // per warp, how many of its lanes hold each digit; two sets, alternating by round, so a warp may
    // clear the next round's set while slower warps still read this one
    __shared__ int32_t counts[2][8][256];
    const unsigned tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5, warps = (blockDim.x + 31u) >> 5;
    int32_t(*mine)[256] = counts[round & 1];
    if (round == 0) {
        for (unsigned k = tid; k < 256u; k += blockDim.x) running[k] = 0;
    }
    for (unsigned k = lane; k < 256u; k += 32u) mine[warp][k] = 0;
    __syncwarp();
    const unsigned peers = detail::lane_digit_peers(d);
    int32_t rank = __popc(peers & ((1u << lane) - 1u));
    if (d >= 0 && rank == 0) mine[warp][d] = __popc(peers);
    __syncthreads();  // this round's counts (and round 0's cleared running counts) are in place
    if (d >= 0) {
        rank += running[d];
        for (unsigned w = 0; w < warp; ++w) rank += mine[w][d];
    }
    __syncthreads();  // every rank has read running: add this round to it (the next round's first
                      // barrier orders these writes before its reads)
    for (unsigned k = tid; k < 256u; k += blockDim.x) {
        int32_t c = 0;
        for (unsigned w = 0; w < warps; ++w) c += mine[w][k];
        running[k] += c;
    }
    return d >= 0 ? rank : 0;
#else
    if (round == 0) {
        for (int k = 0; k < 256; ++k) running[k] = 0;
    }
    return d >= 0 ? running[d]++ : 0;
#endif
}

// Count digit d into the chunk's running counts (no ranks: a histogram pass); round 0 starts a chunk.
TW_FUNC void lane_digit_count(int32_t d, int32_t round) {
    int32_t* running = detail::lane_digit_running();
#if TW_IS_CUDA
    if (round == 0) {
        for (unsigned k = threadIdx.x; k < 256u; k += blockDim.x) running[k] = 0;
        __syncthreads();
    }
    const unsigned peers = detail::lane_digit_peers(d);
    if (d >= 0 && (threadIdx.x & 31u) == (unsigned)(__ffs(peers) - 1)) atomicAdd(running + d, __popc(peers));
#else
    if (round == 0) {
        for (int k = 0; k < 256; ++k) running[k] = 0;
    }
    if (d >= 0) ++running[d];
#endif
}

// How many of the chunk's elements so far hold digit t. On the GPU every thread of the block calls it
// (it waits for the block's counts and ranks first).
TW_FUNC int32_t lane_digit_total(int32_t t) {
#if TW_IS_CUDA
    __syncthreads();
#endif
    return detail::lane_digit_running()[t & 255];
}

// A chunk's scatter, staged: its elements are first placed in digit order in a chunk-sized buffer
// (shared memory on the GPU), then written out in that order, so neighbouring tasks write neighbouring
// addresses of each digit's run instead of one scattered word each.
// lane_digit_starts: where each digit's run begins within the chunk, from the scanned histogram
// `slots` (digit-major, exclusive: a (digit, chunk) entry's count is the next entry minus it, n past
// the last); every task calls it first. lane_stage(d, rank, key, value): put an element at its run's
// start plus its rank. lane_flush(round, key-type): after the last stage, the element at place
// round * block + task: (key, value, where it goes: its digit's slot plus its place in the run), or
// a place of -1 past the chunk's elements.
constexpr int LANE_CHUNK = 2048;  // the most elements a chunk holds (256 tasks x 8 rounds)
namespace detail {
#if TW_IS_CUDA
TW_FUNC int32_t* lane_starts() {
    __shared__ int32_t starts[256];
    return starts;
}
TW_FUNC int32_t* lane_bases() {  // each digit's slot for this chunk, minus its run's start
    __shared__ int32_t bases[256];
    return bases;
}
template <typename K> TW_FUNC K* lane_staged_keys() {
    __shared__ K keys[LANE_CHUNK];
    return keys;
}
TW_FUNC int32_t* lane_staged_values() {
    __shared__ int32_t values[LANE_CHUNK];
    return values;
}
TW_FUNC uint8_t* lane_staged_digits() {
    __shared__ uint8_t digits[LANE_CHUNK];
    return digits;
}
TW_FUNC int32_t* lane_staged_count() {
    __shared__ int32_t count;
    return &count;
}
#else
inline int32_t* lane_starts() {
    static thread_local int32_t starts[256];
    return starts;
}
inline int32_t* lane_bases() {
    static thread_local int32_t bases[256];
    return bases;
}
template <typename K> K* lane_staged_keys() {
    static thread_local K keys[LANE_CHUNK];
    return keys;
}
inline int32_t* lane_staged_values() {
    static thread_local int32_t values[LANE_CHUNK];
    return values;
}
inline uint8_t* lane_staged_digits() {
    static thread_local uint8_t digits[LANE_CHUNK];
    return digits;
}
inline int32_t* lane_staged_count() {
    static thread_local int32_t count;
    return &count;
}
#endif
}  // namespace detail

TW_FUNC void lane_digit_starts(const array_t<int32_t, 1>& slots, int32_t chunk, int32_t chunks, int32_t digits,
                               int32_t n) {
    int32_t* starts = detail::lane_starts();
    int32_t* bases = detail::lane_bases();
#if TW_IS_CUDA
    __shared__ int32_t warp_totals[8];
    const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
    int32_t slot = 0, count = 0;
    if ((int32_t)t < digits) {
        const int64_t at = (int64_t)t * chunks + chunk;
        slot = slots.data[at];
        count = (at + 1 < (int64_t)digits * chunks ? slots.data[at + 1] : n) - slot;
    }
    int32_t v = count;  // the warp's inclusive scan of the counts, then the warps' totals before it
    for (int off = 1; off < 32; off <<= 1) {
        const int32_t u = __shfl_up_sync(0xffffffffu, v, off);
        if ((int)lane >= off) v += u;
    }
    if (lane == 31u) warp_totals[warp] = v;
    __syncthreads();  // (also: every task has flushed the chunk before, if any, before these writes)
    for (unsigned w = 0; w < warp; ++w) v += warp_totals[w];
    if (t < 256u) starts[t] = v - count, bases[t] = slot - (v - count);
    if ((int32_t)t == digits - 1) *detail::lane_staged_count() = v;  // the chunk's elements
    __syncthreads();
#else
    int32_t at_start = 0;
    for (int32_t d = 0; d < digits; ++d) {
        const int64_t at = (int64_t)d * chunks + chunk;
        const int32_t slot = slots.data[at];
        const int32_t count = (at + 1 < (int64_t)digits * chunks ? slots.data[at + 1] : n) - slot;
        starts[d] = at_start, bases[d] = slot - at_start;
        at_start += count;
    }
    *detail::lane_staged_count() = at_start;
#endif
}

template <typename K> TW_FUNC void lane_stage(int32_t d, int32_t rank, K key, int32_t value) {
    if (d < 0) return;
    const int32_t at = detail::lane_starts()[d] + rank;
    detail::lane_staged_keys<K>()[at] = key;
    detail::lane_staged_values()[at] = value;
    detail::lane_staged_digits()[at] = (uint8_t)d;
}

template <typename K> TW_FUNC tuple_t<K, int32_t, int32_t> lane_flush(int32_t round, K) {
#if TW_IS_CUDA
    if (round == 0) __syncthreads();  // every element is staged
    const int32_t at = round * (int32_t)blockDim.x + (int32_t)threadIdx.x;
#else
    const int32_t at = round;
#endif
    if (at >= *detail::lane_staged_count()) return make_tuple<K, int32_t, int32_t>(K(0), 0, -1);
    const int32_t d = detail::lane_staged_digits()[at];
    return make_tuple<K, int32_t, int32_t>(detail::lane_staged_keys<K>()[at], detail::lane_staged_values()[at],
                                           detail::lane_bases()[d] + at);
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
