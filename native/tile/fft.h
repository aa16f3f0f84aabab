// Tile FFT: the unnormalised DFT along a tile's last dimension, in place, each row (every index of
// the leading dimensions) its own transform. Elements are vec2 (real, imaginary).
//
// Lengths that factor into 2, 3, 4, 5, 7 and 8: Stockham stages (radix 8 first, then 4, 2, ...),
// each lane transforming R points in registers per butterfly, one barrier pair per stage, no
// bit-reversal pass; as many rows at a time as the lanes' registers hold. Longer power-of-two rows:
// in-place radix 2 (a bit-reversal permutation, then log2(N) stages). Other lengths: the direct
// O(N^2) sum, one row at a time, each lane holding its outputs until all have read the row.
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
// The twiddles of one stage, asked for k = 0, 1, 2, ... in turn on the CPU (its one lane walks
// the butterflies in order): there each is the last one rotated by a step, in double, or the same
// again, and worked out afresh at every 64th and at each wrap to 0, so a row costs few sin/cos (they were most of a
// CPU FFT's time). CUDA lanes jump by the lane count between butterflies: each is worked out
// directly (sincospi).
template <typename R> struct twiddles {
    int n;
    bool inverse;
#if !TW_IS_CUDA
    int last = -2;
    double c = 1, s = 0, step_c = 1, step_s = 0;
#endif
    TW_FUNC twiddles(int n_, bool inverse_) : n(n_), inverse(inverse_) {
#if !TW_IS_CUDA
        twiddle(1, n, inverse, step_c, step_s);
#endif
    }
    TW_FUNC void at(int k, R& out_c, R& out_s) {
#if !TW_IS_CUDA
        if (k == last + 1 && (k & 63) != 0) {
            const double nc = c * step_c - s * step_s;
            s = c * step_s + s * step_c, c = nc;
        } else if (k != last) {  // (a first stage's k is always 0)
            twiddle(k, n, inverse, c, s);
        }
        last = k;
        out_c = (R)c, out_s = (R)s;
#else
        twiddle(k, n, inverse, out_c, out_s);
#endif
    }
};
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
// the radix of the next Stockham stage while m points per transform are still to be combined
TW_FUNC constexpr int radix_of(int m) {
    return m % 8 == 0 ? 8 : m % 4 == 0 ? 4 : m % 2 == 0 ? 2 : m % 3 == 0 ? 3 : m % 5 == 0 ? 5 : m % 7 == 0 ? 7 : m;
}
// whether m factors into radices of at most 8 (each stage's points then fit a thread's registers)
TW_FUNC constexpr bool small_factors(int m) { return m == 1 || (radix_of(m) <= 8 && small_factors(m / radix_of(m))); }
TW_FUNC constexpr int largest_divisor_at_most(int n, int most) {
    return most >= n ? n : (most <= 1 ? 1 : (n % most == 0 ? most : largest_divisor_at_most(n, most - 1)));
}
template <typename V> TW_FUNC V cadd(const V& a, const V& b) {
    V o;
    o[0] = a[0] + b[0], o[1] = a[1] + b[1];
    return o;
}
template <typename V> TW_FUNC V csub(const V& a, const V& b) {
    V o;
    o[0] = a[0] - b[0], o[1] = a[1] - b[1];
    return o;
}
template <bool Inverse, typename V> TW_FUNC V rot90(const V& a) {  // a * (-i), or a * i for the inverse
    V o;
    o[0] = Inverse ? -a[1] : a[1], o[1] = Inverse ? a[0] : -a[0];
    return o;
}
// An R-point DFT in registers, outputs in natural order: radices 2, 4, 8 by hand, 3, 5, 7 directly.
template <bool Inverse, int R, typename V> TW_FUNC void dft(V (&v)[R]) {
    typedef decay_t<decltype(V()[0])> Real;
    if constexpr (R == 2) {
        const V a = v[0];
        v[0] = cadd(a, v[1]), v[1] = csub(a, v[1]);
    } else if constexpr (R == 4) {
        const V t0 = cadd(v[0], v[2]), t1 = csub(v[0], v[2]), t2 = cadd(v[1], v[3]), t3 = rot90<Inverse>(csub(v[1], v[3]));
        v[0] = cadd(t0, t2), v[2] = csub(t0, t2), v[1] = cadd(t1, t3), v[3] = csub(t1, t3);
    } else if constexpr (R == 8) {
        V e[4] = {v[0], v[2], v[4], v[6]}, o[4] = {v[1], v[3], v[5], v[7]};
        dft<Inverse>(e);
        dft<Inverse>(o);
        const Real h = (Real)0.70710678118654752440;
        o[1] = mul(o[1], h, Inverse ? h : -h);
        o[2] = rot90<Inverse>(o[2]);
        o[3] = mul(o[3], -h, Inverse ? h : -h);
        for (int k = 0; k < 4; ++k) v[k] = cadd(e[k], o[k]), v[k + 4] = csub(e[k], o[k]);
    } else {
        Real c[R], s[R];
        for (int k = 0; k < R; ++k) twiddle(k, R, Inverse, c[k], s[k]);
        V out[R];
        for (int r = 0; r < R; ++r) {
            V acc = v[0];
            for (int m = 1; m < R; ++m) acc = cadd(acc, mul(v[m], c[(r * m) % R], s[(r * m) % R]));
            out[r] = acc;
        }
        for (int r = 0; r < R; ++r) v[r] = out[r];
    }
}
}  // namespace fft

