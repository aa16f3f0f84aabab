// Queries on geometric primitives (Warp 1.19 semantics): the closest points of two segments
// (closest_point_edge_edge, with its adjoint) and whether two triangles intersect
// (intersect_tri_tri). Included, after tilewarp.h, only by kernels that call them
// (Builtin.header), so the other kernels never compile this file.
#pragma once

namespace tw {
namespace prim {
template <typename T> struct fp;
template <> struct fp<float> {
    static TW_FUNC float eps() { return 1.1920929e-7f; }
    static TW_FUNC float max() { return 3.4028235e38f; }
};
template <> struct fp<double> {
    static TW_FUNC double eps() { return 2.220446049250313e-16; }
    static TW_FUNC double max() { return 1.7976931348623157e308; }
};

template <typename T> TW_FUNC T clamp01(T x) {
    return x < T(0) ? T(0) : x > T(1) ? T(1) : x;  // a NaN stays NaN, as the inputs were NaN
}

// The closest points of segments p1 + s d1 and p2 + t d2, s, t in [0, 1] (Ericson, Real-Time
// Collision Detection 5.1.9), with which of s, t are free: strictly inside (0, 1) and set by
// the stationarity of |w|^2, w = c1 - c2, rather than by a clamp, a degenerate edge or the
// parallel fallback. The adjoint differentiates exactly those conditions.
template <typename T> struct edge_edge_t {
    T s, t;
    vec_t<3, T> w;  // c1 - c2
    bool free_s, free_t;
    T a, b, e;  // |d1|^2, d1.d2, |d2|^2: the Hessian of |w|^2 / 2 in (s, -t)
    T det;      // its determinant a e - b^2, as |d1 x d2|^2 (no cancellation)
};

template <typename T>
TW_FUNC edge_edge_t<T> edge_edge(const vec_t<3, T>& p1, const vec_t<3, T>& q1, const vec_t<3, T>& p2,
                                 const vec_t<3, T>& q2, T epsilon) {
    const vec_t<3, T> d1 = sub(q1, p1), d2 = sub(q2, p2), r = sub(p1, p2);
    edge_edge_t<T> out;
    const T a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r);
    T s = T(0), t = T(0);
    bool free_s = false, free_t = false;
    // a zero-length edge is a point whatever epsilon (0 or negative) says: no 0 / 0
    const bool point1 = !(a > epsilon && a > T(0)), point2 = !(e > epsilon && e > T(0));
    if (point1 && point2) {
        // two points
    } else if (point1) {  // the first edge is a point: project it onto the second
        t = clamp01(f / e);
        free_t = t > T(0) && t < T(1);
    } else {
        const T c = dot(d1, r);
        if (point2) {  // the second edge is a point
            s = clamp01(-c / a);
            free_s = s > T(0) && s < T(1);
        } else {
            // The lines' closest point on the first, from n = d1 x d2: s = ((p2 - p1) x d2) . n / |n|^2.
            // |n|^2 and its numerator keep their digits where a e - b^2 would cancel (near-parallel
            // edges); below rounding level (parallel) any s is a closest point and 0 is taken.
            const vec_t<3, T> n = cross(d1, d2);
            const T denom = dot(n, n), eps = fp<T>::eps();
            const T b = dot(d1, d2);
            bool parallel = !(denom > eps * eps * a * e);
            if (!parallel) s = clamp01(dot(cross(neg(r), d2), n) / denom);
            free_s = !parallel && s > T(0) && s < T(1);
            // the second segment's point nearest to the first's, then the first's nearest to it
            // where that one was clamped
            t = (b * s + f) / e;
            if (t < T(0)) {
                t = T(0);
                s = clamp01(-c / a);
                free_s = s > T(0) && s < T(1);
            } else if (t > T(1)) {
                t = T(1);
                s = clamp01((b - c) / a);
                free_s = s > T(0) && s < T(1);
            } else {
                free_t = t > T(0) && t < T(1);
            }
            out.b = b, out.det = denom;
        }
    }
    out.s = s, out.t = t;
    out.w = sub(add(p1, mul(d1, s)), add(p2, mul(d2, t)));
    out.free_s = free_s, out.free_t = free_t;
    out.a = a, out.e = e;
    if (!(free_s && free_t)) out.b = out.det = T(0);
    return out;
}
}  // namespace prim

