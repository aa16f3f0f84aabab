"""Tile benchmarks (issue 10): the tiles chapter's programs at scale, side by side with warp-lang.

* sum of squares of a 4096 x 4096 float64 array: ``tile(x)`` + ``tile_sum`` + ``tile_atomic_add``,
  block_dim 256 (Triton 0.0485 ms on an H100, Warp 1.19 0.125 ms);
* the row-sum program: one 256-wide row per block of 64 lanes;
* a ``tile_load`` / ``tile_store`` copy of a large 2-D float32 array.
Each reports GB/s against the device copy rate (the memory-bound ceiling), and on CUDA the
registers, local memory (spills) and shared memory of tilewarp's kernel from its CUBIN.
"""
from __future__ import annotations

import textwrap

import numpy as np

KERNELS = textwrap.dedent('''
    ROW = wp.constant(256)
    TM = wp.constant(32)
    TN = wp.constant(128)

    @wp.kernel
    def sum_squares(a: wp.array2d(dtype=wp.float64), result: wp.array(dtype=wp.float64)):
        i, j = wp.tid()
        local_val = a[i, j] * a[i, j]
        t = wp.tile(local_val)
        s = wp.tile_sum(t)
        wp.tile_atomic_add(result, s)

    @wp.kernel
    def row_sum(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(a[i], ROW)
        s = wp.tile_sum(t)
        wp.tile_store(b[i], s)

    @wp.kernel
    def tile_one(a: wp.array(dtype=float)):
        i = wp.tid()
        wp.tile_store(a, wp.tile_load(a, shape=32) * 0.5)

    @wp.kernel
    def tile_copy(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
        i, j = wp.tid()
        t = wp.tile_load(a, shape=(TM, TN), offset=(i * TM, j * TN))
        wp.tile_store(b, t, offset=(i * TM, j * TN))
''')


def bench_tiles(wp, k, device, on_gpu, timeit):
    """``{name: (seconds, bytes moved, resources)}`` for the three tile programs."""
    rng = np.random.default_rng(0)
    out = {}
    n = 4096 if on_gpu else 1024
    data = wp.array(rng.random((n, n)), dtype=wp.float64, device=device)
    result = wp.zeros(1, dtype=wp.float64, device=device)
    s = timeit(wp, lambda: wp.launch(k.sum_squares, (n, n), inputs=[data], outputs=[result], device=device),
               50 if on_gpu else 3)
    out["sum_squares"] = (s, n * n * 8, resources(wp, k.sum_squares, device))
    rows = (1 << 16) if on_gpu else (1 << 12)
    a = wp.array(rng.random((rows, 256), dtype=np.float32), dtype=float, device=device)
    b = wp.zeros((rows, 1), dtype=float, device=device)
    s = timeit(wp, lambda: wp.launch_tiled(k.row_sum, dim=[rows], inputs=[a, b], block_dim=64, device=device),
               50 if on_gpu else 3)
    out["row_sum"] = (s, rows * 256 * 4, resources(wp, k.row_sum, device))
    m = 8192 if on_gpu else 1024
    src = wp.array(rng.random((m, m), dtype=np.float32), dtype=float, device=device)
    dst = wp.zeros((m, m), dtype=float, device=device)
    s = timeit(wp, lambda: wp.launch_tiled(k.tile_copy, dim=[m // 32, m // 128], inputs=[src, dst], block_dim=256,
                                           device=device), 50 if on_gpu else 3)
    out["tile_copy"] = (s, 2 * m * m * 4, resources(wp, k.tile_copy, device))
    return out


def resources(wp, kernel, device) -> str:
    """Registers / local (spill) bytes / static + planned shared bytes of tilewarp's CUDA kernel."""
    if wp.__name__ != "tilewarp" or not str(device).startswith("cuda"):
        return ""
    parts = []
    for compiled in kernel._compiled.values():
        if compiled.block is None:
            continue
        from cuda.bindings import driver

        fn = compiled.device.backend._cufn.get(compiled.handle)
        attr = driver.CUfunction_attribute
        regs = driver.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_NUM_REGS, fn)[1]
        local = driver.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn)[1]
        static = driver.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn)[1]
        parts.append(f"{regs} regs, {local} B local, {static}+{compiled.shared_bytes} B shared, "
                     f"{compiled.block.threads} threads/block")
    return "; ".join(parts)


def report_tiles(tw, ref, ceiling, line):
    labels = {"sum_squares": "tile sum of squares f64 (bd 256)", "row_sum": "tile row sum (seed, bd 64)",
              "tile_copy": "tile_load/tile_store copy f32"}
    for key, label in labels.items():
        a, nbytes, res = tw.get(key, (None, 0, ""))
        b = ref.get(key, (None, 0, ""))[0]
        note = ""
        if a and ceiling:
            note = f"{nbytes / a / 1e9:.0f} GB/s = {100 * nbytes / a / ceiling:.0f}% of copy"
        line(label, a, b, note=(note + ("; " + res if res else "")))
