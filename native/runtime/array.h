// Strided arrays: tw::array_t<T, D> = { T* data; T* grad; int32 shape[D]; int64 strides[D] }.
// Strides are in bytes, so views with any layout (transposes, slices) share one code path.
#pragma once
#include "../core/vec.h"

namespace tw {
template <typename T, int D> struct array_t {
    T* data;
    T* grad;
    int32_t shape[D];
    int64_t strides[D];
};

namespace detail {
TW_FUNC char* byte_ptr(const void* p) { return (char*)p; }

// True if every index is inside the shape; in debug mode the first failure is recorded.
template <typename T, int D>
TW_FUNC bool in_bounds(const array_t<T, D>& a, const int64_t (&idx)[D], src_loc loc) {
#if defined(TW_DEBUG)
    for (int d = 0; d < D; ++d)
        if (idx[d] < 0 || idx[d] >= a.shape[d]) {
            report_error(ERR_BOUNDS, loc.line, loc.arg, d, idx[d], a.shape[d]);
            return false;
        }
#else
    (void)a; (void)idx; (void)loc;
#endif
    return true;
}
template <typename T, int D> TW_FUNC T* offset(T* base, const array_t<T, D>& a, const int64_t (&idx)[D]) {
    int64_t off = 0;
    for (int d = 0; d < D; ++d) off += idx[d] * a.strides[d];
    return (T*)(byte_ptr(base) + off);
}
}  // namespace detail

// Element access. The src_loc overloads let debug code name the line and array; without
// TW_DEBUG both compile to the same plain byte arithmetic. Out of bounds (debug): address()
// gives nullptr, load() gives T() and store() does nothing, so the kernel runs to the end.
template <typename T, int D, typename... I>
TW_FUNC T* address(src_loc loc, const array_t<T, D>& a, I... i) {
    static_assert(sizeof...(I) == D, "index count must match the array's ndim");
    const int64_t idx[D] = {(int64_t)i...};
    if (!detail::in_bounds(a, idx, loc)) return nullptr;
    return detail::offset(a.data, a, idx);
}
template <typename T, int D, typename... I> TW_FUNC T* address(const array_t<T, D>& a, I... i) {
    return address(src_loc{-1, -1}, a, i...);
}
// Same element in the gradient buffer; nullptr when the array carries no gradient.
template <typename T, int D, typename... I>
TW_FUNC T* grad_address(src_loc loc, const array_t<T, D>& a, I... i) {
    static_assert(sizeof...(I) == D, "index count must match the array's ndim");
    const int64_t idx[D] = {(int64_t)i...};
    if (!a.grad || !detail::in_bounds(a, idx, loc)) return nullptr;
    return detail::offset(a.grad, a, idx);
}
template <typename T, int D, typename... I> TW_FUNC T* grad_address(const array_t<T, D>& a, I... i) {
    return grad_address(src_loc{-1, -1}, a, i...);
}
template <typename T, int D, typename... I> TW_FUNC T load(src_loc loc, const array_t<T, D>& a, I... i) {
#if defined(TW_DEBUG)
    const T* p = address(loc, a, i...);
    return p ? *p : T();
#else
    return *address(loc, a, i...);
#endif
}
template <typename T, int D, typename... I> TW_FUNC T load(const array_t<T, D>& a, I... i) {
    return load(src_loc{-1, -1}, a, i...);
}

// store(arr, i0[, i1, i2, i3], value): the value never takes part in deducing T.
namespace detail {
template <typename T> struct type_identity { typedef T type; };
template <typename T, int D>
TW_FUNC void store_at(src_loc loc, const array_t<T, D>& a, const int64_t (&idx)[D], const T& v) {
#if defined(TW_DEBUG)
    if (!in_bounds(a, idx, loc)) return;
#else
    (void)loc;
#endif
    *offset(a.data, a, idx) = v;
}
}  // namespace detail
#define TW_V const typename detail::type_identity<T>::type& v
template <typename T> TW_FUNC void store(src_loc l, const array_t<T, 1>& a, int64_t i0, TW_V) {
    detail::store_at(l, a, {i0}, v);
}
template <typename T> TW_FUNC void store(src_loc l, const array_t<T, 2>& a, int64_t i0, int64_t i1, TW_V) {
    detail::store_at(l, a, {i0, i1}, v);
}
template <typename T>
TW_FUNC void store(src_loc l, const array_t<T, 3>& a, int64_t i0, int64_t i1, int64_t i2, TW_V) {
    detail::store_at(l, a, {i0, i1, i2}, v);
}
template <typename T>
TW_FUNC void store(src_loc l, const array_t<T, 4>& a, int64_t i0, int64_t i1, int64_t i2, int64_t i3, TW_V) {
    detail::store_at(l, a, {i0, i1, i2, i3}, v);
}
template <typename T> TW_FUNC void store(const array_t<T, 1>& a, int64_t i0, TW_V) {
    detail::store_at(src_loc{-1, -1}, a, {i0}, v);
}
template <typename T> TW_FUNC void store(const array_t<T, 2>& a, int64_t i0, int64_t i1, TW_V) {
    detail::store_at(src_loc{-1, -1}, a, {i0, i1}, v);
}
template <typename T> TW_FUNC void store(const array_t<T, 3>& a, int64_t i0, int64_t i1, int64_t i2, TW_V) {
    detail::store_at(src_loc{-1, -1}, a, {i0, i1, i2}, v);
}
template <typename T>
TW_FUNC void store(const array_t<T, 4>& a, int64_t i0, int64_t i1, int64_t i2, int64_t i3, TW_V) {
    detail::store_at(src_loc{-1, -1}, a, {i0, i1, i2, i3}, v);
}
#undef TW_V

// arr[i] on a D > 1 array: the sub-array at i along the first dimension.
template <typename T, int D> TW_FUNC array_t<T, D - 1> view(src_loc loc, const array_t<T, D>& a, int64_t i) {
    static_assert(D > 1, "view() needs at least 2 dimensions");
    array_t<T, D - 1> r;
#if defined(TW_DEBUG)
    if (i < 0 || i >= a.shape[0]) {
        report_error(ERR_BOUNDS, loc.line, loc.arg, 0, i, a.shape[0]);
        i = 0;  // keep the view well-formed; its accesses are already flagged
    }
#else
    (void)loc;
#endif
    const int64_t off = i * a.strides[0];
    r.data = (T*)(detail::byte_ptr(a.data) + off);
    r.grad = a.grad ? (T*)(detail::byte_ptr(a.grad) + off) : nullptr;
    for (int d = 1; d < D; ++d) {
        r.shape[d - 1] = a.shape[d];
        r.strides[d - 1] = a.strides[d];
    }
    return r;
}
template <typename T, int D> TW_FUNC array_t<T, D - 1> view(const array_t<T, D>& a, int64_t i) {
    return view(src_loc{-1, -1}, a, i);
}

template <typename T, int D> TW_FUNC vec_t<D, int32_t> shape(const array_t<T, D>& a) {
    vec_t<D, int32_t> r;
    for (int d = 0; d < D; ++d) r.c[d] = a.shape[d];
    return r;
}
template <typename T, int D> TW_FUNC int32_t len(const array_t<T, D>& a) { return a.shape[0]; }
}  // namespace tw
