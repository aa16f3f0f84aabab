// wp.Mesh in kernels: closest points (with four ways to tell inside from outside), rays, box and
// sphere queries over the triangles, evaluation on faces, and the adjoints Warp has.
//
// A mesh id is the address of a mesh_t, which starts with the bvh_t of its triangle tree (bvh.h), so
// the same id serves the tree's walks. Barycentrics follow Warp: (u, v) weigh the face's first and
// second vertex, 1 - u - v the third. Point and ray queries run to completion in one call with a
// small local stack ordered nearest-first; the iterating queries reuse bvh.h's stackless walk.
#pragma once
#include "bvh.h"

namespace tw {

// Members f_<field> as in the Python twin (tilewarp/builtins/mesh.py: MeshDesc).
struct mesh_t {
    bvh_t f_bvh;
    uint64_t f_velocities;       // vec3[num_points], or 0
    uint64_t f_points_grad;      // where mesh_eval_* adjoints accumulate, or 0
    uint64_t f_velocities_grad;
    int32_t f_num_points;
    int32_t f_num_faces;
    float f_average_edge;        // sign_normal's epsilon is a fraction of it
    int32_t f_winding;           // built with support_winding_number
    uint64_t f_winding_data;     // float[8] per node (winding_refit), or 0
};

struct mesh_query_point_t {
    bool f_result;
    float f_sign;
    int32_t f_face;
    float f_u;
    float f_v;
};

struct mesh_query_ray_t {
    bool f_result;
    float f_sign;
    int32_t f_face;
    float f_t;
    float f_u;
    float f_v;
    vec_t<3, float> f_normal;
};

typedef vec_t<3, float> v3f;

namespace detail {
// Deeper than any tree bvh.h builds: 62-bit keys (group and Morton code) plus the 32-bit position
// tie-break bound an LBVH's depth, median splits below depth 64 a top-down tree's (bvh_sah.h).
constexpr int MESH_STACK = 128;

// A walk's stacked node with its sort key (a box's distance, a ray's entry), one 8-byte entry: one
// local-memory load per pop and one store per push on the GPU.
struct alignas(8) walk_entry_t {
    int32_t node;
    float key;
};

TW_FUNC const mesh_t& mesh_at(uint64_t id) { return *reinterpret_cast<const mesh_t*>(id); }

TW_FUNC float dot3(const v3f& a, const v3f& b) { return a.c[0] * b.c[0] + a.c[1] * b.c[1] + a.c[2] * b.c[2]; }
TW_FUNC v3f sub3(const v3f& a, const v3f& b) { return v3f(a.c[0] - b.c[0], a.c[1] - b.c[1], a.c[2] - b.c[2]); }
TW_FUNC v3f add3(const v3f& a, const v3f& b) { return v3f(a.c[0] + b.c[0], a.c[1] + b.c[1], a.c[2] + b.c[2]); }
TW_FUNC v3f mul3(const v3f& a, float s) { return v3f(a.c[0] * s, a.c[1] * s, a.c[2] * s); }
TW_FUNC v3f cross3(const v3f& a, const v3f& b) {
    return v3f(a.c[1] * b.c[2] - a.c[2] * b.c[1], a.c[2] * b.c[0] - a.c[0] * b.c[2], a.c[0] * b.c[1] - a.c[1] * b.c[0]);
}
TW_FUNC float sqrt_(float x) {
#if TW_IS_CUDA
    return ::sqrtf(x);
#else
    return std::sqrt(x);
#endif
}
TW_FUNC float len3(const v3f& a) { return sqrt_(dot3(a, a)); }

struct face_t {
    int32_t i[3];
    v3f p[3];
};

// The face whose three vertex indices are at idx.
TW_FUNC face_t face_at(const mesh_t& m, const int32_t* idx) {
    face_t t;
    const v3f* pts = bvh_vec3(m.f_bvh.f_points);
    for (int k = 0; k < 3; ++k) t.i[k] = idx[k], t.p[k] = pts[idx[k]];
    return t;
}

TW_FUNC face_t mesh_face(const mesh_t& m, int32_t f) { return face_at(m, bvh_i32(m.f_bvh.f_indices) + 3 * f); }

// The face at sorted position k (a leaf's run), from the tree's sorted copy of the triangles.
TW_FUNC face_t mesh_face_sorted(const mesh_t& m, int32_t k) { return face_at(m, bvh_i32(m.f_bvh.f_tris) + 3 * k); }

// Faces whose area is negligible next to their edges have no defined closest point or normal.
TW_FUNC bool degenerate(const face_t& t) {
    v3f e1 = sub3(t.p[1], t.p[0]), e2 = sub3(t.p[2], t.p[0]);
    v3f n = cross3(e1, e2);
    return dot3(n, n) <= 1.0e-12f * dot3(e1, e1) * dot3(e2, e2);
}

// The closest point of triangle (a, b, c) to p as weights (u of a, v of b; c takes 1 - u - v), by the
// Voronoi regions of its vertices, edges and face.
TW_FUNC void closest_on_triangle(const v3f& p, const v3f& a, const v3f& b, const v3f& c, float& u, float& v) {
    v3f ab = sub3(b, a), ac = sub3(c, a), ap = sub3(p, a);
    float d1 = dot3(ab, ap), d2 = dot3(ac, ap);
    if (d1 <= 0.0f && d2 <= 0.0f) { u = 1.0f, v = 0.0f; return; }
    v3f bp = sub3(p, b);
    float d3 = dot3(ab, bp), d4 = dot3(ac, bp);
    if (d3 >= 0.0f && d4 <= d3) { u = 0.0f, v = 1.0f; return; }
    float vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
        float t = d1 / (d1 - d3);
        u = 1.0f - t, v = t;
        return;
    }
    v3f cp = sub3(p, c);
    float d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    if (d6 >= 0.0f && d5 <= d6) { u = 0.0f, v = 0.0f; return; }
    float vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
        float t = d2 / (d2 - d6);
        u = 1.0f - t, v = 0.0f;
        return;
    }
    float va = d3 * d6 - d5 * d4;
    if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {
        float t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        u = 0.0f, v = 1.0f - t;
        return;
    }
    float den = 1.0f / (va + vb + vc);
    float s = vb * den, t = vc * den;  // weights of b and c
    u = 1.0f - s - t, v = s;
}

