// Fixed-size vectors: tw::vec_t<N, T> = { T c[N]; } (same layout as ctypes T * N).
#pragma once
#include "scalar.h"

namespace tw {
template <int N, typename T> struct vec_t {
    T c[N];

    TW_FUNC vec_t() {
        for (int i = 0; i < N; ++i) c[i] = T();
    }
    // One scalar: fill (also the component constructor when N == 1).
    template <typename S, detail::enable_if_t<detail::is_scalar<S>::value, int> = 0>
    TW_FUNC explicit vec_t(S s) {
        for (int i = 0; i < N; ++i) c[i] = cast<T>(s);
    }
    // Exactly N scalars, each converted to T.
    template <typename... S,
              detail::enable_if_t<(sizeof...(S) == N && N > 1 && detail::all_scalar<S...>::value), int> = 0>
    TW_FUNC vec_t(S... s) : c{cast<T>(s)...} {}
    // Element-type conversion (vec3d -> vec3f).
    template <typename S>
    TW_FUNC explicit vec_t(const vec_t<N, S>& o) {
        for (int i = 0; i < N; ++i) c[i] = cast<T>(o.c[i]);
    }
    // Spatial vector from its angular (w) and linear (v) halves.
    template <int M = N, detail::enable_if_t<M == 6, int> = 0>
    TW_FUNC vec_t(const vec_t<3, T>& w, const vec_t<3, T>& v) {
        for (int i = 0; i < 3; ++i) c[i] = w.c[i], c[3 + i] = v.c[i];
    }

    TW_FUNC T& operator[](int i) { return c[i]; }
    TW_FUNC const T& operator[](int i) const { return c[i]; }
};

template <int N, typename T> TW_FUNC bool operator==(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (int i = 0; i < N; ++i)
        if (!(a.c[i] == b.c[i])) return false;
    return true;
}
template <int N, typename T> TW_FUNC bool operator!=(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    return !(a == b);
}
template <int N, typename T> TW_FUNC bool eq(const vec_t<N, T>& a, const vec_t<N, T>& b) { return a == b; }
template <int N, typename T> TW_FUNC bool ne(const vec_t<N, T>& a, const vec_t<N, T>& b) { return !(a == b); }
// Componentwise += / -=: adjoints accumulate with them (quat_t and transform_t bind as vec_t).
template <int N, typename T> TW_FUNC vec_t<N, T>& operator+=(vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (int i = 0; i < N; ++i) a.c[i] += b.c[i];
    return a;
}
template <int N, typename T> TW_FUNC vec_t<N, T>& operator-=(vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (int i = 0; i < N; ++i) a.c[i] -= b.c[i];
    return a;
}

// Componentwise maps, so every vector builtin reuses the scalar semantics (int vs float).
#define TW_VEC_MAP2(NAME, FN)                                                            \
    template <int N, typename T>                                                         \
    TW_FUNC vec_t<N, T> NAME(const vec_t<N, T>& a, const vec_t<N, T>& b) {              \
        vec_t<N, T> r;                                                                   \
        for (int i = 0; i < N; ++i) r.c[i] = FN(a.c[i], b.c[i]);                         \
        return r;                                                                        \
    }
#define TW_VEC_MAP1(NAME, FN)                                                            \
    template <int N, typename T> TW_FUNC vec_t<N, T> NAME(const vec_t<N, T>& a) {        \
        vec_t<N, T> r;                                                                   \
        for (int i = 0; i < N; ++i) r.c[i] = FN(a.c[i]);                                 \
        return r;                                                                        \
    }
TW_VEC_MAP2(add, add)
TW_VEC_MAP2(sub, sub)
TW_VEC_MAP2(cw_mul, mul)
TW_VEC_MAP2(cw_div, div)
TW_VEC_MAP2(mod, mod)
TW_VEC_MAP2(min, min)
TW_VEC_MAP2(max, max)
TW_VEC_MAP1(neg, neg)
TW_VEC_MAP1(abs, abs)
TW_VEC_MAP1(sign, sign)
#undef TW_VEC_MAP1
#undef TW_VEC_MAP2
template <int N, typename T> TW_FUNC vec_t<N, T> pos(const vec_t<N, T>& a) { return a; }
// Componentwise clamp (the type rule takes vectors; Warp 1.19 only has the scalar form).
template <int N, typename T>
TW_FUNC vec_t<N, T> clamp(const vec_t<N, T>& x, const vec_t<N, T>& lo, const vec_t<N, T>& hi) {
    vec_t<N, T> r;
    for (int i = 0; i < N; ++i) r.c[i] = clamp(x.c[i], lo.c[i], hi.c[i]);
    return r;
}

// vec * vec is not a Warp builtin (ambiguous); only scaling is.
template <int N, typename T> TW_FUNC vec_t<N, T> mul(const vec_t<N, T>& a, T s) {
    vec_t<N, T> r;
    for (int i = 0; i < N; ++i) r.c[i] = mul(a.c[i], s);
    return r;
}
template <int N, typename T> TW_FUNC vec_t<N, T> mul(T s, const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (int i = 0; i < N; ++i) r.c[i] = mul(s, a.c[i]);
    return r;
}
template <int N, typename T> TW_FUNC vec_t<N, T> div(const vec_t<N, T>& a, T s) {
    vec_t<N, T> r;
    for (int i = 0; i < N; ++i) r.c[i] = div(a.c[i], s);
    return r;
}
template <int N, typename T> TW_FUNC vec_t<N, T> div(T s, const vec_t<N, T>& a) {  // s / a[i]
    vec_t<N, T> r;
    for (int i = 0; i < N; ++i) r.c[i] = div(s, a.c[i]);
    return r;
}

template <int N, typename T> TW_FUNC T dot(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    T s = mul(a.c[0], b.c[0]);
    for (int i = 1; i < N; ++i) s = add(s, mul(a.c[i], b.c[i]));
    return s;
}
template <typename T> TW_FUNC vec_t<3, T> cross(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    return vec_t<3, T>(sub(mul(a.c[1], b.c[2]), mul(a.c[2], b.c[1])),
                       sub(mul(a.c[2], b.c[0]), mul(a.c[0], b.c[2])),
                       sub(mul(a.c[0], b.c[1]), mul(a.c[1], b.c[0])));
}
template <int N, typename T> TW_FUNC T length_sq(const vec_t<N, T>& a) { return dot(a, a); }
template <int N, typename T> TW_FUNC T length(const vec_t<N, T>& a) { return sqrt(dot(a, a)); }
// Warp: a zero (or underflowed) length gives the zero vector rather than NaNs.
template <int N, typename T> TW_FUNC vec_t<N, T> normalize(const vec_t<N, T>& a) {
    T l = length(a);
    if (l > detail::zero<T>()) return div(a, l);
    return vec_t<N, T>();
}
// Norms (Warp's norm_* functions); delta is the quadratic-to-linear switch of the Huber norms.
template <int N, typename T> TW_FUNC T norm_l1(const vec_t<N, T>& a) {
    T s = abs(a.c[0]);
    for (int i = 1; i < N; ++i) s = add(s, abs(a.c[i]));
    return s;
}
template <int N, typename T> TW_FUNC T norm_l2(const vec_t<N, T>& a) { return length(a); }
template <int N, typename T>
TW_FUNC T norm_huber(const vec_t<N, T>& a, T delta = detail::one<T>()) {
    T l = length(a), h = cast<T>(0.5);
    return l <= delta ? h * l * l : delta * (l - h * delta);
}
template <int N, typename T>
TW_FUNC T norm_pseudo_huber(const vec_t<N, T>& a, T delta = detail::one<T>()) {
    return delta * sqrt(detail::one<T>() + dot(a, a) / (delta * delta));
}
template <int N, typename T>
TW_FUNC vec_t<N, T> smooth_normalize(const vec_t<N, T>& a, T delta = detail::one<T>()) {
    return div(a, norm_pseudo_huber(a, delta));
}
template <int N, typename T>
TW_FUNC vec_t<N, T> lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t) {
    return add(mul(a, sub(detail::one<T>(), t)), mul(b, t));
}

