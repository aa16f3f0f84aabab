"""wp.HashGrid: neighbour sets against a float64 brute force and warp-lang, on random point clouds
(negative coordinates and wrapped buckets included), every precision, groups, both loop spellings,
two queries alive at once, the sorted order, and bad input."""
import os

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_both, need_warp

THIS_FILE = os.path.abspath(__file__)

CAP = 256  # candidates collected per point


@wp.kernel
def collect(grid: wp.uint64, radius: float, points: wp.array(dtype=wp.vec3), found: wp.array2d(dtype=int),
            counts: wp.array(dtype=int)):
    # every candidate the query yields, unfiltered (tests the cells visited, not only the hits)
    i = wp.tid()
    query = wp.hash_grid_query(grid, points[i], radius)
    index = int(0)
    n = int(0)
    while wp.hash_grid_query_next(query, index):
        if n < CAP:
            found[i, n] = index
        n += 1
    counts[i] = n


@wp.kernel
def near_count(grid: wp.uint64, radius: float, points: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int)):
    i = wp.tid()
    p = points[i]
    n = int(0)
    for index in wp.hash_grid_query(grid, p, radius):
        if wp.length(p - points[index]) <= radius:
            n += 1
    counts[i] = n


def _cloud(rng, n, low, high):
    return (rng.random((n, 3)) * (high - low) + low).astype(np.float32)


def _brute(points, radius):
    p = points.astype(np.float64)
    d = np.linalg.norm(p[:, None] - p[None], axis=-1)
    return d <= radius


@pytest.mark.parametrize("dims", [(16, 16, 16), (3, 5, 7), (1, 1, 1)])
def test_candidates_cover_every_neighbour_once(device, dims):
    """Each candidate is yielded at most once, and every point within the radius is among them,
    with points spread over negative and positive coordinates (wrapped buckets in small grids)."""
    rng = np.random.default_rng(1)
    pts = _cloud(rng, 600, -3.0, 2.0)
    radius = 0.35
    grid = wp.HashGrid(*dims, device=device)
    points = wp.array(pts, dtype=wp.vec3, device=device)
    grid.build(points, radius)
    found = wp.full((len(pts), CAP), -1, dtype=int, device=device)
    counts = wp.zeros(len(pts), dtype=int, device=device)
    wp.launch(collect, dim=len(pts), inputs=[grid.id, radius, points, found, counts], device=device)
    near = _brute(pts, radius)
    f, c = found.numpy(), counts.numpy()
    if dims != (1, 1, 1):  # one bucket holds everything: every point is a candidate
        assert c.max() <= CAP
    for i in range(len(pts)):
        got = f[i, :min(c[i], CAP)]
        assert len(set(got.tolist())) == len(got), f"point {i}: a candidate repeats"
        if c[i] <= CAP:
            assert set(np.flatnonzero(near[i])) <= set(got.tolist()), f"point {i} misses a neighbour"
    if dims == (1, 1, 1):
        assert (c == len(pts)).all()


@pytest.mark.parametrize("dtype", [wp.float16, wp.float32, wp.float64])
def test_neighbour_counts_every_precision(device, dtype):
    vec = wp.types.vector(3, dtype)

    @wp.kernel
    def count(grid: wp.uint64, radius: dtype, points: wp.array(dtype=vec), counts: wp.array(dtype=int)):
        i = wp.tid()
        p = points[i]
        n = int(0)
        for index in wp.hash_grid_query(grid, p, radius):
            d = p - points[index]
            if wp.float64(wp.dot(d, d)) <= wp.float64(radius) * wp.float64(radius):
                n += 1
        counts[i] = n

    rng = np.random.default_rng(2)
    pts = _cloud(rng, 500, -2.0, 2.0).astype(dtype._np_)
    radius = 0.4
    grid = wp.HashGrid(8, 8, 8, device=device, dtype=dtype)
    points = wp.array(pts, dtype=vec, device=device)
    grid.build(points, radius)
    counts = wp.zeros(len(pts), dtype=int, device=device)
    wp.launch(count, dim=len(pts), inputs=[grid.id, dtype(radius), points, counts], device=device)
    p64 = pts.astype(np.float64)
    d2 = ((p64[:, None] - p64[None]) ** 2).sum(-1)
    if dtype is wp.float16:  # the kernel's dot is in half precision: allow points at the boundary
        want = (d2 <= radius**2).sum(1)
        assert np.abs(counts.numpy() - want).max() <= 2
    else:
        np.testing.assert_array_equal(counts.numpy(), (d2 <= np.float64(dtype._np_.type(radius)) ** 2).sum(1))