TW_FUNC v3f at_weights(const face_t& t, float u, float v) {
    return add3(add3(mul3(t.p[0], u), mul3(t.p[1], v)), mul3(t.p[2], 1.0f - u - v));
}

struct closest_t {
    int32_t face;
    float u, v, d2;
};

// The closest non-degenerate face strictly within sqrt(best_d2), from node `root`.
TW_FUNC closest_t mesh_closest(const mesh_t& m, const v3f& p, float best_d2, int32_t root = 0) {
    closest_t best = {-1, 0.0f, 0.0f, best_d2};
    const bvh_t& b = m.f_bvh;
    if (b.f_num_items == 0) return best;
    const bvh_node_t* nodes = bvh_nodes(b);
    // each stacked node carries its box's distance, so a pop is pruned without testing the box again;
    // pushes are unconditional writes with a conditional count (no branch to mispredict)
    // each stacked node carries its box's distance, so a pop is pruned without testing the box again;
    // pushes are unconditional writes with a conditional count (no branch to mispredict). (The ray
    // walk's form, straight into the nearer child with 16-byte node loads, measured 20 % slower here
    // on an H200, where it made the ray walk 16 % faster.)
    walk_entry_t stack[MESH_STACK];
    int top = 0;
    stack[top++] = {root, box_dist_sq(p, nodes[root].lower, nodes[root].upper)};
    while (top > 0) {
        const walk_entry_t e = stack[--top];
        if (e.key >= best.d2) continue;
        const bvh_node_t& node = nodes[e.node];
        if (node.left < 0) {
            for (int32_t k = ~node.left; k < node.right; ++k) {
                face_t t = mesh_face_sorted(m, k);
                float u, v;
                closest_on_triangle(p, t.p[0], t.p[1], t.p[2], u, v);
                v3f d = sub3(p, at_weights(t, u, v));
                float d2 = dot3(d, d);
                // rarely taken: only a closer face pays for the degeneracy test and the item lookup
                if (d2 < best.d2 && !degenerate(t)) best = {bvh_i32(b.f_items)[k], u, v, d2};
            }
            continue;
        }
        float dl = box_dist_sq(p, nodes[node.left].lower, nodes[node.left].upper);
        float dr = box_dist_sq(p, nodes[node.right].lower, nodes[node.right].upper);
        bool left_near = dl <= dr;
        int32_t near = left_near ? node.left : node.right, far = left_near ? node.right : node.left;
        float dn = left_near ? dl : dr, df = left_near ? dr : dl;
        if (top + 2 > MESH_STACK) continue;  // deeper than any tree bvh.h builds
        prefetch_node(b, nodes[far]);
        prefetch_node(b, nodes[near]);
        stack[top] = {far, df}, top += df < best.d2;
        stack[top] = {near, dn}, top += dn < best.d2;
    }
    return best;
}

