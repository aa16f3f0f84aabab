// Tiles: block-wide arrays that the threads (lanes) of one block build and use together.
//
// A block of BD lanes runs on P threads, each thread running C = BD / P lanes (native/tile/block.h):
// on the CPU P = 1, on CUDA P = BD or, for kernels heavy in per-lane loads, a fraction of it.
// A register tile `rtile<T, S, P>` spreads its elements over the threads: thread t holds elements
// t, t + P, t + 2 P, ... in `data[0], data[1], ...` (on the CPU, every element). Lane l = t + c P
// of thread t is element l of a tile made by tile(x). A shared tile `stile<T, S, P>` points into the
// block's shared memory, planned by the compiler (tilewarp/block/storage.py). Every op walks the
// elements a thread *owns* (TW_FOR_OWNED), so one body serves both targets and both storages.
#pragma once
#include "../core/target.h"
#include "block.h"
#include "../core/vec.h"
#include "../core/mat.h"

namespace tw {
// Tile shapes: extents D0..D3 (0 = no such dimension), row-major.
template <int D0, int D1 = 0, int D2 = 0, int D3 = 0> struct shape_t {
    static constexpr int ndim = D1 == 0 ? 1 : D2 == 0 ? 2 : D3 == 0 ? 3 : 4;
    static constexpr int size = D0 * (D1 ? D1 : 1) * (D2 ? D2 : 1) * (D3 ? D3 : 1);
    TW_FUNC static constexpr int extent(int k) { return k == 0 ? D0 : k == 1 ? D1 : k == 2 ? D2 : D3; }
    // row-major stride of dimension k, in elements
    TW_FUNC static constexpr int stride(int k) {
        return k >= ndim - 1 ? 1 : (k == 0 ? (D1 ? D1 : 1) * (D2 ? D2 : 1) * (D3 ? D3 : 1)
                                   : k == 1 ? (D2 ? D2 : 1) * (D3 ? D3 : 1) : (D3 ? D3 : 1));
    }
};

#define TW_TILE_REGS(N, P) (((N) + (P) - 1) / (P))
// the elements thread lane_index() owns: a constant trip count, unrolled on CUDA so that every
// load of the slots is issued before the first use
#define TW_FOR_OWNED(N, P, r, e)                                                               \
    TW_UNROLL for (int r = 0, e = lane_index(); r < TW_TILE_REGS(N, P); ++r, e += (P))      \
        if ((N) % (P) == 0 || e < (N))
#if TW_IS_CUDA
// A CUDA block runs TW_PACK tile blocks (block.h): every op addresses its own tile block's lanes
// (lane_index), waits only for them (block_sync) and keeps its shared scratch apart from the
// other tile blocks' (TW_SCRATCH).
TW_FUNC void block_sync() {
    if (TW_PACK > 1) __syncwarp();
    else __syncthreads();
}
TW_FUNC int lane_index() { return TW_PACK > 1 ? (int)(threadIdx.x & 31) : (int)threadIdx.x; }
#define TW_SCRATCH(TYPE, NAME, COUNT)                               \
    __shared__ __align__(16) TYPE NAME##_slots[TW_PACK][COUNT];     \
    TYPE* const NAME = NAME##_slots[TW_PACK > 1 ? threadIdx.x >> 5 : 0]
#else
TW_FUNC void block_sync() {}
TW_FUNC int lane_index() { return 0; }
#endif

template <typename T, typename S, int P> struct rtile {
    typedef T value_type;
    typedef S shape;
    static constexpr int size = S::size, threads = P;
    static constexpr bool shared = false;
    T data[TW_TILE_REGS(S::size, P)];
    TW_FUNC T& at(int r, int) { return data[r]; }
    TW_FUNC const T& at(int r, int) const { return data[r]; }
};

// Where element e of a shared tile sits: row-major (`contiguous_t`), or at the element strides of a
// view (`strides_t`: a row, a slice, a transpose of another shared tile, sharing its memory).
struct contiguous_t {};
template <int T0 = 0, int T1 = 0, int T2 = 0, int T3 = 0> struct strides_t {
    TW_FUNC static constexpr int stride(int k) { return k == 0 ? T0 : k == 1 ? T1 : k == 2 ? T2 : T3; }
};
template <typename S, typename L> struct layout {
    TW_FUNC static constexpr int offset(int e) {
        int o = 0;
        for (int k = 0; k < S::ndim; ++k) o += ((e / S::stride(k)) % S::extent(k)) * L::stride(k);
        return o;
    }
    TW_FUNC static constexpr int stride(int k) { return L::stride(k); }
};
template <typename S> struct layout<S, contiguous_t> {
    TW_FUNC static constexpr int offset(int e) { return e; }
    TW_FUNC static constexpr int stride(int k) { return S::stride(k); }
};

// The operand layout of Hopper's warpgroup MMA (mma.h, wgmma) for a 2-D tile: strips of W
// columns (W E = 128, 64 or 32 bytes, E the element size) one after the other, each strip
// row-major, and within a strip the 16-byte pieces of a row permuted by an XOR with bits of the
// row's byte address (the PTX ISA's Swizzle<B,4,3>): tensor-core reads and the 16-byte cp.async
// writes of consecutive rows then fall in different banks. Positions have no strides, so no view
// is ever taken of such a tile (tiling/storage.py). float64 operands of mma.sync products take
// W = 16 (128-byte strip rows, pieces XORed with the row % 8), read as dmma.h describes.
template <int W, int E> struct swizzled_t {};
template <typename S, int W, int E> struct layout<S, swizzled_t<W, E>> {
    static_assert(S::ndim == 2 && S::extent(1) % W == 0 && S::extent(0) % 8 == 0, "whole strips of 8-row groups");
    TW_FUNC static constexpr int offset(int e) {
        constexpr int C = S::extent(1), R = S::extent(0);
        const int r = e / C, c = e % C;
        int b = (r * W + c % W) * E;
        b ^= ((b >> 7) & (W * E / 16 - 1)) << 4;
        return (c / W) * R * W + b / E;
    }
};

template <typename T, typename S, int P, typename L = contiguous_t> struct stile {
    typedef T value_type;
    typedef S shape;
    typedef layout<S, L> place;
    static constexpr int size = S::size, threads = P;
    static constexpr bool shared = true;
    T* data;
    TW_FUNC T& at(int, int e) { return data[place::offset(e)]; }
    TW_FUNC const T& at(int, int e) const { return data[place::offset(e)]; }
};

namespace detail {
template <typename X> struct remove_cvref { typedef X type; };
template <typename X> struct remove_cvref<X&> { typedef X type; };
template <typename X> struct remove_cvref<const X> { typedef X type; };
template <typename X> struct remove_cvref<const X&> { typedef X type; };
template <typename X> struct is_tile { static constexpr bool value = false; };
template <typename T, typename S, int P> struct is_tile<rtile<T, S, P>> { static constexpr bool value = true; };
template <typename T, typename S, int P, typename L> struct is_tile<stile<T, S, P, L>> {
    static constexpr bool value = true;
};
}  // namespace detail

namespace detail {
// whether two types (tiles or any others) are one
template <typename X, typename Y> struct same_tile { static constexpr bool value = false; };
template <typename X> struct same_tile<X, X> { static constexpr bool value = true; };
template <typename X> struct is_rowmajor_shared { static constexpr bool value = false; };
template <typename T, typename S, int P> struct is_rowmajor_shared<stile<T, S, P, contiguous_t>> {
    static constexpr bool value = true;
};
template <typename X> struct is_swizzled { static constexpr bool value = false; };
template <typename T, typename S, int P, int W, int E> struct is_swizzled<stile<T, S, P, swizzled_t<W, E>>> {
    static constexpr bool value = true;
    static constexpr int strip = W;  // columns
};
}  // namespace detail
template <typename X> using decay_t = typename detail::remove_cvref<X>::type;
template <typename X> TW_FUNC constexpr int tile_size() { return decay_t<X>::size; }
// a zero of an element's type (the scratch adjoint of one element of tile_map)
template <typename X> TW_FUNC X adj_zero_like(const X&) { return X(); }

// Element e (held in register slot r) of a tile; a scalar stands for a tile of itself.
template <typename X, detail::enable_if_t<detail::is_tile<X>::value, int> = 0>
TW_FUNC const typename X::value_type& elem(const X& t, int r, int e) { return t.at(r, e); }
template <typename X, detail::enable_if_t<!detail::is_tile<X>::value, int> = 0>
TW_FUNC const X& elem(const X& s, int, int) { return s; }

// Writing a shared tile: wait until every lane is done reading its old contents, and publish the
// new ones before anyone reads them. Register tiles need neither.
template <typename X> TW_FUNC void begin_write(const X&) {
    if (X::shared) block_sync();
}
template <typename X> TW_FUNC void end_write(const X&) {
    if (X::shared) block_sync();
}

// out[e] = f(r, e) for the elements this lane owns.
template <typename D, typename F> TW_FUNC void tile_fill_with(D& out, const F& f) {
    begin_write(out);
    TW_FOR_OWNED(D::size, D::threads, r, e) out.at(r, e) = f(r, e);
    end_write(out);
}
// f(r, e) for the elements of an N-element tile this lane owns (adjoints of element-wise ops);
// the syncs make the adjoint tiles it updates visible to every lane.
template <int N, int P, typename F> TW_FUNC void tile_for(const F& f) {
    block_sync();
    TW_FOR_OWNED(N, P, r, e) f(r, e);
    block_sync();
}

// ---- construction ----------------------------------------------------------------------------
template <typename D, typename V> TW_FUNC void tile_full(D& out, const V& value) {
    const typename D::value_type v = cast<typename D::value_type>(value);
    tile_fill_with(out, [&](int, int) { return v; });
}
template <typename D> TW_FUNC void tile_zero(D& out) {
    tile_fill_with(out, [&](int, int) { return typename D::value_type(); });
}
// computed in the tile's type, as the length was counted from bounds rounded to it
template <typename D, typename V> TW_FUNC void tile_arange(D& out, V start, V step) {
    typedef typename D::value_type T;
    const T s = cast<T>(start), d = cast<T>(step);
    tile_fill_with(out, [&](int, int e) { return add(s, mul(d, cast<T>(e))); });
}
// tile(x): a value the same in every lane fills the tile; per-lane values (C per thread) give lane
// l = t + c P element l, slot c of thread t
// `active`: the block's lanes inside the launch (all but in the last block); the others' elements are 0
template <typename D> TW_FUNC void tile_from(D& out, const typename D::value_type& x, int active) {
    constexpr int BD = D::shape::extent(D::shape::ndim - 1);
    tile_fill_with(out, [&](int, int e) { return e % BD < active ? x : typename D::value_type(); });
}
template <typename D, int C> TW_FUNC void tile_from(D& out, const typename D::value_type (&lanes)[C], int active) {
    tile_fill_with(out, [&](int r, int e) { return e < active ? lanes[r] : typename D::value_type(); });
}
// tile(v) of a vector or matrix without preserve_type: shape (components, BD), component k of
// lane l at element k * BD + l, which thread t holds in slot k * C + c
template <typename D, typename V> TW_FUNC void tile_from_split(D& out, const V& x, int active) {
    constexpr int BD = D::size / (int)(sizeof(V) / sizeof(typename D::value_type));
    tile_fill_with(out, [&](int, int e) { return e % BD < active ? detail::flat(x)[e / BD] : typename D::value_type(); });
}
template <typename D, typename V, int C> TW_FUNC void tile_from_split(D& out, const V (&lanes)[C], int active) {
    constexpr int BD = D::size / (int)(sizeof(V) / sizeof(typename D::value_type));
    tile_fill_with(out, [&](int r, int e) {
        return e % BD < active ? detail::flat(lanes[r % C])[r / C] : typename D::value_type();
    });
}
// untile(t): each of the thread's lanes receives its element (or its components)
template <typename X, int C> TW_FUNC void untile(typename X::value_type (&out)[C], const X& t) {
    for (int c = 0; c < C; ++c) out[c] = t.at(c, lane_index() + c * X::threads);
}
template <typename V, typename X, int C> TW_FUNC void untile_split(V (&out)[C], const X& t) {
    constexpr int K = (int)(sizeof(V) / sizeof(typename X::value_type)), BD = X::size / K;
    for (int c = 0; c < C; ++c)
        for (int k = 0; k < K; ++k) detail::flat(out[c])[k] = t.at(k * C + c, k * BD + lane_index() + c * X::threads);
}

// ---- copies between tiles of one size (carried values, reshape, squeeze, astype) -------------
template <typename D, typename X> TW_FUNC void tile_copy(D& out, const X& src) {
    if constexpr (detail::same_tile<D, X>::value && D::shared) {  // a product written into its
        if (out.data == src.data) return;                            // accumulator's own bytes
    }
    tile_fill_with(out, [&](int r, int e) { return cast<typename D::value_type>(src.at(r, e)); });
}

// ---- views: a shared tile over part of another's memory (no copy; writes go through) ---------
// position of the element at index (i0, i1, ...) of shared tile t (negative indices count from the end)
template <typename X, typename... I> TW_FUNC int tile_position(const X& t, I... i) {
    typedef typename X::shape S;
    const int64_t v[sizeof...(I) > 0 ? sizeof...(I) : 1] = {(int64_t)i...};
    int o = 0;
    for (int d = 0; d < (int)sizeof...(I); ++d) {
        int64_t k = v[d];
        if (k < 0) k += S::extent(d);
        o += (int)k * X::place::stride(d);
    }
    return o;
}
template <typename V, typename X> TW_FUNC void tile_alias(V& view, const X& parent, int origin) {
    view.data = parent.data + origin;
}

// ---- adjoints of construction and copies -------------------------------------------------------
// the elements this thread owns, as a register tile (loop checkpoints of the backward pass)
template <typename X> TW_FUNC rtile<typename X::value_type, typename X::shape, X::threads> tile_snapshot(const X& t) {
    rtile<typename X::value_type, typename X::shape, X::threads> out;
    if (X::shared) block_sync();
    TW_FOR_OWNED(X::size, X::threads, r, e) out.at(r, e) = t.at(r, e);
    return out;
}

// tile_assign(dst, src, offset): src written into dst (a shared tile) from index `offset` on
// (src is read whole before dst is written: they may overlap, as in t[1:] = t[:-1])
template <typename D, typename X, typename... I> TW_FUNC void tile_assign_at(D& dst, const X& src, I... o) {
    typedef typename X::shape S;
    const int64_t off[D::shape::ndim] = {(int64_t)o...};
    const auto values = tile_snapshot(src);
    block_sync();
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        int p = 0;
        for (int k = 0; k < S::ndim; ++k) p += (int)(off[k] + (e / S::stride(k)) % S::extent(k)) * D::place::stride(k);
        dst.data[p] = cast<typename D::value_type>(values.at(r, e));
    }
    block_sync();
}
// its adjoint: the source gets the region's adjoint, which the overwrite then clears
template <typename D, typename X, typename... I> TW_FUNC void adj_tile_assign_at(D& adj_dst, X& adj_src, I... o) {
    typedef typename X::shape S;
    const int64_t off[D::shape::ndim] = {(int64_t)o...};
    block_sync();
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        int p = 0;
        for (int k = 0; k < S::ndim; ++k) p += (int)(off[k] + (e / S::stride(k)) % S::extent(k)) * D::place::stride(k);
        adj_src.at(r, e) = add(adj_src.at(r, e), cast<typename X::value_type>(adj_dst.data[p]));
        adj_dst.data[p] = typename D::value_type();
    }
    block_sync();
}

