// Fixed-size matrices: tw::mat_t<R, C, T> = { T c[R][C]; } row-major (ctypes T * (R*C)).
#pragma once
#include "vec.h"

namespace tw {
template <int R, int C, typename T> struct mat_t {
    T c[R][C];

    TW_FUNC mat_t() {
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j) c[i][j] = T();
    }
    template <typename S, detail::enable_if_t<detail::is_scalar<S>::value, int> = 0>
    TW_FUNC explicit mat_t(S s) {
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j) c[i][j] = cast<T>(s);
    }
    // R*C scalars in row-major order.
    template <typename... S,
              detail::enable_if_t<(sizeof...(S) == R * C && R * C > 1 && detail::all_scalar<S...>::value),
                                  int> = 0>
    TW_FUNC mat_t(S... s) {
        const T flat[R * C] = {cast<T>(s)...};
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j) c[i][j] = flat[i * C + j];
    }
    template <typename S> TW_FUNC explicit mat_t(const mat_t<R, C, S>& o) {
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j) c[i][j] = cast<T>(o.c[i][j]);
    }
    TW_FUNC T* operator[](int i) { return c[i]; }
    TW_FUNC const T* operator[](int i) const { return c[i]; }
};

template <int N, typename T> TW_FUNC mat_t<N, N, T> identity() {
    mat_t<N, N, T> m;
    for (int i = 0; i < N; ++i) m.c[i][i] = detail::one<T>();
    return m;
}

template <int R, int C, typename T>
TW_FUNC bool operator==(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j)
            if (!(a.c[i][j] == b.c[i][j])) return false;
    return true;
}
template <int R, int C, typename T>
TW_FUNC bool operator!=(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { return !(a == b); }
template <int R, int C, typename T>
TW_FUNC bool eq(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { return a == b; }
template <int R, int C, typename T>
TW_FUNC bool ne(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { return !(a == b); }
template <int R, int C, typename T>
TW_FUNC mat_t<R, C, T>& operator+=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) a.c[i][j] += b.c[i][j];
    return a;
}
template <int R, int C, typename T>
TW_FUNC mat_t<R, C, T>& operator-=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) a.c[i][j] -= b.c[i][j];
    return a;
}

#define TW_MAT_MAP2(NAME, FN)                                                               \
    template <int R, int C, typename T>                                                     \
    TW_FUNC mat_t<R, C, T> NAME(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {         \
        mat_t<R, C, T> r;                                                                   \
        for (int i = 0; i < R; ++i)                                                         \
            for (int j = 0; j < C; ++j) r.c[i][j] = FN(a.c[i][j], b.c[i][j]);               \
        return r;                                                                           \
    }
TW_MAT_MAP2(add, add)
TW_MAT_MAP2(sub, sub)
TW_MAT_MAP2(cw_mul, mul)
TW_MAT_MAP2(cw_div, div)
#undef TW_MAT_MAP2

template <int R, int C, typename T> TW_FUNC mat_t<R, C, T> neg(const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.c[i][j] = neg(a.c[i][j]);
    return r;
}
template <int R, int C, typename T> TW_FUNC mat_t<R, C, T> pos(const mat_t<R, C, T>& a) { return a; }
template <int R, int C, typename T> TW_FUNC mat_t<R, C, T> mul(const mat_t<R, C, T>& a, T s) {
    mat_t<R, C, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.c[i][j] = mul(a.c[i][j], s);
    return r;
}
template <int R, int C, typename T> TW_FUNC mat_t<R, C, T> mul(T s, const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.c[i][j] = mul(s, a.c[i][j]);
    return r;
}
template <int R, int C, typename T> TW_FUNC mat_t<R, C, T> div(const mat_t<R, C, T>& a, T s) {
    mat_t<R, C, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.c[i][j] = div(a.c[i][j], s);
    return r;
}
template <int R, int C, typename T> TW_FUNC mat_t<R, C, T> div(T s, const mat_t<R, C, T>& a) {  // s / a[i][j]
    mat_t<R, C, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.c[i][j] = div(s, a.c[i][j]);
    return r;
}
template <int R, int C, typename T>
TW_FUNC void adj_div(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) {
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) adj_div(s, a.c[i][j], adj_s, adj_a.c[i][j], adj_ret.c[i][j]);
}

