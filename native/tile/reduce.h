// Reductions (whole tile and along an axis), scans and sort.
//
// A whole-tile reduction combines the elements each lane owns, then the lanes' partial results
// (block_reduce). On CUDA that is a warp shuffle tree and one exchange through shared memory; on
// the CPU the block's tile code already holds every element, so the partial result is the total.
#pragma once
#include "tile.h"

namespace tw {
namespace detail {
#if TW_IS_CUDA
// Shuffle any trivially copyable value, 4 bytes at a time: whole words where the type allows (a byte-wise copy cost ~10 byte-permute instructions per step
// of a double's reduction); bytes otherwise.
template <typename T> TW_FUNC T shfl_down(const T& v, int delta) {
    constexpr int W = (int)((sizeof(T) + 3) / 4);
    T r;
    if (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
        const unsigned* s = reinterpret_cast<const unsigned*>(&v);
        unsigned* q = reinterpret_cast<unsigned*>(&r);
        TW_UNROLL
        for (int i = 0; i < W; ++i) q[i] = __shfl_down_sync(0xffffffffu, s[i], delta);
        return r;
    }
    unsigned u[W];
    const char* s = (const char*)&v;
    char* p = (char*)u;
    for (int i = 0; i < (int)sizeof(T); ++i) p[i] = s[i];
    for (int i = 0; i < W; ++i) u[i] = __shfl_down_sync(0xffffffffu, u[i], delta);
    char* q = (char*)&r;
    for (int i = 0; i < (int)sizeof(T); ++i) q[i] = p[i];
    return r;
}
#endif
}  // namespace detail

// Combine `v` (meaningful where `valid`) over the block's P threads. The result is lane 0's `v` (the
// lane that owns a one-element result tile); returns, in lane 0, false when no lane had a value.
// Every thread has a value when the tile has at least P elements (AllValid): no flags to exchange.
template <int P, bool AllValid = false, typename T, typename Op>
TW_FUNC bool block_reduce(bool valid, T& v, const Op& op) {
#if TW_IS_CUDA
    TW_SCRATCH(unsigned char, raw, 32 * sizeof(T));
    TW_SCRATCH(int, any, 32);
    T* part = (T*)raw;
    const int lane = lane_index() & 31, warp = lane_index() >> 5;
    constexpr int warps = (P + 31) / 32;
    if (P > 32) block_sync();  // an earlier reduction's lane 0 may still be reading the scratch
    if (P % 32 == 0) {
        TW_UNROLL
        for (int d = 16; d > 0; d >>= 1) {
            const T o = detail::shfl_down(v, d);
            if (AllValid) {
                v = op(v, o);
                continue;
            }
            const bool ov = __shfl_down_sync(0xffffffffu, valid, d) != 0;
            if (ov) v = valid ? op(v, o) : o, valid = true;
        }
        if (warps == 1) return valid;
        if (lane == 0) {
            if (valid) part[warp] = v;
            any[warp] = valid;
        }
        block_sync();
        if (lane_index() == 0)
            for (int w = 1; w < warps; ++w)
                if (any[w]) v = valid ? op(v, part[w]) : part[w], valid = true;
        return valid;
    }
    // block sizes that are not whole warps: lane 0 combines every lane, 32 at a time
    T* all = (T*)raw;
    bool ok = false;
    T acc = T();
    for (int base = 0; base < P; base += 32) {
        if (lane_index() >= base && lane_index() < base + 32) {
            all[lane_index() - base] = v;
            any[lane_index() - base] = valid;
        }
        block_sync();
        if (lane_index() == 0)
            for (int l = 0; l < 32 && base + l < P; ++l)
                if (any[l]) acc = ok ? op(acc, all[l]) : all[l], ok = true;
        block_sync();
    }
    v = acc;
    return ok;
#else
    return valid;
#endif
}

// Element 0 of a tile, in every lane (a one-element register tile lives in lane 0 only).
template <typename X> TW_FUNC typename X::value_type first_element(const X& t) {
    typedef typename X::value_type T;
#if TW_IS_CUDA
    if (!X::shared) {
        TW_SCRATCH(unsigned char, raw, sizeof(T));
        block_sync();
        if (lane_index() == 0) *(T*)raw = t.at(0, 0);
        block_sync();
        return *(T*)raw;
    }
#endif
    block_sync();
    return t.at(0, 0);
}

// The elements a lane owns, combined; false when it owns none.
template <typename X, typename Op> TW_FUNC bool owned_reduce(const X& t, typename X::value_type& v, const Op& op) {
#if !TW_IS_CUDA
    // The CPU's one thread owns the whole tile: eight independent partial results let the loop run
    // at the adder's throughput instead of its latency (and vectorise); the order is a tree's, as
    // on the GPU, not a sequential sum's.
    constexpr int K = 8;
    if (X::size >= 2 * K) {
        typename X::value_type part[K];
        for (int k = 0; k < K; ++k) part[k] = t.at(k, k);
        int e = K;
        for (; e + K <= X::size; e += K)
            for (int k = 0; k < K; ++k) part[k] = op(part[k], t.at(e + k, e + k));
        for (int k = 0; e + k < X::size; ++k) part[k] = op(part[k], t.at(e + k, e + k));
        for (int w = K / 2; w > 0; w /= 2)
            for (int k = 0; k < w; ++k) part[k] = op(part[k], part[k + w]);
        v = part[0];
        return true;
    }
#endif
    bool valid = false;
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        v = valid ? op(v, t.at(r, e)) : t.at(r, e);
        valid = true;
    }
    return valid;
}

