// Scalar types and builtins (Warp 1.19 semantics), for float, double, tw::half, tw::bfloat16 and
// integers.
#pragma once
#include "target.h"

namespace tw {
namespace detail {
// Bit casts (memcpy is the only portable host spelling; NVRTC has intrinsics).
TW_FUNC uint32_t f32_bits(float f) {
#if TW_IS_CUDA
    return __float_as_uint(f);
#else
    uint32_t u; __builtin_memcpy(&u, &f, 4); return u;
#endif
}
TW_FUNC float bits_f32(uint32_t u) {
#if TW_IS_CUDA
    return __uint_as_float(u);
#else
    float f; __builtin_memcpy(&f, &u, 4); return f;
#endif
}
TW_FUNC uint64_t f64_bits(double d) {
#if TW_IS_CUDA
    return (uint64_t)__double_as_longlong(d);
#else
    uint64_t u; __builtin_memcpy(&u, &d, 8); return u;
#endif
}
TW_FUNC double bits_f64(uint64_t u) {
#if TW_IS_CUDA
    return __longlong_as_double((long long)u);
#else
    double d; __builtin_memcpy(&d, &u, 8); return d;
#endif
}

#if !TW_IS_CUDA && !defined(TW_NO_FLOAT16) && defined(__FLT16_MAX__) && \
    (defined(__F16C__) || defined(__aarch64__))
#define TW_HOST_FLOAT16 1  // hardware conversions through the compiler's _Float16
#else
#define TW_HOST_FLOAT16 0
#endif

// Software conversions: exact round-to-nearest-even, with inf/nan/subnormals.
TW_FUNC uint16_t f32_to_f16_sw(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)  // inf / nan (keep payload, force quiet)
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (ax < 0x38800000u) {                                    // below 2^-14: half subnormal
        if (ax < 0x33000000u) return (uint16_t)sign;            // below 2^-25: zero
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, shift = 126 - e;
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        q += (rem > halfway || (rem == halfway && (q & 1u))) ? 1u : 0u;
        return (uint16_t)(sign | q);
    }
    uint32_t r = ax - 0x38000000u;  // rebias exponent 127 -> 15; a mantissa carry rolls into it
    uint32_t q = r >> 13, rem = r & 0x1fffu;
    q += (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ? 1u : 0u;
    return (uint16_t)(sign | q);
}
TW_FUNC uint16_t f64_to_f16_sw(double d) {
    uint64_t x = f64_bits(d);
    uint32_t sign = (uint32_t)(x >> 48) & 0x8000u;
    uint64_t ax = x & 0x7fffffffffffffffull;
    if (ax >= 0x7ff0000000000000ull)
        return (uint16_t)(sign | 0x7c00u |
                          (ax > 0x7ff0000000000000ull ? 0x200u | (uint32_t)((ax >> 42) & 0x3ffu) : 0u));
    if (ax >= 0x40effe0000000000ull) return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x3f10000000000000ull) {
        if (ax < 0x3e60000000000000ull) return (uint16_t)sign;
        uint64_t e = ax >> 52, m = (ax & 0xfffffffffffffull) | (1ull << 52), shift = 1051 - e;
        uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1), halfway = 1ull << (shift - 1);
        q += (rem > halfway || (rem == halfway && (q & 1u))) ? 1u : 0u;
        return (uint16_t)(sign | (uint32_t)q);
    }
    uint64_t r = ax - (1008ull << 52);
    uint64_t q = r >> 42, rem = r & ((1ull << 42) - 1), halfway = 1ull << 41;
    q += (rem > halfway || (rem == halfway && (q & 1u))) ? 1u : 0u;
    return (uint16_t)(sign | (uint32_t)q);
}
TW_FUNC float f16_to_f32_sw(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return bits_f32(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));  // quiet NaN, as F16C
    if (e == 0) {  // zero / subnormal: m * 2^-24 is exact in float
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

TW_FUNC uint16_t f32_to_f16(float f) {
#if TW_IS_CUDA
    uint16_t h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
#elif TW_HOST_FLOAT16
    // The empty asm pins the rounded bits: without it GCC 12 -O3 folds half->float->half round
    // trips away (x86 _Float16 has excess precision), skipping the rounding of each half op.
    _Float16 v = (_Float16)f; uint16_t h; __builtin_memcpy(&h, &v, 2); __asm__("" : "+r"(h)); return h;
#else
    return f32_to_f16_sw(f);
#endif
}
TW_FUNC uint16_t f64_to_f16(double d) {
#if TW_IS_CUDA
    uint16_t h; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d)); return h;
#elif TW_HOST_FLOAT16
    _Float16 v = (_Float16)d; uint16_t h; __builtin_memcpy(&h, &v, 2); __asm__("" : "+r"(h)); return h;
#else
    return f64_to_f16_sw(d);
