"""closest_point_edge_edge and intersect_tri_tri (tilewarp/builtins/primitives.py,
native/geometry/primitives.h): a float64 NumPy reference for the segment query (random, parallel and
degenerate segments, float32 and float64), warp-lang on the same inputs, gradients against central
differences, the triangle test against warp-lang on random pairs and on constructed touching,
coplanar, disjoint and degenerate cases (under rigid motions too), typing errors at the user's line,
and the CUDA compile of forward and backward code.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import Arr, check_located, load_both, need_warp, run

import tilewarp as wp
from tilewarp import KernelTypeError

SRC = '''
import WP as wp


@wp.kernel
def edge_edge(p1: wp.array(dtype=wp.vec3), q1: wp.array(dtype=wp.vec3), p2: wp.array(dtype=wp.vec3),
              q2: wp.array(dtype=wp.vec3), eps: float, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.closest_point_edge_edge(p1[i], q1[i], p2[i], q2[i], eps)


@wp.kernel
def tri_tri(a: wp.array(dtype=wp.vec3, ndim=2), b: wp.array(dtype=wp.vec3, ndim=2),
            out: wp.array(dtype=wp.int32, ndim=2)):
    i = wp.tid()
    out[i, 0] = wp.intersect_tri_tri(a[i, 0], a[i, 1], a[i, 2], b[i, 0], b[i, 1], b[i, 2])
    out[i, 1] = wp.intersect_tri_tri(wp.vec3d(a[i, 0]), wp.vec3d(a[i, 1]), wp.vec3d(a[i, 2]),
                                     wp.vec3d(b[i, 0]), wp.vec3d(b[i, 1]), wp.vec3d(b[i, 2]))
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


@wp.kernel
def edge_edge64(p1: wp.array(dtype=wp.vec3d), q1: wp.array(dtype=wp.vec3d), p2: wp.array(dtype=wp.vec3d),
                q2: wp.array(dtype=wp.vec3d), eps: wp.float64, w: wp.array(dtype=wp.vec3d),
                out: wp.array(dtype=wp.vec3d), loss: wp.array(dtype=wp.float64)):
    i = wp.tid()
    r = wp.closest_point_edge_edge(p1[i], q1[i], p2[i], q2[i], eps)
    out[i] = r
    loss[i] = wp.dot(r, w[i])


@wp.kernel
def tri_tri64(a: wp.array(dtype=wp.vec3d, ndim=2), b: wp.array(dtype=wp.vec3d, ndim=2),
              out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(a[i, 0], a[i, 1], a[i, 2], b[i, 0], b[i, 1], b[i, 2])


# ---- the float64 reference ----------------------------------------------------------------------------


def _dot(x, y):
    return np.einsum("ij,ij->i", x, y)


def reference_distance(p1, q1, p2, q2, eps=1e-12):
    """The segments' distance: the least |c1(s) - c2(t)| over the interior stationary point and the
    four sides of [0, 1]^2 (on a side, the other parameter is a clamped projection)."""
    p1, q1, p2, q2 = (np.asarray(v, np.float64) for v in (p1, q1, p2, q2))
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, b, c, f = _dot(d1, d1), _dot(d2, d2), _dot(d1, d2), _dot(d1, r), _dot(d2, r)
    safe = lambda x: np.where(x > eps, x, 1.0)  # noqa: E731
    cands = []
    for s in (np.zeros_like(a), np.ones_like(a)):  # a side s = 0 / 1, t projected
        t = np.where(e > eps, np.clip((b * s + f) / safe(e), 0, 1), 0)
        cands.append((s, t))
    for t in (np.zeros_like(a), np.ones_like(a)):
        s = np.where(a > eps, np.clip((b * t - c) / safe(a), 0, 1), 0)
        cands.append((s, t))
    det = a * e - b * b
    ok = (a > eps) & (e > eps) & (det > 1e-9 * a * e)
    s = (b * f - c * e) / np.where(ok, det, 1.0)
    t = (a * f - b * c) / np.where(ok, det, 1.0)
    inside = ok & (s > 0) & (s < 1) & (t > 0) & (t < 1)
    cands.append((np.where(inside, s, 0.0), np.where(inside, t, 0.0)))
    dist = [np.linalg.norm(r + s[:, None] * d1 - t[:, None] * d2, axis=1) for s, t in cands]
    return np.min(dist, axis=0), (s, t, inside)


def _segments(rng, n, dtype):
    """Random segments, then (in slices) parallel ones, collinear ones, point-like ones."""
    p1, q1, p2, q2 = (rng.standard_normal((n, 3)) for _ in range(4))
    k = n // 8
    p2[:k] = p1[:k] + rng.standard_normal((k, 3))  # parallel: q2 - p2 a multiple of q1 - p1
    q2[:k] = p2[:k] + (q1[:k] - p1[:k]) * rng.uniform(-2, 2, (k, 1))
    p2[k:2 * k] = p1[k:2 * k] + (q1[k:2 * k] - p1[k:2 * k]) * rng.uniform(-1.5, 1.5, (k, 1))  # collinear
    q2[k:2 * k] = p1[k:2 * k] + (q1[k:2 * k] - p1[k:2 * k]) * rng.uniform(-1.5, 1.5, (k, 1))
    q1[2 * k:3 * k] = p1[2 * k:3 * k]  # first a point
    q2[3 * k:4 * k] = p2[3 * k:4 * k]  # second a point
    q1[4 * k:4 * k + 8], q2[4 * k:4 * k + 8] = p1[4 * k:4 * k + 8], p2[4 * k:4 * k + 8]  # both
    return [v.astype(dtype) for v in (p1, q1, p2, q2)]


def _run64(p1, q1, p2, q2, w=None, eps=1e-12, grad=False):
    n = len(p1)
    arrays = [wp.array(v, dtype=wp.vec3d, requires_grad=grad) for v in (p1, q1, p2, q2)]
    w = wp.array(np.zeros((n, 3)) if w is None else w, dtype=wp.vec3d)
    out = wp.zeros(n, dtype=wp.vec3d)
    loss = wp.zeros(n, dtype=wp.float64, requires_grad=grad)
    tape = wp.Tape() if grad else None
    if grad:
        with tape:
            wp.launch(edge_edge64, dim=n, inputs=[*arrays, eps, w, out, loss])
        tape.backward(grads={loss: wp.ones(n, dtype=wp.float64)})
        return out.numpy(), [a.grad.numpy() for a in arrays]
    wp.launch(edge_edge64, dim=n, inputs=[*arrays, eps, w, out, loss])
    return out.numpy(), loss.numpy()


# ---- closest_point_edge_edge ----------------------------------------------------------------------------


def _check_against_reference(pts, got, dist_tol, param_tol):
    want, (s_int, t_int, inside) = reference_distance(*pts)
    s, t, d = got[:, 0], got[:, 1], got[:, 2]
    assert np.all((s >= 0) & (s <= 1) & (t >= 0) & (t <= 1)), "weights outside [0, 1]"
    np.testing.assert_allclose(d, want, rtol=dist_tol, atol=dist_tol)
    # the weights are a minimiser (the only one unless the segments are parallel): they reproduce it
    p1, q1, p2, q2 = (np.asarray(v, np.float64) for v in pts)
    c1, c2 = p1 + s[:, None] * (q1 - p1), p2 + t[:, None] * (q2 - p2)
    np.testing.assert_allclose(np.linalg.norm(c1 - c2, axis=1), want, rtol=dist_tol, atol=dist_tol)
    # an interior minimiser of well-conditioned (non-parallel) segments is unique
    sel = inside & (np.minimum.reduce([s_int, 1 - s_int, t_int, 1 - t_int]) > 0.01)
    np.testing.assert_allclose(s[sel], s_int[sel], atol=param_tol)
    np.testing.assert_allclose(t[sel], t_int[sel], atol=param_tol)


def test_edge_edge_float64_matches_reference(rng):
    pts = _segments(rng, 4000, np.float64)
    got, _ = _run64(*pts)
    _check_against_reference(pts, got, 1e-11, 1e-8)


def test_edge_edge_float32_matches_reference_and_warp(mods, rng, device):
    pts = _segments(rng, 4000, np.float32)
    args = [*pts, 1e-6, np.zeros((len(pts[0]), 3), np.float32)]
    wrap = [a if np.isscalar(a) else _vec3(a) for a in args]
    got = run(mods[0], "edge_edge", len(pts[0]), wrap, device)[-1]
    _check_against_reference(pts, got, 2e-5, 2e-3)
    need_warp(mods)
    want = run(mods[1], "edge_edge", len(pts[0]), wrap, "cpu")[-1]
    # distances everywhere; the weights where the minimiser is unique (parallel pairs have a range of
    # minimisers, and which one a rounding of near-parallel input picks is not behaviour)
    np.testing.assert_allclose(got[:, 2], want[:, 2], rtol=2e-5, atol=2e-5)
    _, (s_int, t_int, inside) = reference_distance(*pts)
    p1, q1, p2, q2 = (v.astype(np.float64) for v in pts)
    cross = np.cross(q1 - p1, q2 - p2)
    unique = _dot(cross, cross) > 1e-4 * _dot(q1 - p1, q1 - p1) * _dot(q2 - p2, q2 - p2)
    np.testing.assert_allclose(got[unique, :2], want[unique, :2], atol=2e-4)


def _vec3(a):
    return Arr(np.asarray(a), "vec3")


@pytest.mark.parametrize("case, st", [
    # Warp's documented cases and its conventions for parallel and degenerate edges
    (((0, 0, 0), (1, 0, 0), (0.5, 1, 1), (0.5, 1, -1)), (0.5, 0.5)),
    (((0, 0, 0), (1, 0, 0), (-0.5, 1, 0), (0.5, 1, 0)), (0.0, 0.5)),  # parallel, overlapping: s = 0
    (((0, 0, 0), (1, 1, 0), (2, 2, 0), (3, 3, 0)), (1.0, 0.0)),
    (((0, 0, 0), (1, 1, 0), (-2, -2, 0), (-1, -1, 0)), (0.0, 1.0)),
    (((0, 0, 0), (0, 0, 0), (1, 1, 1), (1, 1, 1)), (0.0, 0.0)),  # two points
    (((10, 0, 0), (10, 0, 0), (0, 0, 0), (1, 0, 0)), (0.0, 1.0)),  # a point beyond the segment's end
    (((1, 0, 0), (0, 1, 0), (1, 1, 0), (1, 1, 0)), (0.5, 0.0)),
    (((0, 0, 0), (1, 0, 0), (0, -4.9e-4, 0), (1, 4.9e-4, 0)), (0.5, 0.5)),  # near parallel, crossing
])
def test_edge_edge_conventions(case, st):
    got, _ = _run64(*[np.array([c], np.float64) for c in case], eps=1e-6)
    np.testing.assert_allclose(got[0, :2], st, atol=1e-9)
    want, _ = reference_distance(*[np.array([c]) for c in case])
    np.testing.assert_allclose(got[0, 2], want[0], atol=1e-12)


@pytest.mark.parametrize("eps", [0.0, -1.0])
def test_edge_edge_point_edges_without_epsilon(eps):
    """Zero-length edges are points even when epsilon would not say so: no 0 / 0."""
    cases = [((0, 0, 0), (0, 0, 0), (1, 1, 1), (1, 1, 1)), ((1, 1, 1), (1, 1, 1), (0, 0, 0), (2, 0, 0)),
             ((0, 0, 0), (2, 0, 0), (1, 1, 1), (1, 1, 1))]
    got, _ = _run64(*[np.array(c, np.float64) for c in zip(*cases)], eps=eps)
    np.testing.assert_allclose(got, [[0, 0, np.sqrt(3)], [0, 0.5, np.sqrt(2)], [0.5, 0, np.sqrt(2)]])
    _, grads = _run64(*[np.array(c, np.float64) for c in zip(*cases)], w=np.ones((3, 3)), eps=eps, grad=True)
    assert all(np.all(np.isfinite(g)) for g in grads)


def _well_conditioned(p1, q1, p2, q2, margin=0.02):
    """Inputs inside one smooth branch: no point-like edge, not near parallel, and each weight either
    clamped or clear of the ends (random inputs are never within a finite-difference step of a
    switch of the clamped set)."""
    d1, d2 = q1 - p1, q2 - p2
    cross = np.cross(d1, d2)
    a, e = _dot(d1, d1), _dot(d2, d2)
    keep = (a > 0.1) & (e > 0.1) & (_dot(cross, cross) > 1e-2 * a * e)
    got, _ = _run64(p1, q1, p2, q2)
    for v in (got[:, 0], got[:, 1]):
        keep &= (v == 0) | (v == 1) | ((v > margin) & (v < 1 - margin))
    return keep


def test_edge_edge_gradients_match_finite_differences(rng):
    n = 600
    pts = [rng.standard_normal((n, 3)) for _ in range(4)]
    keep = _well_conditioned(*pts)
    assert keep.sum() > 150
    pts = [v[keep] for v in pts]
    m = len(pts[0])
    w = rng.standard_normal((m, 3))
    _, grads = _run64(*pts, w=w, grad=True)
    h = 1e-6
    for k in range(4):
        fd = np.zeros((m, 3))
        for axis in range(3):
            plus = [v.copy() for v in pts]
            minus = [v.copy() for v in pts]
            plus[k][:, axis] += h
            minus[k][:, axis] -= h
            fd[:, axis] = (_run64(*plus, w=w)[1] - _run64(*minus, w=w)[1]) / (2 * h)
        np.testing.assert_allclose(grads[k], fd, rtol=1e-5, atol=1e-5, err_msg=f"input {k}")


def test_edge_edge_gradients_bounded_for_parallel_and_degenerate(rng):
    """Near and exactly parallel edges, point-like edges: the distance's gradient is a unit vector
    split by the weights (|g| <= 1 per endpoint), the weights' gradients finite."""
    n = 400
    p1 = rng.standard_normal((n, 3))
    d1 = rng.standard_normal((n, 3))
    p2 = p1 + rng.standard_normal((n, 3))
    tilt = 10.0 ** rng.uniform(-9, -2, (n, 1)) * rng.standard_normal((n, 3))
    tilt[: n // 4] = 0
    d2 = d1 * rng.uniform(0.5, 2, (n, 1)) + tilt
    q1, q2 = p1 + d1, p2 + d2
    q1[-20:] = p1[-20:]
    q2[-40:-20] = p2[-40:-20]
    _, grads = _run64(p1, q1, p2, q2, w=np.tile([0.0, 0.0, 1.0], (n, 1)), grad=True)
    for g in grads:
        assert np.all(np.isfinite(g)) and np.abs(g).max() <= 1 + 1e-9
    _, grads = _run64(p1, q1, p2, q2, w=np.tile([1.0, 1.0, 0.0], (n, 1)), grad=True)
    for g in grads:
        assert np.all(np.isfinite(g))


# ---- intersect_tri_tri ----------------------------------------------------------------------------------


def test_tri_tri_matches_warp_on_random_pairs(mods, rng, device):
    m = 20000
    a = rng.standard_normal((m, 3, 3)).astype(np.float32)
    b = (rng.standard_normal((m, 3, 3)) + rng.uniform(0, 2.5, (m, 1, 3))).astype(np.float32)
    args = [Arr(a, "vec3"), Arr(b, "vec3"), Arr(np.zeros((m, 2), np.int32))]
    got = run(mods[0], "tri_tri", m, args, device)[2]
    assert 0.03 < got[:, 0].mean() < 0.5  # both outcomes well represented
    np.testing.assert_array_equal(got[:, 0], got[:, 1])
    need_warp(mods)
    want = run(mods[1], "tri_tri", m, args, "cpu")[2]
    np.testing.assert_array_equal(got, want)


T0 = [(0, 0, 0), (2, 0, 0), (0, 2, 0)]
#: (name, triangle b against T0, expected): touching counts as intersecting
CASES = [
    ("warp_doc_crossing", [(1, 1, -1), (1, 1, 1), (1, -1, 0)], 1),
    ("piercing", [(0.5, 0.5, -1), (0.5, 0.5, 1), (3, 3, 1)], 1),
    ("above", [(0.5, 0.5, 0.1), (1, 0.5, 1), (0.5, 1, 1)], 0),
    ("below_plane_crossing_outside", [(3, 3, -1), (3, 3, 1), (4, 3, 0)], 0),
    ("shared_vertex", [(0, 0, 0), (-1, 0, 1), (0, -1, 1)], 1),
    ("shared_edge_folded", [(2, 0, 0), (0, 2, 0), (1, 1, 1)], 1),
    ("edge_touches_face", [(0.5, 0.5, 0), (1, 0.5, 1), (0.5, 1, 1)], 1),
    ("coplanar_overlap", [(1, 1, 0), (3, 1, 0), (1, 3, 0)], 1),
    ("coplanar_contained", [(0.2, 0.2, 0), (0.8, 0.2, 0), (0.2, 0.8, 0)], 1),
    ("coplanar_containing", [(-1, -1, 0), (5, -1, 0), (-1, 5, 0)], 1),
    ("coplanar_disjoint", [(1.1, 1.1, 0), (3, 1.1, 0), (1.1, 3, 0)], 0),
    ("coplanar_disjoint_close", [(1.001, 1.001, 0), (3, 1.001, 0), (1.001, 3, 0)], 0),
    ("coplanar_touching_edge", [(1, 1, 0), (3, 1, 0), (1, 3, 0)][::-1], 1),
    ("coplanar_touching_vertex", [(2, 0, 0), (3, 0, 0), (3, 1, 0)], 1),
    ("coplanar_shared_edge", [(2, 0, 0), (0, 2, 0), (2, 2, 0)], 1),
    ("parallel_planes", [(0, 0, 1e-3), (2, 0, 1e-3), (0, 2, 1e-3)], 0),
    ("identical", T0, 1),
    # degenerate triangles: segments and points
    ("segment_pierces", [(0.5, 0.5, -1), (0.5, 0.5, 1), (0.5, 0.5, 1)], 1),
    ("segment_misses", [(3, 3, -1), (3, 3, 1), (3, 3, 0)], 0),
    ("segment_in_plane_crossing", [(-1, 0.5, 0), (3, 0.5, 0), (1, 0.5, 0)], 1),
    ("segment_in_plane_outside", [(-1, 3, 0), (3, 3, 0), (1, 3, 0)], 0),
    ("point_inside", [(0.5, 0.5, 0)] * 3, 1),
    ("point_on_edge", [(1, 0, 0)] * 3, 1),
    ("point_outside_in_plane", [(1.5, 1.5, 0)] * 3, 0),
    ("point_above", [(0.5, 0.5, 0.5)] * 3, 0),
]
#: degenerate against degenerate: (name, a, b, expected)
DEGENERATE = [
    ("collinear_overlap", [(0, 0, 0), (2, 0, 0), (1, 0, 0)], [(1, 0, 0), (3, 0, 0), (3, 0, 0)], 1),
    ("collinear_apart", [(0, 0, 0), (2, 0, 0), (1, 0, 0)], [(2.5, 0, 0), (3, 0, 0), (3, 0, 0)], 0),
    ("parallel_lines", [(0, 0, 0), (2, 0, 0), (1, 0, 0)], [(0, 1, 0), (2, 1, 0), (2, 1, 0)], 0),
    ("crossing_segments", [(0, 0, 0), (2, 0, 0), (2, 0, 0)], [(1, -1, 0), (1, 1, 0), (1, 1, 0)], 1),
    ("skew_segments", [(0, 0, 0), (2, 0, 0), (2, 0, 0)], [(1, -1, 0.5), (1, 1, 0.5), (1, 1, 0.5)], 0),
    ("same_point", [(1, 2, 3)] * 3, [(1, 2, 3)] * 3, 1),
    ("two_points", [(1, 2, 3)] * 3, [(1, 2, 3.5)] * 3, 0),
    ("point_on_segment", [(1, 0, 0)] * 3, [(0, 0, 0), (2, 0, 0), (2, 0, 0)], 1),
    ("point_off_segment", [(1, 0.1, 0)] * 3, [(0, 0, 0), (2, 0, 0), (2, 0, 0)], 0),
]


def _all_cases():
    out = [(name, T0, b, want) for name, b, want in CASES]
    out += [(name, b, T0, want) for name, b, want in CASES]  # symmetric
    return out + DEGENERATE + [(name, b, a, want) for name, a, b, want in DEGENERATE]


def _rigid(rng):
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    return q, rng.uniform(-10, 10, 3), 2.0 ** rng.integers(-4, 5)


def _exact_intersect(a, b) -> int:
    """Rational-arithmetic separating-axis reference: the triangles (any floats) are disjoint iff one
    of a superset of the candidate directions (crosses of every pair of edges and offsets, every
    such cross crossed with every edge, the edges, the offsets and their parts across each edge)
    separates their vertices."""
    from fractions import Fraction
    from itertools import combinations

    def sub(x, y):
        return [p - q for p, q in zip(x, y)]

    def cross(x, y):
        return [x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]]

    def dot(x, y):
        return sum(p * q for p, q in zip(x, y))

    a = [[Fraction(float(c)) for c in p] for p in a]
    b = [[Fraction(float(c)) for c in p] for p in b]
    edges = [sub(t[(k + 1) % 3], t[k]) for t in (a, b) for k in range(3)]
    offsets = [sub(q, p) for p in a for q in b]
    normals = [cross(x, y) for x, y in combinations(edges + offsets[:1], 2)]
    axes = normals + [cross(n, z) for n in normals for z in edges] + edges + offsets
    axes += [[d[i] * dot(u, u) - u[i] * dot(d, u) for i in range(3)] for u in edges for d in offsets[:1]]
    for k in axes:
        pa, pb = [dot(k, p) for p in a], [dot(k, p) for p in b]
        if min(pb) > max(pa) or min(pa) > max(pb):
            return 0
    return 1


