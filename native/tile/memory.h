// tile_load / tile_store / tile_atomic_add between arrays and tiles, and their adjoints.
//
// Tile dimension k starts at array index offset[k]; elements outside the array read as zero
// and are not written. A tile of fewer dimensions than the array covers its trailing ones.
#pragma once
#include "tile.h"
#include "mma.h"
#include "../runtime/array.h"
#include "../runtime/atomic.h"
#include "../runtime/array_adjoint.h"

namespace tw {
namespace detail {
// Coordinate k of element e = lane_index() + r * P, the r-th element a thread of P owns. Where P is
// a multiple of the dimension's stride, the thread's own part is fixed and each step adds a
// constant, so no division per element is left (shape and P are constants): a 32 x 128 tile on 256
// threads has a fixed column per thread and rows 2 apart.
template <typename S, int P> TW_FUNC int owned_coord(int k, int r, int e) {
    const int st = S::stride(k), ex = S::extent(k);
    if (P % st != 0) return (e / st) % ex;
    const int first = lane_index() / st;
    if (k == 0) return first + r * (P / st);  // e / stride(0) is below extent(0)
    if (P % (st * ex) == 0) return first % ex;
    return (first + r * (P / st)) % ex;
}

// the array dimension that tile dimension k of shape S covers
template <typename S, int D> TW_FUNC constexpr int d_of(int k) { return k + (D - S::ndim); }

// Where element e (the thread's r-th of P) of a tile of shape S lands in array `a` (its address),
// or nullptr outside the array.
template <typename S, int P, typename T, int D>
TW_FUNC bool tile_place(const array_t<T, D>& a, T* base, const int64_t (&offset)[D], int r, int e, T*& p) {
    static_assert(S::ndim <= D, "a tile cannot have more dimensions than its array");
    // Branch-free: the bounds tests are and-ed and the address chosen once (a select), so the
    // elements' loads issue back to back; an early return per dimension made the GPU predicate
    // and re-load the strides for every element (~25 instructions each in the row sum).
    int64_t byte = 0;
    bool inside = base != nullptr;
    TW_UNROLL
    for (int d = 0; d < D; ++d) {
        const int k = d - (D - S::ndim);  // tile dimension of array dimension d
        const int64_t i = offset[d] + (k >= 0 ? owned_coord<S, P>(k, r, e) : 0);
        inside &= (uint64_t)i < (uint64_t)(int64_t)a.shape[d];  // also false for i < 0
        byte += i * a.strides[d];
    }
    p = (T*)(byte_ptr(base) + byte);
    return inside;
}
// The same for element e of any layout (its coordinates from e itself)
template <typename S, typename T, int D>
TW_FUNC bool element_place(const array_t<T, D>& a, T* base, const int64_t (&offset)[D], int e, T*& p) {
    int64_t byte = 0;
    bool inside = base != nullptr;
    TW_UNROLL
    for (int d = 0; d < D; ++d) {
        const int k = d - (D - S::ndim);
        const int64_t i = offset[d] + (k >= 0 ? (e / S::stride(k)) % S::extent(k) : 0);
        inside &= (uint64_t)i < (uint64_t)(int64_t)a.shape[d];
        byte += i * a.strides[d];
    }
    p = (T*)(byte_ptr(base) + byte);
    return inside;
}
template <typename S, int P, typename T, int D>
TW_FUNC T* tile_address(const array_t<T, D>& a, T* base, const int64_t (&offset)[D], int r, int e) {
    T* p;
    return tile_place<S, P>(a, base, offset, r, e, p) ? p : nullptr;
}
#if !TW_IS_CUDA
// The CPU's one thread moves a whole tile. When the tile's box lies inside the array and its rows
// are contiguous there, it goes row by row with plain pointer loops (which vectorise) instead of an
// address and a bounds test per element. f(p, e0, n) handles the n elements from tile element e0,
// stored from p. (On the GPU both paths in one kernel cost more registers than the checks save.)
template <typename S, typename T, int D, typename F>
bool for_contiguous_rows(const array_t<T, D>& a, const int64_t (&offset)[D], const F& f) {
    constexpr int inner = S::extent(S::ndim - 1);
    if (a.strides[D - 1] != (int64_t)sizeof(T) || a.data == nullptr) return false;
    int64_t byte = 0;
    for (int d = 0; d < D; ++d) {
        const int k = d - (D - S::ndim);
        const int64_t ext = k >= 0 ? S::extent(k) : 1;
        if (offset[d] < 0 || offset[d] + ext > a.shape[d]) return false;
        byte += offset[d] * a.strides[d];
    }
    for (int e0 = 0; e0 < S::size; e0 += inner) {
        int64_t row = byte;
        for (int k = 0; k + 1 < S::ndim; ++k) row += ((e0 / S::stride(k)) % S::extent(k)) * a.strides[d_of<S, D>(k)];
        f((T*)(byte_ptr(a.data) + row), e0, inner);
    }
    return true;
}
#endif
#if TW_IS_CUDA
// A row-major (or swizzled: its 16-byte pieces stay whole) shared tile whose box lies inside the
// array, with contiguous rows whose starts and lengths are multiples of 16 bytes, is copied in
// 16-byte pieces by cp.async (global to shared without a register round trip): an operand tile of a
// GEMM moves in 1/8 of the instructions of float16 element loads. box_copies: whether the tile's
// type allows it; box_fits: whether this box of this array does.
template <typename X, typename T> struct box_copies {
    static constexpr int inner = X::shape::extent(X::shape::ndim - 1);
    static constexpr bool value = (is_rowmajor_shared<X>::value || is_swizzled<X>::value) && 16 % sizeof(T) == 0 &&
                                  (inner * sizeof(T)) % 16 == 0;
};
// the byte offset of the box at `offset` from the array's start
template <typename T, int D> TW_FUNC int64_t box_start(const array_t<T, D>& a, const int64_t (&offset)[D]) {
    int64_t byte = 0;
    TW_UNROLL
    for (int d = 0; d < D; ++d) byte += offset[d] * a.strides[d];
    return byte;
}
// Whether the box of shape S at `offset` lies inside the array, with contiguous rows whose starts are
// multiples of `align` bytes: then its rows can move in pieces of that size.
template <typename S, typename T, int D>
TW_FUNC bool box_inside(const array_t<T, D>& a, const int64_t (&offset)[D], int align) {
    bool ok = a.data != nullptr && a.strides[D - 1] == (int64_t)sizeof(T);
    TW_UNROLL
    for (int d = 0; d < D; ++d) {
        const int k = d - (D - S::ndim);
        const int64_t ext = k >= 0 ? S::extent(k) : 1;
        ok &= offset[d] >= 0 && offset[d] + ext <= a.shape[d];
        if (d < D - 1) ok &= (a.strides[d] % align) == 0;
    }
    return ok && ((unsigned long long)(byte_ptr(a.data) + box_start(a, offset)) % align) == 0;
}
template <typename X, typename T, int D>
TW_FUNC bool box_fits(const array_t<T, D>& a, const int64_t (&offset)[D]) {
    return box_copies<X, T>::value && box_inside<typename X::shape>(a, offset, 16);
}
// How a block's threads share the 16-byte pieces of a box: where the box's rows are whole multiples
// of the block, each thread copies one column of pieces, `rows` rows apart (`columns`); its
// addresses then advance by a constant (the swizzle repeats every 8 rows), no per-piece index
// arithmetic.
template <typename X, typename T> struct pieces_of {
    typedef typename X::shape S;
    // (a tile whose rows are not whole pieces never copies: box_copies; its numbers stay defined)
    static constexpr int inner = S::extent(S::ndim - 1), piece = 16 / (int)sizeof(T) > 0 ? 16 / (int)sizeof(T) : 1,
                         per_row = inner / piece > 0 ? inner / piece : 1, count = S::size / piece,
                         rows = X::threads / per_row;
    static constexpr bool columns = S::ndim == 2 && X::threads % per_row == 0 && rows % 8 == 0 && S::extent(0) % rows == 0;
};
// the byte offset of this thread's first piece from its box's start (columns: its one column)
template <typename X, typename T, int D> TW_FUNC int64_t first_piece(const array_t<T, D>& a) {
    typedef pieces_of<X, T> P;
    if constexpr (P::columns) return (lane_index() / P::per_row) * a.strides[D - 2] + (lane_index() % P::per_row) * 16;
    else return 0;
}
// The copies of a box that box_fits, left in flight; `mine`: this thread's first piece
// (first_piece bytes into the box).
template <typename X, typename T, int D>
TW_FUNC void copy_box_async(X& out, const array_t<T, D>& a, const char* mine) {
    typedef typename X::shape S;
    typedef pieces_of<X, T> P;
    if constexpr (box_copies<X, T>::value) {
        if constexpr (P::columns) {
            const int r0 = lane_index() / P::per_row, c0 = lane_index() % P::per_row;
            const char* src = mine;
            const int64_t src_step = P::rows * a.strides[D - 2];
            unsigned dst = (unsigned)__cvta_generic_to_shared(out.data + X::place::offset(r0 * P::inner + c0 * P::piece));
            constexpr unsigned dst_step = (unsigned)(X::place::offset(P::rows * P::inner) * sizeof(T));
            TW_UNROLL
            for (int j = 0; j < S::extent(0) / P::rows; ++j, src += src_step, dst += dst_step)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
        } else {
            for (int c = lane_index(); c < P::count; c += X::threads) {
                const int e0 = (c / P::per_row) * P::inner;
                int64_t row = 0;
                TW_UNROLL
                for (int k = 0; k + 1 < S::ndim; ++k)
                    row += ((e0 / S::stride(k)) % S::extent(k)) * a.strides[d_of<S, D>(k)];
                const char* src = mine + row + (c % P::per_row) * 16;
                const unsigned dst =
                    (unsigned)__cvta_generic_to_shared(out.data + X::place::offset(e0 + (c % P::per_row) * P::piece));
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
            }
        }
    }
}
// this thread's first piece of the box at `offset`
template <typename X, typename T, int D> TW_FUNC const char* first_piece_at(const array_t<T, D>& a, const int64_t (&offset)[D]) {
    return (const char*)byte_ptr(a.data) + box_start(a, offset) + first_piece<X>(a);
}
template <typename X, typename T, int D>
TW_FUNC void copy_box_async(X& out, const array_t<T, D>& a, const int64_t (&offset)[D]) {
    copy_box_async(out, a, first_piece_at<X>(a, offset));
}
// The box's copies where it fits (the block waits for them, then syncs, unless Wait is false); false
// where it does not. Synced: the caller has synced the block since the tile was last read.
template <bool Wait, bool Synced = false, typename X, typename T, int D>
TW_FUNC bool async_copy_box(X& out, const array_t<T, D>& a, const int64_t (&offset)[D]) {
    if (!box_fits<X>(a, offset)) return false;
    if (!Synced) block_sync();  // lanes may still be reading the tile's old contents
    copy_box_async(out, a, offset);
    if (Wait) {  // else a tile_load right after this one waits for both (emit/cpp.py: Wait=false)
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        block_sync();
    }
    return true;
}
#endif
#if TW_IS_CUDA
// A small register tile (a few elements a thread: the one-warp reductions) whose box lies inside
// the array with contiguous rows: each element read at its place, without a bounds test and a
// select each (the row sum 1 % faster on an H100; with more elements a thread, the two paths' code
// cost registers that the tested path alone did not). False where the box does not lie inside.
template <typename X, typename T, int D>
TW_FUNC bool load_box_inside(X& out, const array_t<T, D>& a, const int64_t (&offset)[D]) {
    typedef typename X::shape S;
    if (!box_inside<S>(a, offset, (int)sizeof(T))) return false;
    const char* base = (const char*)byte_ptr(a.data) + box_start(a, offset);
    tile_fill_with(out, [&](int r, int e) {
        int64_t byte = owned_coord<S, X::threads>(S::ndim - 1, r, e) * (int64_t)sizeof(T);
        TW_UNROLL
        for (int k = 0; k + 1 < S::ndim; ++k) byte += owned_coord<S, X::threads>(k, r, e) * a.strides[d_of<S, D>(k)];
        return read((const T*)(base + byte));
    });
    return true;
}
#endif
template <int D, typename... I> TW_FUNC void offsets(int64_t (&o)[D], I... i) {
    static_assert(sizeof...(I) == D, "one offset per array dimension");
    const int64_t v[D] = {(int64_t)i...};
    TW_UNROLL
    for (int d = 0; d < D; ++d) o[d] = v[d];
}
}  // namespace detail

// Wait = false (only for a load followed by another load, nothing between touching tiles): its
// asynchronous copies may still be in flight when this returns; the next load's wait covers them.
// Drain = false: the kernel copies nothing asynchronously (no shared tile is loaded), so there is
// nothing in flight to wait for before reading into registers.
template <bool Wait = true, bool Drain = true, typename X, typename T, int D, typename... I>
TW_FUNC void tile_load(X& out, const array_t<T, D>& a, I... i) {
    int64_t o[D];
    detail::offsets(o, i...);
#if !TW_IS_CUDA
    if (detail::for_contiguous_rows<typename X::shape>(a, o, [&](const T* p, int e0, int n) {
            for (int c = 0; c < n; ++c) out.at(e0 + c, e0 + c) = p[c];
        }))
        return;
#else
    if (detail::async_copy_box<Wait>(out, a, o)) return;
    if (Drain) asm volatile("cp.async.wait_all;\n" ::: "memory");  // an earlier load's copies, published below
    if constexpr (!X::shared && TW_TILE_REGS(X::size, X::threads) <= 8) {
        if (detail::load_box_inside(out, a, o)) return;
    }
    if constexpr (X::shared && TW_TILE_REGS(X::size, X::threads) > 4) {
        // into memory, a few elements in flight: the whole tile's (unrolled) would hold registers
        // that the rest of the kernel (a GEMM's accumulators) needs
        block_sync();
#pragma unroll 4
        for (int e = lane_index(); e < X::size; e += X::threads) {
            T* p;
            const bool inside = detail::tile_place<typename X::shape, X::threads>(a, a.data, o, e / X::threads, e, p);
            out.at(e / X::threads, e) = detail::read_if(inside, (const T*)p);
        }
        block_sync();
        return;
    }
#endif
    tile_fill_with(out, [&](int r, int e) {
        T* p;
        const bool inside = detail::tile_place<typename X::shape, X::threads>(a, a.data, o, r, e, p);
        return detail::read_if(inside, (const T*)p);
    });
}

// A tile_load issued ahead of its use (tilewarp/block/prefetch.py; the block synced since the
// tile's buffer was last read): the copies of a box cp.async can take are left in flight -
// async_commit closes a stage's group, async_wait<N> waits until at most the newest N groups are
// pending, then syncs the block - and any other load is made now.
template <typename X, typename T, int D, typename... I>
TW_FUNC void tile_prefetch(X& out, const array_t<T, D>& a, I... i) {
#if TW_IS_CUDA
    int64_t o[D];
    detail::offsets(o, i...);
    if (detail::async_copy_box<false, true>(out, a, o)) return;
#endif
    tile_load(out, a, i...);
}
// A K loop whose every prefetch fits (emit/cpp.py asks tile_prefetch_fits of its first, second and
// last iterations, its offsets being affine in the loop variable) runs a copy of itself whose loads
// walk their array: each box starts `per` bytes further for each unit of the loop variable, so a
// load is its copies from `box + (k - start) * per`: no offsets, tests or element-wise path beside
// them, whose registers and instructions cost a GEMM's K loop a fifth of its speed on an H100.
template <typename X, typename T, int D, typename... I>
TW_FUNC bool tile_prefetch_fits(const X&, const array_t<T, D>& a, I... i) {
#if TW_IS_CUDA
    int64_t o[D];
    detail::offsets(o, i...);
    return detail::box_fits<X>(a, o);
#else
    (void)a;
    return false;  // the CPU keeps one loop: its tile_load already takes whole rows where it can
#endif
}
struct box_walk {
    const char* mine = nullptr;  // this thread's first piece in the first iteration's box
    int64_t per = 0;             // bytes per unit of the loop variable
};
// the first iteration's box; then, from the second's (dk units of the loop variable later; 0: the
// loop runs once), the bytes per unit
template <typename X, typename T, int D, typename... I>
TW_FUNC void walk_from(box_walk& w, const X&, const array_t<T, D>& a, I... i) {
#if TW_IS_CUDA
    int64_t o[D];
    detail::offsets(o, i...);
    w.mine = detail::first_piece_at<X>(a, o);
#else
    (void)w; (void)a; ((void)i, ...);  // (the CPU never walks: tile_prefetch_fits)
#endif
}
template <typename X, typename T, int D, typename... I>
TW_FUNC void walk_by(box_walk& w, const X&, const array_t<T, D>& a, int64_t dk, I... i) {
#if TW_IS_CUDA
    int64_t o[D];
    detail::offsets(o, i...);
    w.per = dk ? (int64_t)(detail::first_piece_at<X>(a, o) - w.mine) / dk : 0;
#else
    (void)w; (void)a; (void)dk; ((void)i, ...);
#endif
}
template <typename X, typename T, int D>
TW_FUNC void tile_prefetch_walk(X& out, const array_t<T, D>& a, const box_walk& w, int64_t k) {
#if TW_IS_CUDA
    detail::copy_box_async(out, a, w.mine + k * w.per);
#else
    (void)out; (void)a; (void)w; (void)k;
#endif
}
TW_FUNC void async_commit() {
#if TW_IS_CUDA
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Proxy: wgmma reads the copies next (the async proxy: a fence orders the copies' writes before it)
template <int N, bool Proxy = true> TW_FUNC void async_wait() {
#if TW_IS_CUDA
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#if __CUDA_ARCH__ >= 900
    if (Proxy) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
#endif
    block_sync();
}

template <typename X, typename T, int D, typename... I>
TW_FUNC void tile_store(const array_t<T, D>& a, const X& t, I... i) {
    int64_t o[D];
    detail::offsets(o, i...);
    if (X::shared) block_sync();  // other lanes may have written the tile just before (a register
                                  // tile's elements are its threads' own)
#if !TW_IS_CUDA
    if (detail::for_contiguous_rows<typename X::shape>(a, o, [&](T* p, int e0, int n) {
            for (int c = 0; c < n; ++c) p[c] = t.at(e0 + c, e0 + c);
        }))
        return;
#else
    if constexpr (X::shared && TW_TILE_REGS(X::size, X::threads) > 4) {
        // from memory, a few elements at a time: unrolled over the whole tile, every element's
        // address would be worked out up front (a 64 x 64 tile on 64 threads took 255 registers)
#pragma unroll 4
        for (int e = lane_index(); e < X::size; e += X::threads) {
            T* p;
            if (detail::tile_place<typename X::shape, X::threads>(a, a.data, o, e / X::threads, e, p))
                *p = t.at(e / X::threads, e);
        }
        return;
    }
#endif
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        T* p;
        if (detail::tile_place<typename X::shape, X::threads>(a, a.data, o, r, e, p)) *p = t.at(r, e);
    }
}

// a tensor-core accumulator tile: each slot's element from the tile's own layout. Its slots come in
// runs of mtile::run neighbours in a row: where the box lies inside the array and its rows are
// aligned for it, a run is one vector store (float32 sums: 8 or 16 bytes where single stores wrote
// half-filled sectors, a tenth of a 128 x 256 GEMM's time on an H100).
template <typename TT, typename S, int P, int K, int W, typename T, int D, typename... I>
TW_FUNC void tile_store(const array_t<T, D>& a, const mtile<TT, S, P, K, W>& t, I... i) {
    typedef mtile<TT, S, P, K, W> X;
    int64_t o[D];
    detail::offsets(o, i...);
#if TW_IS_CUDA
    constexpr int V = X::run;
    if constexpr (V > 1) {
        if (detail::box_inside<S>(a, o, V * (int)sizeof(T))) {
            struct alignas(V * sizeof(T)) run_t { T v[V]; };
            char* base = (char*)detail::byte_ptr(a.data) + detail::box_start(a, o);
            TW_UNROLL
            for (int r = 0; r < TW_TILE_REGS(S::size, P); r += V) {
                const int e = X::element(r);
                run_t v;
                TW_UNROLL
                for (int k = 0; k < V; ++k) v.v[k] = cast<T>(t.at(r + k, e + k));
                *(run_t*)(base + (e / S::extent(1)) * a.strides[D - 2] + (e % S::extent(1)) * (int64_t)sizeof(T)) = v;
            }
            return;
        }
    }
#else  // one thread holds the whole tile in order (slot r is element r)
    if (detail::for_contiguous_rows<S>(a, o, [&](T* p, int e0, int n) {
            for (int c = 0; c < n; ++c) p[c] = cast<T>(t.at(e0 + c, e0 + c));
        }))
        return;
#endif
    TW_UNROLL
    for (int r = 0; r < TW_TILE_REGS(S::size, P); ++r) {
        const int e = X::element(r);
        T* p;
        if (detail::element_place<S>(a, a.data, o, e, p)) *p = t.at(r, e);
    }
}

// the old values (zero outside the array)
template <typename D0, typename X, typename T, int D, typename... I>
TW_FUNC void tile_atomic_add(D0& old, const array_t<T, D>& a, const X& t, I... i) {
    int64_t o[D];
    detail::offsets(o, i...);
    tile_fill_with(old, [&](int r, int e) {
        T* p = detail::tile_address<typename X::shape, X::threads>(a, a.data, o, r, e);
        return p ? atomic_add(p, t.at(r, e)) : T();
    });
}

template <typename T, int D, typename X, typename... I>
TW_FUNC void tile_atomic_add_combined(atomic_combiner<T>& c, const array_t<T, D>& a, const X& t, I... i) {
    int64_t o[D];
    detail::offsets(o, i...);
    TW_FOR_OWNED(X::size, X::threads, r, e) {  // one element: one thread's
        T* p = detail::tile_address<typename X::shape, X::threads>(a, a.data, o, r, e);
        if (p) c.add(p, t.at(r, e));
    }
}

// Bitwise atomics of tiles (Warp's tile_atomic_and/or/xor spelt as atomics on arrays).
#define TW_TILE_ATOMIC_BITS(NAME)                                                              \
    template <typename D0, typename X, typename T, int D, typename... I>                         \
    TW_FUNC void tile_##NAME(D0& old, const array_t<T, D>& a, const X& t, I... i) {              \
        int64_t o[D];                                                                            \
        detail::offsets(o, i...);                                                                \
        tile_fill_with(old, [&](int r, int e) {                                                  \
            T* p = detail::tile_address<typename X::shape, X::threads>(a, a.data, o, r, e);     \
            return p ? NAME(p, t.at(r, e)) : T();                                                \
        });                                                                                      \
    }
TW_TILE_ATOMIC_BITS(atomic_and)
TW_TILE_ATOMIC_BITS(atomic_or)
TW_TILE_ATOMIC_BITS(atomic_xor)
#undef TW_TILE_ATOMIC_BITS

// ---- adjoints: `adj` is the gradient array (data == nullptr: none) -----------------------------

// a load's adjoint scatters into the gradient array (atomically: blocks may overlap)
namespace detail {
template <typename X, typename T, int D>
TW_FUNC void adj_tile_load_at(const array_t<T, D>& adj, const X& adj_out, const int64_t (&o)[D]) {
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        T* p = tile_address<typename X::shape, X::threads>(adj, adj.data, o, r, e);
        if (p) atomic_accum(p, adj_out.at(r, e));
    }
}
}  // namespace detail
template <typename X, typename T, int D, typename... I>
TW_FUNC void adj_tile_load(const array_t<T, D>& adj, const X& adj_out, I... i) {
    if (!adj.data) return;
    int64_t o[D];
    detail::offsets(o, i...);
    block_sync();
    detail::adj_tile_load_at(adj, adj_out, o);
}

