// Tile linear algebra: Cholesky factorisation and triangular solves on shared tiles, and their
// adjoints. The block's lanes share each step's independent work (rows, right-hand-side columns)
// and meet at a barrier between steps; on the CPU the block's one thread runs the same loops.
//
// Every routine works on the *logical lower* factor: with Upper, element (i, j) of the factor is
// stored at (j, i), so `fill_mode="upper"` (A = U^T U) is the same code reading the transpose and
// only ever touches the triangle its mode names. A right-hand side is (M,) or (M, NRHS).
#pragma once
#include "tile.h"

namespace tw {
namespace la {
template <typename X> TW_FUNC auto& el(X& t, int e) { return t.at(e, e); }
// element (i, j) of a square tile, or of its transpose
template <bool Trans, typename X> TW_FUNC auto& at(X& t, int i, int j) {
    constexpr int n = X::shape::extent(0);
    return Trans ? t.at(j * n + i, j * n + i) : t.at(i * n + j, i * n + j);
}
template <typename Y> struct rhs {
    static constexpr int rows = Y::shape::extent(0), cols = Y::shape::ndim == 1 ? 1 : Y::shape::extent(1);
};
template <typename D, typename X> TW_FUNC void copy(D& out, const X& src) {
    for (int e = lane_index(); e < D::size; e += D::threads) el(out, e) = el(src, e);
    block_sync();
}
}  // namespace la

// ---- Cholesky: A = L L^T, column by column (each column's rows in parallel) --------------------
// Lane t owns rows t, t + P, ... for the whole factorisation: it keeps their sums of squares and,
// having finished row j + 1's last element, writes the next pivot itself; so a column costs one
// barrier and each lane reads the pivot row and its own rows, nothing twice.
// The square root of pivot j; a debug build reports one that is not positive (release: NaN / inf).
template <typename T> TW_FUNC T pivot_root(T x, int j, int n) {
#if defined(TW_DEBUG)
    if (!(x > T(0))) report_error(ERR_NOT_SPD, -1, -1, 0, j, n);
#else
    (void)j, (void)n;
#endif
    return sqrt(x);
}
#if TW_IS_CUDA
// n <= 32 on CUDA: the first warp factors with row r of the matrix in lane r's registers, right-
// looking: pivot j comes from lane j by a shuffle, each lane scales its element of column j, and
// column j's elements, shuffled in turn, update the rows after them. No barrier and no shared
// memory traffic between columns (the block-wide form below meets at one per column).
template <bool Upper, typename X> TW_FUNC void cholesky_warp(X& a) {
    typedef typename X::value_type T;
    constexpr int n = X::shape::extent(0);
    const int r = lane_index();
    if (r < 32) {  // (the other warps wait at the barrier below)
        T row[n];
        TW_UNROLL
        for (int k = 0; k < n; ++k) row[k] = r < n && k <= r ? la::at<Upper>(a, r, k) : T(0);
        TW_UNROLL
        for (int j = 0; j < n; ++j) {
            const T d = pivot_root(__shfl_sync(0xffffffffu, row[j], j), j, n);
            const T l = r == j ? d : r > j && r < n ? row[j] / d : T(0);  // l(r, j)
            row[j] = l;
            TW_UNROLL
            for (int k = j + 1; k < n; ++k) {
                const T lk = __shfl_sync(0xffffffffu, l, k);  // l(k, j)
                if (r >= k && r < n) row[k] -= l * lk;
            }
        }
        if (r < n) {
            TW_UNROLL
            for (int k = 0; k < n; ++k)
                if (k <= r) la::at<Upper>(a, r, k) = row[k];
        }
    }
    block_sync();
}
#endif
template <bool Upper, typename X> TW_FUNC void cholesky_in_place(X& a) {
    typedef typename X::value_type T;
    constexpr int n = X::shape::extent(0), P = X::threads, R = (n + P - 1) / P;
#if TW_IS_CUDA
    if constexpr (n <= 32 && P >= 32 && (detail::same_tile<T, float>::value || detail::same_tile<T, double>::value)) {
        cholesky_warp<Upper>(a);
        return;
    }
#endif
    T sumsq[R];
    for (int q = 0; q < R; ++q) sumsq[q] = T(0);
    if (lane_index() == 0) la::at<Upper>(a, 0, 0) = pivot_root(la::at<Upper>(a, 0, 0), 0, n);
    block_sync();
    for (int j = 0; j + 1 < n; ++j) {
        const T d = la::at<Upper>(a, j, j);
        for (int q = 0; q < R; ++q) {
            const int i = lane_index() + q * P;
            if (i <= j || i >= n) continue;
            T s[4] = {la::at<Upper>(a, i, j), T(0), T(0), T(0)};  // four chains: the FMAs overlap
            int k = 0;
            for (; k + 4 <= j; k += 4)
                for (int u = 0; u < 4; ++u) s[u] -= la::at<Upper>(a, i, k + u) * la::at<Upper>(a, j, k + u);
            for (; k < j; ++k) s[0] -= la::at<Upper>(a, i, k) * la::at<Upper>(a, j, k);
            const T l = ((s[0] + s[1]) + (s[2] + s[3])) / d;
            la::at<Upper>(a, i, j) = l;
            sumsq[q] += l * l;
            if (i == j + 1) la::at<Upper>(a, i, i) = pivot_root(la::at<Upper>(a, i, i) - sumsq[q], i, n);
        }
        block_sync();
    }
}
// On CUDA the factorisation runs on the upper orientation (row i of the factor is column i in
// memory): a column's rows, one per lane, are then consecutive words; in row-major order they
// would be a row apart, all in one shared-memory bank. On the CPU rows are the cache-friendly way.
template <bool Upper> struct cholesky_layout {
    static constexpr bool flip = TW_IS_CUDA && !Upper;  // factor the transpose, transpose back
};
template <typename X> TW_FUNC void transpose_in_place(X& a) {
    constexpr int n = X::shape::extent(0);
    for (int w = lane_index(); w < n * n; w += X::threads) {
        const int i = w / n, j = w % n;
        if (i < j) {
            const auto x = la::at<false>(a, i, j);
            la::at<false>(a, i, j) = la::at<false>(a, j, i);
            la::at<false>(a, j, i) = x;
        }
    }
    block_sync();
}
// Keep the triangle the mode reads, zero the other (the factor's zeros are part of its result);
// with Flip, write it transposed.
template <bool Upper, bool Flip, typename D, typename X> TW_FUNC void keep_triangle(D& out, const X& a) {
    typedef typename D::value_type T;
    constexpr int n = D::shape::extent(0);
    for (int e = lane_index(); e < n * n; e += D::threads) {
        const int i = e / n, j = e % n;
        la::el(out, e) = (Upper || Flip ? j >= i : i >= j) ? T(la::at<Flip>(a, i, j)) : T(0);
    }
    block_sync();
}
template <bool Upper, typename D, typename X> TW_FUNC void tile_cholesky(D& out, const X& a) {
    constexpr bool flip = cholesky_layout<Upper>::flip;
    block_sync();
    keep_triangle<Upper, flip>(out, a);
    cholesky_in_place<Upper || flip>(out);
    if (flip) transpose_in_place(out);
}
template <bool Upper, typename X> TW_FUNC void tile_cholesky_inplace(X& a) {
    constexpr bool flip = cholesky_layout<Upper>::flip;
    block_sync();
    if (flip) transpose_in_place(a);
    keep_triangle<Upper || flip, false>(a, a);
    cholesky_in_place<Upper || flip>(a);
    if (flip) transpose_in_place(a);
}
// The adjoint, in place on the result's adjoint `g` (the caller clears it afterwards): the reverse
// of the factorisation column by column (I. Murray, "Differentiation of the Cholesky decomposition",
// 2016, unblocked form), then adj_a's triangle += g with the diagonal halved. This is the gradient
// with respect to the triangle the mode reads (finite differences of that triangle agree).
template <bool Upper, typename L, typename AA, typename G>
TW_FUNC void adj_tile_cholesky(const L& l, AA& adj_a, G& g) {
    typedef typename L::value_type T;
    constexpr int n = L::shape::extent(0);
    block_sync();
    for (int j = n - 1; j >= 0; --j) {
        const T ljj = la::at<Upper>(l, j, j);
        T d = la::at<Upper>(g, j, j);
        for (int i = j + 1; i < n; ++i) d -= la::at<Upper>(l, i, j) * la::at<Upper>(g, i, j) / ljj;
        block_sync();
        for (int i = j + lane_index(); i < n; i += L::threads)
            la::at<Upper>(g, i, j) = (i == j ? d : la::at<Upper>(g, i, j)) / ljj;
        block_sync();
        for (int w = lane_index(); w < (n - j) * j; w += L::threads) {
            const int i = j + w / j, k = w % j;
            if (i == j) {
                T s = T(0);
                for (int m = j; m < n; ++m) s += la::at<Upper>(g, m, j) * la::at<Upper>(l, m, k);
                la::at<Upper>(g, j, k) -= s;
            } else {
                la::at<Upper>(g, i, k) -= la::at<Upper>(g, i, j) * la::at<Upper>(l, j, k);
            }
        }
        block_sync();
    }
    for (int e = lane_index(); e < n * n; e += L::threads) {
        const int i = e / n, j = e % n;
        if (i >= j) la::at<Upper>(adj_a, i, j) += (i == j ? T(0.5) : T(1)) * la::at<Upper>(g, i, j);
    }
    block_sync();
}

// ---- triangular solves: T x = b in place over x's columns --------------------------------------
// T(i, k) is f(i, k), or f(k, i) with Trans; lower-triangular (forward substitution) or upper.
// Each step subtracts the finished row from the rows after it, scaled by the pivot, so no lane
// waits on another's division; the last pass divides every row by its pivot.
#if TW_IS_CUDA
// n <= 32 rows on CUDA: the first warp solves with row r's right-hand sides in lane r's registers,
// each finished row handed to the others by a shuffle. The block-wide form above keeps x in shared
// memory and meets at a barrier every row (tile_ropes' 24 solves a step were most of its time);
// here a row costs a shuffle and a fused multiply-add, the factor's column read ahead of need.
template <bool Lower, bool Trans, typename F, typename Y> TW_FUNC void tri_solve_warp(const F& f, Y& x) {
    typedef typename Y::value_type T;
    constexpr int n = F::shape::extent(0), c = la::rhs<Y>::cols;
    const int r = lane_index();
    if (r < 32) {  // (the other warps wait at the barrier below)
        T xr[c];
        TW_UNROLL
        for (int col = 0; col < c; ++col) xr[col] = r < n ? la::el(x, r * c + col) : T(0);
#pragma unroll 4
        for (int s = 0; s < n - 1; ++s) {  // (whole, 24 solves a kernel took NVRTC a minute)
            const int i = Lower ? s : n - 1 - s;
            const bool after = r < n && (Lower ? r > i : r < i);
            const T inv = T(1) / la::at<Trans>(f, i, i);
            const T fri = after ? la::at<Trans>(f, r, i) : T(0);
            TW_UNROLL
            for (int col = 0; col < c; ++col) {
                const T xi = __shfl_sync(0xffffffffu, xr[col], i);
                if (after) xr[col] -= fri * inv * xi;  // the block-wide form's arithmetic, term for term
            }
        }
        if (r < n) {
            const T d = la::at<Trans>(f, r, r);
            TW_UNROLL
            for (int col = 0; col < c; ++col) la::el(x, r * c + col) = xr[col] / d;
        }
    }
    block_sync();
}
#endif
template <bool Lower, bool Trans, typename F, typename Y> TW_FUNC void tri_solve_in_place(const F& f, Y& x) {
    typedef typename Y::value_type T;
    constexpr int n = F::shape::extent(0), c = la::rhs<Y>::cols;
#if TW_IS_CUDA
    if constexpr (n <= 32 && c <= 8 && Y::threads >= 32 &&
                  (detail::same_tile<T, float>::value || detail::same_tile<T, double>::value)) {  // (shuffled whole)
        tri_solve_warp<Lower, Trans>(f, x);
        return;
    }
#endif
    for (int s = 0; s < n - 1; ++s) {
        const int i = Lower ? s : n - 1 - s, rest = n - 1 - s;
        const T inv = T(1) / la::at<Trans>(f, i, i);
        for (int w = lane_index(); w < rest * c; w += Y::threads) {
            const int r = Lower ? i + 1 + w / c : w / c, col = w % c;
            la::el(x, r * c + col) -= la::at<Trans>(f, r, i) * inv * la::el(x, i * c + col);
        }
        block_sync();
    }
    for (int e = lane_index(); e < n * c; e += Y::threads) la::el(x, e) /= la::at<Trans>(f, e / c, e / c);
    block_sync();
}
template <typename D, typename F, typename Y> TW_FUNC void tile_lower_solve(D& out, const F& l, const Y& y) {
    block_sync();
    la::copy(out, y);
    tri_solve_in_place<true, false>(l, out);
}
template <typename D, typename F, typename Y> TW_FUNC void tile_upper_solve(D& out, const F& u, const Y& y) {
    block_sync();
    la::copy(out, y);
    tri_solve_in_place<false, false>(u, out);
}
template <typename F, typename Y> TW_FUNC void tile_lower_solve_inplace(const F& l, Y& y) {
    block_sync();
    tri_solve_in_place<true, false>(l, y);
}
template <typename F, typename Y> TW_FUNC void tile_upper_solve_inplace(const F& u, Y& y) {
    block_sync();
    tri_solve_in_place<false, false>(u, y);
}
// A x = y with A = Lf Lf^T, Lf the logical lower factor: forward, then backward substitution.
template <bool Upper, typename F, typename Y> TW_FUNC void tile_cholesky_solve_inplace(const F& f, Y& y) {
    block_sync();
    tri_solve_in_place<true, Upper>(f, y);
    tri_solve_in_place<false, !Upper>(f, y);
}
template <bool Upper, typename D, typename F, typename Y>
TW_FUNC void tile_cholesky_solve(D& out, const F& f, const Y& y) {
    block_sync();
    la::copy(out, y);
    tri_solve_in_place<true, Upper>(f, out);
    tri_solve_in_place<false, !Upper>(f, out);
}

// z = T^-1 y (T = f, lower or upper): w = T^-T adj_z (in place on adj_z, which the caller clears),
// adj_y += w, and the read triangle of adj_f -= w z^T.
template <bool Lower, typename F, typename Z, typename AF, typename AY, typename G>
TW_FUNC void adj_tri_solve(const F& f, const Z& z, AF& adj_f, AY& adj_y, G& g) {
    typedef typename Z::value_type T;
    constexpr int n = F::shape::extent(0), c = la::rhs<Z>::cols;
    block_sync();
    tri_solve_in_place<!Lower, true>(f, g);
    for (int e = lane_index(); e < n * c; e += Z::threads) la::el(adj_y, e) += la::el(g, e);
    for (int e = lane_index(); e < n * n; e += Z::threads) {
        const int i = e / n, k = e % n;
        if (Lower ? k > i : k < i) continue;
        T s = T(0);
        for (int col = 0; col < c; ++col) s += la::el(g, i * c + col) * la::el(z, k * c + col);
        la::el(adj_f, e) -= s;
    }
    block_sync();
}
template <typename Z, typename F, typename Y, typename AF, typename AY, typename G>
TW_FUNC void adj_tile_lower_solve(const Z& z, const F& l, const Y&, AF& adj_l, AY& adj_y, G& g) {
    adj_tri_solve<true>(l, z, adj_l, adj_y, g);
}
template <typename Z, typename F, typename Y, typename AF, typename AY, typename G>
TW_FUNC void adj_tile_upper_solve(const Z& z, const F& u, const Y&, AF& adj_u, AY& adj_y, G& g) {
    adj_tri_solve<false>(u, z, adj_u, adj_y, g);
}
// x = (Lf Lf^T)^-1 y as the two triangular solves u = Lf^-1 y, x = Lf^-T u, taken back in turn:
// g = Lf^-1 adj_x is u's adjoint, Lf gets -x g^T (lower part); then g = Lf^-T g is y's adjoint,
// and Lf gets -g u^T with u = Lf^T x, recomputed per element (no scratch tile needed).
template <bool Upper, typename X, typename F, typename Y, typename AF, typename AY, typename G>
TW_FUNC void adj_tile_cholesky_solve(const X& x, const F& f, const Y&, AF& adj_f, AY& adj_y, G& g) {
    typedef typename X::value_type T;
    constexpr int n = F::shape::extent(0), c = la::rhs<X>::cols;
    block_sync();
    tri_solve_in_place<true, Upper>(f, g);
    for (int e = lane_index(); e < n * n; e += X::threads) {
        const int i = e / n, k = e % n;
        if (k > i) continue;
        T s = T(0);
        for (int col = 0; col < c; ++col) s += la::el(x, i * c + col) * la::el(g, k * c + col);
        la::at<Upper>(adj_f, i, k) -= s;
    }
    block_sync();
    tri_solve_in_place<false, !Upper>(f, g);
    for (int e = lane_index(); e < n * c; e += X::threads) la::el(adj_y, e) += la::el(g, e);
    for (int e = lane_index(); e < n * n; e += X::threads) {
        const int i = e / n, k = e % n;
        if (k > i) continue;
        T s = T(0);
        for (int col = 0; col < c; ++col) {
            T u = T(0);
            for (int m = k; m < n; ++m) u += la::at<Upper>(f, m, k) * la::el(x, m * c + col);
            s += la::el(g, i * c + col) * u;
        }
        la::at<Upper>(adj_f, i, k) -= s;
    }
    block_sync();
}
}  // namespace tw
