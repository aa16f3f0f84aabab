"""Triangle adjacency and Delaunay edge flips (wp.geometry.tri_tri_adjacency,
find_triangle_neighbor_edge_index, delaunay_edge_flip): adjacency against a NumPy edge map and
warp-lang, flips to the empty-circle property (NumPy in-circle determinants) with the area, the
vertices and a non-convex boundary kept, the same triangulation as warp-lang, the pass budget, the
reference-configuration guard, CPU graph capture and replay, determinism, and bad input."""
import numpy as np
import pytest

import conftest
import tilewarp as wp
import tilewarp.geometry as geo
from tilewarp.geometry import delaunay


def _area2(p, t):
    a, b, c = p[t[:, 0]], p[t[:, 1]], p[t[:, 2]]
    return (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])


def _in_circle(a, b, c, d):
    m = np.array([[*(x - d), (x - d) @ (x - d)] for x in (a, b, c)], np.float64)
    return np.linalg.det(m)


def _edge_map(tris):
    out = {}
    for t, tri in enumerate(tris):
        for j in range(3):
            a, b = int(tri[(j + 1) % 3]), int(tri[(j + 2) % 3])
            out.setdefault((min(a, b), max(a, b)), []).append((t, j))
    return out


def _grid(nx, ny, jitter=0.0, seed=0, shear=0.0):
    xs, ys = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), indexing="ij")
    p = np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float64)
    inner = (xs.ravel() > 0) & (xs.ravel() < nx) & (ys.ravel() > 0) & (ys.ravel() < ny)
    p[inner] += np.random.default_rng(seed).uniform(-jitter, jitter, (inner.sum(), 2))
    p[:, 1] += shear * p[:, 0]
    v = lambda i, j: i * (ny + 1) + j  # noqa: E731
    tris = [t for i in range(nx) for j in range(ny)
            for t in ([v(i, j), v(i + 1, j), v(i + 1, j + 1)], [v(i, j), v(i + 1, j + 1), v(i, j + 1)])]
    return p.astype(np.float32), np.array(tris, np.int32)


def _fan(n, seed=0):
    angles = np.sort(np.random.default_rng(seed).uniform(0, 2 * np.pi, n))
    p = np.stack([2 * np.cos(angles), np.sin(angles)], 1).astype(np.float32)
    return p, np.array([[0, i, i + 1] for i in range(1, n - 1)], np.int32)


def _star(k=7):
    ring = [(1.0 if i % 2 == 0 else 0.45) * np.array([np.cos(np.pi * i / k), np.sin(np.pi * i / k)])
            for i in range(2 * k)]
    p = np.concatenate([[[0.0, 0.0]], ring]).astype(np.float32)
    return p, np.array([[0, 1 + i, 1 + (i + 1) % (2 * k)] for i in range(2 * k)], np.int32)


def _assert_delaunay(p, tris):
    p64 = p.astype(np.float64)
    for (a, b), inc in _edge_map(tris).items():
        if len(inc) == 2:
            (t0, _), (t1, j1) = inc
            assert _in_circle(*p64[tris[t0]], p64[tris[t1][j1]]) <= 1e-9, (a, b)


def _assert_valid(p, tris, before):
    assert (_area2(p.astype(np.float64), tris) > 0).all(), "an inverted or degenerate triangle"
    assert all(len(v) <= 2 for v in _edge_map(tris).values()), "a non-manifold edge"
    np.testing.assert_allclose(_area2(p.astype(np.float64), tris).sum(), _area2(p.astype(np.float64), before).sum(),
                               rtol=1e-6)
    boundary = lambda t: {e for e, v in _edge_map(t).items() if len(v) == 1}  # noqa: E731
    assert boundary(tris) == boundary(before)


def _flip(p, tris, device, **kw):
    positions = wp.array(p, dtype=wp.vec2, device=device)
    indices = wp.array(tris, dtype=wp.int32, device=device)
    count = geo.delaunay_edge_flip(positions, indices, **kw)
    assert count.shape == (1,) and count.dtype == wp.int32 and count.device == indices.device
    return int(count.numpy()[0]), indices.numpy()


def _canonical(tris):
    """Each triangle rotated to start at its lowest vertex (orientation kept), rows sorted."""
    r = np.argmin(tris, axis=1)
    rolled = np.stack([tris[np.arange(len(tris)), (r + k) % 3] for k in range(3)], 1)
    return rolled[np.lexsort(rolled.T[::-1])]


# ---- predicates and adjacency -----------------------------------------------------------------------


