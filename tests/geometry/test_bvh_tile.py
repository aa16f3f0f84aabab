"""Block-cooperative BVH and mesh queries (tile_bvh_query_aabb / _ray, tile_mesh_query_aabb, their next and
tile_query_valid): every block's hits against a NumPy brute force, each exactly once, also with many times
5 x block_dim hits (Warp drops or repeats hits past a buffer of that size: NVIDIA/warp#1747) and block sizes
that are not powers of two (#1746); partial blocks, queries in loops, Warp's deprecated names, bad input."""
import warnings

import numpy as np
import pytest

import tilewarp as wp
from conftest import check_located

CAP = 6000  # hits a block may record


@wp.func
def drain_bvh(q: wp.BvhQueryTiled, b: int, hits: wp.array2d(dtype=int), counts: wp.array(dtype=int)):
    rounds = int(0)
    while wp.tile_query_valid(q):
        item = wp.untile(wp.tile_bvh_query_next(q))
        if item >= 0:
            slot = wp.atomic_add(counts, b, 1)
            if slot < CAP:
                hits[b, slot] = item
        rounds += 1
    return rounds


@wp.kernel
def collect_aabb(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
                 hits: wp.array2d(dtype=int), counts: wp.array(dtype=int), rounds: wp.array(dtype=int)):
    b, lane = wp.tid()
    q = wp.tile_bvh_query_aabb(bvh, lo[b], hi[b])
    n = drain_bvh(q, b, hits, counts)
    if lane == 0:
        rounds[b] = n


@wp.kernel
def collect_ray(bvh: wp.uint64, start: wp.array(dtype=wp.vec3), direction: wp.array(dtype=wp.vec3),
                hits: wp.array2d(dtype=int), counts: wp.array(dtype=int), rounds: wp.array(dtype=int)):
    b, lane = wp.tid()
    q = wp.tile_bvh_query_ray(bvh, start[b], direction[b])
    n = drain_bvh(q, b, hits, counts)
    if lane == 0:
        rounds[b] = n


@wp.kernel
def collect_mesh(mesh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
                 hits: wp.array2d(dtype=int), counts: wp.array(dtype=int), rounds: wp.array(dtype=int)):
    b, lane = wp.tid()
    q = wp.tile_mesh_query_aabb(mesh, lo[b], hi[b])
    n = int(0)
    while wp.tile_query_valid(q):
        face = wp.untile(wp.tile_mesh_query_aabb_next(q))
        if face >= 0:
            slot = wp.atomic_add(counts, b, 1)
            if slot < CAP:
                hits[b, slot] = face
        n += 1
    if lane == 0:
        rounds[b] = n


def _boxes(rng, n, scale=10.0, size=0.6):
    c = rng.random((n, 3)) * scale
    e = rng.random((n, 3)) * size
    return (c - e).astype(np.float32), (c + e).astype(np.float32)


def _overlaps(L, U, lo, hi):
    return np.nonzero(np.all((L <= hi) & (U >= lo), axis=1))[0]


def _ray_hits(L, U, o, d):
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.float32(1.0) / d
        t1, t2 = (L - o) * inv, (U - o) * inv
    a, b = np.minimum(t1, t2), np.maximum(t1, t2)
    a = np.where(np.isnan(a), -np.inf, a)
    b = np.where(np.isnan(b), np.inf, b)
    return np.nonzero(np.maximum(a.max(-1), 0.0) <= b.min(-1))[0]


def _run(kernel, obj, a, b, block_dim, device):
    m = len(a)
    hits = wp.full((m, CAP), -1, dtype=int, device=device)
    counts, rounds = wp.zeros(m, dtype=int, device=device), wp.zeros(m, dtype=int, device=device)
    wp.launch_tiled(kernel, dim=[m], inputs=[obj.id, wp.array(a, dtype=wp.vec3, device=device),
                                             wp.array(b, dtype=wp.vec3, device=device), hits, counts, rounds],
                    block_dim=block_dim, device=device)
    c = counts.numpy()
    assert c.max() <= CAP
    return [sorted(hits.numpy()[i, :c[i]].tolist()) for i in range(m)], rounds.numpy()