// Warp's lerp also takes matrices (the type rule accepts them).
template <int R, int C, typename T>
TW_FUNC mat_t<R, C, T> lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t) {
    return add(mul(a, sub(detail::one<T>(), t)), mul(b, t));
}

// Products: matrix-vector, row-vector-matrix, matrix-matrix. `matmul` is Python's @.
template <int R, int C, typename T>
TW_FUNC vec_t<R, T> mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v) {
    vec_t<R, T> r;
    for (int i = 0; i < R; ++i) {
        T s = mul(m.c[i][0], v.c[0]);
        for (int j = 1; j < C; ++j) s = add(s, mul(m.c[i][j], v.c[j]));
        r.c[i] = s;
    }
    return r;
}
template <int R, int C, typename T>
TW_FUNC vec_t<C, T> mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m) {
    vec_t<C, T> r;
    for (int j = 0; j < C; ++j) {
        T s = mul(v.c[0], m.c[0][j]);
        for (int i = 1; i < R; ++i) s = add(s, mul(v.c[i], m.c[i][j]));
        r.c[j] = s;
    }
    return r;
}
template <int R, int K, int C, typename T>
TW_FUNC mat_t<R, C, T> mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) {
    mat_t<R, C, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            T s = mul(a.c[i][0], b.c[0][j]);
            for (int k = 1; k < K; ++k) s = add(s, mul(a.c[i][k], b.c[k][j]));
            r.c[i][j] = s;
        }
    return r;
}
template <int R, int C, typename T>
TW_FUNC vec_t<R, T> matmul(const mat_t<R, C, T>& m, const vec_t<C, T>& v) { return mul(m, v); }
template <int R, int C, typename T>
TW_FUNC vec_t<C, T> matmul(const vec_t<R, T>& v, const mat_t<R, C, T>& m) { return mul(v, m); }
template <int R, int K, int C, typename T>
TW_FUNC mat_t<R, C, T> matmul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) { return mul(a, b); }

template <int R, int C, typename T> TW_FUNC mat_t<C, R, T> transpose(const mat_t<R, C, T>& a) {
    mat_t<C, R, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.c[j][i] = a.c[i][j];
    return r;
}
template <int N, typename T> TW_FUNC T trace(const mat_t<N, N, T>& a) {
    T s = a.c[0][0];
    for (int i = 1; i < N; ++i) s = add(s, a.c[i][i]);
    return s;
}
template <int R, int C, typename T>
TW_FUNC T ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {  // sum of a_ij * b_ij
    T s = detail::zero<T>();
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) s = add(s, mul(a.c[i][j], b.c[i][j]));
    return s;
}
template <int N, typename T> TW_FUNC mat_t<N, N, T> diag(const vec_t<N, T>& d) {
    mat_t<N, N, T> m;
    for (int i = 0; i < N; ++i) m.c[i][i] = d.c[i];
    return m;
}
template <int N, typename T> TW_FUNC vec_t<N, T> get_diag(const mat_t<N, N, T>& m) {
    vec_t<N, T> d;
    for (int i = 0; i < N; ++i) d.c[i] = m.c[i][i];
    return d;
}
// skew(a) * b == cross(a, b)
template <typename T> TW_FUNC mat_t<3, 3, T> skew(const vec_t<3, T>& a) {
    const T z = detail::zero<T>();
    return mat_t<3, 3, T>(z, neg(a.c[2]), a.c[1], a.c[2], z, neg(a.c[0]), neg(a.c[1]), a.c[0], z);
}
template <int R, int C, typename T>
TW_FUNC mat_t<R, C, T> outer(const vec_t<R, T>& a, const vec_t<C, T>& b) {
    mat_t<R, C, T> r;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) r.c[i][j] = mul(a.c[i], b.c[j]);
    return r;
}

