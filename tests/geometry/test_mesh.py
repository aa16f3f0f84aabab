"""wp.Mesh: closest points, signs, rays, box/sphere queries against NumPy brute force and warp-lang,
gradients against finite differences, Warp's older output-argument forms, bad input."""
import numpy as np
import pytest

import tilewarp as wp
from conftest import load_both, need_warp
from meshes import icosphere


def bumpy(seed=0, levels=2):
    """A closed, non-convex mesh: an icosphere with radial bumps."""
    V, F = icosphere(levels)
    rng = np.random.default_rng(seed)
    return (V * (1 + 0.25 * rng.random((len(V), 1)))).astype(np.float32), F


def closest_brute(P, V, F):
    """Distance from each point to the mesh (float64, exact per triangle by projection and edges)."""
    T = V[F].astype(np.float64)
    best = np.full(len(P), np.inf)
    for a, b, c in T:
        best = np.minimum(best, _tri_dist(P.astype(np.float64), a, b, c))
    return best


def _seg_dist(P, a, b):
    e = b - a
    s = np.clip(((P - a) @ e) / (e @ e), 0, 1)
    return np.linalg.norm(P - (a + s[:, None] * e), axis=1)


def _tri_dist(P, a, b, c):
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n)
    d = (P - a) @ n
    q = P - d[:, None] * n
    inside = np.ones(len(P), bool)
    for x, y in ((a, b), (b, c), (c, a)):
        inside &= (np.cross(y - x, q - x) @ n) >= 0
    edges = np.minimum(np.minimum(_seg_dist(P, a, b), _seg_dist(P, b, c)), _seg_dist(P, c, a))
    return np.where(inside, np.abs(d), edges)


def winding_brute(P, V, F):
    T = V[F].astype(np.float64)
    total = np.zeros(len(P))
    for a, b, c in T:
        x, y, z = a - P, b - P, c - P
        lx, ly, lz = (np.linalg.norm(w, axis=1) for w in (x, y, z))
        num = np.einsum("ij,ij->i", x, np.cross(y, z))
        den = lx * ly * lz + np.einsum("ij,ij->i", x, y) * lz + np.einsum("ij,ij->i", y, z) * lx + \
            np.einsum("ij,ij->i", z, x) * ly
        total += 2 * np.arctan2(num, den)
    return total / (4 * np.pi)


