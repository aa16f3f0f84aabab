// Scalar functions beyond scalar.h (Warp 1.19): erfinv / erfcinv (erf, erfc and rint are in
// scalar.h), copysign, nonzero, bit_count and div_approx, each followed by its adjoint where it has
// one (docs/AUTODIFF.md).
#pragma once
#include "mat.h"

namespace tw {
namespace special {
constexpr double two_over_sqrt_pi = 1.1283791670955126;
constexpr double sqrt_pi_over_two = 0.88622692545275801;

#if !TW_IS_CUDA
// Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems Jade,
// 2011), written in terms of w = -log((1 - z)(1 + z)) so that callers can form w without 1 - z.
inline double erfinv_guess(double z, double w) {
    double p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w, p = -3.5233877e-06 + p * w, p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w, p = -0.00125372503 + p * w, p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w, p = 1.50140941 + p * w;
    } else {
        w = std::sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w, p = 0.00134934322 + p * w, p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w, p = -0.0076224613 + p * w, p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w, p = 2.83297682 + p * w;
    }
    return p * z;
}
// Halley steps on f(y) = target(y) - value, where f' = sign * 2/sqrt(pi) exp(-y^2) and f'' = -2y f'
// for both erf and erfc. Cubic convergence: two steps take Giles' ~1e-7 to double precision.
template <bool Complement> inline double halley(double y, double value) {
    for (int step = 0; step < 3; ++step) {
        double d = (Complement ? -two_over_sqrt_pi : two_over_sqrt_pi) * std::exp(-y * y);
        if (d == 0.0) break;  // deep in the tail: exp(-y^2) underflowed, y is already as close as it gets
        double u = ((Complement ? std::erfc(y) : std::erf(y)) - value) / d;
        y -= u / (1.0 + y * u);
    }
    return y;
}
// log erfc(y), y > 0, and its derivative; past y = 25 (erfc near underflow) from the asymptotic
// series erfc(y) ~ exp(-y^2) / (y sqrt(pi)) (1 - r + 3r^2 - 15r^3 + 105r^4), r = 1/(2y^2).
inline double log_erfc(double y) {
    if (y < 25.0) return std::log(std::erfc(y));
    double r = 0.5 / (y * y);
    double series = r * (-1.0 + r * (3.0 + r * (-15.0 + r * 105.0)));
    return -y * y - std::log(y * 1.7724538509055160) + std::log1p(series);
}
inline double dlog_erfc(double y) {
    return y < 25.0 ? -two_over_sqrt_pi * std::exp(-y * y) / std::erfc(y) : -2.0 * y - 1.0 / y;
}
// y >= 0 with erfc(y) = x, 0 < x <= 1/2, to the tail's relative accuracy. Giles' guess holds to
// x ~ 1e-7 (single precision's range); below, the asymptote's fixed point lies right of the root,
// from where Newton on the concave log erfc descends monotonically.
inline double erfcinv_tail(double x) {
    double w = -std::log(x * (2.0 - x));
    if (w < 16.0) return halley<true>(erfinv_guess(1.0 - x, w), x);
    double l = -std::log(x), y = std::sqrt(l);
    for (int k = 0; k < 4; ++k) y = std::sqrt(l - std::log(y * 1.7724538509055160));
    for (int k = 0; k < 8; ++k) {
        double step = (log_erfc(y) + l) / dlog_erfc(y);
        y -= step;
        if (std::fabs(step) <= 1e-16 * y) break;
    }
    return y;
}
// |z| <= 1/2: the residual through erf.
inline double erfinv_center(double z) {
    return halley<false>(erfinv_guess(z, -std::log((1.0 - z) * (1.0 + z))), z);
}

inline double erfinv(double z) {
    if (!(z > -1.0 && z < 1.0)) return z == 1.0 ? HUGE_VAL : z == -1.0 ? -HUGE_VAL : NAN;
    if (std::fabs(z) <= 0.5) return erfinv_center(z);
    double y = erfcinv_tail(1.0 - std::fabs(z));  // 1 - |z| is exact here (Sterbenz)
    return z < 0.0 ? -y : y;
}
inline double erfcinv(double x) {
    if (!(x > 0.0 && x < 2.0)) return x == 0.0 ? HUGE_VAL : x == 2.0 ? -HUGE_VAL : NAN;
    if (x <= 0.5) return erfcinv_tail(x);
    if (x >= 1.5) return -erfcinv_tail(2.0 - x);  // exact
    return erfinv_center(1.0 - x);                 // exact
}
#endif
}  // namespace special

