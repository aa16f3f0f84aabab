// Atomics returning the previous value: atomic_add/sub/min/max/cas/exch on int32, uint32,
// int64, uint64, float, double and half; add/sub/min/max also componentwise on vec_t/mat_t.
// Relaxed ordering everywhere, as on the GPU; the launch boundary is the synchronisation point.
#pragma once
#include "../core/mat.h"

// In debug builds an out-of-bounds tw::address() is nullptr: skip the update (already reported).
#if defined(TW_DEBUG)
#define TW_ATOMIC_SKIP(RET) if (!addr) return RET
#else
#define TW_ATOMIC_SKIP(RET) (void)0
#endif

namespace tw {
namespace detail {
template <typename T> struct is_atomic { static constexpr bool value = false; };
template <> struct is_atomic<int32_t> { static constexpr bool value = true; };
template <> struct is_atomic<uint32_t> { static constexpr bool value = true; };
template <> struct is_atomic<int64_t> { static constexpr bool value = true; };
template <> struct is_atomic<uint64_t> { static constexpr bool value = true; };
template <> struct is_atomic<float> { static constexpr bool value = true; };
template <> struct is_atomic<double> { static constexpr bool value = true; };
template <> struct is_atomic<half> { static constexpr bool value = true; };

// Raw bits, so CAS loops compare bit patterns (a NaN never equals itself).
TW_FUNC uint32_t raw(float x) { return f32_bits(x); }
TW_FUNC uint64_t raw(double x) { return f64_bits(x); }
TW_FUNC uint16_t raw(half x) { return x.bits; }
template <TW_IF_INT(T)> TW_FUNC T raw(T x) { return x; }

// Bitwise compare-and-swap returning the previous value.
#if TW_IS_CUDA
typedef unsigned long long ull;
TW_FUNC int32_t cas(int32_t* a, int32_t c, int32_t v) { return atomicCAS(a, c, v); }
TW_FUNC uint32_t cas(uint32_t* a, uint32_t c, uint32_t v) { return atomicCAS(a, c, v); }
TW_FUNC int64_t cas(int64_t* a, int64_t c, int64_t v) {
    return (int64_t)atomicCAS((ull*)a, (ull)c, (ull)v);
}
TW_FUNC uint64_t cas(uint64_t* a, uint64_t c, uint64_t v) { return atomicCAS((ull*)a, c, v); }
TW_FUNC float cas(float* a, float c, float v) {
    return __int_as_float(atomicCAS((int*)a, __float_as_int(c), __float_as_int(v)));
}
TW_FUNC double cas(double* a, double c, double v) {
    return __longlong_as_double(
        (long long)atomicCAS((ull*)a, (ull)__double_as_longlong(c), (ull)__double_as_longlong(v)));
}
TW_FUNC half cas(half* a, half c, half v) {  // 16-bit atomicCAS: sm_70+
    return half::from_bits(atomicCAS((unsigned short*)a, c.bits, v.bits));
}
#else
template <typename T> TW_FUNC T cas(T* a, T c, T v) {
    __atomic_compare_exchange(a, &c, &v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return c;  // on failure the builtin wrote the current value into c
}
#endif

// Read-modify-write through CAS for what the hardware lacks (float min/max, half, host floats).
struct op_add { template <typename T> TW_FUNC T operator()(T a, T b) const { return a + b; } };
struct op_min { template <typename T> TW_FUNC T operator()(T a, T b) const { return b < a ? b : a; } };
struct op_max { template <typename T> TW_FUNC T operator()(T a, T b) const { return b > a ? b : a; } };
template <typename T, typename Op> TW_FUNC T cas_loop(T* a, T v, Op op) {
    T old = *a;
    for (;;) {
        T next = op(old, v);
        if (raw(next) == raw(old)) return old;  // nothing to write (min/max already satisfied)
        T prev = cas(a, old, next);
        if (raw(prev) == raw(old)) return old;
        old = prev;
    }
}
}  // namespace detail

#if TW_IS_CUDA
// Native atomics; 64-bit signed add goes through the unsigned form (same two's-complement bits).
TW_FUNC int32_t atomic_add(int32_t* addr, int32_t v) { TW_ATOMIC_SKIP(int32_t()); return atomicAdd(addr, v); }
TW_FUNC uint32_t atomic_add(uint32_t* addr, uint32_t v) { TW_ATOMIC_SKIP(uint32_t()); return atomicAdd(addr, v); }
TW_FUNC int64_t atomic_add(int64_t* addr, int64_t v) {
    TW_ATOMIC_SKIP(int64_t());
    return (int64_t)atomicAdd((detail::ull*)addr, (detail::ull)v);
}
TW_FUNC uint64_t atomic_add(uint64_t* addr, uint64_t v) {
    TW_ATOMIC_SKIP(uint64_t());
    return atomicAdd((detail::ull*)addr, v);
}
TW_FUNC float atomic_add(float* addr, float v) { TW_ATOMIC_SKIP(float()); return atomicAdd(addr, v); }
TW_FUNC double atomic_add(double* addr, double v) { TW_ATOMIC_SKIP(double()); return atomicAdd(addr, v); }
#define TW_NATIVE_MINMAX(T, CT)                                                                          \
    TW_FUNC T atomic_min(T* addr, T v) { TW_ATOMIC_SKIP(T()); return (T)atomicMin((CT*)addr, (CT)v); } \
    TW_FUNC T atomic_max(T* addr, T v) { TW_ATOMIC_SKIP(T()); return (T)atomicMax((CT*)addr, (CT)v); }
TW_NATIVE_MINMAX(int32_t, int)
TW_NATIVE_MINMAX(uint32_t, unsigned int)
TW_NATIVE_MINMAX(int64_t, long long)
TW_NATIVE_MINMAX(uint64_t, unsigned long long)
#undef TW_NATIVE_MINMAX
TW_FUNC int32_t atomic_exch(int32_t* addr, int32_t v) { TW_ATOMIC_SKIP(int32_t()); return atomicExch(addr, v); }
TW_FUNC uint32_t atomic_exch(uint32_t* addr, uint32_t v) { TW_ATOMIC_SKIP(uint32_t()); return atomicExch(addr, v); }
TW_FUNC int64_t atomic_exch(int64_t* addr, int64_t v) {
    TW_ATOMIC_SKIP(int64_t());
    return (int64_t)atomicExch((detail::ull*)addr, (detail::ull)v);
}
TW_FUNC uint64_t atomic_exch(uint64_t* addr, uint64_t v) {
    TW_ATOMIC_SKIP(uint64_t());
    return atomicExch((detail::ull*)addr, v);
}
TW_FUNC float atomic_exch(float* addr, float v) { TW_ATOMIC_SKIP(float()); return atomicExch(addr, v); }
TW_FUNC double atomic_exch(double* addr, double v) {
    TW_ATOMIC_SKIP(double());
    return __longlong_as_double((long long)atomicExch((detail::ull*)addr, (detail::ull)__double_as_longlong(v)));
}
TW_FUNC half atomic_exch(half* addr, half v) {
    TW_ATOMIC_SKIP(half());
    half old = *addr;
    for (;;) {
        half prev = detail::cas(addr, old, v);
        if (prev.bits == old.bits) return old;
        old = prev;
    }
}
TW_FUNC half atomic_add(half* addr, half v) { TW_ATOMIC_SKIP(half()); return detail::cas_loop(addr, v, detail::op_add()); }
#define TW_CAS_MINMAX(T)                                                                              \
    TW_FUNC T atomic_min(T* addr, T v) { TW_ATOMIC_SKIP(T()); return detail::cas_loop(addr, v, detail::op_min()); } \
    TW_FUNC T atomic_max(T* addr, T v) { TW_ATOMIC_SKIP(T()); return detail::cas_loop(addr, v, detail::op_max()); }
TW_CAS_MINMAX(float)
TW_CAS_MINMAX(double)
TW_CAS_MINMAX(half)
#undef TW_CAS_MINMAX
#else
// Host: GCC __atomic builtins; integer add is a native fetch-add, the rest CAS loops.
#define TW_IF_ATOMIC(T) typename T, detail::enable_if_t<detail::is_atomic<T>::value, int> = 0
template <TW_IF_ATOMIC(T)> TW_FUNC T atomic_add(T* addr, T v) {
    TW_ATOMIC_SKIP(T());
    if constexpr (detail::is_int<T>::value) return __atomic_fetch_add(addr, v, __ATOMIC_RELAXED);
    else return detail::cas_loop(addr, v, detail::op_add());
}
template <TW_IF_ATOMIC(T)> TW_FUNC T atomic_min(T* addr, T v) {
    TW_ATOMIC_SKIP(T());
    return detail::cas_loop(addr, v, detail::op_min());
}
template <TW_IF_ATOMIC(T)> TW_FUNC T atomic_max(T* addr, T v) {
    TW_ATOMIC_SKIP(T());
    return detail::cas_loop(addr, v, detail::op_max());
}
template <TW_IF_ATOMIC(T)> TW_FUNC T atomic_exch(T* addr, T v) {
    TW_ATOMIC_SKIP(T());
    T old;
    __atomic_exchange(addr, &v, &old, __ATOMIC_RELAXED);
    return old;
}
#undef TW_IF_ATOMIC
#endif

// Shared by both targets.
template <typename T, detail::enable_if_t<detail::is_atomic<T>::value, int> = 0>
TW_FUNC T atomic_sub(T* addr, T v) {
    return atomic_add(addr, (T)(-v));  // unsigned: wraps to the same bits as subtraction
}
template <typename T, detail::enable_if_t<detail::is_atomic<T>::value, int> = 0>
TW_FUNC T atomic_cas(T* addr, T compare, T v) {
    TW_ATOMIC_SKIP(T());
    return detail::cas(addr, compare, v);
}

// Componentwise on vectors and matrices (each component atomic, the whole not).
#define TW_ATOMIC_AGG(NAME)                                                                   \
    template <int N, typename T> TW_FUNC vec_t<N, T> NAME(vec_t<N, T>* addr, vec_t<N, T> v) { \
        vec_t<N, T> old;                                                                      \
        TW_ATOMIC_SKIP(old);                                                 \
        for (int i = 0; i < N; ++i) old.c[i] = NAME(&addr->c[i], v.c[i]);                     \
        return old;                                                                           \
    }                                                                                         \
    template <int R, int C, typename T>                                                       \
    TW_FUNC mat_t<R, C, T> NAME(mat_t<R, C, T>* addr, mat_t<R, C, T> v) {                     \
        mat_t<R, C, T> old;                                                                   \
        TW_ATOMIC_SKIP(old);                                      \
        for (int i = 0; i < R; ++i)                                                           \
            for (int j = 0; j < C; ++j) old.c[i][j] = NAME(&addr->c[i][j], v.c[i][j]);        \
        return old;                                                                           \
    }
TW_ATOMIC_AGG(atomic_add)
TW_ATOMIC_AGG(atomic_sub)
TW_ATOMIC_AGG(atomic_min)
TW_ATOMIC_AGG(atomic_max)
#undef TW_ATOMIC_AGG
}  // namespace tw