def _check(got, want, rounds, block_dim):
    for k, (g, w) in enumerate(zip(got, want)):
        assert g == sorted(w.tolist()), f"query {k}: {len(g)} hits, {len(w)} expected"  # each once
        # the lanes keep busy: about one hit per lane per batch (one more batch says there are none)
        assert rounds[k] <= 2 * -(-len(w) // block_dim) + 12, (rounds[k], len(w))


BLOCK_DIMS = [32, 64, 100, 128, 256]


@pytest.mark.parametrize("block_dim", BLOCK_DIMS)
def test_box_queries_match_brute_force(device, block_dim):
    rng = np.random.default_rng(block_dim)
    L, U = _boxes(rng, 3000)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device))
    c = rng.random((12, 3)).astype(np.float32) * 10.0
    size = np.concatenate([[0.0], rng.random(9) * 3.0, [6.0, 20.0]]).astype(np.float32)[:, None]
    lo, hi = c - size, c + size  # from nothing and a handful to every box (3000 >> 5 * block_dim)
    got, rounds = _run(collect_aabb, bvh, lo, hi, block_dim, device)
    _check(got, [_overlaps(L, U, lo[k], hi[k]) for k in range(12)], rounds, block_dim)
    assert len(got[-1]) == 3000 and len(got[0]) < len(got[-1])


@pytest.mark.parametrize("block_dim", BLOCK_DIMS)
def test_ray_queries_match_brute_force(device, block_dim):
    rng = np.random.default_rng(100 + block_dim)
    L, U = _boxes(rng, 1500, size=1.5)
    c = np.linspace(0.0, 10.0, 1500)[:, None] + rng.standard_normal((1500, 3)) * 0.2  # along the diagonal
    L, U = np.concatenate([L, c - 0.5]).astype(np.float32), np.concatenate([U, c + 0.5]).astype(np.float32)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device))
    o = (rng.random((10, 3)) * 10.0).astype(np.float32)
    d = rng.standard_normal((10, 3)).astype(np.float32)
    d[0] = (1.0, 0.0, 0.0)  # axis-aligned: zero components
    d[1] = (0.0, 0.0, -3.0)  # unnormalised
    o[2], d[2] = (-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)  # along the diagonal: over 1500 hits (> 5 x block_dim)
    got, rounds = _run(collect_ray, bvh, o, d, block_dim, device)
    _check(got, [_ray_hits(L, U, o[k], d[k]) for k in range(10)], rounds, block_dim)
    assert len(got[2]) > 1500


def _grid_mesh(rng, n):
    """A bumpy n x n height field of 2 (n-1)^2 triangles."""
    x, y = np.meshgrid(np.linspace(0.0, 10.0, n), np.linspace(0.0, 10.0, n), indexing="ij")
    z = rng.random((n, n)) * 2.0
    points = np.stack([x, y, z], -1).reshape(-1, 3).astype(np.float32)
    i = np.arange(n * n).reshape(n, n)
    a, b, c, d = i[:-1, :-1], i[1:, :-1], i[1:, 1:], i[:-1, 1:]
    tris = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return points, tris.astype(np.int32)


