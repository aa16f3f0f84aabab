// Lane- and block-level helpers for the library's own kernels (tilewarp/utils/'s radix sort, the
// geometry builds' reductions).
#pragma once

namespace tw {

// The radix sort's stable ranks (tilewarp/utils/radix_lanes.py). A block of tasks takes a chunk of
// elements in rounds, one element per task a round: lane_element(round) is the task's element of the
// round within the chunk. On the GPU each warp takes its own contiguous 256 elements, 32 a round, so
// a warp ranks its elements with no block barrier: lane_digit_rank(d, round, bits) ranks the element among
// the warp's earlier elements holding digit d (lane votes, then the warp's running counts in shared
// memory); lane_digit_bases later adds the counts of the warps before it. d in [0, 1 << bits), negative
// for no element (a padding task). GPU: a block of up to 256 threads, every thread calling in every
// round. CPU: a block is one task, a "warp" of one, its counts the worker thread's own (a task runs
// all its rounds before the pool hands that thread another).
constexpr int LANE_ROUNDS = 8;
constexpr int LANE_CHUNK = 256 * LANE_ROUNDS;  // the most elements a chunk holds
namespace detail {
#if TW_IS_CUDA
TW_FUNC int32_t (*lane_warp_counts())[256] {  // per warp: how many of its elements so far hold each digit
    __shared__ int32_t counts[8][256];  // one per block: a function's __shared__ variable is static
    return counts;
}
TW_FUNC int32_t* lane_ranks() {  // each element's rank within its warp, by round then task
    __shared__ int32_t ranks[LANE_CHUNK];
    return ranks;
}
// The lanes of this warp holding digit d (d in [0, 1 << bits), or all lanes with a negative d): when
// every lane holds the same one (high digits of clustered keys), the active lanes; else one vote per
// digit bit, then the validity vote, rather than __match_any_sync, whose cost grows with the distinct
// values in the warp (32 distinct digits are common: consecutive grid cells).
// Whether every active lane of the warp holds the same d.
TW_FUNC bool lane_all_same(unsigned active, int32_t d) {
    return __all_sync(active, d == __shfl_sync(active, d, __ffs(active) - 1));
}
TW_FUNC unsigned lane_digit_peers(int32_t d, int32_t bits) {
    const unsigned active = __activemask();
    if (lane_all_same(active, d)) return active;
    unsigned peers = __ballot_sync(active, d >= 0);
    if (d < 0) peers = ~peers & active;
    for (int bit = 0; bit < bits; ++bit) {
        const unsigned votes = __ballot_sync(active, (d >> bit) & 1);
        peers &= ((d >> bit) & 1) ? votes : ~votes;
    }
    return peers;
}
#else
inline int32_t (*lane_warp_counts())[256] {
    static thread_local int32_t counts[1][256];
    return counts;
}
inline int32_t* lane_ranks() {
    static thread_local int32_t ranks[LANE_CHUNK];
    return ranks;
}
#endif
}  // namespace detail

TW_FUNC int32_t lane_element(int32_t round) {
#if TW_IS_CUDA
    return (int32_t)((threadIdx.x >> 5) * (32u * LANE_ROUNDS) + (unsigned)round * 32u + (threadIdx.x & 31u));
#else
    return round;
#endif
}

// Ask for the task's elements of every round of the chunk starting at `base` (of n) to be brought into
// the SM's cache at once: the ranking rounds then read them without waiting a memory latency each
// (a round's warp votes and barriers keep its load from being issued ahead of the round before).
template <typename T> TW_FUNC void lane_prefetch(const array_t<T, 1>& a, int32_t base, int32_t n) {
#if TW_IS_CUDA
    for (int e = 0; e < LANE_ROUNDS; ++e) {
        const int32_t i = base + lane_element(e);
        if (i < n) asm volatile("prefetch.global.L1 [%0];" ::"l"((const char*)a.data + (int64_t)i * a.strides[0]));
    }
#else
    (void)a, (void)base, (void)n;
#endif
}

TW_FUNC void lane_digit_rank(int32_t d, int32_t round, int32_t bits) {
#if TW_IS_CUDA
    const unsigned tid = threadIdx.x, lane = tid & 31u;
    int32_t* mine = detail::lane_warp_counts()[tid >> 5];
    if (round == 0) {
        for (unsigned k = lane; k < 256u; k += 32u) mine[k] = 0;
        __syncwarp();
    }
    const unsigned peers = detail::lane_digit_peers(d, bits);
    int32_t rank = 0;
    if (d >= 0) rank = mine[d] + __popc(peers & ((1u << lane) - 1u));
    __syncwarp();  // every lane has read the counts before the round's leaders add to them
    if (d >= 0 && lane == (unsigned)(__ffs(peers) - 1)) mine[d] += __popc(peers);
    __syncwarp();
    detail::lane_ranks()[round * (int32_t)blockDim.x + (int32_t)tid] = rank;
#else
    (void)bits;
    int32_t* mine = detail::lane_warp_counts()[0];
    if (round == 0) {
        for (int k = 0; k < 256; ++k) mine[k] = 0;
    }
    detail::lane_ranks()[round] = d >= 0 ? mine[d]++ : 0;
#endif
}

// Digit counts of several tables at once (a histogram of every radix pass in one read of the keys):
// lane_digit_tally(d, table, round) counts digit d (none if negative) in table `table` (< 8); round 0
// of table 0 clears them all. lane_tally_total(t, table): the count of digit t so far; on the GPU every
// thread of the block calls it (it waits for the block's tallies).
namespace detail {
#if TW_IS_CUDA
TW_FUNC int32_t (*lane_tallies())[256] {
    __shared__ int32_t tallies[8][256];
    return tallies;
}
#else
inline int32_t (*lane_tallies())[256] {
    static thread_local int32_t tallies[8][256];
    return tallies;
}
#endif
}  // namespace detail

TW_FUNC void lane_digit_tally(int32_t d, int32_t table, int32_t round) {
    int32_t(*tallies)[256] = detail::lane_tallies();
#if TW_IS_CUDA
    if (round == 0 && table == 0) {
        __syncthreads();  // (after any earlier reads of the tallies)
        for (unsigned k = threadIdx.x; k < 8u * 256u; k += blockDim.x) tallies[k >> 8][k & 255u] = 0;
        __syncthreads();
    }
    // a warp whose lanes all hold one digit (the high digits of sorted or clustered keys) adds once;
    // otherwise each lane adds its own (no votes: a tally needs no ranks)
    const unsigned active = __activemask();
    if (detail::lane_all_same(active, d)) {
        if (d >= 0 && (threadIdx.x & 31u) == (unsigned)(__ffs(active) - 1)) atomicAdd(&tallies[table & 7][d], __popc(active));
    } else if (d >= 0) {
        atomicAdd(&tallies[table & 7][d], 1);
    }
#else
    if (round == 0 && table == 0) {
        for (int k = 0; k < 8 * 256; ++k) tallies[k >> 8][k & 255] = 0;
    }
    if (d >= 0) ++tallies[table & 7][d];
#endif
}

TW_FUNC int32_t lane_tally_total(int32_t t, int32_t table) {
#if TW_IS_CUDA
    __syncthreads();
#endif
    return detail::lane_tallies()[table & 7][t & 255];
}

// A chunk's scatter in one pass (a "onesweep" radix pass): the block takes the next chunk in launch
// order (lane_ticket), ranks its elements (lane_digit_rank, which keeps each rank for the staging),
// then lane_digit_bases finds where each digit's run of this chunk goes: the digit's start
// over the whole array (the pass's histogram, counted beforehand for every pass) plus the counts of
// that digit in the chunks before this one, by decoupled look-back: each chunk publishes its count per
// digit as soon as it has ranked, and its inclusive prefix once known, so a chunk adds up its
// predecessors' words until it meets a prefix, instead of waiting for a separate scan pass. Tickets
// (not block ids) order the chunks, so every chunk a block waits on belongs to a block already
// running. The elements are then staged in digit order (lane_stage, shared memory on the GPU) and
// written out a digit run at a time (lane_flush): neighbouring tasks write neighbouring addresses.
// The counters (int64, zeroed before the sort): a ticket per pass, the passes' histograms (256
// counts each), then per pass and chunk 256 status words, a count plus one of the flags below.
constexpr int64_t LANE_AGGREGATE = int64_t(1) << 60;  // the chunk's own count of the digit
constexpr int64_t LANE_PREFIX = int64_t(1) << 61;     // the count in this chunk and all before it
constexpr int64_t LANE_COUNT_MASK = LANE_AGGREGATE - 1;
constexpr int LANE_LOOK_BACK = 8;  // status words a look-back step reads at once
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
TW_FUNC int64_t lane_load_status(const int64_t* at) { return *(const volatile int64_t*)at; }
TW_FUNC void lane_store_status(int64_t* at, int64_t v) { *(volatile int64_t*)at = v; }
// The block's exclusive scan of one value per task (tasks < 256), and its total.
TW_FUNC int32_t lane_block_scan(int32_t v, int32_t* total) {
    __shared__ int32_t warp_totals[8];
    const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
    const int32_t own = v;
    for (int off = 1; off < 32; off <<= 1) {
        const int32_t u = __shfl_up_sync(0xffffffffu, v, off);
        if ((int)lane >= off) v += u;
    }
    if (lane == 31u) warp_totals[warp] = v;
    __syncthreads();
    int32_t all = 0;
    for (unsigned w = 0; w < (blockDim.x + 31u) >> 5; ++w) {
        if (w < warp) v += warp_totals[w];
        all += warp_totals[w];
    }
    __syncthreads();  // the totals are read before a later scan rewrites them
    *total = all;
    return v - own;
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
inline int64_t lane_load_status(const int64_t* at) { return __atomic_load_n(at, __ATOMIC_ACQUIRE); }
inline void lane_store_status(int64_t* at, int64_t v) { __atomic_store_n(at, v, __ATOMIC_RELEASE); }
#endif
// The look-back for digit d of chunk `chunk` whose own count is `count`: publish the count, add up
// the predecessors' words back to the first prefix (waiting on any not yet published), publish the
// prefix; returns the count of d in the chunks before this one.
TW_FUNC int64_t lane_look_back(int64_t* status, int32_t chunk, int32_t d, int64_t count) {
    int64_t* mine = status + (int64_t)chunk * 256 + d;
    if (chunk == 0) {
        lane_store_status(mine, LANE_PREFIX | count);
        return 0;
    }
    lane_store_status(mine, LANE_AGGREGATE | count);
    // predecessors LANE_LOOK_BACK at a time: their loads overlap (when every chunk of a pass is
    // resident at once, a walk can pass many chunks that have only their own counts so far)
    int64_t before = 0;
    for (int64_t c = chunk - 1; c >= 0; c -= LANE_LOOK_BACK) {
        int64_t w[LANE_LOOK_BACK];
        for (int j = 0; j < LANE_LOOK_BACK; ++j) w[j] = c - j >= 0 ? lane_load_status(status + (c - j) * 256 + d) : 0;
        for (int j = 0; j < LANE_LOOK_BACK && c - j >= 0; ++j) {
            while (w[j] == 0) w[j] = lane_load_status(status + (c - j) * 256 + d);
            before += w[j] & LANE_COUNT_MASK;
            if (w[j] & LANE_PREFIX) {
                lane_store_status(mine, LANE_PREFIX | (before + count));
                return before;
            }
        }
    }
    lane_store_status(mine, LANE_PREFIX | (before + count));
    return before;
}
}  // namespace detail

// The next chunk in launch order, for the whole block: counters[slot] counts the chunks handed out.
TW_FUNC int32_t lane_ticket(const array_t<int64_t, 1>& counters, int32_t slot) {
#if TW_IS_CUDA
    __shared__ int32_t ticket;
    if (threadIdx.x == 0) ticket = (int32_t)atomicAdd((unsigned long long*)(counters.data + slot), 1ull);
    __syncthreads();
    return ticket;
#else
    return (int32_t)__atomic_fetch_add(counters.data + slot, (int64_t)1, __ATOMIC_RELAXED);
#endif
}

// After the chunk's last lane_digit_rank: each digit's run start within the chunk and its place in the
// output, for lane_stage and lane_flush. status: the pass's status words (256 a chunk); hist[d]: the
// pass's count of digit d over the whole array. The warps' counts become, per digit, the count in the
// warps before each one (what lane_stage adds to a rank within the warp).
TW_FUNC void lane_digit_bases(const array_t<int64_t, 1>& status, const array_t<int64_t, 1>& hist, int32_t chunk,
                              int32_t digits) {
    int32_t* starts = detail::lane_starts();
    int32_t* bases = detail::lane_bases();
    int32_t(*warps)[256] = detail::lane_warp_counts();
#if TW_IS_CUDA
    __syncthreads();  // every warp's counts are in place
    const int32_t t = (int32_t)threadIdx.x;
    int32_t count = 0;
    if (t < 256) {
        for (unsigned w = 0; w < (blockDim.x + 31u) >> 5; ++w) {
            const int32_t c = warps[w][t];
            warps[w][t] = count;
            count += c;
        }
    }
    if (t >= digits) count = 0;
    const int32_t everywhere = t < digits ? (int32_t)hist.data[t] : 0;
    int32_t in_chunk = 0, n = 0;
    const int32_t start = detail::lane_block_scan(count, &in_chunk);
    const int32_t first = detail::lane_block_scan(everywhere, &n);
    if (t < digits) {
        const int64_t before = detail::lane_look_back(status.data, chunk, t, count);
        starts[t] = start;
        bases[t] = first + (int32_t)before - start;
    }
    if (t == 0) *detail::lane_staged_count() = in_chunk;
    __syncthreads();
#else
    int32_t start = 0, first = 0;
    for (int32_t d = 0; d < digits; ++d) {
        const int32_t count = warps[0][d];
        const int64_t before = detail::lane_look_back(status.data, chunk, d, count);
        starts[d] = start, bases[d] = first + (int32_t)before - start;
        start += count, first += (int32_t)hist.data[d];
    }
    *detail::lane_staged_count() = start;
#endif
}

// Put the element ranked in `round` (by lane_digit_rank) at its place in the chunk's digit order: its
// digit's run start, plus the digit's count in the warps before its own, plus its rank in its warp.
template <typename K> TW_FUNC void lane_stage(int32_t d, int32_t round, K key, int32_t value) {
    if (d < 0) return;
#if TW_IS_CUDA
    const int32_t rank = detail::lane_ranks()[round * (int32_t)blockDim.x + (int32_t)threadIdx.x] +
                         detail::lane_warp_counts()[threadIdx.x >> 5][d];
#else
    const int32_t rank = detail::lane_ranks()[round];
#endif
    const int32_t at = detail::lane_starts()[d] + rank;
    detail::lane_staged_keys<K>()[at] = key;
    detail::lane_staged_values()[at] = value;
    detail::lane_staged_digits()[at] = (uint8_t)d;
}

// After the last stage, the element at place round * block + task: (key, value, where it goes: its
// digit's slot plus its place in the run), or a place of -1 past the chunk's elements.
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