#endif
}
TW_FUNC float f16_to_f32(uint16_t h) {
#if TW_IS_CUDA
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
#elif TW_HOST_FLOAT16
    _Float16 v; __builtin_memcpy(&v, &h, 2); return (float)v;
#else
    return f16_to_f32_sw(h);
#endif
}

// bfloat16 is the top half of a float: round to nearest even by integer addition (exact, and the
// same code on both targets, so NVRTC needs no cuda_bf16.h). A NaN stays NaN: its top bits are
// kept and made quiet, where the rounding carry could have turned it into an infinity.
TW_FUNC uint16_t f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
TW_FUNC float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }
}  // namespace detail

// IEEE binary16 storage; arithmetic promotes to float and rounds back (exact for + - * / sqrt,
// since float has more than 2*11+2 significand bits). Constructors are explicit so that mixed
// half/float expressions never pick an overload silently: use tw::cast<half>(x).
struct half {
    uint16_t bits;
    half() = default;
    TW_FUNC explicit half(float f) : bits(detail::f32_to_f16(f)) {}
    TW_FUNC explicit half(double d) : bits(detail::f64_to_f16(d)) {}
    TW_FUNC explicit half(int i) : bits(detail::f32_to_f16((float)i)) {}
    TW_FUNC explicit operator float() const { return detail::f16_to_f32(bits); }
    TW_FUNC explicit operator double() const { return (double)detail::f16_to_f32(bits); }
    TW_FUNC static half from_bits(uint16_t b) { half h; h.bits = b; return h; }
};

// bfloat16 (8-bit exponent, 7-bit mantissa) storage, used like half: explicit conversions, float
// arithmetic rounded back. A double rounds through float, as in Warp.
struct bfloat16 {
    uint16_t bits;
    bfloat16() = default;
    TW_FUNC explicit bfloat16(float f) : bits(detail::f32_to_bf16(f)) {}
    TW_FUNC explicit bfloat16(double d) : bits(detail::f32_to_bf16((float)d)) {}
    TW_FUNC explicit bfloat16(int i) : bits(detail::f32_to_bf16((float)i)) {}
    TW_FUNC explicit operator float() const { return detail::bf16_to_f32(bits); }
    TW_FUNC explicit operator double() const { return (double)detail::bf16_to_f32(bits); }
    TW_FUNC static bfloat16 from_bits(uint16_t b) { bfloat16 h; h.bits = b; return h; }
};

namespace detail {
// The 16-bit float types: stored in 16 bits, computed in float and rounded back after each operation.
template <typename T> struct is_f16 { static constexpr bool value = false; };
template <> struct is_f16<half> { static constexpr bool value = true; };
template <> struct is_f16<bfloat16> { static constexpr bool value = true; };
// Bits of +inf (the exponent mask) and of 1.0.
template <typename T> struct f16_bits;
template <> struct f16_bits<half> { static constexpr uint16_t inf = 0x7c00u, one = 0x3c00u; };
template <> struct f16_bits<bfloat16> { static constexpr uint16_t inf = 0x7f80u, one = 0x3f80u; };
}  // namespace detail
#define TW_IF_F16(T) typename T, detail::enable_if_t<detail::is_f16<T>::value, int> = 0

#define TW_F16_BINOP(OP)                                                                        \
    template <TW_IF_F16(T)> TW_FUNC T operator OP(T a, T b) { return T((float)a OP (float)b); } \
    template <TW_IF_F16(T)> TW_FUNC T& operator OP##=(T& a, T b) { a = a OP b; return a; }
TW_F16_BINOP(+)
TW_F16_BINOP(-)
TW_F16_BINOP(*)
TW_F16_BINOP(/)
#undef TW_F16_BINOP
template <TW_IF_F16(T)> TW_FUNC T operator-(T a) { return T::from_bits((uint16_t)(a.bits ^ 0x8000u)); }
template <TW_IF_F16(T)> TW_FUNC T operator+(T a) { return a; }
#define TW_F16_CMP(OP) \
    template <TW_IF_F16(T)> TW_FUNC bool operator OP(T a, T b) { return (float)a OP (float)b; }
TW_F16_CMP(==)
TW_F16_CMP(!=)
TW_F16_CMP(<)
TW_F16_CMP(<=)
TW_F16_CMP(>)
TW_F16_CMP(>=)
#undef TW_F16_CMP

namespace detail {
// 0 and 1 without a conversion: on CUDA a half conversion is inline asm, which never folds.
template <typename T> TW_FUNC T zero() { return T(); }  // value-init: all bits zero, 16-bit floats too
template <typename T> TW_FUNC T one() { return (T)1; }
template <> TW_FUNC half one<half>() { return half::from_bits(f16_bits<half>::one); }
template <> TW_FUNC bfloat16 one<bfloat16>() { return bfloat16::from_bits(f16_bits<bfloat16>::one); }
}  // namespace detail