// (s, t, |c1 - c2|): the closest points c1 = p1 + s (q1 - p1), c2 = p2 + t (q2 - p2) of the two
// segments; an edge of squared length <= epsilon is its first point (weight 0).
template <typename T>
TW_FUNC vec_t<3, T> closest_point_edge_edge(const vec_t<3, T>& p1, const vec_t<3, T>& q1, const vec_t<3, T>& p2,
                                            const vec_t<3, T>& q2, T epsilon) {
    prim::edge_edge_t<T> r = prim::edge_edge(p1, q1, p2, q2, epsilon);
    return vec_t<3, T>(r.s, r.t, length(r.w));
}

// The distance's gradient is the envelope's: c1 - c2 at the minimum, moved with the endpoints by
// their barycentric weights (s, t do not move it to first order: they are stationary or clamped),
// so it stays bounded for parallel edges. s and t, where free, come from implicit differentiation
// of the stationarity conditions g_s = d1.w = 0, g_t = -d2.w = 0: ds/dx = -H^-1 dg/dx over the free
// ones, H = [[a, -b], [-b, e]]. Free s and t on edges within 1e-3 rad of parallel (where H^-1
// explodes and s is barely defined) are differentiated as the parallel case: s held, t free.
template <typename T>
TW_FUNC void adj_closest_point_edge_edge(const vec_t<3, T>& p1, const vec_t<3, T>& q1, const vec_t<3, T>& p2,
                                         const vec_t<3, T>& q2, T epsilon, vec_t<3, T>& adj_p1,
                                         vec_t<3, T>& adj_q1, vec_t<3, T>& adj_p2, vec_t<3, T>& adj_q2, T&,
                                         const vec_t<3, T>& adj_ret) {
    prim::edge_edge_t<T> r = prim::edge_edge(p1, q1, p2, q2, epsilon);
    const vec_t<3, T> d1 = sub(q1, p1), d2 = sub(q2, p2), w = r.w;
    const T s = r.s, t = r.t, dist = length(w);
    // the distance
    if (dist > T(0) && adj_ret.c[2] != T(0)) {
        const vec_t<3, T> g = mul(w, adj_ret.c[2] / dist);
        adj_p1 += mul(g, T(1) - s);
        adj_q1 += mul(g, s);
        adj_p2 -= mul(g, T(1) - t);
        adj_q2 -= mul(g, t);
    }
    // s and t: lambda = H_FF^-1 (adj_s, adj_t) over the free set F, then adj_x -= lambda . dg_F/dx
    bool fs = r.free_s, ft = r.free_t;
    if (fs && ft && !(r.det > T(1e-6) * r.a * r.e)) fs = false;
    T ls = T(0), lt = T(0);
    if (fs && ft) {
        ls = (r.e * adj_ret.c[0] + r.b * adj_ret.c[1]) / r.det;
        lt = (r.b * adj_ret.c[0] + r.a * adj_ret.c[1]) / r.det;
    } else if (fs) {
        ls = adj_ret.c[0] / r.a;
    } else if (ft) {
        lt = adj_ret.c[1] / r.e;
    }
    if (ls != T(0)) {  // g_s = d1 . w
        adj_p1 -= mul(add(neg(w), mul(d1, T(1) - s)), ls);
        adj_q1 -= mul(add(w, mul(d1, s)), ls);
        adj_p2 += mul(d1, (T(1) - t) * ls);
        adj_q2 += mul(d1, t * ls);
    }
    if (lt != T(0)) {  // g_t = -d2 . w
        adj_p1 += mul(d2, (T(1) - s) * lt);
        adj_q1 += mul(d2, s * lt);
        adj_p2 -= mul(add(w, mul(d2, T(1) - t)), lt);
        adj_q2 -= mul(sub(mul(d2, t), w), lt);
    }
}