// The adjoints of one tile_load summed over the blocks a CPU thread runs (tiling/combine.py,
// combined_adjoint_loads: the gradient array is only ever added into): blocks in a row that load
// the same box of the same array add into `sum`, which goes into the array, atomically, once the
// box changes or the thread's blocks end (its flush). A box starts a run the second time in a row
// it comes, the first being added at once, so a load whose box moves every block (a block's own
// pixels) costs a comparison. On CUDA, where a thread seldom runs two blocks, adds go straight out.
template <typename T, typename S, int D> struct adj_load_combiner {
#if TW_IS_CUDA
    TW_FUNC void flush() {}
#else
    struct box_t {
        const T* data = nullptr;
        int64_t o[D] = {};
        bool same(const box_t& b) const {
            for (int d = 0; d < D; ++d)
                if (o[d] != b.o[d]) return false;
            return data == b.data;
        }
    };
    box_t run, seen;  // run.data null: no run
    array_t<T, D> adj;
    rtile<T, S, 1> sum;
    void flush() {
        if (run.data) detail::adj_tile_load_at(adj, sum, run.o);
        run.data = nullptr;
    }
#endif
};
template <typename T, typename S, int D, typename X, typename... I>
TW_FUNC void adj_tile_load_combined(adj_load_combiner<T, S, D>& c, const array_t<T, D>& adj, const X& adj_out, I... i) {
#if TW_IS_CUDA
    (void)c;
    adj_tile_load(adj, adj_out, i...);
#else
    if (!adj.data) return;
    typename adj_load_combiner<T, S, D>::box_t b;
    b.data = adj.data;
    detail::offsets(b.o, i...);
    if (c.run.data && c.run.same(b)) {
        for (int e = 0; e < S::size; ++e) c.sum.data[e] = add(c.sum.data[e], adj_out.at(e, e));
    } else if (c.seen.same(b)) {
        c.flush();
        c.run = b;
        c.adj = adj;
        for (int e = 0; e < S::size; ++e) c.sum.data[e] = adj_out.at(e, e);
    } else {
        c.seen = b;
        detail::adj_tile_load_at(adj, adj_out, b.o);
    }
#endif
}
// a store's (and an atomic add's) adjoint gathers the gradient of the elements it wrote
template <typename X, typename T, int D, typename... I>
TW_FUNC void adj_tile_store(const array_t<T, D>& adj, X& adj_t, I... i) {
    if (!adj.data) return;
    int64_t o[D];
    detail::offsets(o, i...);
    block_sync();
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        const T* p = detail::tile_address<typename X::shape, X::threads>(adj, adj.data, o, r, e);
        if (p) adj_t.at(r, e) = add(adj_t.at(r, e), *p);
    }
    block_sync();
}
}  // namespace tw

