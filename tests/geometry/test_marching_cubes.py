"""Marching cubes (wp.MarchingCubes / wp.geometry.IsoSurfaceMarchingCubes and the sparse extractors):
the generated case tables, closed and consistently oriented surfaces (also on random fields full of
ambiguous faces), the enclosed volume of a sphere, thresholds and bounds, gradients through the tape,
agreement with warp-lang (same vertices in the same order, same polygons in every cell), sparse vs
dense extraction, determinism, and bad input."""
import numpy as np
import pytest

import conftest
import tilewarp as wp
import tilewarp.geometry  # noqa: F401

MC = wp.geometry.IsoSurfaceMarchingCubes


def _sphere_field(n, center, radius, spacing=1.0):
    x = np.arange(n, dtype=np.float64) * spacing
    g = np.stack(np.meshgrid(x, x, x, indexing="ij"), -1)
    return (np.linalg.norm(g - np.asarray(center), axis=-1) - radius).astype(np.float32)


def _extract(field_np, device, threshold=0.0, **bounds):
    field = wp.array(field_np, dtype=wp.float32, device=device)
    verts, indices = MC.extract(field, threshold, **bounds)
    return verts.numpy().astype(np.float64), indices.numpy().reshape(-1, 3)


def _edge_counts(tris):
    """(undirected edge -> uses, directed edge -> uses)."""
    directed = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    _, d = np.unique(directed, axis=0, return_counts=True)
    _, u = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    return u, d


def _assert_closed(verts, tris):
    """Every edge in exactly two triangles, traversed once each way (a closed, oriented surface)."""
    assert len(tris) > 0
    assert (tris[:, 0] != tris[:, 1]).all() and (tris[:, 1] != tris[:, 2]).all() and (tris[:, 0] != tris[:, 2]).all()
    assert (np.unique(tris) == np.arange(len(verts))).all(), "an unused or missing vertex"
    undirected, directed = _edge_counts(tris)
    assert (undirected == 2).all(), "a boundary or non-manifold edge"
    assert (directed == 1).all(), "inconsistently oriented neighbours"


def _volume(verts, tris):
    p0, p1, p2 = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    return np.einsum("ij,ij->i", p0, np.cross(p1, p2)).sum() / 6.0


def _area(verts, tris):
    p0, p1, p2 = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    return 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1).sum()


# ---- the tables -------------------------------------------------------------------------------------


def test_tables_shape_and_conventions():
    assert MC.CUBE_CORNER_OFFSETS[:2] == ((0, 0, 0), (1, 0, 0)) and len(MC.CUBE_CORNER_OFFSETS) == 8
    assert MC.EDGE_TO_CORNERS[0] == (0, 1) and len(MC.EDGE_TO_CORNERS) == 12
    for a, b in MC.EDGE_TO_CORNERS:  # unit edges, lower corner first
        d = np.subtract(MC.CUBE_CORNER_OFFSETS[b], MC.CUBE_CORNER_OFFSETS[a])
        assert sorted(d.tolist()) == [0, 0, 1]
    ranges, tris = MC.CASE_TO_TRI_RANGE, MC.TRI_LOCAL_INDICES
    assert len(ranges) == 257 and ranges[0] == ranges[1] == 0 and ranges[255] == ranges[256] == len(tris)
    assert len(tris) == 2460 and all(0 <= e < 12 for e in tris)
    assert all(a <= b and (b - a) % 3 == 0 for a, b in zip(ranges, ranges[1:]))
    for code in range(256):  # a case's triangles only use the edges it crosses
        inside = [(code >> c) & 1 for c in range(8)]
        crossed = {k for k, (a, b) in enumerate(MC.EDGE_TO_CORNERS) if inside[a] != inside[b]}
        assert set(tris[ranges[code]:ranges[code + 1]]) == crossed


def test_random_sign_fields_are_closed(device):
    """Random +-1 corners hit every case and every ambiguous face; with an outside border the surface
    must still close, each edge shared by two triangles with opposite orientations."""
    rng = np.random.default_rng(3)
    for trial in range(3):
        core = rng.choice([-1.0, 1.0], size=(9, 8, 10)).astype(np.float32)
        field = np.ones((11, 10, 12), dtype=np.float32)
        field[1:-1, 1:-1, 1:-1] = core
        verts, tris = _extract(field, device)
        _assert_closed(verts, tris)
        assert _volume(verts, tris) > 0.0  # counter-clockwise seen from outside: positive volume
        # every vertex is the midpoint of a grid edge (values +-1, threshold 0)
        frac = np.sort(np.modf(verts)[0], axis=1)
        np.testing.assert_allclose(frac[:, :2], 0.0, atol=1e-6)
        np.testing.assert_allclose(frac[:, 2], 0.5, atol=1e-6)