@wp.kernel
def point_queries(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    i = wp.tid()
    p = pts[i]
    q = wp.mesh_query_point_no_sign(mesh, p, 1.0e6)
    out[i, 0] = wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    out[i, 1] = wp.mesh_query_point(mesh, p, 1.0e6).sign
    out[i, 2] = wp.mesh_query_point_sign_normal(mesh, p, 1.0e6).sign
    out[i, 3] = wp.mesh_query_point_sign_winding_number(mesh, p, 1.0e6).sign
    out[i, 4] = wp.mesh_query_point_sign_parity(mesh, p, 1.0e6, 3).sign
    out[i, 5] = float(q.face)
    far = wp.mesh_query_point_no_sign(mesh, p, 0.01)  # nothing that close: no result
    out[i, 6] = wp.where(far.result, 1.0, 0.0)


@pytest.mark.parametrize("leaf_size", [1, 4])
def test_closest_points_and_signs(device, leaf_size):
    V, F = bumpy(1)
    mesh = wp.Mesh(wp.array(V, dtype=wp.vec3, device=device), wp.array(F.ravel(), dtype=wp.int32, device=device),
                   support_winding_number=True, bvh_leaf_size=leaf_size)
    rng = np.random.default_rng(2)
    P = (rng.random((1500, 3)) * 3.4 - 1.7).astype(np.float32)
    out = wp.zeros((len(P), 7), dtype=float, device=device)
    wp.launch(point_queries, dim=len(P), inputs=[mesh.id, wp.array(P, dtype=wp.vec3, device=device), out],
              device=device)
    o = out.numpy()
    dist = closest_brute(P, V, F)
    np.testing.assert_allclose(o[:, 0], dist, atol=2e-5)
    inside = winding_brute(P, V, F) > 0.5
    clear = dist > 1e-3  # points on the surface have no sign to agree on
    for k, name in ((1, "rays"), (2, "normal"), (3, "winding"), (4, "parity")):
        np.testing.assert_array_equal((o[:, k] < 0)[clear], inside[clear], err_msg=name)
    np.testing.assert_array_equal(o[:, 6], (dist < 0.01).astype(np.float32))


@wp.kernel
def ray_queries(mesh: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
                out: wp.array2d(dtype=float)):
    i = wp.tid()
    h = wp.mesh_query_ray(mesh, o[i], d[i], 1.0e6)
    out[i, 0] = wp.where(h.result, h.t, -1.0)
    out[i, 1] = float(h.face)
    out[i, 2] = h.sign
    out[i, 3] = wp.where(wp.mesh_query_ray_anyhit(mesh, o[i], d[i], 1.0e6), 1.0, 0.0)
    out[i, 4] = float(wp.mesh_query_ray_count_intersections(mesh, o[i], d[i]))
    hit = wp.mesh_eval_position(mesh, h.face, h.u, h.v)
    out[i, 5] = wp.where(h.result, wp.length(hit - (o[i] + h.t * d[i])), 0.0)
    out[i, 6] = wp.dot(h.normal, wp.mesh_eval_face_normal(mesh, h.face))


def _ray_brute(o, d, V, F):
    T = V[F].astype(np.float64)
    ts = []
    for a, b, c in T:
        e1, e2 = b - a, c - a
        pv = np.cross(d, e2)
        det = pv @ e1
        if abs(det) < 1e-12:
            ts.append(np.inf)
            continue
        tv = o - a
        u = (tv @ pv) / det
        qv = np.cross(tv, e1)
        v = (d @ qv) / det
        t = (e2 @ qv) / det
        ts.append(t if (u >= 0 and v >= 0 and u + v <= 1 and t >= 0) else np.inf)
    return np.array(ts)


def test_rays(device):
    V, F = bumpy(3)
    mesh = wp.Mesh(wp.array(V, dtype=wp.vec3, device=device), wp.array(F.ravel(), dtype=wp.int32, device=device))
    rng = np.random.default_rng(4)
    n = 300
    O = (rng.random((n, 3)) * 4 - 2).astype(np.float32)
    D = rng.normal(size=(n, 3)).astype(np.float32)
    D /= np.linalg.norm(D, axis=1, keepdims=True)
    out = wp.zeros((n, 7), dtype=float, device=device)
    wp.launch(ray_queries, dim=n, inputs=[mesh.id, wp.array(O, dtype=wp.vec3, device=device),
                                          wp.array(D, dtype=wp.vec3, device=device), out], device=device)
    o = out.numpy()
    for i in range(n):
        ts = _ray_brute(O[i].astype(np.float64), D[i].astype(np.float64), V, F)
        hits = np.isfinite(ts)
        assert o[i, 4] == hits.sum(), f"ray {i}: crossings"
        assert o[i, 3] == float(hits.any())
        if hits.any():
            assert abs(o[i, 0] - ts.min()) < 1e-4 and o[i, 5] < 1e-4 and abs(o[i, 6] - 1) < 1e-5
            f = F[int(o[i, 1])]
            n_f = np.cross(V[f[1]] - V[f[0]], V[f[2]] - V[f[0]])
            assert o[i, 2] == (1.0 if n_f @ D[i] < 0 else -1.0)
        else:
            assert o[i, 0] == -1.0 and o[i, 1] == -1.0


@wp.kernel
def point_and_ray(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
                  out: wp.array2d(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, p[i], 1.0e6)
    out[i, 0] = wp.length(p[i] - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    out[i, 1] = float(q.face)
    h = wp.mesh_query_ray(mesh, p[i], d[i], 1.0e6)
    out[i, 2] = wp.where(h.result, h.t, -1.0)
    out[i, 3] = float(h.face)
    out[i, 4] = float(wp.mesh_query_ray_count_intersections(mesh, p[i], d[i]))


@pytest.mark.parametrize("constructor", ["sah", "median"])
@pytest.mark.parametrize("leaf_size", [1, 4])
def test_constructors_agree(device, constructor, leaf_size):
    """A top-down tree finds what the LBVH finds: the same ray hits (face and t), crossing counts
    and closest distances (a point as near two faces may name either)."""
    V, F = bumpy(7, levels=3)
    rng = np.random.default_rng(8)
    n = 3000
    P = (rng.random((n, 3)) * 3.4 - 1.7).astype(np.float32)
    D = rng.normal(size=(n, 3)).astype(np.float32)
    D /= np.linalg.norm(D, axis=1, keepdims=True)
    out = {}
    for c in (constructor, "lbvh"):
        mesh = wp.Mesh(wp.array(V, dtype=wp.vec3, device=device), wp.array(F.ravel(), dtype=wp.int32, device=device),
                       bvh_constructor=c, bvh_leaf_size=leaf_size)
        res = wp.zeros((n, 5), dtype=float, device=device)
        wp.launch(point_and_ray, dim=n, inputs=[mesh.id, wp.array(P, dtype=wp.vec3, device=device),
                                                wp.array(D, dtype=wp.vec3, device=device), res], device=device)
        out[c] = res.numpy()
    a, b = out[constructor], out["lbvh"]
    np.testing.assert_allclose(a[:, 0], b[:, 0], atol=1e-6)
    differ = a[:, 1] != b[:, 1]
    for fa, fb in zip(a[differ, 1].astype(int), b[differ, 1].astype(int)):
        assert set(F[fa]) & set(F[fb]), (fa, fb)  # nearest to a vertex or edge the two faces share
    np.testing.assert_array_equal(a[:, 2:], b[:, 2:])
    assert (a[:, 2] > 0).sum() > n // 4  # the rays do hit


@wp.kernel
def group_rays(mesh: wp.uint64, group: int, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
               out: wp.array2d(dtype=float)):
    i = wp.tid()
    root = wp.mesh_get_group_root(mesh, group)
    out[i, 0] = float(wp.mesh_query_ray_count_intersections(mesh, o[i], d[i], root))
    h = wp.mesh_query_ray(mesh, o[i], d[i], 1.0e6, root)
    out[i, 1] = float(h.face)


@pytest.mark.parametrize("constructor", ["sah", "median", "lbvh"])
def test_group_roots(device, constructor):
    """A group root's subtree holds exactly that group's faces (groups scattered over the mesh)."""
    V, F = bumpy(9)
    rng = np.random.default_rng(9)
    g = rng.integers(-1, 3, len(F)).astype(np.int32)
    mesh = wp.Mesh(wp.array(V, dtype=wp.vec3, device=device), wp.array(F.ravel(), dtype=wp.int32, device=device),
                   bvh_constructor=constructor, groups=wp.array(g, dtype=wp.int32, device=device))
    n = 60
    O = (rng.random((n, 3)) * 4 - 2).astype(np.float32)
    D = rng.normal(size=(n, 3)).astype(np.float32)
    out = wp.zeros((n, 2), dtype=float, device=device)
    for group in (-1, 0, 1, 2):
        wp.launch(group_rays, dim=n, inputs=[mesh.id, group, wp.array(O, dtype=wp.vec3, device=device),
                                             wp.array(D, dtype=wp.vec3, device=device), out], device=device)
        o = out.numpy()
        for i in range(n):
            ts = _ray_brute(O[i].astype(np.float64), D[i].astype(np.float64), V, F)
            hits = np.isfinite(ts) & (g == group)
            assert o[i, 0] == hits.sum(), f"group {group}, ray {i}"
            assert (o[i, 1] >= 0) == hits.any() and (o[i, 1] < 0 or g[int(o[i, 1])] == group)


@wp.kernel
def box_and_sphere(mesh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), r: float,
                   boxes: wp.array2d(dtype=int), spheres: wp.array2d(dtype=int)):
    i = wp.tid()
    f = int(0)
    q = wp.mesh_query_aabb(mesh, lo[i], hi[i])
    while wp.mesh_query_next(q, f):
        boxes[i, f] = 1
    for g in wp.mesh_query_sphere(mesh, 0.5 * (lo[i] + hi[i]), r):
        spheres[i, g] = 1


def test_box_and_sphere_queries(device):
    V, F = bumpy(5)
    mesh = wp.Mesh(wp.array(V, dtype=wp.vec3, device=device), wp.array(F.ravel(), dtype=wp.int32, device=device))
    rng = np.random.default_rng(6)
    c = (rng.random((100, 3)) * 2.4 - 1.2).astype(np.float32)
    e = (rng.random((100, 3)) * 0.4).astype(np.float32)
    lo, hi = c - e, c + e
    boxes = wp.zeros((100, len(F)), dtype=int, device=device)
    spheres = wp.zeros((100, len(F)), dtype=int, device=device)
    wp.launch(box_and_sphere, dim=100, inputs=[mesh.id, wp.array(lo, dtype=wp.vec3, device=device),
                                               wp.array(hi, dtype=wp.vec3, device=device), 0.3, boxes, spheres],
              device=device)
    T = V[F]
    tlo, thi = T.min(1), T.max(1)
    want_boxes = np.all((tlo[None] <= hi[:, None]) & (thi[None] >= lo[:, None]), axis=-1)
    np.testing.assert_array_equal(boxes.numpy().astype(bool), want_boxes)
    d = np.stack([_tri_dist(c.astype(np.float64), *T[k].astype(np.float64)) for k in range(len(F))], axis=1)
    s = spheres.numpy().astype(bool)
    assert not (s & (d > 0.3 + 1e-5)).any() and not (~s & (d < 0.3 - 1e-5)).any()


KERNELS = """
import WP as wp

@wp.kernel
def closest(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), face: wp.array(dtype=int), uv: wp.array(dtype=wp.vec2),
            sign: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    f = int(0)
    u = float(0.0)
    v = float(0.0)
    if wp.mesh_query_point(mesh, pts[i], 1.0e6, s, f, u, v):
        face[i] = f
        uv[i] = wp.vec2(u, v)
        sign[i] = s
"""


def test_matches_warp_older_forms():
    """Warp's output-argument form, same text under warp-lang and tilewarp: same faces, barycentrics, signs."""
    mods = load_both(KERNELS)
    need_warp(mods)
    V, F = bumpy(7)
    rng = np.random.default_rng(8)
    P = (rng.random((500, 3)) * 3 - 1.5).astype(np.float32)
    results = []
    for mod in mods:
        w = mod.wp
        w.init()
        mesh = w.Mesh(w.array(V, dtype=w.vec3, device="cpu"), w.array(F.ravel(), dtype=w.int32, device="cpu"))
        outs = [w.zeros(500, dtype=int, device="cpu"), w.zeros(500, dtype=w.vec2, device="cpu"),
                w.zeros(500, dtype=float, device="cpu")]
        w.launch(mod.closest, dim=500, inputs=[mesh.id, w.array(P, dtype=w.vec3, device="cpu"), *outs], device="cpu")
        results.append([o.numpy() for o in outs])
    # faces meeting at a closest vertex or edge tie: compare the closest points themselves
    points = []
    for f, uv, _ in results:
        T = V[F[f]]
        points.append(uv[:, :1] * T[:, 0] + uv[:, 1:] * T[:, 1] + (1 - uv.sum(1, keepdims=True)) * T[:, 2])
    np.testing.assert_allclose(points[0], points[1], atol=1e-4)
    np.testing.assert_array_equal(results[0][2], results[1][2])


def test_gradients_against_finite_differences():
    """d/dp of the distance to the closest point (through u, v and mesh_eval_position), d/d(start, dir)
    of a ray's hit distance, and d/d(points) of mesh_eval_position and the face normal."""
    V, F = bumpy(9)
    points = wp.array(V, dtype=wp.vec3, requires_grad=True)
    mesh = wp.Mesh(points, wp.array(F.ravel(), dtype=wp.int32))

    @wp.kernel
    def loss(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
             out: wp.array(dtype=float)):
        q = wp.mesh_query_point_no_sign(mesh, p[0], 1.0e6)
        c = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        h = wp.mesh_query_ray(mesh, o[0], d[0], 1.0e6)
        n = wp.mesh_eval_face_normal(mesh, 3)
        out[0] = wp.length(p[0] - c) + 0.7 * h.t + wp.dot(n, wp.vec3(0.3, -0.2, 0.9))

    def run(pv, ov, dv, pts=None):
        if pts is not None:
            points.assign(pts)
            mesh.refit()
        arrs = [wp.array([x], dtype=wp.vec3, requires_grad=True) for x in (pv, ov, dv)]
        out = wp.zeros(1, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(loss, dim=1, inputs=[mesh.id, *arrs, out])
        return out, arrs, tape

    p0 = np.array([1.9, 0.3, -0.4], np.float32)
    o0 = np.array([0.05, -0.1, 2.5], np.float32)
    d0 = np.array([0.02, 0.05, -1.0], np.float32)
    out, arrs, tape = run(p0, o0, d0)
    points.grad.zero_()
    tape.backward(loss=out)
    grads = [a.grad.numpy()[0] for a in arrs]
    mesh_grad = points.grad.numpy().copy()
    h = 1e-3

    def value(pv, ov, dv, pts=None):
        return float(run(pv, ov, dv, pts)[0].numpy()[0])

    for k, base in enumerate((p0, o0, d0)):
        for j in range(3):
            e = np.zeros(3, np.float32)
            e[j] = h
            args = [p0, o0, d0]
            args[k] = base + e
            plus = value(*args)
            args[k] = base - e
            fd = (plus - value(*args)) / (2 * h)
            assert abs(fd - grads[k][j]) < 2e-2 * max(1.0, abs(fd)), (k, j, fd, grads[k][j])
    tri = F[3]
    for vtx in tri:  # the face normal term (the closest point and the ray hit are elsewhere)
        for j in range(3):
            Vp, Vm = V.copy(), V.copy()
            Vp[vtx, j] += h
            Vm[vtx, j] -= h
            fd = (value(p0, o0, d0, Vp) - value(p0, o0, d0, Vm)) / (2 * h)
            assert abs(fd - mesh_grad[vtx, j]) < 2e-2 * max(1.0, abs(fd)), (vtx, j, fd, mesh_grad[vtx, j])


def test_points_setter_refits(device):
    V, F = icosphere(1)
    mesh = wp.Mesh(wp.array(V, dtype=wp.vec3, device=device), wp.array(F.ravel(), dtype=wp.int32, device=device))
    moved = wp.array(V * 2.0, dtype=wp.vec3, device=device)
    mesh.points = moved
    out = wp.zeros((1, 7), dtype=float, device=device)
    wp.launch(point_queries, dim=1, inputs=[mesh.id, wp.array([[0.0, 0.0, 3.0]], dtype=wp.vec3, device=device), out],
              device=device)
    assert abs(out.numpy()[0, 0] - 1.0) < 1e-2  # the surface moved to radius 2
    with pytest.raises(RuntimeError, match="same shape"):
        mesh.points = wp.zeros(3, dtype=wp.vec3, device=device)


@wp.kernel
def _slab_rays(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3),
               out: wp.array(dtype=wp.vec3i)):
    i = wp.tid()
    h = wp.mesh_query_ray(mesh, starts[i], dirs[i], 10.0)
    out[i] = wp.vec3i(wp.where(h.result, 1, 0), wp.where(wp.mesh_query_ray_anyhit(mesh, starts[i], dirs[i], 10.0), 1, 0),
                      wp.mesh_query_ray_count_intersections(mesh, starts[i], dirs[i]))


@pytest.mark.parametrize("constructor", ["sah", "median", "lbvh"])
def test_rays_along_box_faces(device, constructor):
    """Rays whose direction has zero components (of either sign) and whose origin lies on a face of the
    tree's boxes hit: the slab the ray lies in must constrain nothing (NVIDIA/warp's parallel-slab case,
    with -0 too)."""
    verts = np.array([[0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0]], dtype=np.float32)
    mesh = wp.Mesh(points=wp.array(verts, dtype=wp.vec3, device=device),
                   indices=wp.array([0, 1, 2, 0, 2, 3], dtype=wp.int32, device=device), bvh_constructor=constructor)
    starts = np.array([[2, 1, 1], [0, 1, 1], [1, 2, 1], [1, 0, 1], [1, 1, 1], [2, 2, 1], [0, 0, 1]], np.float32)
    rows = []
    for zero in (0.0, -0.0):
        rows += [(s, (zero, zero, -1.0)) for s in starts]
    s = wp.array(np.array([r[0] for r in rows]), dtype=wp.vec3, device=device)
    d = wp.array(np.array([r[1] for r in rows], np.float32), dtype=wp.vec3, device=device)
    out = wp.zeros(len(rows), dtype=wp.vec3i, device=device)
    wp.launch(_slab_rays, dim=len(rows), inputs=[mesh.id, s, d, out], device=device)
    got = out.numpy()
    assert got[:, :2].all(), got  # every ray hits (a corner or edge ray may cross both triangles)
    assert (got[:, 2] >= 1).all(), got


def test_bad_input():
    pts = wp.array(np.eye(3, dtype=np.float32), dtype=wp.vec3)
    with pytest.raises(RuntimeError, match="whole triangles"):
        wp.Mesh(pts, wp.array([0, 1, 2, 0], dtype=wp.int32))
    with pytest.raises(ValueError, match="outside"):
        wp.Mesh(pts, wp.array([0, 1, 3], dtype=wp.int32))
    bad = np.eye(3, dtype=np.float32)
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        wp.Mesh(wp.array(bad, dtype=wp.vec3), wp.array([0, 1, 2], dtype=wp.int32))
    with pytest.raises(RuntimeError, match="wp.int32"):
        wp.Mesh(pts, wp.array([0, 1, 2], dtype=wp.int64))
    with pytest.raises(RuntimeError, match="wp.vec3"):
        wp.Mesh(wp.zeros(3, dtype=wp.vec3d), wp.array([0, 1, 2], dtype=wp.int32))
    with pytest.raises(ValueError, match="bvh_leaf_size"):
        wp.Mesh(pts, wp.array([0, 1, 2], dtype=wp.int32), bvh_leaf_size=0)


@wp.kernel
def read_mesh(mesh: wp.uint64, points: wp.array(dtype=wp.vec3), indices: wp.array(dtype=int),
              sizes: wp.array(dtype=int)):
    t = wp.tid()
    m = wp.mesh_get(mesh)
    points[t] = m.points[t]
    for k in range(3):
        indices[3 * t + k] = m.indices[3 * t + k]
    sizes[0] = m.points.shape[0]
    sizes[1] = m.indices.shape[0]
    sizes[2] = m.velocities.shape[0]


def test_mesh_get_arrays(device):
    """wp.mesh_get(id) hands kernels the mesh's own arrays (no velocities: an empty array)."""
    V, F = icosphere(0)
    mesh = wp.Mesh(wp.array(V, dtype=wp.vec3, device=device), wp.array(F.ravel(), dtype=wp.int32, device=device))
    points = wp.zeros(len(F), dtype=wp.vec3, device=device)
    indices = wp.zeros(3 * len(F), dtype=int, device=device)
    sizes = wp.zeros(3, dtype=int, device=device)
    wp.launch(read_mesh, dim=len(V), inputs=[mesh.id, points, indices, sizes], device=device)
    np.testing.assert_array_equal(points.numpy()[:len(V)], V)
    np.testing.assert_array_equal(indices.numpy()[:3 * len(V)], F.ravel()[:3 * len(V)])
    np.testing.assert_array_equal(sizes.numpy(), [len(V), F.size, 0])


@wp.kernel
def winding_signs(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), accuracy: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.mesh_query_point_sign_winding_number(mesh, pts[i], 1.0e6, accuracy, 0.5).sign


def test_fast_winding_number_signs(device):
    """With support_winding_number the winding number comes from the tree's dipoles (far nodes) and exact
    solid angles (near leaves): the same inside/outside as the exact sum, also after moving the points."""
    V, F = bumpy(11, levels=4)  # 5120 faces: most of the tree is far from any one point
    points = wp.array(V, dtype=wp.vec3, device=device)
    mesh = wp.Mesh(points, wp.array(F.ravel(), dtype=wp.int32, device=device), support_winding_number=True)
    rng = np.random.default_rng(12)
    P = (rng.random((800, 3)) * 3.4 - 1.7).astype(np.float32)
    for scale in (1.0, 0.8):
        if scale != 1.0:
            points.assign(V * scale)
            mesh.refit()
        Vs = (V * scale).astype(np.float32)
        clear = closest_brute(P, Vs, F) > 0.02
        inside = winding_brute(P, Vs, F) > 0.5
        for accuracy in (2.0, 1.2):
            out = wp.zeros(len(P), dtype=float, device=device)
            wp.launch(winding_signs, dim=len(P), inputs=[mesh.id, wp.array(P, dtype=wp.vec3, device=device), accuracy,
                                                          out], device=device)
            np.testing.assert_array_equal((out.numpy() < 0)[clear], inside[clear], err_msg=f"accuracy {accuracy}")


def test_more_gradients_against_finite_differences():
    """Every closest-point form's barycentrics (one rule: they move with the projection of the point),
    the furthest point's (fixed at a vertex), mesh_eval_velocity into u, v and the velocities,
    mesh_get_point / mesh_get_velocity into the points and velocities."""
    V, F = bumpy(13)
    points = wp.array(V, dtype=wp.vec3, requires_grad=True)
    rng = np.random.default_rng(14)
    vel = wp.array(rng.normal(size=V.shape).astype(np.float32), dtype=wp.vec3, requires_grad=True)
    mesh = wp.Mesh(points, wp.array(F.ravel(), dtype=wp.int32), velocities=vel, support_winding_number=True)

    @wp.kernel
    def loss(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), uv: wp.array(dtype=wp.vec2), out: wp.array(dtype=float)):
        x = p[0]
        a = wp.mesh_query_point(mesh, x, 1.0e6)
        b = wp.mesh_query_point_sign_normal(mesh, x, 1.0e6)
        c = wp.mesh_query_point_sign_winding_number(mesh, x, 1.0e6)
        d = wp.mesh_query_point_sign_parity(mesh, x, 1.0e6)
        e = wp.mesh_query_furthest_point_no_sign(mesh, x, 0.0)
        w = wp.mesh_eval_velocity(mesh, 5, uv[0][0], uv[0][1])
        out[0] = (a.u + 2.0 * b.v + 3.0 * c.u - d.v + 5.0 * e.u + wp.dot(w, wp.vec3(0.2, 0.5, -0.3))
                  + wp.length(wp.mesh_get_point(mesh, 7)) + wp.dot(wp.mesh_get_velocity(mesh, 8), x))

    def value(pv, uvv, V_=None, vel_=None):
        if V_ is not None:
            points.assign(V_)
            mesh.refit()
        if vel_ is not None:
            vel.assign(vel_)
        out = wp.zeros(1, dtype=float, requires_grad=True)
        args = [wp.array([pv], dtype=wp.vec3, requires_grad=True), wp.array([uvv], dtype=wp.vec2, requires_grad=True)]
        tape = wp.Tape()
        with tape:
            wp.launch(loss, dim=1, inputs=[mesh.id, *args, out])
        return out, args, tape

    p0 = np.array([0.9, 0.8, -0.5], np.float32)
    uv0 = np.array([0.3, 0.45], np.float32)
    out, args, tape = value(p0, uv0)
    tape.backward(loss=out)
    gp, guv = args[0].grad.numpy()[0], args[1].grad.numpy()[0]
    g_points, g_vel = points.grad.numpy().copy(), vel.grad.numpy().copy()
    h = 1e-3
    f = lambda *a, **k: float(value(*a, **k)[0].numpy()[0])  # noqa: E731
    for j in range(3):
        e = np.eye(3, dtype=np.float32)[j] * h
        fd = (f(p0 + e, uv0) - f(p0 - e, uv0)) / (2 * h)
        assert abs(fd - gp[j]) < 3e-2 * max(1.0, abs(fd)), ("point", j, fd, gp[j])
    for j in range(2):
        e = np.eye(2, dtype=np.float32)[j] * h
        fd = (f(p0, uv0 + e) - f(p0, uv0 - e)) / (2 * h)
        assert abs(fd - guv[j]) < 1e-2 * max(1.0, abs(fd)), ("uv", j, fd, guv[j])
    Vel = vel.numpy().copy()
    for vtx in (*F[5], 8):
        for j in range(3):
            Vp, Vm = Vel.copy(), Vel.copy()
            Vp[vtx, j] += h
            Vm[vtx, j] -= h
            fd = (f(p0, uv0, vel_=Vp) - f(p0, uv0, vel_=Vm)) / (2 * h)
            assert abs(fd - g_vel[vtx, j]) < 1e-2 * max(1.0, abs(fd)), ("velocity", vtx, j, fd, g_vel[vtx, j])
    vel.assign(Vel)
    for j in range(3):  # mesh_get_point(7): index 7 of the flattened indices
        vtx = F.ravel()[7]
        Vp, Vm = V.copy(), V.copy()
        Vp[vtx, j] += h
        Vm[vtx, j] -= h
        fd = (f(p0, uv0, V_=Vp) - f(p0, uv0, V_=Vm)) / (2 * h)
        assert abs(fd - g_points[vtx, j]) < 3e-2 * max(1.0, abs(fd)), ("points", vtx, j, fd, g_points[vtx, j])