// Ray hits: the closest one (mode 0), any one (1), or how many (2), from node `root`.
struct ray_hit_t {
    int32_t face;
    float t, u, v, sign;
    v3f normal;
    int32_t count;
};

// Ray (o + t d) against triangle (a, b, c), both sides: t and the weights of b, c; false on a miss.
TW_FUNC bool ray_triangle(const v3f& o, const v3f& d, const v3f& a, const v3f& b, const v3f& c, float& t,
                          float& wb, float& wc) {
    v3f e1 = sub3(b, a), e2 = sub3(c, a);
    v3f pv = cross3(d, e2);
    float det = dot3(e1, pv);
    if (det == 0.0f || !(det == det)) return false;
    float inv = 1.0f / det;
    v3f tv = sub3(o, a);
    wb = dot3(tv, pv) * inv;
    if (wb < 0.0f || wb > 1.0f) return false;
    v3f qv = cross3(tv, e1);
    wc = dot3(d, qv) * inv;
    if (wc < 0.0f || wb + wc > 1.0f) return false;
    t = dot3(e2, qv) * inv;
    return true;
}

TW_FUNC ray_hit_t mesh_ray(const mesh_t& m, const v3f& o, const v3f& d, float max_t, int32_t root, int mode) {
    ray_hit_t hit = {-1, max_t, 0.0f, 0.0f, 0.0f, v3f(), 0};
    const bvh_t& b = m.f_bvh;
    if (b.f_num_items == 0) return hit;
    const bvh_node_t* nodes = bvh_nodes(b);
    v3f inv = reciprocal(d);
    // each stacked node carries its entry distance: a pop beyond the closest hit so far is skipped;
    // pushes are unconditional writes with a conditional count, nearer child on top
    // descend into the nearer hit child, stack the other with its entry distance (a pop beyond the
    // closest hit so far is skipped without touching the node)
    walk_entry_t stack[MESH_STACK];
    int top = 0;
    int32_t at = root < 0 ? 0 : root;
    if (ray_box(o, inv, nodes[at].lower, nodes[at].upper, hit.t) < 0.0f) return hit;
    for (;;) {
        const bvh_node_t node = load_node(nodes, at);
        if (node.left >= 0) {
            const bvh_node_t l = load_node(nodes, node.left), r = load_node(nodes, node.right);
            const float tl = ray_box(o, inv, l.lower, l.upper, hit.t), tr = ray_box(o, inv, r.lower, r.upper, hit.t);
            // a miss is -1: the nearer hit child first
            const bool left_first = tl >= 0.0f && (tr < 0.0f || tl <= tr);
            const float tf = left_first ? tl : tr, ts = left_first ? tr : tl;
            if (tf >= 0.0f) {
                prefetch_node(b, left_first ? r : l);
                prefetch_node(b, left_first ? l : r);
                if (ts >= 0.0f && top < MESH_STACK) stack[top++] = {left_first ? node.right : node.left, ts};
                at = left_first ? node.left : node.right;
                continue;
            }
        } else {
            for (int32_t k = ~node.left; k < node.right; ++k) {
                face_t f = mesh_face_sorted(m, k);
                float t, wb, wc;
                if (!ray_triangle(o, d, f.p[0], f.p[1], f.p[2], t, wb, wc) || t < 0.0f) continue;
                if (mode == 2) {
                    hit.count++;
                    continue;
                }
                if (t >= hit.t) continue;
                v3f n = cross3(sub3(f.p[1], f.p[0]), sub3(f.p[2], f.p[0]));
                float nl = len3(n);
                hit.face = bvh_i32(b.f_items)[k], hit.t = t, hit.u = 1.0f - wb - wc, hit.v = wb;
                hit.normal = nl > 0.0f ? mul3(n, 1.0f / nl) : n;
                hit.sign = dot3(d, n) < 0.0f ? 1.0f : -1.0f;
                if (mode == 1) return hit;
            }
        }
        do {  // the next stacked node entered no later than the closest hit
            if (top == 0) return hit;
        } while (stack[--top].key > hit.t);
        at = stack[top].node;
    }
    return hit;
}