template <typename T> TW_FUNC T determinant(const mat_t<2, 2, T>& m) {
    return m.c[0][0] * m.c[1][1] - m.c[0][1] * m.c[1][0];
}
template <typename T> TW_FUNC T determinant(const mat_t<3, 3, T>& m) {
    return m.c[0][0] * (m.c[1][1] * m.c[2][2] - m.c[1][2] * m.c[2][1]) -
           m.c[0][1] * (m.c[1][0] * m.c[2][2] - m.c[1][2] * m.c[2][0]) +
           m.c[0][2] * (m.c[1][0] * m.c[2][1] - m.c[1][1] * m.c[2][0]);
}
namespace detail {
// 2x2 minors of rows (0,1) and (2,3), shared by the 4x4 determinant and inverse.
template <typename T> struct minors4 {
    T s0, s1, s2, s3, s4, s5, c0, c1, c2, c3, c4, c5;
    TW_FUNC explicit minors4(const mat_t<4, 4, T>& m) {
        const T(*a)[4] = m.c;
        s0 = a[0][0] * a[1][1] - a[1][0] * a[0][1];
        s1 = a[0][0] * a[1][2] - a[1][0] * a[0][2];
        s2 = a[0][0] * a[1][3] - a[1][0] * a[0][3];
        s3 = a[0][1] * a[1][2] - a[1][1] * a[0][2];
        s4 = a[0][1] * a[1][3] - a[1][1] * a[0][3];
        s5 = a[0][2] * a[1][3] - a[1][2] * a[0][3];
        c5 = a[2][2] * a[3][3] - a[3][2] * a[2][3];
        c4 = a[2][1] * a[3][3] - a[3][1] * a[2][3];
        c3 = a[2][1] * a[3][2] - a[3][1] * a[2][2];
        c2 = a[2][0] * a[3][3] - a[3][0] * a[2][3];
        c1 = a[2][0] * a[3][2] - a[3][0] * a[2][2];
        c0 = a[2][0] * a[3][1] - a[3][0] * a[2][1];
    }
    TW_FUNC T det() const { return s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0; }
};
}  // namespace detail
template <typename T> TW_FUNC T determinant(const mat_t<4, 4, T>& m) {
    return detail::minors4<T>(m).det();
}

namespace detail {
// adj(m) = det(m) m^-1 (the transposed cofactors): shared by inverse and determinant's adjoint.
template <typename T> TW_FUNC mat_t<2, 2, T> adjugate(const mat_t<2, 2, T>& m) {
    return mat_t<2, 2, T>(m.c[1][1], -m.c[0][1], -m.c[1][0], m.c[0][0]);
}
template <typename T> TW_FUNC mat_t<3, 3, T> adjugate(const mat_t<3, 3, T>& m) {
    const T(*a)[3] = m.c;
    mat_t<3, 3, T> r;
    for (int i = 0; i < 3; ++i) {
        int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; ++j) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;  // cyclic cofactors carry their own sign
            r.c[j][i] = a[i1][j1] * a[i2][j2] - a[i1][j2] * a[i2][j1];
        }
    }
    return r;
}
template <typename T> TW_FUNC mat_t<4, 4, T> adjugate(const mat_t<4, 4, T>& m, const minors4<T>& n) {
    const T(*a)[4] = m.c;
    return mat_t<4, 4, T>(
        a[1][1] * n.c5 - a[1][2] * n.c4 + a[1][3] * n.c3, -a[0][1] * n.c5 + a[0][2] * n.c4 - a[0][3] * n.c3,
        a[3][1] * n.s5 - a[3][2] * n.s4 + a[3][3] * n.s3, -a[2][1] * n.s5 + a[2][2] * n.s4 - a[2][3] * n.s3,
        -a[1][0] * n.c5 + a[1][2] * n.c2 - a[1][3] * n.c1, a[0][0] * n.c5 - a[0][2] * n.c2 + a[0][3] * n.c1,
        -a[3][0] * n.s5 + a[3][2] * n.s2 - a[3][3] * n.s1, a[2][0] * n.s5 - a[2][2] * n.s2 + a[2][3] * n.s1,
        a[1][0] * n.c4 - a[1][1] * n.c2 + a[1][3] * n.c0, -a[0][0] * n.c4 + a[0][1] * n.c2 - a[0][3] * n.c0,
        a[3][0] * n.s4 - a[3][1] * n.s2 + a[3][3] * n.s0, -a[2][0] * n.s4 + a[2][1] * n.s2 - a[2][3] * n.s0,
        -a[1][0] * n.c3 + a[1][1] * n.c1 - a[1][2] * n.c0, a[0][0] * n.c3 - a[0][1] * n.c1 + a[0][2] * n.c0,
        -a[3][0] * n.s3 + a[3][1] * n.s1 - a[3][2] * n.s0, a[2][0] * n.s3 - a[2][1] * n.s1 + a[2][2] * n.s0);
}
template <typename T> TW_FUNC mat_t<4, 4, T> adjugate(const mat_t<4, 4, T>& m) {
    return adjugate(m, minors4<T>(m));
}
}  // namespace detail