// Reductions over the components (Warp's one-argument min/max/argmin/argmax).
template <int N, typename T> TW_FUNC T min(const vec_t<N, T>& a) {
    T m = a.c[0];
    for (int i = 1; i < N; ++i) m = min(m, a.c[i]);
    return m;
}
template <int N, typename T> TW_FUNC T max(const vec_t<N, T>& a) {
    T m = a.c[0];
    for (int i = 1; i < N; ++i) m = max(m, a.c[i]);
    return m;
}
// The first smallest / largest element; NaNs are skipped, and an all-NaN vector gives 0 (Warp 1.19).
template <int N, typename T> TW_FUNC uint32_t argmin(const vec_t<N, T>& a) {
    int k = -1;
    for (int i = 0; i < N; ++i)
        if (!isnan(a.c[i]) && (k < 0 || a.c[i] < a.c[k])) k = i;
    return k < 0 ? 0u : (uint32_t)k;
}
template <int N, typename T> TW_FUNC uint32_t argmax(const vec_t<N, T>& a) {
    int k = -1;
    for (int i = 0; i < N; ++i)
        if (!isnan(a.c[i]) && (k < 0 || a.c[i] > a.c[k])) k = i;
    return k < 0 ? 0u : (uint32_t)k;
}

// Negative indices count from the end, as in Warp (v[-1] is the last component).
template <int N, typename T> TW_FUNC T extract(const vec_t<N, T>& a, int i) {
    if (i < 0) i += N;
    TW_ASSERT(i >= 0 && i < N);
    return a.c[i];
}
template <int N, typename T> TW_FUNC vec_t<N, T> with_component(vec_t<N, T> a, int i, T v) {
    if (i < 0) i += N;
    TW_ASSERT(i >= 0 && i < N);
    a.c[i] = v;
    return a;
}
}  // namespace tw