// Inside by a majority of three axis rays: a ray whose closest hit leaves through a face votes inside.
TW_FUNC float sign_by_rays(const mesh_t& m, const v3f& p) {
    const float inf = 3.402823466e+38f;
    int inside = 0;
    for (int k = 0; k < 3; ++k) {
        v3f dir;
        dir.c[k] = 1.0f;
        ray_hit_t h = mesh_ray(m, p, dir, inf, 0, 0);
        if (h.face >= 0 && h.sign < 0.0f) inside++;
    }
    return inside >= 2 ? -1.0f : 1.0f;
}

// The angle of face t at vertex k.
TW_FUNC float corner_angle(const face_t& t, int k) {
    v3f a = sub3(t.p[(k + 1) % 3], t.p[k]), b = sub3(t.p[(k + 2) % 3], t.p[k]);
    float c = dot3(a, b) / (len3(a) * len3(b) + 1.0e-30f);
    c = c < -1.0f ? -1.0f : (c > 1.0f ? 1.0f : c);
#if TW_IS_CUDA
    return ::acosf(c);
#else
    return std::acos(c);
#endif
}

// Inside by the angle-weighted pseudo normal of the closest feature: the closest face's normal when the
// closest point is inside it; on an edge (within eps of it) the sum of the normals of the faces
// sharing that edge's two vertices; at a vertex (within eps) the faces around it, each weighted by
// its angle there. Incident faces are found by their vertex indices, so a nearby face of another
// part of the mesh never votes.
TW_FUNC float sign_by_normal(const mesh_t& m, const v3f& p, const closest_t& c, float eps) {
    face_t best = mesh_face(m, c.face);
    v3f cp = at_weights(best, c.u, c.v);
    float w[3] = {c.u, c.v, 1.0f - c.u - c.v};
    int32_t vertex = -1, edge_a = -1, edge_b = -1;
    // a vertex or edge as close to p as the closest point (up to rounding and eps) is the feature:
    // float rounding alone can put the closest point of a sharp corner just off its vertex
    float near = sqrt_(c.d2) * (1.0f + 1.0e-4f) + eps;
    for (int k = 0; k < 3 && vertex < 0; ++k) {
        if (len3(sub3(p, best.p[k])) <= near) vertex = best.i[k];
    }
    for (int k = 0; k < 3 && vertex < 0 && edge_a < 0; ++k) {  // the edge opposite vertex k
        v3f a = best.p[(k + 1) % 3], b = best.p[(k + 2) % 3];
        v3f e = sub3(b, a);
        float s = dot3(sub3(p, a), e) / (dot3(e, e) + 1.0e-30f);
        s = s < 0.0f ? 0.0f : (s > 1.0f ? 1.0f : s);
        if (w[k] <= 1.0e-6f || len3(sub3(p, add3(a, mul3(e, s)))) <= near) {
            edge_a = best.i[(k + 1) % 3], edge_b = best.i[(k + 2) % 3];
        }
    }
    v3f normal;
    if (vertex < 0 && edge_a < 0) {
        normal = cross3(sub3(best.p[1], best.p[0]), sub3(best.p[2], best.p[0]));
    } else {
        float reach = near + eps;
        const bvh_t& b = m.f_bvh;
        const bvh_node_t* nodes = bvh_nodes(b);
        const int32_t* items = bvh_i32(b.f_items);
        int32_t stack[MESH_STACK];
        int top = 0;
        stack[top++] = 0;
        while (top > 0) {
            const bvh_node_t& node = nodes[stack[--top]];
            if (box_dist_sq(p, node.lower, node.upper) > reach * reach) continue;
            if (node.left >= 0) {
                if (top + 2 <= MESH_STACK) stack[top++] = node.left, stack[top++] = node.right;
                continue;
            }
            for (int32_t k = ~node.left; k < node.right; ++k) {
                face_t t = mesh_face(m, items[k]);
                if (degenerate(t)) continue;
                int at = -1, shared = 0;
                for (int j = 0; j < 3; ++j) {
                    if (t.i[j] == vertex) at = j;
                    shared += t.i[j] == edge_a || t.i[j] == edge_b;
                }
                if (vertex >= 0 ? at < 0 : shared < 2) continue;
                v3f n = cross3(sub3(t.p[1], t.p[0]), sub3(t.p[2], t.p[0]));
                n = mul3(n, 1.0f / (len3(n) + 1.0e-30f));
                normal = add3(normal, mul3(n, vertex >= 0 ? corner_angle(t, at) : 1.0f));
            }
        }
    }
    return dot3(sub3(p, cp), normal) < 0.0f ? -1.0f : 1.0f;
}