def _tri64(a, b):
    out = wp.zeros(len(a), dtype=wp.int32)
    wp.launch(tri_tri64, dim=len(a), inputs=[wp.array(a, dtype=wp.vec3d), wp.array(b, dtype=wp.vec3d), out])
    return out.numpy()


def test_tri_tri_constructed_cases(mods, rng):
    cases = _all_cases()
    a = np.array([c[1] for c in cases], np.float64)
    b = np.array([c[2] for c in cases], np.float64)
    want = np.array([c[3] for c in cases], np.int32)
    bad = [c[0] for c, g in zip(cases, _tri64(a, b)) if g != c[3]]
    assert not bad, f"wrong answers: {bad}"
    assert [_exact_intersect(x, y) for x, y in zip(a, b)] == want.tolist()
    for _ in range(3):
        # moved rigidly (rotation, translation, power-of-2 scale): every answer, touching ones included,
        # survives the rounding of the motion, in float64 and (rounded to float32) in float32
        rot, shift, scale = _rigid(rng)
        am, bm = (a @ rot.T + shift) * scale, (b @ rot.T + shift) * scale
        bad = [c[0] for c, g in zip(cases, _tri64(am, bm)) if g != c[3]]
        assert not bad, f"wrong float64 answers after a rigid motion: {bad}"
        am, bm = am.astype(np.float32), bm.astype(np.float32)
        got = run(mods[0], "tri_tri", len(cases), [Arr(am, "vec3"), Arr(bm, "vec3"),
                                                   Arr(np.zeros((len(cases), 2), np.int32))], "cpu")[2]
        bad = [c[0] for c, g in zip(cases, got[:, 0]) if g != c[3]]
        assert not bad, f"wrong float32 answers after a rigid motion: {bad}"
        # in float64, the float32-rounded coplanar and touching cases are what they now are exactly
        # (often barely apart): the float64 form answers as rational arithmetic does
        exact = [_exact_intersect(x, y) for x, y in zip(am, bm)]
        assert got[:, 1].tolist() == exact