KERNELS = """
import WP as wp

@wp.kernel
def near_count(grid: wp.uint64, radius: float, points: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int)):
    i = wp.tid()
    p = points[i]
    query = wp.hash_grid_query(grid, p, radius)
    index = int(0)
    n = int(0)
    while wp.hash_grid_query_next(query, index):
        if wp.length(p - points[index]) <= radius:
            n += 1
    counts[i] = n
"""


def test_matches_warp():
    """The same kernel text under warp-lang and tilewarp gives the same neighbour counts (CPU)."""
    mods = load_both(KERNELS)
    need_warp(mods)
    rng = np.random.default_rng(3)
    pts = _cloud(rng, 2000, -5.0, 5.0)
    results = []
    for mod in mods:
        w = mod.wp
        w.init()
        grid = w.HashGrid(32, 32, 32, device="cpu")
        points = w.array(pts, dtype=w.vec3, device="cpu")
        grid.build(points, 0.5)
        counts = w.zeros(len(pts), dtype=int, device="cpu")
        w.launch(mod.near_count, dim=len(pts), inputs=[grid.id, 0.5, points, counts], device="cpu")
        results.append(counts.numpy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], _brute(pts, 0.5).sum(1))


def test_negative_coordinates_use_floor(device):
    """NVIDIA/warp#1256: truncation toward zero put -0.3 in cell 0; it belongs to cell -1, which
    wraps to bucket 3 of 4, next to the point at 3.9 (0.2 apart across the period)."""

    @wp.kernel
    def periodic(grid: wp.uint64, radius: float, period: float, points: wp.array(dtype=wp.vec3),
                 counts: wp.array(dtype=int)):
        i = wp.tid()
        p = points[i]
        n = int(0)
        for index in wp.hash_grid_query(grid, p, radius):
            d = p - points[index]
            x = d[0] - period * wp.round(d[0] / period)
            if wp.abs(x) <= radius and wp.abs(d[1]) <= radius and wp.abs(d[2]) <= radius:
                n += 1
        counts[i] = n

    grid = wp.HashGrid(4, 4, 4, device=device)
    points = wp.array([[-0.3, 0.0, 0.0], [3.9, 0.0, 0.0]], dtype=wp.vec3, device=device)
    grid.build(points, 1.0)
    counts = wp.zeros(2, dtype=int, device=device)
    wp.launch(periodic, dim=2, inputs=[grid.id, 0.5, 4.0, points, counts], device=device)
    np.testing.assert_array_equal(counts.numpy(), [2, 2])


