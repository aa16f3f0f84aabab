"""Geometry rows of ``python -m benchmarks`` (issue 28): BVH build and refit of a 1M-triangle mesh,
1M closest-point and ray queries against it, a hash-grid build and a neighbour count over 1M
particles, and an index volume of those particles allocated exactly and rebuilt in place; the same
text through tilewarp and warp-lang (``--only geometry``)."""
from __future__ import annotations

import textwrap

import numpy as np

KERNELS = textwrap.dedent('''
    @wp.kernel
    def closest_points(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(mesh, pts[i], 1.0e6)
        out[i] = q.u + q.v

    @wp.kernel
    def cast_rays(mesh: wp.uint64, origins: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        h = wp.mesh_query_ray(mesh, origins[i], wp.vec3(0.0, -1.0, 0.0), 1.0e6)
        out[i] = h.t

    @wp.kernel
    def count_neighbours(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), radius: float,
                         counts: wp.array(dtype=int)):
        tid = wp.tid()
        i = wp.hash_grid_point_id(grid, tid)
        p = pts[i]
        n = int(0)
        for j in wp.hash_grid_query(grid, p, radius):
            if wp.length(p - pts[j]) <= radius:
                n += 1
        counts[i] = n
''')


def terrain(side: int):
    """A bumpy height field of 2 (side-1)^2 triangles over [0, 1]^2 (the same for both libraries)."""
    x, z = np.meshgrid(np.linspace(0, 1, side), np.linspace(0, 1, side))
    y = 0.05 * np.sin(12 * x) * np.cos(9 * z)
    points = np.stack([x, y, z], -1).reshape(-1, 3).astype(np.float32)
    k = np.arange(side * side).reshape(side, side)[:-1, :-1].ravel()
    tris = np.stack([k, k + side, k + 1, k + 1, k + side, k + side + 1], -1).reshape(-1, 3)
    return points, tris.astype(np.int32).ravel()


def bench_geometry(wp, k, device, on_gpu, timeit) -> dict:
    rng = np.random.default_rng(1)
    side = 708  # 1,000,000 triangles
    points, indices = terrain(side)
    pts = wp.array(points, dtype=wp.vec3, device=device)
    idx = wp.array(indices, dtype=wp.int32, device=device)
    out = {}
    repeats = 3 if not on_gpu else 5
    out["mesh build"] = timeit(wp, lambda: wp.Mesh(points=pts, indices=idx), 1, repeats=repeats)
    mesh = wp.Mesh(points=pts, indices=idx)
    out["mesh refit"] = timeit(wp, mesh.refit, 1 if not on_gpu else 5, repeats=repeats)
    n = 1 << 20 if on_gpu else 1 << 18
    q = rng.random((n, 3)).astype(np.float32)  # points near the surface (a collision query's case)
    q[:, 1] = 0.05 * np.sin(12 * q[:, 0]) * np.cos(9 * q[:, 2]) + (q[:, 1] - 0.5) * 0.02
    queries = wp.array(q, dtype=wp.vec3, device=device)
    res = wp.zeros(n, dtype=float, device=device)
    out["closest point"] = timeit(wp, lambda: wp.launch(k.closest_points, dim=n, inputs=[mesh.id, queries, res],
                                                        device=device), 1, repeats=repeats), n
    q[:, 1] = 1.0
    origins = wp.array(q, dtype=wp.vec3, device=device)
    out["ray"] = timeit(wp, lambda: wp.launch(k.cast_rays, dim=n, inputs=[mesh.id, origins, res], device=device), 1,
                        repeats=repeats), n
    m = 1 << 20 if on_gpu else 1 << 18
    spacing = 0.02
    dims = int(round(m ** (1 / 3)))
    g = np.stack(np.meshgrid(*[np.arange(dims)] * 3), -1).reshape(-1, 3) * spacing
    particles = wp.array((g + rng.random(g.shape) * spacing * 0.5).astype(np.float32), dtype=wp.vec3, device=device)
    grid = wp.HashGrid(128, 128, 128, device=device)
    radius = 2.0 * spacing
    grid.build(particles, radius)  # a first build fills no cells to clear: timeit's warm-up is the second
    # a simulation builds every frame: time the steady state (the CPU's thread pool learns over the first
    # few launches of a kernel how to split them; a build takes milliseconds, so repeats are cheap)
    out["hash grid build"] = timeit(wp, lambda: grid.build(particles, radius), 1, repeats=max(repeats, 15)), len(g)
    counts = wp.zeros(len(g), dtype=int, device=device)
    out["neighbour count"] = timeit(wp, lambda: wp.launch(k.count_neighbours, dim=len(g),
                                                          inputs=[grid.id, particles, radius, counts], device=device),
                                    1, repeats=repeats), len(g)
    # the particles as an index volume's voxels (0.02 apart: about one a voxel), exact and rebuilt
    out["volume allocate"] = timeit(wp, lambda: wp.Volume.allocate_by_voxels(particles, spacing, device=device), 1,
                                    repeats=repeats), len(g)
    volume = wp.Volume.allocate_by_voxels(particles, spacing, device=device, max_active_voxels=2 * len(g),
                                          max_leaf_nodes=8192, max_lower_nodes=64, max_upper_nodes=8)
    out["volume rebuild"] = timeit(wp, lambda: volume.rebuild(particles), 1, repeats=repeats), len(g)
    return out


def report_geometry(tw: dict, ref: dict, line) -> None:
    for key in ("mesh build", "mesh refit", "closest point", "ray", "hash grid build", "neighbour count",
                "volume allocate", "volume rebuild"):
        a, b = tw.get(key), ref.get(key)
        count = None
        if isinstance(a, tuple):
            a, count = a
        if isinstance(b, tuple):
            b, count = b
        label = {"mesh build": "BVH build, 1M-triangle mesh", "mesh refit": "BVH refit, 1M-triangle mesh"}.get(key)
        label = label or f"{key}, {count / 1e6:.2g}M" if count else label or key
        line(label, a, b)
