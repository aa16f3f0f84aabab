// Quaternions: tw::quat_t<T> = (x, y, z, w), a vec_t<4, T> (same layout as Warp's quat arrays).
// Deriving from vec_t reuses every componentwise builtin (add, scale, dot, length, normalize,
// extract, with_component); their vec_t results convert back implicitly.
#pragma once
#include "mat.h"
#include "tuple.h"

namespace tw {
template <typename T> struct quat_t : vec_t<4, T> {
    typedef vec_t<4, T> base;
    TW_FUNC quat_t() : base() {}  // zero, as Warp's quat() in kernels
    template <typename S, detail::enable_if_t<detail::is_scalar<S>::value, int> = 0>
    TW_FUNC explicit quat_t(S s) : base(s) {}
    template <typename A, typename B, typename C, typename D,
              detail::enable_if_t<detail::all_scalar<A, B, C, D>::value, int> = 0>
    TW_FUNC quat_t(A x, B y, C z, D w) : base(x, y, z, w) {}
    TW_FUNC quat_t(const vec_t<3, T>& v, T w) : base(v.c[0], v.c[1], v.c[2], w) {}
    TW_FUNC quat_t(const base& v) : base(v) {}
    template <typename S>
    TW_FUNC explicit quat_t(const quat_t<S>& o) : base(static_cast<const vec_t<4, S>&>(o)) {}

    TW_FUNC vec_t<3, T> v() const { return vec_t<3, T>(this->c[0], this->c[1], this->c[2]); }
    TW_FUNC T w() const { return this->c[3]; }
};

template <typename T> TW_FUNC quat_t<T> quat_identity() {
    return quat_t<T>(detail::zero<T>(), detail::zero<T>(), detail::zero<T>(), detail::one<T>());
}

// Hamilton product.
template <typename T> TW_FUNC quat_t<T> mul(const quat_t<T>& a, const quat_t<T>& b) {
    vec_t<3, T> av = a.v(), bv = b.v();
    vec_t<3, T> v = add(add(mul(a.w(), bv), mul(b.w(), av)), cross(av, bv));
    return quat_t<T>(v, a.w() * b.w() - dot(av, bv));
}

// The conjugate (Warp does not divide by the squared norm).
template <typename T> TW_FUNC quat_t<T> quat_inverse(const quat_t<T>& q) {
    return quat_t<T>(-q.c[0], -q.c[1], -q.c[2], q.c[3]);
}

// The axis is used as given (not normalised), as in Warp.
template <typename T> TW_FUNC quat_t<T> quat_from_axis_angle(const vec_t<3, T>& axis, T angle) {
    T h = angle * cast<T>(0.5);
    return quat_t<T>(mul(axis, sin(h)), cos(h));
}

// q x q^-1 written so that it is also Warp's result for non-unit q.
template <typename T> TW_FUNC vec_t<3, T> quat_rotate(const quat_t<T>& q, const vec_t<3, T>& x) {
    T w = q.w(), two = cast<T>(2);
    vec_t<3, T> v = q.v();
    return add(add(mul(x, w * w * two - detail::one<T>()), mul(cross(v, x), w * two)), mul(v, dot(v, x) * two));
}
template <typename T> TW_FUNC vec_t<3, T> quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& x) {
    T w = q.w(), two = cast<T>(2);
    vec_t<3, T> v = q.v();
    return add(sub(mul(x, w * w * two - detail::one<T>()), mul(cross(v, x), w * two)), mul(v, dot(v, x) * two));
}

// Columns are the rotated basis vectors.
template <typename T> TW_FUNC mat_t<3, 3, T> quat_to_matrix(const quat_t<T>& q) {
    mat_t<3, 3, T> m;
    for (int j = 0; j < 3; ++j) {
        vec_t<3, T> e;
        e.c[j] = detail::one<T>();
        vec_t<3, T> col = quat_rotate(q, e);
        for (int i = 0; i < 3; ++i) m.c[i][j] = col.c[i];
    }
    return m;
}

// Shepperd's method on the upper-left 3x3 block, normalised; the branch's pivot component is
// positive (w when the trace is non-negative), which fixes the sign the way Warp does.
template <int N, typename T> TW_FUNC quat_t<T> quat_from_matrix(const mat_t<N, N, T>& m) {
    static_assert(N == 3 || N == 4, "quat_from_matrix takes a 3x3 or 4x4 matrix");
    const T one = detail::one<T>(), half = cast<T>(0.5);
    T tr = m.c[0][0] + m.c[1][1] + m.c[2][2];
    quat_t<T> q;
    if (tr >= detail::zero<T>()) {
        T h = sqrt(tr + one), f = half / h;
        q = quat_t<T>((m.c[2][1] - m.c[1][2]) * f, (m.c[0][2] - m.c[2][0]) * f, (m.c[1][0] - m.c[0][1]) * f, half * h);
    } else if (m.c[0][0] >= m.c[1][1] && m.c[0][0] >= m.c[2][2]) {
        T h = sqrt(m.c[0][0] - m.c[1][1] - m.c[2][2] + one), f = half / h;
        q = quat_t<T>(half * h, (m.c[0][1] + m.c[1][0]) * f, (m.c[2][0] + m.c[0][2]) * f, (m.c[2][1] - m.c[1][2]) * f);
    } else if (m.c[1][1] >= m.c[2][2]) {
        T h = sqrt(m.c[1][1] - m.c[2][2] - m.c[0][0] + one), f = half / h;
        q = quat_t<T>((m.c[0][1] + m.c[1][0]) * f, half * h, (m.c[1][2] + m.c[2][1]) * f, (m.c[0][2] - m.c[2][0]) * f);
    } else {
        T h = sqrt(m.c[2][2] - m.c[0][0] - m.c[1][1] + one), f = half / h;
        q = quat_t<T>((m.c[2][0] + m.c[0][2]) * f, (m.c[1][2] + m.c[2][1]) * f, half * h, (m.c[1][0] - m.c[0][1]) * f);
    }
    return normalize(q);
}

// Axis and angle in [0, pi]: a negative w flips the axis (q and -q are one rotation).
template <typename T> TW_FUNC tuple_t<vec_t<3, T>, T> quat_to_axis_angle(const quat_t<T>& q) {
    vec_t<3, T> v = q.v();
    T w = q.w();
    vec_t<3, T> axis = normalize(v);
    if (w < detail::zero<T>()) axis = neg(axis);
    return make_tuple<vec_t<3, T>, T>(axis, cast<T>(2) * atan2(length(v), abs(w)));
}

// a * (a^-1 b)^t through axis-angle, which takes the shorter arc and is exact at a == b.
template <typename T> TW_FUNC quat_t<T> quat_slerp(const quat_t<T>& a, const quat_t<T>& b, T t) {
    tuple_t<vec_t<3, T>, T> aa = quat_to_axis_angle(mul(quat_inverse(a), b));
    return mul(a, quat_from_axis_angle(get<0>(aa), get<1>(aa) * t));
}

// Roll about x, then pitch about y, then yaw about z (q = qz * qy * qx).
template <typename T> TW_FUNC quat_t<T> quat_rpy(T roll, T pitch, T yaw) {
    const T half = cast<T>(0.5);
    T cr = cos(roll * half), sr = sin(roll * half);
    T cp = cos(pitch * half), sp = sin(pitch * half);
    T cy = cos(yaw * half), sy = sin(yaw * half);
    return quat_t<T>(sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
                     cr * cp * cy + sr * sp * sy);
}
}  // namespace tw
