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

// ---------------------------------------------------------------------------------------
// Adjoints (docs/AUTODIFF.md): primal arguments, one accumulated adjoint per argument, then the
// adjoint of the result. Every formula is the exact derivative of the forward code above, so
// non-unit quaternions get correct gradients too.
namespace tw {
namespace detail {
// Gradients of y = quat_rotate(q, x) (sign 1) or quat_rotate_inv (sign -1) for y's adjoint g:
// y = x (2w^2 - 1) + sign 2w (v x x) + 2v (v . x).
template <typename T>
TW_FUNC void adj_rotate(const quat_t<T>& q, const vec_t<3, T>& x, const vec_t<3, T>& g, T sign,
                        quat_t<T>& adj_q, vec_t<3, T>& adj_x) {
    T w = q.w(), two = cast<T>(2), sw2 = sign * w * two;
    vec_t<3, T> v = q.v();
    // The transpose of rotation by q (any norm) is the other rotation direction.
    vec_t<3, T> gx = add(add(mul(g, w * w * two - one<T>()), mul(cross(g, v), sw2)), mul(v, dot(v, g) * two));
    adj_x += gx;
    T gw = dot(g, add(mul(x, two * two * w), mul(cross(v, x), sign * two)));
    vec_t<3, T> gv = add(add(mul(cross(x, g), sw2), mul(g, dot(v, x) * two)), mul(x, dot(v, g) * two));
    adj_q += quat_t<T>(gv, gw);
}
}  // namespace detail

// Hamilton product: adj_a = adj_r * conj(b), adj_b = conj(a) * adj_r.
template <typename T>
TW_FUNC void adj_mul(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b,
                     const quat_t<T>& adj_r) {
    adj_a += mul(adj_r, quat_inverse(b));
    adj_b += mul(quat_inverse(a), adj_r);
}
template <typename T>
TW_FUNC void adj_quat_inverse(const quat_t<T>&, quat_t<T>& adj_q, const quat_t<T>& adj_r) {
    adj_q += quat_inverse(adj_r);
}
template <typename T>
TW_FUNC void adj_quat_from_axis_angle(const vec_t<3, T>& axis, T angle, vec_t<3, T>& adj_axis, T& adj_angle,
                                      const quat_t<T>& adj_r) {
    T h = angle * cast<T>(0.5), s = sin(h), c = cos(h);
    vec_t<3, T> gv = adj_r.v();
    adj_axis += mul(gv, s);
    adj_angle += cast<T>(0.5) * (c * dot(axis, gv) - s * adj_r.w());
}
template <typename T>
TW_FUNC void adj_quat_rotate(const quat_t<T>& q, const vec_t<3, T>& x, quat_t<T>& adj_q, vec_t<3, T>& adj_x,
                             const vec_t<3, T>& adj_r) {
    detail::adj_rotate(q, x, adj_r, detail::one<T>(), adj_q, adj_x);
}
template <typename T>
TW_FUNC void adj_quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& x, quat_t<T>& adj_q,
                                 vec_t<3, T>& adj_x, const vec_t<3, T>& adj_r) {
    detail::adj_rotate(q, x, adj_r, -detail::one<T>(), adj_q, adj_x);
}
// Column j is quat_rotate(q, e_j).
template <typename T>
TW_FUNC void adj_quat_to_matrix(const quat_t<T>& q, quat_t<T>& adj_q, const mat_t<3, 3, T>& adj_r) {
    for (int j = 0; j < 3; ++j) {
        vec_t<3, T> e, g(adj_r.c[0][j], adj_r.c[1][j], adj_r.c[2][j]), unused;
        e.c[j] = detail::one<T>();
        detail::adj_rotate(q, e, g, detail::one<T>(), adj_q, unused);
    }
}