namespace prim {
// Does `axis` separate the point sets a[3] and b[3], with a margin of rounding error? The
// projections carry errors of a few ulps of |axis|_1 * extent, so only gaps beyond that count:
// touching and within-rounding configurations are intersecting.
template <typename T>
TW_FUNC bool separates(const vec_t<3, T>& k, const vec_t<3, T>* a, const vec_t<3, T>* b, T extent) {
    T amin = dot(k, a[0]), amax = amin, bmin = dot(k, b[0]), bmax = bmin;
    for (int i = 1; i < 3; ++i) {
        const T pa = dot(k, a[i]), pb = dot(k, b[i]);
        amin = pa < amin ? pa : amin, amax = pa > amax ? pa : amax;
        bmin = pb < bmin ? pb : bmin, bmax = pb > bmax ? pb : bmax;
    }
    const T norm1 = abs(k.c[0]) + abs(k.c[1]) + abs(k.c[2]);
    const T tol = T(16) * fp<T>::eps() * norm1 * extent;
    return bmin > amax + tol || amin > bmax + tol;
}
template <typename T> TW_FUNC const vec_t<3, T>& longer(const vec_t<3, T>& x, const vec_t<3, T>& y) {
    return dot(y, y) > dot(x, x) ? y : x;
}
}  // namespace prim

// 1 when the triangles (v0, v1, v2) and (u0, u1, u2) share a point (touching included), else 0.
// A separating-axis test over every direction that can separate two triangles, whatever their
// dimension: with E the six edge directions, the plane normals e x f of pairs from E cover the
// faces of the Minkowski difference when it is solid (both normals and the 9 edge-edge crosses);
// in-plane normals n x e, n the longest of those, cover it when it is flat (coplanar triangles,
// a triangle degenerate to a segment); the longest edge, the offset across it and the offset of
// the first vertices cover collinear and point-like inputs. Extra axes cannot give a wrong
// answer (any separating direction proves disjointness), so all 23 are tried; there is no
// branch on a degeneracy threshold and no division, hence no NaN whatever the input.
template <typename T>
TW_FUNC int32_t intersect_tri_tri(const vec_t<3, T>& v0, const vec_t<3, T>& v1, const vec_t<3, T>& v2,
                                  const vec_t<3, T>& u0, const vec_t<3, T>& u1, const vec_t<3, T>& u2) {
    // relative to v0: coordinates (and their rounding) scale with the triangles, not their position
    const vec_t<3, T> a[3] = {vec_t<3, T>(), sub(v1, v0), sub(v2, v0)};
    const vec_t<3, T> b[3] = {sub(u0, v0), sub(u1, v0), sub(u2, v0)};
    T extent = T(0);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            const T x = abs(a[i].c[j]), y = abs(b[i].c[j]);
            if (!(x <= prim::fp<T>::max() && y <= prim::fp<T>::max())) return 0;  // inf or NaN: no point
            extent = x > extent ? x : extent;
            extent = y > extent ? y : extent;
        }
    const vec_t<3, T> e[3] = {sub(a[1], a[0]), sub(a[2], a[1]), sub(a[0], a[2])};
    const vec_t<3, T> f[3] = {sub(b[1], b[0]), sub(b[2], b[1]), sub(b[0], b[2])};
    // face normals and edge-edge crosses: the solid case
    vec_t<3, T> n = cross(e[0], e[1]);
    if (prim::separates(n, a, b, extent)) return 0;
    const vec_t<3, T> m = cross(f[0], f[1]);
    if (prim::separates(m, a, b, extent)) return 0;
    n = prim::longer(n, m);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            const vec_t<3, T> k = cross(e[i], f[j]);
            if (prim::separates(k, a, b, extent)) return 0;
            n = prim::longer(n, k);
        }
    // in-plane edge normals: the flat case
    for (int i = 0; i < 3; ++i) {
        if (prim::separates(cross(n, e[i]), a, b, extent)) return 0;
        if (prim::separates(cross(n, f[i]), a, b, extent)) return 0;
    }
    // every edge parallel (segments on parallel lines) or none (points)
    vec_t<3, T> u = prim::longer(prim::longer(prim::longer(e[0], e[1]), prim::longer(e[2], f[0])),
                                 prim::longer(f[1], f[2]));
    if (prim::separates(u, a, b, extent)) return 0;
    const vec_t<3, T> d = b[0];  // b[0] - a[0]
    const T uu = dot(u, u);
    if (prim::separates(d, a, b, extent)) return 0;
    if (uu > T(0) && prim::separates(sub(mul(d, uu), mul(u, dot(d, u))), a, b, extent)) return 0;
    return 1;
}
}  // namespace tw
