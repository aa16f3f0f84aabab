"""Where the time of the tile sum of squares goes (variants of one kernel, H100)."""
import os, sys, tempfile, importlib.util, time, statistics
import numpy as np
import tilewarp as wp
wp.config.quiet = True
SRC = '''
import tilewarp as wp

@wp.kernel
def full(a: wp.array2d(dtype=wp.float64), result: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    v = a[i, j] * a[i, j]
    t = wp.tile(v)
    s = wp.tile_sum(t)
    wp.tile_atomic_add(result, s)

@wp.kernel
def no_atomic(a: wp.array2d(dtype=wp.float64), result: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    v = a[i, j] * a[i, j]
    t = wp.tile(v)
    s = wp.tile_sum(t)
    wp.tile_store(result, s, offset=i * 16 + j / 256)

@wp.kernel
def no_reduce(a: wp.array2d(dtype=wp.float64), result: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    v = a[i, j] * a[i, j]
    t = wp.tile(v)
    wp.tile_store(result, t, offset=j)

@wp.kernel
def simt(a: wp.array2d(dtype=wp.float64), result: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    v = a[i, j] * a[i, j]
    if v < 0.0:
        result[0] = v

@wp.kernel
def empty(a: wp.array2d(dtype=wp.float64), result: wp.array(dtype=wp.float64)):
    i, j = wp.tid()
    t = wp.tile(1.0)
    s = wp.tile_sum(t)
    if s[0] < 0.0:
        result[0] = 1.0

@wp.kernel
def flat1d(a: wp.array(dtype=wp.float64), result: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = a[i] * a[i]
    t = wp.tile(v)
    s = wp.tile_sum(t)
    wp.tile_atomic_add(result, s)
'''
d = tempfile.mkdtemp()
p = os.path.join(d, "probe_k.py"); open(p, "w").write(SRC)
spec = importlib.util.spec_from_file_location("probe_k", p); k = importlib.util.module_from_spec(spec); spec.loader.exec_module(k)
n = 4096
a = wp.array(np.random.rand(n, n), dtype=wp.float64, device="cuda:0")
a1 = wp.array(np.random.rand(n * n), dtype=wp.float64, device="cuda:0")
r = wp.zeros(n * 16 + 16, dtype=wp.float64, device="cuda:0")
def t(fn, it=50):
    fn(); wp.synchronize(); ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(it): fn()
        wp.synchronize(); ts.append((time.perf_counter() - t0) / it)
    return statistics.median(ts) * 1e3
for mb in (0, 132 * 8, 132 * 32, 132 * 128):
    print(f"max_blocks {mb} full {t(lambda: wp.launch(k.full, (n, n), inputs=[a, r], block_dim=256, max_blocks=mb)):.4f} ms")
for bd in (256, 512):
    for name in ("full", "empty"):
        kern = getattr(k, name)
        print(f"bd {bd} {name:10s} {t(lambda: wp.launch(kern, (n, n), inputs=[a, r], block_dim=bd)):.4f} ms")
    print(f"bd {bd} flat1d     {t(lambda: wp.launch(k.flat1d, n * n, inputs=[a1, r], block_dim=bd)):.4f} ms")
