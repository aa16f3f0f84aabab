// Spatial (6D) algebra: a spatial vector is vec_t<6, T> = (w: angular, v: linear), a spatial
// matrix is mat_t<6, 6, T>, as in Warp.
#pragma once
#include "mat.h"

namespace tw {
template <typename T> TW_FUNC vec_t<3, T> spatial_top(const vec_t<6, T>& a) {
    return vec_t<3, T>(a.c[0], a.c[1], a.c[2]);
}
template <typename T> TW_FUNC vec_t<3, T> spatial_bottom(const vec_t<6, T>& a) {
    return vec_t<3, T>(a.c[3], a.c[4], a.c[5]);
}
template <typename T> TW_FUNC T spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b) { return dot(a, b); }

// Motion cross product: (wa x wb, wa x vb + va x wb).
template <typename T> TW_FUNC vec_t<6, T> spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a), wb = spatial_top(b), vb = spatial_bottom(b);
    return vec_t<6, T>(cross(wa, wb), add(cross(wa, vb), cross(va, wb)));
}
// Force (dual) cross product: (wa x wb + va x vb, wa x vb).
template <typename T> TW_FUNC vec_t<6, T> spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a), wb = spatial_top(b), vb = spatial_bottom(b);
    return vec_t<6, T>(add(cross(wa, wb), cross(va, vb)), cross(wa, vb));
}

// [[r, 0], [s, r]]: the adjoint of a transform with rotation r and s = skew(p) r.
template <typename T> TW_FUNC mat_t<6, 6, T> spatial_adjoint(const mat_t<3, 3, T>& r, const mat_t<3, 3, T>& s) {
    mat_t<6, 6, T> m;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            m.c[i][j] = r.c[i][j];
            m.c[i + 3][j] = s.c[i][j];
            m.c[i + 3][j + 3] = r.c[i][j];
        }
    return m;
}
}  // namespace tw

// ---------------------------------------------------------------------------------------
// Adjoints (docs/AUTODIFF.md). Cross terms use g . (x x y) = x . (y x g) = y . (g x x).
namespace tw {
template <typename T>
TW_FUNC void adj_spatial_top(const vec_t<6, T>&, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_r) {
    for (int i = 0; i < 3; ++i) adj_a.c[i] += adj_r.c[i];
}
template <typename T>
TW_FUNC void adj_spatial_bottom(const vec_t<6, T>&, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_r) {
    for (int i = 0; i < 3; ++i) adj_a.c[3 + i] += adj_r.c[i];
}
template <typename T>
TW_FUNC void adj_spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                             vec_t<6, T>& adj_b, T adj_r) {
    adj_a += mul(b, adj_r);
    adj_b += mul(a, adj_r);
}
template <typename T>
TW_FUNC void adj_spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                               vec_t<6, T>& adj_b, const vec_t<6, T>& adj_r) {
    vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a), wb = spatial_top(b), vb = spatial_bottom(b);
    vec_t<3, T> gt = spatial_top(adj_r), gb = spatial_bottom(adj_r);
    // (wa x wb, wa x vb + va x wb)
    adj_a += vec_t<6, T>(add(cross(wb, gt), cross(vb, gb)), cross(wb, gb));
    adj_b += vec_t<6, T>(add(cross(gt, wa), cross(gb, va)), cross(gb, wa));
}
template <typename T>
TW_FUNC void adj_spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                                    vec_t<6, T>& adj_b, const vec_t<6, T>& adj_r) {
    vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a), wb = spatial_top(b), vb = spatial_bottom(b);
    vec_t<3, T> gt = spatial_top(adj_r), gb = spatial_bottom(adj_r);
    // (wa x wb + va x vb, wa x vb)
    adj_a += vec_t<6, T>(add(cross(wb, gt), cross(vb, gb)), cross(vb, gt));
    adj_b += vec_t<6, T>(cross(gt, wa), add(cross(gt, va), cross(gb, wa)));
}
template <typename T>
TW_FUNC void adj_spatial_adjoint(const mat_t<3, 3, T>&, const mat_t<3, 3, T>&, mat_t<3, 3, T>& adj_r,
                                 mat_t<3, 3, T>& adj_s, const mat_t<6, 6, T>& adj_m) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            adj_r.c[i][j] += adj_m.c[i][j] + adj_m.c[i + 3][j + 3];
            adj_s.c[i][j] += adj_m.c[i + 3][j];
        }
}
}  // namespace tw
