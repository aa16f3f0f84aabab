// tile_matmul on tensor cores (CUDA, issue 11): warp-level mma.sync on shared tiles.
//
// Used where the operands allow it (tile_matmul in shape.h falls back to the portable loop
// otherwise): row-major shared tiles, a multiple of a warp of threads, and
//   * float16 A and B, float32 (or float16) out: mma.m16n8k16 (HMMA), products exact in float32,
//     summed in float32 - M % 16, N % 8, K % 16 == 0;
//   * float64 throughout (DMMA), each step an IEEE fused multiply-add - M % 8, N % 8, K % 4 == 0:
//     outputs of 16-column or 16-row multiples in dmma.h's warp tiles (Hopper's m16n8k8,
//     conflict-free reads of swizzled operands), others in m8n8k4 tiles here.
// Each warp owns whole warp tiles of the output (several mma tiles, so every fragment it reads
// from shared memory feeds more than one mma) and keeps their accumulators in registers for the
// whole K loop; out = alpha * acc + beta * c is written once at the end.
//   * Kind 3, float16 operands in the swizzled layout (tile.h swizzled_t) into a register
//     accumulator: on sm_90a each warpgroup (128 threads) multiplies 64 x WN output tiles with
//     wgmma.mma_async straight from shared memory (wgmma.h); elsewhere the same accumulator layout
//     is filled by mma.m16n8k16.
#pragma once
#include "tile.h"
#include "wgmma.h"
#include "dmma.h"

