"""wp.Bvh: every query kind against a NumPy brute force on random boxes (leaf sizes, groups of unequal
sizes, refits), two queries alive at once, deterministic builds, bad input."""
import numpy as np
import pytest

import tilewarp as wp
from tilewarp.geometry.bvh import BvhConstructor

CAP = 512
CONSTRUCTORS = ("sah", "median", "lbvh")


@wp.kernel
def collect(bvh: wp.uint64, kind: int, a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), radius: float,
            max_dist: float, grouped: int, group: int, hits: wp.array2d(dtype=int), counts: wp.array(dtype=int)):
    i = wp.tid()
    root = int(-1)
    if grouped != 0:
        root = wp.bvh_get_group_root(bvh, group)
    if kind == 0:
        query = wp.bvh_query_aabb(bvh, a[i], b[i], root)
    elif kind == 1:
        query = wp.bvh_query_ray(bvh, a[i], b[i], root)
    elif kind == 2:
        query = wp.bvh_query_sphere(bvh, a[i], radius, root)
    else:
        query = wp.bvh_query_capsule(bvh, a[i], b[i], radius, root)
    index = int(0)
    n = int(0)
    while wp.bvh_query_next(query, index, max_dist):
        if n < CAP:
            hits[i, n] = index
        n += 1
    counts[i] = n


def _boxes(rng, n, scale=10.0, size=0.6):
    c = rng.random((n, 3)) * scale
    e = rng.random((n, 3)) * size
    return (c - e).astype(np.float32), (c + e).astype(np.float32)


def _ray_box(o, d, lo, hi, max_t):
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d
        t1, t2 = (lo - o) * inv, (hi - o) * inv
    a, b = np.minimum(t1, t2), np.maximum(t1, t2)
    a = np.where(np.isnan(a), -np.inf, a)
    b = np.where(np.isnan(b), np.inf, b)
    t0, t1 = np.maximum(a.max(-1), 0.0), np.minimum(b.min(-1), max_t)
    return t0 <= t1


def _expected(kind, L, U, a, b, radius, max_dist):
    if kind == 0:
        return np.all((L <= b) & (U >= a), axis=1)
    if kind == 1:
        return _ray_box(a, b, L, U, max_dist)
    if kind == 2:
        d = np.maximum(np.maximum(L - a, 0.0), a - U)
        return (d * d).sum(1) <= radius * radius
    return None  # capsules: a conservative broad phase, checked for coverage below


def _check_tree(bvh, L, U, leaf_size):
    """The tree the queries walk: every item in exactly one leaf of at most leaf_size items, every
    node's box holding its children's (a leaf's: its items'), the root's the union of all, every
    node reached once from the root, and shallow enough for the walks' stacks."""
    lo, left, hi, right = bvh._nodes()
    n = len(L)
    items = bvh._tree.items.numpy()[:n]
    seen, stack, reached = [], [(0, 0)], 0
    while stack:
        i, depth = stack.pop()
        reached += 1
        assert depth < 96
        if left[i] < 0:
            run = items[~left[i]:right[i]]
            assert 1 <= len(run) <= leaf_size
            assert np.all(lo[i] <= L[run]) and np.all(hi[i] >= U[run]), f"leaf {i}"
            seen += run.tolist()
            continue
        for c in (left[i], right[i]):
            assert np.all(lo[i] <= lo[c]) and np.all(hi[i] >= hi[c]), f"node {i}, child {c}"
            stack.append((c, depth + 1))
    assert reached == len(left)
    assert sorted(seen) == list(range(n))
    np.testing.assert_array_equal(lo[0], L.min(0))
    np.testing.assert_array_equal(hi[0], U.max(0))


