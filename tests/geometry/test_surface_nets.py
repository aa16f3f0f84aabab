"""Surface nets (wp.geometry.IsoSurfaceNets): the generated tables against OpenVDB's (through
warp-lang's copy), closed oriented manifolds of the right genus and volume, sheets of multi-sheet
cells kept apart, open boundaries, quads vs triangles, agreement with warp-lang on the same fields
(identical output where every cell has one sheet; the same mesh up to the vertex order in
multi-sheet cells otherwise), gradients against finite differences, determinism, and bad input."""
import numpy as np
import pytest

import conftest
import tilewarp as wp
import tilewarp.geometry  # noqa: F401
from tilewarp.geometry import surface_nets as sn

SN = wp.geometry.IsoSurfaceNets


def _grid(n):
    x = np.arange(n, dtype=np.float64)
    return np.stack(np.meshgrid(x, x, x, indexing="ij"), -1)


def _sphere(n, center, radius):
    return (np.linalg.norm(_grid(n) - np.asarray(center), axis=-1) - radius).astype(np.float32)


def _torus(n, major, minor):
    p = _grid(n) - (n - 1) / 2.0
    q = np.stack([np.hypot(p[..., 0], p[..., 1]) - major, p[..., 2]], -1)
    return (np.linalg.norm(q, axis=-1) - minor).astype(np.float32)


def _extract(field_np, device, topology="quad", threshold=0.0, **bounds):
    verts, indices = SN.extract(wp.array(field_np, dtype=wp.float32, device=device), threshold, topology=topology,
                                **bounds)
    return verts.numpy().astype(np.float64), indices.numpy().reshape(-1, 4 if topology == "quad" else 3)


def _edges(faces):
    k = faces.shape[1]
    directed = np.concatenate([faces[:, [i, (i + 1) % k]] for i in range(k)])
    return directed


def _assert_closed_oriented(verts, faces):
    """Every edge in exactly two faces, once each way; every vertex used."""
    assert len(faces) > 0
    directed = _edges(faces)
    _, d = np.unique(directed, axis=0, return_counts=True)
    _, u = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    assert (u == 2).all(), "a boundary or non-manifold edge"
    assert (d == 1).all(), "inconsistently oriented neighbours"
    assert (np.unique(faces) == np.arange(len(verts))).all(), "an unused vertex"


def _euler(verts, faces):
    n_edges = len(np.unique(np.sort(_edges(faces), axis=1), axis=0))
    return len(verts) - n_edges + len(faces)


def _volume(verts, tris):
    p0, p1, p2 = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    return np.einsum("ij,ij->i", p0, np.cross(p1, p2)).sum() / 6.0


def _components(n_verts, faces):
    root = list(range(n_verts))

    def find(a):
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    for f in faces:
        for v in f[1:]:
            root[find(int(v))] = find(int(f[0]))
    return len({find(v) for v in range(n_verts)})


# ---- the tables -------------------------------------------------------------------------------------


def test_tables_conventions():
    """OpenVDB's corner and edge numbering; each crossed edge in a group, groups numbered 1..n;
    the ambiguous face is one whose two inside corners are diagonal."""
    assert sn._SN_CORNER_OFFSETS == ((0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1), (0, 1, 0), (1, 1, 0), (1, 1, 1),
                                     (0, 1, 1))
    assert sn._SN_EDGE_TO_CORNERS[:4] == ((0, 1), (1, 2), (3, 2), (0, 3))
    assert len(sn._SN_EDGE_GROUP_TABLE) == 256 * 13 and len(sn._SN_AMBIGUOUS_FACE) == 256
    for code in range(256):
        row = sn._SN_EDGE_GROUP_TABLE[13 * code:13 * code + 13]
        crossed = [(code >> a & 1) != (code >> b & 1) for a, b in sn._SN_EDGE_TO_CORNERS]
        assert [g != 0 for g in row[1:]] == crossed
        assert set(g for g in row[1:] if g) == set(range(1, row[0] + 1))
    assert sn._SN_EDGE_GROUP_TABLE[65 * 13] == 2  # corners 0 and 6: two sheets
    assert sn._SN_EDGE_GROUP_TABLE[5 * 13] == 1  # corners 0 and 2 (a face diagonal): joined
    assert sn._SN_AMBIGUOUS_FACE[5] == 5 and sn._SN_AMBIGUOUS_FACE[255 - 5] == 0  # y = 0; > 4 inside: none


def test_tables_match_openvdb():
    """The ambiguous-face table equals OpenVDB's as shipped by warp-lang; the edge groups partition
    every pattern's edges as OpenVDB's do (numbered by lowest edge here)."""
    if conftest.warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    from warp._src.geometry import surface_nets as ref

    assert tuple(ref._SN_AMBIGUOUS_FACE) == sn._SN_AMBIGUOUS_FACE
    assert tuple(map(tuple, ref._SN_CORNER_OFFSETS)) == sn._SN_CORNER_OFFSETS
    assert tuple(map(tuple, ref._SN_EDGE_TO_CORNERS)) == sn._SN_EDGE_TO_CORNERS

    def partition(table, code):
        row = table[13 * code + 1:13 * code + 13]
        return sorted(tuple(e for e in range(12) if row[e] == g) for g in set(row) - {0})

    for code in range(256):
        assert partition(ref._SN_EDGE_GROUP_TABLE, code) == partition(sn._SN_EDGE_GROUP_TABLE, code), code


