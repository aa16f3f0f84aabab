// tile_matmul and its adjoint on the CPU: a register-blocked GEMM.
//
// Every tile of a CPU block is whole in one thread, so a product is one small dense GEMM. The
// portable loop (shape.h) walks B down its columns one scalar at a time; here a micro-kernel keeps
// an MR x NR block of sums in vector registers through the whole K loop: per k, NR / W vector loads
// of a row of B, MR broadcasts of A and MR NR / W fused multiply-adds (the structure of BLIS's
// kernels, Goto and van de Geijn). Operands already in the sums' dtype at fixed strides are read in
// place (A by broadcasts from any strides, B by vector loads from its rows: packing them cost a
// third of a 64 x 64 x 32 product); others are packed first, k-major and converted, zero-padded to
// whole strips of MR rows and panels of NR columns (so is a last partial panel of B). Each output
// element is summed over k in order, as the portable loop sums it, one rounding per fused
// multiply-add. Outputs are written as their sums complete, so the caller copies an operand whose
// memory the output shares first (host_overlaps).
#pragma once
#include "tile.h"
#if !TW_IS_CUDA
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace tw {
namespace detail {
// vector registers as the compiler's generic vectors (GCC and Clang), as wide as the target has
#if defined(__AVX512F__)
#define TW_HOST_VEC_BYTES 64
#elif defined(__AVX__)
#define TW_HOST_VEC_BYTES 32
#else
#define TW_HOST_VEC_BYTES 16
#endif
typedef float host_vf __attribute__((vector_size(TW_HOST_VEC_BYTES)));
typedef double host_vd __attribute__((vector_size(TW_HOST_VEC_BYTES)));
template <typename T> struct host_vec { static constexpr bool ok = false; };
template <> struct host_vec<float> { static constexpr bool ok = true; typedef host_vf type; };
template <> struct host_vec<double> { static constexpr bool ok = true; typedef host_vd type; };

// The micro-kernel's c + a b rounds once where the target fuses: this code compiles without
// -ffp-contract, so the function asks for contraction itself (GCC's optimize attribute, Clang's
// pragma) rather than spelling FMA intrinsics, whose <immintrin.h> doubled the precompiled header's
// build and so every cold first compile.
#if defined(__clang__)
#define TW_CONTRACT_FN
#define TW_CONTRACT_BODY _Pragma("clang fp contract(fast)")
#elif defined(__GNUC__)
#define TW_CONTRACT_FN __attribute__((optimize("fp-contract=fast")))
#define TW_CONTRACT_BODY
#else
#define TW_CONTRACT_FN
#define TW_CONTRACT_BODY
#endif

// Scratch for the packed operands: one growing buffer per thread (a tile's operands can exceed
// what a worker's stack should hold).
struct host_scratch {
    void* p = nullptr;
    size_t bytes = 0;
    ~host_scratch() { std::free(p); }
    void* get(size_t n) {
        if (n > bytes) {
            std::free(p);
            bytes = (n + 4095) / 4096 * 4096;
            p = std::aligned_alloc(64, bytes);
        }
        return p;
    }
};
inline void* host_scratch_bytes(size_t n) {
    static thread_local host_scratch s;
    return s.get(n);
}

// element (i, j) of a 2-d tile (on the CPU a tile's slot r is its element r); a view's strides
// directly, not through its element number
template <typename X> inline auto& host_at(X& x, int i, int j) {
    typedef decay_t<X> Tile;
    constexpr int C = Tile::shape::extent(1);
    if constexpr (Tile::shared && !is_swizzled<Tile>::value)
        return x.data[i * Tile::place::stride(0) + j * Tile::place::stride(1)];
    else
        return x.at(i * C + j, i * C + j);
}

// whether two tiles' elements share bytes (a result planned into an operand's memory)
template <typename X, typename Y> inline bool host_overlaps(const X& x, const Y& y) {
    auto range = [](const auto& t, const char*& lo, const char*& hi) {
        typedef decay_t<decltype(t)> Tile;
        constexpr int R = Tile::shape::extent(0), C = Tile::shape::extent(1);
        lo = (const char*)&host_at(t, 0, 0);
        hi = (const char*)(&host_at(t, R - 1, C - 1) + 1);
        if (hi < lo) { const char* s = lo; lo = hi; hi = s; }  // (views with negative strides)
    };
    const char *xl, *xh, *yl, *yh;
    range(x, xl, xh);
    range(y, yl, yh);
    return xl < yh && yl < xh;
}

// An operand of a product as a matrix: the tile, or its transpose (Trans). Where its elements are
// the sums' dtype at fixed strides (`direct`), the micro-kernel reads them in place; otherwise
// they are packed (converted) first.
template <typename X, bool Trans, typename Acc> struct host_operand {
    typedef decay_t<X> Tile;
    typedef typename Tile::value_type T;
    static constexpr int R = Tile::shape::extent(0), C = Tile::shape::extent(1);
    static constexpr bool strided = !Tile::shared || !is_swizzled<Tile>::value;
    static constexpr int stride(int k) {
        if constexpr (Tile::shared && !is_swizzled<Tile>::value) return Tile::place::stride(k);
        else return k == 0 ? C : 1;
    }
    static constexpr int rs = Trans ? stride(1) : stride(0), cs = Trans ? stride(0) : stride(1);
    static constexpr bool direct = strided && same_tile<T, Acc>::value;
    const X& x;
    const T* data() const { return &x.at(0, 0); }
    Acc get(int i, int j) const { return cast<Acc>(Trans ? host_at(x, j, i) : host_at(x, i, j)); }
};
template <bool Trans, typename Acc, typename X> inline host_operand<X, Trans, Acc> host_operand_of(const X& x) { return {x}; }

// sums (MR x NV vectors) = A rows (element (i, k) at a[i ars + k acs]) @ B rows (row k's NV vectors
// from b + k bks)
template <typename V, typename Acc, int MR, int NV>
TW_CONTRACT_FN void host_micro(int K, const Acc* __restrict a, int ars, int acs, const Acc* __restrict b, int bks,
                               V (&acc)[MR][NV]) {
    TW_CONTRACT_BODY
    constexpr int W = sizeof(V) / sizeof(Acc);
    V sum[MR][NV];  // (local: sums through acc would be stored every step, acc may alias)
    for (int i = 0; i < MR; ++i)
        for (int v = 0; v < NV; ++v) sum[i][v] = V{};
    for (int k = 0; k < K; ++k) {
        V bv[NV];
        for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], b + k * bks + v * W, sizeof(V));
        for (int i = 0; i < MR; ++i) {
            const V av = a[i * ars + k * acs] - V{};  // a broadcast: x - 0 is x exactly (-0, NaN too), so it folds
            for (int v = 0; v < NV; ++v) sum[i][v] = av * bv[v] + sum[i][v];
        }
    }
    for (int i = 0; i < MR; ++i)
        for (int v = 0; v < NV; ++v) acc[i][v] = sum[i][v];
}