def _run(bvh, kind, qa, qb, radius, max_dist=float("inf"), group=None, device="cpu"):
    m = len(qa)
    hits = wp.full((m, CAP), -1, dtype=int, device=device)
    counts = wp.zeros(m, dtype=int, device=device)
    wp.launch(collect, dim=m, inputs=[bvh.id, kind, wp.array(qa, dtype=wp.vec3, device=device),
                                      wp.array(qb, dtype=wp.vec3, device=device), radius, max_dist,
                                      int(group is not None), group or 0, hits, counts], device=device)
    h, c = hits.numpy(), counts.numpy()
    assert c.max() <= CAP
    return [h[i, :c[i]].tolist() for i in range(m)]


@pytest.mark.parametrize("leaf_size", [1, 3, 4])
@pytest.mark.parametrize("kind", [0, 1, 2])
def test_queries_match_brute_force(device, kind, leaf_size):
    rng = np.random.default_rng(10 + kind)
    L, U = _boxes(rng, 3000)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                 leaf_size=leaf_size)
    m = 200
    if kind == 1:
        qa = (rng.random((m, 3)) * 14 - 2).astype(np.float32)
        qb = rng.normal(size=(m, 3)).astype(np.float32)
        qb[:5] = [[1, 0, 0], [0, 1, 0], [0, 0, -1], [1, 1, 0], [0, 0, 1]]  # axis-parallel rays (0 * inf)
    else:
        qa, qb = _boxes(rng, m, size=1.0)
    for max_dist in ((float("inf"), 3.0) if kind == 1 else (float("inf"),)):
        got = _run(bvh, kind, qa, qb, 0.8, max_dist, device=device)
        for i in range(m):
            want = np.flatnonzero(_expected(kind, L, U, qa[i], qb[i], 0.8, max_dist))
            assert len(got[i]) == len(set(got[i])), "an item repeats"
            assert sorted(got[i]) == want.tolist(), f"query {i} (max_dist {max_dist})"


def test_capsule_covers_every_box_it_touches(device):
    rng = np.random.default_rng(3)
    L, U = _boxes(rng, 2000)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device))
    qa = (rng.random((100, 3)) * 10).astype(np.float32)
    qb = (rng.normal(size=(100, 3)) * 2).astype(np.float32)
    got = _run(bvh, 3, qa, qb, 0.3, 1.0, device=device)
    for i in range(100):  # boxes a sampled capsule point lies in (inflated by r) must all be found
        pts = qa[i] + np.linspace(0, 1, 200)[:, None] * qb[i]
        d = np.maximum(np.maximum(L[None] - pts[:, None], 0.0), pts[:, None] - U[None])
        touched = np.flatnonzero(((d * d).sum(-1) <= 0.3**2 * 0.99).any(0))
        assert set(touched) <= set(got[i])


@pytest.mark.parametrize("constructor", CONSTRUCTORS)
def test_groups_of_unequal_sizes(device, constructor):
    """NVIDIA/warp#1111: group roots hold exactly their group's items, whatever the group sizes."""
    rng = np.random.default_rng(4)
    sizes = [1, 2, 7, 60, 300, 5]
    ids = [-(2**31), -3, 0, 11, 2**31 - 1, 12]
    g = np.concatenate([np.full(s, i, np.int32) for s, i in zip(sizes, ids)])
    rng.shuffle(g)
    L, U = _boxes(rng, len(g), scale=3.0)
    for leaf in (1, 4):
        bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                     groups=wp.array(g, dtype=wp.int32, device=device), leaf_size=leaf, constructor=constructor)
        _check_tree(bvh, L, U, leaf)
        lo = np.full((1, 3), -10, np.float32)
        hi = np.full((1, 3), 20, np.float32)
        for gid in ids:
            got = _run(bvh, 0, lo, hi, 0.0, group=gid, device=device)[0]
            assert sorted(got) == np.flatnonzero(g == gid).tolist(), f"group {gid}, leaf size {leaf}"
        missing = _run(bvh, 0, lo, hi, 0.0, group=5, device=device)[0]  # no such group: the whole tree
        assert sorted(missing) == list(range(len(g)))