// ---------------------------------------------------------------------------------------
// Type traits over the builtin types (not the typedefs, so int64_t = long or long long
// is covered on every target).
namespace detail {
template <typename T> struct int_info { static constexpr bool is_int = false, is_signed = false; };
#define TW_INT_INFO(T, S) \
    template <> struct int_info<T> { static constexpr bool is_int = true, is_signed = S; };
TW_INT_INFO(char, (char)-1 < 0)
TW_INT_INFO(signed char, true)
TW_INT_INFO(short, true)
TW_INT_INFO(int, true)
TW_INT_INFO(long, true)
TW_INT_INFO(long long, true)
TW_INT_INFO(unsigned char, false)
TW_INT_INFO(unsigned short, false)
TW_INT_INFO(unsigned int, false)
TW_INT_INFO(unsigned long, false)
TW_INT_INFO(unsigned long long, false)
#undef TW_INT_INFO
template <typename T> struct is_float { static constexpr bool value = false; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <> struct is_float<double> { static constexpr bool value = true; };
template <> struct is_float<half> { static constexpr bool value = true; };
template <> struct is_float<bfloat16> { static constexpr bool value = true; };
template <typename T> struct is_int { static constexpr bool value = int_info<T>::is_int; };
template <typename T> struct is_num {
    static constexpr bool value = is_int<T>::value || is_float<T>::value;
};
template <typename T> struct is_scalar {
    static constexpr bool value = is_num<T>::value || is_same<T, bool>::value;
};
template <typename... S> struct all_scalar { static constexpr bool value = (is_scalar<S>::value && ...); };
}  // namespace detail

#define TW_IF_INT(T) typename T, detail::enable_if_t<detail::is_int<T>::value, int> = 0
#define TW_IF_NUM(T) typename T, detail::enable_if_t<detail::is_num<T>::value, int> = 0
#define TW_IF_SCALAR(T) typename T, detail::enable_if_t<detail::is_scalar<T>::value, int> = 0
#define TW_IF_FLOAT(T) typename T, detail::enable_if_t<detail::is_float<T>::value, int> = 0

// ---------------------------------------------------------------------------------------
// Conversions: tw::cast<T>(x) between any two scalars (16-bit floats via float; double->half direct).
namespace detail {
template <typename T, typename S> struct caster {
    TW_FUNC static T run(S x) {
        if constexpr (is_same<T, S>::value) return x;
        else if constexpr (is_f16<T>::value && is_same<S, bool>::value) return T(x ? 1.0f : 0.0f);
        else if constexpr (is_f16<T>::value && is_same<S, double>::value) return T(x);
        else if constexpr (is_f16<T>::value) return T((float)x);
        else if constexpr (is_f16<S>::value && is_same<T, bool>::value) return (float)x != 0.0f;
        else if constexpr (is_f16<S>::value && is_same<T, double>::value) return (double)x;
        else if constexpr (is_f16<S>::value) return (T)(float)x;
        else return (T)x;
    }
};
}  // namespace detail
template <typename T, typename S> TW_FUNC T cast(S x) { return detail::caster<T, S>::run(x); }

template <typename T> TW_FUNC T inf();
template <> TW_FUNC float inf<float>() { return detail::bits_f32(0x7f800000u); }
template <> TW_FUNC double inf<double>() { return detail::bits_f64(0x7ff0000000000000ull); }
template <> TW_FUNC half inf<half>() { return half::from_bits(0x7c00u); }
template <> TW_FUNC bfloat16 inf<bfloat16>() { return bfloat16::from_bits(0x7f80u); }
template <typename T> TW_FUNC T nan();
template <> TW_FUNC float nan<float>() { return detail::bits_f32(0x7fc00000u); }
template <> TW_FUNC double nan<double>() { return detail::bits_f64(0x7ff8000000000000ull); }
template <> TW_FUNC half nan<half>() { return half::from_bits(0x7e00u); }
template <> TW_FUNC bfloat16 nan<bfloat16>() { return bfloat16::from_bits(0x7fc0u); }

// ---------------------------------------------------------------------------------------
// Arithmetic common to every numeric type. The (T) cast keeps int8/int16 results in type.
template <TW_IF_NUM(T)> TW_FUNC T add(T a, T b) { return (T)(a + b); }
template <TW_IF_NUM(T)> TW_FUNC T sub(T a, T b) { return (T)(a - b); }
template <TW_IF_NUM(T)> TW_FUNC T mul(T a, T b) { return (T)(a * b); }
template <TW_IF_FLOAT(T)> TW_FUNC T div(T a, T b) { return (T)(a / b); }
// Integer division truncates toward zero, as C (and Warp). A CPU traps on a zero divisor and on
// MIN / -1 (the quotient overflows) and a GPU returns garbage, so both get one defined answer
// instead: x / 0 == 0, x % 0 == 0, MIN / -1 == MIN (wrapped), MIN % -1 == 0. Debug builds report a
// zero divisor at the user's line (div_at below).
template <TW_IF_INT(T)> TW_FUNC T div(T a, T b) {
    if (b == (T)0) return (T)0;
    if constexpr (detail::int_info<T>::is_signed) {
        if (b == (T)-1) return (T)(0ull - (unsigned long long)a);  // -a, wrapping at MIN
    }
    return (T)(a / b);
}
template <TW_IF_NUM(T)> TW_FUNC T neg(T a) { return (T)(-a); }
template <TW_IF_NUM(T)> TW_FUNC T pos(T a) { return a; }

template <TW_IF_SCALAR(T)> TW_FUNC bool eq(T a, T b) { return a == b; }
template <TW_IF_SCALAR(T)> TW_FUNC bool ne(T a, T b) { return a != b; }
template <TW_IF_SCALAR(T)> TW_FUNC bool lt(T a, T b) { return a < b; }
template <TW_IF_SCALAR(T)> TW_FUNC bool le(T a, T b) { return a <= b; }
template <TW_IF_SCALAR(T)> TW_FUNC bool gt(T a, T b) { return a > b; }
template <TW_IF_SCALAR(T)> TW_FUNC bool ge(T a, T b) { return a >= b; }

// ---------------------------------------------------------------------------------------
// Integers.
template <TW_IF_INT(T)> TW_FUNC T mod(T a, T b) {  // sign of dividend; defined for 0 and -1 as div
    if (b == (T)0) return (T)0;
    if constexpr (detail::int_info<T>::is_signed) {
        if (b == (T)-1) return (T)0;
    }
    return (T)(a % b);
}
// `**` on integers (beyond Warp): exact by squaring; a negative exponent truncates as `/` does
// (1 for a base of 1, +-1 for -1, else 0).
template <TW_IF_INT(T)> TW_FUNC T pow(T a, T b) {
    if constexpr (detail::int_info<T>::is_signed) {
        if (b < (T)0) return a == (T)1 ? (T)1 : a == (T)-1 ? ((b & (T)1) ? (T)-1 : (T)1) : (T)0;
    }
    T result = (T)1;
    for (; b; b = (T)(b >> 1), a = (T)(a * a))
        if (b & (T)1) result = (T)(result * a);
    return result;
}
template <TW_IF_INT(T)> TW_FUNC void adj_pow(T, T, T&, T&, T) {}
// Warp 1.19 `//` on integers floors (-7 // 2 == -4), unlike its `/` and `%` which truncate.
template <TW_IF_INT(T)> TW_FUNC T floordiv(T a, T b) {
    T q = div(a, b);
    if constexpr (detail::int_info<T>::is_signed) {
        if (mod(a, b) != 0 && ((a < 0) != (b < 0))) q = (T)(q - 1);
    }
    return q;
}
// The integer `/`, `%` and `//` of debug-emitted code: a zero divisor is reported at its site (in a
// debug build; the same source compiled without TW_DEBUG just divides).
#if defined(TW_DEBUG)
#define TW_REPORT_DIVZERO(b, loc) \
    if (b == (T)0) report_error(ERR_DIVZERO, loc.site, -1, -1, 0, 0)
#else
#define TW_REPORT_DIVZERO(b, loc) (void)loc
#endif
#define TW_INT_DIVISION_AT(NAME)                                         \
    template <TW_IF_INT(T)> TW_FUNC T NAME##_at(src_loc loc, T a, T b) { \
        TW_REPORT_DIVZERO(b, loc);                                       \
        return NAME(a, b);                                               \
    }
