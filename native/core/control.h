// print / printf / where / select (Warp 1.19 output formats and argument orders).
#pragma once
#include "mat.h"
#include "tuple.h"
#include "../runtime/array.h"

#if TW_IS_CUDA
extern "C" int printf(const char* format, ...);
#else
#include <cstdio>
#endif

namespace tw {
template <typename T> struct quat_t;  // core/quat.h, core/transform.h: printed as Warp prints them
template <typename T> struct transform_t;

namespace detail {
// Host: a print's several printf calls stay together across pool threads, and reach fd 1 at
// once (stdout is fully buffered when redirected, and kernels cannot flush it themselves).
struct print_guard {
#if TW_IS_CUDA
    TW_FUNC print_guard() {}
#else
    print_guard() { flockfile(stdout); }
    ~print_guard() {
        fflush(stdout);
        funlockfile(stdout);
    }
#endif
};

// C varargs take no 16-bit float or bool: pass what printf's conversions expect.
template <typename T> TW_FUNC T printf_arg(T x) { return x; }
TW_FUNC double printf_arg(float x) { return (double)x; }
TW_FUNC double printf_arg(half x) { return (double)(float)x; }
TW_FUNC double printf_arg(bfloat16 x) { return (double)(float)x; }
TW_FUNC int printf_arg(bool x) { return x ? 1 : 0; }
TW_FUNC const char* printf_arg(const char* s) { return s; }

TW_FUNC double print_float(float x) { return (double)x; }
TW_FUNC double print_float(double x) { return (double)(float)x; }  // Warp prints components as float
template <typename T> TW_FUNC double print_float(T x) { return (double)(float)x; }

TW_FUNC void print_one(float x) { ::printf("%g\n", (double)x); }
TW_FUNC void print_one(double x) { ::printf("%g\n", x); }
TW_FUNC void print_one(half x) { ::printf("%g\n", (double)(float)x); }
TW_FUNC void print_one(bfloat16 x) { ::printf("%g\n", (double)(float)x); }
TW_FUNC void print_one(bool x) { ::printf("%s\n", x ? "True" : "False"); }
TW_FUNC void print_one(int8_t x) { ::printf("%d\n", (int)x); }
TW_FUNC void print_one(int16_t x) { ::printf("%d\n", (int)x); }
TW_FUNC void print_one(int32_t x) { ::printf("%d\n", x); }
TW_FUNC void print_one(int64_t x) { ::printf("%lld\n", (long long)x); }
TW_FUNC void print_one(uint8_t x) { ::printf("%u\n", (unsigned)x); }
TW_FUNC void print_one(uint16_t x) { ::printf("%u\n", (unsigned)x); }
TW_FUNC void print_one(uint32_t x) { ::printf("%u\n", x); }
TW_FUNC void print_one(uint64_t x) { ::printf("%llu\n", (unsigned long long)x); }
TW_FUNC void print_one(const char* s) { ::printf("%s\n", s); }
// One printf per line up to 4 values, so GPU threads printing at once do not interleave within a line.
template <typename T> TW_FUNC void print_line(const T* c, int n) {
    switch (n) {
    case 1: ::printf("%g \n", print_float(c[0])); return;
    case 2: ::printf("%g %g \n", print_float(c[0]), print_float(c[1])); return;
    case 3: ::printf("%g %g %g \n", print_float(c[0]), print_float(c[1]), print_float(c[2])); return;
    case 4:
        ::printf("%g %g %g %g \n", print_float(c[0]), print_float(c[1]), print_float(c[2]), print_float(c[3]));
        return;
    default:
        for (int i = 0; i < n; ++i) ::printf("%g ", print_float(c[i]));
        ::printf("\n");
    }
}
template <int N, typename T> TW_FUNC void print_one(const vec_t<N, T>& v) { print_line(v.c, N); }
template <typename T> TW_FUNC void print_one(const quat_t<T>& q) {
    ::printf("%g %g %g %g\n", print_float(q.c[0]), print_float(q.c[1]), print_float(q.c[2]), print_float(q.c[3]));
}
template <typename T> TW_FUNC void print_one(const transform_t<T>& t) {
    ::printf("(%g %g %g) (%g %g %g %g)\n", print_float(t.c[0]), print_float(t.c[1]), print_float(t.c[2]),
             print_float(t.c[3]), print_float(t.c[4]), print_float(t.c[5]), print_float(t.c[6]));
}
template <int R, int C, typename T> TW_FUNC void print_one(const mat_t<R, C, T>& m) {
    for (int i = 0; i < R; ++i) print_line(m.c[i], C);
}
}  // namespace detail

// print(x): one value per line, as Warp formats it (%g for floats, True/False for bools).
template <typename T> TW_FUNC void print(const T& x) {
    detail::print_guard guard;
    detail::print_one(x);
}

// wp.printf(fmt, *args): C printf with the format as written.
template <typename... Ts> TW_FUNC void printf(const char* fmt, Ts... xs) {
    detail::print_guard guard;
    ::printf(fmt, detail::printf_arg(xs)...);
}

// reversed(range(start, stop, step)): (first, stop) of the same elements walked with -step.
template <typename T> TW_FUNC tuple_t<T, T> reverse_range(T start, T stop, T step) {
    bool empty = step == 0 || (step > 0 && start >= stop) || (step < 0 && start <= stop);
    if (empty) return make_tuple<T, T>(start, start);
    T n = step > 0 ? (T)((stop - start - 1) / step) : (T)((stop - start + 1) / step);  // exact: >= 0
    return make_tuple<T, T>((T)(start + n * step), (T)(start - step));
}

// where(cond, if_true, if_false); an array condition means "is not null".
template <typename C, typename T> TW_FUNC T where(C cond, const T& a, const T& b) { return cond ? a : b; }
template <typename A, int D, typename T> TW_FUNC T where(const array_t<A, D>& arr, const T& a, const T& b) {
    return arr.data ? a : b;
}
// select(cond, if_false, if_true): Warp's older spelling, arguments the other way round.
template <typename C, typename T> TW_FUNC T select(C cond, const T& f, const T& t) { return cond ? t : f; }
template <typename A, int D, typename T> TW_FUNC T select(const array_t<A, D>& arr, const T& f, const T& t) {
    return arr.data ? t : f;
}

// where/select adjoints are emitted inline (builtins/control.py), where tw::adj_accum sees the
// overloads emitted for each @wp.struct: the chosen value gets the gradient, the condition none.
namespace detail {
template <typename C> TW_FUNC bool truthy(const C& c) { return c ? true : false; }
template <typename A, int D> TW_FUNC bool truthy(const array_t<A, D>& arr) { return arr.data != nullptr; }
}  // namespace detail
}  // namespace tw