def test_refit_and_rebuild(device):
    rng = np.random.default_rng(5)
    L, U = _boxes(rng, 1000)
    lowers, uppers = wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device)
    bvh = wp.Bvh(lowers, uppers)
    shift = rng.normal(size=(1000, 3)).astype(np.float32)
    L2, U2 = L + shift, U + shift
    lowers.assign(L2)
    uppers.assign(U2)
    qa, qb = _boxes(rng, 100, size=1.0)
    for update in (bvh.refit, bvh.rebuild):
        update()
        got = _run(bvh, 0, qa, qb, 0.0, device=device)
        for i in range(100):
            assert sorted(got[i]) == np.flatnonzero(_expected(0, L2, U2, qa[i], qb[i], 0, 0)).tolist()


def test_two_queries_alive_at_once(device):
    """NVIDIA/warp#1258: a query inside another query's loop keeps its own traversal state."""

    @wp.kernel
    def pairs(bvh: wp.uint64, lowers: wp.array(dtype=wp.vec3), uppers: wp.array(dtype=wp.vec3),
              counts: wp.array(dtype=int)):
        i = wp.tid()
        n = int(0)
        for j in wp.bvh_query_aabb(bvh, lowers[i], uppers[i]):
            for k in wp.bvh_query_aabb(bvh, lowers[j], uppers[j]):
                n += 1
        counts[i] = n

    rng = np.random.default_rng(6)
    L, U = _boxes(rng, 400, scale=4.0)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device))
    counts = wp.zeros(400, dtype=int, device=device)
    wp.launch(pairs, dim=400, inputs=[bvh.id, bvh.lowers, bvh.uppers, counts], device=device)
    overlap = np.all((L[:, None] <= U[None]) & (U[:, None] >= L[None]), axis=-1).astype(np.int64)
    np.testing.assert_array_equal(counts.numpy(), overlap @ overlap.sum(1))


@pytest.mark.parametrize("constructor", CONSTRUCTORS)
@pytest.mark.parametrize("n", [5000, 60000])  # 60000: the top-down builds share their work among threads
def test_builds_are_deterministic(device, constructor, n):
    rng = np.random.default_rng(7)
    L, U = _boxes(rng, n)
    L[100:200] = L[100]  # many identical keys: ties go by position
    U[100:200] = U[100]
    trees = [wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                    constructor=constructor, leaf_size=2) for _ in range(2)]
    for a, b in zip(trees[0]._nodes(), trees[1]._nodes()):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(trees[0]._tree.items.numpy()[:n], trees[1]._tree.items.numpy()[:n])
    _check_tree(trees[0], L, U, 2)