TW_INT_DIVISION_AT(div)
TW_INT_DIVISION_AT(mod)
TW_INT_DIVISION_AT(floordiv)
#undef TW_INT_DIVISION_AT
#undef TW_REPORT_DIVZERO
template <TW_IF_INT(T)> TW_FUNC T abs(T a) {
    if constexpr (detail::int_info<T>::is_signed) return a < 0 ? (T)(-a) : a;
    else return a;
}
template <TW_IF_INT(T)> TW_FUNC T sign(T a) {  // Warp: sign(0) == 1
    if constexpr (detail::int_info<T>::is_signed) return a < 0 ? (T)-1 : (T)1;
    else return (T)1;
}
template <TW_IF_INT(T)> TW_FUNC T min(T a, T b) { return a < b ? a : b; }
template <TW_IF_INT(T)> TW_FUNC T max(T a, T b) { return a > b ? a : b; }
template <TW_IF_INT(T)> TW_FUNC T clamp(T x, T lo, T hi) { return min(max(lo, x), hi); }
template <TW_IF_INT(T)> TW_FUNC T bit_and(T a, T b) { return (T)(a & b); }
template <TW_IF_INT(T)> TW_FUNC T bit_or(T a, T b) { return (T)(a | b); }
template <TW_IF_INT(T)> TW_FUNC T bit_xor(T a, T b) { return (T)(a ^ b); }
TW_FUNC bool bit_and(bool a, bool b) { return a && b; }
TW_FUNC bool bit_or(bool a, bool b) { return a || b; }
TW_FUNC bool bit_xor(bool a, bool b) { return a != b; }
// Shift counts are taken modulo the width of the promoted type (32, or 64 for 64-bit types):
// what x86 does, hence Warp on CPU, and defined (same result) on CUDA, where PTX would clamp.
template <TW_IF_INT(T)> TW_FUNC T lshift(T a, T b) { return (T)(a << (b & (sizeof(T) == 8 ? 63 : 31))); }
template <TW_IF_INT(T)> TW_FUNC T rshift(T a, T b) {  // arithmetic if signed
    return (T)(a >> (b & (sizeof(T) == 8 ? 63 : 31)));
}
template <TW_IF_INT(T)> TW_FUNC T invert(T a) { return (T)(~a); }
template <TW_IF_INT(T)> TW_FUNC bool isfinite(T) { return true; }
template <TW_IF_INT(T)> TW_FUNC bool isnan(T) { return false; }
template <TW_IF_INT(T)> TW_FUNC bool isinf(T) { return false; }