// ---- indexed loads and stores: along `Axis`, tile index c reads array index offset + indices[c]
// (indices: a 1-d shared int tile); out-of-bounds coordinates on either side read zero / are skipped
namespace tw {
namespace detail {
template <typename S, int Axis, typename T, int D, typename I>
TW_FUNC T* tile_address_indexed(const array_t<T, D>& a, T* base, const int64_t (&offset)[D], int e, const I& indices) {
    int64_t byte = 0;
    bool inside = base != nullptr;  // branch-free, as tile_address
    TW_UNROLL
    for (int d = 0; d < D; ++d) {
        const int k = d - (D - S::ndim);
        int64_t c = k >= 0 ? (e / S::stride(k)) % S::extent(k) : 0;
        if (k == Axis) c = indices.at((int)c, (int)c);
        const int64_t i = offset[d] + c;
        inside &= (uint64_t)i < (uint64_t)(int64_t)a.shape[d];
        byte += i * a.strides[d];
    }
    return inside ? (T*)(byte_ptr(base) + byte) : nullptr;
}
}  // namespace detail

template <int Axis, typename X, typename I, typename T, int D, typename... O>
TW_FUNC void tile_load_indexed(X& out, const array_t<T, D>& a, const I& indices, O... o) {
    int64_t off[D];
    detail::offsets(off, o...);
    block_sync();
    tile_fill_with(out, [&](int, int e) {
        const T* p = detail::tile_address_indexed<typename X::shape, Axis>(a, a.data, off, e, indices);
        return detail::read_or_zero(p);
    });
}
template <int Axis, typename X, typename I, typename T, int D, typename... O>
TW_FUNC void tile_store_indexed(const array_t<T, D>& a, const I& indices, const X& t, O... o) {
    int64_t off[D];
    detail::offsets(off, o...);
    block_sync();
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        T* p = detail::tile_address_indexed<typename X::shape, Axis>(a, a.data, off, e, indices);
        if (p) *p = t.at(r, e);
    }
}
template <int Axis, typename D0, typename X, typename I, typename T, int D, typename... O>
TW_FUNC void tile_atomic_add_indexed(D0& old, const array_t<T, D>& a, const I& indices, const X& t, O... o) {
    int64_t off[D];
    detail::offsets(off, o...);
    block_sync();
    tile_fill_with(old, [&](int r, int e) {
        T* p = detail::tile_address_indexed<typename X::shape, Axis>(a, a.data, off, e, indices);
        return p ? atomic_add(p, t.at(r, e)) : T();
    });
}
template <int Axis, typename X, typename I, typename T, int D, typename... O>
TW_FUNC void adj_tile_load_indexed(const array_t<T, D>& adj, const I& indices, const X& adj_out, O... o) {
    if (!adj.data) return;
    int64_t off[D];
    detail::offsets(off, o...);
    block_sync();
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        T* p = detail::tile_address_indexed<typename X::shape, Axis>(adj, adj.data, off, e, indices);
        if (p) detail::atomic_accum(p, adj_out.at(r, e));
    }
}
template <int Axis, typename X, typename I, typename T, int D, typename... O>
TW_FUNC void adj_tile_store_indexed(const array_t<T, D>& adj, const I& indices, X& adj_t, O... o) {
    if (!adj.data) return;
    int64_t off[D];
    detail::offsets(off, o...);
    block_sync();
    TW_FOR_OWNED(X::size, X::threads, r, e) {
        const T* p = detail::tile_address_indexed<typename X::shape, Axis>(adj, adj.data, off, e, indices);
        if (p) adj_t.at(r, e) = add(adj_t.at(r, e), *p);
    }
    block_sync();
}

