// Tile FFT: the unnormalised DFT along a tile's last dimension, in place, each row (every index of
// the leading dimensions) its own transform. Elements are vec2 (real, imaginary).
//
// Power-of-two lengths: iterative radix-2 (a bit-reversal permutation, then log2(N) butterfly
// stages; the block's lanes share each stage's butterflies over all rows). Other lengths: the
// direct O(N^2) sum, one row at a time, each lane holding its outputs until all have read the row.
// Twiddles come from sincospi (CUDA) or double-precision sin/cos (CPU): each one accurate to the
// element type's precision, none accumulated by recurrence.
#pragma once
#include "tile.h"
#if !TW_IS_CUDA
#include <cmath>
#endif

namespace tw {
namespace fft {
// exp(sign * 2 pi i k / n) as (cos, sin) in R
template <typename R> TW_FUNC void twiddle(int k, int n, bool inverse, R& c, R& s) {
#if TW_IS_CUDA
    if constexpr (sizeof(R) == 4) sincospif(2.0f * (float)k / (float)n, &s, &c);
    else sincospi(2.0 * (double)k / (double)n, &s, &c);
#else
    const double a = 6.283185307179586476925286766559 * (double)k / (double)n;
    c = (R)std::cos(a);
    s = (R)std::sin(a);
#endif
    if (!inverse) s = -s;
}
template <typename V, typename R> TW_FUNC V mul(const V& a, R c, R s) {
    V out;
    out[0] = a[0] * c - a[1] * s;
    out[1] = a[0] * s + a[1] * c;
    return out;
}
TW_FUNC constexpr int log2_of(int n) { return n <= 1 ? 0 : 1 + log2_of(n / 2); }
TW_FUNC int reverse_bits(int i, int bits) {
    int r = 0;
    for (int b = 0; b < bits; ++b, i >>= 1) r = (r << 1) | (i & 1);
    return r;
}
}  // namespace fft

template <bool Inverse, typename X> TW_FUNC void tile_fft_run(X& t) {
    typedef typename X::value_type V;
    typedef decay_t<decltype(V()[0])> R;
    typedef typename X::shape S;
    constexpr int n = S::extent(S::ndim - 1), rows = X::size / n, P = X::threads;
    block_sync();
    if constexpr ((n & (n - 1)) == 0) {
        constexpr int bits = fft::log2_of(n);
        for (int w = lane_index(); w < rows * n; w += P) {
            const int base = (w / n) * n, i = w % n, j = fft::reverse_bits(i, bits);
            if (i < j) {
                const V x = t.at(base + i, base + i);
                t.at(base + i, base + i) = t.at(base + j, base + j);
                t.at(base + j, base + j) = x;
            }
        }
        block_sync();
        for (int half = 1; half < n; half *= 2) {
            for (int w = lane_index(); w < rows * (n / 2); w += P) {
                const int row = w / (n / 2), b = w % (n / 2), k = b % half;
                const int i0 = row * n + (b / half) * 2 * half + k, i1 = i0 + half;
                R c, s;
                fft::twiddle(k, 2 * half, Inverse, c, s);
                const V u = t.at(i0, i0), v = fft::mul(t.at(i1, i1), c, s);
                V sum, diff;
                sum[0] = u[0] + v[0], sum[1] = u[1] + v[1];
                diff[0] = u[0] - v[0], diff[1] = u[1] - v[1];
                t.at(i0, i0) = sum;
                t.at(i1, i1) = diff;
            }
            block_sync();
        }
    } else {
        constexpr int held = (n + P - 1) / P;
        for (int row = 0; row < rows; ++row) {
            V out[held];
            for (int q = 0; q < held; ++q) {
                const int k = lane_index() + q * P;
                if (k >= n) break;
                V acc;
                for (int m = 0; m < n; ++m) {
                    R c, s;
                    fft::twiddle((int)(((long long)k * m) % n), n, Inverse, c, s);
                    const V p = fft::mul(t.at(row * n + m, row * n + m), c, s);
                    acc[0] += p[0], acc[1] += p[1];
                }
                out[q] = acc;
            }
            block_sync();
            for (int q = 0; q < held; ++q) {
                const int k = lane_index() + q * P;
                if (k < n) t.at(row * n + k, row * n + k) = out[q];
            }
            block_sync();
        }
    }
}
template <typename X> TW_FUNC void tile_fft(X& t) { tile_fft_run<false>(t); }
template <typename X> TW_FUNC void tile_ifft(X& t) { tile_fft_run<true>(t); }
// The DFT matrix's adjoint is its conjugate: the unnormalised inverse, on the adjoint in place.
template <typename X, typename G> TW_FUNC void adj_tile_fft(const X&, G& g) { tile_fft_run<true>(g); }
template <typename X, typename G> TW_FUNC void adj_tile_ifft(const X&, G& g) { tile_fft_run<false>(g); }
}  // namespace tw