// Inverse error functions: CUDA's libdevice, the host's own (correctly rounded in float, to an ulp
// or two in double, tails included); erfinv(+-1) = +-inf, NaN outside the domain.
#if TW_IS_CUDA
TW_FUNC float erfinv(float x) { return ::erfinvf(x); }
TW_FUNC double erfinv(double x) { return ::erfinv(x); }
TW_FUNC float erfcinv(float x) { return ::erfcinvf(x); }
TW_FUNC double erfcinv(double x) { return ::erfcinv(x); }
#else
TW_FUNC float erfinv(float x) { return (float)special::erfinv((double)x); }
TW_FUNC double erfinv(double x) { return special::erfinv(x); }
TW_FUNC float erfcinv(float x) { return (float)special::erfcinv((double)x); }
TW_FUNC double erfcinv(double x) { return special::erfcinv(x); }
#endif
template <TW_IF_F16(T)> TW_FUNC T erfinv(T x) { return T(erfinv((float)x)); }
template <TW_IF_F16(T)> TW_FUNC T erfcinv(T x) { return T(erfcinv((float)x)); }

// The magnitude of x with the sign (bit) of y.
#if TW_IS_CUDA
TW_FUNC float copysign(float x, float y) { return ::copysignf(x, y); }
TW_FUNC double copysign(double x, double y) { return ::copysign(x, y); }
#else
TW_FUNC float copysign(float x, float y) { return __builtin_copysignf(x, y); }
TW_FUNC double copysign(double x, double y) { return __builtin_copysign(x, y); }
#endif
template <TW_IF_F16(T)> TW_FUNC T copysign(T x, T y) {
    return T::from_bits((uint16_t)((x.bits & 0x7fffu) | (y.bits & 0x8000u)));
}

// 1 where x != 0 (NaN included), else 0, in x's type.
template <TW_IF_NUM(T)> TW_FUNC T nonzero(T x) {
    return x == detail::zero<T>() ? detail::zero<T>() : detail::one<T>();
}

// Set bits of x's two's-complement representation (its own width).
template <TW_IF_INT(T)> TW_FUNC int32_t bit_count(T x) {
    if constexpr (sizeof(T) == 8) {
#if TW_IS_CUDA
        return __popcll((unsigned long long)x);
#else
        return __builtin_popcountll((unsigned long long)x);
#endif
    } else {
        // through the unsigned type of T's own width: an int8 -1 has 8 set bits, not 32
        unsigned bits = sizeof(T) == 1 ? (unsigned)(uint8_t)x
                        : sizeof(T) == 2 ? (unsigned)(uint16_t)x : (unsigned)x;
#if TW_IS_CUDA
        return __popc(bits);
#else
        return __builtin_popcount(bits);
#endif
    }
}

// a / b through the GPU's approximate division for float (2 ulp, b up to 2^126); exact elsewhere.
TW_FUNC float div_approx(float a, float b) {
#if TW_IS_CUDA
    return __fdividef(a, b);
#else
    return a / b;
#endif
}
TW_FUNC double div_approx(double a, double b) { return a / b; }
template <TW_IF_F16(T)> TW_FUNC T div_approx(T a, T b) { return T(div_approx((float)a, (float)b)); }
// Componentwise with a scalar on either side (vectors, quaternions, matrices).
template <int N, typename T> TW_FUNC vec_t<N, T> div_approx(const vec_t<N, T>& a, T b) {
    vec_t<N, T> r;
    for (int i = 0; i < N; ++i) r.c[i] = div_approx(a.c[i], b);
    return r;
}
template <int N, typename T> TW_FUNC vec_t<N, T> div_approx(T a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (int i = 0; i < N; ++i) r.c[i] = div_approx(a, b.c[i]);
    return r;
}
template <int R, int C, typename T> TW_FUNC mat_t<R, C, T> div_approx(const mat_t<R, C, T>& a, T b) {
    mat_t<R, C, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.c[i][j] = div_approx(a.c[i][j], b);
    return r;
}
template <int R, int C, typename T> TW_FUNC mat_t<R, C, T> div_approx(T a, const mat_t<R, C, T>& b) {
    mat_t<R, C, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.c[i][j] = div_approx(a, b.c[i][j]);
    return r;
}
}  // namespace tw