def test_groups(device):
    """A grouped query sees only its group's points; an ungrouped query on the same grid sees all."""

    @wp.kernel
    def grouped(grid: wp.uint64, radius: float, points: wp.array(dtype=wp.vec3), groups: wp.array(dtype=int),
                same: wp.array(dtype=int), every: wp.array(dtype=int)):
        i = wp.tid()
        p = points[i]
        n = int(0)
        for index in wp.hash_grid_query(grid, p, radius, groups[i]):
            if wp.length(p - points[index]) <= radius:
                n += 1
        same[i] = n
        m = int(0)
        for index in wp.hash_grid_query(grid, p, radius):
            if wp.length(p - points[index]) <= radius:
                m += 1
        every[i] = m

    rng = np.random.default_rng(4)
    pts = _cloud(rng, 800, -1.0, 1.0)
    g = rng.integers(-3, 4, size=len(pts)).astype(np.int32)
    g[:5] = [2**31 - 1, -(2**31), 0, 2**31 - 1, -(2**31)]  # every int32 is a group id
    grid = wp.HashGrid(16, 16, 16, device=device)
    points = wp.array(pts, dtype=wp.vec3, device=device)
    groups = wp.array(g, dtype=int, device=device)
    grid.build(points, 0.3, groups=groups)
    same = wp.zeros(len(pts), dtype=int, device=device)
    every = wp.zeros(len(pts), dtype=int, device=device)
    wp.launch(grouped, dim=len(pts), inputs=[grid.id, 0.3, points, groups, same, every], device=device)
    near = _brute(pts, 0.3)
    np.testing.assert_array_equal(same.numpy(), (near & (g[:, None] == g[None])).sum(1))
    np.testing.assert_array_equal(every.numpy(), near.sum(1))


def test_two_queries_alive_at_once(device):
    """A query inside another query's loop (NVIDIA/warp#1258 for BVHs): each keeps its own state."""

    @wp.kernel
    def two_hops(grid: wp.uint64, radius: float, points: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int)):
        i = wp.tid()
        p = points[i]
        n = int(0)
        for j in wp.hash_grid_query(grid, p, radius):
            if wp.length(p - points[j]) <= radius:
                q = points[j]
                for k in wp.hash_grid_query(grid, q, radius):
                    if wp.length(q - points[k]) <= radius:
                        n += 1
        counts[i] = n

    rng = np.random.default_rng(5)
    pts = _cloud(rng, 300, -1.0, 1.0)
    grid = wp.HashGrid(8, 8, 8, device=device)
    points = wp.array(pts, dtype=wp.vec3, device=device)
    grid.build(points, 0.25)
    counts = wp.zeros(len(pts), dtype=int, device=device)
    wp.launch(two_hops, dim=len(pts), inputs=[grid.id, 0.25, points, counts], device=device)
    near = _brute(pts, 0.25).astype(np.int64)
    np.testing.assert_array_equal(counts.numpy(), near @ near.sum(1))


def test_sorted_order_and_rebuild(device):
    """hash_grid_point_id is a permutation ordered by bucket, stable within a bucket; a rebuild with
    fewer, moved points replaces the old contents; -1 before any build."""

    @wp.kernel
    def ids(grid: wp.uint64, out: wp.array(dtype=int)):
        i = wp.tid()
        out[i] = wp.hash_grid_point_id(grid, i)

    grid = wp.HashGrid(4, 4, 4, device=device)
    before = wp.zeros(3, dtype=int, device=device)
    wp.launch(ids, dim=3, inputs=[grid.id, before], device=device)
    np.testing.assert_array_equal(before.numpy(), [-1, -1, -1])
    rng = np.random.default_rng(6)
    for n in (1000, 300):
        pts = _cloud(rng, n, -4.0, 4.0)
        grid.build(wp.array(pts, dtype=wp.vec3, device=device), 1.0)
        out = wp.zeros(n, dtype=int, device=device)
        wp.launch(ids, dim=n, inputs=[grid.id, out], device=device)
        perm = out.numpy()
        assert sorted(perm.tolist()) == list(range(n))
        c = np.floor(pts.astype(np.float64)).astype(np.int64) % 4
        bucket = (c[:, 2] * 4 + c[:, 1]) * 4 + c[:, 0]
        np.testing.assert_array_equal(perm, np.argsort(bucket, kind="stable"))