// ---------------------------------------------------------------------------------------
// Floating point. CPU goes through <cmath>; CUDA through NVRTC's built-in device math.
#if TW_IS_CUDA
#define TW_MATH1(NAME, FF, FD)                           \
    TW_FUNC float NAME(float x) { return ::FF(x); }     \
    TW_FUNC double NAME(double x) { return ::FD(x); }   \
    template <TW_IF_F16(T)> TW_FUNC T NAME(T x) { return T(::FF((float)x)); }
#define TW_MATH2(NAME, FF, FD)                                           \
    TW_FUNC float NAME(float x, float y) { return ::FF(x, y); }         \
    TW_FUNC double NAME(double x, double y) { return ::FD(x, y); }      \
    template <TW_IF_F16(T)> TW_FUNC T NAME(T x, T y) { return T(::FF((float)x, (float)y)); }
#else
#define TW_MATH1(NAME, FF, FD)                           \
    TW_FUNC float NAME(float x) { return std::FD(x); }  \
    TW_FUNC double NAME(double x) { return std::FD(x); } \
    template <TW_IF_F16(T)> TW_FUNC T NAME(T x) { return T(std::FD((float)x)); }
#define TW_MATH2(NAME, FF, FD)                                              \
    TW_FUNC float NAME(float x, float y) { return std::FD(x, y); }         \
    TW_FUNC double NAME(double x, double y) { return std::FD(x, y); }      \
    template <TW_IF_F16(T)> TW_FUNC T NAME(T x, T y) { return T(std::FD((float)x, (float)y)); }
#endif
TW_MATH1(sqrt, sqrtf, sqrt)
TW_MATH1(cbrt, cbrtf, cbrt)
TW_MATH1(exp, expf, exp)
TW_MATH1(log, logf, log)
TW_MATH1(log2, log2f, log2)
TW_MATH1(log10, log10f, log10)
TW_MATH1(sin, sinf, sin)
TW_MATH1(cos, cosf, cos)
TW_MATH1(tan, tanf, tan)
TW_MATH1(asin, asinf, asin)
TW_MATH1(acos, acosf, acos)
TW_MATH1(atan, atanf, atan)
TW_MATH1(sinh, sinhf, sinh)
TW_MATH1(cosh, coshf, cosh)
TW_MATH1(tanh, tanhf, tanh)
TW_MATH1(floor, floorf, floor)
TW_MATH1(ceil, ceilf, ceil)
TW_MATH1(round, roundf, round)  // half away from zero
TW_MATH1(rint, rintf, rint)      // half to even
TW_MATH1(trunc, truncf, trunc)
TW_MATH1(erf, erff, erf)
TW_MATH1(erfc, erfcf, erfc)
TW_MATH1(abs, fabsf, fabs)
TW_MATH2(pow, powf, pow)
TW_MATH2(atan2, atan2f, atan2)
TW_MATH2(mod, fmodf, fmod)  // float `%` is fmod (sign of dividend)
#undef TW_MATH1
#undef TW_MATH2

