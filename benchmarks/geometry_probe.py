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
    ap.add_argument("--bits", default="", help="comma-separated GPU radix digit widths to compare (totals only)")
    args = ap.parse_args()
    dev = args.device
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
    for bits in [int(b) for b in args.bits.split(",") if b]:
        wp.utils.RADIX_BITS_GPU = bits
        for label, fn in (("hash grid build", lambda: grid.build(particles, 0.04)),
                          ("mesh build", lambda: wp.Mesh(points=pts, indices=idx))):
            fn()
            best = []
            for _ in range(args.repeats):
                wp.synchronize()
                t = time.perf_counter()
                fn()
                wp.synchronize()
                best.append(time.perf_counter() - t)
            print(f"   {bits}-bit digits: {label} {min(best) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