# ---- surfaces ---------------------------------------------------------------------------------------


def test_sphere_closed_oriented_volume(device):
    verts, quads = _extract(_sphere(40, (19.5, 19.2, 18.7), 12.0), device)
    _assert_closed_oriented(verts, quads)
    assert _euler(verts, quads) == 2
    assert np.abs(np.linalg.norm(verts - (19.5, 19.2, 18.7), axis=1) - 12.0).max() < 0.5
    _, tris = _extract(_sphere(40, (19.5, 19.2, 18.7), 12.0), device, topology="triangle")
    _assert_closed_oriented(verts, tris)
    volume = _volume(verts, tris)  # positive: counter-clockwise seen from outside
    assert abs(volume - 4 / 3 * np.pi * 12.0**3) / volume < 0.02


def test_torus_genus_one(device):
    verts, quads = _extract(_torus(36, 10.0, 4.0), device)
    _assert_closed_oriented(verts, quads)
    assert _euler(verts, quads) == 0


@pytest.mark.parametrize("seed", [0, 1])
def test_random_fields_manifold(device, seed):
    """Random sign fields (every ambiguous and multi-sheet pattern): no edge in more than two
    faces; surrounded by a positive shell, closed and oriented."""
    rng = np.random.default_rng(seed)
    field = np.ones((14, 14, 14), np.float32)
    field[2:-2, 2:-2, 2:-2] = rng.choice([-1.0, 1.0], size=(10, 10, 10)) * rng.uniform(0.2, 1.0, (10, 10, 10))
    verts, quads = _extract(field, device)
    _assert_closed_oriented(verts, quads)
    _, tris = _extract(field, device, topology="triangle")
    _assert_closed_oriented(verts, tris)


def test_two_sheet_cell_keeps_its_sheets_apart(device):
    """Inside nodes (1,1,1) and (2,2,2): the cell between them has two sheets, two vertices."""
    field = np.ones((4, 4, 4), np.float32)
    field[1, 1, 1] = field[2, 2, 2] = -1.0
    verts, quads = _extract(field, device)
    assert len(verts) == 16  # 15 cells touched, one of them twice
    _assert_closed_oriented(verts, quads)
    assert _components(len(verts), quads) == 2


def test_open_boundary_and_boundary_only_sheets(device):
    field = _sphere(20, (0.0, 0.0, 0.0), 10.0)  # an octant inside the grid
    verts, quads = _extract(field, device)
    _, u = np.unique(np.sort(_edges(quads), axis=1), axis=0, return_counts=True)
    assert (u <= 2).all() and (u == 1).any()
    lone = np.ones((2, 2, 2), np.float32)
    lone[0, 0, 0] = -1.0  # crosses only boundary edges: no quad, so no vertex
    verts, quads = _extract(lone, device)
    assert verts.shape == (0, 3) and quads.shape == (0, 4)


def test_topologies_and_bounds(device):
    field = _sphere(24, (11.5, 12.0, 11.0), 7.0)
    lower, upper = (-1.0, 0.0, 2.0), (22.0, 46.0, 25.0)
    v4, quads = _extract(field, device, "quad", lower=lower, upper=upper)
    v3, tris = _extract(field, device, "triangle", lower=lower, upper=upper)
    np.testing.assert_array_equal(v3, v4)
    np.testing.assert_array_equal(tris.reshape(-1, 6)[:, :3], quads[:, [0, 1, 2]])
    np.testing.assert_array_equal(tris.reshape(-1, 6)[:, 3:], quads[:, [0, 2, 3]])
    index_space = (v4 - lower) / ((np.array(upper) - lower) / 23.0)
    assert np.abs(np.linalg.norm(index_space - (11.5, 12.0, 11.0), axis=1) - 7.0).max() < 0.5


def test_stateful_interface(device):
    iso = SN(16, 16, 16, topology="quad")
    assert isinstance(iso, wp.geometry.IsoSurfaceBase) and iso.verts is None and iso.indices is None
    field = wp.array(_sphere(16, (7.5, 7.5, 7.5), 4.0), device=device)
    iso.surface(field, 0.0)
    verts, indices = SN.extract(field, 0.0, topology="quad")
    np.testing.assert_array_equal(iso.verts.numpy(), verts.numpy())
    np.testing.assert_array_equal(iso.indices.numpy(), indices.numpy())
    assert iso.indices.dtype == wp.int32 and iso.verts.dtype == wp.vec3
    iso.resize(8, 8, 8)
    iso.surface(wp.array(_sphere(8, (3.5, 3.5, 3.5), 2.0), device=device), 0.0)
    assert iso.indices.shape[0] % 4 == 0 and iso.verts.shape[0] > 0
    iso.surface(wp.array(_sphere(8, (3.5, 3.5, 3.5), 2.0), device=device), 100.0)  # everything inside
    assert iso.verts.shape == (0,) and iso.indices.shape == (0,)