// Classification by bit pattern: exact, and unaffected by -ffast-math / --use_fast_math.
TW_FUNC bool isnan(float x) { return (detail::f32_bits(x) & 0x7fffffffu) > 0x7f800000u; }
TW_FUNC bool isinf(float x) { return (detail::f32_bits(x) & 0x7fffffffu) == 0x7f800000u; }
TW_FUNC bool isfinite(float x) { return (detail::f32_bits(x) & 0x7fffffffu) < 0x7f800000u; }
TW_FUNC bool isnan(double x) {
    return (detail::f64_bits(x) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}
TW_FUNC bool isinf(double x) {
    return (detail::f64_bits(x) & 0x7fffffffffffffffull) == 0x7ff0000000000000ull;
}
TW_FUNC bool isfinite(double x) {
    return (detail::f64_bits(x) & 0x7fffffffffffffffull) < 0x7ff0000000000000ull;
}
template <TW_IF_F16(T)> TW_FUNC bool isnan(T x) { return (x.bits & 0x7fffu) > detail::f16_bits<T>::inf; }
template <TW_IF_F16(T)> TW_FUNC bool isinf(T x) { return (x.bits & 0x7fffu) == detail::f16_bits<T>::inf; }
template <TW_IF_F16(T)> TW_FUNC bool isfinite(T x) { return (x.bits & 0x7fffu) < detail::f16_bits<T>::inf; }

// min/max follow fmin/fmax (Warp): a NaN operand loses to a number. Written out on the host
// because glibc's fminf is an out-of-line call that blocks vectorisation.
#if TW_IS_CUDA
TW_FUNC float min(float a, float b) { return ::fminf(a, b); }
TW_FUNC float max(float a, float b) { return ::fmaxf(a, b); }
TW_FUNC double min(double a, double b) { return ::fmin(a, b); }
TW_FUNC double max(double a, double b) { return ::fmax(a, b); }
#else
TW_FUNC float min(float a, float b) { return (b < a || a != a) ? b : a; }
TW_FUNC float max(float a, float b) { return (b > a || a != a) ? b : a; }
TW_FUNC double min(double a, double b) { return (b < a || a != a) ? b : a; }
TW_FUNC double max(double a, double b) { return (b > a || a != a) ? b : a; }
#endif
template <TW_IF_F16(T)> TW_FUNC T min(T a, T b) { return T(min((float)a, (float)b)); }
template <TW_IF_F16(T)> TW_FUNC T max(T a, T b) { return T(max((float)a, (float)b)); }

// Float helpers written once for float/double/half/bfloat16.
#define TW_FLOAT_TEMPLATE template <typename T, detail::enable_if_t<detail::is_float<T>::value, int> = 0>
TW_FLOAT_TEMPLATE TW_FUNC T clamp(T x, T lo, T hi) { return min(max(lo, x), hi); }
TW_FLOAT_TEMPLATE TW_FUNC T floordiv(T a, T b) { return floor(a / b); }
TW_FLOAT_TEMPLATE TW_FUNC T sign(T a) {  // Warp: sign(0) == sign(-0) == 1
    return a < detail::zero<T>() ? -detail::one<T>() : detail::one<T>();
}
TW_FLOAT_TEMPLATE TW_FUNC T frac(T a) { return a - trunc(a); }
TW_FLOAT_TEMPLATE TW_FUNC T degrees(T a) { return cast<T>((float)a * 57.29577951308232f); }
TW_FLOAT_TEMPLATE TW_FUNC T radians(T a) { return cast<T>((float)a * 0.017453292519943295f); }
TW_FUNC double degrees(double a) { return a * 57.29577951308232; }
TW_FUNC double radians(double a) { return a * 0.017453292519943295; }
// Warp's step: 1 where x < 0, else 0.
TW_FLOAT_TEMPLATE TW_FUNC T step(T x) {
    return x < detail::zero<T>() ? detail::one<T>() : detail::zero<T>();
}
template <TW_IF_INT(T)> TW_FUNC T step(T x) {  // integers too, as Warp (0 for every unsigned value)
    if constexpr (detail::int_info<T>::is_signed) return x < 0 ? (T)1 : (T)0;
    else return (T)0;
}
TW_FLOAT_TEMPLATE TW_FUNC T lerp(T a, T b, T t) { return a * (detail::one<T>() - t) + b * t; }
TW_FLOAT_TEMPLATE TW_FUNC T smoothstep(T e0, T e1, T x) {
    T t = clamp((x - e0) / (e1 - e0), detail::zero<T>(), detail::one<T>());
    return t * t * (cast<T>(3) - cast<T>(2) * t);
}
#undef TW_FLOAT_TEMPLATE

// ---------------------------------------------------------------------------------------
// Adjoints (docs/AUTODIFF.md): adj_NAME(primal args..., one adjoint per argument, accumulated
// with +=, adjoint of the result). Integer and bool adjoints are left untouched. The 16-bit floats
// compute their partials in float and round once into the accumulator.
#define TW_IF_FLOAT(T) typename T, detail::enable_if_t<detail::is_float<T>::value, int> = 0
namespace detail {
template <typename T> struct calc { typedef T type; };
template <> struct calc<half> { typedef float type; };
template <> struct calc<bfloat16> { typedef float type; };
template <typename T> using calc_t = typename calc<T>::type;
// g * d where the local derivative d may be infinite (sqrt, log, ... at 0): no upstream gradient
// contributes nothing, instead of the 0 * inf = NaN that would poison untaken branches.
template <typename W> TW_FUNC W scaled(W g, W d) { return g == W(0) ? W(0) : g * d; }
}  // namespace detail

// Unary float functions: EXPR is the gradient for x, from x and g (= adj_ret), both in W.
#define TW_ADJ1(NAME, EXPR)                                                    \
    template <TW_IF_FLOAT(T)> TW_FUNC void adj_##NAME(T x_, T& adj_x, T adj_ret) { \
        typedef detail::calc_t<T> W;                                           \
        W x = (W)x_, g = (W)adj_ret;                                           \
        (void)x;                                                               \
        adj_x += cast<T>(EXPR);                                                \
    }