@pytest.mark.parametrize("block_dim", [32, 100, 256])
@pytest.mark.parametrize("leaf_size", [1, 4])
def test_mesh_box_queries_match_brute_force(device, block_dim, leaf_size):
    rng = np.random.default_rng(7)
    points, tris = _grid_mesh(rng, 40)  # 3042 faces
    mesh = wp.Mesh(wp.array(points, dtype=wp.vec3, device=device), wp.array(tris.ravel(), dtype=int, device=device),
                   bvh_leaf_size=leaf_size)
    tri = points[tris]
    L, U = tri.min(1), tri.max(1)
    c = (rng.random((6, 3)) * 10.0).astype(np.float32)
    size = np.array([0.0, 0.4, 1.0, 2.5, 4.0, 30.0], dtype=np.float32)[:, None]
    lo, hi = c - size, c + size
    got, rounds = _run(collect_mesh, mesh, lo, hi, block_dim, device)
    _check(got, [_overlaps(L, U, lo[k], hi[k]) for k in range(6)], rounds, block_dim)
    assert len(got[-1]) == len(tris)


@wp.kernel
def per_item_counts(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, counts: wp.array(dtype=int)):
    q = wp.tile_bvh_query_aabb(bvh, lo, hi)
    while wp.tile_query_valid(q):
        i = wp.untile(wp.tile_bvh_query_next(q))
        if i >= 0:
            wp.atomic_add(counts, i, 1)


def _per_item(L, U, lo, hi, block_dim, device, leaf_size=1):
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device),
                 leaf_size=leaf_size)
    counts = wp.zeros(len(L), dtype=int, device=device)
    wp.launch_tiled(per_item_counts, dim=[1], inputs=[bvh.id, wp.vec3(lo), wp.vec3(hi), counts], block_dim=block_dim,
                    device=device)
    want = np.zeros(len(L), dtype=int)
    want[_overlaps(L, U, np.float32(lo), np.float32(hi))] = 1
    return counts.numpy(), want


@pytest.mark.parametrize("leaf_size", [1, 8, 200])
def test_warp_1747_more_hits_than_a_buffer_each_reported_once(device, leaf_size):
    """NVIDIA/warp#1747: past 5 x block_dim hits in one pass (large leaves, a box over every item) Warp loses
    some items and repeats others while the total looks right; per item, each must come back exactly once."""
    rng = np.random.default_rng(leaf_size)
    L, U = _boxes(rng, 2500)
    got, want = _per_item(L, U, (-1.0, -1.0, -1.0), (11.0, 11.0, 11.0), 32, device, leaf_size)
    assert want.sum() == 2500
    np.testing.assert_array_equal(got, want)
    got, want = _per_item(L, U, (2.0, 2.0, 2.0), (8.0, 8.0, 8.0), 32, device, leaf_size)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("block_dim", [1, 3, 31, 48, 96, 100, 1000])
def test_warp_1746_any_block_size(device, block_dim):
    """NVIDIA/warp#1746: a block_dim that is not a power of two made Warp drop hits."""
    n = 777
    L = np.stack([np.arange(n), np.zeros(n), np.zeros(n)], axis=1).astype(np.float32)
    U = L + np.float32(0.5)
    got, want = _per_item(L, U, (-1.0, -1.0, -1.0), (n + 1.0, 1.0, 1.0), block_dim, device)
    assert want.sum() == n
    np.testing.assert_array_equal(got, want)
    got, want = _per_item(L, U, (100.2, -1.0, -1.0), (400.7, 1.0, 1.0), block_dim, device)
    np.testing.assert_array_equal(got, want)


@wp.kernel
def lanes_of_a_launch(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, reports: wp.array(dtype=int),
                      lanes: wp.array(dtype=int)):
    i = wp.tid()
    q = wp.tile_bvh_query_aabb(bvh, lo, hi)
    while wp.tile_query_valid(q):
        item = wp.untile(wp.tile_bvh_query_next(q))
        if item >= 0:
            wp.atomic_add(reports, item, 1)
            wp.atomic_add(lanes, i, 1)