def test_repeated_builds_of_the_same_arrays(device):
    """A simulation's loop: the same points array rebuilt every frame with new contents (on CUDA the
    third such build on is one replayed graph), then another radius and another array: each build's
    neighbour counts are the brute-force ones."""
    rng = np.random.default_rng(9)
    grid = wp.HashGrid(16, 16, 16, device=device)
    pts = wp.zeros(700, dtype=wp.vec3, device=device)
    counts = wp.zeros(700, dtype=int, device=device)
    other = wp.array(_cloud(rng, 500, -1.0, 1.0), dtype=wp.vec3, device=device)
    for frame, (points, radius) in enumerate([(pts, 0.2)] * 5 + [(pts, 0.3), (pts, 0.3), (other, 0.3), (pts, 0.3)]):
        if points is pts:
            pts.assign(_cloud(rng, 700, -1.0, 1.0))
        grid.build(points, radius)
        n = points.shape[0]
        wp.launch(near_count, dim=n, inputs=[grid.id, radius, points, counts], device=device)
        want = _brute(points.numpy(), radius).sum(axis=1)
        np.testing.assert_array_equal(counts.numpy()[:n], want, err_msg=f"build {frame}")
        if frame == 4 and device.startswith("cuda") and wp.is_mempool_enabled(device):
            assert grid._replay.graphs == 1  # the repeats were replayed


def test_builds_that_swap_two_arrays(device):
    """A simulation's step swaps its position buffers: builds alternate between two arrays (on CUDA
    each gets its own replayed graph after its second build) and every build's neighbour counts are
    the brute-force ones of the array it was given."""
    rng = np.random.default_rng(4)
    grid = wp.HashGrid(16, 16, 16, device=device)
    a, b = (wp.zeros(600, dtype=wp.vec3, device=device) for _ in range(2))
    counts = wp.zeros(600, dtype=int, device=device)
    for step in range(8):
        points = (a, b)[step % 2]
        points.assign(_cloud(rng, 600, -1.0, 1.0))
        grid.build(points, 0.25)
        wp.launch(near_count, dim=600, inputs=[grid.id, 0.25, points, counts], device=device)
        np.testing.assert_array_equal(counts.numpy(), _brute(points.numpy(), 0.25).sum(axis=1), err_msg=f"step {step}")
    if device.startswith("cuda") and wp.is_mempool_enabled(device):
        assert grid._replay.graphs == 2


def _reference_build(pts, width, dims):
    """(sorted order, cell starts, cell ends) of a build, in float64 NumPy: floor(p / width) per axis
    (NaN -> 0, clamped to int32), wrapped by the dims, ordered by bucket and stable within one."""
    c = np.floor(pts.astype(np.float64) * (1.0 / width))
    c = np.clip(np.where(np.isnan(c), 0.0, c), -2.0**31, 2.0**31 - 1).astype(np.int64) % np.array(dims)
    bucket = (c[:, 2] * dims[1] + c[:, 1]) * dims[0] + c[:, 0]
    order = np.argsort(bucket, kind="stable")
    cells, first, count = np.unique(bucket[order], return_index=True, return_counts=True)
    starts, ends = np.zeros(np.prod(dims), np.int32), np.zeros(np.prod(dims), np.int32)
    starts[cells], ends[cells] = first, first + count
    return order, starts, ends