def _with_duplicates(rng, n):
    L, U = _boxes(rng, n)
    if n >= 4:
        dup = rng.integers(0, n, n // 4)
        L[rng.integers(0, n, n // 4)] = L[dup]
        U[rng.integers(0, n, n // 4)] = U[dup]
        L, U = np.minimum(L, U), np.maximum(L, U)
    return L, U


@pytest.mark.parametrize("constructor", CONSTRUCTORS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 1000])
@pytest.mark.parametrize("leaf_size", [1, 4])
def test_constructors_match_brute_force(device, constructor, n, leaf_size):
    rng = np.random.default_rng(n)
    L, U = _with_duplicates(rng, n)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                 constructor=constructor, leaf_size=leaf_size)
    _check_tree(bvh, L, U, leaf_size)
    qa, qb = _boxes(rng, 100, size=1.5)
    qa[0], qb[0] = -100.0, 100.0  # everything (n <= CAP)
    if n > CAP:
        qa, qb = qa[1:], qb[1:]
    got = _run(bvh, 0, qa, qb, 0.0, device=device)
    for i in range(len(qa)):
        assert sorted(got[i]) == np.flatnonzero(_expected(0, L, U, qa[i], qb[i], 0, 0)).tolist(), f"query {i}"
    bvh.rebuild("lbvh" if constructor != "lbvh" else "sah")  # another constructor, the same buffers
    _check_tree(bvh, L, U, leaf_size)


@pytest.mark.parametrize("constructor", CONSTRUCTORS)
def test_all_centres_coincide(device, constructor):
    """Nothing to split by: the top-down builds fall back to halving by count."""
    rng = np.random.default_rng(8)
    e = (rng.random((700, 3)) * 2 + 0.01).astype(np.float32)
    L, U = 3.0 - e, 3.0 + e
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                 constructor=constructor, leaf_size=3)
    _check_tree(bvh, L, U, 3)
    qa, qb = _boxes(rng, 50, scale=8.0, size=1.0)
    got = _run(bvh, 0, qa, qb, 0.0, device=device)
    for i in range(50):
        assert sorted(got[i]) == np.flatnonzero(_expected(0, L, U, qa[i], qb[i], 0, 0)).tolist()


@pytest.mark.parametrize("constructor", CONSTRUCTORS)
def test_skewed_and_nonfinite_boxes(device, constructor):
    """Centres spread over many orders of magnitude keep the tree shallow; NaN and infinite boxes
    neither hang nor break a build, and every finite box is still found."""
    rng = np.random.default_rng(9)
    c = (rng.pareto(0.3, (3000, 3)) * np.where(rng.random((3000, 3)) < 0.5, -1, 1)).astype(np.float32)
    c = np.clip(c, -1e30, 1e30)
    L, U = c - 0.5, c + 0.5
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                 constructor=constructor)
    _check_tree(bvh, L, U, 1)
    L2, U2 = L.copy(), U.copy()
    L2[::7, 0] = np.nan
    L2[1::7] = -np.inf
    U2[2::7, 1] = np.inf
    L2[3::7] = U2[3::7] = np.inf
    bvh = wp.Bvh(wp.array(L2, dtype=wp.vec3, device=device), wp.array(U2, dtype=wp.vec3, device=device),
                 constructor=constructor, leaf_size=4)
    qa, qb = _boxes(rng, 50, scale=4.0, size=2.0)
    got = _run(bvh, 0, qa, qb, 0.0, device=device)
    bad = np.zeros(len(L2), bool)
    bad[::7] = True  # a NaN box: whether a query meets it is the walk's business
    for i in range(50):
        want = _expected(0, L2, U2, qa[i], qb[i], 0, 0)
        assert set(np.flatnonzero(want & ~bad)) <= set(got[i])
        assert set(got[i]) <= set(np.flatnonzero(want | bad))


def test_bad_input():
    a = wp.zeros(4, dtype=wp.vec3)
    with pytest.raises(RuntimeError, match="same number"):
        wp.Bvh(a, wp.zeros(5, dtype=wp.vec3))
    with pytest.raises(RuntimeError, match="wp.vec3"):
        wp.Bvh(wp.zeros(4, dtype=wp.vec3d), wp.zeros(4, dtype=wp.vec3d))
    with pytest.raises(ValueError, match="leaf_size"):
        wp.Bvh(a, a, leaf_size=0)
    with pytest.raises(ValueError, match="Unknown BVH constructor"):
        wp.Bvh(a, a, constructor="octree")
    with pytest.raises(RuntimeError, match="groups"):
        wp.Bvh(a, a, groups=wp.zeros(3, dtype=wp.int32))
    with pytest.raises(TypeError, match="wp.array"):
        wp.Bvh(np.zeros((4, 3), np.float32), a)


@wp.kernel
def _ray_hits_box(bvh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3),
                  out: wp.array(dtype=int)):
    i = wp.tid()
    for item in wp.bvh_query_ray(bvh, starts[i], dirs[i]):
        out[i] += item + 1