namespace detail {
// Shepperd's branches (see quat_from_matrix), with k+1, k+2 taken mod 3: the pivot component is
// h / 2 with h = sqrt(1 + sum_i d_i m_ii); every other one is f = 1 / (2h) times either the
// antisymmetric difference A_k = m[k+2][k+1] - m[k+1][k+2] or the symmetric sum
// S_pk = m[p][k] + m[k][p]. Pivot w: (x, y, z) = A f. Pivot axis p: w = A_p f, others S_pk f.
template <int N, typename T>
TW_FUNC T qfm_pair(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, int i, int j, int k, int l, T s, T g) {
    adj_m.c[i][j] += g;
    adj_m.c[k][l] += s * g;
    return m.c[i][j] + s * m.c[k][l];
}
}  // namespace detail

// The derivative of the branch the forward pass takes (the branches agree on rotation matrices,
// so this is the gradient there; for general matrices it is the one-sided derivative at a switch).
template <int N, typename T>
TW_FUNC void adj_quat_from_matrix(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const quat_t<T>& adj_r) {
    const T one = detail::one<T>(), half = cast<T>(0.5);
    T tr = m.c[0][0] + m.c[1][1] + m.c[2][2];
    int p = tr >= detail::zero<T>() ? -1 : (m.c[0][0] >= m.c[1][1] && m.c[0][0] >= m.c[2][2]) ? 0
                                                                        : (m.c[1][1] >= m.c[2][2] ? 1 : 2);
    T h2 = one;
    for (int i = 0; i < 3; ++i) h2 += (p < 0 || i == p) ? m.c[i][i] : -m.c[i][i];
    T h = sqrt(h2), f = half / h;
    // Unnormalised q (u), to push adj_r back through normalize: adj_u = (adj_r - q (q . adj_r)) / |u|.
    mat_t<N, N, T> scratch;
    quat_t<T> u;
    int piv = p < 0 ? 3 : p;
    u.c[piv] = half * h;
    for (int k = 0; k < 3; ++k) {
        int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
        if (p < 0) u.c[k] = detail::qfm_pair(m, scratch, k2, k1, k1, k2, -one, one) * f;
        else if (k == p) u.c[3] = detail::qfm_pair(m, scratch, k2, k1, k1, k2, -one, one) * f;
        else u.c[k] = detail::qfm_pair(m, scratch, p, k, k, p, one, one) * f;
    }
    T len = length(u);
    quat_t<T> q = div(u, len);
    quat_t<T> g = div(sub(adj_r, mul(q, dot(q, adj_r))), len);
    T adj_h = half * g.c[piv], adj_f = detail::zero<T>();
    for (int k = 0; k < 3; ++k) {
        int k1 = (k + 1) % 3, k2 = (k + 2) % 3, slot = (p < 0 || k != p) ? k : 3;
        T val = (p < 0 || k == p) ? detail::qfm_pair(m, adj_m, k2, k1, k1, k2, -one, g.c[slot] * f)
                                  : detail::qfm_pair(m, adj_m, p, k, k, p, one, g.c[slot] * f);
        adj_f += g.c[slot] * val;
    }
    adj_h -= adj_f * f / h;  // f = 1 / (2h)
    for (int i = 0; i < 3; ++i) adj_m.c[i][i] += (p < 0 || i == p) ? adj_h * f : -(adj_h * f);  // dh = f dh2
}

// axis = sign(w) v / |v|, angle = 2 atan2(|v|, |w|). At v == 0 the axis is the zero vector and the
// angle has a cone point (|v|): both get the zero subgradient there, as normalize's zero branch.
template <typename T>
TW_FUNC void adj_quat_to_axis_angle(const quat_t<T>& q, quat_t<T>& adj_q,
                                    const tuple_t<vec_t<3, T>, T>& adj_r) {
    vec_t<3, T> v = q.v();
    T w = q.w(), len = length(v);
    if (!(len > detail::zero<T>())) return;
    T s = w < detail::zero<T>() ? -detail::one<T>() : detail::one<T>(), aw = s * w;
    vec_t<3, T> n = div(v, len), ga = get<0>(adj_r);
    T gang = get<1>(adj_r), two = cast<T>(2), r2 = len * len + aw * aw;
    vec_t<3, T> gv = add(mul(sub(ga, mul(n, dot(n, ga))), s / len), mul(n, gang * two * aw / r2));
    adj_q += quat_t<T>(gv, -(gang * two * len / r2) * s);
}