// Inverse via the adjugate; a singular matrix gives the zero matrix (no NaNs/infs).
template <typename T> TW_FUNC mat_t<2, 2, T> inverse(const mat_t<2, 2, T>& m) {
    T d = determinant(m);
    if (d == detail::zero<T>()) return mat_t<2, 2, T>();
    return mul(detail::adjugate(m), detail::one<T>() / d);
}
template <typename T> TW_FUNC mat_t<3, 3, T> inverse(const mat_t<3, 3, T>& m) {
    T d = determinant(m);
    if (d == detail::zero<T>()) return mat_t<3, 3, T>();
    return mul(detail::adjugate(m), detail::one<T>() / d);
}
template <typename T> TW_FUNC mat_t<4, 4, T> inverse(const mat_t<4, 4, T>& m) {
    detail::minors4<T> n(m);
    T d = n.det();
    if (d == detail::zero<T>()) return mat_t<4, 4, T>();
    return mul(detail::adjugate(m, n), detail::one<T>() / d);
}

template <int R, int C, typename T> TW_FUNC T extract(const mat_t<R, C, T>& m, int i, int j) {
    if (i < 0) i += R;
    if (j < 0) j += C;
    TW_ASSERT(i >= 0 && i < R && j >= 0 && j < C);
    return m.c[i][j];
}
template <int R, int C, typename T> TW_FUNC vec_t<C, T> extract_row(const mat_t<R, C, T>& m, int i) {
    if (i < 0) i += R;
    TW_ASSERT(i >= 0 && i < R);
    vec_t<C, T> r;
    for (int j = 0; j < C; ++j) r.c[j] = m.c[i][j];
    return r;
}
template <int R, int C, typename T>
TW_FUNC mat_t<R, C, T> with_component(mat_t<R, C, T> m, int i, int j, T v) {
    if (i < 0) i += R;
    if (j < 0) j += C;
    TW_ASSERT(i >= 0 && i < R && j >= 0 && j < C);
    m.c[i][j] = v;
    return m;
}
template <int R, int C, typename T>
TW_FUNC mat_t<R, C, T> with_row(mat_t<R, C, T> m, int i, const vec_t<C, T>& v) {
    if (i < 0) i += R;
    TW_ASSERT(i >= 0 && i < R);
    for (int j = 0; j < C; ++j) m.c[i][j] = v.c[j];
    return m;
}

// Warp's matrix_from_rows / matrix_from_cols.
template <int C, typename T, typename... V>
TW_FUNC mat_t<1 + sizeof...(V), C, T> matrix_from_rows(const vec_t<C, T>& r0, const V&... rest) {
    const vec_t<C, T> rows[] = {r0, rest...};
    mat_t<1 + sizeof...(V), C, T> m;
    for (int i = 0; i < 1 + (int)sizeof...(V); ++i)
        for (int j = 0; j < C; ++j) m.c[i][j] = rows[i].c[j];
    return m;
}
template <int R, typename T, typename... V>
TW_FUNC mat_t<R, 1 + sizeof...(V), T> matrix_from_cols(const vec_t<R, T>& c0, const V&... rest) {
    return transpose(matrix_from_rows(c0, rest...));
}
}  // namespace tw

// ---------------------------------------------------------------------------------------
// Adjoints (docs/AUTODIFF.md), after vec.h's: primal arguments, accumulated adjoints, adj_ret.
namespace tw {
namespace detail {
template <int R, int C, typename T> TW_FUNC void acc(mat_t<R, C, T>& d, const mat_t<R, C, T>& g) {
    if constexpr (is_float<T>::value)
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < C; ++j) d.c[i][j] += g.c[i][j];
}
}  // namespace detail