def test_rays_along_box_faces(device):
    """A ray parallel to a slab (a zero direction component, +0 or -0) whose origin lies on that slab's
    face still finds the box: the slab constrains nothing then."""
    bvh = wp.Bvh(wp.array([[0.0, 0.0, 0.0]], dtype=wp.vec3, device=device),
                 wp.array([[2.0, 2.0, 0.0]], dtype=wp.vec3, device=device))
    starts = [[2, 1, 1], [0, 1, 1], [1, 2, 1], [1, 0, 1], [2, 2, 1], [0, 0, 1]]
    rows = [(p, (z, z, -1.0)) for z in (0.0, -0.0) for p in starts]
    rows += [([3, 1, 1], (0.0, 0.0, -1.0)), ([1, -1, 1], (-0.0, -0.0, -1.0))]  # beside the box: misses
    s = wp.array(np.array([r[0] for r in rows], np.float32), dtype=wp.vec3, device=device)
    d = wp.array(np.array([r[1] for r in rows], np.float32), dtype=wp.vec3, device=device)
    out = wp.zeros(len(rows), dtype=int, device=device)
    wp.launch(_ray_hits_box, dim=len(rows), inputs=[bvh.id, s, d, out], device=device)
    np.testing.assert_array_equal(out.numpy(), [1] * (len(rows) - 2) + [0, 0])


@pytest.mark.parametrize("leaf_size", [1, 3])
def test_parallel_layout_matches_the_serial_one(leaf_size):
    """The GPU's layout passes (count with each node's box, then place), run on the CPU: the same nodes,
    boxes, parents and subtree ends as the CPU's depth-first layout and its refit; a mesh too."""
    rng = np.random.default_rng(7)
    lo, hi = _boxes(rng, 3000)
    trees = []
    for parallel in (False, True):
        bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3), constructor="lbvh", leaf_size=leaf_size)
        bvh._tree.parallel_layout = parallel
        bvh.rebuild()
        trees.append(bvh._tree)
    for a, b in zip(trees[0].layout(), trees[1].layout()):
        np.testing.assert_array_equal(a, b)
    count = int(trees[0].count.numpy()[0])
    for name in ("parents", "ends"):
        np.testing.assert_array_equal(getattr(trees[0], name).numpy()[:count], getattr(trees[1], name).numpy()[:count])
    pts = rng.random((400, 3)).astype(np.float32)
    tris = rng.integers(0, 400, (900, 3)).astype(np.int32).reshape(-1)
    meshes = []
    for parallel in (False, True):
        mesh = wp.Mesh(wp.array(pts, dtype=wp.vec3), wp.array(tris, dtype=wp.int32), bvh_constructor="lbvh",
                       bvh_leaf_size=leaf_size)
        mesh._tree.parallel_layout = parallel
        mesh._tree.build(mesh.id, points=mesh.points, indices=mesh.indices)
        meshes.append(mesh._tree.layout())
    for a, b in zip(*meshes):
        np.testing.assert_array_equal(a, b)


def test_grouped_rebuild_with_other_groups(device):
    """A grouped rebuild counts its groups on the device (nothing read back, so it can be captured):
    after the group ids change in place to more, then fewer groups, every group's root is right."""
    rng = np.random.default_rng(11)
    n = 500
    L, U = _boxes(rng, n, scale=3.0)
    groups = wp.array(np.zeros(n, np.int32), device=device)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                 groups=groups, constructor="lbvh")
    lo, hi = np.full((1, 3), -10, np.float32), np.full((1, 3), 20, np.float32)
    for count in (37, 3):
        g = rng.integers(0, count, n).astype(np.int32) * 7 - 50
        groups.assign(g)
        bvh.rebuild()
        assert bvh._tree.num_groups == len(np.unique(g))
        for gid in np.unique(g)[:10]:
            got = _run(bvh, 0, lo, hi, 0.0, group=int(gid), device=device)[0]
            assert sorted(got) == np.flatnonzero(g == gid).tolist(), f"{count} groups, group {gid}"


# ---- top-down constructors on a GPU tree: the hierarchy built on a host mirror ------------------------
# A GPU tree with constructor "sah" / "median" copies its inputs to the CPU, builds the hierarchy there,
# copies it back and lays it out (in parallel passes) and refits on the GPU. On the CPU the tests force
# that path (Tree.host_hierarchy, with the GPU's parallel layout); on a GPU it is the tree's own path.
# Either way the tree must be the CPU's normal build node for node.