// quat_slerp(a, b, t) = a * r with c = a^-1 b, c' = sign(c.w) c = (v, w) (w >= 0), L = |v|,
// phi = atan2(L, w) and r = (v sin(t phi) / L, cos(t phi)). Differentiated in that closed form
// rather than through the axis (whose 1/L blows up as a -> b, while r stays smooth): the v v^T
// coefficient k = L d(sin(t phi)/L)/dL cancels like phi^2 but is only ever scaled by |v|^2, so its
// rounding error stays relative to the result; at L == 0 the limits are taken (sin(t phi)/L -> t/w).
template <typename T>
TW_FUNC void adj_quat_slerp(const quat_t<T>& a, const quat_t<T>& b, T t, quat_t<T>& adj_a, quat_t<T>& adj_b,
                            T& adj_t, const quat_t<T>& adj_out) {
    const T zero = detail::zero<T>(), one = detail::one<T>();
    quat_t<T> c = mul(quat_inverse(a), b);
    T s = c.w() < zero ? -one : one, w = s * c.w();
    vec_t<3, T> v = mul(c.v(), s);
    T len = length(v), phi = atan2(len, w), sn = sin(t * phi), cs = cos(t * phi);
    quat_t<T> r = len > zero ? quat_t<T>(mul(v, sn / len), cs) : quat_identity<T>();
    adj_a += mul(adj_out, quat_inverse(r));
    quat_t<T> gr = mul(quat_inverse(a), adj_out);
    vec_t<3, T> gv = gr.v(), adj_v;
    T gw = gr.w(), adj_w = zero;
    if (len > zero) {
        T rho2 = len * len + w * w, g = sn / len, k = (t * cs * w * len / rho2 - sn) / len;
        vec_t<3, T> n = div(v, len);
        adj_t += phi * (cs * dot(n, gv) - sn * gw);
        adj_v = add(add(mul(gv, g), mul(n, k * dot(n, gv))), mul(n, -(gw * t * sn * w / rho2)));
        adj_w = -(t * cs / rho2) * dot(v, gv) + gw * t * sn * len / rho2;
    } else if (w > zero) {
        adj_v = mul(gv, t / w);
    }
    quat_t<T> gc(mul(adj_v, s), adj_w * s);
    adj_a += quat_inverse(mul(gc, quat_inverse(b)));  // c = conj(a) * b
    adj_b += mul(a, gc);
}

namespace detail {
// quat_rpy's polynomial in the half-angle cosines and sines; it is linear in each (c, s) pair,
// so d/d(roll) is the same polynomial with (cr, sr) replaced by (-sr, cr) / 2.
template <typename T> TW_FUNC quat_t<T> rpy_poly(T cr, T sr, T cp, T sp, T cy, T sy) {
    return quat_t<T>(sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy,
                     cr * cp * cy + sr * sp * sy);
}
}  // namespace detail
template <typename T>
TW_FUNC void adj_quat_rpy(T roll, T pitch, T yaw, T& adj_roll, T& adj_pitch, T& adj_yaw,
                          const quat_t<T>& adj_r) {
    const T half = cast<T>(0.5);
    T cr = cos(roll * half), sr = sin(roll * half);
    T cp = cos(pitch * half), sp = sin(pitch * half);
    T cy = cos(yaw * half), sy = sin(yaw * half);
    adj_roll += dot(adj_r, detail::rpy_poly(-sr * half, cr * half, cp, sp, cy, sy));
    adj_pitch += dot(adj_r, detail::rpy_poly(cr, sr, -sp * half, cp * half, cy, sy));
    adj_yaw += dot(adj_r, detail::rpy_poly(cr, sr, cp, sp, -sy * half, cy * half));
}
}  // namespace tw