def test_partial_blocks_hand_hits_to_lanes_inside_the_launch(device):
    """wp.launch(dim=100, block_dim=64): the second block has 36 lanes; each block reports every hit once."""
    rng = np.random.default_rng(3)
    L, U = _boxes(rng, 800)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device))
    lo, hi = np.full(3, 1.0, np.float32), np.full(3, 8.0, np.float32)
    reports, lanes = wp.zeros(800, dtype=int, device=device), wp.zeros(100, dtype=int, device=device)
    wp.launch(lanes_of_a_launch, dim=100, inputs=[bvh.id, wp.vec3(lo), wp.vec3(hi), reports, lanes],
              block_dim=64, device=device)
    want = np.zeros(800, dtype=int)
    want[_overlaps(L, U, lo, hi)] = 2  # two blocks
    np.testing.assert_array_equal(reports.numpy(), want)
    per_lane = lanes.numpy()
    assert per_lane[:64].sum() == per_lane[64:].sum() == want.sum() // 2
    assert per_lane[64:].min() > 0  # the partial block's lanes all worked


@wp.kernel
def some_lanes_return(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, quit: wp.array(dtype=int),
                      reports: wp.array(dtype=int)):
    i = wp.tid()
    if quit[i] == 1:
        return  # before the query: the block goes on without this lane
    q = wp.tile_bvh_query_aabb(bvh, lo, hi)
    n = int(0)
    while wp.tile_query_valid(q):
        item = wp.untile(wp.tile_bvh_query_next(q))
        if item >= 0:
            wp.atomic_add(reports, item, 1)
            n += 1
            if quit[i] == 2 and n == 3:
                return  # in the middle of the query: what this lane still held goes to the others


def test_lanes_that_return_are_handed_nothing(device):
    rng = np.random.default_rng(4)
    L, U = _boxes(rng, 1200)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device))
    lo, hi = np.full(3, 0.5, np.float32), np.full(3, 9.0, np.float32)
    quit = rng.integers(0, 3, 192)
    quit[128:] = 1  # the third block: every lane returns before the query (which must still end)
    reports = wp.zeros(1200, dtype=int, device=device)
    wp.launch(some_lanes_return, dim=192, block_dim=64, device=device,
              inputs=[bvh.id, wp.vec3(lo), wp.vec3(hi), wp.array(quit, dtype=int, device=device), reports])
    want = np.zeros(1200, dtype=int)
    want[_overlaps(L, U, lo, hi)] = 2  # the first two blocks: each hit once
    np.testing.assert_array_equal(reports.numpy(), want)


@wp.kernel
def queries_in_a_loop(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
                      start: wp.vec3, direction: wp.vec3, reports: wp.array2d(dtype=int)):
    for k in range(lo.shape[0]):
        q = wp.tile_bvh_query_aabb(bvh, lo[k], hi[k])
        while wp.tile_query_valid(q):
            item = wp.untile(wp.tile_bvh_query_next(q))
            if item >= 0:
                wp.atomic_add(reports, k, item, 1)
    r = wp.tile_bvh_query_ray(bvh, start, direction)  # a second query after the first ones
    while wp.tile_query_valid(r):
        item = wp.untile(wp.tile_bvh_query_next(r))
        if item >= 0:
            wp.atomic_add(reports, lo.shape[0], item, 1)


def test_queries_one_after_another(device):
    rng = np.random.default_rng(5)
    L, U = _boxes(rng, 1500)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device))
    c = (rng.random((4, 3)) * 10.0).astype(np.float32)
    s = np.array([[0.5], [2.0], [4.0], [10.0]], dtype=np.float32)
    o, d = np.zeros(3, np.float32), np.ones(3, np.float32)
    reports = wp.zeros((5, 1500), dtype=int, device=device)
    wp.launch_tiled(queries_in_a_loop, dim=[1], block_dim=96, device=device,
                    inputs=[bvh.id, wp.array(c - s, dtype=wp.vec3, device=device),
                            wp.array(c + s, dtype=wp.vec3, device=device), wp.vec3(o), wp.vec3(d), reports])
    want = np.zeros((5, 1500), dtype=int)
    for k in range(4):
        want[k, _overlaps(L, U, c[k] - s[k], c[k] + s[k])] = 1
    want[4, _ray_hits(L, U, o, d)] = 1
    np.testing.assert_array_equal(reports.numpy(), want)