template <int R, int C, typename T>
TW_FUNC void adj_add(const mat_t<R, C, T>&, const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a,
                     mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    detail::acc(adj_a, adj_ret);
    detail::acc(adj_b, adj_ret);
}
template <int R, int C, typename T>
TW_FUNC void adj_sub(const mat_t<R, C, T>&, const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a,
                     mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    detail::acc(adj_a, adj_ret);
    detail::acc(adj_b, neg(adj_ret));
}
template <int R, int C, typename T>
TW_FUNC void adj_neg(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) {
    detail::acc(adj_a, neg(adj_ret));
}
template <int R, int C, typename T>
TW_FUNC void adj_pos(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) {
    detail::acc(adj_a, adj_ret);
}
template <int R, int C, typename T>
TW_FUNC void adj_cw_mul(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                        mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    detail::acc(adj_a, cw_mul(b, adj_ret));
    detail::acc(adj_b, cw_mul(a, adj_ret));
}
template <int R, int C, typename T>
TW_FUNC void adj_cw_div(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                        mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    mat_t<R, C, T> gb = cw_div(adj_ret, b);
    detail::acc(adj_a, gb);
    detail::acc(adj_b, neg(cw_mul(gb, cw_div(a, b))));
}
template <int R, int C, typename T>
TW_FUNC void adj_mul(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                     const mat_t<R, C, T>& adj_ret) {
    detail::acc(adj_a, mul(adj_ret, s));
    detail::acc(adj_s, ddot(a, adj_ret));
}
template <int R, int C, typename T>
TW_FUNC void adj_mul(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                     const mat_t<R, C, T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}
template <int R, int C, typename T>
TW_FUNC void adj_div(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                     const mat_t<R, C, T>& adj_ret) {
    mat_t<R, C, T> gs = div(adj_ret, s);
    detail::acc(adj_a, gs);
    detail::acc(adj_s, neg(ddot(gs, div(a, s))));
}

// Products (also `@`): r = m v gives adj_m += g v^T, adj_v += m^T g; r = v m gives adj_v += m g,
// adj_m += v g^T; R = A B gives adj_A += G B^T, adj_B += A^T G.
template <int R, int C, typename T>
TW_FUNC void adj_mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v, mat_t<R, C, T>& adj_m, vec_t<C, T>& adj_v,
                     const vec_t<R, T>& adj_ret) {
    detail::acc(adj_m, outer(adj_ret, v));
    detail::acc(adj_v, mul(adj_ret, m));
}
template <int R, int C, typename T>
TW_FUNC void adj_mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m, vec_t<R, T>& adj_v, mat_t<R, C, T>& adj_m,
                     const vec_t<C, T>& adj_ret) {
    detail::acc(adj_v, mul(m, adj_ret));
    detail::acc(adj_m, outer(v, adj_ret));
}
template <int R, int K, int C, typename T>
TW_FUNC void adj_mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b, mat_t<R, K, T>& adj_a,
                     mat_t<K, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    detail::acc(adj_a, mul(adj_ret, transpose(b)));
    detail::acc(adj_b, mul(transpose(a), adj_ret));
}
template <int R, int C, typename T>
TW_FUNC void adj_transpose(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, const mat_t<C, R, T>& adj_ret) {
    detail::acc(adj_a, transpose(adj_ret));
}
template <int N, typename T> TW_FUNC void adj_trace(const mat_t<N, N, T>&, mat_t<N, N, T>& adj_a, T adj_ret) {
    for (int i = 0; i < N; ++i) detail::acc(adj_a.c[i][i], adj_ret);
}
template <int R, int C, typename T>
TW_FUNC void adj_ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                      mat_t<R, C, T>& adj_b, T adj_ret) {
    detail::acc(adj_a, mul(b, adj_ret));
    detail::acc(adj_b, mul(a, adj_ret));
}
template <int N, typename T>
TW_FUNC void adj_diag(const vec_t<N, T>&, vec_t<N, T>& adj_d, const mat_t<N, N, T>& adj_ret) {
    detail::acc(adj_d, get_diag(adj_ret));
}
template <int N, typename T>
TW_FUNC void adj_get_diag(const mat_t<N, N, T>&, mat_t<N, N, T>& adj_m, const vec_t<N, T>& adj_ret) {
    detail::acc(adj_m, diag(adj_ret));
}
// skew(a) = [[0, -a2, a1], [a2, 0, -a0], [-a1, a0, 0]]
template <typename T>
TW_FUNC void adj_skew(const vec_t<3, T>&, vec_t<3, T>& adj_a, const mat_t<3, 3, T>& adj_ret) {
    const T(*g)[3] = adj_ret.c;
    detail::acc(adj_a, vec_t<3, T>(g[2][1] - g[1][2], g[0][2] - g[2][0], g[1][0] - g[0][1]));
}
template <int R, int C, typename T>
TW_FUNC void adj_outer(const vec_t<R, T>& a, const vec_t<C, T>& b, vec_t<R, T>& adj_a, vec_t<C, T>& adj_b,
                       const mat_t<R, C, T>& adj_ret) {
    detail::acc(adj_a, mul(adj_ret, b));
    detail::acc(adj_b, mul(a, adj_ret));
}
template <int R, int C, typename T>
TW_FUNC void adj_lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t, mat_t<R, C, T>& adj_a,
                      mat_t<R, C, T>& adj_b, T& adj_t, const mat_t<R, C, T>& adj_ret) {
    detail::acc(adj_a, mul(adj_ret, detail::one<T>() - t));
    detail::acc(adj_b, mul(adj_ret, t));
    detail::acc(adj_t, ddot(sub(b, a), adj_ret));
}

