// Rotations and frames beyond quat.h / transform.h (Warp 1.19's math.py functions): Euler angles
// for any axis sequence, roll-pitch-yaw, swing-twist, 4x4 matrix <-> transform with scale, and the
// velocity of a point on a rigid body. Each forward function is followed by its adjoint
// (docs/AUTODIFF.md). Warp defines the rotation ones for float32 only; here they take any float.
#pragma once
#include "spatial.h"
#include "transform.h"

namespace tw {
namespace frames {
// Warp clamps asin/acos arguments into [-1, 1]: rounding never makes a NaN angle.
template <typename T> TW_FUNC T clamped(T x) { return min(max(x, -detail::one<T>()), detail::one<T>()); }
template <typename T> TW_FUNC T pi() { return cast<T>(3.14159265358979323846); }

// The quaternion of a rotation by `angle` about coordinate axis a (0: x, 1: y, anything else: z).
template <typename T> TW_FUNC quat_t<T> axis_rotation(int a, T angle) {
    T h = cast<T>(0.5) * angle;
    quat_t<T> q(detail::zero<T>(), detail::zero<T>(), detail::zero<T>(), cos(h));
    q.c[a == 0 ? 0 : a == 1 ? 1 : 2] = sin(h);
    return q;
}
template <typename T> TW_FUNC void adj_axis_rotation(int a, T angle, T& adj_angle, const quat_t<T>& g) {
    T h = cast<T>(0.5) * angle;
    adj_angle += cast<T>(0.5) * (g.c[a == 0 ? 0 : a == 1 ? 1 : 2] * cos(h) - g.c[3] * sin(h));
}
TW_FUNC int wrap3(int i) { return ((i % 3) + 3) % 3; }  // e[i], negative i as v[-1]; never out of bounds
}  // namespace frames

// Rotations about the fixed axes i, then j, then k (extrinsic): q = qk qj qi; e is indexed by axis.
template <typename T, typename I> TW_FUNC quat_t<T> quat_from_euler(const vec_t<3, T>& e, I i, I j, I k) {
    quat_t<T> qi = frames::axis_rotation((int)i, e.c[frames::wrap3((int)i)]);
    quat_t<T> qj = frames::axis_rotation((int)j, e.c[frames::wrap3((int)j)]);
    quat_t<T> qk = frames::axis_rotation((int)k, e.c[frames::wrap3((int)k)]);
    return mul(qk, mul(qj, qi));
}
template <typename T, typename I>
TW_FUNC void adj_quat_from_euler(const vec_t<3, T>& e, I i, I j, I k, vec_t<3, T>& adj_e, I&, I&, I&,
                                 const quat_t<T>& adj_ret) {
    const int a[3] = {(int)i, (int)j, (int)k};
    quat_t<T> q[3], g[3], gp;
    for (int n = 0; n < 3; ++n) q[n] = frames::axis_rotation(a[n], e.c[frames::wrap3(a[n])]);
    quat_t<T> p = mul(q[1], q[0]);
    adj_mul(q[2], p, g[2], gp, adj_ret);
    adj_mul(q[1], q[0], g[1], g[0], gp);
    for (int n = 0; n < 3; ++n) {
        int c = frames::wrap3(a[n]);
        frames::adj_axis_rotation(a[n], e.c[c], adj_e.c[c], g[n]);
    }
}

// Roll, pitch, yaw (the inverse of quat_rpy); pitch from a clamped asin.
template <typename T> TW_FUNC vec_t<3, T> quat_to_rpy(const quat_t<T>& q) {
    const T x = q.c[0], y = q.c[1], z = q.c[2], w = q.c[3], one = detail::one<T>(), two = cast<T>(2);
    T roll = atan2(two * (w * x + y * z), one - two * (x * x + y * y));
    T pitch = asin(frames::clamped(two * (w * y - z * x)));
    T yaw = atan2(two * (w * z + x * y), one - two * (y * y + z * z));
    return vec_t<3, T>(roll, pitch, yaw);
}
namespace frames {
// d atan2(a, b) = (b da - a db) / (a^2 + b^2); both partials zero at the origin.
template <typename T> TW_FUNC void adj_atan2(T a, T b, T g, T& ga, T& gb) {
    T r = a * a + b * b;
    if (!(r > detail::zero<T>())) return;
    ga += g * b / r;
    gb -= g * a / r;
}
}  // namespace frames
template <typename T>
TW_FUNC void adj_quat_to_rpy(const quat_t<T>& q, quat_t<T>& adj_q, const vec_t<3, T>& adj_ret) {
    const T x = q.c[0], y = q.c[1], z = q.c[2], w = q.c[3], one = detail::one<T>(), two = cast<T>(2);
    T g0 = detail::zero<T>(), g1 = g0, g3 = g0, g4 = g0;
    frames::adj_atan2(two * (w * x + y * z), one - two * (x * x + y * y), adj_ret.c[0], g0, g1);
    frames::adj_atan2(two * (w * z + x * y), one - two * (y * y + z * z), adj_ret.c[2], g3, g4);
    T t2 = two * (w * y - z * x), g2 = detail::zero<T>();
    if (t2 > -one && t2 < one) g2 = adj_ret.c[1] / sqrt((one - t2) * (one + t2));  // zero where clamped
    // t0 = 2(wx + yz), t1 = 1 - 2(x^2 + y^2), t2 = 2(wy - zx), t3 = 2(wz + xy), t4 = 1 - 2(y^2 + z^2)
    adj_q.c[0] += two * (g0 * w - g1 * two * x - g2 * z + g3 * y);
    adj_q.c[1] += two * (g0 * z - g1 * two * y + g2 * w + g3 * x - g4 * two * y);
    adj_q.c[2] += two * (g0 * y - g2 * x + g3 * w - g4 * two * z);
    adj_q.c[3] += two * (g0 * x + g2 * y + g3 * z);
}

namespace frames {
// Euler angles of q for the axis sequence (i, j, k) by Bernardes & Viollet's direct method ("Quaternion
// to Euler angles conversion", PLoS ONE 2022), with Warp's index conventions: a, b, c, d are linear in
// q, then t2 = acos(2 (a^2 + b^2) / |abcd|^2 - 1), t1/t3 from atan2(b, a) and atan2(d, c).
template <typename T> struct euler_plan {
    int i, j, k;     // 1-based axes (k replaced by the free axis for proper sequences)
    bool proper;     // i == k on input
    T e;             // Levi-Civita sign of (i, j, k)
    int ci, cj, ck;  // where q's components for axes i, j, k sit in (w, x, y, z)
    TW_FUNC euler_plan(int i0, int j0, int k0) : i(i0 + 1), j(j0 + 1), k(k0 + 1), proper(i0 == k0) {
        if (proper) k = 6 - i - j;
        e = cast<T>((float)((i - j) * (j - k) * (k - i)) / 2.0f);
        ci = slot(i), cj = slot(j), ck = slot(k);
    }
    static TW_FUNC int slot(int axis) { return axis == 2 ? 2 : axis == 3 ? 3 : 1; }
    // (a, b, c, d), in Warp's order of operations (signed zeros decide atan2 at the poles)
    TW_FUNC void abcd(const T (&q)[4], T (&v)[4]) const {
        v[0] = q[0], v[1] = q[ci], v[2] = q[cj], v[3] = q[ck] * e;
        if (!proper) v[0] -= q[cj], v[1] += q[ck] * e, v[2] += q[0], v[3] -= q[ci];
    }
    TW_FUNC void adj_abcd(const T (&g)[4], T (&gq)[4]) const {
        gq[0] += g[0], gq[ci] += g[1], gq[cj] += g[2], gq[ck] += g[3] * e;
        if (!proper) gq[cj] -= g[0], gq[ck] += g[1] * e, gq[0] += g[2], gq[ci] -= g[3];
    }
    // Where t1, t2, t3 land in the result, in Warp's assignment order (0-based slots of (x, y, z)).
    TW_FUNC void places(int (&slot_of)[3]) const {
        int who[3] = {0, 1, 2};  // result slot -> which t (0: t1, 1: t2, 2: t3)
        if (i == 2) who[0] = 1, who[1] = 0;
        else if (i == 3) who[0] = 2, who[2] = 0;
        who[j == 1 ? 0 : j == 2 ? 1 : 2] = 1;
        who[k == 1 ? 0 : k == 2 ? 1 : 2] = 2;
        for (int s = 0; s < 3; ++s) slot_of[s] = who[s];
    }
};
}  // namespace frames

template <typename T, typename I> TW_FUNC vec_t<3, T> quat_to_euler(const quat_t<T>& q, I i, I j, I k) {
    frames::euler_plan<T> plan((int)i, (int)j, (int)k);
    const T wxyz[4] = {q.c[3], q.c[0], q.c[1], q.c[2]}, zero = detail::zero<T>(), two = cast<T>(2);
    T v[4];
    plan.abcd(wxyz, v);
    const T a = v[0], b = v[1], c = v[2], d = v[3];
    T t2 = acos(frames::clamped(two * (a * a + b * b) / (a * a + b * b + c * c + d * d) - detail::one<T>()));
    T tp = atan2(b, a), tm = atan2(d, c), t1 = zero, t3;
    const T tiny = cast<T>(1e-6);
    if (abs(t2) < tiny) t3 = two * tp;  // gimbal lock: the first angle is set to 0
    else if (abs(t2 - frames::pi<T>()) < tiny) t3 = two * tm;
    else t1 = tp - tm, t3 = tp + tm;
    if (!plan.proper) t2 = t2 - frames::pi<T>() * cast<T>(0.5), t3 = t3 * plan.e;
    const T t[3] = {t1, t2, t3};
    int who[3];
    plan.places(who);
    return vec_t<3, T>(t[who[0]], t[who[1]], t[who[2]]);
}
template <typename T, typename I>
TW_FUNC void adj_quat_to_euler(const quat_t<T>& q, I i, I j, I k, quat_t<T>& adj_q, I&, I&, I&,
                               const vec_t<3, T>& adj_ret) {
    frames::euler_plan<T> plan((int)i, (int)j, (int)k);
    const T wxyz[4] = {q.c[3], q.c[0], q.c[1], q.c[2]}, zero = detail::zero<T>(), two = cast<T>(2);
    T v[4], gv[4] = {zero, zero, zero, zero}, g[3] = {zero, zero, zero};
    plan.abcd(wxyz, v);
    int who[3];
    plan.places(who);
    for (int s = 0; s < 3; ++s) g[who[s]] += adj_ret.c[s];
    if (!plan.proper) g[2] = g[2] * plan.e;
    const T a = v[0], b = v[1], c = v[2], d = v[3];
    T t2 = acos(frames::clamped(two * (a * a + b * b) / (a * a + b * b + c * c + d * d) - detail::one<T>()));
    const T tiny = cast<T>(1e-6);
    T gp = zero, gm = zero;
    if (abs(t2) < tiny) gp = two * g[2];
    else if (abs(t2 - frames::pi<T>()) < tiny) gm = two * g[2];
    else gp = g[0] + g[2], gm = g[2] - g[0];
    frames::adj_atan2(b, a, gp, gv[1], gv[0]);
    frames::adj_atan2(d, c, gm, gv[3], gv[2]);
    // t2 = 2 atan2(|(c, d)|, |(a, b)|): the acos written so its gradient stays finite off the poles
    T r1 = sqrt(a * a + b * b), r2 = sqrt(c * c + d * d), n = r1 * r1 + r2 * r2;
    if (r1 > zero && r2 > zero) {
        T k1 = -two * g[1] * r2 / (r1 * n), k2 = two * g[1] * r1 / (r2 * n);
        gv[0] += k1 * a, gv[1] += k1 * b, gv[2] += k2 * c, gv[3] += k2 * d;
    }
    T gq[4] = {zero, zero, zero, zero};
    plan.adj_abcd(gv, gq);
    adj_q.c[3] += gq[0], adj_q.c[0] += gq[1], adj_q.c[1] += gq[2], adj_q.c[2] += gq[3];
}

namespace frames {
// Warp's quaternion normalisation: times 1 / |q|, and the identity for a zero quaternion.
template <typename T> TW_FUNC quat_t<T> unit(const quat_t<T>& q) {
    T l = length(q);
    if (!(l > detail::zero<T>())) return quat_identity<T>();
    T k = detail::one<T>() / l;
    return quat_t<T>(q.c[0] * k, q.c[1] * k, q.c[2] * k, q.c[3] * k);
}
}  // namespace frames

// The twist of q about a unit axis: q's vector part projected on the axis, renormalised.
template <typename T> TW_FUNC quat_t<T> quat_twist(const vec_t<3, T>& axis, const quat_t<T>& q) {
    vec_t<3, T> a = mul(dot(q.v(), axis), axis);
    return frames::unit(quat_t<T>(a, q.w()));
}
template <typename T>
TW_FUNC void adj_quat_twist(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis,
                            quat_t<T>& adj_q, const quat_t<T>& adj_ret) {
    T proj = dot(q.v(), axis);
    quat_t<T> u(mul(proj, axis), q.w());
    T l = length(u);
    if (!(l > detail::zero<T>())) return;  // the constant identity
    quat_t<T> n = div(u, l);
    quat_t<T> gu = div(sub(adj_ret, mul(n, dot(n, adj_ret))), l);
    vec_t<3, T> gv = gu.v();
    T gproj = dot(gv, axis);
    adj_axis += add(mul(gv, proj), mul(q.v(), gproj));
    adj_q += quat_t<T>(mul(axis, gproj), gu.w());
}

// 2 atan2(|axis . v|, w) and 2 atan2(axis . v, w).
template <typename T> TW_FUNC T quat_twist_angle(const vec_t<3, T>& axis, const quat_t<T>& q) {
    return cast<T>(2) * atan2(abs(dot(axis, q.v())), q.w());
}
template <typename T> TW_FUNC T quat_twist_angle_signed(const vec_t<3, T>& axis, const quat_t<T>& q) {
    return cast<T>(2) * atan2(dot(axis, q.v()), q.w());
}
namespace frames {
template <typename T>
TW_FUNC void adj_twist_angle(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis,
                             quat_t<T>& adj_q, T g, bool unsigned_angle) {
    T s = dot(axis, q.v()), gs = detail::zero<T>(), gw = detail::zero<T>();
    T sign = unsigned_angle && s < detail::zero<T>() ? -detail::one<T>() : detail::one<T>();
    adj_atan2(sign * s, q.w(), cast<T>(2) * g, gs, gw);
    gs = gs * sign;
    adj_axis += mul(q.v(), gs);
    adj_q += quat_t<T>(mul(axis, gs), gw);
}
}  // namespace frames
template <typename T>
TW_FUNC void adj_quat_twist_angle(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis,
                                  quat_t<T>& adj_q, T adj_ret) {
    frames::adj_twist_angle(axis, q, adj_axis, adj_q, adj_ret, true);
}
template <typename T>
TW_FUNC void adj_quat_twist_angle_signed(const vec_t<3, T>& axis, const quat_t<T>& q, vec_t<3, T>& adj_axis,
                                         quat_t<T>& adj_q, T adj_ret) {
    frames::adj_twist_angle(axis, q, adj_axis, adj_q, adj_ret, false);
}

// v + w x r for the twist qd = (w, v).
template <typename T> TW_FUNC vec_t<3, T> velocity_at_point(const vec_t<6, T>& qd, const vec_t<3, T>& r) {
    return add(spatial_bottom(qd), cross(spatial_top(qd), r));
}
template <typename T>
TW_FUNC void adj_velocity_at_point(const vec_t<6, T>& qd, const vec_t<3, T>& r, vec_t<6, T>& adj_qd,
                                   vec_t<3, T>& adj_r, const vec_t<3, T>& adj_ret) {
    vec_t<3, T> w = spatial_top(qd), gw = cross(r, adj_ret);  // g . (w x r) = w . (r x g)
    for (int n = 0; n < 3; ++n) adj_qd.c[n] += gw.c[n], adj_qd.c[3 + n] += adj_ret.c[n];
    adj_r += cross(adj_ret, w);
}

// The transform of a 4x4 matrix: its last column and the rotation of its upper 3x3 block.
template <typename T> TW_FUNC transform_t<T> transform_from_matrix(const mat_t<4, 4, T>& m) {
    return transform_t<T>(vec_t<3, T>(m.c[0][3], m.c[1][3], m.c[2][3]), quat_from_matrix(m));
}
template <typename T>
TW_FUNC void adj_transform_from_matrix(const mat_t<4, 4, T>& m, mat_t<4, 4, T>& adj_m,
                                       const transform_t<T>& adj_ret) {
    for (int n = 0; n < 3; ++n) adj_m.c[n][3] += adj_ret.c[n];
    adj_quat_from_matrix(m, adj_m, adj_ret.q());
}

// [[R diag(s), p], [0, 1]] with R the rotation matrix of q.
template <typename T>
TW_FUNC mat_t<4, 4, T> transform_compose(const vec_t<3, T>& p, const quat_t<T>& q, const vec_t<3, T>& s) {
    mat_t<3, 3, T> r = quat_to_matrix(q);
    mat_t<4, 4, T> m;
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) m.c[a][b] = s.c[b] * r.c[a][b];
        m.c[a][3] = p.c[a];
    }
    m.c[3][3] = detail::one<T>();
    return m;
}
template <typename T>
TW_FUNC void adj_transform_compose(const vec_t<3, T>& p, const quat_t<T>& q, const vec_t<3, T>& s,
                                   vec_t<3, T>& adj_p, quat_t<T>& adj_q, vec_t<3, T>& adj_s,
                                   const mat_t<4, 4, T>& adj_ret) {
    mat_t<3, 3, T> r = quat_to_matrix(q), gr;
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b)
            adj_s.c[b] += adj_ret.c[a][b] * r.c[a][b], gr.c[a][b] = adj_ret.c[a][b] * s.c[b];
        adj_p.c[a] += adj_ret.c[a][3];
    }
    adj_quat_to_matrix(q, adj_q, gr);
}