@wp.kernel
def batches(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, valid: wp.array(dtype=int), hits_per_batch: wp.array(dtype=int)):
    _, lane = wp.tid()
    q = wp.tile_bvh_query_aabb(bvh, lo, hi)
    k = int(0)
    before = wp.tile_query_valid(q)  # true before the first batch
    if lane == 0:
        valid[0] = int(before)
    while wp.tile_query_valid(q):
        t = wp.tile_bvh_query_next(q)
        k += 1
        if wp.untile(t) >= 0:
            wp.atomic_add(hits_per_batch, k, 1)
    after = wp.tile_query_valid(q)
    if lane == 0:
        valid[1] = int(after)
        valid[2] = k


@pytest.mark.parametrize("box, expected", [((20.0, 21.0), 0), ((-1.0, 11.0), 700)])
def test_batches_and_validity(device, box, expected):
    """Valid before the first batch, and until a batch without hits; a miss still takes one batch."""
    rng = np.random.default_rng(9)
    L, U = _boxes(rng, 700)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device))
    valid, per_batch = wp.zeros(3, dtype=int, device=device), wp.zeros(64, dtype=int, device=device)
    wp.launch_tiled(batches, dim=[1], inputs=[bvh.id, wp.vec3(box[0]), wp.vec3(box[1]), valid, per_batch],
                    block_dim=48, device=device)
    v, b = valid.numpy(), per_batch.numpy()
    rounds = v[2]
    assert v[0] == 1 and v[1] == 0 and b.sum() == expected
    assert b[rounds] == 0 and b[1:rounds].min(initial=1) > 0  # the last batch is empty, the others not
    assert rounds == 1 if expected == 0 else rounds <= 2 * -(-expected // 48) + 12


def _deprecated_names():
    # a kernel object of its own a call: the names warn when a kernel is translated, which a second
    # device's launch of the same object would not do again
    @wp.kernel
    def deprecated_names(bvh: wp.uint64, mesh: wp.uint64, lo: wp.vec3, hi: wp.vec3, start: wp.vec3, direction: wp.vec3,
                         reports: wp.array2d(dtype=int)):
        q = wp.bvh_query_aabb_tiled(bvh, lo, hi)
        while wp.tile_query_valid(q):
            i = wp.untile(wp.bvh_query_next_tiled(q))
            if i >= 0:
                wp.atomic_add(reports, 0, i, 1)
        r = wp.bvh_query_ray_tiled(bvh, start, direction)
        while wp.tile_query_valid(r):
            i = wp.untile(wp.bvh_query_next_tiled(r))
            if i >= 0:
                wp.atomic_add(reports, 1, i, 1)
        m = wp.mesh_query_aabb_tiled(mesh, lo, hi)
        while wp.tile_query_valid(m):
            i = wp.untile(wp.mesh_query_aabb_next_tiled(m))
            if i >= 0:
                wp.atomic_add(reports, 2, i, 1)

    return deprecated_names


def test_deprecated_names(device):
    rng = np.random.default_rng(11)
    L, U = _boxes(rng, 400)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device=device), wp.array(U, dtype=wp.vec3, device=device))
    points, tris = _grid_mesh(rng, 15)
    mesh = wp.Mesh(wp.array(points, dtype=wp.vec3, device=device), wp.array(tris.ravel(), dtype=int, device=device))
    lo, hi, o, d = (np.array(v, np.float32) for v in ((2, 2, 0), (6, 6, 3), (0, 0, 0), (1, 1, 0.1)))
    reports = wp.zeros((3, 400), dtype=int, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wp.launch_tiled(_deprecated_names(), dim=[1], block_dim=64, device=device,
                        inputs=[bvh.id, mesh.id, wp.vec3(lo), wp.vec3(hi), wp.vec3(o), wp.vec3(d), reports])
    said = {str(w.message).split("()")[0] for w in caught if w.category is DeprecationWarning}
    assert said >= {f"wp.{n}" for n in ("bvh_query_aabb_tiled", "bvh_query_ray_tiled", "bvh_query_next_tiled",
                                        "mesh_query_aabb_tiled", "mesh_query_aabb_next_tiled")}, said
    want = np.zeros((3, 400), dtype=int)
    want[0, _overlaps(L, U, lo, hi)] = 1
    want[1, _ray_hits(L, U, o, d)] = 1
    tri = points[tris]
    want[2, _overlaps(tri.min(1), tri.max(1), lo, hi)] = 1
    np.testing.assert_array_equal(reports.numpy(), want)


@wp.kernel
def one_lane_blocks(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, reports: wp.array(dtype=int)):
    q = wp.tile_bvh_query_aabb(bvh, lo, hi)
    while wp.tile_query_valid(q):
        i = wp.untile(wp.tile_bvh_query_next(q))
        if i >= 0:
            wp.atomic_add(reports, i, 1)


def test_one_lane_blocks_on_the_cpu(monkeypatch):
    """Warp's CPU default (enable_cpu_blocks False): blocks of one lane, which still sees every hit."""
    monkeypatch.setattr(wp.config, "enable_cpu_blocks", False)
    rng = np.random.default_rng(13)
    L, U = _boxes(rng, 300)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device="cpu"), wp.array(U, dtype=wp.vec3, device="cpu"))
    reports = wp.zeros(300, dtype=int, device="cpu")
    wp.launch_tiled(one_lane_blocks, dim=[3], inputs=[bvh.id, wp.vec3(2.0), wp.vec3(7.0), reports], block_dim=64,
                    device="cpu")
    want = np.zeros(300, dtype=int)
    want[_overlaps(L, U, np.full(3, 2.0, np.float32), np.full(3, 7.0, np.float32))] = 3
    np.testing.assert_array_equal(reports.numpy(), want)