// ---------------------------------------------------------------------------------------
// Adjoints (docs/AUTODIFF.md): primal arguments, one accumulated adjoint per argument, then the
// adjoint of the result. quat_t and transform_t bind as their vec_t base. Integer vectors keep
// their adjoints untouched; componentwise functions reuse the scalar adjoints (same tie rules).
namespace tw {
namespace detail {
template <TW_IF_NUM(T)> TW_FUNC void acc(T& d, T g) {
    if constexpr (is_float<T>::value) d += g;
}
template <int N, typename T> TW_FUNC void acc(vec_t<N, T>& d, const vec_t<N, T>& g) {
    if constexpr (is_float<T>::value)
        for (int i = 0; i < N; ++i) d.c[i] += g.c[i];
}
}  // namespace detail

template <int N, typename T>
TW_FUNC void adj_add(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     const vec_t<N, T>& adj_ret) {
    detail::acc(adj_a, adj_ret);
    detail::acc(adj_b, adj_ret);
}
template <int N, typename T>
TW_FUNC void adj_sub(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     const vec_t<N, T>& adj_ret) {
    detail::acc(adj_a, adj_ret);
    detail::acc(adj_b, neg(adj_ret));
}
template <int N, typename T>
TW_FUNC void adj_neg(const vec_t<N, T>&, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    detail::acc(adj_a, neg(adj_ret));
}
template <int N, typename T>
TW_FUNC void adj_pos(const vec_t<N, T>&, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    detail::acc(adj_a, adj_ret);
}
#define TW_VEC_ADJ_MAP2(NAME)                                                                        \
    template <int N, typename T>                                                                     \
    TW_FUNC void adj_##NAME(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a,           \
                            vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) {                        \
        for (int i = 0; i < N; ++i) adj_##NAME(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]); \
    }
