// wp.Mesh in kernels, continued from mesh.h: evaluation on faces (mesh_eval_*), the mesh's arrays
// (mesh_get*), and the adjoints Warp has for those and for the point and ray queries.
#pragma once
#include "mesh.h"

namespace tw {

// ---- evaluation and access ------------------------------------------------------------------------

namespace detail {
// A face or vertex index outside the mesh (a missed query's -1) reads nothing: zeros come back.
TW_FUNC bool has_face(const mesh_t& m, int32_t face) { return face >= 0 && face < m.f_num_faces; }
TW_FUNC bool has_corner(const mesh_t& m, int32_t index) { return index >= 0 && index < 3 * m.f_num_faces; }
}  // namespace detail

TW_FUNC v3f mesh_eval_position(uint64_t id, int32_t face, float u, float v) {
    const mesh_t& m = detail::mesh_at(id);
    return detail::has_face(m, face) ? detail::at_weights(detail::mesh_face(m, face), u, v) : v3f();
}

TW_FUNC v3f mesh_eval_velocity(uint64_t id, int32_t face, float u, float v) {
    const mesh_t& m = detail::mesh_at(id);
    if (!m.f_velocities || !detail::has_face(m, face)) return v3f();
    const int32_t* idx = detail::bvh_i32(m.f_bvh.f_indices) + 3 * face;
    const v3f* vel = detail::bvh_vec3(m.f_velocities);
    return detail::add3(detail::add3(detail::mul3(vel[idx[0]], u), detail::mul3(vel[idx[1]], v)),
                        detail::mul3(vel[idx[2]], 1.0f - u - v));
}

TW_FUNC v3f mesh_eval_face_normal(uint64_t id, int32_t face) {
    const mesh_t& m = detail::mesh_at(id);
    if (!detail::has_face(m, face)) return v3f();
    detail::face_t t = detail::mesh_face(m, face);
    v3f n = detail::cross3(detail::sub3(t.p[1], t.p[0]), detail::sub3(t.p[2], t.p[0]));
    float l = detail::len3(n);
    return l > 0.0f ? detail::mul3(n, 1.0f / l) : n;
}

TW_FUNC v3f mesh_get_point(uint64_t id, int32_t index) {
    const mesh_t& m = detail::mesh_at(id);
    if (!detail::has_corner(m, index)) return v3f();
    return detail::bvh_vec3(m.f_bvh.f_points)[detail::bvh_i32(m.f_bvh.f_indices)[index]];
}

TW_FUNC v3f mesh_get_velocity(uint64_t id, int32_t index) {
    const mesh_t& m = detail::mesh_at(id);
    if (!m.f_velocities || !detail::has_corner(m, index)) return v3f();
    return detail::bvh_vec3(m.f_velocities)[detail::bvh_i32(m.f_bvh.f_indices)[index]];
}

TW_FUNC int32_t mesh_get_index(uint64_t id, int32_t index) {
    const mesh_t& m = detail::mesh_at(id);
    return detail::has_corner(m, index) ? detail::bvh_i32(m.f_bvh.f_indices)[index] : -1;
}

TW_FUNC uint64_t mesh_get_bvh(uint64_t id) { return id; }

// What wp.mesh_get gives kernels: the mesh's arrays (Python twin: tilewarp/builtins/mesh.py MeshView).
struct mesh_view_t {
    array_t<v3f, 1> f_points;
    array_t<v3f, 1> f_velocities;
    array_t<int32_t, 1> f_indices;
};

namespace detail {
template <typename T> TW_FUNC array_t<T, 1> flat_array(uint64_t data, int32_t n) {
    array_t<T, 1> a = {};
    a.data = reinterpret_cast<T*>(data);
    a.shape[0] = data ? n : 0;
    a.strides[0] = sizeof(T);
    return a;
}
}  // namespace detail

TW_FUNC mesh_view_t mesh_get(uint64_t id) {
    const mesh_t& m = detail::mesh_at(id);
    mesh_view_t v;
    v.f_points = detail::flat_array<v3f>(m.f_bvh.f_points, m.f_num_points);
    v.f_velocities = detail::flat_array<v3f>(m.f_velocities, m.f_num_points);
    v.f_indices = detail::flat_array<int32_t>(m.f_bvh.f_indices, 3 * m.f_num_faces);
    return v;
}

TW_FUNC int32_t mesh_get_group_root(uint64_t id, int32_t group) { return bvh_get_group_root(id, group); }

// ---- adjoints --------------------------------------------------------------------------------------

namespace detail {
TW_FUNC void accumulate_point(uint64_t grad, int32_t i, const v3f& g) {
    if (!grad) return;
    tw::atomic_add(reinterpret_cast<v3f*>(grad) + i, g);
}

// d(u, v)/d(point) of the closest point (u, v) on face t: the projection's barycentrics inside the
// face, the position along an edge on one, nothing at a vertex (the closest point stays there).
TW_FUNC void closest_weights_gradient(const face_t& t, float u, float v, v3f& du, v3f& dv) {
    float w = 1.0f - u - v;
    const float tiny = 1.0e-6f;
    du = v3f(), dv = v3f();
    bool iu = u > tiny, iv = v > tiny, iw = w > tiny;
    if (iu && iv && iw) {  // inside: (u, v) solve the projection onto the plane
        v3f e1 = sub3(t.p[0], t.p[2]), e2 = sub3(t.p[1], t.p[2]);
        float a = dot3(e1, e1), b = dot3(e1, e2), c = dot3(e2, e2);
        float det = a * c - b * b;
        if (det == 0.0f) return;
        float inv = 1.0f / det;
        du = mul3(sub3(mul3(e1, c), mul3(e2, b)), inv);
        dv = mul3(sub3(mul3(e2, a), mul3(e1, b)), inv);
    } else if (iu && iv) {  // edge 0-1: u = 1 - s, v = s along p1 - p0
        v3f e = sub3(t.p[1], t.p[0]);
        v3f ds = mul3(e, 1.0f / (dot3(e, e) + 1.0e-30f));
        du = mul3(ds, -1.0f), dv = ds;
    } else if (iv && iw) {  // edge 1-2: v = 1 - s along p2 - p1
        v3f e = sub3(t.p[2], t.p[1]);
        dv = mul3(e, -1.0f / (dot3(e, e) + 1.0e-30f));
    } else if (iu && iw) {  // edge 0-2: u = 1 - s along p2 - p0
        v3f e = sub3(t.p[2], t.p[0]);
        du = mul3(e, -1.0f / (dot3(e, e) + 1.0e-30f));
    }
}

TW_FUNC void adj_point_query(uint64_t id, const mesh_query_point_t& r, v3f& adj_point,
                             const mesh_query_point_t& adj_ret) {
    if (!r.f_result) return;
    face_t t = mesh_face(mesh_at(id), r.f_face);
    v3f du, dv;
    closest_weights_gradient(t, r.f_u, r.f_v, du, dv);
    adj_point = add3(adj_point, add3(mul3(du, adj_ret.f_u), mul3(dv, adj_ret.f_v)));
}
}  // namespace detail

template <typename I, typename F>
TW_FUNC void adj_mesh_query_point_no_sign(uint64_t id, const v3f& point, float max_dist, I&, v3f& adj_point, F&,
                                          const mesh_query_point_t& adj_ret) {
    detail::adj_point_query(id, mesh_query_point_no_sign(id, point, max_dist), adj_point, adj_ret);
}
template <typename I, typename F>
TW_FUNC void adj_mesh_query_point(uint64_t id, const v3f& point, float max_dist, I&, v3f& adj_point, F&,
                                  const mesh_query_point_t& adj_ret) {
    detail::adj_point_query(id, mesh_query_point_no_sign(id, point, max_dist), adj_point, adj_ret);
}
template <typename I, typename F, typename E>
TW_FUNC void adj_mesh_query_point_sign_normal(uint64_t id, const v3f& point, float max_dist, float, I&, v3f& adj_point,
                                              F&, E&, const mesh_query_point_t& adj_ret) {
    detail::adj_point_query(id, mesh_query_point_no_sign(id, point, max_dist), adj_point, adj_ret);
}
template <typename I, typename F, typename A, typename B>
TW_FUNC void adj_mesh_query_point_sign_parity(uint64_t id, const v3f& point, float max_dist, int32_t, float, I&,
                                              v3f& adj_point, F&, A&, B&, const mesh_query_point_t& adj_ret) {
    detail::adj_point_query(id, mesh_query_point_no_sign(id, point, max_dist), adj_point, adj_ret);
}
template <typename I, typename F, typename A, typename B>
TW_FUNC void adj_mesh_query_point_sign_winding_number(uint64_t id, const v3f& point, float max_dist, float, float, I&,
                                                      v3f& adj_point, F&, A&, B&, const mesh_query_point_t& adj_ret) {
    detail::adj_point_query(id, mesh_query_point_no_sign(id, point, max_dist), adj_point, adj_ret);
}

// t, u, v of the closest hit as functions of the ray (the face and its plane held fixed).
template <typename I, typename F, typename R>
TW_FUNC void adj_mesh_query_ray(uint64_t id, const v3f& start, const v3f& dir, float max_t, int32_t root, I&,
                                v3f& adj_start, v3f& adj_dir, F&, R&, const mesh_query_ray_t& adj_ret) {
    mesh_query_ray_t r = mesh_query_ray(id, start, dir, max_t, root);
    if (!r.f_result) return;
    detail::face_t f = detail::mesh_face(detail::mesh_at(id), r.f_face);
    v3f e1 = detail::sub3(f.p[1], f.p[0]), e2 = detail::sub3(f.p[2], f.p[0]);
    v3f n = detail::cross3(e1, e2);
    float nn = detail::dot3(n, n), nd = detail::dot3(n, dir);
    if (nn == 0.0f || nd == 0.0f) return;
    // hit x = start + t dir with t = n.(p0 - start) / n.dir; weights of p1, p2 are (x - p0).g1, (x - p0).g2
    v3f g1 = detail::mul3(detail::cross3(e2, n), 1.0f / nn), g2 = detail::mul3(detail::cross3(n, e1), 1.0f / nn);
    // Warp's u weighs p0 (1 - w1 - w2) and v weighs p1 (w1)
    v3f adj_x = detail::add3(detail::mul3(g1, adj_ret.f_v - adj_ret.f_u), detail::mul3(g2, -adj_ret.f_u));
    float adj_t = adj_ret.f_t + detail::dot3(adj_x, dir);
    v3f dt_dstart = detail::mul3(n, -1.0f / nd);
    adj_start = detail::add3(adj_start, detail::add3(adj_x, detail::mul3(dt_dstart, adj_t)));
    adj_dir = detail::add3(adj_dir, detail::add3(detail::mul3(adj_x, r.f_t), detail::mul3(dt_dstart, adj_t * r.f_t)));
}

template <typename I, typename J, typename U, typename V>
TW_FUNC void adj_mesh_eval_position(uint64_t id, int32_t face, float u, float v, I&, J&, U& adj_u, V& adj_v,
                                    const v3f& adj_ret) {
    const mesh_t& m = detail::mesh_at(id);
    if (!detail::has_face(m, face)) return;
    detail::face_t t = detail::mesh_face(m, face);
    adj_u += detail::dot3(adj_ret, detail::sub3(t.p[0], t.p[2]));
    adj_v += detail::dot3(adj_ret, detail::sub3(t.p[1], t.p[2]));
    float w[3] = {u, v, 1.0f - u - v};
    for (int k = 0; k < 3; ++k) detail::accumulate_point(m.f_points_grad, t.i[k], detail::mul3(adj_ret, w[k]));
}

template <typename I, typename J, typename U, typename V>
TW_FUNC void adj_mesh_eval_velocity(uint64_t id, int32_t face, float u, float v, I&, J&, U& adj_u, V& adj_v,
                                    const v3f& adj_ret) {
    const mesh_t& m = detail::mesh_at(id);
    if (!m.f_velocities || !detail::has_face(m, face)) return;
    const int32_t* idx = detail::bvh_i32(m.f_bvh.f_indices) + 3 * face;
    const v3f* vel = detail::bvh_vec3(m.f_velocities);
    adj_u += detail::dot3(adj_ret, detail::sub3(vel[idx[0]], vel[idx[2]]));
    adj_v += detail::dot3(adj_ret, detail::sub3(vel[idx[1]], vel[idx[2]]));
    float w[3] = {u, v, 1.0f - u - v};
    for (int k = 0; k < 3; ++k) detail::accumulate_point(m.f_velocities_grad, idx[k], detail::mul3(adj_ret, w[k]));
}

// n = c / |c| with c = (p1 - p0) x (p2 - p0): into the points' gradient
template <typename I, typename J>
TW_FUNC void adj_mesh_eval_face_normal(uint64_t id, int32_t face, I&, J&, const v3f& adj_ret) {
    const mesh_t& m = detail::mesh_at(id);
    if (!detail::has_face(m, face)) return;
    detail::face_t t = detail::mesh_face(m, face);
    v3f e1 = detail::sub3(t.p[1], t.p[0]), e2 = detail::sub3(t.p[2], t.p[0]);
    v3f c = detail::cross3(e1, e2);
    float l = detail::len3(c);
    if (l == 0.0f) return;
    v3f n = detail::mul3(c, 1.0f / l);
    v3f adj_c = detail::mul3(detail::sub3(adj_ret, detail::mul3(n, detail::dot3(n, adj_ret))), 1.0f / l);
    v3f adj_e1 = detail::cross3(e2, adj_c), adj_e2 = detail::cross3(adj_c, e1);
    detail::accumulate_point(m.f_points_grad, t.i[0], detail::mul3(detail::add3(adj_e1, adj_e2), -1.0f));
    detail::accumulate_point(m.f_points_grad, t.i[1], adj_e1);
    detail::accumulate_point(m.f_points_grad, t.i[2], adj_e2);
}

template <typename I, typename J>
TW_FUNC void adj_mesh_get_point(uint64_t id, int32_t index, I&, J&, const v3f& adj_ret) {
    const mesh_t& m = detail::mesh_at(id);
    if (!detail::has_corner(m, index)) return;
    detail::accumulate_point(m.f_points_grad, detail::bvh_i32(m.f_bvh.f_indices)[index], adj_ret);
}

template <typename I, typename J>
TW_FUNC void adj_mesh_get_velocity(uint64_t id, int32_t index, I&, J&, const v3f& adj_ret) {
    const mesh_t& m = detail::mesh_at(id);
    if (!detail::has_corner(m, index)) return;
    detail::accumulate_point(m.f_velocities_grad, detail::bvh_i32(m.f_bvh.f_indices)[index], adj_ret);
}

// the furthest point sits at a vertex whatever the query point: (u, v) do not move with it
template <typename I, typename F>
TW_FUNC void adj_mesh_query_furthest_point_no_sign(uint64_t, const v3f&, float, I&, v3f&, F&,
                                                   const mesh_query_point_t&) {}

}  // namespace tw
