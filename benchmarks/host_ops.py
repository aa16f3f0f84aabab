"""What each runtime operation costs the host (µs per call, no synchronisation between calls): the
allocations, fills, launches and scans a library build (a hash grid, a mesh's tree) is made of.

    python -m benchmarks.host_ops [--device cuda:0] [--calls 300]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tilewarp as wp
from tilewarp import utils
from tilewarp.utils import core
from tilewarp.runtime.array import uninitialized


@wp.kernel(enable_backward=False)
def _touch(a: wp.array(dtype=wp.int32), tree: wp.uint64):
    i = wp.tid()
    if i == 0 and tree == wp.uint64(0):
        a[0] = 1


def per_call(fn, calls):
    fn()
    wp.synchronize()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - t)
        wp.synchronize()
    return best / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    dev, n = args.device, args.calls
    small = wp.zeros(1024, dtype=wp.int32, device=dev)
    big = wp.zeros(1 << 20, dtype=wp.int32, device=dev)
    keys = wp.array(np.random.default_rng(1).integers(0, 1 << 21, 1 << 20).astype(np.uint32), device=dev)
    order = wp.empty(1 << 20, dtype=wp.int32, device=dev)
    rows = core._rows(big)
    srows = core._rows(small)
    stotals = wp.zeros((1, 1), dtype=wp.int32, device=dev)
    ops = {
        "wp.zeros(1024)": lambda: wp.zeros(1024, dtype=wp.int32, device=dev),
        "wp.empty(1024)": lambda: wp.empty(1024, dtype=wp.int32, device=dev),
        "uninitialized(1M)": lambda: uninitialized(1 << 20, dtype=wp.int32, device=dev),
        "zero_ (4 KB)": small.zero_,
        "fill_(-1) (4 KB)": lambda: small.fill_(-1),
        "wp.launch, 1 thread (array, uint64)": lambda: wp.launch(_touch, dim=1, inputs=[small, 0], device=dev),
        "wp.launch_tiled, 1 block (utils._block_totals)": lambda: wp.launch_tiled(
            core._block_totals, dim=[1, 1], inputs=[srows, stotals], block_dim=core.SCAN_BLOCK, device=dev,
            record_tape=False),
        "utils._scan_rows, 1024 int32": lambda: core._scan_rows(srows, srows, False),
        "utils._scan_rows, 1M int32": lambda: core._scan_rows(rows, rows, False),
        "utils.sort_order, 1M keys, 21 bits": lambda: utils.sort_order(keys, order, 0, 21),
        "array.numpy() (4 KB)": small.numpy,
    }
    for name, fn in ops.items():
        print(f"{per_call(fn, n if 'sort' not in name else max(n // 10, 3)):10.1f} us  {name}")


if __name__ == "__main__":
    main()