// The solid angle of triangle (a, b, c) seen from p (Van Oosterom and Strackee).
TW_FUNC float solid_angle(const v3f& p, const v3f& a, const v3f& b, const v3f& c) {
    v3f x = sub3(a, p), y = sub3(b, p), z = sub3(c, p);
    float lx = len3(x), ly = len3(y), lz = len3(z);
    float num = dot3(x, cross3(y, z));
    float den = lx * ly * lz + dot3(x, y) * lz + dot3(y, z) * lx + dot3(z, x) * ly;
#if TW_IS_CUDA
    return 2.0f * ::atan2f(num, den);
#else
    return 2.0f * std::atan2(num, den);
#endif
}

// The generalised winding number of the mesh at p (every face: exact).
TW_FUNC float winding_number(const mesh_t& m, const v3f& p) {
    float sum = 0.0f;
    for (int32_t f = 0; f < m.f_num_faces; ++f) {
        face_t t = mesh_face(m, f);
        sum += solid_angle(p, t.p[0], t.p[1], t.p[2]);
    }
    return sum * (1.0f / (4.0f * 3.14159265f));
}

// Per node, for the fast winding number (Barill et al. 2018): the faces' area-weighted normal sum
// (their dipole), total area, area-weighted centroid and the radius around it holding every vertex.
struct winding_node_t {
    v3f normal;
    float area;
    v3f center;
    float radius;
};

TW_FUNC winding_node_t* winding_nodes(const mesh_t& m) {
    return reinterpret_cast<winding_node_t*>(m.f_winding_data);
}