// ---------------------------------------------------------------------------------------
// Adjoints. The 16-bit floats compute in float and round once into the accumulator.
namespace tw {
namespace special {
template <typename T> struct wide { typedef T type; };
template <> struct wide<half> { typedef float type; };
template <> struct wide<bfloat16> { typedef float type; };
}  // namespace special

// d erf = 2/sqrt(pi) exp(-x^2); erfinv's is its reciprocal at y = erfinv(x): sqrt(pi)/2 exp(y^2).
#define TW_ADJ_SPECIAL(NAME, EXPR)                                                           \
    template <typename T, detail::enable_if_t<detail::is_float<T>::value, int> = 0>          \
    TW_FUNC void adj_##NAME(T x_, T& adj_x, T adj_ret) {                                     \
        typedef typename special::wide<T>::type W;                                           \
        W x = (W)x_, g = (W)adj_ret;                                                         \
        if (g != W(0)) adj_x += cast<T>(EXPR); /* 0 * inf at the domain's ends: no gradient */ \
    }
TW_ADJ_SPECIAL(erf, g * W(special::two_over_sqrt_pi) * exp(-x * x))
TW_ADJ_SPECIAL(erfc, -g * W(special::two_over_sqrt_pi) * exp(-x * x))
TW_ADJ_SPECIAL(erfinv, g * W(special::sqrt_pi_over_two) * exp(erfinv(x) * erfinv(x)))
TW_ADJ_SPECIAL(erfcinv, -g * W(special::sqrt_pi_over_two) * exp(erfcinv(x) * erfcinv(x)))
#undef TW_ADJ_SPECIAL

// +-1 for x as the signs agree or not (sign bits, so signed zeros count); y gets none.
template <typename T, detail::enable_if_t<detail::is_float<T>::value, int> = 0>
TW_FUNC void adj_copysign(T x, T y, T& adj_x, T&, T adj_ret) {
    bool same = copysign(detail::one<T>(), x) == copysign(detail::one<T>(), y);
    adj_x += same ? adj_ret : -adj_ret;
}

template <typename T, detail::enable_if_t<detail::is_float<T>::value, int> = 0>
TW_FUNC void adj_div_approx(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    adj_div(a, b, adj_a, adj_b, adj_ret);
}
template <int N, typename T>
TW_FUNC void adj_div_approx(const vec_t<N, T>& a, T b, vec_t<N, T>& adj_a, T& adj_b,
                            const vec_t<N, T>& adj_ret) {
    for (int i = 0; i < N; ++i) adj_div(a.c[i], b, adj_a.c[i], adj_b, adj_ret.c[i]);
}
template <int N, typename T>
TW_FUNC void adj_div_approx(T a, const vec_t<N, T>& b, T& adj_a, vec_t<N, T>& adj_b,
                            const vec_t<N, T>& adj_ret) {
    for (int i = 0; i < N; ++i) adj_div(a, b.c[i], adj_a, adj_b.c[i], adj_ret.c[i]);
}
template <int R, int C, typename T>
TW_FUNC void adj_div_approx(const mat_t<R, C, T>& a, T b, mat_t<R, C, T>& adj_a, T& adj_b,
                            const mat_t<R, C, T>& adj_ret) {
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) adj_div(a.c[i][j], b, adj_a.c[i][j], adj_b, adj_ret.c[i][j]);
}
template <int R, int C, typename T>
TW_FUNC void adj_div_approx(T a, const mat_t<R, C, T>& b, T& adj_a, mat_t<R, C, T>& adj_b,
                            const mat_t<R, C, T>& adj_ret) {
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) adj_div(a, b.c[i][j], adj_a, adj_b.c[i][j], adj_ret.c[i][j]);
}
}  // namespace tw
