// tile_matmul of float64 tiles on tensor cores (DMMA), for outputs of whole 16-column or 16-row
// blocks (issue 29; mma.h keeps the m8n8k4 path of other 8-row multiples and picks between them).
//
// Both paths multiply k8 steps of warp tiles with
//   * sm_90: mma.m16n8k8 (TW_DMMA_SHAPE 1688), or two steps at once with m16n8k16 (16816), or
//     m16n8k4 pairs (1684) - Hopper's float64 shapes (PTX ISA 7.8); m8n8k4 runs at 2/3 their rate
//     (H200, 4096^3: 26 against 40 TFLOP/s);
//   * older targets (and TW_DMMA_SHAPE 884): the same fragments as four mma.m8n8k4.
// and read 16-byte pairs of the operands (ld.shared.v2.f64) without bank conflicts, through
// permutations that cancel in the product:
//   * k: the mma's k index t + 4 j (t the thread's lane % 4) is the step's column 2 t + j, so a
//     thread's two values of a row are neighbours;
//   * the transposed path (N % 16 == 0, preferred) computes D^T = B^T A^T: the mma's m16 block spans
//     16 output columns, its row g the column 2 g and g + 8 the column 2 g + 1, so a pair of B is a
//     register pair of the mma's first operand (a0, a1), and a pair of A one of its second (b0, b1):
//     no register moves. The other path (M % 16 == 0) reads the same pairs into (a0, a2), (a1, a3),
//     which ptxas moves into place (400 moves a K step of 32 for 64 mmas).
//   * rows of A: the mma's g-th row (or column) of 8 is the tile's rho(g) = g / 2 + 4 (g % 2), so
//     the two rows a quarter warp reads lie 4 apart, in opposite halves of the swizzle's lines.
// Operands the compiler loaded for this path only take tile.h's swizzled_t<16, 8> layout (strips of
// 16 columns, a row of a strip one 128-byte line whose 16-byte pieces are XORed with the row % 8):
// each quarter warp then reads 8 distinct pieces. Row-major operands work too, with conflicts
// (views, tiles read elsewhere, K % 16 != 0).
#pragma once
#include "tile.h"

#ifndef TW_DMMA_SHAPE
#define TW_DMMA_SHAPE 1688
#endif