def _awkward_cloud(rng, n, width):
    """Points across negative and positive coordinates, some on cell faces exactly, a few NaN, +-inf,
    -0 or too large for int32 cells."""
    pts = (rng.random((n, 3)) * 12.0 - 5.0).astype(np.float32)
    on_faces = rng.random(n) < 0.1
    pts[on_faces] = (np.round(pts[on_faces] / width) * width).astype(np.float32)
    odd = rng.integers(0, n, max(1, n // 40))
    pts[odd, rng.integers(0, 3, len(odd))] = rng.choice([np.nan, np.inf, -np.inf, 3e38, -3e38, 1e10, -1e10, -0.0],
                                                        len(odd))
    return pts


# bucket bits: 21 (two halves of 10 and 11), 22, 6 and 13 (uneven grids), 24 (past the CPU split: the
# radix sort); one point and few points (partitions of a handful, sorted by insertion)
@pytest.mark.parametrize("dims,n", [((128, 128, 128), 20000), ((256, 128, 128), 5000), ((3, 5, 4), 3000),
                                    ((37, 11, 19), 7000), ((256, 256, 256), 3000), ((128, 128, 128), 1),
                                    ((64, 64, 64), 40)])
def test_build_matches_reference(device, dims, n):
    """The sorted order and every cell's run equal a float64 reference bit for bit, including points
    with NaN, infinite, huge or negative coordinates; rebuilds with more, then fewer points clear
    the cells the previous build filled."""
    rng = np.random.default_rng(sum(dims) + n)
    grid = wp.HashGrid(*dims, device=device)
    for size, width in ((n, 0.37), (2 * n + 3, 0.05), (max(1, n // 3), 1.0)):
        pts = _awkward_cloud(rng, size, width)
        grid.build(wp.array(pts, dtype=wp.vec3, device=device), width)
        order, starts, ends = _reference_build(pts, width, dims)
        np.testing.assert_array_equal(grid._ids.numpy()[:size], order)
        np.testing.assert_array_equal(grid._starts.numpy(), starts)
        np.testing.assert_array_equal(grid._ends.numpy(), ends)


def test_build_strided_and_double_points(device):
    """A strided 1-d points array and float64 points bucket as their float64 reference."""
    rng = np.random.default_rng(12)
    pts = _awkward_cloud(rng, 6000, 0.1)
    grid = wp.HashGrid(64, 32, 64, device=device)
    grid.build(wp.array(pts, dtype=wp.vec3, device=device)[::2], 0.1)
    order, starts, ends = _reference_build(pts[::2], 0.1, (64, 32, 64))
    np.testing.assert_array_equal(grid._ids.numpy()[:3000], order)
    np.testing.assert_array_equal(grid._starts.numpy(), starts)
    grid64 = wp.HashGrid(64, 32, 64, device=device, dtype=wp.float64)
    pts64 = pts.astype(np.float64) * 1.0000001
    grid64.build(wp.array(pts64, dtype=wp.vec3d, device=device), 0.1)
    order, starts, ends = _reference_build(pts64, 0.1, (64, 32, 64))
    np.testing.assert_array_equal(grid64._ids.numpy()[:6000], order)
    np.testing.assert_array_equal(grid64._ends.numpy(), ends)


def test_multidimensional_points(device):
    rng = np.random.default_rng(7)
    pts = _cloud(rng, 200, 0.0, 1.0)
    grid = wp.HashGrid(8, 8, 8, device=device)
    points2d = wp.array(pts.reshape(10, 20, 3), dtype=wp.vec3, device=device)
    grid.build(points2d, 0.2)
    flat = wp.array(pts, dtype=wp.vec3, device=device)
    counts = wp.zeros(len(pts), dtype=int, device=device)
    wp.launch(near_count, dim=len(pts), inputs=[grid.id, 0.2, flat, counts], device=device)
    np.testing.assert_array_equal(counts.numpy(), _brute(pts, 0.2).sum(1))


def test_empty_and_unbuilt(device):
    """An unbuilt grid and an empty build both answer every query with nothing."""
    pts = wp.array([[0.0, 0.0, 0.0]], dtype=wp.vec3, device=device)
    counts = wp.full(1, 7, dtype=int, device=device)
    grid = wp.HashGrid(4, 4, 4, device=device)
    wp.launch(near_count, dim=1, inputs=[grid.id, 1.0, pts, counts], device=device)
    assert counts.numpy()[0] == 0
    grid.build(wp.zeros(0, dtype=wp.vec3, device=device), 1.0)
    wp.launch(near_count, dim=1, inputs=[grid.id, 1.0, pts, counts], device=device)
    assert counts.numpy()[0] == 0


# ---- bad input -------------------------------------------------------------------------------------


def test_bad_construction_and_build():
    with pytest.raises(TypeError, match="dtype"):
        wp.HashGrid(4, 4, 4, dtype=wp.int32)
    with pytest.raises(TypeError, match="integers"):
        wp.HashGrid(4.5, 4, 4)
    with pytest.raises(RuntimeError, match="positive"):
        wp.HashGrid(0, 4, 4)
    with pytest.raises(RuntimeError, match="exceeds"):
        wp.HashGrid(1291, 1291, 1291)
    with wp.ScopedDevice("cpu"):
        grid = wp.HashGrid(4, 4, 4)
        with pytest.raises(TypeError, match="vec3"):
            grid.build(wp.zeros(3, dtype=wp.vec3d), 1.0)
        with pytest.raises(TypeError, match="wp.array"):
            grid.build(np.zeros((3, 3), np.float32), 1.0)
        for bad in (0.0, -1.0, float("nan")):
            with pytest.raises(ValueError, match="positive"):
                grid.build(wp.zeros(3, dtype=wp.vec3), bad)
        with pytest.raises(RuntimeError, match="int32"):
            grid.build(wp.zeros(3, dtype=wp.vec3), 1.0, groups=wp.zeros(3, dtype=wp.float32))
        with pytest.raises(RuntimeError, match="same length"):
            grid.build(wp.zeros(3, dtype=wp.vec3), 1.0, groups=wp.zeros(4, dtype=wp.int32))


@wp.kernel
def k_next_on_element(grid: wp.uint64, out: wp.array(dtype=int)):
    query = wp.hash_grid_query(grid, wp.vec3(0.0), 1.0)
    while wp.hash_grid_query_next(query, out[0]):  # <- error
        pass


@wp.kernel
def k_query_vec2(grid: wp.uint64, out: wp.array(dtype=int)):
    query = wp.hash_grid_query(grid, wp.vec2(0.0), 1.0)  # <- error  # noqa: F841


@pytest.mark.parametrize("kernel, fragment", [(k_next_on_element, "local variable"), (k_query_vec2, "vec3")])
def test_kernel_errors_name_the_line(kernel, fragment):
    import inspect

    lines, first = inspect.getsourcelines(kernel)
    line = first + next(k for k, text in enumerate(lines) if "# <- error" in text)
    with pytest.raises(wp.KernelTypeError) as info:
        wp.launch(kernel, dim=1, inputs=[0, wp.zeros(1, dtype=int)], device="cpu")
    msg = str(info.value)
    assert f"{THIS_FILE}:{line}:" in msg and fragment in msg, msg


# ---- the order of the candidates -------------------------------------------------------------------

ORDER_CAP = 1024  # candidates recorded per query


@wp.kernel
def collect_order(grid: wp.uint64, radius: float, queries: wp.array(dtype=wp.vec3), groups: wp.array(dtype=int),
                  grouped: int, found: wp.array2d(dtype=int), counts: wp.array(dtype=int)):
    # every candidate, in the order the query yields it; a grouped query when `grouped`
    i = wp.tid()
    n = int(0)
    if grouped:
        for index in wp.hash_grid_query(grid, queries[i], radius, groups[i]):
            if n < ORDER_CAP:
                found[i, n] = index
            n += 1
    else:
        for index in wp.hash_grid_query(grid, queries[i], radius):
            if n < ORDER_CAP:
                found[i, n] = index
            n += 1
    counts[i] = n


def _cells(x, inv):
    """floor(x * inv) per coordinate in float64 (NaN -> 0, clamped to int32), as the build and queries do."""
    c = np.floor(np.asarray(x, np.float64) * inv)
    return np.clip(np.where(np.isnan(c), 0.0, c), -2.0**31, 2.0**31 - 1).astype(np.int64)


def _reference_order(pts, point_groups, width, dims, query, radius, group):
    """The candidates of one query in order: the physical cells of [floor((q - r) / w), floor((q + r) / w)]
    per axis, each at most once (first at the lower end's, wrapped), z then y then x outermost to innermost,
    each cell's points by ascending index (the build's stable sort), only `group`'s when it is not None."""
    inv = 1.0 / width
    bucket_axes = _cells(pts, inv) % np.array(dims)
    buckets = (bucket_axes[:, 2] * dims[1] + bucket_axes[:, 1]) * dims[0] + bucket_axes[:, 0]
    r = np.float64(np.float32(radius))
    first, count = [], []
    for a in range(3):
        x = np.float64(query[a])
        lo, hi = _cells(x - r, inv), _cells(x + r, inv)
        if np.isnan(x):
            lo = hi = 0
        n = max(hi, lo) - lo + 1
        first.append(0 if n >= dims[a] else lo % dims[a])
        count.append(min(n, dims[a]))
    out = []
    for k in range(count[2]):
        for j in range(count[1]):
            for i in range(count[0]):
                x, y, z = [(first[a] + o) % dims[a] for a, o in enumerate((i, j, k))]
                hit = buckets == (z * dims[1] + y) * dims[0] + x
                if group is not None:
                    hit &= point_groups == group
                out.extend(np.flatnonzero(hit).tolist())
    return out


# wrapped rows (a range crossing the grid's x edge), ranges wider than a grid, empty cells inside a row
@pytest.mark.parametrize("dims,width,radius,grouped", [((3, 5, 7), 0.35, 0.35, False), ((5, 4, 3), 0.3, 0.5, True),
                                                        ((8, 8, 8), 0.25, 0.9, False), ((1, 1, 1), 0.3, 0.2, False),
                                                        ((64, 64, 64), 0.1, 0.25, False),
                                                        ((16, 8, 8), 0.2, 0.3, True)])
def test_candidates_follow_the_cell_walk(device, dims, width, radius, grouped):
    """Each query yields exactly the reference walk's candidates, in its order: rows of cells may be
    opened at once, but the points and their order are those of opening the cells one by one."""
    rng = np.random.default_rng(sum(dims) + int(grouped))
    pts = _cloud(rng, 700, -2.0, 2.0)
    pts[rng.random(len(pts)) < 0.5] *= 0.25  # a dense middle and sparse edges: empty cells among full ones
    point_groups = rng.integers(-2, 3, len(pts)).astype(np.int32)
    queries = _cloud(rng, 150, -2.5, 2.5)
    queries[:4] = [[np.nan, 0.0, 0.0], [np.inf, 0.5, 0.0], [-3e38, 0.0, 1.0], [0.0, -0.0, 0.35]]
    query_groups = rng.integers(-2, 3, len(queries)).astype(np.int32)
    grid = wp.HashGrid(*dims, device=device)
    groups = wp.array(point_groups, dtype=int, device=device)
    grid.build(wp.array(pts, dtype=wp.vec3, device=device), width, groups=groups if grouped else None)
    found = wp.full((len(queries), ORDER_CAP), -1, dtype=int, device=device)
    counts = wp.zeros(len(queries), dtype=int, device=device)
    wp.launch(collect_order, dim=len(queries),
              inputs=[grid.id, radius, wp.array(queries, dtype=wp.vec3, device=device),
                      wp.array(query_groups, dtype=int, device=device), int(grouped), found, counts], device=device)
    f, c = found.numpy(), counts.numpy()
    for q in range(len(queries)):
        want = _reference_order(pts, point_groups, width, dims, queries[q], radius,
                                query_groups[q] if grouped else None)
        assert c[q] == len(want), f"query {q}: {c[q]} candidates, want {len(want)}"
        np.testing.assert_array_equal(f[q, :min(c[q], ORDER_CAP)], want[:ORDER_CAP], err_msg=f"query {q}")
