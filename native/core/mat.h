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

// Inverse via the adjugate; a singular matrix gives the zero matrix (no NaNs/infs).
template <typename T> TW_FUNC mat_t<2, 2, T> inverse(const mat_t<2, 2, T>& m) {
    T d = determinant(m);
    if (d == detail::zero<T>()) return mat_t<2, 2, T>();
    T k = detail::one<T>() / d;
    return mat_t<2, 2, T>(m.c[1][1] * k, -m.c[0][1] * k, -m.c[1][0] * k, m.c[0][0] * k);
}
template <typename T> TW_FUNC mat_t<3, 3, T> inverse(const mat_t<3, 3, T>& m) {
    T d = determinant(m);
    if (d == detail::zero<T>()) return mat_t<3, 3, T>();
    T k = detail::one<T>() / d;
    const T(*a)[3] = m.c;
    mat_t<3, 3, T> r;
    for (int i = 0; i < 3; ++i) {
        int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; ++j) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;  // cyclic cofactors carry their own sign
            r.c[j][i] = (a[i1][j1] * a[i2][j2] - a[i1][j2] * a[i2][j1]) * k;
        }
    }
    return r;
}
template <typename T> TW_FUNC mat_t<4, 4, T> inverse(const mat_t<4, 4, T>& m) {
    detail::minors4<T> n(m);
    T d = n.det();
    if (d == detail::zero<T>()) return mat_t<4, 4, T>();
    T k = detail::one<T>() / d;
    const T(*a)[4] = m.c;
    return mat_t<4, 4, T>(
        (a[1][1] * n.c5 - a[1][2] * n.c4 + a[1][3] * n.c3) * k,
        (-a[0][1] * n.c5 + a[0][2] * n.c4 - a[0][3] * n.c3) * k,
        (a[3][1] * n.s5 - a[3][2] * n.s4 + a[3][3] * n.s3) * k,
        (-a[2][1] * n.s5 + a[2][2] * n.s4 - a[2][3] * n.s3) * k,
        (-a[1][0] * n.c5 + a[1][2] * n.c2 - a[1][3] * n.c1) * k,
        (a[0][0] * n.c5 - a[0][2] * n.c2 + a[0][3] * n.c1) * k,
        (-a[3][0] * n.s5 + a[3][2] * n.s2 - a[3][3] * n.s1) * k,
        (a[2][0] * n.s5 - a[2][2] * n.s2 + a[2][3] * n.s1) * k,
        (a[1][0] * n.c4 - a[1][1] * n.c2 + a[1][3] * n.c0) * k,
        (-a[0][0] * n.c4 + a[0][1] * n.c2 - a[0][3] * n.c0) * k,
        (a[3][0] * n.s4 - a[3][1] * n.s2 + a[3][3] * n.s0) * k,
        (-a[2][0] * n.s4 + a[2][1] * n.s2 - a[2][3] * n.s0) * k,
        (-a[1][0] * n.c3 + a[1][1] * n.c1 - a[1][2] * n.c0) * k,
        (a[0][0] * n.c3 - a[0][1] * n.c1 + a[0][2] * n.c0) * k,
        (-a[3][0] * n.s3 + a[3][1] * n.s1 - a[3][2] * n.s0) * k,
        (a[2][0] * n.s3 - a[2][1] * n.s1 + a[2][2] * n.s0) * k);
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