// d det(m) / dm is the cofactor matrix, the adjugate's transpose: exact for singular m too.
template <int N, typename T>
TW_FUNC void adj_determinant(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, T adj_ret) {
    detail::acc(adj_m, mul(transpose(detail::adjugate(m)), adj_ret));
}
// R = m^-1: adj_m = -R^T G R^T. A singular m (inverse returns the constant zero matrix) gets none.
template <int N, typename T>
TW_FUNC void adj_inverse(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const mat_t<N, N, T>& adj_ret) {
    mat_t<N, N, T> rt = transpose(inverse(m));
    detail::acc(adj_m, neg(mul(mul(rt, adj_ret), rt)));
}

template <int R, int C, typename T, typename I, typename J>
TW_FUNC void adj_extract(const mat_t<R, C, T>&, int i, int j, mat_t<R, C, T>& adj_m, I&, J&, T adj_ret) {
    if (i < 0) i += R;
    if (j < 0) j += C;
    if (i >= 0 && i < R && j >= 0 && j < C) detail::acc(adj_m.c[i][j], adj_ret);
}
template <int R, int C, typename T, typename I>
TW_FUNC void adj_extract_row(const mat_t<R, C, T>&, int i, mat_t<R, C, T>& adj_m, I&,
                             const vec_t<C, T>& adj_ret) {
    if (i < 0) i += R;
    if (i >= 0 && i < R)
        for (int j = 0; j < C; ++j) detail::acc(adj_m.c[i][j], adj_ret.c[j]);
}
template <int R, int C, typename T, typename I, typename J>
TW_FUNC void adj_with_component(const mat_t<R, C, T>&, int i, int j, T, mat_t<R, C, T>& adj_m, I&, J&,
                                T& adj_v, const mat_t<R, C, T>& adj_ret) {
    if (i < 0) i += R;
    if (j < 0) j += C;
    mat_t<R, C, T> g = adj_ret;
    if (i >= 0 && i < R && j >= 0 && j < C) {
        detail::acc(adj_v, g.c[i][j]);
        g.c[i][j] = detail::zero<T>();
    }
    detail::acc(adj_m, g);
}
template <int R, int C, typename T, typename I>
TW_FUNC void adj_with_row(const mat_t<R, C, T>&, int i, const vec_t<C, T>&, mat_t<R, C, T>& adj_m, I&,
                          vec_t<C, T>& adj_v, const mat_t<R, C, T>& adj_ret) {
    if (i < 0) i += R;
    mat_t<R, C, T> g = adj_ret;
    if (i >= 0 && i < R)
        for (int j = 0; j < C; ++j) {
            detail::acc(adj_v.c[j], g.c[i][j]);
            g.c[i][j] = detail::zero<T>();
        }
    detail::acc(adj_m, g);
}