// sqrt/cbrt at 0 and log at 0 give the one-sided limit (+inf, times a nonzero adj_ret).
TW_ADJ1(sqrt, detail::scaled(g, W(0.5) / sqrt(x)))
TW_ADJ1(cbrt, detail::scaled(g, W(1) / (W(3) * cbrt(x) * cbrt(x))))
TW_ADJ1(exp, g * exp(x))
TW_ADJ1(log, detail::scaled(g, W(1) / x))
TW_ADJ1(log2, detail::scaled(g, W(1.4426950408889634) / x))    // 1 / ln 2
TW_ADJ1(log10, detail::scaled(g, W(0.43429448190325182) / x))  // 1 / ln 10
TW_ADJ1(sin, g * cos(x))
TW_ADJ1(cos, -g * sin(x))
TW_ADJ1(tan, detail::scaled(g, W(1) / (cos(x) * cos(x))))
// (1 - x)(1 + x) keeps its digits near |x| = 1, where 1 - x*x cancels; |x| = 1 gives +-inf
// (Warp gives 0 there).
TW_ADJ1(asin, detail::scaled(g, W(1) / sqrt((W(1) - x) * (W(1) + x))))
TW_ADJ1(acos, detail::scaled(g, W(-1) / sqrt((W(1) - x) * (W(1) + x))))
TW_ADJ1(atan, g / (W(1) + x * x))
TW_ADJ1(sinh, g * cosh(x))
TW_ADJ1(cosh, g * sinh(x))
// 1 / cosh^2 rather than 1 - tanh^2, which rounds to 0 long before the true value underflows.
TW_ADJ1(tanh, g * (W(1) / cosh(x)) * (W(1) / cosh(x)))
TW_ADJ1(degrees, g * W(57.29577951308232))
TW_ADJ1(radians, g * W(0.017453292519943295))
TW_ADJ1(frac, g)  // x - trunc(x) has slope 1 between integers (Warp gives 0)
#undef TW_ADJ1

// Operators and functions that also take integers: only float adjoints change.
#define TW_ADJ_FLOAT_ONLY(T) if constexpr (detail::is_float<T>::value)
template <TW_IF_NUM(T)> TW_FUNC void adj_add(T, T, T& adj_a, T& adj_b, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) { adj_a += adj_ret; adj_b += adj_ret; }
}
template <TW_IF_NUM(T)> TW_FUNC void adj_sub(T, T, T& adj_a, T& adj_b, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) { adj_a += adj_ret; adj_b -= adj_ret; }
}
template <TW_IF_NUM(T)> TW_FUNC void adj_neg(T, T& adj_a, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) adj_a -= adj_ret;
}
template <TW_IF_NUM(T)> TW_FUNC void adj_pos(T, T& adj_a, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) adj_a += adj_ret;
}
template <TW_IF_NUM(T)> TW_FUNC void adj_mul(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) {
        typedef detail::calc_t<T> W;
        W g = (W)adj_ret;
        adj_a += cast<T>(g * (W)b);
        adj_b += cast<T>(g * (W)a);
    }
}
template <TW_IF_NUM(T)> TW_FUNC void adj_div(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) {
        typedef detail::calc_t<T> W;
        W gb = (W)adj_ret / (W)b;  // d/db = -(a/b)/b: no b*b to overflow or underflow
        adj_a += cast<T>(gb);
        adj_b -= cast<T>(gb * ((W)a / (W)b));
    }
}
// fmod(a, b) = a - n b with n = trunc(a / b) an integer: d/da = 1, d/db = -n (Warp omits d/db).
// n is recovered exactly from the remainder, not from a rounded a / b.
template <TW_IF_NUM(T)> TW_FUNC void adj_mod(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) {
        typedef detail::calc_t<T> W;
        W r = mod((W)a, (W)b);  // 16-bit: the unrounded remainder, as the forward computes it
        W n = rint(((W)a - r) / (W)b);
        adj_a += adj_ret;
        adj_b -= cast<T>((W)adj_ret * n);
    }
}
// Warp's subgradient at 0 is +1 (x < 0 is the only negative side).
template <TW_IF_NUM(T)> TW_FUNC void adj_abs(T x, T& adj_x, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) {
        if (x < detail::zero<T>()) adj_x -= adj_ret;
        else adj_x += adj_ret;
    }
}
// The gradient follows the operand the forward returned: a NaN operand loses, and a tie goes to
// b (Warp's choice).
template <TW_IF_NUM(T)> TW_FUNC void adj_min(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) {
        if (!isnan(a) && (isnan(b) || a < b)) adj_a += adj_ret;
        else adj_b += adj_ret;
    }
}
template <TW_IF_NUM(T)> TW_FUNC void adj_max(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) {
        if (!isnan(a) && (isnan(b) || a > b)) adj_a += adj_ret;
        else adj_b += adj_ret;
    }
}
// clamp = min(max(lo, x), hi), differentiated through the same two steps (as Warp): x == lo
// sends the gradient to x, x == hi to hi.
template <TW_IF_NUM(T)> TW_FUNC void adj_clamp(T x, T lo, T hi, T& adj_x, T& adj_lo, T& adj_hi, T adj_ret) {
    TW_ADJ_FLOAT_ONLY(T) {
        T m = max(lo, x), adj_m = detail::zero<T>();
        adj_min(m, hi, adj_m, adj_hi, adj_ret);
        adj_max(lo, x, adj_lo, adj_x, adj_m);
    }
}
#undef TW_ADJ_FLOAT_ONLY