template <typename D, typename X, typename Op> TW_FUNC void tile_reduce(D& out, const X& t, const Op& op) {
    typename X::value_type v = typename X::value_type();
    bool valid = owned_reduce(t, v, op);
    block_reduce<X::threads, (X::size >= X::threads)>(valid, v, op);
    tile_fill_with(out, [&](int, int) { return v; });
}

struct op_add {
    template <typename T> TW_FUNC T operator()(const T& a, const T& b) const { return add(a, b); }
};
struct op_min {
    template <typename T> TW_FUNC T operator()(const T& a, const T& b) const { return min(a, b); }
};
struct op_max {
    template <typename T> TW_FUNC T operator()(const T& a, const T& b) const { return max(a, b); }
};
struct op_mul {
    template <typename T> TW_FUNC T operator()(const T& a, const T& b) const { return mul(a, b); }
};
template <typename D, typename X> TW_FUNC void tile_sum(D& out, const X& t) { tile_reduce(out, t, op_add()); }

// tile_atomic_add(a, tile_sum(t)) combined over the blocks a thread runs (block/combine.py folds
// the two): each thread adds up its own elements of t, block after block; the threads' totals meet
// in one block reduction and one atomic per run of blocks adding to one address, instead of a
// reduction per block. The address is the same in every thread, so each flush is collective.
template <typename T, int P> struct folded_sum : address_run<T, folded_sum<T, P>> {
    TW_FUNC void flush() {
        if (!this->at) return;
        block_reduce<P, true>(true, this->sum, op_add());
        if (lane_index() == 0) atomic_add(this->at, this->sum);
        this->at = nullptr;
    }
};
// R: the one-element tile the sum would have made (its shape places the target element)
template <typename R, typename T, int P, int D, typename X, typename... I>
TW_FUNC void tile_atomic_add_folded(folded_sum<T, P>& c, const array_t<T, D>& a, const X& t, I... i) {
    int64_t o[D];
    detail::offsets(o, i...);
    T* p;  // element 0's place, the same in every thread (tile_place would give each its own element)
    const bool inside = detail::element_place<typename R::shape>(a, a.data, o, 0, p);
    T v = T();
    owned_reduce(t, v, op_add());
    if (inside) c.add(p, v);
}
// the product's adjoint: each element gets the adjoint times the product of the others in its row
// (computed directly, so zeros are handled exactly); the input is shared (or the CPU's whole tile)
template <typename X, typename D> TW_FUNC void adj_tile_prod(const X& t, X& adj_t, const D& adj_out) {
    typedef typename X::value_type T;
    const T g = first_element(adj_out);
    tile_for<X::size, X::threads>([&](int r, int e) {
        T p = T(1);
        for (int j = 0; j < X::size; ++j)
            if (j != e) p = mul(p, t.at(j, j));
        adj_t.at(r, e) = add(adj_t.at(r, e), mul(g, p));
    });
}
template <int Axis, typename X, typename D> TW_FUNC void adj_tile_prod_axis(const X& t, X& adj_t, const D& adj_out) {
    typedef typename X::value_type T;
    typedef typename X::shape S;
    constexpr int n = S::extent(Axis), step = S::stride(Axis);
    tile_for<X::size, X::threads>([&](int r, int e) {
        const int o = (e / (n * step)) * step + e % step, base = (e / (n * step)) * n * step + e % step;
        T p = T(1);
        for (int k = 0; k < n; ++k)
            if (base + k * step != e) p = mul(p, t.at(base + k * step, base + k * step));
        adj_t.at(r, e) = add(adj_t.at(r, e), mul(adj_out.at(o, o), p));
    });
}
template <typename D, typename X> TW_FUNC void tile_min(D& out, const X& t) { tile_reduce(out, t, op_min()); }
template <typename D, typename X> TW_FUNC void tile_max(D& out, const X& t) { tile_reduce(out, t, op_max()); }