# ---- surfaces -----------------------------------------------------------------------------------------


def test_sphere_closed_volume_area(device):
    n, r, c = 40, 13.0, (19.3, 20.1, 18.7)
    verts, tris = _extract(_sphere_field(n, c, r), device)
    _assert_closed(verts, tris)
    undirected, _ = _edge_counts(tris)
    assert len(verts) - len(undirected) + len(tris) == 2  # a sphere's Euler characteristic
    dist = np.linalg.norm(verts - c, axis=1)
    assert np.abs(dist - r).max() < 0.05
    np.testing.assert_allclose(_volume(verts, tris), 4.0 / 3.0 * np.pi * r**3, rtol=1e-2)
    np.testing.assert_allclose(_area(verts, tris), 4.0 * np.pi * r**2, rtol=2e-2)


def test_torus_genus_one(device):
    n = 48
    x = np.linspace(-1.2, 1.2, n)
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    field = (np.sqrt((np.sqrt(X**2 + Z**2) - 0.7) ** 2 + Y**2) - 0.25).astype(np.float32)
    verts, tris = _extract(field, device, lower=(-1.2, -1.2, -1.2), upper=(1.2, 1.2, 1.2))
    _assert_closed(verts, tris)
    undirected, _ = _edge_counts(tris)
    assert len(verts) - len(undirected) + len(tris) == 0
    np.testing.assert_allclose(_volume(verts, tris), 2 * np.pi**2 * 0.7 * 0.25**2, rtol=2e-2)


@pytest.mark.parametrize("threshold", [-2.0, 0.0, 3.5])
def test_threshold_offsets_the_level_set(device, threshold):
    n, r, c = 32, 9.0, (15.5, 15.5, 15.5)
    verts, tris = _extract(_sphere_field(n, c, r), device, threshold=threshold)
    _assert_closed(verts, tris)
    assert np.abs(np.linalg.norm(verts - c, axis=1) - (r + threshold)).max() < 0.05


def test_bounds_map_nodes(device):
    """``lower``/``upper`` place nodes (0,0,0) and (nx-1,ny-1,nz-1): the same mesh, scaled and moved."""
    field = _sphere_field(20, (9.5, 9.2, 10.1), 6.0)[:, :17, :]
    base, tris = _extract(field, device)
    lower, upper = (-1.0, 2.0, 0.5), (3.0, 4.0, 1.5)
    moved, tris2 = _extract(field, device, lower=lower, upper=upper)
    np.testing.assert_array_equal(tris, tris2)
    scale = (np.array(upper) - lower) / (np.array(field.shape) - 1)
    np.testing.assert_allclose(moved, lower + base * scale, rtol=1e-5, atol=1e-5)


def test_empty_and_minimal_fields(device):
    verts, tris = _extract(np.ones((5, 6, 7), np.float32), device)
    assert verts.shape == (0, 3) and tris.shape == (0, 3)
    one = np.ones((2, 2, 2), np.float32)
    one[0, 0, 0] = -1.0  # a single inside corner: one triangle
    verts, tris = _extract(one, device)
    assert len(verts) == 3 and len(tris) == 1
    np.testing.assert_allclose(np.sort(verts.sum(axis=1)), [0.5, 0.5, 0.5])