TOP_DOWN = ("sah", "median")


def _host_built(owner, rebuild):
    """``owner``'s tree rebuilt through the host mirror (a no-op switch on a GPU, where it is the path)."""
    owner._tree.host_hierarchy = owner._tree.parallel_layout = True
    rebuild()
    return owner


def _same_tree(a, b):
    """Two trees (Bvh or Mesh) with the same layout columns, subtree runs and sorted items."""
    for x, y in zip(a._tree.layout(), b._tree.layout()):
        np.testing.assert_array_equal(x, y)
    count = len(a._tree.layout()[0])
    for name in ("parents", "ends"):
        np.testing.assert_array_equal(getattr(a._tree, name).numpy()[:count], getattr(b._tree, name).numpy()[:count])
    n = a._tree.n
    np.testing.assert_array_equal(a._tree.items.numpy()[:n], b._tree.items.numpy()[:n])
    if a._tree.tris is not None:
        np.testing.assert_array_equal(a._tree.tris.numpy()[:3 * n], b._tree.tris.numpy()[:3 * n])


def _bvh_pair(device, L, U, **kwargs):
    """(the CPU's normal build, the host-mirror build on ``device``) over the same boxes. The second is
    first built by the LBVH (a grouped one with every item in one group), so that anything the mirror's
    rebuild fails to write shows."""
    ref = wp.Bvh(wp.array(L, dtype=wp.vec3, device="cpu"), wp.array(U, dtype=wp.vec3, device="cpu"), **kwargs)
    constructor, groups = kwargs.pop("constructor"), kwargs.pop("groups", None)
    if groups is not None:
        kwargs["groups"] = wp.zeros(len(L), dtype=wp.int32, device=device)
    got = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                 constructor="lbvh", **kwargs)
    if groups is not None:
        got.groups.assign(groups.numpy())
    return ref, _host_built(got, lambda: got.rebuild(constructor))


def _same_hits(ref, got, L, U, rng, device):
    """Box, ray and sphere queries: the same hits from both trees (``ref`` on the CPU), and the brute
    force's."""
    qa, qb = _boxes(rng, 60, size=1.0)
    rays = rng.normal(size=(60, 3)).astype(np.float32)
    for kind, b in ((0, qb), (1, rays), (2, qb)):
        want = [sorted(h) for h in _run(ref, kind, qa, b, 0.7)]
        assert [sorted(h) for h in _run(got, kind, qa, b, 0.7, device=device)] == want, f"query kind {kind}"
        for i in range(len(qa)):
            assert want[i] == np.flatnonzero(_expected(kind, L, U, qa[i], b[i], 0.7, np.inf)).tolist()


@pytest.mark.parametrize("constructor", TOP_DOWN)
@pytest.mark.parametrize("leaf_size", [1, 4])
@pytest.mark.parametrize("n", [1, 3, 1000, 20000])  # 20000: the mirror's build shares its work among threads
def test_host_hierarchy_is_the_cpu_tree(device, constructor, leaf_size, n):
    rng = np.random.default_rng(100 + n + leaf_size)
    # duplicated corners (ties, and long boxes) in small trees; a big one spread out, so that no query
    # finds more than CAP boxes
    L, U = _with_duplicates(rng, n) if n <= 1000 else _boxes(rng, n, scale=10.0 * (n / 1000) ** (1 / 3))
    ref, got = _bvh_pair(device, L, U, constructor=constructor, leaf_size=leaf_size)
    _same_tree(ref, got)
    _check_tree(got, L, U, leaf_size)
    _same_hits(ref, got, L, U, rng, device)