// the sum's adjoint reaches every element
template <typename X, typename D> TW_FUNC void adj_tile_sum(X& adj_t, const D& adj_out) {
    const typename X::value_type g = first_element(adj_out);
    TW_FOR_OWNED(X::size, X::threads, r, e) adj_t.at(r, e) = add(adj_t.at(r, e), g);
    block_sync();
}

// argmin / argmax: the first index holding the extreme value (NaN never wins)
template <typename T> struct arg_t {
    T value;
    int32_t index;
};
template <bool Max> struct op_arg {
    template <typename T> TW_FUNC arg_t<T> operator()(const arg_t<T>& a, const arg_t<T>& b) const {
        const bool b_better = Max ? (b.value > a.value) : (b.value < a.value);
        const bool same = !(b.value < a.value) && !(a.value < b.value) && b.value == a.value;
        const bool a_nan = !(a.value == a.value);
        if (a_nan || b_better || (same && b.index < a.index)) return b;
        return a;
    }
};
template <bool Max, typename D, typename X> TW_FUNC void tile_arg(D& out, const X& t) {
    typedef typename X::value_type T;
    arg_t<T> v{T(), 0};
    bool valid = false;
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        const arg_t<T> a{t.at(r, e), e};
        v = valid ? op_arg<Max>()(v, a) : a;
        valid = true;
    }
    block_reduce<X::threads>(valid, v, op_arg<Max>());
    tile_fill_with(out, [&](int, int) { return v.index; });
}
template <typename D, typename X> TW_FUNC void tile_argmin(D& out, const X& t) { tile_arg<false>(out, t); }
template <typename D, typename X> TW_FUNC void tile_argmax(D& out, const X& t) { tile_arg<true>(out, t); }

// min / max: the gradient goes to every element equal to the result (as atomic_min/max do)
template <typename X, typename D> TW_FUNC void adj_tile_select(const X& t, const D& out, X& adj_t, const D& adj_out) {
    const typename X::value_type m = first_element(out), g = first_element(adj_out);
    TW_FOR_OWNED(X::size, X::threads, r, e) if (t.at(r, e) == m) adj_t.at(r, e) = add(adj_t.at(r, e), g);
    block_sync();
}

// ---- along one axis: the input is shared (or the CPU's whole-block tile) -----------------------
// min / max along an axis: each element equal to its row's result gets the row's adjoint
template <int Axis, typename X, typename D> TW_FUNC void adj_tile_select_axis(const X& t, const D& out, X& adj_t, const D& adj_out) {
    typedef typename X::shape S;
    constexpr int n = S::extent(Axis), step = S::stride(Axis);
    tile_for<X::size, X::threads>([&](int r, int e) {
        const int o = (e / (n * step)) * step + e % step;
        if (t.at(r, e) == out.at(o, o)) adj_t.at(r, e) = add(adj_t.at(r, e), adj_out.at(o, o));
    });
}
// out element o combines the input elements whose index, with `axis` removed, is o.
template <int Axis, typename D, typename X, typename Op> TW_FUNC void tile_reduce_axis(D& out, const X& t, const Op& op) {
    typedef typename X::shape S;
    constexpr int n = S::extent(Axis), step = S::stride(Axis);
    block_sync();
    tile_fill_with(out, [&](int, int o) {
        // o enumerates the kept indices row-major: split it around the removed axis
        const int outer = o / step, inner = o % step, base = outer * n * step + inner;
        typename X::value_type v = t.at(base, base);
        for (int k = 1; k < n; ++k) v = op(v, t.at(base + k * step, base + k * step));
        return v;
    });
}
template <int Axis, typename X, typename D> TW_FUNC void adj_tile_sum_axis(X& adj_t, const D& adj_out) {
    typedef typename X::shape S;
    constexpr int n = S::extent(Axis), step = S::stride(Axis);
    tile_for<X::size, X::threads>([&](int r, int e) {
        const int o = (e / (n * step)) * step + e % step;
        adj_t.at(r, e) = add(adj_t.at(r, e), adj_out.at(o, o));
    });
}

