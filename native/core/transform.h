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

// ---------------------------------------------------------------------------------------
// Adjoints (docs/AUTODIFF.md; rotation and product adjoints are in quat.h).
namespace tw {
namespace detail {
template <typename T>
TW_FUNC void sp_acc_t(transform_t<T>& a, const vec_t<3, T>& gp, const vec_t<4, T>& gq) {
    for (int i = 0; i < 3; ++i) a.c[i] += gp.c[i];
    for (int i = 0; i < 4; ++i) a.c[3 + i] += gq.c[i];
}
}  // namespace detail

template <typename T>
TW_FUNC void adj_transform_get_translation(const transform_t<T>&, transform_t<T>& adj_t,
                                           const vec_t<3, T>& adj_r) {
    detail::sp_acc_t(adj_t, adj_r, vec_t<4, T>());
}
template <typename T>
TW_FUNC void adj_transform_get_rotation(const transform_t<T>&, transform_t<T>& adj_t,
                                        const quat_t<T>& adj_r) {
    detail::sp_acc_t(adj_t, vec_t<3, T>(), adj_r);
}
template <typename T>
TW_FUNC void adj_transform_with_translation(const transform_t<T>&, const vec_t<3, T>&, transform_t<T>& adj_t,
                                            vec_t<3, T>& adj_p, const transform_t<T>& adj_r) {
    detail::sp_acc_t(adj_t, vec_t<3, T>(), adj_r.q());
    adj_p += adj_r.p();
}
template <typename T>
TW_FUNC void adj_transform_with_rotation(const transform_t<T>&, const quat_t<T>&, transform_t<T>& adj_t,
                                         quat_t<T>& adj_q, const transform_t<T>& adj_r) {
    detail::sp_acc_t(adj_t, adj_r.p(), vec_t<4, T>());
    adj_q += adj_r.q();
}

template <typename T>
TW_FUNC void adj_transform_vector(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                  vec_t<3, T>& adj_x, const vec_t<3, T>& adj_r) {
    quat_t<T> adj_q;
    detail::adj_rotate(t.q(), x, adj_r, detail::one<T>(), adj_q, adj_x);
    detail::sp_acc_t(adj_t, vec_t<3, T>(), adj_q);
}
template <typename T>
TW_FUNC void adj_transform_point(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                 vec_t<3, T>& adj_x, const vec_t<3, T>& adj_r) {
    detail::sp_acc_t(adj_t, adj_r, vec_t<4, T>());
    adj_transform_vector(t, x, adj_t, adj_x, adj_r);
}
template <typename T>
TW_FUNC void adj_transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                  vec_t<3, T>& adj_x, const vec_t<3, T>& adj_r) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            adj_m.c[i][j] += adj_r.c[i] * x.c[j];
            adj_x.c[j] += m.c[i][j] * adj_r.c[i];
        }
}
template <typename T>
TW_FUNC void adj_transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                 vec_t<3, T>& adj_x, const vec_t<3, T>& adj_r) {
    for (int i = 0; i < 3; ++i) adj_m.c[i][3] += adj_r.c[i];
    adj_transform_vector(m, x, adj_m, adj_x, adj_r);
}

template <typename T>
TW_FUNC void adj_transform_multiply(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a,
                                    transform_t<T>& adj_b, const transform_t<T>& adj_r) {
    quat_t<T> adj_qa, adj_qb;
    vec_t<3, T> adj_pb, gp = adj_r.p();
    detail::adj_rotate(a.q(), b.p(), gp, detail::one<T>(), adj_qa, adj_pb);
    adj_mul(a.q(), b.q(), adj_qa, adj_qb, adj_r.q());
    detail::sp_acc_t(adj_a, gp, adj_qa);
    detail::sp_acc_t(adj_b, adj_pb, adj_qb);
}
template <typename T>
TW_FUNC void adj_mul(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a,
                     transform_t<T>& adj_b, const transform_t<T>& adj_r) {
    adj_transform_multiply(a, b, adj_a, adj_b, adj_r);
}
// (-rotate(qi, p), qi) with qi = conj(q).
template <typename T>
TW_FUNC void adj_transform_inverse(const transform_t<T>& t, transform_t<T>& adj_t,
                                   const transform_t<T>& adj_r) {
    quat_t<T> qi = quat_inverse(t.q()), adj_qi = adj_r.q();
    vec_t<3, T> adj_p;
    detail::adj_rotate(qi, t.p(), neg(adj_r.p()), detail::one<T>(), adj_qi, adj_p);
    detail::sp_acc_t(adj_t, adj_p, quat_inverse(adj_qi));
}
template <typename T>
TW_FUNC void adj_transform_to_matrix(const transform_t<T>& t, transform_t<T>& adj_t,
                                     const mat_t<4, 4, T>& adj_r) {
    mat_t<3, 3, T> gr;
    vec_t<3, T> gp;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) gr.c[i][j] = adj_r.c[i][j];
        gp.c[i] = adj_r.c[i][3];
    }
    quat_t<T> adj_q;
    adj_quat_to_matrix(t.q(), adj_q, gr);
    detail::sp_acc_t(adj_t, gp, adj_q);
}

// Twist: (w, v) -> (R w, R v + p x R w); wrench: (tau, f) -> (R tau + p x R f, R f). With
// g . (p x y) = y . (g x p) = p . (y x g) for the cross terms.
template <typename T>
TW_FUNC void adj_transform_twist(const transform_t<T>& t, const vec_t<6, T>& x, transform_t<T>& adj_t,
                                 vec_t<6, T>& adj_x, const vec_t<6, T>& adj_r) {
    quat_t<T> q = t.q(), adj_q;
    vec_t<3, T> p = t.p(), xw(x.c[0], x.c[1], x.c[2]), xv(x.c[3], x.c[4], x.c[5]);
    vec_t<3, T> gtop(adj_r.c[0], adj_r.c[1], adj_r.c[2]), gbot(adj_r.c[3], adj_r.c[4], adj_r.c[5]);
    vec_t<3, T> w = quat_rotate(q, xw), adj_xw, adj_xv;
    detail::adj_rotate(q, xw, add(gtop, cross(gbot, p)), detail::one<T>(), adj_q, adj_xw);
    detail::adj_rotate(q, xv, gbot, detail::one<T>(), adj_q, adj_xv);
    detail::sp_acc_t(adj_t, cross(w, gbot), adj_q);
    adj_x += vec_t<6, T>(adj_xw, adj_xv);
}
template <typename T>
TW_FUNC void adj_transform_wrench(const transform_t<T>& t, const vec_t<6, T>& x, transform_t<T>& adj_t,
                                  vec_t<6, T>& adj_x, const vec_t<6, T>& adj_r) {
    quat_t<T> q = t.q(), adj_q;
    vec_t<3, T> p = t.p(), xt(x.c[0], x.c[1], x.c[2]), xf(x.c[3], x.c[4], x.c[5]);
    vec_t<3, T> gtop(adj_r.c[0], adj_r.c[1], adj_r.c[2]), gbot(adj_r.c[3], adj_r.c[4], adj_r.c[5]);
    vec_t<3, T> f = quat_rotate(q, xf), adj_xt, adj_xf;
    detail::adj_rotate(q, xt, gtop, detail::one<T>(), adj_q, adj_xt);
    detail::adj_rotate(q, xf, add(gbot, cross(gtop, p)), detail::one<T>(), adj_q, adj_xf);
    detail::sp_acc_t(adj_t, cross(f, gtop), adj_q);
    adj_x += vec_t<6, T>(adj_xt, adj_xf);
}
}  // namespace tw