// The winding number from the tree: a node far enough away (beyond `accuracy` times its radius)
// counts as its dipole, (c - p) . N / |c - p|^3 / 4 pi; near ones open up, leaves sum exactly.
TW_FUNC float winding_number_fast(const mesh_t& m, const v3f& p, float accuracy) {
    const bvh_t& b = m.f_bvh;
    const bvh_node_t* nodes = bvh_nodes(b);
    const winding_node_t* data = winding_nodes(m);
    const int32_t* items = bvh_i32(b.f_items);
    float sum = 0.0f;
    int32_t stack[MESH_STACK];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
        int32_t k = stack[--top];
        const winding_node_t& w = data[k];
        v3f d = sub3(w.center, p);
        float dist = len3(d);
        if (dist > accuracy * w.radius && dist > 0.0f) {
            sum += dot3(d, w.normal) / (dist * dist * dist);
            continue;
        }
        const bvh_node_t& node = nodes[k];
        if (node.left < 0) {
            for (int32_t j = ~node.left; j < node.right; ++j) {
                face_t t = mesh_face(m, items[j]);
                sum += solid_angle(p, t.p[0], t.p[1], t.p[2]);
            }
        } else if (top + 2 <= MESH_STACK) {
            stack[top++] = node.left, stack[top++] = node.right;
        }
    }
    return sum * (1.0f / (4.0f * 3.14159265f));
}

TW_FUNC mesh_query_point_t point_result(const closest_t& c, float sign) {
    mesh_query_point_t r = {};
    r.f_result = c.face >= 0, r.f_face = c.face, r.f_u = c.u, r.f_v = c.v, r.f_sign = sign;
    return r;
}

TW_FUNC float max_d2(float max_dist) { return max_dist >= 1.8e19f ? 3.402823466e+38f : max_dist * max_dist; }
}  // namespace detail

// ---- closest points --------------------------------------------------------------------------------

TW_FUNC mesh_query_point_t mesh_query_point_no_sign(uint64_t id, const v3f& point, float max_dist) {
    detail::closest_t c = detail::mesh_closest(detail::mesh_at(id), point, detail::max_d2(max_dist));
    return detail::point_result(c, 0.0f);
}

TW_FUNC mesh_query_point_t mesh_query_point(uint64_t id, const v3f& point, float max_dist) {
    const mesh_t& m = detail::mesh_at(id);
    detail::closest_t c = detail::mesh_closest(m, point, detail::max_d2(max_dist));
    return detail::point_result(c, c.face >= 0 ? detail::sign_by_rays(m, point) : 0.0f);
}

TW_FUNC mesh_query_point_t mesh_query_point_sign_normal(uint64_t id, const v3f& point, float max_dist,
                                                        float epsilon) {
    const mesh_t& m = detail::mesh_at(id);
    detail::closest_t c = detail::mesh_closest(m, point, detail::max_d2(max_dist));
    float sign = c.face >= 0 ? detail::sign_by_normal(m, point, c, epsilon * m.f_average_edge) : 0.0f;
    return detail::point_result(c, sign);
}

TW_FUNC mesh_query_point_t mesh_query_point_sign_winding_number(uint64_t id, const v3f& point, float max_dist,
                                                                float accuracy, float threshold) {
    const mesh_t& m = detail::mesh_at(id);
    detail::closest_t c = detail::mesh_closest(m, point, detail::max_d2(max_dist));
    float sign = 0.0f;
    if (c.face >= 0) {
        float w = m.f_winding_data ? detail::winding_number_fast(m, point, accuracy) : detail::winding_number(m, point);
        sign = m.f_winding ? (w > threshold ? -1.0f : 1.0f)
                           : detail::sign_by_rays(m, point);  // Warp's fallback without winding data
    }
    return detail::point_result(c, sign);
}

