// tile_matmul on tensor cores (CUDA, issue 11): warp-level mma.sync on shared tiles.
//
// Used where the operands allow it (tile_matmul in shape.h falls back to the portable loop
// otherwise): row-major shared tiles, a multiple of a warp of threads, and
//   * float16 A and B, float32 (or float16) out: mma.m16n8k16 (HMMA), products exact in float32,
//     summed in float32 - M % 16, N % 8, K % 16 == 0;
//   * float64 throughout: mma.m8n8k4 (DMMA), each step an IEEE fused multiply-add -
//     M % 8, N % 8, K % 4 == 0.
// Each warp owns whole warp tiles of the output (several mma tiles, so every fragment it reads
// from shared memory feeds more than one mma) and keeps their accumulators in registers for the
// whole K loop; out = alpha * acc + beta * c is written once at the end.
#pragma once
#include "tile.h"

namespace tw {
namespace detail {
template <typename X, typename Y> using same_type = same_tile<X, Y>;  // any two types

template <typename D, typename A, typename B, typename C> struct mma_operands {
    static constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
    static constexpr bool layout = is_rowmajor_shared<D>::value && is_rowmajor_shared<A>::value &&
                                   is_rowmajor_shared<B>::value && is_rowmajor_shared<C>::value &&
                                   A::threads % 32 == 0;
    static constexpr bool f16 = layout && same_type<typename A::value_type, half>::value &&
                                same_type<typename B::value_type, half>::value &&
                                (same_type<typename D::value_type, float>::value ||
                                 same_type<typename D::value_type, half>::value) &&
                                same_type<typename C::value_type, typename D::value_type>::value &&
                                M % 16 == 0 && N % 8 == 0 && K % 16 == 0;
    static constexpr bool f64 = layout && same_type<typename A::value_type, double>::value &&
                                same_type<typename B::value_type, double>::value &&
                                same_type<typename D::value_type, double>::value &&
                                same_type<typename C::value_type, double>::value && M % 8 == 0 &&
                                N % 8 == 0 && K % 4 == 0;
};

#if TW_IS_CUDA
TW_FUNC unsigned shared_address(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// D (M x N) = alpha * A (M x K) @ B (K x N) + beta * C, float16 operands, float32 sums.
// Warp tiles of (16 TM) x (8 TN); the fragment layouts are the PTX ISA's for m16n8k16. Rows of the
// operand tiles start 16-byte aligned (K and N are multiples of 8 halves; tiles sit at 16-byte offsets).
template <int TM, int TN, typename D, typename A, typename B, typename C, typename S>
TW_FUNC void matmul_hmma(D& out, const A& a, const B& b, const C& c, S alpha, S beta) {
    typedef mma_operands<D, A, B, C> op;
    constexpr int M = op::M, K = op::K, N = op::N, WM = 16 * TM, WN = 8 * TN;
    constexpr int across = N / WN, tiles = (M / WM) * across, warps = A::threads / 32;
    const int lane = (int)threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const half* as = a.data;
    const half* bs = b.data;
    for (int w = (int)threadIdx.x >> 5; w < tiles; w += warps) {
        const int m0 = (w / across) * WM, n0 = (w % across) * WN;
        float acc[TM][TN][4];
        TW_UNROLL
        for (int i = 0; i < TM; ++i)
            TW_UNROLL
            for (int j = 0; j < TN; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
#pragma unroll 2
        for (int k0 = 0; k0 < K; k0 += 16) {
            unsigned fa[TM][4], fb[TN][2];
            // ldmatrix: lanes 0-15 name the 16 rows of the fragment's left 8 columns, 16-31 the right
            TW_UNROLL
            for (int i = 0; i < TM; ++i) {
                const unsigned p = shared_address(as + (m0 + 16 * i + (lane & 15)) * K + k0 + (lane >> 4) * 8);
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                             : "=r"(fa[i][0]), "=r"(fa[i][1]), "=r"(fa[i][2]), "=r"(fa[i][3]) : "r"(p));
            }
            // B's k x n fragment is column-major for the mma: the transposing ldmatrix reads its rows
            TW_UNROLL
            for (int j = 0; j < TN; ++j) {
                const unsigned p = shared_address(bs + (k0 + (lane & 15)) * N + n0 + 8 * j);
                asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                             : "=r"(fb[j][0]), "=r"(fb[j][1]) : "r"(p));
            }
            TW_UNROLL
            for (int i = 0; i < TM; ++i)
                TW_UNROLL
                for (int j = 0; j < TN; ++j) {
                    float* d = acc[i][j];
                    asm volatile(
                        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                        "{%8,%9}, {%0,%1,%2,%3};\n"
                        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                        : "r"(fa[i][0]), "r"(fa[i][1]), "r"(fa[i][2]), "r"(fa[i][3]), "r"(fb[j][0]),
                          "r"(fb[j][1]));
                }
        }
        typedef typename D::value_type T;
        TW_UNROLL
        for (int i = 0; i < TM; ++i)
            TW_UNROLL
            for (int j = 0; j < TN; ++j)
                TW_UNROLL
                for (int h = 0; h < 4; ++h) {
                    const int e = (m0 + 16 * i + g + 8 * (h >> 1)) * N + n0 + 8 * j + 2 * t + (h & 1);
                    float v = (float)alpha * acc[i][j][h];
                    if (beta != S(0)) v += (float)beta * (float)c.at(e, e);
                    out.at(e, e) = cast<T>(v);
                }
    }
}

// D (M x N) = alpha * A @ B + beta * C in float64; warp tiles of (8 TM) x (8 TN), m8n8k4 fragments.
template <int TM, int TN, typename D, typename A, typename B, typename C, typename S>
TW_FUNC void matmul_dmma(D& out, const A& a, const B& b, const C& c, S alpha, S beta) {
    typedef mma_operands<D, A, B, C> op;
    constexpr int M = op::M, K = op::K, N = op::N, WM = 8 * TM, WN = 8 * TN;
    constexpr int across = N / WN, tiles = (M / WM) * across, warps = A::threads / 32;
    const int lane = (int)threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    for (int w = (int)threadIdx.x >> 5; w < tiles; w += warps) {
        const int m0 = (w / across) * WM, n0 = (w % across) * WN;
        double acc[TM][TN][2];
        TW_UNROLL
        for (int i = 0; i < TM; ++i)
            TW_UNROLL
            for (int j = 0; j < TN; ++j) acc[i][j][0] = acc[i][j][1] = 0.0;
#pragma unroll 2
        for (int k0 = 0; k0 < K; k0 += 4) {
            double fa[TM], fb[TN];
            TW_UNROLL
            for (int i = 0; i < TM; ++i) fa[i] = a.data[(m0 + 8 * i + g) * K + k0 + t];
            TW_UNROLL
            for (int j = 0; j < TN; ++j) fb[j] = b.data[(k0 + t) * N + n0 + 8 * j + g];
            TW_UNROLL
            for (int i = 0; i < TM; ++i)
                TW_UNROLL
                for (int j = 0; j < TN; ++j)
                    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                                 : "+d"(acc[i][j][0]), "+d"(acc[i][j][1])
                                 : "d"(fa[i]), "d"(fb[j]));
        }
        TW_UNROLL
        for (int i = 0; i < TM; ++i)
            TW_UNROLL
            for (int j = 0; j < TN; ++j)
                TW_UNROLL
                for (int h = 0; h < 2; ++h) {
                    const int e = (m0 + 8 * i + g) * N + n0 + 8 * j + 2 * t + h;
                    double v = (double)alpha * acc[i][j][h];
                    if (beta != S(0)) v += (double)beta * c.at(e, e);
                    out.at(e, e) = v;
                }
    }
}
#endif

// The largest warp tile (in mma tiles) that divides the output: more reuse of each fragment.
template <int Extent, int Unit, int Most> struct warp_tiles {
    static constexpr int value = (Extent % (Unit * Most) == 0) ? Most
                                 : (Most > 1 ? warp_tiles<Extent, Unit, (Most > 1 ? Most / 2 : 1)>::value : 1);
};
template <int Extent, int Unit> struct warp_tiles<Extent, Unit, 1> { static constexpr int value = 1; };

// true where a tensor-core path did the product
template <typename D, typename A, typename B, typename C, typename S>
TW_FUNC bool tile_matmul_mma(D& out, const A& a, const B& b, const C& c, S alpha, S beta) {
#if TW_IS_CUDA
    typedef mma_operands<D, A, B, C> op;
    if constexpr (op::f16) {
        block_sync();
        matmul_hmma<warp_tiles<op::M, 16, 2>::value, warp_tiles<op::N, 8, 4>::value>(out, a, b, c, alpha, beta);
        block_sync();
        return true;
    } else if constexpr (op::f64) {
        block_sync();
        matmul_dmma<warp_tiles<op::M, 8, 4>::value, warp_tiles<op::N, 8, 2>::value>(out, a, b, c, alpha, beta);
        block_sync();
        return true;
    }
#endif
    (void)out; (void)a; (void)b; (void)c; (void)alpha; (void)beta;
    return false;
}
}  // namespace detail
}  // namespace tw