def test_stateful_interface_and_legacy_names(device):
    field = wp.array(_sphere_field(16, (7.5, 7.5, 7.5), 5.0), dtype=wp.float32, device=device)
    mc = wp.MarchingCubes(16, 16, 16)
    assert isinstance(mc, MC) and isinstance(mc, wp.geometry.IsoSurfaceBase)
    mc.surface(field, 0.0)
    v, i = MC.extract(field, 0.0)
    np.testing.assert_array_equal(mc.verts.numpy(), v.numpy())
    np.testing.assert_array_equal(mc.indices.numpy(), i.numpy())
    assert mc.indices.dtype == wp.int32 and mc.verts.dtype == wp.vec3
    with pytest.warns(DeprecationWarning):
        legacy = MC(8, 8, 8, domain_bounds_lower_corner=(1.0, 2.0, 3.0))
    assert legacy.lower == (1.0, 2.0, 3.0)
    with pytest.raises(TypeError, match="Cannot specify both `upper`"):
        MC(8, 8, 8, upper=(1.0, 1.0, 1.0), domain_bounds_upper_corner=(2.0, 2.0, 2.0))
    mc.resize(8, 8, 8)
    with pytest.raises(ValueError, match=r"does not match context grid dimensions \(8, 8, 8\)"):
        mc.surface(field, 0.0)
    with pytest.raises(TypeError):
        wp.geometry.IsoSurfaceBase(8, 8, 8)


def test_non_contiguous_field(device):
    big = _sphere_field(24, (11.0, 11.5, 10.5), 7.0)
    full = wp.array(big, dtype=wp.float32, device=device)
    view = full[::2, :, 1:]
    assert not view.is_contiguous
    v1, i1 = MC.extract(view, 0.0)
    v2, i2 = _extract(np.ascontiguousarray(big[::2, :, 1:]), device)
    np.testing.assert_array_equal(v1.numpy(), v2.astype(np.float32))
    np.testing.assert_array_equal(i1.numpy().reshape(-1, 3), i2)


def test_deterministic(device):
    rng = np.random.default_rng(5)
    field = rng.standard_normal((20, 21, 22)).astype(np.float32)
    a = _extract(field, device)
    b = _extract(field, device)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


# ---- gradients ------------------------------------------------------------------------------------------


@wp.kernel
def _sphere_sdf(field: wp.array3d(dtype=float), h: float, radius: wp.array(dtype=float)):
    i, j, k = wp.tid()
    p = wp.vec3(float(i), float(j), float(k)) * h - wp.vec3(1.0, 1.0, 1.0)
    field[i, j, k] = wp.length(p) - radius[0]


@wp.kernel
def _area_kernel(verts: wp.array(dtype=wp.vec3), faces: wp.array(dtype=int), area: wp.array(dtype=float)):
    t = wp.tid()
    p0, p1, p2 = verts[faces[3 * t]], verts[faces[3 * t + 1]], verts[faces[3 * t + 2]]
    wp.atomic_add(area, 0, 0.5 * wp.length(wp.cross(p1 - p0, p2 - p0)))