TW_VEC_ADJ_MAP2(min)
TW_VEC_ADJ_MAP2(max)
TW_VEC_ADJ_MAP2(mod)
#undef TW_VEC_ADJ_MAP2
template <int N, typename T>
TW_FUNC void adj_clamp(const vec_t<N, T>& x, const vec_t<N, T>& lo, const vec_t<N, T>& hi, vec_t<N, T>& adj_x,
                       vec_t<N, T>& adj_lo, vec_t<N, T>& adj_hi, const vec_t<N, T>& adj_ret) {
    for (int i = 0; i < N; ++i)
        adj_clamp(x.c[i], lo.c[i], hi.c[i], adj_x.c[i], adj_lo.c[i], adj_hi.c[i], adj_ret.c[i]);
}
template <int N, typename T>
TW_FUNC void adj_abs(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    for (int i = 0; i < N; ++i) adj_abs(a.c[i], adj_a.c[i], adj_ret.c[i]);
}
template <int N, typename T>
TW_FUNC void adj_cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                        const vec_t<N, T>& adj_ret) {
    detail::acc(adj_a, cw_mul(b, adj_ret));
    detail::acc(adj_b, cw_mul(a, adj_ret));
}
// d(a/b)/db = -(a/b)/b: no b*b to overflow or underflow.
template <int N, typename T>
TW_FUNC void adj_cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                        const vec_t<N, T>& adj_ret) {
    vec_t<N, T> gb = cw_div(adj_ret, b);
    detail::acc(adj_a, gb);
    detail::acc(adj_b, neg(cw_mul(gb, cw_div(a, b))));
}

template <int N, typename T>
TW_FUNC void adj_mul(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    detail::acc(adj_a, mul(adj_ret, s));
    detail::acc(adj_s, dot(a, adj_ret));
}
template <int N, typename T>
TW_FUNC void adj_mul(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}
template <int N, typename T>
TW_FUNC void adj_div(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    vec_t<N, T> gs = div(adj_ret, s);
    detail::acc(adj_a, gs);
    detail::acc(adj_s, neg(dot(gs, div(a, s))));
}
template <int N, typename T>  // r[i] = s / a[i]
TW_FUNC void adj_div(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    for (int i = 0; i < N; ++i) adj_div(s, a.c[i], adj_s, adj_a.c[i], adj_ret.c[i]);
}

