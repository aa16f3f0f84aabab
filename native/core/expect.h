// expect_eq / expect_neq / expect_near: in-kernel checks that print Warp's messages (same text and
// value formats) when they fail, and do nothing else (they are not asserts: the kernel goes on).
#pragma once
#include "control.h"

namespace tw {
namespace detail {
template <typename T> TW_FUNC void expect_report(const char* head, const T& actual, const T& expected) {
    print_guard guard;
    ::printf("%s", head);
    ::printf("\t Expected: ");
    print_one(expected);
    ::printf("\t Actual: ");
    print_one(actual);
}
template <TW_IF_NUM(T)> TW_FUNC T abs_diff(T a, T b) { return abs(a - b); }
template <int N, typename T> TW_FUNC T abs_diff(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    T d = detail::zero<T>();
    for (int i = 0; i < N; ++i) d = max(d, abs(a.c[i] - b.c[i]));
    return d;
}
template <int R, int C, typename T> TW_FUNC T abs_diff(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    T d = detail::zero<T>();
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) d = max(d, abs(a.c[i][j] - b.c[i][j]));
    return d;
}
template <TW_IF_NUM(T)> TW_FUNC const char* diff_label(T) { return "    Absolute difference: "; }
template <int N, typename T> TW_FUNC const char* diff_label(const vec_t<N, T>&) {
    return "    Max absolute difference: ";
}
template <int R, int C, typename T> TW_FUNC const char* diff_label(const mat_t<R, C, T>&) {
    return "    Max absolute difference: ";
}
}  // namespace detail

template <typename T> TW_FUNC void expect_eq(const T& actual, const T& expected) {
    if (!(actual == expected)) detail::expect_report("Error, expect_eq() failed:\n", actual, expected);
}
template <typename T> TW_FUNC void expect_neq(const T& actual, const T& expected) {
    if (actual == expected) detail::expect_report("Error, expect_neq() failed:\n", actual, expected);
}
// Largest componentwise |actual - expected| above the tolerance (a NaN difference never fails).
template <typename V, typename T> TW_FUNC void expect_near(const V& actual, const V& expected, T tolerance) {
    T diff = detail::abs_diff(actual, expected);
    if (!(diff > tolerance)) return;
    detail::print_guard guard;
    ::printf("Error, expect_near() failed with tolerance ");
    detail::print_one(tolerance);
    ::printf("    Expected: ");
    detail::print_one(expected);
    ::printf("    Actual: ");
    detail::print_one(actual);
    ::printf("%s", detail::diff_label(actual));
    detail::print_one(diff);
}
}  // namespace tw