@pytest.mark.parametrize("constructor", TOP_DOWN)
@pytest.mark.parametrize("leaf_size", [1, 4])
def test_host_hierarchy_of_groups(device, constructor, leaf_size):
    """Groups of unequal sizes (and extreme ids): the same tree, group count and group roots."""
    rng = np.random.default_rng(30 + leaf_size)
    sizes = [1, 2, 7, 60, 300, 5, 450]
    ids = [-(2**31), -3, 0, 11, 2**31 - 1, 12, 40]
    g = np.concatenate([np.full(s, i, np.int32) for s, i in zip(sizes, ids)])
    rng.shuffle(g)
    L, U = _boxes(rng, len(g), scale=3.0)
    ref, got = _bvh_pair(device, L, U, constructor=constructor, leaf_size=leaf_size,
                         groups=wp.array(g, dtype=wp.int32, device="cpu"))
    _same_tree(ref, got)
    assert got._tree.num_groups == ref._tree.num_groups == len(ids)
    count = len(ids)
    np.testing.assert_array_equal(got._tree.group_roots.numpy()[:count], ref._tree.group_roots.numpy()[:count])
    lo, hi = np.full((1, 3), -10, np.float32), np.full((1, 3), 20, np.float32)
    for gid in ids:
        hits = _run(got, 0, lo, hi, 0.0, group=gid, device=device)[0]
        assert sorted(hits) == np.flatnonzero(g == gid).tolist(), f"group {gid}"


@pytest.mark.parametrize("constructor", TOP_DOWN)
def test_host_hierarchy_refit_and_rebuild(device, constructor):
    """After the boxes move, a refit gives the CPU tree's refitted bounds (the root's: a fresh build's);
    rebuilds switching to the LBVH and back to the other top-down constructor reuse the buffers."""
    rng = np.random.default_rng(40)
    L, U = _boxes(rng, 3000)
    ref, got = _bvh_pair(device, L, U, constructor=constructor, leaf_size=2)
    shift = rng.normal(size=L.shape).astype(np.float32)
    L2, U2 = L + shift, U + shift
    for bvh in (ref, got):
        bvh.lowers.assign(L2)
        bvh.uppers.assign(U2)
        bvh.refit()
    _same_tree(ref, got)
    _check_tree(got, L2, U2, 2)
    fresh = wp.Bvh(wp.array(L2, dtype=wp.vec3, device="cpu"), wp.array(U2, dtype=wp.vec3, device="cpu"),
                   constructor=constructor)
    for k in (0, 2):
        np.testing.assert_array_equal(got._nodes()[k][0], fresh._nodes()[k][0])
    got.rebuild("lbvh")
    _check_tree(got, L2, U2, 2)
    _same_hits(fresh, got, L2, U2, rng, device)
    other = "median" if constructor == "sah" else "sah"
    got.rebuild(other)
    ref.rebuild(other)
    _same_tree(ref, got)
    _same_hits(ref, got, L2, U2, rng, device)