def test_predicates(device):
    @wp.kernel
    def evaluate(p: wp.array(dtype=wp.vec2), area: wp.array(dtype=float), inside: wp.array(dtype=wp.int32)):
        i = wp.tid()
        area[i] = delaunay.signed_area(p[4 * i], p[4 * i + 1], p[4 * i + 2])
        inside[i] = wp.int32(delaunay.in_circle(p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3]))

    rng = np.random.default_rng(2)
    quads = rng.uniform(-1, 1, (200, 4, 2)).astype(np.float32)
    area = wp.zeros(200, dtype=float, device=device)
    inside = wp.zeros(200, dtype=wp.int32, device=device)
    wp.launch(evaluate, dim=200, inputs=[wp.array(quads.reshape(-1, 2), dtype=wp.vec2, device=device), area, inside],
              device=device)
    q = quads.astype(np.float64)
    np.testing.assert_allclose(area.numpy(), 0.5 * _area2(q.reshape(-1, 2), np.arange(800).reshape(-1, 4)[:, :3]),
                               atol=1e-6)
    det = np.array([_in_circle(*x) * np.sign(_area2(x, np.array([[0, 1, 2]]))[0]) for x in q])
    clear = np.abs(det) > 1e-4
    ccw = _area2(q.reshape(-1, 2), np.arange(800).reshape(-1, 4)[:, :3]) > 0
    np.testing.assert_array_equal(inside.numpy()[clear & ccw], (det > 0)[clear & ccw])


def test_adjacency_against_edge_map(device):
    p, tris = _grid(5, 4, jitter=0.2, seed=11)
    tris = tris[np.random.default_rng(0).permutation(len(tris))]
    nbr, edges = geo.tri_tri_adjacency(wp.array(tris, dtype=wp.int32, device=device))
    nbr, edges = nbr.numpy(), edges.numpy()
    want = np.full_like(nbr, -1)
    for inc in _edge_map(tris).values():
        if len(inc) == 2:
            (t0, j0), (t1, j1) = inc
            want[t0, j0], want[t1, j1] = t1, t0
    np.testing.assert_array_equal(nbr, want)
    interior = nbr >= 0
    t, j = np.nonzero(interior)
    np.testing.assert_array_equal(nbr[nbr[t, j], edges[t, j]], t)
    np.testing.assert_array_equal(edges[nbr[t, j], edges[t, j]], j)
    assert (edges[~interior] == -1).all()
    only = geo.tri_tri_adjacency(wp.array(tris, dtype=wp.int32, device=device), vertex_count=len(p),
                                 return_neighbor_edge_indices=False)
    np.testing.assert_array_equal(only.numpy(), nbr)

    @wp.kernel
    def back(nbr: wp.array2d(dtype=wp.int32), out: wp.array2d(dtype=wp.int32)):
        t, j = wp.tid()
        n = nbr[t, j]
        out[t, j] = wp.where(n >= 0, geo.find_triangle_neighbor_edge_index(nbr, n, t), -1)

    out = wp.zeros(nbr.shape, dtype=wp.int32, device=device)
    wp.launch(back, dim=nbr.shape, inputs=[wp.array(nbr, dtype=wp.int32, device=device), out], device=device)
    np.testing.assert_array_equal(out.numpy(), edges)


def test_adjacency_matches_warp(device):
    W = conftest.warp
    if W is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    import warp.geometry as wgeo

    _, tris = _grid(6, 5, jitter=0.3, seed=4)
    tris = np.ascontiguousarray(tris[:, ::-1])  # orientation does not matter
    got = geo.tri_tri_adjacency(wp.array(tris, dtype=wp.int32, device=device))
    want = wgeo.tri_tri_adjacency(W.array(tris, dtype=W.int32, device="cpu"))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


# ---- flips ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mesh", ["grid", "sheared", "fan", "large"])
def test_flip_to_delaunay(device, mesh):
    p, tris = {"grid": lambda: _grid(6, 5, jitter=0.3, seed=1234), "sheared": lambda: _grid(30, 30, shear=0.1),
               "fan": lambda: _fan(40, seed=3), "large": lambda: _grid(40, 40, jitter=0.25, seed=99)}[mesh]()
    count, out = _flip(p, tris, device, max_passes=6 if mesh == "sheared" else 1000)
    assert count > 0
    _assert_valid(p, out, tris)
    _assert_delaunay(p, out)
    assert _flip(p, out, device)[0] == 0  # a fixed point


def test_star_polygon_keeps_its_boundary(device):
    p, tris = _star()
    count, out = _flip(p, tris, device)
    assert count > 0
    _assert_valid(p, out, tris)
    assert _flip(p, out, device)[0] == 0


def test_already_delaunay_and_empty(device):
    p, tris = _grid(4, 4)  # cocircular quads: never flipped
    count, out = _flip(p, tris, device)
    assert count == 0
    np.testing.assert_array_equal(out, tris)
    count, out = _flip(np.zeros((0, 2), np.float32), np.zeros((0, 3), np.int32), device)
    assert count == 0 and out.shape == (0, 3)


