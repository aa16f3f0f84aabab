// Rigid transforms: tw::transform_t<T> = translation p (3 scalars) then rotation q (x, y, z, w),
// a vec_t<7, T> like Warp's transform arrays, so componentwise builtins (add, scale, extract,
// with_component) come from vec_t.
#pragma once
#include "quat.h"

namespace tw {
template <typename T> struct transform_t : vec_t<7, T> {
    typedef vec_t<7, T> base;
    TW_FUNC transform_t() : base() {}  // zero, as Warp's transform() in kernels
    template <typename S, detail::enable_if_t<detail::is_scalar<S>::value, int> = 0>
    TW_FUNC explicit transform_t(S s) : base(s) {}
    template <typename... S,
              detail::enable_if_t<(sizeof...(S) == 7 && detail::all_scalar<S...>::value), int> = 0>
    TW_FUNC transform_t(S... s) : base(s...) {}
    TW_FUNC transform_t(const vec_t<3, T>& p, const quat_t<T>& q) {
        for (int i = 0; i < 3; ++i) this->c[i] = p.c[i];
        for (int i = 0; i < 4; ++i) this->c[3 + i] = q.c[i];
    }
    TW_FUNC explicit transform_t(const vec_t<3, T>& p) : transform_t(p, quat_identity<T>()) {}
    TW_FUNC transform_t(const base& v) : base(v) {}
    template <typename S>
    TW_FUNC explicit transform_t(const transform_t<S>& o) : base(static_cast<const vec_t<7, S>&>(o)) {}

    TW_FUNC vec_t<3, T> p() const { return vec_t<3, T>(this->c[0], this->c[1], this->c[2]); }
    TW_FUNC quat_t<T> q() const { return quat_t<T>(this->c[3], this->c[4], this->c[5], this->c[6]); }
};

template <typename T> TW_FUNC transform_t<T> transform_identity() {
    return transform_t<T>(vec_t<3, T>(), quat_identity<T>());
}
template <typename T> TW_FUNC vec_t<3, T> transform_get_translation(const transform_t<T>& t) { return t.p(); }
template <typename T> TW_FUNC quat_t<T> transform_get_rotation(const transform_t<T>& t) { return t.q(); }
// t.p = v / t.q = r in kernels (a new value: locals are values in tilewarp's IR).
template <typename T>
TW_FUNC transform_t<T> transform_with_translation(const transform_t<T>& t, const vec_t<3, T>& p) {
    return transform_t<T>(p, t.q());
}
template <typename T>
TW_FUNC transform_t<T> transform_with_rotation(const transform_t<T>& t, const quat_t<T>& q) {
    return transform_t<T>(t.p(), q);
}

template <typename T> TW_FUNC vec_t<3, T> transform_point(const transform_t<T>& t, const vec_t<3, T>& x) {
    return add(quat_rotate(t.q(), x), t.p());
}
template <typename T> TW_FUNC vec_t<3, T> transform_vector(const transform_t<T>& t, const vec_t<3, T>& x) {
    return quat_rotate(t.q(), x);
}
// 4x4 homogeneous matrices: a point gets the translation column, a vector does not.
template <typename T> TW_FUNC vec_t<3, T> transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    vec_t<3, T> r;
    for (int i = 0; i < 3; ++i) r.c[i] = m.c[i][0] * x.c[0] + m.c[i][1] * x.c[1] + m.c[i][2] * x.c[2] + m.c[i][3];
    return r;
}
template <typename T> TW_FUNC vec_t<3, T> transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    vec_t<3, T> r;
    for (int i = 0; i < 3; ++i) r.c[i] = m.c[i][0] * x.c[0] + m.c[i][1] * x.c[1] + m.c[i][2] * x.c[2];
    return r;
}

// a * b applies b first, then a.
template <typename T> TW_FUNC transform_t<T> transform_multiply(const transform_t<T>& a, const transform_t<T>& b) {
    return transform_t<T>(add(quat_rotate(a.q(), b.p()), a.p()), mul(a.q(), b.q()));
}
template <typename T> TW_FUNC transform_t<T> mul(const transform_t<T>& a, const transform_t<T>& b) {
    return transform_multiply(a, b);
}
template <typename T> TW_FUNC transform_t<T> transform_inverse(const transform_t<T>& t) {
    quat_t<T> qi = quat_inverse(t.q());
    return transform_t<T>(neg(quat_rotate(qi, t.p())), qi);
}
template <typename T> TW_FUNC mat_t<4, 4, T> transform_to_matrix(const transform_t<T>& t) {
    mat_t<3, 3, T> r = quat_to_matrix(t.q());
    vec_t<3, T> p = t.p();
    mat_t<4, 4, T> m;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) m.c[i][j] = r.c[i][j];
        m.c[i][3] = p.c[i];
    }
    m.c[3][3] = detail::one<T>();
    return m;
}
}  // namespace tw

namespace tw {
// Change of frame of a twist (w, v) / wrench (t, f) by a rigid transform: both halves are
// rotated, and the moment arm p adds p x w to a twist's linear part, p x f to a wrench's torque.
template <typename T> TW_FUNC vec_t<6, T> transform_twist(const transform_t<T>& t, const vec_t<6, T>& x) {
    quat_t<T> q = t.q();
    vec_t<3, T> w = quat_rotate(q, vec_t<3, T>(x.c[0], x.c[1], x.c[2]));
    vec_t<3, T> v = quat_rotate(q, vec_t<3, T>(x.c[3], x.c[4], x.c[5]));
    return vec_t<6, T>(w, add(v, cross(t.p(), w)));
}
template <typename T> TW_FUNC vec_t<6, T> transform_wrench(const transform_t<T>& t, const vec_t<6, T>& x) {
    quat_t<T> q = t.q();
    vec_t<3, T> tau = quat_rotate(q, vec_t<3, T>(x.c[0], x.c[1], x.c[2]));
    vec_t<3, T> f = quat_rotate(q, vec_t<3, T>(x.c[3], x.c[4], x.c[5]));
    return vec_t<6, T>(add(tau, cross(t.p(), f)), f);
}
}  // namespace tw