// (p, q, s) with M's upper 3x3 = R(q) diag(s): s the column lengths, q from the normalised columns
// (a zero column is left as it is).
template <typename T> using decomposed_t = tuple_t<vec_t<3, T>, quat_t<T>, vec_t<3, T>>;
namespace frames {
template <typename T> TW_FUNC mat_t<3, 3, T> unit_columns(const mat_t<4, 4, T>& m, vec_t<3, T>& s) {
    mat_t<3, 3, T> r;
    for (int b = 0; b < 3; ++b) {
        s.c[b] = sqrt(m.c[0][b] * m.c[0][b] + m.c[1][b] * m.c[1][b] + m.c[2][b] * m.c[2][b]);
        for (int a = 0; a < 3; ++a) r.c[a][b] = s.c[b] != detail::zero<T>() ? m.c[a][b] / s.c[b] : m.c[a][b];
    }
    return r;
}
}  // namespace frames
template <typename T> TW_FUNC decomposed_t<T> transform_decompose(const mat_t<4, 4, T>& m) {
    vec_t<3, T> s;
    mat_t<3, 3, T> r = frames::unit_columns(m, s);
    return make_tuple<vec_t<3, T>, quat_t<T>, vec_t<3, T>>(vec_t<3, T>(m.c[0][3], m.c[1][3], m.c[2][3]),
                                                           quat_from_matrix(r), s);
}
template <typename T>
TW_FUNC void adj_transform_decompose(const mat_t<4, 4, T>& m, mat_t<4, 4, T>& adj_m,
                                     const decomposed_t<T>& adj_ret) {
    vec_t<3, T> s;
    mat_t<3, 3, T> r = frames::unit_columns(m, s), gr;
    adj_quat_from_matrix(r, gr, get<1>(adj_ret));
    const vec_t<3, T>& gp = get<0>(adj_ret);
    const vec_t<3, T>& gs = get<2>(adj_ret);
    for (int b = 0; b < 3; ++b) {
        adj_m.c[b][3] += gp.c[b];
        if (s.c[b] == detail::zero<T>()) {  // r = m there; |column| has no gradient at 0
            for (int a = 0; a < 3; ++a) adj_m.c[a][b] += gr.c[a][b];
            continue;
        }
        // r = c / |c|: dc = (gr - r (r . gr)) / |c| + gs r
        T rg = r.c[0][b] * gr.c[0][b] + r.c[1][b] * gr.c[1][b] + r.c[2][b] * gr.c[2][b];
        for (int a = 0; a < 3; ++a)
            adj_m.c[a][b] += (gr.c[a][b] - r.c[a][b] * rg) / s.c[b] + gs.c[b] * r.c[a][b];
    }
}
}  // namespace tw