// put(i, j0, sums, n): row i's sums of columns j0 .. j0 + n - 1, for the M x K by K x N product of
// operands A and B (host_operand), summed in Acc (float or double) over k in order
template <int M, int N, int K, typename Acc, typename OA, typename OB, typename Put>
inline void host_gemm(const OA& oa, const OB& ob, const Put& put) {
    typedef typename host_vec<Acc>::type V;
    constexpr int W = sizeof(V) / sizeof(Acc);
    constexpr int NV = N > W ? 2 : 1, NR = NV * W;
    // MR NV sums + NV rows of B + a broadcast of A in x86's 16 vector registers (6 measured
    // fastest on AVX2, 60-68 GFLOP/s a core: 4 and 8 rows 42-51, 8 spilling)
    constexpr int MR = M < 6 ? M : 6;
    constexpr int MB = (M + MR - 1) / MR, NB = (N + NR - 1) / NR;
    constexpr bool a_direct = OA::direct, b_direct = OB::direct && OB::cs == 1;
    constexpr int NP = b_direct ? (N % NR ? 1 : 0) : NB;  // panels packed: all, the partial last one, none
    constexpr size_t packed = (a_direct ? 0 : K * MB * MR) + K * NP * NR;
    Acc* const ap = packed ? static_cast<Acc*>(host_scratch_bytes(sizeof(Acc) * packed)) : nullptr;
    Acc* const bp = a_direct ? ap : ap + K * MB * MR;
    if constexpr (!a_direct)
        for (int s = 0; s < MB; ++s)
            for (int k = 0; k < K; ++k)
                for (int i = 0; i < MR; ++i) {
                    const int row = s * MR + i;
                    ap[(s * K + k) * MR + i] = row < M ? oa.get(row, k) : Acc(0);
                }
    for (int p = NB - NP; p < NB; ++p)
        for (int k = 0; k < K; ++k)
            for (int j = 0; j < NR; ++j) {
                const int col = p * NR + j;
                bp[((p - (NB - NP)) * K + k) * NR + j] = col < N ? ob.get(k, col) : Acc(0);
            }
    for (int p = 0; p < NB; ++p) {
        const bool packed_b = p >= NB - NP;
        const Acc* const b = packed_b ? bp + (p - (NB - NP)) * K * NR : (const Acc*)ob.data() + p * NR;
        const int bks = packed_b ? NR : OB::rs;
        const int cols = N - p * NR < NR ? N - p * NR : NR;
        auto strip = [&](auto rows, int s) {  // rows: the strip's, a compile-time constant
            constexpr int R = decltype(rows)::value;
            V acc[R][NV];
            if constexpr (a_direct)
                host_micro<V, Acc, R, NV>(K, (const Acc*)oa.data() + s * MR * OA::rs, OA::rs, OA::cs, b, bks, acc);
            else
                host_micro<V, Acc, R, NV>(K, ap + s * K * MR, 1, MR, b, bks, acc);
            alignas(64) Acc sums[R][NR];
            std::memcpy(sums, acc, sizeof(sums));
            for (int i = 0; i < R; ++i) put(s * MR + i, p * NR, sums[i], cols);
        };
        for (int s = 0; s < M / MR; ++s) strip(std::integral_constant<int, MR>(), s);
        if constexpr (M % MR != 0) strip(std::integral_constant<int, M % MR>(), M / MR);
    }
}
}  // namespace detail
}  // namespace tw
#endif