// matrix_from_rows(r0, ..., rn-1) / matrix_from_cols: the emitter passes the n vectors, their n
// adjoints, then the matrix adjoint; the adjoint at position n + k receives row / column k.
namespace detail {
template <typename X> TW_FUNC X&& last_arg(X&& x) { return (X&&)x; }
template <typename X, typename... Y> TW_FUNC decltype(auto) last_arg(X&&, Y&&... y) {
    return last_arg((Y&&)y...);
}
template <bool COLS, int R, int C, typename T, int N>
TW_FUNC void from_vectors_step(int k, const mat_t<R, C, T>& g, vec_t<N, T>& adj) {
    if (k < 0 || k >= (COLS ? C : R)) return;  // a primal vector (which may be non-const too)
    for (int j = 0; j < N; ++j) acc(adj.c[j], COLS ? g.c[j][k] : g.c[k][j]);
}
template <bool COLS, typename M, typename X> TW_FUNC void from_vectors_step(int, const M&, const X&) {}
template <bool COLS, typename... A> TW_FUNC void adj_from_vectors(A&&... a) {
    const auto& g = last_arg(a...);
    int k = -(int)((sizeof...(A) - 1) / 2);
    (from_vectors_step<COLS>(k++, g, a), ...);
}
}  // namespace detail
template <typename... A> TW_FUNC void adj_matrix_from_rows(A&&... a) {
    detail::adj_from_vectors<false>(a...);
}
template <typename... A> TW_FUNC void adj_matrix_from_cols(A&&... a) {
    detail::adj_from_vectors<true>(a...);
}

// construct: a vector, matrix, quaternion, transform or scalar type R built from components,
// one fill value, a same-shaped value of another scalar type (a cast), or consecutive parts
// (quat(ijk, w), transform(p[, q]), spatial_vector(w, v)). Every form is linear, so the
// adjoint needs no primal values: tw::adj_construct(adj_ret, adj_args...) (adjoint_emit).
namespace detail {
template <TW_IF_SCALAR(S)> TW_FUNC S* flat(S& x) { return &x; }
template <TW_IF_SCALAR(S)> TW_FUNC const S* flat(const S& x) { return &x; }
template <int N, typename S> TW_FUNC S* flat(vec_t<N, S>& v) { return v.c; }
template <int N, typename S> TW_FUNC const S* flat(const vec_t<N, S>& v) { return v.c; }
template <int R, int C, typename S> TW_FUNC S* flat(mat_t<R, C, S>& m) { return &m.c[0][0]; }
template <int R, int C, typename S> TW_FUNC const S* flat(const mat_t<R, C, S>& m) { return &m.c[0][0]; }
// Only float-to-float conversions carry a gradient.
template <typename D, typename S> TW_FUNC void acc_cast(D& d, S g) {
    if constexpr (is_float<D>::value && is_float<S>::value) d += cast<D>(g);
}
template <typename S, typename X> TW_FUNC void construct_part(const S* g, int& off, X& adj) {
    auto* d = flat(adj);
    for (int i = 0; i < (int)(sizeof(X) / sizeof(*d)); ++i) acc_cast(d[i], g[off + i]);
    off += (int)(sizeof(X) / sizeof(*d));
}
}  // namespace detail
template <typename R, typename... A> TW_FUNC void adj_construct(const R& adj_ret, A&&... adj) {
    const auto* g = detail::flat(adj_ret);
    constexpr int n = (int)(sizeof(R) / sizeof(*g));
    if constexpr (sizeof...(A) == 1 && n > 1 && (... && (sizeof(adj) == sizeof(*detail::flat(adj))))) {
        auto s = g[0];  // fill: one value copied to every component
        for (int i = 1; i < n; ++i) s = add(s, g[i]);
        (detail::acc_cast(*detail::flat(adj), s), ...);
    } else {
        int off = 0;  // components, parts in order, or a cast (one part of R's size)
        (detail::construct_part(g, off, adj), ...);
    }
}
}  // namespace tw