def test_area_gradient_through_tape(device):
    """d(area)/d(radius) of a sphere's mesh is 8 pi r: gradients reach the field through the vertices."""
    n, r = 48, 0.5
    radius = wp.array([r], dtype=float, device=device, requires_grad=True)
    field = wp.zeros((n, n, n), dtype=float, device=device, requires_grad=True)
    area = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(_sphere_sdf, dim=field.shape, inputs=[field, 2.0 / (n - 1), radius], device=device)
        verts, faces = MC.extract(field, 0.0, lower=(-1.0, -1.0, -1.0), upper=(1.0, 1.0, 1.0))
        wp.launch(_area_kernel, dim=faces.shape[0] // 3, inputs=[verts, faces, area], device=device)
    np.testing.assert_allclose(area.numpy()[0], 4 * np.pi * r * r, rtol=1e-2)
    tape.backward(area)
    np.testing.assert_allclose(radius.grad.numpy()[0], 8 * np.pi * r, rtol=1e-2)


# ---- warp-lang ------------------------------------------------------------------------------------------


def _cell_outlines(field, tris, threshold=0.0):
    """cell -> the directed outline of its triangles (the polygons, whatever their triangulation)."""
    inside = field < threshold
    crossed = np.zeros(field.shape + (3,), bool)
    crossed[:-1, :, :, 0] = inside[:-1] != inside[1:]
    crossed[:, :-1, :, 1] = inside[:, :-1] != inside[:, 1:]
    crossed[:, :, :-1, 2] = inside[:, :, :-1] != inside[:, :, 1:]
    edges = np.argwhere(crossed)  # (i, j, k, axis), in vertex order

    def cells(v):
        i, j, k, axis = edges[v]
        out = set()
        for d1 in (0, 1):
            for d2 in (0, 1):
                c = [i, j, k]
                c[(axis + 1) % 3] -= d1
                c[(axis + 2) % 3] -= d2
                out.add(tuple(c))
        return out

    outlines = {}
    for t in tris:
        (cell,) = cells(t[0]) & cells(t[1]) & cells(t[2])
        outlines.setdefault(cell, []).extend([(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
    result = {}
    for cell, directed in outlines.items():
        s = set(directed)
        result[cell] = frozenset(e for e in s if (e[1], e[0]) not in s)
    return result


@pytest.mark.parametrize("shape", ["sphere", "blobs", "noise"])
def test_matches_warp(shape):
    """The same vertices in the same order as warp-lang, the same triangle count, and in every cell
    the same polygons (outline and orientation; the triangulation of a polygon may differ): on noise,
    every case and every ambiguous face is resolved as Warp resolves it."""
    W = conftest.warp
    if W is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    import warp.geometry  # noqa: F401

    n = 30
    if shape == "sphere":
        field = _sphere_field(n, (14.2, 15.1, 13.7), 9.3)
    elif shape == "noise":
        field = np.random.default_rng(0).standard_normal((n, n - 1, n + 1)).astype(np.float32)
    else:
        x = np.linspace(0, 4 * np.pi, n)
        X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
        field = (np.sin(X) * np.cos(Y) + np.sin(Y) * np.cos(Z) + np.sin(Z) * np.cos(X)).astype(np.float32)
    verts, tris = _extract(field, "cpu", threshold=0.1, lower=(-1.0, 0.0, 2.0), upper=(1.0, 3.0, 4.0))
    wv, wi = W.geometry.IsoSurfaceMarchingCubes.extract(W.array(field, dtype=W.float32, device="cpu"), 0.1,
                                                         lower=(-1.0, 0.0, 2.0), upper=(1.0, 3.0, 4.0))
    wv, wi = wv.numpy(), wi.numpy().reshape(-1, 3)
    np.testing.assert_allclose(verts, wv, rtol=1e-5, atol=1e-5)
    assert len(tris) == len(wi)
    assert _cell_outlines(field, tris, 0.1) == _cell_outlines(field, wi, 0.1)


# ---- sparse extraction ----------------------------------------------------------------------------------


@wp.kernel
def _torus_batch(points: wp.array(dtype=wp.vec3), values: wp.array(dtype=float)):
    i = wp.tid()
    p = points[i]
    q = wp.vec2(wp.length(wp.vec2(p[0], p[2])) - 0.5, p[1])
    values[i] = wp.length(q) - 0.2


def _torus(points):
    values = wp.empty(points.shape[0], dtype=float, device=points.device)
    wp.launch(_torus_batch, dim=points.shape[0], inputs=[points, values], device=points.device)
    return values


def test_sparse_matches_dense(device):
    """The Lipschitz-octree extraction gives the dense grid's surface: same vertices and triangles."""
    n = 33
    verts, tris, stats = wp.geometry.sparse_marching_cubes(_torus, n, n, n, lower=(-1.0, -1.0, -1.0),
                                                           upper=(1.0, 1.0, 1.0), device=device, return_stats=True)
    x = np.linspace(-1.0, 1.0, n).astype(np.float32)
    pts = wp.array(np.stack(np.meshgrid(x, x, x, indexing="ij"), -1).reshape(-1, 3), dtype=wp.vec3, device=device)
    field = _torus(pts).numpy().reshape(n, n, n)
    dv, dt = _extract(field, device, lower=(-1.0, -1.0, -1.0), upper=(1.0, 1.0, 1.0))
    sv, st = verts.numpy(), tris.numpy().reshape(-1, 3)
    assert len(sv) == len(dv) and len(st) == len(dt)
    key = lambda v: np.lexsort(np.round(v, 4).T)  # noqa: E731
    np.testing.assert_allclose(sv[key(sv)], dv[key(dv)], atol=1e-4)
    _assert_closed(sv, st)
    assert stats["field_evaluations"] < n**3 // 2 and stats["leaf_cells"] > 0


def test_sparse_from_cells(device):
    """Explicit cells (any order, negative subscripts) with per-cell corner values: vertices shared
    across cells, gradients to the corner values through one source per shared corner."""
    rng = np.random.default_rng(2)
    cells = np.argwhere(np.ones((8, 9, 8), bool)).astype(np.int32) - np.array([4, 5, 4], np.int32)
    cells = cells[rng.permutation(len(cells))]
    offsets = np.array(MC.CUBE_CORNER_OFFSETS)
    corners = cells[:, None, :] + offsets[None]
    values = (np.linalg.norm(corners * 0.5 - 0.1, axis=-1) - 1.1).astype(np.float32)
    values_wp = wp.array(values, dtype=float, device=device, requires_grad=True)
    area = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    with wp.Tape() as tape:
        verts, tris = wp.geometry.sparse_marching_cubes_from_cells(cells, values_wp, origin=(0.0, 0.0, 0.0),
                                                                   cell_width=0.5, device=device)
        wp.launch(_area_kernel, dim=tris.shape[0] // 3, inputs=[verts, tris, area], device=device)
    v, t = verts.numpy(), tris.numpy().reshape(-1, 3)
    _assert_closed(v, t)
    np.testing.assert_allclose(np.linalg.norm(v - 0.1, axis=1), 1.1, atol=0.05)
    tape.backward(area)
    g = values_wp.grad.numpy()
    assert np.isfinite(g).all() and np.abs(g).sum() > 0
    # each shared corner's gradient lands on one of its entries: the rest stay zero
    key = [tuple(c) for c in corners.reshape(-1, 3)]
    nonzero = {}
    for k, gv in zip(key, g.reshape(-1)):
        nonzero[k] = nonzero.get(k, 0) + (gv != 0.0)
    assert max(nonzero.values()) == 1


def test_octree_brackets_the_surface(device):
    cells, width = wp.geometry.lipschitz_octree(_torus, (-1.0, -1.0, -1.0), 2.0, 5, device=device)
    assert cells.dtype == wp.vec3i and width == 2.0 / 32
    kept = {tuple(c) for c in cells.numpy()}
    x = -1.0 + width * np.arange(33)
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    inside = np.sqrt((np.sqrt(X**2 + Z**2) - 0.5) ** 2 + Y**2) - 0.2 < 0
    count = sum(inside[i:i + 32, j:j + 32, k:k + 32].astype(int) for i in (0, 1) for j in (0, 1) for k in (0, 1))
    crossing = np.argwhere((count > 0) & (count < 8))
    assert all(tuple(c) in kept for c in crossing)


# ---- bad input -----------------------------------------------------------------------------------------


def test_bad_input(device):
    with pytest.raises(ValueError, match="3D array for 'field'"):
        MC.extract(wp.zeros((4, 4), dtype=float, device=device))
    with pytest.raises(ValueError, match="'field' to have at least 2 nodes"):
        MC.extract(wp.zeros((1, 4, 4), dtype=float, device=device))
    with pytest.raises(TypeError, match="wp.float32 for 'field'.*float64"):
        MC.extract(wp.zeros((4, 4, 4), dtype=wp.float64, device=device))
    with pytest.raises(TypeError, match="wp.array for 'field'"):
        MC.extract(np.zeros((4, 4, 4), np.float32))
    with pytest.raises(ValueError, match="'lower' must have 3 components"):
        MC.extract(wp.zeros((4, 4, 4), dtype=float, device=device), lower=(0.0, 1.0))
    with pytest.raises(TypeError, match="batched callable"):
        wp.geometry.sparse_marching_cubes(_torus_batch, 9, 9, 9, device=device)
    with pytest.raises(ValueError, match="cell_width must be positive"):
        wp.geometry.sparse_marching_cubes_from_cells(np.zeros((1, 3), np.int32), np.zeros((1, 8), np.float32),
                                                     cell_width=0.0, device=device)
    with pytest.raises(ValueError, match="corner_values must have 16 entries"):
        wp.geometry.sparse_marching_cubes_from_cells(np.zeros((2, 3), np.int32), np.zeros(8, np.float32),
                                                     device=device)


def test_field_on_another_device():
    devices = [d for d in ("cpu", "cuda:0") if d == "cpu" or wp.get_cuda_device_count() > 0]
    if len(devices) < 2:
        pytest.skip("needs a CPU and a GPU")
    mc = MC(4, 4, 4, device="cuda:0")
    with pytest.raises(ValueError, match="'field' must live on this MarchingCubes' device"):
        mc.surface(wp.zeros((4, 4, 4), dtype=float, device="cpu"), 0.0)