def test_tri_tri_float64_is_exact_on_random_pairs(rng):
    m = 300
    a = rng.standard_normal((m, 3, 3))
    b = rng.standard_normal((m, 3, 3)) + rng.uniform(0, 2, (m, 1, 3))
    b[: m // 3, :, 2] = a[: m // 3, :1, 2]  # a third coplanar (z = const) pairs
    a[: m // 3, :, 2] = a[: m // 3, :1, 2]
    got = _tri64(a, b)
    assert got.tolist() == [_exact_intersect(x, y) for x, y in zip(a, b)]
    assert 0.1 < got.mean() < 0.9


def test_tri_tri_agrees_with_warp_on_constructed_cases(mods):
    """Warp on the non-degenerate cases (its Moller test does not claim degenerate triangles)."""
    need_warp(mods)
    cases = [(name, T0, b, want) for name, b, want in CASES if not name.startswith(("segment", "point"))]
    a = np.array([c[1] for c in cases], np.float32)
    b = np.array([c[2] for c in cases], np.float32)
    args = [Arr(a, "vec3"), Arr(b, "vec3"), Arr(np.zeros((len(cases), 2), np.int32))]
    got = run(mods[0], "tri_tri", len(cases), args, "cpu")[2]
    want = run(mods[1], "tri_tri", len(cases), args, "cpu")[2]
    differ = [c[0] for c, g, w in zip(cases, got, want) if tuple(g) != tuple(w)]
    assert not differ, f"tilewarp and Warp disagree on {differ}"


def test_tri_tri_non_finite_input_is_disjoint():
    a = np.array([T0, T0], np.float64)
    b = np.array([[(np.nan, 0, 0), (1, 1, 0), (0, 1, 0)], [(np.inf, 0, 0), (1, 1, 0), (0, 1, 0)]])
    out = wp.zeros(2, dtype=wp.int32)
    wp.launch(tri_tri64, dim=2, inputs=[wp.array(a, dtype=wp.vec3d), wp.array(b, dtype=wp.vec3d), out])
    assert out.numpy().tolist() == [0, 0]


# ---- typing errors at the user's line ---------------------------------------------------------------------


@wp.kernel
def k_edge_mixed():
    r = wp.closest_point_edge_edge(wp.vec3(), wp.vec3(), wp.vec3d(), wp.vec3(), 1e-6)  # <- error


@wp.kernel
def k_edge_int():
    r = wp.closest_point_edge_edge(wp.vec3i(), wp.vec3i(), wp.vec3i(), wp.vec3i(), 0)  # <- error


@wp.kernel
def k_tri_vec2():
    r = wp.intersect_tri_tri(wp.vec2(), wp.vec2(), wp.vec2(), wp.vec2(), wp.vec2(), wp.vec2())  # <- error


@wp.kernel
def k_tri_count():
    r = wp.intersect_tri_tri(wp.vec3(), wp.vec3(), wp.vec3(), wp.vec3(), wp.vec3())  # <- error


@pytest.mark.parametrize("kernel, fragment", [
    (k_edge_mixed, "closest_point_edge_edge(): expects (p1: vec3, q1: vec3, p2: vec3, q2: vec3, epsilon: "
                   "float)"),
    (k_edge_int, "got (vec3i, vec3i, vec3i, vec3i, int32)"),
    (k_tri_vec2, "intersect_tri_tri(): expects six vertices"),
    (k_tri_count, "intersect_tri_tri(): expects six vertices"),
], ids=lambda v: getattr(v, "key", None) or getattr(v, "__name__", "msg"))
def test_bad_input(kernel, fragment):
    check_located(kernel, KernelTypeError, fragment)


def test_keywords():
    @wp.kernel
    def kw(out: wp.array(dtype=wp.vec3), hit: wp.array(dtype=wp.int32)):
        out[0] = wp.closest_point_edge_edge(epsilon=1e-6, p1=wp.vec3(0.0), q1=wp.vec3(1.0, 0.0, 0.0),
                                            p2=wp.vec3(0.5, 1.0, 1.0), q2=wp.vec3(0.5, 1.0, -1.0))
        hit[0] = wp.intersect_tri_tri(wp.vec3(0.0), wp.vec3(2.0, 0.0, 0.0), wp.vec3(0.0, 2.0, 0.0),
                                      u0=wp.vec3(1.0, 1.0, -1.0), u1=wp.vec3(1.0, 1.0, 1.0),
                                      u2=wp.vec3(1.0, -1.0, 0.0))

    out, hit = wp.zeros(1, dtype=wp.vec3), wp.zeros(1, dtype=wp.int32)
    wp.launch(kw, dim=1, inputs=[out, hit])
    np.testing.assert_allclose(out.numpy()[0], [0.5, 0.5, 1.0])
    assert hit.numpy()[0] == 1