namespace tw {
namespace detail {
// Warp tiles of TM x TN blocks of BM x BN outputs (transposed path: 8 x 16, else 16 x 8) over an
// M x N output shared by W warps: the most blocks a warp tile (at most 16: 64 sums a thread, leaving
// registers for the fragments), then the fewest operand words a k step reads (BM TM + BN TN), then
// the tallest, among the tilings whose tiles the warps share evenly (a register accumulator needs
// every thread to hold as many sums); where none is even, the same without that (outputs in shared
// memory). tilewarp/tiling/storage.py _dmma_tiles mirrors this.
TW_FUNC constexpr int dmma_pick(int M, int N, int W, int BM, int BN, int most_m, int most_n) {
    for (int even = 1; even >= 0; --even)
        for (int area = 16; area >= 1; area /= 2) {
            int best = 0, words = 1 << 30;
            for (int tm = most_m; tm >= 1; tm /= 2) {
                const int tn = area / tm;
                if (tn < 1 || tm * tn != area || tn > most_n || M % (BM * tm) != 0 || N % (BN * tn) != 0) continue;
                if (even && ((M / (BM * tm)) * (N / (BN * tn))) % W != 0) continue;
                if (BM * tm + BN * tn < words) words = BM * tm + BN * tn, best = tm * 16 + tn;
            }
            if (best) return best;
        }
    return 17;  // (never: one block divides a shape this path takes)
}
template <int M, int N, int P> struct dmma_tiling {
    static constexpr bool T = N % 16 == 0;  // the transposed path
    static constexpr int BM = T ? 8 : 16, BN = T ? 16 : 8, warps = P >= 32 ? P / 32 : 1;
    static constexpr int pick = dmma_pick(M, N, warps, BM, BN, T ? 8 : 4, T ? 4 : 8);
    static constexpr int TM = pick / 16, TN = pick % 16, WM = BM * TM, WN = BN * TN, per_tile = 4 * TM * TN;
    static constexpr int across = N / WN, tiles = (M / WM) * across, rounds = (tiles + warps - 1) / warps;
};
// float64 products dmma.h takes (mma.h: the others of 8-row multiples take m8n8k4)
template <int M, int N> struct dmma_shape { static constexpr bool value = N % 16 == 0 || M % 16 == 0; };
// the warp tile's row that the mma's row (or column) g < 8 of A stands for
TW_FUNC constexpr int dmma_row(int g) { return (g >> 1) + 4 * (g & 1); }

// float64 operands this path reads: row-major, or swizzled in 16-column strips
template <typename X> struct dmma_operand {
    static constexpr bool swizzled = false, value = is_rowmajor_shared<X>::value;
};
template <typename S, int P> struct dmma_operand<stile<double, S, P, swizzled_t<16, 8>>> {
    static constexpr bool swizzled = true, value = true;
};

#if TW_IS_CUDA
// The output element of slot `slot` of this thread (slots: round q's tile, then its blocks i, j, then
// h: bit 0 the next column, bit 1 the row 8 (transposed: 4) below)
template <int M, int N, int P> TW_FUNC int dmma_element(int slot) {
    typedef dmma_tiling<M, N, P> L;
    const int lane = lane_index() & 31, g = lane >> 2, t = lane & 3;
    const int w = (lane_index() >> 5) + (slot / L::per_tile) * L::warps, s = slot % L::per_tile;
    const int i = s / (4 * L::TN), j = (s / 4) % L::TN, h = s % 4;
    const int m0 = (w / L::across) * L::WM, n0 = (w % L::across) * L::WN;
    if (L::T) return (m0 + 8 * i + t + 4 * (h >> 1)) * N + n0 + 16 * j + 2 * g + (h & 1);
    return (m0 + 16 * i + dmma_row(g) + 8 * (h >> 1)) * N + n0 + 8 * j + 2 * t + (h & 1);
}

TW_FUNC unsigned dmma_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// (volatile: shared reads must stay between the block syncs and cp.async waits around them)
TW_FUNC void dmma_ld2(double& x, double& y, unsigned p) {
    asm volatile("ld.shared.v2.f64 {%0,%1}, [%2];\n" : "=d"(x), "=d"(y) : "r"(p));
}
TW_FUNC double dmma_ld(unsigned p) {
    double x;
    asm volatile("ld.shared.f64 %0, [%1];\n" : "=d"(x) : "r"(p));
    return x;
}

// A's fragments (M x K): the pair at rows r + d (r = the tile's first row + rho(g), d a multiple of 8)
// and columns kk + 2 t, kk + 2 t + 1, as shared addresses: a per-thread base plus constants.
template <typename X, bool Swizzled = dmma_operand<X>::swizzled> struct dmma_a {
    static constexpr int K = X::shape::extent(1);
    unsigned at0;
    TW_FUNC dmma_a(const X& x, int r, int t) : at0(dmma_smem(x.data) + (unsigned)(r * K + 2 * t) * 8u) {}
    TW_FUNC unsigned at(int d, int kk) const { return at0 + (unsigned)(d * K + kk) * 8u; }
};
template <typename X> struct dmma_a<X, true> {
    static constexpr int M = X::shape::extent(0);
    unsigned lo, hi;  // pieces t ^ (r % 8) and that ^ 4: the steps at kk % 16 == 0 and 8
    TW_FUNC dmma_a(const X& x, int r, int t) {
        const unsigned row = dmma_smem(x.data) + (unsigned)r * 128u, p = (unsigned)(t ^ (r & 7));
        lo = row + p * 16u;
        hi = row + (p ^ 4u) * 16u;
    }
    TW_FUNC unsigned at(int d, int kk) const { return ((kk & 8) ? hi : lo) + (unsigned)((kk >> 4) * M * 16 + d * 16) * 8u; }
};

// B's fragments (K x N, row-major) on the untransposed path: the word at row kk + 2 t + j (j = 0, 1)
// and column n0 + 8 jn + g, n0 the tile's first column (n0 = 8 c0): tile(c0) sets it.
template <typename X> struct dmma_b {
    static constexpr int N = X::shape::extent(1);
    unsigned base, at0;
    TW_FUNC dmma_b(const X& x, int g, int t) : base(dmma_smem(x.data) + (unsigned)(2 * t * N + g) * 8u), at0(base) {}
    TW_FUNC void tile(int c0) { at0 = base + (unsigned)c0 * 64u; }
    TW_FUNC unsigned at(int j, int jn, int kk) const { return at0 + (unsigned)((kk + j) * N + 8 * jn) * 8u; }
};
// B's pairs on the transposed path: row kk + 2 t + j (j = 0, 1), columns n0 + 16 jb + 2 g and the
// next, n0 the tile's first column (a multiple of 16): tile(n0) sets it.
template <typename X, bool Swizzled = dmma_operand<X>::swizzled> struct dmma_bt {
    static constexpr int N = X::shape::extent(1);
    unsigned base, at0;
    TW_FUNC dmma_bt(const X& x, int g, int t) : base(dmma_smem(x.data) + (unsigned)(2 * t * N + 2 * g) * 8u), at0(base) {}
    TW_FUNC void tile(int n0) { at0 = base + (unsigned)n0 * 8u; }
    TW_FUNC unsigned at(int j, int jb, int kk) const { return at0 + (unsigned)((kk + j) * N + 16 * jb) * 8u; }
};
template <typename X> struct dmma_bt<X, true> {
    static constexpr int K = X::shape::extent(0);
    unsigned base, q[2], at0[2];  // q[j]: row 2 t + j, piece g of a strip (XORed with the row % 8)
    TW_FUNC dmma_bt(const X& x, int g, int t) : base(dmma_smem(x.data)) {
        for (int j = 0; j < 2; ++j) q[j] = (unsigned)((2 * t + j) * 16 + 2 * (g ^ (2 * t + j))) * 8u;
    }
    TW_FUNC void tile(int n0) {
        for (int j = 0; j < 2; ++j) at0[j] = base + (unsigned)(n0 >> 4) * (unsigned)(K * 16 * 8) + q[j];
    }
    TW_FUNC unsigned at(int j, int jb, int kk) const { return at0[j] + (unsigned)(jb * K * 16 + kk * 16) * 8u; }
};

// d (m16 x n8) += a (m16 x k8) @ b (k8 x n8) in the k-permuted fragments above: a = {row rho(g) at
// k t, row rho(g) + 8 at t, row rho(g) at t + 4, row rho(g) + 8 at t + 4}, b = {k t, k t + 4}
TW_FUNC void dmma_k8(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
#if __CUDA_ARCH__ >= 900 && TW_DMMA_SHAPE != 884
#if TW_DMMA_SHAPE == 1684
    TW_UNROLL
    for (int q = 0; q < 2; ++q)
        asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                     : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                     : "d"(a[2 * q]), "d"(a[2 * q + 1]), "d"(b[q]));
#else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
#endif
#else
    TW_UNROLL
    for (int q = 0; q < 2; ++q)  // k halves
        TW_UNROLL
        for (int h = 0; h < 2; ++h)  // the 8-row halves
            asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                         : "+d"(d[2 * h]), "+d"(d[2 * h + 1])
                         : "d"(a[2 * q + h]), "d"(b[q]));
#endif
}
// two k8 steps in one mma.m16n8k16 where it is the chosen shape (its k index t + 4 u: step u / 2's
// t + 4 (u % 2)), else one after the other
TW_FUNC void dmma_k16(double (&d)[4], const double (&a0)[4], const double (&b0)[2], const double (&a1)[4],
                      const double (&b1)[2]) {
#if __CUDA_ARCH__ >= 900 && TW_DMMA_SHAPE == 16816
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
                 "{%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a0[0]), "d"(a0[1]), "d"(a0[2]), "d"(a0[3]), "d"(a1[0]), "d"(a1[1]), "d"(a1[2]), "d"(a1[3]),
                   "d"(b0[0]), "d"(b0[1]), "d"(b1[0]), "d"(b1[1]));
