"""Where a geometry build's time goes, launch by launch (each synchronised): the hash-grid build and the
mesh (BVH) build of ``python -m benchmarks --only geometry``, and the sort and scan under them.

    python -m benchmarks.geometry_probe [--device cuda:0] [--repeats 5]
"""
from __future__ import annotations

import argparse
import collections
import time

import numpy as np

import tilewarp as wp
from benchmarks.geometry import terrain


def probe(label, fn, repeats):
    """Per kernel (and fill/zero), the best total over ``repeats`` runs of ``fn``, in ms."""
    totals = collections.defaultdict(list)
    run = collections.defaultdict(float)
    launch, zero, fill = wp.launch, wp.array.zero_, wp.array.fill_

    def timed(name, f):
        def call(*a, **k):
            wp.synchronize()
            t = time.perf_counter()
            r = f(*a, **k)
            wp.synchronize()
            run[name(a) if callable(name) else name] += time.perf_counter() - t
            return r
        return call

    wp.launch = timed(lambda a: a[0].key, launch)
    wp.array.zero_, wp.array.fill_ = timed("zero_", zero), timed("fill_", fill)
    try:
        fn()  # warm: compiles
        for _ in range(repeats):
            run.clear()
            wp.synchronize()
            t = time.perf_counter()
            fn()
            wp.synchronize()
            run["(total)"] = time.perf_counter() - t
            for k, v in list(run.items()):
                totals[k].append(v)
    finally:
        wp.launch, wp.array.zero_, wp.array.fill_ = launch, zero, fill
    print(f"-- {label}")
    for k, v in sorted(totals.items(), key=lambda kv: -min(kv[1])):
        print(f"   {k:32s} {min(v) * 1e3:9.3f} ms  x{len(v) // repeats}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--once", action="store_true",
                    help="build each object twice, untimed (a target for Nsight Compute's per-kernel times)")
    ap.add_argument("--cprofile", action="store_true",
                    help="the host's side of 20 hash-grid and 20 mesh builds under cProfile (after a warm build)")
    ap.add_argument("--sections", action="store_true",
                    help="the host's time in each step of a hash-grid and a mesh build (inclusive, no added syncs)")
    args = ap.parse_args()
    dev = args.device
    if args.sections:
        return sections(dev)
    if args.once or args.cprofile:
        return once(dev, args.cprofile)
    rng = np.random.default_rng(1)
    m = 1 << 20 if dev != "cpu" else 1 << 18
    dims = int(round(m ** (1 / 3)))
    g = np.stack(np.meshgrid(*[np.arange(dims)] * 3), -1).reshape(-1, 3) * 0.02
    particles = wp.array((g + rng.random(g.shape) * 0.01).astype(np.float32), dtype=wp.vec3, device=dev)
    grid = wp.HashGrid(128, 128, 128, device=dev)
    probe(f"hash grid build, {len(g)} points", lambda: grid.build(particles, 0.04), args.repeats)
    keys = wp.array(rng.integers(0, 1 << 21, 2 * len(g)).astype(np.int32), device=dev)
    vals = wp.array(np.arange(2 * len(g), dtype=np.int32), device=dev)
    probe(f"radix_sort_pairs, {len(g)} int32 keys (21 bits)",
          lambda: wp.utils.radix_sort_pairs(keys, vals, len(g), 0, 21), args.repeats)
    big = wp.array(rng.integers(0, 4, 1 << 23).astype(np.int32), device=dev)
    probe("array_scan, 8M int32", lambda: wp.utils.array_scan(big, big, inclusive=False), args.repeats)
    points, indices = terrain(708)
    pts = wp.array(points, dtype=wp.vec3, device=dev)
    idx = wp.array(indices, dtype=wp.int32, device=dev)
    probe("mesh build, 1M triangles", lambda: wp.Mesh(points=pts, indices=idx), args.repeats)


