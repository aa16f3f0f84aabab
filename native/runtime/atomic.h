// Atomics returning the previous value, on every numeric scalar type (8/16-bit integers too):
// atomic_add/sub/min/max/exch/cas everywhere, atomic_and/or/xor on integers; componentwise on
// vec_t/mat_t (each component atomic, the whole not). Relaxed ordering everywhere, as on the GPU;
// the launch boundary is the synchronisation point.
#pragma once
#include "../core/mat.h"

// tw::address() is nullptr on a null array (and out of bounds in debug builds, already reported):
// skip the update.
#define TW_ATOMIC_SKIP(RET) if (!addr) return RET

namespace tw {
namespace detail {
template <typename T> struct is_atomic { static constexpr bool value = is_num<T>::value; };

// Raw bits, so CAS loops compare bit patterns (a NaN never equals itself).
TW_FUNC uint32_t raw(float x) { return f32_bits(x); }
TW_FUNC uint64_t raw(double x) { return f64_bits(x); }
template <TW_IF_F16(T)> TW_FUNC uint16_t raw(T x) { return x.bits; }
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
// 16-bit atomicCAS: sm_70+.
template <TW_IF_F16(T)> TW_FUNC T cas(T* a, T c, T v) {
    return T::from_bits(atomicCAS((unsigned short*)a, c.bits, v.bits));
}
TW_FUNC uint16_t cas(uint16_t* a, uint16_t c, uint16_t v) { return atomicCAS((unsigned short*)a, c, v); }
TW_FUNC int16_t cas(int16_t* a, int16_t c, int16_t v) {
    return (int16_t)atomicCAS((unsigned short*)a, (unsigned short)c, (unsigned short)v);
}
// No 8-bit CAS on the GPU: swap the byte inside its aligned 32-bit word (allocations are at least
// 4-byte granular, so the word never leaves the allocation).
TW_FUNC uint8_t cas(uint8_t* a, uint8_t c, uint8_t v) {
    unsigned int* w = (unsigned int*)((ull)a & ~(ull)3);
    const unsigned int shift = (unsigned int)((ull)a & 3) * 8, mask = 0xffu << shift;
    unsigned int old = *(volatile unsigned int*)w;
    for (;;) {
        const uint8_t cur = (uint8_t)((old & mask) >> shift);
        if (cur != c) return cur;
        const unsigned int prev = atomicCAS(w, old, (old & ~mask) | ((unsigned int)v << shift));
        if (prev == old) return c;
        old = prev;
    }
}
TW_FUNC int8_t cas(int8_t* a, int8_t c, int8_t v) { return (int8_t)cas((uint8_t*)a, (uint8_t)c, (uint8_t)v); }
#else
template <typename T> TW_FUNC T cas(T* a, T c, T v) {
    __atomic_compare_exchange(a, &c, &v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return c;  // on failure the builtin wrote the current value into c
}
#endif

// The read-modify-write operations, as tags for rmw() below.
struct op_add { template <typename T> TW_FUNC T operator()(T a, T b) const { return (T)(a + b); } };
struct op_min { template <typename T> TW_FUNC T operator()(T a, T b) const { return b < a ? b : a; } };
struct op_max { template <typename T> TW_FUNC T operator()(T a, T b) const { return b > a ? b : a; } };
struct op_exch { template <typename T> TW_FUNC T operator()(T, T b) const { return b; } };
struct op_and { template <typename T> TW_FUNC T operator()(T a, T b) const { return (T)(a & b); } };
struct op_or { template <typename T> TW_FUNC T operator()(T a, T b) const { return (T)(a | b); } };
struct op_xor { template <typename T> TW_FUNC T operator()(T a, T b) const { return (T)(a ^ b); } };

// Generic read-modify-write: a CAS loop. Hardware forms below are non-templates, so they win.
template <typename T, typename Op> TW_FUNC T rmw(T* a, T v, Op op) {
    T old = *a;
    for (;;) {
        T next = op(old, v);
        if (raw(next) == raw(old)) return old;  // nothing to write (min/max already satisfied)
        T prev = cas(a, old, next);
        if (raw(prev) == raw(old)) return old;
        old = prev;
    }
}

#if TW_IS_CUDA
// Hardware atomics on CT; signed 64-bit add/exch/bit ops go through the unsigned form (same bits).
#define TW_HW(OP, FN, T, CT) \
    TW_FUNC T rmw(T* a, T v, OP) { return (T)FN((CT*)a, (CT)v); }
#define TW_HW_INTS(OP, FN)                       \
    TW_HW(OP, FN, int32_t, int)                  \
    TW_HW(OP, FN, uint32_t, unsigned int)        \
    TW_HW(OP, FN, int64_t, unsigned long long)   \
    TW_HW(OP, FN, uint64_t, unsigned long long)
TW_HW_INTS(op_add, atomicAdd)
TW_HW_INTS(op_exch, atomicExch)
TW_HW_INTS(op_and, atomicAnd)
TW_HW_INTS(op_or, atomicOr)
TW_HW_INTS(op_xor, atomicXor)
TW_HW(op_add, atomicAdd, float, float)
TW_HW(op_add, atomicAdd, double, double)  // sm_60+
TW_HW(op_exch, atomicExch, float, float)
TW_HW(op_min, atomicMin, int32_t, int)
TW_HW(op_min, atomicMin, uint32_t, unsigned int)
TW_HW(op_min, atomicMin, int64_t, long long)
TW_HW(op_min, atomicMin, uint64_t, unsigned long long)
TW_HW(op_max, atomicMax, int32_t, int)
TW_HW(op_max, atomicMax, uint32_t, unsigned int)
TW_HW(op_max, atomicMax, int64_t, long long)
TW_HW(op_max, atomicMax, uint64_t, unsigned long long)
#undef TW_HW_INTS
#undef TW_HW
#else
// Host: GCC's __atomic builtins on every integer width (lock xadd/xchg/and/or/xor).
#define TW_HW_INT(T)                                                                                   \
    TW_FUNC T rmw(T* a, T v, op_add) { return __atomic_fetch_add(a, v, __ATOMIC_RELAXED); }           \
    TW_FUNC T rmw(T* a, T v, op_exch) { return __atomic_exchange_n(a, v, __ATOMIC_RELAXED); }         \
    TW_FUNC T rmw(T* a, T v, op_and) { return __atomic_fetch_and(a, v, __ATOMIC_RELAXED); }           \
    TW_FUNC T rmw(T* a, T v, op_or) { return __atomic_fetch_or(a, v, __ATOMIC_RELAXED); }             \
    TW_FUNC T rmw(T* a, T v, op_xor) { return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED); }
TW_HW_INT(int8_t)
TW_HW_INT(int16_t)
TW_HW_INT(int32_t)
TW_HW_INT(int64_t)
TW_HW_INT(uint8_t)
TW_HW_INT(uint16_t)
TW_HW_INT(uint32_t)
TW_HW_INT(uint64_t)
#undef TW_HW_INT
#endif
}  // namespace detail

namespace detail {
// A thread's own local array (wp.zeros in a kernel) lives in GPU local memory, which has no
// atomics (an atomic there is an illegal access); no other thread sees it, so a plain
// read-modify-write is exact.
template <typename T> TW_FUNC bool thread_private(const T* p) {
#if TW_IS_CUDA
    return __isLocal(p);
#else
    (void)p;
    return false;
#endif
}
}  // namespace detail

#define TW_IF_ATOMIC(T) typename T, detail::enable_if_t<detail::is_atomic<T>::value, int> = 0
#define TW_IF_ATOMIC_INT(T) typename T, detail::enable_if_t<detail::is_int<T>::value, int> = 0
#define TW_ATOMIC_OP(NAME, OP, IF)                                \
    template <IF(T)> TW_FUNC T NAME(T* addr, T v) {              \
        TW_ATOMIC_SKIP(T());                                      \
        if (detail::thread_private(addr)) {                       \
            T old = *addr;                                        \
            *addr = detail::OP()(old, v);                         \
            return old;                                           \
        }                                                         \
        return detail::rmw(addr, v, detail::OP());                \
    }
TW_ATOMIC_OP(atomic_add, op_add, TW_IF_ATOMIC)
TW_ATOMIC_OP(atomic_min, op_min, TW_IF_ATOMIC)
TW_ATOMIC_OP(atomic_max, op_max, TW_IF_ATOMIC)
TW_ATOMIC_OP(atomic_exch, op_exch, TW_IF_ATOMIC)
TW_ATOMIC_OP(atomic_and, op_and, TW_IF_ATOMIC_INT)
TW_ATOMIC_OP(atomic_or, op_or, TW_IF_ATOMIC_INT)
TW_ATOMIC_OP(atomic_xor, op_xor, TW_IF_ATOMIC_INT)
#undef TW_ATOMIC_OP
template <TW_IF_ATOMIC(T)> TW_FUNC T atomic_sub(T* addr, T v) {
    return atomic_add(addr, (T)(-v));  // unsigned: wraps to the same bits as subtraction
}
template <TW_IF_ATOMIC(T)> TW_FUNC T atomic_cas(T* addr, T compare, T v) {
    TW_ATOMIC_SKIP(T());
    if (detail::thread_private(addr)) {
        T old = *addr;
        if (detail::raw(old) == detail::raw(compare)) *addr = v;  // bitwise, as the hardware compares
        return old;
    }
    return detail::cas(addr, compare, v);
}
#undef TW_IF_ATOMIC_INT
#undef TW_IF_ATOMIC

// What a thread adds to one address over the tasks or blocks it runs, handed on (Flushing::flush)
// when the address changes and at the thread's end (tilewarp/tiling/combine.py).
template <typename T, typename Flushing> struct address_run {
    T* at = nullptr;
    T sum{};
    TW_FUNC void add(T* p, const T& v) {
        // (said unlikely: the run goes on falling through, one taken branch a task fewer on the CPU)
        if (__builtin_expect(p != at, 0)) {
            static_cast<Flushing*>(this)->flush();
            at = p;
            sum = v;
            return;
        }
        sum = tw::add(sum, v);
    }
};
// Atomic adds combined: one atomic per run of equal addresses.
template <typename T> struct atomic_combiner : address_run<T, atomic_combiner<T>> {
    TW_FUNC void flush() {
        if (this->at) atomic_add(this->at, this->sum);
        this->at = nullptr;
    }
};
// A SIMT kernel's adds to an array it uses for nothing else, whose old values nobody reads: the
// thread's combiner takes them (a null address, a null array's, starts a run that adds nowhere).
template <typename T> TW_FUNC void atomic_add_combined(atomic_combiner<T>& c, T* p, const T& v) { c.add(p, v); }
template <typename T> TW_FUNC void atomic_sub_combined(atomic_combiner<T>& c, T* p, const T& v) {
    c.add(p, (T)(-v));  // unsigned: wraps to the same bits as subtraction, as atomic_sub does
}

// Componentwise on vectors and matrices (each component atomic, the whole not).
#define TW_ATOMIC_AGG(NAME)                                                                   \
    template <int N, typename T> TW_FUNC vec_t<N, T> NAME(vec_t<N, T>* addr, vec_t<N, T> v) { \
        vec_t<N, T> old;                                                                      \
        TW_ATOMIC_SKIP(old);                                                                  \
        for (int i = 0; i < N; ++i) old.c[i] = NAME(&addr->c[i], v.c[i]);                     \
        return old;                                                                           \
    }                                                                                         \
    template <int R, int C, typename T>                                                       \
    TW_FUNC mat_t<R, C, T> NAME(mat_t<R, C, T>* addr, mat_t<R, C, T> v) {                     \
        mat_t<R, C, T> old;                                                                   \
        TW_ATOMIC_SKIP(old);                                                                  \
        for (int i = 0; i < R; ++i)                                                           \
            for (int j = 0; j < C; ++j) old.c[i][j] = NAME(&addr->c[i][j], v.c[i][j]);        \
        return old;                                                                           \
    }
TW_ATOMIC_AGG(atomic_add)
TW_ATOMIC_AGG(atomic_sub)
TW_ATOMIC_AGG(atomic_min)
TW_ATOMIC_AGG(atomic_max)
TW_ATOMIC_AGG(atomic_exch)
TW_ATOMIC_AGG(atomic_and)
TW_ATOMIC_AGG(atomic_or)
TW_ATOMIC_AGG(atomic_xor)
#undef TW_ATOMIC_AGG

// Compare-and-swap of a vector/matrix: when every component equals `compare` (as Warp's CPU code
// compares the whole value), each component is swapped by its own CAS; otherwise nothing is written.
namespace detail {
template <typename T> TW_FUNC T* components(T* p) { return p; }
template <int N, typename T> TW_FUNC T* components(vec_t<N, T>* p) { return p->c; }
template <int R, int C, typename T> TW_FUNC T* components(mat_t<R, C, T>* p) { return &p->c[0][0]; }
template <typename V, typename T, int K> TW_FUNC V cas_components(V* addr, V compare, V v) {
    V old = *addr;
    T* o = components(&old);
    const T* c = components(&compare);
    for (int i = 0; i < K; ++i)
        if (raw(o[i]) != raw(c[i])) return old;
    T* a = components(addr);
    const T* n = components(&v);
    for (int i = 0; i < K; ++i) o[i] = atomic_cas(&a[i], c[i], n[i]);
    return old;
}
}  // namespace detail
template <int N, typename T>
TW_FUNC vec_t<N, T> atomic_cas(vec_t<N, T>* addr, vec_t<N, T> compare, vec_t<N, T> v) {
    typedef vec_t<N, T> V;
    TW_ATOMIC_SKIP(V());
    return detail::cas_components<V, T, N>(addr, compare, v);
}
template <int R, int C, typename T>
TW_FUNC mat_t<R, C, T> atomic_cas(mat_t<R, C, T>* addr, mat_t<R, C, T> compare, mat_t<R, C, T> v) {
    typedef mat_t<R, C, T> M;
    TW_ATOMIC_SKIP(M());
    return detail::cas_components<M, T, R * C>(addr, compare, v);
}
}  // namespace tw