// ---- scans over the row-major order (input and output shared, or the CPU's whole tile) --------
// Each lane scans a contiguous chunk; the chunk totals are scanned once; the lanes add them.
template <bool Inclusive, typename D, typename X, typename Op>
TW_FUNC void tile_scan(D& out, const X& t, const Op& op) {
    typedef typename X::value_type T;
    constexpr int N = X::size, BD = X::threads;
#if TW_IS_CUDA
    constexpr int chunk = (N + BD - 1) / BD;
    TW_SCRATCH(unsigned char, raw, BD * sizeof(T));
    T* totals = (T*)raw;
    const int begin = lane_index() * chunk, end = begin + chunk < N ? begin + chunk : N;
    begin_write(out);
    T acc = T();
    for (int e = begin; e < end; ++e) acc = e == begin ? t.at(e, e) : op(acc, t.at(e, e));
    totals[lane_index()] = acc;
    block_sync();
    if (lane_index() == 0) {  // exclusive scan of the chunk totals
        T run = T();
        bool first = true;
        for (int l = 0; l < BD; ++l) {
            const T x = totals[l];
            totals[l] = run;
            if (l * chunk < N) run = first ? x : op(run, x), first = false;
        }
    }
    block_sync();
    T run = totals[lane_index()];
    for (int e = begin; e < end; ++e) {
        const T x = t.at(e, e);
        if (Inclusive) run = (e == 0) ? x : op(run, x);
        out.at(e, e) = Inclusive ? run : (e == 0 ? T() : run);
        if (!Inclusive) run = (e == 0) ? x : op(run, x);
    }
    block_sync();
#else
    T run = T();
    for (int e = 0; e < N; ++e) {
        const T x = t.at(e, e);
        if (Inclusive) run = e == 0 ? x : op(run, x);
        out.at(e, e) = Inclusive ? run : (e == 0 ? T() : run);
        if (!Inclusive) run = e == 0 ? x : op(run, x);
    }
#endif
}
// the inclusive sum scan's adjoint: adj_t[i] += sum over j >= i of adj_out[j]; exclusive: j > i
template <bool Inclusive, typename X, typename D> TW_FUNC void adj_tile_scan_sum(X& adj_t, const D& adj_out) {
    constexpr int N = X::size;
    block_sync();
    TW_FOR_OWNED(N, X::threads, r, e) {
        typename X::value_type g = typename X::value_type();
        for (int j = Inclusive ? e : e + 1; j < N; ++j) g = add(g, adj_out.at(j, j));
        adj_t.at(r, e) = add(adj_t.at(r, e), g);
    }
    block_sync();
}

// ---- sort: keys ascending, values permuted with them, in place (shared tiles) -----------------
// Odd-even transposition: N rounds of independent compare-exchanges, spread over the lanes.
// The same tile may be both keys and values: its elements then move once, with the keys.
template <typename K, typename V> TW_FUNC void tile_sort(K& keys, V& values) {
    constexpr int N = K::size;
    const bool same = (const void*)&keys.at(0, 0) == (const void*)&values.at(0, 0);
    block_sync();
    for (int round = 0; round < N; ++round) {
        const int first = round & 1;
        for (int p = first + 2 * lane_index(); p + 1 < N; p += 2 * K::threads) {
            auto& a = keys.at(p, p);
            auto& b = keys.at(p + 1, p + 1);
            if (b < a) {
                auto k = a; a = b; b = k;
                if (same) continue;
                auto v = values.at(p, p);
                values.at(p, p) = values.at(p + 1, p + 1);
                values.at(p + 1, p + 1) = v;
            }
        }
        block_sync();
    }
}
}  // namespace tw
