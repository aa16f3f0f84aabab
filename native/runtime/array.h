// Strided arrays: tw::array_t<T, D> = { T* data; T* grad; int32 shape[D]; int64 strides[D] }.
// Strides are in bytes, so views with any layout (transposes, slices) share one code path.
// tw::indexedarray_t<T, D> = { array_t<T, D> arr; int32* indices[D]; int32 shape[D] }: dimension d
// goes through indices[d] when it is not null (Warp's wp.indexedarray).
#pragma once
#include "../core/vec.h"

namespace tw {
template <typename T, int D> struct array_t {
    typedef T value_type;
    T* data;
    T* grad;
    int32_t shape[D];
    int64_t strides[D];
};

template <typename T, int D> struct indexedarray_t {
    typedef T value_type;
    array_t<T, D> arr;
    int32_t* indices[D];  // per dimension; nullptr: that dimension is not indexed
    int32_t shape[D];     // len(indices[d]) where indexed, else arr.shape[d]
};

namespace detail {
TW_FUNC char* byte_ptr(const void* p) { return (char*)p; }

// Negative indices count from the end, as in Warp (a[-1] is the last element). In debug builds
// an index outside [-extent, extent) records the first failure and gives false. `dim0` is the
// first dimension's number in the array the user indexed (views peel dimensions off).
template <int D>
TW_FUNC bool wrap(const int32_t (&shape)[D], int64_t (&idx)[D], src_loc loc, int dim0 = 0) {
    for (int d = 0; d < D; ++d) {
        int64_t i = idx[d];
        if (i < 0) i += shape[d];
#if defined(TW_DEBUG)
        if (i < 0 || i >= shape[d]) {
            report_error(ERR_BOUNDS, loc.site, loc.arg, dim0 + d, idx[d], shape[d]);
            return false;
        }
#else
        (void)loc; (void)dim0;
#endif
        idx[d] = i;
    }
    return true;
}
// Indexed dimensions: the position in the index array becomes the data array's index.
template <typename T, int D>
TW_FUNC bool map_indices(const indexedarray_t<T, D>& a, int64_t (&idx)[D], src_loc loc, int dim0 = 0) {
    for (int d = 0; d < D; ++d) {
        if (!a.indices[d]) continue;
        const int64_t j = a.indices[d][idx[d]];
#if defined(TW_DEBUG)
        if (j < 0 || j >= a.arr.shape[d]) {
            report_error(ERR_INDEXED, loc.site, loc.arg, dim0 + d, j, a.arr.shape[d]);
            return false;
        }
#endif
        idx[d] = j;
    }
    return true;
}
template <typename T, int D> TW_FUNC bool resolve(const array_t<T, D>& a, int64_t (&idx)[D], src_loc loc) {
    return wrap(a.shape, idx, loc);
}
template <typename T, int D>
TW_FUNC bool resolve(const indexedarray_t<T, D>& a, int64_t (&idx)[D], src_loc loc) {
    return wrap(a.shape, idx, loc) && map_indices(a, idx, loc);
}
template <typename T, int D> TW_FUNC const array_t<T, D>& data_of(const array_t<T, D>& a) { return a; }
template <typename T, int D> TW_FUNC const array_t<T, D>& data_of(const indexedarray_t<T, D>& a) {
    return a.arr;
}
// A null array (None passed for it) reads as zeros and ignores writes; debug builds report the
// access at the user's line. One compare of a launch constant, so it costs next to nothing.
template <typename A> TW_FUNC bool null_access(const A& a, src_loc loc) {
    if (data_of(a).data) return false;
#if defined(TW_DEBUG)
    report_error(ERR_NULL, loc.site, loc.arg, -1, 0, 0);
#else
    (void)loc;
#endif
    return true;
}
template <typename T, int D> TW_FUNC T* offset(T* base, const array_t<T, D>& a, const int64_t (&idx)[D]) {
    int64_t off = 0;
    for (int d = 0; d < D; ++d) off += idx[d] * a.strides[d];
    return (T*)(byte_ptr(base) + off);
}
template <typename A> struct ndim_of;
template <typename T, int D> struct ndim_of<array_t<T, D>> { static constexpr int value = D; };
template <typename T, int D> struct ndim_of<indexedarray_t<T, D>> { static constexpr int value = D; };
}  // namespace detail

// Element access on array_t and indexedarray_t alike (A). The src_loc overloads let debug code
// name the site and array; without TW_DEBUG both compile to the same plain byte arithmetic. Out
// of bounds (debug) or on a null array: address() gives nullptr, load() gives T() and store() does
// nothing, so the kernel runs to the end without touching memory it does not own.
template <typename A, typename... I>
TW_FUNC typename A::value_type* address(src_loc loc, const A& a, I... i) {
    constexpr int D = detail::ndim_of<A>::value;
    static_assert(sizeof...(I) == D, "index count must match the array's ndim");
    int64_t idx[D] = {(int64_t)i...};
    if (detail::null_access(a, loc) || !detail::resolve(a, idx, loc)) return nullptr;
    return detail::offset(detail::data_of(a).data, detail::data_of(a), idx);
}
template <typename A, typename... I> TW_FUNC typename A::value_type* address(const A& a, I... i) {
    return address(src_loc{-1, -1}, a, i...);
}
// Same element in the gradient buffer; nullptr when the array carries no gradient.
template <typename T, int D, typename... I>
TW_FUNC T* grad_address(src_loc loc, const array_t<T, D>& a, I... i) {
    static_assert(sizeof...(I) == D, "index count must match the array's ndim");
    int64_t idx[D] = {(int64_t)i...};
    if (!a.grad || !detail::resolve(a, idx, loc)) return nullptr;
    return detail::offset(a.grad, a, idx);
}
template <typename T, int D, typename... I> TW_FUNC T* grad_address(const array_t<T, D>& a, I... i) {
    return grad_address(src_loc{-1, -1}, a, i...);
}
namespace detail {
// Zero bytes a load reads instead of a null address. Choosing the address (a select) rather than
// branching around the load keeps loads unconditional: the compiler still issues a thread's loads
// together and merges repeated loads of one element (a[i] * a[i]), which a branch per load stopped
// on CUDA (the tile sum of squares read every element twice: 0.051 -> 0.074 ms on an H100).
constexpr int zero_bytes = 256;
#if TW_IS_CUDA
__device__ __align__(16) const unsigned char zeros[zero_bytes] = {};
#else
alignas(16) static const unsigned char zeros[zero_bytes] = {};
#endif
// One element read. A tile kernel that streams its input specialises stream_reads<0> to true
// (emit/cpp.py, block/streaming.py: a reduction whose every read moves with the block, so no other
// block reads the same bytes): its reads are ld.global.cs, whose lines go first when the caches
// need room (H100: the tile sum of squares 1-2 %, the row sum 3-5 % faster; a copy, which writes
// as much as it reads, 3 % slower). A trait rather than a macro: the CPU's precompiled header stays valid.
template <int Unused> struct stream_reads {
    static constexpr bool value = false;
};
template <typename T, typename W> TW_FUNC T bit_as(const W& w) {
    T out;
    memcpy(&out, &w, sizeof(T));
    return out;
}
template <typename T> TW_FUNC T read(const T* p) {
#if TW_IS_CUDA
    if constexpr (stream_reads<sizeof(T) * 0>::value && sizeof(T) == 4 && alignof(T) >= 4)
        return bit_as<T>(__ldcs((const unsigned*)p));
    else if constexpr (stream_reads<sizeof(T) * 0>::value && sizeof(T) == 8 && alignof(T) >= 8)
        return bit_as<T>(__ldcs((const unsigned long long*)p));
    else if constexpr (stream_reads<sizeof(T) * 0>::value && sizeof(T) == 16 && alignof(T) >= 16)
        return bit_as<T>(__ldcs((const uint4*)p));
#endif
    return *p;
}
// *p, or a zero T where p is null
template <typename T> TW_FUNC T read_if(bool ok, const T* p) {
    if (sizeof(T) <= zero_bytes && alignof(T) <= 16) return read(ok ? p : (const T*)zeros);
    return ok ? read(p) : T();
}
template <typename T> TW_FUNC T read_or_zero(const T* p) { return read_if(p != nullptr, p); }
}  // namespace detail
template <typename A, typename... I> TW_FUNC typename A::value_type load(src_loc loc, const A& a, I... i) {
    return detail::read_or_zero<typename A::value_type>(address(loc, a, i...));
}
#if !defined(TW_DEBUG)
// A plain array in a release build: the address is pure arithmetic (computed even for a null
// array, then not used), so two reads of one element are one expression the compiler merges, and
// no branch separates a thread's loads (the address() path above branched on null arrays).
// Each index is wrapped in its own type (32-bit arithmetic for the usual int32 index) before it
// is widened for the byte offset.
namespace detail {
template <typename I> TW_FUNC int64_t wrapped(I i, int32_t extent) {
    typedef decltype(i + 0) W;  // int for narrow types, so the extent is not truncated
    return (int64_t)((W)i < 0 ? (W)i + (W)extent : (W)i);
}
template <typename T, int D, typename... I> TW_FUNC T* release_address(const array_t<T, D>& a, I... i) {
    static_assert(sizeof...(I) == D, "index count must match the array's ndim");
    int64_t byte = 0;
    int d = 0;
    ((byte += wrapped(i, a.shape[d]) * a.strides[d], ++d), ...);
    return (T*)(byte_ptr(a.data) + byte);
}
}  // namespace detail
template <typename T, int D, typename... I> TW_FUNC T load(src_loc, const array_t<T, D>& a, I... i) {
    if constexpr (sizeof(T) <= detail::zero_bytes && alignof(T) <= 16) {
        // a null array reads zeros through a zero start and strides: selects on the array alone,
        // which the compiler hoists out of a lane loop, instead of one on every element's address
        static_assert(sizeof...(I) == D, "index count must match the array's ndim");
        const bool ok = a.data != nullptr;
        int64_t byte = 0;
        int d = 0;
        ((byte += detail::wrapped(i, a.shape[d]) * (ok ? a.strides[d] : 0), ++d), ...);
        return detail::read((const T*)((ok ? detail::byte_ptr(a.data) : (const char*)detail::zeros) + byte));
    } else {
        return detail::read_if(a.data != nullptr, (const T*)detail::release_address(a, i...));
    }
}
#endif
template <typename A, typename... I> TW_FUNC typename A::value_type load(const A& a, I... i) {
    return load(src_loc{-1, -1}, a, i...);
}

// store(arr, i0[, i1, i2, i3], value): the value never takes part in deducing the element type.
namespace detail {
template <typename A, int D>
TW_FUNC void store_at(src_loc loc, const A& a, const int64_t (&at)[D], const typename A::value_type& v) {
    static_assert(ndim_of<A>::value == D, "index count must match the array's ndim");
    int64_t idx[D];
    for (int d = 0; d < D; ++d) idx[d] = at[d];
    if (null_access(a, loc) || !resolve(a, idx, loc)) return;
    *offset(data_of(a).data, data_of(a), idx) = v;
}
}  // namespace detail
#define TW_V const typename A::value_type& v
template <typename A> TW_FUNC void store(src_loc l, const A& a, int64_t i0, TW_V) {
    detail::store_at(l, a, {i0}, v);
}
template <typename A> TW_FUNC void store(src_loc l, const A& a, int64_t i0, int64_t i1, TW_V) {
    detail::store_at(l, a, {i0, i1}, v);
}
template <typename A> TW_FUNC void store(src_loc l, const A& a, int64_t i0, int64_t i1, int64_t i2, TW_V) {
    detail::store_at(l, a, {i0, i1, i2}, v);
}
template <typename A>
TW_FUNC void store(src_loc l, const A& a, int64_t i0, int64_t i1, int64_t i2, int64_t i3, TW_V) {
    detail::store_at(l, a, {i0, i1, i2, i3}, v);
}
template <typename A> TW_FUNC void store(const A& a, int64_t i0, TW_V) {
    detail::store_at(src_loc{-1, -1}, a, {i0}, v);
}
template <typename A> TW_FUNC void store(const A& a, int64_t i0, int64_t i1, TW_V) {
    detail::store_at(src_loc{-1, -1}, a, {i0, i1}, v);
}
template <typename A> TW_FUNC void store(const A& a, int64_t i0, int64_t i1, int64_t i2, TW_V) {
    detail::store_at(src_loc{-1, -1}, a, {i0, i1, i2}, v);
}
template <typename A> TW_FUNC void store(const A& a, int64_t i0, int64_t i1, int64_t i2, int64_t i3, TW_V) {
    detail::store_at(src_loc{-1, -1}, a, {i0, i1, i2, i3}, v);
}
#undef TW_V

// arr[i..][c] = v / arr[i..][r, c] = v: one scalar component of an element, written in place (no
// read of the element and store of all of it, whose adjoint would hand the untouched components'
// gradients back to the element once per such write). The first ND indices pick the element.
namespace detail {
// the component's address in element `p` (scalars of type S, Cols per matrix row), from the
// indices after the first ND: one (a vector's or quaternion's) or two (a matrix's row, column)
template <int ND, int Cols, typename S, typename T> TW_FUNC S* component_at(T* p, const int64_t* at, int n) {
    const int64_t k = n - ND == 1 ? at[ND] : at[ND] * Cols + at[ND + 1];
    return p ? reinterpret_cast<S*>(p) + k : nullptr;
}
template <int ND, typename A, int N> TW_FUNC typename A::value_type* element_of(src_loc loc, const A& a, const int64_t (&at)[N]) {
    int64_t idx[ND];
    for (int d = 0; d < ND; ++d) idx[d] = at[d];
    if (null_access(a, loc) || !resolve(a, idx, loc)) return nullptr;
    return offset(data_of(a).data, data_of(a), idx);
}
}  // namespace detail
template <int ND, int Cols, typename A, typename V, typename... I>
TW_FUNC void store_component(src_loc loc, const A& a, const V& v, I... i) {
    const int64_t at[] = {(int64_t)i...};
    V* p = detail::component_at<ND, Cols, V>(detail::element_of<ND>(loc, a, at), at, (int)sizeof...(I));
    if (p) *p = v;
}
template <int ND, int Cols, typename A, typename V, typename... I>
TW_FUNC void store_component(const A& a, const V& v, I... i) {
    store_component<ND, Cols>(src_loc{-1, -1}, a, v, i...);
}

// arr[i] on a D > 1 array: the sub-array at i along the first dimension. `dim` is that
// dimension's number in the array the user indexed, for error messages.
namespace detail {
template <typename T, int D>
TW_FUNC array_t<T, D - 1> view1(src_loc loc, const array_t<T, D>& a, int64_t i, int dim) {
    static_assert(D > 1, "view() needs at least 2 dimensions");
    int64_t idx[1] = {i};
    const int32_t extent[1] = {a.shape[0]};
    if (!wrap(extent, idx, loc, dim)) idx[0] = 0;  // debug: keep the view well-formed (already flagged)
    array_t<T, D - 1> r;
    const int64_t off = idx[0] * a.strides[0];
    r.data = a.data ? (T*)(byte_ptr(a.data) + off) : nullptr;  // a view of a null array is null
    r.grad = a.grad ? (T*)(byte_ptr(a.grad) + off) : nullptr;
    for (int d = 1; d < D; ++d) {
        r.shape[d - 1] = a.shape[d];
        r.strides[d - 1] = a.strides[d];
    }
    return r;
}
template <typename T, int D>
TW_FUNC indexedarray_t<T, D - 1> view1(src_loc loc, const indexedarray_t<T, D>& a, int64_t i, int dim) {
    static_assert(D > 1, "view() needs at least 2 dimensions");
    int64_t idx[1] = {i};
    const int32_t extent[1] = {a.shape[0]};
    if (!wrap(extent, idx, loc, dim)) {
        idx[0] = 0;  // debug: already flagged; point at the first row without reading indices
    } else if (a.indices[0]) {
        const int64_t j = a.indices[0][idx[0]];
#if defined(TW_DEBUG)
        if (j < 0 || j >= a.arr.shape[0]) {
            report_error(ERR_INDEXED, loc.site, loc.arg, dim, j, a.arr.shape[0]);
            idx[0] = 0;
        } else
#endif
            idx[0] = j;
    }
    indexedarray_t<T, D - 1> r;
    r.arr = view1(loc, a.arr, idx[0], dim);
    for (int d = 1; d < D; ++d) {
        r.indices[d - 1] = a.indices[d];
        r.shape[d - 1] = a.shape[d];
    }
    return r;
}
}  // namespace detail
#define TW_IS_ARRAY(A) int = detail::ndim_of<A>::value
template <typename A, TW_IS_ARRAY(A)> TW_FUNC auto view(src_loc loc, const A& a, int64_t i) {
    return detail::view1(loc, a, i, 0);
}
template <typename A, TW_IS_ARRAY(A)> TW_FUNC auto view(src_loc loc, const A& a, int64_t i, int64_t j) {
    return detail::view1(loc, detail::view1(loc, a, i, 0), j, 1);
}
template <typename A, TW_IS_ARRAY(A)>
TW_FUNC auto view(src_loc loc, const A& a, int64_t i, int64_t j, int64_t k) {
    return detail::view1(loc, detail::view1(loc, detail::view1(loc, a, i, 0), j, 1), k, 2);
}
template <typename A, TW_IS_ARRAY(A)> TW_FUNC auto view(const A& a, int64_t i) { return view(src_loc{-1, -1}, a, i); }

template <typename A> TW_FUNC vec_t<detail::ndim_of<A>::value, int32_t> shape(const A& a) {
    vec_t<detail::ndim_of<A>::value, int32_t> r;
    for (int d = 0; d < detail::ndim_of<A>::value; ++d) r.c[d] = a.shape[d];
    return r;
}
template <typename A, TW_IS_ARRAY(A)> TW_FUNC int32_t len(const A& a) { return a.shape[0]; }

// wp.lower_bound on a sorted 1-d array: the first index in [begin, end - 1) whose element is not
// below `value`, else end - 1 (Warp's answer when every element is smaller; begin when empty).
template <typename T>
TW_FUNC int32_t lower_bound(src_loc loc, const array_t<T, 1>& a, int32_t begin, int32_t end, const T& value) {
    int32_t lo = begin, hi = end - 1;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (load(loc, a, mid) < value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
template <typename T> TW_FUNC int32_t lower_bound(src_loc loc, const array_t<T, 1>& a, const T& value) {
    return lower_bound(loc, a, 0, a.shape[0], value);
}
template <typename T> TW_FUNC int32_t lower_bound(const array_t<T, 1>& a, int32_t begin, int32_t end, const T& value) {
    return lower_bound(src_loc{-1, -1}, a, begin, end, value);
}
template <typename T> TW_FUNC int32_t lower_bound(const array_t<T, 1>& a, const T& value) {
    return lower_bound(src_loc{-1, -1}, a, 0, a.shape[0], value);
}
#undef TW_IS_ARRAY
}  // namespace tw