@wp.kernel
def _mesh_probe(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3),
                out: wp.array2d(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, p[i], 1.0e6)
    out[i, 0] = wp.length(p[i] - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    out[i, 1] = wp.mesh_query_point_sign_winding_number(mesh, p[i], 1.0e6).sign
    h = wp.mesh_query_ray(mesh, p[i], d[i], 1.0e6)
    out[i, 2] = wp.where(h.result, h.t, -1.0)
    out[i, 3] = float(wp.mesh_query_ray_count_intersections(mesh, p[i], d[i]))


def _probe(mesh, P, D, device):
    out = wp.zeros((len(P), 4), dtype=float, device=device)
    wp.launch(_mesh_probe, dim=len(P), inputs=[mesh.id, wp.array(P, dtype=wp.vec3, device=device),
                                               wp.array(D, dtype=wp.vec3, device=device), out], device=device)
    return out.numpy()


def _same_probes(a, b):
    """The same closest distances, ray hits and crossing counts; the same winding sign away from the
    surface (within float noise of it, the two devices' arithmetic may differ)."""
    np.testing.assert_allclose(a[:, [0, 2]], b[:, [0, 2]], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(a[:, 3], b[:, 3])
    away = a[:, 0] > 1e-3
    np.testing.assert_array_equal(a[away, 1], b[away, 1])


@pytest.mark.parametrize("constructor", TOP_DOWN)
@pytest.mark.parametrize("leaf_size", [1, 4])
def test_host_hierarchy_of_a_mesh(device, constructor, leaf_size):
    """A mesh with winding-number data: the CPU's tree, the same queries; then new points (the setter
    refits the tree and the winding data) still the same on both."""
    from meshes import icosphere

    V, F = icosphere(3)
    rng = np.random.default_rng(50 + leaf_size)
    V = (V * (1 + 0.25 * rng.random((len(V), 1)))).astype(np.float32)
    P = (rng.random((2000, 3)) * 3.4 - 1.7).astype(np.float32)
    D = rng.normal(size=(2000, 3)).astype(np.float32)
    D /= np.linalg.norm(D, axis=1, keepdims=True)

    def mesh_on(dev, c):
        return wp.Mesh(wp.array(V, dtype=wp.vec3, device=dev), wp.array(F.ravel(), dtype=wp.int32, device=dev),
                       support_winding_number=True, bvh_constructor=c, bvh_leaf_size=leaf_size)

    ref, got = mesh_on("cpu", constructor), mesh_on(device, "lbvh")  # the LBVH first: see _bvh_pair

    def rebuild():  # a mesh has no rebuild(): its constructor's steps
        got._constructor = got._tree.constructor = BvhConstructor.from_str(constructor)
        got._tree.build(got.id, points=got.points, indices=got.indices)
        got._refit_winding()

    _host_built(got, rebuild)
    _same_tree(ref, got)
    _same_probes(_probe(ref, P, D, "cpu"), _probe(got, P, D, device))
    V2 = (V * 1.3 + rng.normal(size=V.shape) * 0.02).astype(np.float32)
    ref.points = wp.array(V2, dtype=wp.vec3, device="cpu")
    got.points = wp.array(V2, dtype=wp.vec3, device=device)
    _same_tree(ref, got)
    _same_probes(_probe(ref, P, D, "cpu"), _probe(got, P, D, device))


def test_host_hierarchy_refused_in_a_cuda_capture(device):
    """The host mirror reads the inputs back: inside a CUDA graph capture a top-down build is refused
    (a typed RuntimeError naming the constructor) before it queues anything; the LBVH still captures."""
    d = wp.get_device(device)
    if d.is_cpu:
        pytest.skip("a CUDA graph capture needs a GPU")
    from tilewarp.runtime.cuda import CaptureError

    rng = np.random.default_rng(60)
    L, U = _boxes(rng, 500)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                 constructor="sah")
    with pytest.raises(CaptureError, match="'median'.*'lbvh'"):
        with wp.ScopedCapture(d):
            bvh.rebuild("median")
    with wp.ScopedCapture(d) as capture:
        bvh.rebuild("lbvh")
    wp.capture_launch(capture.graph)
    _check_tree(bvh, L, U, 1)
    bvh.rebuild("sah")  # outside a capture: fine again
    ref = wp.Bvh(wp.array(L, dtype=wp.vec3, device="cpu"), wp.array(U, dtype=wp.vec3, device="cpu"), constructor="sah")
    _same_tree(ref, bvh)


def test_default_constructors_follow_the_device(device):
    """As in Warp: None is "sah" on the CPU and "lbvh" on a GPU, for BVHs and meshes alike."""
    want = BvhConstructor.SAH if wp.get_device(device).is_cpu else BvhConstructor.LBVH
    a = wp.zeros(4, dtype=wp.vec3, device=device)
    assert wp.Bvh(a, a)._constructor == want
    mesh = wp.Mesh(wp.array(np.eye(3, dtype=np.float32), dtype=wp.vec3, device=device),
                   wp.array([0, 1, 2], dtype=wp.int32, device=device))
    assert mesh._constructor == want
