// Array slicing in kernels: a[1:3], a[i, ::2], a[:, j], a[::-1] are views (no copy), with Python's
// rules for start:stop:step (Warp 1.19's for every in-range bound; Warp lets a negative-step slice
// start past the end, Python and tilewarp clamp it). Integer indices among the slices drop their
// dimension, as a[i] does; dimensions not mentioned are kept whole.
#pragma once
#include "array.h"

namespace tw {
struct slice_t {
    int32_t start, stop, step;
};
constexpr int32_t slice_none = -2147483647 - 1;  // a bound left out: a[:3], a[1:], a[::-1]

namespace detail {
// A given bound clamped into the extent as CPython's PySlice_AdjustIndices does.
TW_FUNC int32_t slice_bound(int32_t b, int32_t length, bool back) {
    if (b < 0) {
        b += length;
        if (b < 0) b = back ? -1 : 0;
    } else if (b >= length) {
        b = back ? length - 1 : length;
    }
    return b;
}
// s's bounds made concrete for `length` elements; the number of elements it selects.
TW_FUNC int32_t slice_adjust(slice_t& s, int32_t length, src_loc loc, int dim) {
    if (s.step == 0) {  // selects nothing (a debug build reports it)
#if defined(TW_DEBUG)
        report_error(ERR_ASSERT, loc.site, loc.arg, dim, 0, length);
#endif
        s.start = 0;
        return 0;
    }
    const bool back = s.step < 0;
    s.start = s.start == slice_none ? (back ? length - 1 : 0) : slice_bound(s.start, length, back);
    s.stop = s.stop == slice_none ? (back ? -1 : length) : slice_bound(s.stop, length, back);
    if (back) return s.start > s.stop ? (s.start - s.stop - 1) / -s.step + 1 : 0;
    return s.start < s.stop ? (s.stop - s.start - 1) / s.step + 1 : 0;
}

template <typename T, int D, int O> struct slicer {
    const array_t<T, D>& in;
    array_t<T, O>& out;
    src_loc loc;
    int64_t offset;
    int din, dout;
    TW_FUNC void part(int64_t i) {  // an integer index: drops the dimension
        int64_t idx[1] = {i};
        const int32_t extent[1] = {in.shape[din]};
        if (!wrap(extent, idx, loc, din)) idx[0] = 0;  // debug: flagged, keep the view well-formed
        offset += idx[0] * in.strides[din++];
    }
    TW_FUNC void part(slice_t s) {
        const int32_t n = slice_adjust(s, in.shape[din], loc, din);
        if (n > 0) offset += (int64_t)s.start * in.strides[din];
        out.shape[dout] = n;
        out.strides[dout++] = in.strides[din++] * s.step;
    }
};
}  // namespace detail

template <int O, typename T, int D, typename... P>
TW_FUNC array_t<T, O> slice_view(src_loc loc, const array_t<T, D>& a, P... parts) {
    static_assert(sizeof...(P) <= D, "more indices than dimensions");
    array_t<T, O> r;
    detail::slicer<T, D, O> s{a, r, loc, 0, 0, 0};
    (s.part(parts), ...);
    for (; s.din < D; ++s.din, ++s.dout) {
        r.shape[s.dout] = a.shape[s.din];
        r.strides[s.dout] = a.strides[s.din];
    }
    r.data = a.data ? (T*)(detail::byte_ptr(a.data) + s.offset) : nullptr;  // null stays null
    r.grad = a.grad ? (T*)(detail::byte_ptr(a.grad) + s.offset) : nullptr;
    return r;
}
template <int O, typename T, int D, typename... P>
TW_FUNC array_t<T, O> slice_view(const array_t<T, D>& a, P... parts) {
    return slice_view<O>(src_loc{-1, -1}, a, parts...);
}
}  // namespace tw