// One Stockham stage over G rows from row0 (transforms of N points, Ns already combined): each
// butterfly reads R points N/R apart, twists them, transforms them in registers and writes them
// Ns apart into sorted position. Every lane reads all of its points before any lane writes, so the
// stage runs in place.
template <bool Inverse, int R, int N, int G, typename X> TW_FUNC void fft_stage(X& t, int row0, int ns) {
    typedef typename X::value_type V;
    typedef decay_t<decltype(V()[0])> Real;
    constexpr int P = X::threads, J = G * (N / R), Q = (J + P - 1) / P;
    V v[Q][R];
    fft::twiddles<Real> tw(ns * R, Inverse);
    for (int q = 0; q < Q; ++q) {
        const int w = lane_index() + q * P;
        if (J % P != 0 && w >= J) break;
        const int base = (row0 + w / (N / R)) * N, j = w % (N / R), k = j % ns;
        Real c, s;
        tw.at(k, c, s);
        Real wc = 1, ws = 0;
        for (int r = 0; r < R; ++r) {
            v[q][r] = fft::mul(t.at(base + j + r * (N / R), base + j + r * (N / R)), wc, ws);
            const Real nc = wc * c - ws * s;
            ws = wc * s + ws * c, wc = nc;
        }
    }
    block_sync();
    for (int q = 0; q < Q; ++q) {
        const int w = lane_index() + q * P;
        if (J % P != 0 && w >= J) break;
        const int base = (row0 + w / (N / R)) * N, j = w % (N / R), k = j % ns, d = (j / ns) * ns * R + k;
        fft::dft<Inverse>(v[q]);
        for (int r = 0; r < R; ++r) t.at(base + d + r * ns, base + d + r * ns) = v[q][r];
    }
    block_sync();
}
template <bool Inverse, int N, int Ns, int G, typename X> TW_FUNC void fft_stages(X& t, int row0) {
    if constexpr (Ns < N) {
        constexpr int R = fft::radix_of(N / Ns);
        fft_stage<Inverse, R, N, G>(t, row0, Ns);
        fft_stages<Inverse, N, Ns * R, G>(t, row0);
    }
}

template <bool Inverse, typename X> TW_FUNC void tile_fft_run(X& t) {
    typedef typename X::value_type V;
    typedef decay_t<decltype(V()[0])> R;
    typedef typename X::shape S;
    constexpr int n = S::extent(S::ndim - 1), rows = X::size / n, P = X::threads;
    // a thread holds a stage's points of G rows at once: 512 bytes of them on CUDA (registers), 64 KB on the CPU
    constexpr int most = (TW_IS_CUDA ? 512 : 65536) / (int)sizeof(V), G = fft::largest_divisor_at_most(rows, most * P / n);
    block_sync();
    if constexpr (fft::small_factors(n) && G * n <= most * P) {
        for (int row0 = 0; row0 < rows; row0 += G) fft_stages<Inverse, n, 1, G>(t, row0);
    } else if constexpr ((n & (n - 1)) == 0) {
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