template <int N, typename T>
TW_FUNC void adj_dot(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                     T adj_ret) {
    detail::acc(adj_a, mul(b, adj_ret));
    detail::acc(adj_b, mul(a, adj_ret));
}
// <a x b, g> = <a, b x g> = <b, g x a>
template <typename T>
TW_FUNC void adj_cross(const vec_t<3, T>& a, const vec_t<3, T>& b, vec_t<3, T>& adj_a, vec_t<3, T>& adj_b,
                       const vec_t<3, T>& adj_ret) {
    detail::acc(adj_a, cross(b, adj_ret));
    detail::acc(adj_b, cross(adj_ret, a));
}
template <int N, typename T> TW_FUNC void adj_length_sq(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    detail::acc(adj_a, mul(a, cast<T>(2) * adj_ret));
}
// The zero vector (a cone point) gets the zero subgradient, as Warp.
template <int N, typename T> TW_FUNC void adj_length(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    T l = length(a);
    if (l > detail::zero<T>()) detail::acc(adj_a, mul(div(a, l), adj_ret));
}
template <int N, typename T> TW_FUNC void adj_norm_l2(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    adj_length(a, adj_a, adj_ret);
}
template <int N, typename T> TW_FUNC void adj_norm_l1(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    for (int i = 0; i < N; ++i) adj_abs(a.c[i], adj_a.c[i], adj_ret);
}
// n = a / |a|: adj_a = (g - n (n . g)) / |a|. A zero vector (normalize returns the constant 0)
// gets no gradient.
template <int N, typename T>
TW_FUNC void adj_normalize(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    T l = length(a);
    if (!(l > detail::zero<T>())) return;
    vec_t<N, T> n = div(a, l);
    detail::acc(adj_a, div(sub(adj_ret, mul(n, dot(n, adj_ret))), l));
}
// Quadratic 0.5 |a|^2 up to |a| == delta, then delta (|a| - delta / 2): both pieces have gradient
// a at the seam, and d/d(delta) is 0 on the quadratic side, |a| - delta on the linear one.
template <int N, typename T>
TW_FUNC void adj_norm_huber(const vec_t<N, T>& a, T delta, vec_t<N, T>& adj_a, T& adj_delta, T adj_ret) {
    T l = length(a);
    if (l <= delta) {
        detail::acc(adj_a, mul(a, adj_ret));
        return;
    }
    detail::acc(adj_a, mul(div(a, l), delta * adj_ret));
    detail::acc(adj_delta, (l - delta) * adj_ret);
}
template <int N, typename T>
TW_FUNC void adj_norm_huber(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    T unused = detail::zero<T>();
    adj_norm_huber(a, detail::one<T>(), adj_a, unused, adj_ret);
}
// f = delta q with q = sqrt(1 + |a|^2 / delta^2): df/da = a / (delta q), df/d(delta) = 1 / q.
template <int N, typename T>
TW_FUNC void adj_norm_pseudo_huber(const vec_t<N, T>& a, T delta, vec_t<N, T>& adj_a, T& adj_delta,
                                   T adj_ret) {
    T q = sqrt(detail::one<T>() + dot(a, a) / (delta * delta));
    detail::acc(adj_a, mul(a, adj_ret / (delta * q)));
    detail::acc(adj_delta, adj_ret / q);
}
template <int N, typename T>
TW_FUNC void adj_norm_pseudo_huber(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    T unused = detail::zero<T>();
    adj_norm_pseudo_huber(a, detail::one<T>(), adj_a, unused, adj_ret);
}
// r = a / f with f = norm_pseudo_huber(a, delta): the quotient rule, then f's own gradient.
template <int N, typename T>
TW_FUNC void adj_smooth_normalize(const vec_t<N, T>& a, T delta, vec_t<N, T>& adj_a, T& adj_delta,
                                  const vec_t<N, T>& adj_ret) {
    T f = norm_pseudo_huber(a, delta);
    vec_t<N, T> gf = div(adj_ret, f);
    detail::acc(adj_a, gf);
    adj_norm_pseudo_huber(a, delta, adj_a, adj_delta, neg(dot(gf, div(a, f))));
}
template <int N, typename T>
TW_FUNC void adj_smooth_normalize(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    T unused = detail::zero<T>();
    adj_smooth_normalize(a, detail::one<T>(), adj_a, unused, adj_ret);
}
template <int N, typename T>
TW_FUNC void adj_lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                      T& adj_t, const vec_t<N, T>& adj_ret) {
    detail::acc(adj_a, mul(adj_ret, detail::one<T>() - t));
    detail::acc(adj_b, mul(adj_ret, t));
    detail::acc(adj_t, dot(sub(b, a), adj_ret));
}
// Reductions: the gradient goes to the component the forward returned (the first one at ties).
template <int N, typename T> TW_FUNC void adj_min(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    detail::acc(adj_a.c[argmin(a)], adj_ret);
}
template <int N, typename T> TW_FUNC void adj_max(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    detail::acc(adj_a.c[argmax(a)], adj_ret);
}

template <int N, typename T, typename I>
TW_FUNC void adj_extract(const vec_t<N, T>&, int i, vec_t<N, T>& adj_a, I&, T adj_ret) {
    if (i < 0) i += N;
    if (i >= 0 && i < N) detail::acc(adj_a.c[i], adj_ret);
}
template <int N, typename T, typename I>
TW_FUNC void adj_with_component(const vec_t<N, T>&, int i, T, vec_t<N, T>& adj_a, I&, T& adj_v,
                                const vec_t<N, T>& adj_ret) {
    if (i < 0) i += N;
    vec_t<N, T> g = adj_ret;
    if (i >= 0 && i < N) {
        detail::acc(adj_v, g.c[i]);
        g.c[i] = detail::zero<T>();
    }
    detail::acc(adj_a, g);
}
}  // namespace tw
