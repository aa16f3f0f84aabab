// Adjoints of array access: a read scatters its adjoint into the gradient array (atomically,
// since many threads may read one element); a write or atomic update gathers the gradient of
// the element it wrote. `adj` is the gradient array (same shape; data == nullptr: none given).
#pragma once
#include "array.h"
#include "atomic.h"

namespace tw {
namespace detail {
template <typename T> TW_FUNC void atomic_accum(T* p, const T& v) { atomic_add(p, v); }
template <typename T> TW_FUNC void atomic_accum(quat_t<T>* p, const quat_t<T>& v) {
    atomic_add(static_cast<vec_t<4, T>*>(p), static_cast<const vec_t<4, T>&>(v));
}
template <typename T> TW_FUNC void atomic_accum(transform_t<T>* p, const transform_t<T>& v) {
    atomic_add(static_cast<vec_t<7, T>*>(p), static_cast<const vec_t<7, T>&>(v));
}
template <typename A> TW_FUNC bool has_data(const A& a) { return data_of(a).data != nullptr; }
}  // namespace detail

template <typename A, typename V, typename... I> TW_FUNC void adj_load(const A& adj, const V& adj_ret, I... i) {
    if (detail::has_data(adj)) detail::atomic_accum(address(adj, i...), adj_ret);
}

// A CPU thread's pending gradient adds, K element slots by address: an add to an address a slot
// holds joins its sum, another takes the slot over and hands the old sum on as one atomic add, and
// the rest go at the thread's end (flush). Neighbouring tasks of a worker's range mostly scatter to
// the same elements (a spring's two ends, a stencil's neighbours), whose atomic adds each cost a
// compare-and-swap loop on the CPU: a chain of springs' backward made half as many. CUDA threads
// run tasks a grid apart, with nothing to share: each add is atomic there.
template <typename V, int K = 8> struct scatter_cache {
#if TW_IS_CUDA
    TW_FUNC void push(V* p, const V& v) { detail::atomic_accum(p, v); }
    TW_FUNC void flush() {}
#else
    V* at[K] = {};
    V sum[K];
    TW_FUNC void push(V* p, const V& v) {
        const int s = (int)(((uintptr_t)p / sizeof(V)) & (K - 1));
        if (__builtin_expect(at[s] == p, 1)) {
            sum[s] = add(sum[s], v);  // (unqualified: a struct's add is found beside it)
            return;
        }
        if (at[s]) detail::atomic_accum(at[s], sum[s]);
        at[s] = p;
        sum[s] = v;
    }
    TW_FUNC void flush() {
        for (int s = 0; s < K; ++s)
            if (at[s]) detail::atomic_accum(at[s], sum[s]);
        for (int s = 0; s < K; ++s) at[s] = nullptr;
    }
#endif
};
template <typename C, typename A, typename V, typename... I>
TW_FUNC void adj_load_cached(C& cache, const A& adj, const V& adj_ret, I... i) {
    if (detail::has_data(adj)) cache.push(address(adj, i...), adj_ret);
}

// The same, for an element only this thread touches (the kernel reads it at its launch index):
// a plain add, no atomic.
template <typename A, typename V, typename... I> TW_FUNC void adj_load_own(const A& adj, const V& adj_ret, I... i) {
    if (detail::has_data(adj)) {
        V* p = address(adj, i...);
        *p = add(*p, adj_ret);
    }
}

// store / atomic_add: the value's adjoint is the element's gradient (atomic_sub: its negation).
template <typename A, typename V, typename... I> TW_FUNC void adj_store(const A& adj, V& adj_value, I... i) {
    if (detail::has_data(adj)) adj_value = add(adj_value, load(adj, i...));
}
// the written component's gradient (the element's other components keep theirs)
template <int ND, int Cols, typename A, typename V, typename... I>
TW_FUNC void adj_store_component(const A& adj, V& adj_value, I... i) {
    if (!detail::has_data(adj)) return;
    const int64_t at[] = {(int64_t)i...};
    const V* p = detail::component_at<ND, Cols, V>(detail::element_of<ND>(src_loc{-1, -1}, adj, at), at,
                                                   (int)sizeof...(I));
    if (p) adj_value = add(adj_value, *p);
}
template <typename A, typename V, typename... I>
TW_FUNC void adj_atomic_sub(const A& adj, V& adj_value, I... i) {
    if (detail::has_data(adj)) adj_value = sub(adj_value, load(adj, i...));
}

// atomic_min / atomic_max: the gradient goes to the value that ended up in the element (ties
// all receive it), as Warp does; per component on vectors and matrices, whose min/max is
// componentwise, so each component's winner gets its gradient (Warp compares whole vectors).
namespace detail {
// Whether recomputed value v is the stored winner. The backward pass recomputes v in another
// kernel, where the GPU compiler may contract multiply-adds differently, so v can differ from the
// stored value in its last bits (an H100 lost a winner's gradient that way): floats within 4 ulps
// count as the winner - a tie at the precision the two kernels agree to. Integers compare exactly.
template <typename T> TW_FUNC bool is_stored(const T& stored, const T& v) { return stored == v; }
template <typename F> TW_FUNC bool near_ulps(F s, F v, F eps) {
    const F as = s < F(0) ? -s : s, av = v < F(0) ? -v : v, d = s < v ? v - s : s - v;
    return s == v || d <= F(4) * eps * (as > av ? as : av);
}
TW_FUNC bool is_stored(float s, float v) { return near_ulps(s, v, 1.1920929e-7f); }
TW_FUNC bool is_stored(double s, double v) { return near_ulps(s, v, 2.220446049250313e-16); }
TW_FUNC bool is_stored(half s, half v) { return near_ulps((float)s, (float)v, 9.765625e-4f); }
TW_FUNC bool is_stored(bfloat16 s, bfloat16 v) { return near_ulps((float)s, (float)v, 7.8125e-3f); }
template <typename T> TW_FUNC void adj_if_stored(const T& stored, const T& v, T& adj_v, const T& g) {
    if (is_stored(stored, v)) adj_v = add(adj_v, g);
}
template <int N, typename T>
TW_FUNC void adj_if_stored(const vec_t<N, T>& s, const vec_t<N, T>& v, vec_t<N, T>& adj_v,
                           const vec_t<N, T>& g) {
    for (int k = 0; k < N; ++k) adj_if_stored(s.c[k], v.c[k], adj_v.c[k], g.c[k]);
}
template <int R, int C, typename T>
TW_FUNC void adj_if_stored(const mat_t<R, C, T>& s, const mat_t<R, C, T>& v, mat_t<R, C, T>& adj_v,
                           const mat_t<R, C, T>& g) {
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < C; ++k) adj_if_stored(s.c[r][k], v.c[r][k], adj_v.c[r][k], g.c[r][k]);
}
}  // namespace detail
template <typename A, typename V, typename... I>
TW_FUNC void adj_atomic_minmax(const A& a, const A& adj, const V& value, V& adj_value, I... i) {
    if (detail::has_data(adj)) detail::adj_if_stored(load(a, i...), value, adj_value, load(adj, i...));
}
}  // namespace tw