namespace detail {
// A fixed-seed value in [-1, 1) per (ray, axis): the same rays on every call and every device.
TW_FUNC float parity_jitter(uint32_t k) {
    k = k * 0x9E3779B9u + 0x7F4A7C15u;
    k ^= k >> 16, k *= 0x85EBCA6Bu, k ^= k >> 13, k *= 0xC2B2AE35u, k ^= k >> 16;
    return (float)(k >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

// Inside when at least half of n rays around (1, 1, 1) cross an odd number of faces (n <= 0: inside).
TW_FUNC float sign_by_parity(const mesh_t& m, const v3f& p, int32_t n, float scale) {
    int32_t odd = 0;
    for (int32_t r = 0; r < n; ++r) {
        v3f dir;
        for (int k = 0; k < 3; ++k) dir.c[k] = 1.0f + scale * parity_jitter((uint32_t)(3 * r + k));
        odd += mesh_ray(m, p, dir, 3.402823466e+38f, 0, 2).count & 1;
    }
    return 2 * odd >= n ? -1.0f : 1.0f;
}
}  // namespace detail

TW_FUNC mesh_query_point_t mesh_query_point_sign_parity(uint64_t id, const v3f& point, float max_dist, int32_t n_sample,
                                                        float perturbation_scale) {
    const mesh_t& m = detail::mesh_at(id);
    detail::closest_t c = detail::mesh_closest(m, point, detail::max_d2(max_dist));
    float sign = c.face >= 0 ? detail::sign_by_parity(m, point, n_sample, perturbation_scale) : 0.0f;
    return detail::point_result(c, sign);
}

// The furthest point is a vertex of the furthest face (a convex function peaks at a corner).
TW_FUNC mesh_query_point_t mesh_query_furthest_point_no_sign(uint64_t id, const v3f& point, float min_dist) {
    const mesh_t& m = detail::mesh_at(id);
    mesh_query_point_t r = {};
    float best = min_dist * min_dist;
    for (int32_t f = 0; f < m.f_num_faces; ++f) {
        detail::face_t t = detail::mesh_face(m, f);
        if (detail::degenerate(t)) continue;
        for (int k = 0; k < 3; ++k) {
            v3f d = detail::sub3(point, t.p[k]);
            float d2 = detail::dot3(d, d);
            if (d2 > best) {
                best = d2, r.f_result = true, r.f_face = f;
                r.f_u = k == 0 ? 1.0f : 0.0f, r.f_v = k == 1 ? 1.0f : 0.0f;
            }
        }
    }
    return r;
}

// The winding data of node `node` if it is a leaf, then up the tree as bvh_refit does (the tree's
// counters zeroed before the launch).
TW_FUNC void mesh_winding_refit(uint64_t id, int32_t node) {
    const mesh_t& m = detail::mesh_at(id);
    const bvh_t& b = m.f_bvh;
    bvh_node_t* nodes = detail::bvh_nodes(b);
    const int32_t* parents = detail::bvh_i32(b.f_parents);
    if (node >= detail::bvh_i32(b.f_count)[0] || nodes[node].left >= 0) return;
    int32_t parent = parents[node];
    detail::winding_node_t* data = detail::winding_nodes(m);
    const int32_t* items = detail::bvh_i32(b.f_items);
    detail::winding_node_t w = {};
    v3f centroid_sum;
    for (int32_t k = ~nodes[node].left; k < nodes[node].right; ++k) {
        detail::face_t t = detail::mesh_face(m, items[k]);
        v3f n = detail::mul3(detail::cross3(detail::sub3(t.p[1], t.p[0]), detail::sub3(t.p[2], t.p[0])), 0.5f);
        float a = detail::len3(n);
        w.normal = detail::add3(w.normal, n);
        w.area += a;
        v3f c = detail::mul3(detail::add3(detail::add3(t.p[0], t.p[1]), t.p[2]), 1.0f / 3.0f);
        centroid_sum = detail::add3(centroid_sum, detail::mul3(c, a));
    }
    int32_t first = ~nodes[node].left;
    w.center = w.area > 0.0f ? detail::mul3(centroid_sum, 1.0f / w.area) : detail::mesh_face(m, items[first]).p[0];
    for (int32_t k = first; k < nodes[node].right; ++k) {
        detail::face_t t = detail::mesh_face(m, items[k]);
        for (int j = 0; j < 3; ++j) w.radius = detail::fmax_(w.radius, detail::len3(detail::sub3(t.p[j], w.center)));
    }
    data[node] = w;
    int32_t* counters = detail::bvh_i32w(b.f_counters);
    while (parent >= 0) {
        detail::fence();
        if (detail::arrive(counters + parent) == 0) return;
        const bvh_node_t& pn = nodes[parent];
        detail::winding_node_t l, r;
        const float* lf = reinterpret_cast<const float*>(data + pn.left);
        const float* rf = reinterpret_cast<const float*>(data + pn.right);
        float* lw = reinterpret_cast<float*>(&l);
        float* rw = reinterpret_cast<float*>(&r);
        for (int k = 0; k < 8; ++k) lw[k] = detail::load_fresh(lf + k), rw[k] = detail::load_fresh(rf + k);
        detail::winding_node_t u;
        u.normal = detail::add3(l.normal, r.normal);
        u.area = l.area + r.area;
        u.center = u.area > 0.0f
            ? detail::mul3(detail::add3(detail::mul3(l.center, l.area), detail::mul3(r.center, r.area)), 1.0f / u.area)
            : detail::mul3(detail::add3(l.center, r.center), 0.5f);
        u.radius = detail::fmax_(detail::len3(detail::sub3(u.center, l.center)) + l.radius,
                                 detail::len3(detail::sub3(u.center, r.center)) + r.radius);
        data[parent] = u;
        parent = parents[parent];
    }
}

// ---- rays ------------------------------------------------------------------------------------------

TW_FUNC mesh_query_ray_t mesh_query_ray(uint64_t id, const v3f& start, const v3f& dir, float max_t, int32_t root) {
    detail::ray_hit_t h = detail::mesh_ray(detail::mesh_at(id), start, dir, max_t, root, 0);
    mesh_query_ray_t r = {};
    r.f_face = -1;  // as Warp: no face on a miss
    if (h.face >= 0) {
        r.f_result = true, r.f_sign = h.sign, r.f_face = h.face, r.f_t = h.t, r.f_u = h.u, r.f_v = h.v;
        r.f_normal = h.normal;
    }
    return r;
}

TW_FUNC bool mesh_query_ray_anyhit(uint64_t id, const v3f& start, const v3f& dir, float max_t, int32_t root) {
    return detail::mesh_ray(detail::mesh_at(id), start, dir, max_t, root, 1).face >= 0;
}

TW_FUNC int32_t mesh_query_ray_count_intersections(uint64_t id, const v3f& start, const v3f& dir, int32_t root) {
    return detail::mesh_ray(detail::mesh_at(id), start, dir, 3.402823466e+38f, root, 2).count;
}

// ---- box and sphere queries (bvh.h's walk over the triangles' boxes) ----------------------------------

TW_FUNC bvh_query_t mesh_query_aabb(uint64_t id, const v3f& low, const v3f& high) {
    return bvh_query_aabb(id, low, high, -1);
}
TW_FUNC bvh_query_t mesh_query_sphere(uint64_t id, const v3f& center, float radius) {
    return bvh_query_sphere(id, center, radius, -1);
}
namespace detail {
// Box queries keep Warp's broad phase (the face's box overlaps); sphere queries test the face itself.
struct face_hits {
    TW_FUNC bool operator()(const bvh_query_t& q, int32_t item) const {
        const mesh_t& m = mesh_at(q.f_bvh);
        if (q.f_kind != BVH_SPHERE) return item_box_hits{3.402823466e+38f}(q, item);
        face_t t = mesh_face(m, item);
        float u, v;
        closest_on_triangle(q.f_a, t.p[0], t.p[1], t.p[2], u, v);
        v3f d = sub3(q.f_a, at_weights(t, u, v));
        return dot3(d, d) <= q.f_radius * q.f_radius;
    }
};
}  // namespace detail

TW_FUNC tuple_t<bool, bvh_query_t, int32_t> mesh_query_next(bvh_query_t q, int32_t index) {
    return detail::bvh_next_item(q, index, 3.402823466e+38f, detail::face_hits{});
}

}  // namespace tw

// evaluation on faces, the mesh's arrays, and the adjoints (kept apart for size)
#include "mesh_eval.h"