template <TW_IF_FLOAT(T)> TW_FUNC void adj_pow(T a_, T b_, T& adj_a, T& adj_b, T adj_ret) {
    typedef detail::calc_t<T> W;
    W a = (W)a_, b = (W)b_, g = (W)adj_ret;
    // a^0 is the constant 1, even at a == 0 (where b a^(b-1) would be 0 * inf).
    W da = b == W(0) ? W(0) : b * pow(a, b - W(1));
    // 0^b is 0 for every b > 0, so d/db is 0 there; for a < 0 a^b exists only at integer b and
    // d/db is NaN, as log(a).
    W db = a == W(0) ? W(0) : pow(a, b) * log(a);
    adj_a += cast<T>(detail::scaled(g, da));
    adj_b += cast<T>(detail::scaled(g, db));
}

// atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2), scaled by max(|x|, |y|) so the
// squares neither overflow nor underflow. At (0, 0) the direction is undefined: no gradient
// (Warp's choice); at infinity the slope is 0.
template <TW_IF_FLOAT(T)> TW_FUNC void adj_atan2(T y_, T x_, T& adj_y, T& adj_x, T adj_ret) {
    typedef detail::calc_t<T> W;
    W y = (W)y_, x = (W)x_, g = (W)adj_ret;
    W s = max(abs(x), abs(y));
    if (!(s > W(0)) || isinf(s)) return;
    W xs = x / s, ys = y / s, k = g / ((xs * xs + ys * ys) * s);
    adj_y += cast<T>(k * xs);
    adj_x -= cast<T>(k * ys);
}

template <TW_IF_FLOAT(T)> TW_FUNC void adj_lerp(T a, T b, T t_, T& adj_a, T& adj_b, T& adj_t, T adj_ret) {
    typedef detail::calc_t<T> W;
    W t = (W)t_, g = (W)adj_ret;
    adj_a += cast<T>(g * (W(1) - t));
    adj_b += cast<T>(g * t);
    adj_t += cast<T>(g * ((W)b - (W)a));
}

// s = t^2 (3 - 2t), t = (x - e0) / (e1 - e0) clamped to [0, 1]: ds/dt = 6 t (1 - t), which is
// 0 at both ends, so clamped (flat) inputs and coincident edges get no gradient.
template <TW_IF_FLOAT(T)>
TW_FUNC void adj_smoothstep(T e0_, T e1_, T x_, T& adj_e0, T& adj_e1, T& adj_x, T adj_ret) {
    typedef detail::calc_t<T> W;
    W e0 = (W)e0_, d = (W)e1_ - e0, t = ((W)x_ - e0) / d;
    if (!(t > W(0) && t < W(1))) return;
    W k = (W)adj_ret * W(6) * t * (W(1) - t) / d;
    adj_x += cast<T>(k);
    adj_e0 += cast<T>(k * (t - W(1)));
    adj_e1 -= cast<T>(k * t);
}

// cast<T>(x): float to float passes the gradient through, converted back; anything to or from
// an integer or bool has none. T is explicit (adjoint_emit), as in the forward call.
template <typename T, typename S> TW_FUNC void adj_cast(S, S& adj_x, T adj_ret) {
    if constexpr (detail::is_float<S>::value && detail::is_float<T>::value) adj_x += cast<S>(adj_ret);
}
}  // namespace tw