@wp.kernel
def gradient_in_the_loop(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, w: wp.array(dtype=float),
                         out: wp.array(dtype=float)):
    q = wp.tile_bvh_query_aabb(bvh, lo, hi)
    while wp.tile_query_valid(q):
        i = wp.untile(wp.tile_bvh_query_next(q))
        if i >= 0:
            wp.atomic_add(out, 0, w[i] * w[i])  # <- error


@wp.kernel
def gradient_beside_the_loop(bvh: wp.uint64, x: wp.array(dtype=float), out: wp.array(dtype=float),
                             counts: wp.array(dtype=int)):
    b, lane = wp.tid()
    q = wp.tile_bvh_query_ray(bvh, wp.vec3(0.0), wp.vec3(1.0))
    while wp.tile_query_valid(q):
        i = wp.untile(wp.tile_bvh_query_next(q))
        if i >= 0:
            wp.atomic_add(counts, i, 1)
    if lane == 0:
        out[b] = x[b] * x[b]


def test_gradients_and_query_loops():
    """The reverse pass cannot replay a query loop batch by batch (the query's state is in shared memory):
    a gradient inside one raises, naming the lines; gradients elsewhere in the kernel are exact."""
    rng = np.random.default_rng(2)
    L, U = _boxes(rng, 300)
    bvh = wp.Bvh(wp.array(L, dtype=wp.vec3, device="cpu"), wp.array(U, dtype=wp.vec3, device="cpu"))
    w = wp.array(rng.random(300, dtype=np.float32), requires_grad=True, device="cpu")
    out = wp.zeros(1, dtype=float, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(gradient_in_the_loop, dim=[1], inputs=[bvh.id, wp.vec3(2.0), wp.vec3(6.0), w], outputs=[out],
                        block_dim=32, device="cpu")
    with pytest.raises(wp.AutodiffError, match=r"tile_bvh_query_next\(\) \(line \d+\) drives this loop") as info:
        tape.backward(grads={out: wp.ones(1, dtype=float, device="cpu")})
    assert "w[i] * w[i]" in str(info.value)
    x = wp.array(np.array([1.5, -2.0], dtype=np.float32), requires_grad=True, device="cpu")
    out, counts = wp.zeros(2, dtype=float, requires_grad=True, device="cpu"), wp.zeros(300, dtype=int, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(gradient_beside_the_loop, dim=[2], inputs=[bvh.id, x], outputs=[out, counts], block_dim=32,
                        device="cpu")
    tape.backward(grads={out: wp.ones(2, dtype=float, device="cpu")})
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -4.0])
    want = np.zeros(300, dtype=int)
    want[_ray_hits(L, U, np.zeros(3, np.float32), np.ones(3, np.float32))] = 2
    np.testing.assert_array_equal(counts.numpy(), want)