// tile_from_thread: every element is `value` as lane `lane` has it
template <typename D> TW_FUNC void tile_from_lane(D& out, const typename D::value_type& value, int) {
    tile_fill_with(out, [&](int, int) { return value; });
}
template <typename D, int C> TW_FUNC void tile_from_lane(D& out, const typename D::value_type (&lanes)[C], int lane) {
    typedef typename D::value_type T;
#if TW_IS_CUDA
    TW_SCRATCH(unsigned char, raw, sizeof(T));
    block_sync();
    if (lane_index() == lane % D::threads) *(T*)raw = lanes[lane / D::threads];
    block_sync();
    const T v = *(T*)raw;
#else
    const T v = lanes[lane];
#endif
    tile_fill_with(out, [&](int, int) { return v; });
}
}  // namespace tw

// ---- tile_stack: a block-shared LIFO; lanes push and pop concurrently (atomics on the count),
// every lane sees the pushes of the others after the barrier that ends the lane section.
namespace tw {
template <typename T, int CAP> struct tile_stack_t {
    T* data;  // CAP elements, then the count
    TW_FUNC int* count() const { return (int*)(data + CAP); }
};
template <typename T, int CAP> TW_FUNC void tile_stack_init(tile_stack_t<T, CAP>& s) {
    block_sync();
    if (lane_index() == 0) *s.count() = 0;
    block_sync();
}
// the slot the value went to, or -1 (has_value false, or the stack full)
template <typename T, int CAP> TW_FUNC int32_t tile_stack_push(const tile_stack_t<T, CAP>& s, const T& v, bool has_value) {
    if (!has_value) return -1;
    const int slot = atomic_add(s.count(), 1);
    if (slot >= CAP) {
        atomic_add(s.count(), -1);
        return -1;
    }
    s.data[slot] = v;
    return slot;
}
// (the value, its slot), or (T(), -1) from an empty stack
template <typename T, int CAP> TW_FUNC tuple_t<T, int32_t> tile_stack_pop(const tile_stack_t<T, CAP>& s) {
    const int top = atomic_add(s.count(), -1);
    if (top <= 0) {
        atomic_add(s.count(), 1);
        return make_tuple<T, int32_t>(T(), -1);
    }
    return make_tuple<T, int32_t>(s.data[top - 1], top - 1);
}
// no barrier here: a lane may ask inside its own branch (the lane section that pushed ended in one)
template <typename T, int CAP> TW_FUNC int32_t tile_stack_count(const tile_stack_t<T, CAP>& s) {
    return *(volatile int*)s.count();
}
template <typename T, int CAP> TW_FUNC void tile_stack_clear(const tile_stack_t<T, CAP>& s) {
    block_sync();
    if (lane_index() == 0) *s.count() = 0;
    block_sync();
}
}  // namespace tw
