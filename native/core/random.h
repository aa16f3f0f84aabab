// Random numbers (Warp's rand_init/randi/randu/randf/randn/sample_*/poisson), bit-identical on
// CPU and CUDA: the state is a uint32 stepped by an LCG, every value comes from hashing the new
// state, and the float math is written out with correctly rounded operations only (+ - * /, fma,
// sqrt), never a platform log/sin/cos. tilewarp/builtins/random.py mirrors it in numpy.
//
//   step(s)    = s * 0x915F77F5 + 0x6A09E667  (mod 2^32; Steele & Vigna's multiplier, full period)
//   mix(x)     = xorshift-multiply avalanche (16, 0x7feb352d, 15, 0x846ca68b, 16)
//   draw(s, k) = mix(s + k * 0x9E3779B9)     (k-th 32 random bits of one call)
//
// A call with state s returns a value computed from s' = step(s) and advances s to s' (the
// frontend rebinds the state variable to rand_next(s)); poisson with lam <= 0 leaves s alone.
#pragma once
#include "vec.h"
#include "../runtime/array.h"

namespace tw {
namespace rng {
TW_FUNC uint32_t step(uint32_t s) { return s * 0x915F77F5u + 0x6A09E667u; }
TW_FUNC uint32_t mix(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
TW_FUNC uint32_t draw(uint32_t s, uint32_t k) { return mix(s + k * 0x9E3779B9u); }
// [0, 1) and (0, 1] in steps of 2^-24 (exact conversions).
TW_FUNC float unit(uint32_t x) { return (float)(x >> 8) * 5.9604644775390625e-8f; }
TW_FUNC float unit_open0(uint32_t x) { return (float)((x >> 8) + 1u) * 5.9604644775390625e-8f; }
TW_FUNC uint32_t seed_bits(int32_t s) { return (uint32_t)s; }
TW_FUNC uint32_t seed_bits(uint32_t s) { return s; }
// 64-bit seeds fold in their high word beyond sign extension (mix(0) == 0), so a seed's bits depend
// on its value alone while it fits in 32 bits, whatever its type.
TW_FUNC uint32_t seed_bits(int64_t s) {
    return (uint32_t)s ^ mix((uint32_t)((uint64_t)s >> 32) ^ (uint32_t)((int32_t)(uint32_t)s >> 31));
}
TW_FUNC uint32_t seed_bits(uint64_t s) { return (uint32_t)s ^ mix((uint32_t)(s >> 32)); }
template <typename S> TW_FUNC uint32_t seed_bits(S s) { return (uint32_t)(int32_t)s; }  // 8/16-bit

// Correctly rounded fma on both targets, so no contraction choice of either compiler matters.
TW_FUNC float fma(float a, float b, float c) {
#if TW_IS_CUDA
    return __fmaf_rn(a, b, c);
#else
    return __builtin_fmaf(a, b, c);
#endif
}
TW_FUNC float mul(float a, float b) {
#if TW_IS_CUDA
    return __fmul_rn(a, b);  // never contracted into a following add
#else
    return a * b;
#endif
}
TW_FUNC float sqrt(float x) {
#if TW_IS_CUDA
    return __fsqrt_rn(x);
#else
    return std::sqrt(x);
#endif
}
TW_FUNC float floor(float x) {
#if TW_IS_CUDA
    return ::floorf(x);
#else
    return std::floor(x);
#endif
}
TW_FUNC float div(float a, float b) {
#if TW_IS_CUDA
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

// Natural log of a positive normal float: x = m 2^e, m in [sqrt(1/2), sqrt(2)), then
// log m = 2 atanh(f / (2 + f)) with f = m - 1 (exact) as an odd series to s^9 (error < 3e-9).
TW_FUNC float log(float x) {
    uint32_t b = detail::f32_bits(x);
    int32_t e = (int32_t)(b >> 23) - 127;
    float m = detail::bits_f32((b & 0x7fffffu) | 0x3f800000u);
    if (m > 1.41421356f) m = mul(m, 0.5f), e += 1;
    float f = m - 1.0f;
    float s = div(f, 2.0f + f), z = mul(s, s);
    float p = fma(z, 0.11111111f, 0.14285714f);
    p = fma(z, p, 0.2f);
    p = fma(z, p, 0.33333334f);
    float s2 = s + s;
    return fma((float)e, 0.69314718f, fma(mul(s2, z), p, s2));
}

// cos and sin of 2 pi t for t = k / 2^24 (k < 2^24): the quadrant is found in integers, so the
// reduced angle is exact up to one rounding; Taylor polynomials on [-pi/4, pi/4] (error < 2e-9).
TW_FUNC void sincos_turn(uint32_t k, float& s, float& c) {
    uint32_t q = (k + (1u << 21)) >> 22;                  // nearest quarter turn, 0..4
    int32_t r = (int32_t)k - (int32_t)(q << 22);          // remainder in [-2^21, 2^21)
    float x = mul((float)r, 3.7450702e-7f);               // 2 pi / 2^24
    float z = mul(x, x);
    float ps = fma(z, 2.7557319e-6f, -1.9841270e-4f);
    ps = fma(z, ps, 8.3333333e-3f);
    ps = fma(z, ps, -0.16666667f);
    float sn = fma(mul(x, z), ps, x);
    float pc = fma(z, -2.7557319e-7f, 2.4801587e-5f);
    pc = fma(z, pc, -1.3888889e-3f);
    pc = fma(z, pc, 4.1666667e-2f);
    pc = fma(z, pc, -0.5f);
    float cs = fma(z, pc, 1.0f);
    switch (q & 3u) {
        case 0: s = sn, c = cs; break;
        case 1: s = cs, c = -sn; break;
        case 2: s = -sn, c = -cs; break;
        default: s = -cs, c = sn; break;
    }
}

// log(k!) - ((k + 1/2) log k - k + log(2 pi) / 2): tabulated below 16, else its asymptotic series.
TW_FUNC float stirling_error(float k) {
    const float table[16] = {0.000000000e+00f, 8.106146680e-02f, 4.134069596e-02f, 2.767792568e-02f,
                             2.079067210e-02f, 1.664469119e-02f, 1.387612882e-02f, 1.189670995e-02f,
                             1.041126526e-02f, 9.255462183e-03f, 8.330563433e-03f, 7.573675488e-03f,
                             6.942840107e-03f, 6.408994188e-03f, 5.951370113e-03f, 5.554733552e-03f};
    if (k < 16.0f) return table[(int)k];
    float inv = div(1.0f, k), inv2 = mul(inv, inv);
    return mul(inv, fma(inv2, fma(inv2, 7.9365079e-4f, -2.7777778e-3f), 8.3333333e-2f));
}
// k log(k / lam) + lam - k, accurate when k is near lam: with d = k - lam, v = d / (k + lam) it is
// d v + 2 k (v^3/3 + v^5/5 + ...) (Loader's series; |v| < 0.1 here, so terms to v^9 suffice).
TW_FUNC float deviance(float k, float lam) {
    float d = k - lam, t = k + lam;
    if (mul(d, d) < mul(0.01f, mul(t, t))) {
        float v = div(d, t), v2 = mul(v, v);
        float q = fma(v2, fma(v2, fma(v2, 0.11111111f, 0.14285714f), 0.2f), 0.33333334f);
        return fma(mul(mul(2.0f, k), mul(v, v2)), q, mul(d, v));
    }
    return fma(k, log(div(k, lam)), lam - k);
}

// Poisson: counting exponential gaps below lam < 10; Hormann's PTRS transformed rejection above.
TW_FUNC uint32_t poisson_small(uint32_t s, float lam) {
    float t = 0.0f;
    for (uint32_t k = 0; k < 1024u; ++k) {
        t -= log(unit_open0(draw(s, k)));
        if (t > lam) return k;
    }
    return 1024u;
}
TW_FUNC uint32_t count(float k) { return !(k > 0.0f) ? 0u : k >= 4294967295.0f ? 4294967295u : (uint32_t)k; }
TW_FUNC uint32_t poisson_ptrs(uint32_t s, float lam) {
    const float slam = sqrt(lam), loglam = log(lam);
    const float b = fma(2.53f, slam, 0.931f), a = fma(0.02483f, b, -0.059f);
    const float inv_alpha = 1.1239f + div(1.1328f, b - 3.4f), vr = 0.9277f - div(3.6224f, b - 2.0f);
    for (uint32_t j = 0; j < 256u; ++j) {
        float u = unit(draw(s, 2u * j)) - 0.5f, v = unit_open0(draw(s, 2u * j + 1u));
        float us = 0.5f - (u < 0.0f ? -u : u);
        float kf = floor(fma(fma(2.0f, div(a, us), b), u, lam + 0.43f));
        if (us >= 0.07f && v <= vr) return count(kf);
        if (kf < 0.0f || (us < 0.013f && v > us)) continue;
        // log of the acceptance ratio against log P(k) = -(deviance + stirling_error + log(2 pi k)/2)
        float lhs = log(mul(v, inv_alpha)) - log(div(a, mul(us, us)) + b);
        float rhs = -lam;
        if (kf >= 1.0f) rhs = -(deviance(kf, lam) + stirling_error(kf) + mul(0.5f, log(mul(6.2831853f, kf))));
        if (lhs <= rhs) return count(kf);
    }
    return count(floor(lam));
}
}  // namespace rng

TW_FUNC uint32_t rand_next(uint32_t state) { return rng::step(state); }
// Distinct offsets give distinct states for one seed (a bijection); rand_init(s) == rand_init(s, 0).
template <typename S, typename O> TW_FUNC uint32_t rand_init(S seed, O offset) {
    return rng::mix(rng::mix(rng::seed_bits(seed)) ^ rng::mix(rng::seed_bits(offset) + 0x9E3779B9u));
}
template <typename S> TW_FUNC uint32_t rand_init(S seed) { return rand_init(seed, (int32_t)0); }

TW_FUNC uint32_t randu(uint32_t state) { return rng::draw(rng::step(state), 0); }
TW_FUNC int32_t randi(uint32_t state) { return (int32_t)randu(state); }
// [low, high) by the high half of a 32x32-bit product (Lemire): no modulo, bias below range/2^32.
TW_FUNC uint32_t randu(uint32_t state, uint32_t low, uint32_t high) {
    return low + (uint32_t)(((uint64_t)randu(state) * (uint32_t)(high - low)) >> 32);
}
TW_FUNC int32_t randi(uint32_t state, int32_t low, int32_t high) {
    return (int32_t)randu(state, (uint32_t)low, (uint32_t)high);
}
TW_FUNC float randf(uint32_t state) { return rng::unit(randu(state)); }
TW_FUNC float randf(uint32_t state, float low, float high) { return rng::fma(high - low, randf(state), low); }
// Box-Muller on (0, 1] x [0, 1): the cosine branch.
TW_FUNC float randn(uint32_t state) {
    uint32_t s = rng::step(state);
    float r = rng::sqrt(rng::mul(-2.0f, rng::log(rng::unit_open0(rng::draw(s, 0)))));
    float sn, cs;
    rng::sincos_turn(rng::draw(s, 1) >> 8, sn, cs);
    return rng::mul(r, cs);
}

TW_FUNC vec_t<2, float> sample_unit_square(uint32_t state) {
    uint32_t s = rng::step(state);
    return vec_t<2, float>(rng::unit(rng::draw(s, 0)) - 0.5f, rng::unit(rng::draw(s, 1)) - 0.5f);
}
TW_FUNC vec_t<3, float> sample_unit_cube(uint32_t state) {
    uint32_t s = rng::step(state);
    return vec_t<3, float>(rng::unit(rng::draw(s, 0)) - 0.5f, rng::unit(rng::draw(s, 1)) - 0.5f,
                           rng::unit(rng::draw(s, 2)) - 0.5f);
}
TW_FUNC vec_t<2, float> sample_unit_ring(uint32_t state) {
    float sn, cs;
    rng::sincos_turn(rng::draw(rng::step(state), 0) >> 8, sn, cs);
    return vec_t<2, float>(cs, sn);
}
TW_FUNC vec_t<2, float> sample_unit_disk(uint32_t state) {
    uint32_t s = rng::step(state);
    float r = rng::sqrt(rng::unit(rng::draw(s, 0))), sn, cs;
    rng::sincos_turn(rng::draw(s, 1) >> 8, sn, cs);
    return vec_t<2, float>(rng::mul(r, cs), rng::mul(r, sn));
}
// z uniform on [-1, 1] (sphere) or (0, 1] (hemisphere) gives a uniform surface point (Archimedes).
namespace rng {
TW_FUNC vec_t<3, float> on_sphere(uint32_t s, float z) {
    float rxy = sqrt(fma(-z, z, 1.0f)), sn, cs;
    sincos_turn(draw(s, 1) >> 8, sn, cs);
    return vec_t<3, float>(mul(rxy, cs), mul(rxy, sn), z);
}
// Rejection from the cube [-1, 1]^2 x [zlo, 1]: about 1.9 tries; 2e-21 odds of exhausting them.
TW_FUNC vec_t<3, float> in_ball(uint32_t s, bool upper) {
    for (uint32_t j = 0; j < 64u; ++j) {
        float x = fma(2.0f, unit(draw(s, 3u * j)), -1.0f), y = fma(2.0f, unit(draw(s, 3u * j + 1u)), -1.0f);
        float u = unit(draw(s, 3u * j + 2u)), z = upper ? u : fma(2.0f, u, -1.0f);
        if (fma(x, x, fma(y, y, mul(z, z))) < 1.0f) return vec_t<3, float>(x, y, z);
    }
    return vec_t<3, float>();
}
}  // namespace rng
TW_FUNC vec_t<3, float> sample_unit_sphere_surface(uint32_t state) {
    uint32_t s = rng::step(state);
    return rng::on_sphere(s, rng::fma(-2.0f, rng::unit(rng::draw(s, 0)), 1.0f));
}
TW_FUNC vec_t<3, float> sample_unit_hemisphere_surface(uint32_t state) {
    uint32_t s = rng::step(state);
    return rng::on_sphere(s, 1.0f - rng::unit(rng::draw(s, 0)));
}
TW_FUNC vec_t<3, float> sample_unit_sphere(uint32_t state) {
    return rng::in_ball(rng::step(state), false);
}
TW_FUNC vec_t<3, float> sample_unit_hemisphere(uint32_t state) {
    return rng::in_ball(rng::step(state), true);
}
// Barycentric (u, v) of a uniform point: u = 1 - sqrt(r1), v = sqrt(r1) (1 - r2).
TW_FUNC vec_t<2, float> sample_triangle(uint32_t state) {
    uint32_t s = rng::step(state);
    float a = rng::sqrt(rng::unit(rng::draw(s, 0)));
    return vec_t<2, float>(1.0f - a, rng::mul(a, 1.0f - rng::unit(rng::draw(s, 1))));
}

// Inverse-transform sampling: the first index whose cdf entry is >= u (binary search).
template <typename A> TW_FUNC int32_t sample_cdf(uint32_t state, const A& cdf) {
    const float u = randf(state);
    int32_t lo = 0, hi = cdf.shape[0] - 1;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (load(cdf, mid) >= u) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

TW_FUNC uint32_t poisson_next(uint32_t state, float lam) { return lam > 0.0f ? rng::step(state) : state; }
TW_FUNC uint32_t poisson(uint32_t state, float lam) {
    if (!(lam > 0.0f)) return 0u;
    uint32_t s = rng::step(state);
    return lam < 10.0f ? rng::poisson_small(s, lam) : rng::poisson_ptrs(s, lam);
}
}  // namespace tw