#else
    dmma_k8(d, a0, b0);
    dmma_k8(d, a1, b1);
#endif
}

// d (mma layout) += the k4 step at column kk of the tiles (no k permutation): a = the rows (g, g + 8)
TW_FUNC void dmma_k4(double (&d)[4], double a0, double a1, double b) {
#if __CUDA_ARCH__ >= 900 && TW_DMMA_SHAPE != 884
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a0), "d"(a1), "d"(b));
#else
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(d[0]), "+d"(d[1]) : "d"(a0), "d"(b));
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                 : "+d"(d[2]), "+d"(d[3]) : "d"(a1), "d"(b));
#endif
}

// The product's sums of this thread's warp tiles (init(slot) their first values, done(slot, sum)
// takes them; slots as dmma_element numbers them) for float64 A (M x K) @ B (K x N), K % 4 == 0 and
// N % 16 == 0 (transposed) or M % 16 == 0 and N % 8 == 0.
template <typename A, typename B, typename Init, typename Done>
TW_FUNC void matmul_dmma16(const A& a, const B& b, const Init& init, const Done& done) {
    constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
    typedef dmma_tiling<M, N, A::threads> L;
    constexpr int TM = L::TM, TN = L::TN, K16 = TW_DMMA_SHAPE == 16816 ? K / 16 : 0, K8 = (K - 16 * K16) / 8;
    const int lane = lane_index() & 31, warp = lane_index() >> 5, g = lane >> 2, t = lane & 3, r0 = dmma_row(g);
    // (every step unrolled, K of a tile being short: the next step's reads overlap this one's products)
    TW_UNROLL
    for (int q = 0; q < L::rounds; ++q) {
        const int w = warp + q * L::warps;
        if (L::tiles % L::warps != 0 && w >= L::tiles) break;
        const int m0 = (w / L::across) * L::WM, n0 = (w % L::across) * L::WN;
        const dmma_a<A> ra(a, m0 + r0, t);
        double acc[TM][TN][4];
        // a slot's register: the transposed path's slots 1 and 2 (next column, 4 rows below) are d2, d1
        auto reg = [](int h) { return L::T ? ((h & 1) << 1) | (h >> 1) : h; };
        TW_UNROLL
        for (int i = 0; i < TM; ++i)
            TW_UNROLL
            for (int j = 0; j < TN; ++j)
                TW_UNROLL
                for (int h = 0; h < 4; ++h) acc[i][j][reg(h)] = init(q * L::per_tile + (i * TN + j) * 4 + h);
        if constexpr (L::T) {  // D^T = B^T A^T: the mma's first operand from B, 16 columns a block
            dmma_bt<B> rb(b, g, t);
            rb.tile(n0);
            // a step's fragments: B's two pairs a block (rows 2 t, 2 t + 1), A's pair a block of 8 rows
            auto load = [&](double (&fa)[TN][4], double (&fb)[TM][2], int kk) {
                TW_UNROLL
                for (int j = 0; j < TN; ++j) {
                    dmma_ld2(fa[j][0], fa[j][1], rb.at(0, j, kk));
                    dmma_ld2(fa[j][2], fa[j][3], rb.at(1, j, kk));
                }
                TW_UNROLL
                for (int i = 0; i < TM; ++i) dmma_ld2(fb[i][0], fb[i][1], ra.at(8 * i, kk));
            };
            TW_UNROLL
            for (int s = 0; s < K16; ++s) {
                double fa0[TN][4], fb0[TM][2], fa1[TN][4], fb1[TM][2];
                load(fa0, fb0, 16 * s);
                load(fa1, fb1, 16 * s + 8);
                TW_UNROLL
                for (int j = 0; j < TN; ++j)
                    TW_UNROLL
                    for (int i = 0; i < TM; ++i) dmma_k16(acc[i][j], fa0[j], fb0[i], fa1[j], fb1[i]);
            }
            TW_UNROLL
            for (int s = 0; s < K8; ++s) {
                double fa[TN][4], fb[TM][2];
                load(fa, fb, 16 * K16 + 8 * s);
                TW_UNROLL
                for (int j = 0; j < TN; ++j)
                    TW_UNROLL
                    for (int i = 0; i < TM; ++i) dmma_k8(acc[i][j], fa[j], fb[i]);
            }
            if constexpr (K % 8 != 0) {  // a last k4 step (row-major operands: swizzled ones have K % 16 == 0)
                constexpr int kk = K - 4;
                TW_UNROLL
                for (int j = 0; j < TN; ++j) {
                    const int e = (kk + t) * N + n0 + 16 * j + 2 * g;
                    const double b0 = b.at(0, e), b1 = b.at(0, e + 1);
                    TW_UNROLL
                    for (int i = 0; i < TM; ++i) dmma_k4(acc[i][j], b0, b1, a.at(0, (m0 + r0 + 8 * i) * K + kk + t));
                }
            }
        } else {  // A's rows in 16-row blocks (row-major operands: N % 16 != 0 is never swizzled)
            dmma_b<B> rb(b, g, t);
            rb.tile(n0 / 8);
            TW_UNROLL
            for (int s = 0; s < K / 8; ++s) {
                const int kk = 8 * s;
                double fb[TN][2];
                TW_UNROLL
                for (int j = 0; j < TN; ++j) {
                    fb[j][0] = dmma_ld(rb.at(0, j, kk));
                    fb[j][1] = dmma_ld(rb.at(1, j, kk));
                }
                TW_UNROLL
                for (int i = 0; i < TM; ++i) {
                    double fa[4];
                    dmma_ld2(fa[0], fa[2], ra.at(16 * i, kk));
                    dmma_ld2(fa[1], fa[3], ra.at(16 * i + 8, kk));
                    TW_UNROLL
                    for (int j = 0; j < TN; ++j) dmma_k8(acc[i][j], fa, fb[j]);
                }
            }
            if constexpr (K % 8 != 0) {  // a last k4 step
                constexpr int kk = K - 4;
                TW_UNROLL
                for (int i = 0; i < TM; ++i) {
                    const int e = (m0 + r0 + 16 * i) * K + kk + t;
                    const double a0 = a.at(0, e), a1 = a.at(0, e + 8 * K);
                    TW_UNROLL
                    for (int j = 0; j < TN; ++j) dmma_k4(acc[i][j], a0, a1, b.at(0, (kk + t) * N + n0 + 8 * j + g));
                }
            }
        }
        TW_UNROLL
        for (int i = 0; i < TM; ++i)
            TW_UNROLL
            for (int j = 0; j < TN; ++j)
                TW_UNROLL
                for (int h = 0; h < 4; ++h) done(q * L::per_tile + (i * TN + j) * 4 + h, acc[i][j][reg(h)]);
    }
}
#endif
}  // namespace detail
}  // namespace tw