namespace tw {
namespace detail {
template <bool B, typename X, typename Y> struct pick { typedef X type; };
template <typename X, typename Y> struct pick<false, X, Y> { typedef Y type; };
// a GEMM sums in its output's dtype; float16 sums in float32 (as tensor cores make them)
template <typename T> struct matmul_acc_of { typedef T type; };
template <> struct matmul_acc_of<half> { typedef float type; };

template <typename D, typename A, typename B, typename C> struct mma_operands {
    static constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
    static constexpr bool layout = is_rowmajor_shared<D>::value && is_rowmajor_shared<A>::value &&
                                   is_rowmajor_shared<B>::value && is_rowmajor_shared<C>::value &&
                                   A::threads % 32 == 0;
    // float16 operands into float32 or float16 sums; bfloat16 operands into float32
    static constexpr bool f16_types = same_tile<typename A::value_type, typename B::value_type>::value &&
                                      ((same_tile<typename A::value_type, half>::value &&
                                        (same_tile<typename D::value_type, float>::value ||
                                         same_tile<typename D::value_type, half>::value)) ||
                                       (same_tile<typename A::value_type, bfloat16>::value &&
                                        same_tile<typename D::value_type, float>::value)) &&
                                      same_tile<typename C::value_type, typename D::value_type>::value;
    static constexpr bool f16 = layout && f16_types && M % 16 == 0 && N % 8 == 0 && K % 16 == 0;
    // float64 operands (of dmma.h's products they may be swizzled) and sums: dmma; f64 also
    // asks for shared row-major out and c (a register accumulator is an mtile)
    static constexpr bool dmma = A::threads % 32 == 0 && M % 8 == 0 && N % 8 == 0 && K % 4 == 0 &&
                                 (N % 16 == 0 ? dmma_operand<A>::value && dmma_operand<B>::value  // (transposed)
                                              : is_rowmajor_shared<A>::value && is_rowmajor_shared<B>::value) &&
                                 same_tile<typename A::value_type, double>::value &&
                                 same_tile<typename B::value_type, double>::value &&
                                 same_tile<typename D::value_type, double>::value &&
                                 same_tile<typename C::value_type, double>::value;
    static constexpr bool f64 = dmma && is_rowmajor_shared<D>::value && is_rowmajor_shared<C>::value;
};

#if TW_IS_CUDA
TW_FUNC unsigned shared_address(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// d += a (16 x 16 fragment) @ b (16 x 8): mma.sync m16n8k16 of T = half or bfloat16, float32 sums
template <typename T> TW_FUNC void mma_m16n8k16(float* d, const unsigned (&a)[4], const unsigned (&b)[2]) {
    if constexpr (same_tile<T, bfloat16>::value)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// D (M x N) = alpha * A (M x K) @ B (K x N) + beta * C, float16 (or bfloat16) operands, float32 sums.
// Warp tiles of (16 TM) x (8 TN); the fragment layouts are the PTX ISA's for m16n8k16. Rows of the
// operand tiles start 16-byte aligned (K and N are multiples of 8 halves; tiles sit at 16-byte offsets).
template <int TM, int TN, typename A, typename B, typename Init, typename Done>
TW_FUNC void matmul_hmma(const A& a, const B& b, const Init& init, const Done& done) {
    constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
    constexpr int WM = 16 * TM, WN = 8 * TN, across = N / WN, tiles = (M / WM) * across, warps = A::threads / 32;
    const int lane = lane_index() & 31;
    typedef typename A::value_type T;
    const T* as = a.data;
    const T* bs = b.data;
    int slot = 0;  // the thread's next accumulator, in the order hmma_element numbers them
    for (int w = lane_index() >> 5; w < tiles; w += warps, slot += TM * TN * 4) {
        const int m0 = (w / across) * WM, n0 = (w % across) * WN;
        float acc[TM][TN][4];
        TW_UNROLL
        for (int i = 0; i < TM; ++i)
            TW_UNROLL
            for (int j = 0; j < TN; ++j)
                TW_UNROLL
                for (int h = 0; h < 4; ++h) acc[i][j][h] = init(slot + (i * TN + j) * 4 + h);
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
                for (int j = 0; j < TN; ++j) mma_m16n8k16<T>(acc[i][j], fa[i], fb[j]);
        }
        TW_UNROLL
        for (int i = 0; i < TM; ++i)
            TW_UNROLL
            for (int j = 0; j < TN; ++j)
                TW_UNROLL
                for (int h = 0; h < 4; ++h) done(slot + (i * TN + j) * 4 + h, acc[i][j][h]);
    }
}

// The same in float64: warp tiles of (8 TM) x (8 TN), m8n8k4 fragments, two accumulators a tile.
template <int TM, int TN, typename A, typename B, typename Init, typename Done>
TW_FUNC void matmul_dmma(const A& a, const B& b, const Init& init, const Done& done) {
    constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
    constexpr int WM = 8 * TM, WN = 8 * TN, across = N / WN, tiles = (M / WM) * across, warps = A::threads / 32;
    const int lane = lane_index() & 31, g = lane >> 2, t = lane & 3;
    int slot = 0;
    for (int w = lane_index() >> 5; w < tiles; w += warps, slot += TM * TN * 2) {
        const int m0 = (w / across) * WM, n0 = (w % across) * WN;
        double acc[TM][TN][2];
        TW_UNROLL
        for (int i = 0; i < TM; ++i)
            TW_UNROLL
            for (int j = 0; j < TN; ++j)
                TW_UNROLL
                for (int h = 0; h < 2; ++h) acc[i][j][h] = init(slot + (i * TN + j) * 2 + h);
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
                for (int h = 0; h < 2; ++h) done(slot + (i * TN + j) * 2 + h, acc[i][j][h]);
    }
}
#endif

// The largest warp tile (in mma tiles) that divides the output: more reuse of each fragment.
template <int Extent, int Unit, int Most> struct warp_tiles {
    static constexpr int value = (Extent % (Unit * Most) == 0) ? Most
                                 : (Most > 1 ? warp_tiles<Extent, Unit, (Most > 1 ? Most / 2 : 1)>::value : 1);
};
template <int Extent, int Unit> struct warp_tiles<Extent, Unit, 1> { static constexpr int value = 1; };

// Warp tiling of an M x N output: Kind 1 = m16n8k16 (float16 operands), 2 = m8n8k4 (float64 of
// 8-row multiples; of whole 16-row or 16-column blocks: dmma.h's dmma_tiling, see dmma16).
template <int Kind, int M, int N> struct dmma16 { static constexpr bool value = Kind == 2 && dmma_shape<M, N>::value; };
template <int Kind, int M, int N> struct mma_tiling {
    static constexpr int TM = Kind == 1 ? warp_tiles<M, 16, 2>::value : warp_tiles<M, 8, 4>::value;
    static constexpr int TN = Kind == 1 ? warp_tiles<N, 8, 4>::value : warp_tiles<N, 8, 2>::value;
    static constexpr int WM = (Kind == 1 ? 16 : 8) * TM, WN = 8 * TN, per_tile = TM * TN * (Kind == 1 ? 4 : 2);
    static constexpr int tiles = (M / WM) * (N / WN);
};
// Kind 3: warpgroup g owns output tiles g, g + G, ... (G = P / 128 warpgroups) of 64 rows x WN
// columns (block/storage.py picks WN); in each, warp w of the group holds rows 16 w .. 16 w + 15 as
// an m16n8 accumulator per 8 columns - the register layout of wgmma's m64nNk16 accumulators.
template <int M, int N, int P, int WN> struct wg_tiling {
    static constexpr int groups = P / 128, across = N / WN, tiles = (M / 64) * across, per_tile = WN / 2;
    static_assert(P % 128 == 0 && M % 64 == 0 && WN % 16 == 0 && N % WN == 0 && tiles % groups == 0,
                  "whole warpgroup tiles for every warpgroup");
};
#if TW_IS_CUDA
// The thread index read by a volatile asm, which the compiler cannot hoist above the K loop's asm:
// otherwise it computes every slot's element before the loop and holds them all in registers.
TW_FUNC int thread_here() {
    int t;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
    return t;
}
template <int M, int N, int P, int WN> TW_FUNC int wg_element(int slot) {
    typedef wg_tiling<M, N, P, WN> L;
    const int t = thread_here(), lane = t & 31, warp = (t >> 5) & 3, g = lane >> 2, q = lane & 3;
    const int tile = (t >> 7) + (slot / L::per_tile) * L::groups, s = slot % L::per_tile;
    const int m0 = (tile / L::across) * 64, n0 = (tile % L::across) * WN, h = s % 4;
    return (m0 + 16 * warp + g + 8 * (h >> 1)) * N + n0 + 8 * (s / 4) + 2 * q + (h & 1);
}

// A shared-memory matrix descriptor of wgmma: start, leading and stride byte offsets, swizzle mode
// of a strip `bytes` wide (128 -> 1, 64 -> 2, 32 -> 3)
TW_FUNC unsigned long long wg_descriptor(const void* p, int leading, int stride, int bytes) {
    const unsigned long long mode = bytes == 128 ? 1 : bytes == 64 ? 2 : 3;
    return (unsigned long long)((shared_address(p) & 0x3FFFF) >> 4) |
           ((unsigned long long)((leading >> 4) & 0x3FFF) << 16) |
           ((unsigned long long)((stride >> 4) & 0x3FFF) << 32) | (mode << 62);
}

// descriptor d with its start `bytes` (a multiple of 16) further: the start field is the low word's
// bottom 14 bits, and shared memory ends below their 256 KB reach, so the sum never carries out
TW_FUNC unsigned long long wg_moved(unsigned long long d, int bytes) {
    return (d & 0xFFFFFFFF00000000ull) | (unsigned)((unsigned)d + ((unsigned)bytes >> 4));
}

// acc (this thread's slots, wg_element order) += A @ B for swizzled float16 operands. The caller has
// fenced the operands' generic-proxy writes (cp.async, stores) for the async proxy and synced.
// Async: leave this product in flight, waiting only for the previous one (a pipelined K loop's,
// emit/cpp.py: its operands were published by tw::async_wait just before, and its buffers are
// refilled only after the next product's wait and a block sync).
template <int WN, bool Async, typename A, typename B> TW_FUNC void matmul_wgmma(float* acc, const A& a, const B& b) {
    constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
    constexpr int WA = is_swizzled<A>::strip, WB = is_swizzled<B>::strip;
    typedef wg_tiling<M, N, A::threads, WN> L;
    const int group = lane_index() >> 7;
#if defined(TW_HAS_WGMMA)
    if (((shared_address(a.data) | shared_address(b.data)) & 1023) == 0) {  // the swizzle's phase
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        // the operands' descriptors once; each product's moves its start (wg_moved)
        const unsigned long long da0 = wg_descriptor(a.data, 16, 8 * WA * 2, WA * 2);
        const unsigned long long db0 = wg_descriptor(b.data, K * WB * 2, 8 * WB * 2, WB * 2);
        TW_UNROLL
        for (int i = 0; i < L::tiles / L::groups; ++i) {
            const int tile = group + i * L::groups, m0 = (tile / L::across) * 64, n0 = (tile % L::across) * WN;
            TW_UNROLL
            for (int k0 = 0; k0 < K; k0 += 16) {
                // A: K-major, k0 inside a strip moves the start along the (unswizzled) row
                const unsigned long long da = wg_moved(da0, ((k0 / WA) * M * WA + m0 * WA + k0 % WA) * 2);
                // B: N-major, strips of WB columns K * WB elements apart
                const unsigned long long db = wg_moved(db0, ((n0 / WB) * K * WB + k0 * WB) * 2);
                wgmma<typename A::value_type, WN>::run(acc + i * L::per_tile, da, db);
            }
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        if (Async) asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        else asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        return;
    }
#endif
    // mma.m16n8k16 into the same registers: ldmatrix rows found through the swizzled layout
    const int lane = lane_index() & 31, warp = (lane_index() >> 5) & 3;
    for (int i = 0; i < L::tiles / L::groups; ++i) {
        const int tile = group + i * L::groups, m0 = (tile / L::across) * 64 + 16 * warp, n0 = (tile % L::across) * WN;
        for (int k0 = 0; k0 < K; k0 += 16) {
            unsigned fa[4];
            const unsigned pa = shared_address(a.data + A::place::offset((m0 + (lane & 15)) * K + k0 + (lane >> 4) * 8));
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(fa[0]), "=r"(fa[1]), "=r"(fa[2]), "=r"(fa[3]) : "r"(pa));
            for (int j = 0; j < WN / 8; ++j) {
                unsigned fb[2];
                const unsigned pb = shared_address(b.data + B::place::offset((k0 + (lane & 15)) * N + n0 + 8 * j));
                asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                             : "=r"(fb[0]), "=r"(fb[1]) : "r"(pb));
                mma_m16n8k16<typename A::value_type>(acc + i * L::per_tile + 4 * j, fa, fb);
            }
        }
    }
}
#endif

// Kind 4, float32 without tensor cores: thread t owns RM x 8 outputs (RM = 4 or 8) in registers:
// rows mt, mt + GM, ... and columns 4 nt .. 4 nt + 3, N/2 + 4 nt .. N/2 + 4 nt + 3 (mt = t / GN,
// nt = t % GN). A warp's lanes then read B as consecutive 16-byte pieces and A at a few rows (near
// broadcasts), 4 k at a time: 2 (RM + 8) shared reads feed 4 RM 8 multiply-adds.
template <int M, int N, int P> struct simt_tiling {
    static constexpr int held = M * N / P, RM = held / 8, GM = M / RM, GN = N / 8;
    static_assert(M * N % P == 0 && (RM == 4 || RM == 8) && M % RM == 0 && N % 8 == 0 && GM * GN == P,
                  "RM x 8 outputs for every thread");
};
#if TW_IS_CUDA
template <int M, int N, int P> TW_FUNC int simt_element(int slot) {
    typedef simt_tiling<M, N, P> L;
    const int t = thread_here(), mt = t / L::GN, nt = t % L::GN, j = slot % 8;
    return (mt + (slot / 8) * L::GM) * N + (j < 4 ? 0 : N / 2) + 4 * nt + (j & 3);
}
// acc (this thread's slots, simt_element order) += A @ B, row-major float32 shared operands
template <typename A, typename B> TW_FUNC void matmul_simt(float* acc, const A& a, const B& b) {
    constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
    typedef simt_tiling<M, N, A::threads> L;
    const int t = lane_index(), mt = t / L::GN, nt = t % L::GN;
    const float* arow = a.data + mt * K;
    const float* bcol = b.data + 4 * nt;
#pragma unroll 8  // (K 32: all of it; H100 128 x 128 x 32 on 256 threads, 4096^3: 42.0 -> 45.8 TFLOP/s)
    for (int k0 = 0; k0 < K; k0 += 4) {
        float4 av[L::RM];
        TW_UNROLL
        for (int i = 0; i < L::RM; ++i) av[i] = *(const float4*)(arow + i * L::GM * K + k0);
        TW_UNROLL
        for (int kk = 0; kk < 4; ++kk) {
            const float4 b0 = *(const float4*)(bcol + (k0 + kk) * N), b1 = *(const float4*)(bcol + (k0 + kk) * N + N / 2);
            const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
            TW_UNROLL
            for (int i = 0; i < L::RM; ++i) {
                const float x = kk == 0 ? av[i].x : kk == 1 ? av[i].y : kk == 2 ? av[i].z : av[i].w;
                TW_UNROLL
                for (int j = 0; j < 8; ++j) acc[i * 8 + j] = fmaf(x, bv[j], acc[i * 8 + j]);
            }
        }
    }
}
#endif

#if TW_IS_CUDA
// The output element a thread's accumulator `slot` holds (slots numbered as matmul_hmma/dmma do).
template <int Kind, int M, int N, int P> TW_FUNC int mma_element(int slot) {
    if constexpr (dmma16<Kind, M, N>::value) return dmma_element<M, N, P>(slot);
    typedef mma_tiling<Kind, M, N> L;
    const int lane = lane_index() & 31, g = lane >> 2, t = lane & 3;
    const int w = (lane_index() >> 5) + (slot / L::per_tile) * (P / 32), s = slot % L::per_tile;
    const int m0 = (w / (N / L::WN)) * L::WM, n0 = (w % (N / L::WN)) * L::WN;
    if (Kind == 1) {
        const int i = s / (L::TN * 4), j = (s / 4) % L::TN, h = s % 4;
        return (m0 + 16 * i + g + 8 * (h >> 1)) * N + n0 + 8 * j + 2 * t + (h & 1);
    }
    const int i = s / (L::TN * 2), j = (s / 2) % L::TN, h = s % 2;
    return (m0 + 8 * i + g) * N + n0 + 8 * j + 2 * t + h;
}
#endif
}  // namespace detail

// A register tile in the layout of tensor-core accumulators (block/storage.py picks it for a
// tile_matmul output that only accumulates, is copied around its K loop and stored): the sums stay
// in registers between calls. Slot r of a thread holds element element(r); on the CPU (one thread
// per block) slot r is element r, as in rtile.
template <typename T, typename S, int P, int Kind, int WN = 0> struct mtile {
    typedef T value_type;
    typedef S shape;
    static constexpr int size = S::size, threads = P;
    static constexpr bool shared = false;
    T data[TW_TILE_REGS(S::size, P)];
    TW_FUNC T& at(int r, int) { return data[r]; }
    TW_FUNC const T& at(int r, int) const { return data[r]; }
    static constexpr int kind = Kind, columns = WN;
    // slots r .. r + run - 1 (r a multiple of run) hold neighbours in a row: pairs in the mma
    // accumulator layouts, quads in kind 4's (simt_element)
    static constexpr int run = TW_IS_CUDA ? (Kind == 4 ? 4 : 2) : 1;
#if TW_IS_CUDA
    static_assert(Kind >= 3 ||
                      (detail::dmma16<Kind, S::extent(0), S::extent(1)>::value
                           ? detail::dmma_tiling<S::extent(0), S::extent(1), P>::tiles % (P / 32) == 0
                           : detail::mma_tiling<Kind, S::extent(0), S::extent(1)>::tiles % (P / 32) == 0),
                  "every warp owns as many warp tiles");
    TW_FUNC static int element(int r) {
        if constexpr (Kind == 3) return detail::wg_element<S::extent(0), S::extent(1), P, WN>(r);
        else if constexpr (Kind == 4) return detail::simt_element<S::extent(0), S::extent(1), P>(r);
        else return detail::mma_element<Kind, S::extent(0), S::extent(1), P>(r);
    }
#else
    TW_FUNC static int element(int r) { return r; }
#endif
};
namespace detail {
template <typename T, typename S, int P, int K, int W> struct is_tile<mtile<T, S, P, K, W>> { static constexpr bool value = true; };
template <typename X> struct is_mtile { static constexpr bool value = false; };
template <typename T, typename S, int P, int K, int W> struct is_mtile<mtile<T, S, P, K, W>> { static constexpr bool value = true; };
template <typename X> struct mtile_kind { static constexpr int value = 0; };
template <typename T, typename S, int P, int K, int W> struct mtile_kind<mtile<T, S, P, K, W>> { static constexpr int value = K; };

#if TW_IS_CUDA
// Without tensor cores (float32, or shapes the mma tiles do not divide): each thread computes RM x RN
// outputs from registers through the whole K loop, 2 (RM + RN) shared reads per RM RN multiply-adds
// instead of two per multiply-add. A thread's rows are GM apart and its columns GN apart, so a
// warp's reads of B and writes of the output fall on consecutive words (no bank conflicts) and its
// reads of A are broadcasts.
template <int RM, int RN, typename D, typename A, typename B, typename C, typename S>
TW_FUNC void matmul_blocked(D& out, const A& a, const B& b, const C& c, S alpha, S beta) {
    constexpr int M = A::shape::extent(0), K = A::shape::extent(1), N = B::shape::extent(1);
    constexpr int GM = M / RM, GN = N / RN;
    typedef typename D::value_type T;
    typedef typename matmul_acc_of<T>::type Acc;
    for (int t = lane_index(); t < GM * GN; t += A::threads) {
        const int mt = t / GN, nt = t % GN;
        Acc acc[RM][RN];
        TW_UNROLL
        for (int i = 0; i < RM; ++i)
            TW_UNROLL
            for (int j = 0; j < RN; ++j) acc[i][j] = Acc(0);
#pragma unroll 4
        for (int k = 0; k < K; ++k) {
            Acc av[RM], bv[RN];
            TW_UNROLL
            for (int i = 0; i < RM; ++i) av[i] = cast<Acc>(a.data[(mt + i * GM) * K + k]);
            TW_UNROLL
            for (int j = 0; j < RN; ++j) bv[j] = cast<Acc>(b.data[k * N + nt + j * GN]);
            TW_UNROLL
            for (int i = 0; i < RM; ++i)
                TW_UNROLL
                for (int j = 0; j < RN; ++j) acc[i][j] = av[i] * bv[j] + acc[i][j];
        }
        TW_UNROLL
        for (int i = 0; i < RM; ++i)
            TW_UNROLL
            for (int j = 0; j < RN; ++j) {
                const int e = (mt + i * GM) * N + nt + j * GN;
                Acc v = cast<Acc>(alpha) * acc[i][j];
                if (beta != S(0)) v = v + cast<Acc>(beta) * cast<Acc>(c.at(e, e));
                out.at(e, e) = cast<T>(v);
            }
    }
}
#endif

// true where a tensor-core path did the product
template <bool Async, typename D, typename A, typename B, typename C, typename S>
TW_FUNC bool tile_matmul_mma(D& out, const A& a, const B& b, const C& c, S alpha, S beta) {
#if TW_IS_CUDA
    typedef mma_operands<D, A, B, C> op;
    constexpr int kind = op::f16 ? 1 : op::f64 ? 2 : 0;
    typedef typename D::value_type T;
    typedef typename pick<same_tile<T, double>::value, double, float>::type Acc;
    if constexpr (mtile_kind<D>::value == 3) {  // warpgroup tiles, float32 sums in registers
        static_assert(same_tile<D, C>::value && is_swizzled<A>::value && is_swizzled<B>::value, "wgmma operands");
        constexpr int R = TW_TILE_REGS(D::size, D::threads);
        float acc[R];
        TW_UNROLL
        for (int s = 0; s < R; ++s) acc[s] = alpha == S(1) && beta != S(0) ? (float)beta * c.data[s] : 0.0f;
        if (!Async) {  // (an asynchronous product's operands were just published by tw::async_wait)
#if defined(TW_HAS_WGMMA)
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // operands seen by wgmma
#endif
            block_sync();
        }
        matmul_wgmma<D::columns, Async>(acc, a, b);
        TW_UNROLL
        for (int s = 0; s < R; ++s)  // beta 0: out's old values are never read (they may be NaN)
            out.data[s] = alpha == S(1) ? acc[s] : beta == S(0) ? (float)alpha * acc[s] : (float)alpha * acc[s] + (float)beta * c.data[s];
        if (!Async) block_sync();  // the operands may be rewritten next
        return true;
    } else if constexpr (mtile_kind<D>::value == 4) {  // float32 sums of RM x 8 outputs a thread
        static_assert(same_tile<D, C>::value && is_rowmajor_shared<A>::value && is_rowmajor_shared<B>::value,
                      "float32 register accumulators take row-major shared operands");
        constexpr int R = TW_TILE_REGS(D::size, D::threads);
        float acc[R];
        TW_UNROLL
        for (int s = 0; s < R; ++s) acc[s] = alpha == S(1) && beta != S(0) ? (float)beta * c.data[s] : 0.0f;
        if (!Async) block_sync();  // (Async: tw::async_wait just published the operands)
        matmul_simt(acc, a, b);
        TW_UNROLL
        for (int s = 0; s < R; ++s)
            out.data[s] = alpha == S(1) ? acc[s] : beta == S(0) ? (float)alpha * acc[s] : (float)alpha * acc[s] + (float)beta * c.data[s];
        if (!Async) block_sync();  // (Async: their buffers' refill syncs first)
        return true;
    } else if constexpr (is_mtile<D>::value) {  // the sums stay in registers
        static_assert(same_tile<D, C>::value &&
                          (same_tile<T, double>::value ? op::dmma
                                                       : is_rowmajor_shared<A>::value && is_rowmajor_shared<B>::value && op::f16_types),
                      "a register accumulator takes tensor-core products of shared tiles");
        typedef mma_tiling<(same_tile<T, double>::value ? 2 : 1), op::M, op::N> L;
        if (!Async) block_sync();  // the operands were just written
        auto init = [&](int s) { return alpha == S(1) && beta != S(0) ? (Acc)beta * (Acc)c.data[s] : Acc(0); };
        auto done = [&](int s, Acc v) {
            out.data[s] = cast<T>(alpha == S(1) ? v : beta == S(0) ? (Acc)alpha * v : (Acc)alpha * v + (Acc)beta * (Acc)c.data[s]);
        };
        if constexpr (dmma16<D::kind, op::M, op::N>::value) matmul_dmma16(a, b, init, done);
        else if constexpr (same_tile<T, double>::value) matmul_dmma<L::TM, L::TN>(a, b, init, done);
        else matmul_hmma<L::TM, L::TN>(a, b, init, done);
        if (!Async) block_sync();  // the operands may be rewritten next
        return true;
    } else if constexpr (kind == 0 && op::layout) {
        block_sync();
        matmul_blocked<(op::M % 4 == 0 ? 4 : 1), (op::N % 4 == 0 ? 4 : 1)>(out, a, b, c, alpha, beta);
        block_sync();
        return true;
    } else if constexpr (kind != 0) {
        typedef mma_tiling<kind, op::M, op::N> L;
        block_sync();
        auto init = [&](int) { return Acc(0); };
        auto done = [&](int s, Acc v) {
            const int e = mma_element<kind, op::M, op::N, A::threads>(s);
            Acc r = (Acc)alpha * v;
            if (beta != S(0)) r += (Acc)beta * (Acc)c.at(e, e);
            out.at(e, e) = cast<T>(r);
        };
        if constexpr (dmma16<kind, op::M, op::N>::value) matmul_dmma16(a, b, init, done);
        else if constexpr (kind == 2) matmul_dmma<L::TM, L::TN>(a, b, init, done);
        else matmul_hmma<L::TM, L::TN>(a, b, init, done);
        block_sync();
        return true;
    }
#endif
    (void)out; (void)a; (void)b; (void)c; (void)alpha; (void)beta;
    return false;
}
}  // namespace detail

// After a K loop of asynchronous wgmma products: the last one's sums are in the registers.
TW_FUNC void mma_drain() {
#if defined(TW_HAS_WGMMA)
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
}
}  // namespace tw