def sections(dev, builds=50):
    """Host time per build step, inclusive (a step that waits for the GPU shows the wait), launches,
    fills and allocations included."""
    from tilewarp.geometry import bvh, hash_grid, mesh
    from tilewarp.runtime import array as arrays
    spent = collections.defaultdict(float)
    patched = []

    def wrap(owner, name, label):
        f = getattr(owner, name)

        def call(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[label] += time.perf_counter() - t
        setattr(owner, name, call)
        patched.append((owner, name, f))

    for owner, name in ((mesh.Mesh, "_queue_inspection"), (mesh.Mesh, "_check_inspection"), (bvh.Tree, "__init__"),
                        (bvh.Tree, "_sort"), (bvh.Tree, "refit"),
                        (bvh.Tree, "build"), (mesh.Mesh, "__init__"), (wp.utils, "sort_order"),
                        (wp.utils.radix, "_scan_rows"), (hash_grid.HashGrid, "build"), (wp, "launch"),
                        (arrays.array, "zero_"), (arrays.array, "fill_"), (arrays.array, "numpy")):
        wrap(owner, name, f"{getattr(owner, '__name__', owner)}.{name}")
    for name in ("uninitialized", "empty", "zeros"):
        for owner in (arrays, bvh, mesh, wp.utils.radix):
            if hasattr(owner, name):
                wrap(owner, name, f"alloc:{name}")
    try:
        once(dev)
        rng = np.random.default_rng(1)
        particles = wp.array(rng.random((1 << 20, 3)).astype(np.float32) * 2.0, dtype=wp.vec3, device=dev)
        grid = wp.HashGrid(128, 128, 128, device=dev)
        points, indices = terrain(708)
        pts = wp.array(points, dtype=wp.vec3, device=dev)
        idx = wp.array(indices, dtype=wp.int32, device=dev)
        for label, fn in (("hash grid build", lambda: grid.build(particles, 0.04)),
                          ("mesh build", lambda: wp.Mesh(points=pts, indices=idx))):
            fn()
            wp.synchronize()
            spent.clear()
            t = time.perf_counter()
            for _ in range(builds):
                fn()
            host = time.perf_counter() - t
            wp.synchronize()
            total = time.perf_counter() - t
            print(f"-- {label}: {host / builds * 1e3:.3f} ms host a build, {total / builds * 1e3:.3f} ms with the "
                  f"last sync")
            for k, v in sorted(spent.items(), key=lambda kv: -kv[1]):
                print(f"   {k:40s} {v / builds * 1e3:8.3f} ms")
    finally:
        for owner, name, f in reversed(patched):
            setattr(owner, name, f)


def once(dev, profile=False):
    """Two hash-grid builds and two mesh builds (the first compiles), nothing else launched; with
    ``profile``, then 20 of each under cProfile (the host's time: Python, driver calls, waits)."""
    rng = np.random.default_rng(1)
    g = rng.random((1 << 20, 3)).astype(np.float32) * 2.0
    particles = wp.array(g, dtype=wp.vec3, device=dev)
    grid = wp.HashGrid(128, 128, 128, device=dev)
    points, indices = terrain(708)
    pts = wp.array(points, dtype=wp.vec3, device=dev)
    idx = wp.array(indices, dtype=wp.int32, device=dev)
    for _ in range(2):
        grid.build(particles, 0.04)
        wp.Mesh(points=pts, indices=idx)
    wp.synchronize()
    if profile:
        import cProfile
        import pstats
        for label, fn in (("hash grid build", lambda: grid.build(particles, 0.04)),
                          ("mesh build", lambda: wp.Mesh(points=pts, indices=idx))):
            prof = cProfile.Profile()
            t = time.perf_counter()
            prof.enable()
            for _ in range(20):
                fn()
            prof.disable()
            wp.synchronize()
            print(f"-- {label}: {(time.perf_counter() - t) / 20 * 1e3:.3f} ms a build (host, profiled)")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
