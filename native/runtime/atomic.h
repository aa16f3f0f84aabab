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
// Hardware atomics on CT; signed 64-bit add/exch go through the unsigned form (same bits).
#define TW_NATIVE(NAME, OP, T, CT) \
    TW_FUNC T NAME(T* addr, T v) { TW_ATOMIC_SKIP(T()); return (T)OP((CT*)addr, (CT)v); }
TW_NATIVE(atomic_add, atomicAdd, int32_t, int)
TW_NATIVE(atomic_add, atomicAdd, uint32_t, unsigned int)
TW_NATIVE(atomic_add, atomicAdd, int64_t, unsigned long long)
TW_NATIVE(atomic_add, atomicAdd, uint64_t, unsigned long long)
TW_NATIVE(atomic_add, atomicAdd, float, float)
TW_NATIVE(atomic_add, atomicAdd, double, double)  // sm_60+
TW_NATIVE(atomic_min, atomicMin, int32_t, int)
TW_NATIVE(atomic_min, atomicMin, uint32_t, unsigned int)
TW_NATIVE(atomic_min, atomicMin, int64_t, long long)
TW_NATIVE(atomic_min, atomicMin, uint64_t, unsigned long long)
TW_NATIVE(atomic_max, atomicMax, int32_t, int)
TW_NATIVE(atomic_max, atomicMax, uint32_t, unsigned int)
TW_NATIVE(atomic_max, atomicMax, int64_t, long long)
TW_NATIVE(atomic_max, atomicMax, uint64_t, unsigned long long)
TW_NATIVE(atomic_exch, atomicExch, int32_t, int)
TW_NATIVE(atomic_exch, atomicExch, uint32_t, unsigned int)
TW_NATIVE(atomic_exch, atomicExch, int64_t, unsigned long long)
TW_NATIVE(atomic_exch, atomicExch, uint64_t, unsigned long long)
TW_NATIVE(atomic_exch, atomicExch, float, float)
#undef TW_NATIVE
TW_FUNC double atomic_exch(double* addr, double v) {
    TW_ATOMIC_SKIP(double());
    unsigned long long old = atomicExch((detail::ull*)addr, (detail::ull)__double_as_longlong(v));
    return __longlong_as_double((long long)old);
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
// What the hardware lacks (float/double min/max, half add/min/max): CAS loops.
#define TW_CAS_OP(NAME, OP, T) \
    TW_FUNC T NAME(T* addr, T v) { TW_ATOMIC_SKIP(T()); return detail::cas_loop(addr, v, detail::OP()); }
TW_CAS_OP(atomic_add, op_add, half)
TW_CAS_OP(atomic_min, op_min, float)
TW_CAS_OP(atomic_min, op_min, double)
TW_CAS_OP(atomic_min, op_min, half)
TW_CAS_OP(atomic_max, op_max, float)
TW_CAS_OP(atomic_max, op_max, double)
TW_CAS_OP(atomic_max, op_max, half)
#undef TW_CAS_OP
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