# ---- bad input: a KernelTypeError at the user's line ----------------------------------------------------


@wp.kernel
def low_not_a_vector(bvh: wp.uint64, hi: wp.vec3):
    q = wp.tile_bvh_query_aabb(bvh, 1.0, hi)  # <- error
    while wp.tile_query_valid(q):
        wp.tile_bvh_query_next(q)


@wp.kernel
def id_not_an_integer(start: wp.vec3, direction: wp.vec3):
    q = wp.tile_bvh_query_ray(start, start, direction)  # <- error
    while wp.tile_query_valid(q):
        wp.tile_bvh_query_next(q)


@wp.kernel
def mesh_query_advanced_as_bvh(mesh: wp.uint64, lo: wp.vec3, hi: wp.vec3):
    q = wp.tile_mesh_query_aabb(mesh, lo, hi)
    while wp.tile_query_valid(q):
        wp.tile_bvh_query_next(q)  # <- error


@wp.kernel
def next_of_an_int(x: int):
    wp.tile_mesh_query_aabb_next(x)  # <- error


@wp.kernel
def valid_of_a_tile(a: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=4)
    if wp.tile_query_valid(t):  # <- error
        wp.tile_store(a, t)


@wp.kernel
def missing_argument(bvh: wp.uint64, lo: wp.vec3):
    q = wp.tile_bvh_query_aabb(bvh, lo)  # <- error
    while wp.tile_query_valid(q):
        wp.tile_bvh_query_next(q)


@wp.kernel
def query_in_a_lane_branch(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3, flags: wp.array(dtype=int)):
    i = wp.tid()
    if flags[i] > 0:
        q = wp.tile_bvh_query_aabb(bvh, lo, hi)  # <- error
        while wp.tile_query_valid(q):
            wp.tile_bvh_query_next(q)


V = wp.vec3(0.0)


@pytest.mark.parametrize("kernel, inputs, fragment", [
    (low_not_a_vector, [0, V], "low must be a vec3"),
    (id_not_an_integer, [V, V], "id must be an object id"),
    (mesh_query_advanced_as_bvh, [0, V, V], "expects a BvhQueryTiled (from tile_bvh_query_aabb or tile_bvh_query_ray), "
                                            "got (MeshQueryAABBTiled)"),
    (next_of_an_int, [1], "expects a MeshQueryAABBTiled"),
    (valid_of_a_tile, [wp.zeros(4, dtype=float)], "expects a BvhQueryTiled or MeshQueryAABBTiled"),
    (missing_argument, [0, V], "missing argument 'high'"),
    (query_in_a_lane_branch, [0, V, V, wp.zeros(1, dtype=int)], "every lane must reach"),
])
def test_bad_input_is_located(kernel, inputs, fragment):
    check_located(kernel, wp.KernelTypeError, fragment, inputs=inputs)


def test_query_types_are_exported():
    assert wp.BvhQueryTiled is not wp.MeshQueryAABBTiled
    assert "block-cooperative" in wp.BvhQueryTiled.__doc__