def test_reference_guard_and_area_epsilon(device):
    p = np.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, -1.0]], np.float32)
    tris = np.array([[0, 1, 2], [1, 0, 3]], np.int32)
    assert _flip(p, tris, device)[0] == 1
    ref = wp.array(np.array([[-3, 0], [3, 0], [0, 0], [0, 0]], np.float32), dtype=wp.vec2, device=device)
    count, out = _flip(p, tris, device, ref_positions=ref)
    assert count == 0 and (out == tris).all()
    count, out = _flip(p, tris, device, area_epsilon=3.5)  # the flipped triangles' areas are 3
    assert count == 0 and (out == tris).all()
    count, out = _flip(p, tris, device, area_epsilon=2.5)
    assert count == 1 and {tuple(sorted(t)) for t in out} == {(0, 2, 3), (1, 2, 3)}


def test_pass_budget(device):
    p, tris = _fan(40, seed=3)  # neighbouring fan edges share triangles: one pass cannot flip them all
    one, out = _flip(p, tris, device, max_passes=1)
    full, _ = _flip(p, tris, device)
    assert 0 < one < full
    _assert_valid(p, out, tris)


def test_same_triangulation_as_warp(device):
    W = conftest.warp
    if W is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    import warp.geometry as wgeo

    for p, tris in (_grid(9, 7, jitter=0.3, seed=5), _fan(30, seed=1)):
        _, out = _flip(p, tris, device)
        theirs = W.array(tris, dtype=W.int32, device="cpu")
        wgeo.delaunay_edge_flip(W.array(p, dtype=W.vec2, device="cpu"), theirs)
        np.testing.assert_array_equal(_canonical(out), _canonical(theirs.numpy()))


def test_deterministic(device):
    p, tris = _grid(20, 20, jitter=0.3, seed=6)
    first = _flip(p, tris, device)
    for _ in range(2):
        again = _flip(p, tris, device)
        assert again[0] == first[0]
        np.testing.assert_array_equal(again[1], first[1])


def test_cpu_graph_capture_replays_the_flips():
    p, tris = _grid(7, 6, jitter=0.3, seed=7)
    count, expected = _flip(p, tris, "cpu")
    positions = wp.array(p, dtype=wp.vec2, device="cpu")
    indices = wp.array(tris, dtype=wp.int32, device="cpu")
    with wp.ScopedDevice("cpu"):
        with pytest.raises(RuntimeError, match="vertex_count"):
            with wp.ScopedCapture():
                geo.tri_tri_adjacency(indices)
        with wp.ScopedCapture() as capture:
            total = geo.delaunay_edge_flip(positions, indices)
    np.testing.assert_array_equal(indices.numpy(), tris)  # recorded, not run
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(indices.numpy(), expected)
    assert int(total.numpy()[0]) == count
    wp.capture_launch(capture.graph)  # now Delaunay: nothing to flip
    np.testing.assert_array_equal(indices.numpy(), expected)
    assert int(total.numpy()[0]) == 0


# ---- bad input --------------------------------------------------------------------------------------


def test_bad_input(device):
    p, tris = _grid(3, 3, jitter=0.3, seed=5)
    positions = wp.array(p, dtype=wp.vec2, device=device)
    indices = wp.array(tris, dtype=wp.int32, device=device)
    flip = geo.delaunay_edge_flip
    for passes in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_passes"):
            flip(positions, indices, max_passes=passes)
    for eps in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="area_epsilon"):
            flip(positions, indices, area_epsilon=eps)
        with pytest.raises(ValueError, match="ref_area_epsilon"):
            flip(positions, indices, ref_area_epsilon=eps)
    with pytest.raises(ValueError, match="indices"):
        flip(positions, wp.zeros(4, dtype=wp.int32, device=device))
    with pytest.raises(ValueError, match="indices"):
        flip(positions, wp.zeros((2, 3), dtype=wp.int64, device=device))
    with pytest.raises(TypeError, match="indices"):
        flip(positions, tris)
    with pytest.raises(ValueError, match="positions"):
        flip(wp.array(np.zeros((16, 3), np.float32), dtype=wp.vec3, device=device), indices)
    with pytest.raises(ValueError, match="ref_positions"):
        flip(positions, indices, ref_positions=wp.zeros(3, dtype=wp.vec2, device=device))
    bad = tris.copy()
    bad[0, 0] = len(p)
    with pytest.raises(ValueError, match="indices"):
        flip(positions, wp.array(bad, dtype=wp.int32, device=device))
    np.testing.assert_array_equal(indices.numpy(), tris)  # rejected calls leave it alone
    with pytest.raises(ValueError, match="indices"):
        geo.tri_tri_adjacency(wp.zeros(4, dtype=wp.int32, device=device))
    bad[0, 0] = -2
    with pytest.raises(ValueError, match="negative"):
        geo.tri_tri_adjacency(wp.array(bad, dtype=wp.int32, device=device))