// adjoints accumulate into the elements this lane owns; a scalar's adjoint gets this lane's share
template <typename X, detail::enable_if_t<detail::is_tile<X>::value, int> = 0, typename G>
TW_FUNC void adj_elem(X& adj, int r, int e, const G& g) {
    adj.at(r, e) = add(adj.at(r, e), g);
}
template <typename X, detail::enable_if_t<!detail::is_tile<X>::value, int> = 0>
TW_FUNC void adj_elem(X& adj, int, int, const X& g) {
    adj = add(adj, g);
}
template <typename D, typename V> TW_FUNC void adj_tile_full(V& adj_value, const D& adj_out) {
    TW_FOR_OWNED(D::size, D::threads, r, e) adj_value = add(adj_value, cast<V>(adj_out.at(r, e)));
}
template <typename D> TW_FUNC void adj_tile_from(typename D::value_type& adj_x, const D& adj_out, int active) {
    constexpr int BD = D::shape::extent(D::shape::ndim - 1);
    TW_FOR_OWNED(D::size, D::threads, r, e) if (e % BD < active) adj_x = add(adj_x, adj_out.at(r, e));
}
template <typename D, int C> TW_FUNC void adj_tile_from(typename D::value_type (&adj_x)[C], const D& adj_out, int) {
    block_sync();
    for (int c = 0; c < C; ++c) adj_x[c] = add(adj_x[c], adj_out.at(c, lane_index() + c * D::threads));
}
template <typename D, typename V> TW_FUNC void adj_tile_from_split(V& adj_x, const D& adj_out, int active) {
    constexpr int K = (int)(sizeof(V) / sizeof(typename D::value_type)), BD = D::size / K;
    TW_FOR_OWNED(D::size, D::threads, r, e) if (e % BD < active) detail::flat(adj_x)[e / BD] += adj_out.at(r, e);
}
template <typename D, typename V, int C> TW_FUNC void adj_tile_from_split(V (&adj_x)[C], const D& adj_out, int) {
    constexpr int K = (int)(sizeof(V) / sizeof(typename D::value_type)), BD = D::size / K;
    block_sync();
    for (int c = 0; c < C; ++c)
        for (int k = 0; k < K; ++k)
            detail::flat(adj_x[c])[k] += adj_out.at(k * C + c, k * BD + lane_index() + c * D::threads);
}
template <typename X, int C> TW_FUNC void adj_untile(X& adj_t, const typename X::value_type (&adj_out)[C]) {
    block_sync();
    for (int c = 0; c < C; ++c) {
        auto& g = adj_t.at(c, lane_index() + c * X::threads);
        g = add(g, adj_out[c]);
    }
    block_sync();
}
template <typename X, typename V, int C> TW_FUNC void adj_untile_split(X& adj_t, const V (&adj_out)[C]) {
    constexpr int K = (int)(sizeof(V) / sizeof(typename X::value_type)), BD = X::size / K;
    block_sync();
    for (int c = 0; c < C; ++c)
        for (int k = 0; k < K; ++k) adj_t.at(k * C + c, k * BD + lane_index() + c * X::threads) += detail::flat(adj_out[c])[k];
    block_sync();
}
template <typename X, typename D> TW_FUNC void adj_tile_copy(X& adj_src, const D& adj_out) {
    tile_for<D::size, D::threads>([&](int r, int e) {
        adj_src.at(r, e) = add(adj_src.at(r, e), cast<typename X::value_type>(adj_out.at(r, e)));
    });
}
// the adjoint of a tile that is overwritten (or goes out of scope in the reverse pass) starts at zero
template <typename D> TW_FUNC void adj_tile_clear(D& adj) { tile_zero(adj); }
// tile adjoints accumulate element by element (copies of tiles in the reverse pass)
template <typename T, typename S, int P> TW_FUNC void adj_accum(rtile<T, S, P>& adj, const rtile<T, S, P>& g) {
    TW_FOR_OWNED(S::size, P, r, e) adj.at(r, e) = add(adj.at(r, e), g.at(r, e));
}
template <typename D, typename X, detail::enable_if_t<detail::is_tile<D>::value, int> = 0>
TW_FUNC void adj_accum(D& adj, const X& g) { adj_tile_copy(adj, g); }
}  // namespace tw