def test_deterministic(device):
    rng = np.random.default_rng(5)
    field = rng.uniform(-1, 1, (12, 13, 11)).astype(np.float32)
    first = _extract(field, device)
    for _ in range(2):
        again = _extract(field, device)
        np.testing.assert_array_equal(again[0], first[0])
        np.testing.assert_array_equal(again[1], first[1])


# ---- gradients --------------------------------------------------------------------------------------


def test_gradient_matches_finite_differences(device):
    rng = np.random.default_rng(3)
    field_np = rng.uniform(-1.0, 1.0, (5, 5, 5)).astype(np.float32)
    field_np[np.abs(field_np) < 0.05] = 0.3  # keep every node off the level set
    field = wp.array(field_np, dtype=wp.float32, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        verts, _ = SN.extract(field, 0.0)
    weights = rng.uniform(-1, 1, (verts.shape[0], 3)).astype(np.float32)
    verts.grad = wp.array(weights, dtype=wp.vec3, device=device)
    tape.backward()
    grad = field.grad.numpy()

    def loss(f):
        v, _ = SN.extract(wp.array(f, dtype=wp.float32, device=device), 0.0)
        assert v.shape[0] == weights.shape[0]
        return float((v.numpy().astype(np.float64) * weights).sum())

    eps = 1e-3
    fd = np.zeros_like(grad)
    for node in np.ndindex(*field_np.shape):
        plus, minus = field_np.copy(), field_np.copy()
        plus[node] += eps
        minus[node] -= eps
        fd[node] = (loss(plus) - loss(minus)) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-2, atol=2e-2)
    assert np.abs(grad).max() > 0.1


# ---- warp-lang --------------------------------------------------------------------------------------


def _canonical(verts, faces):
    """The mesh with vertices in lexicographic order (faces renumbered, rows sorted)."""
    order = np.lexsort(np.round(verts, 5).T[::-1])
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    faces = rank[faces]
    return verts[order], faces[np.lexsort(faces.T[::-1])]


def _warp_extract(field_np, topology, **bounds):
    W = conftest.warp
    import warp.geometry  # noqa: F401

    verts, indices = W.geometry.IsoSurfaceNets.extract(W.array(field_np, dtype=W.float32, device="cpu"), 0.0,
                                                       topology=topology, **bounds)
    return verts.numpy().astype(np.float64), indices.numpy().reshape(-1, 4 if topology == "quad" else 3)


@pytest.mark.parametrize("topology", ["quad", "triangle"])
def test_matches_warp(device, topology):
    """One sheet per cell (a sphere, anisotropic bounds): identical output. Random fields: the same
    vertices and faces, up to the order of the vertices of multi-sheet cells."""
    if conftest.warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    bounds = {"lower": (-1.0, 0.5, 2.0), "upper": (3.0, 9.0, 4.0)}
    field = _sphere(20, (9.3, 10.1, 8.8), 6.2)
    got = _extract(field, device, topology, **bounds)
    want = _warp_extract(field, topology, **bounds)
    np.testing.assert_allclose(got[0], want[0], atol=1e-5)
    np.testing.assert_array_equal(got[1], want[1])
    rng = np.random.default_rng(11)
    for trial in range(3):
        field = rng.uniform(-1.0, 1.0, (10, 11, 9)).astype(np.float32)
        if trial:
            field = np.sign(field) + np.float32(0.25 * trial)  # quantised: ambiguous faces everywhere
        got = _canonical(*_extract(field, device, topology))
        want = _canonical(*_warp_extract(field, topology))
        np.testing.assert_allclose(got[0], want[0], atol=1e-5)
        np.testing.assert_array_equal(got[1], want[1])


# ---- bad input --------------------------------------------------------------------------------------


def test_bad_input(device):
    with pytest.raises(TypeError, match="field"):
        SN.extract(np.zeros((4, 4, 4), np.float32))
    with pytest.raises(ValueError, match="3D"):
        SN.extract(wp.zeros(8, dtype=wp.float32, device=device))
    for shape in ((1, 8, 8), (8, 1, 8), (8, 8, 1), (0, 8, 8)):
        with pytest.raises(ValueError, match="at least 2 nodes on each axis"):
            SN.extract(wp.zeros(shape, dtype=wp.float32, device=device))
    with pytest.raises(TypeError, match="float32"):
        SN.extract(wp.zeros((4, 4, 4), dtype=wp.float64, device=device))
    with pytest.raises(ValueError, match="topology"):
        SN.extract(wp.zeros((4, 4, 4), dtype=wp.float32, device=device), topology="triangles")
    with pytest.raises(ValueError, match="topology"):
        SN(4, 4, 4, topology="quads")
    with pytest.raises(ValueError, match="does not match"):
        SN(4, 4, 4).surface(wp.zeros((5, 4, 4), dtype=wp.float32, device=device), 0.0)
    with pytest.raises(ValueError, match="lower"):
        SN.extract(wp.zeros((4, 4, 4), dtype=wp.float32, device=device), lower=(0.0, 1.0))
