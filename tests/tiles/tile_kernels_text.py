"""Tile kernels run through tilewarp and warp-lang alike (``conftest.load_both``): one per operation.

Blocks are BD lanes; tiles are small and odd-shaped so that edges, padding and lanes owning several
elements (or none) are all exercised.
"""

TEXT = '''
import WP as wp

BD = 16
M = wp.constant(5)
N = wp.constant(12)


@wp.func
def smooth(x: float, y: float):
    return wp.sin(x) * y + x * x


@wp.func
def three(x: float, y: float, z: float):
    return x * y - z


@wp.func
def mul_f(a: float, b: float):
    return a * b


@wp.func
def add_tiles(a: wp.tile[float, 5, 12], b: wp.tile[float, 5, 12]):
    return a + b * 2.0


@wp.kernel
def load_store(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i, j = wp.tid()
    t = wp.tile_load(a, shape=(M, N), offset=(i * M, j * N))
    wp.tile_store(b, t, offset=(i * M, j * N))


@wp.kernel
def load_shared_store(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(M, N), offset=(i * M, 3), storage="shared")
    wp.tile_store(b, t, offset=(i * M, 0))


@wp.kernel
def arithmetic(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), out: wp.array3d(dtype=float)):
    i = wp.tid()
    x = wp.tile_load(a, shape=(M, N), offset=(i * M, 0))
    y = wp.tile_load(b, shape=(M, N), offset=(i * M, 0))
    wp.tile_store(out[0], x + y, offset=(i * M, 0))
    wp.tile_store(out[1], x - y, offset=(i * M, 0))
    wp.tile_store(out[2], x * y, offset=(i * M, 0))
    wp.tile_store(out[3], x / y, offset=(i * M, 0))
    wp.tile_store(out[4], -x * 2.0, offset=(i * M, 0))
    wp.tile_store(out[5], 0.5 * y, offset=(i * M, 0))


@wp.kernel
def maps(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), s: float, out: wp.array3d(dtype=float)):
    i = wp.tid()
    x = wp.tile_load(a, shape=(M, N), offset=(i * M, 0))
    y = wp.tile_load(b, shape=(M, N), offset=(i * M, 0))
    wp.tile_store(out[0], wp.tile_map(wp.sin, x), offset=(i * M, 0))
    wp.tile_store(out[1], wp.tile_map(smooth, x, y), offset=(i * M, 0))
    wp.tile_store(out[2], wp.tile_map(three, x, y, x), offset=(i * M, 0))
    wp.tile_store(out[3], wp.tile_map(wp.mul, x, s), offset=(i * M, 0))
    wp.tile_store(out[4], add_tiles(x, y), offset=(i * M, 0))


@wp.kernel
def reductions(a: wp.array2d(dtype=float), sums: wp.array(dtype=float), rows: wp.array2d(dtype=float),
               cols: wp.array2d(dtype=float), ext: wp.array2d(dtype=float), idx: wp.array2d(dtype=int)):
    i = wp.tid()
    x = wp.tile_load(a, shape=(M, N), offset=(i * M, 0))
    wp.tile_store(sums, wp.tile_sum(x), offset=i)
    wp.tile_store(rows[i], wp.tile_sum(x, axis=1))
    wp.tile_store(cols[i], wp.tile_reduce(wp.max, x, axis=0))
    ext[i, 0] = wp.tile_min(x)[0]
    ext[i, 1] = wp.tile_max(x)[0]
    ext[i, 2] = wp.tile_reduce(wp.mul, x)[0]
    ext[i, 3] = wp.tile_reduce(mul_f, x * 0.5)[0]
    idx[i, 0] = wp.tile_argmin(x)[0]
    idx[i, 1] = wp.tile_argmax(x)[0]


@wp.kernel
def scans(a: wp.array(dtype=float), b: wp.array(dtype=int), out: wp.array2d(dtype=float), iout: wp.array2d(dtype=int)):
    x = wp.tile_load(a, shape=37)
    y = wp.tile_load(b, shape=37)
    wp.tile_store(out[0], wp.tile_scan_inclusive(x))
    wp.tile_store(out[1], wp.tile_scan_exclusive(x))
    wp.tile_store(out[2], wp.tile_scan_max_inclusive(x))
    wp.tile_store(iout[0], wp.tile_scan_inclusive(y))
    wp.tile_store(iout[1], wp.tile_scan_exclusive(y))


@wp.kernel
def sort(keys: wp.array(dtype=float), values: wp.array(dtype=int)):
    k = wp.tile_load(keys, shape=45, storage="shared")
    v = wp.tile_load(values, shape=45, storage="shared")
    wp.tile_sort(k, v)
    wp.tile_store(keys, k)
    wp.tile_store(values, v)


@wp.kernel
def sort_same(keys: wp.array(dtype=int)):
    k = wp.tile_load(keys, shape=65, storage="shared")
    wp.tile_sort(k, k)  # one tile as keys and values
    wp.tile_store(keys, k)


@wp.kernel
def shapes(a: wp.array2d(dtype=float), bc: wp.array2d(dtype=float), tr: wp.array2d(dtype=float),
           rs: wp.array2d(dtype=float), sq: wp.array(dtype=float), cv: wp.array2d(dtype=int)):
    x = wp.tile_load(a, shape=(M, N))
    row = wp.tile_load(a, shape=(1, N), offset=(2, 0))
    wp.tile_store(bc, wp.tile_broadcast(row, shape=(M, N)) + x)
    wp.tile_store(tr, wp.tile_transpose(x))
    wp.tile_store(rs, wp.tile_reshape(x, shape=(N, -1)))
    wp.tile_store(sq, wp.tile_squeeze(row))
    wp.tile_store(cv, wp.tile_astype(x * 10.0, dtype=int))


@wp.kernel
def views(a: wp.array2d(dtype=float), v: wp.array2d(dtype=float), s: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    x = wp.tile_load(a, shape=(M, N))
    wp.tile_store(v, wp.tile_view(x, offset=(1, 2), shape=(3, 4)))
    wp.tile_store(s, x[1:4, ::3])
    y = wp.tile_zeros(shape=(M, N), dtype=float)
    for r in range(M):
        wp.tile_assign(y[M - 1 - r], x[r])
    y[0, 0] = 100.0
    wp.tile_store(b, y)


@wp.kernel
def simt_tiles(a: wp.array(dtype=float), out: wp.array(dtype=float), vec: wp.array(dtype=wp.vec3), vout: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    x = a[i] * 2.0
    t = wp.tile(x)
    s = wp.tile_sum(t)
    y = wp.untile(t * t)
    out[i] = y + s[0]
    v = vec[i]
    tv = wp.tile(v)
    tp = wp.tile(v, preserve_type=True)
    vout[i] = wp.untile(tv) + wp.untile(tp) * 0.5


@wp.kernel
def elements(a: wp.array(dtype=float), hist: wp.array(dtype=float), got: wp.array(dtype=float)):
    i = wp.tid()
    h = wp.tile_zeros(shape=4, dtype=float)
    h[i % 4] += a[i]
    t = wp.tile_zeros(shape=BD, dtype=float)
    t[BD - 1 - i % BD] = a[i]
    got[i] = t[i % BD] + h[0]
    wp.tile_store(hist, h, offset=i / BD * 4)


@wp.kernel
def atomics(a: wp.array(dtype=float), acc: wp.array(dtype=float), old: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=20, offset=i * 20)
    o = wp.tile_atomic_add(acc, t, offset=i * 20)
    wp.tile_store(old, o, offset=i * 20)


@wp.kernel
def construction(out: wp.array2d(dtype=float), ints: wp.array(dtype=int)):
    wp.tile_store(out[0], wp.tile_ones(shape=N, dtype=float))
    wp.tile_store(out[1], wp.tile_full(shape=N, value=2.5))
    wp.tile_store(out[2], wp.tile_arange(N, dtype=float) * 0.5)
    wp.tile_store(out[3], wp.tile_arange(1.0, 7.0, 0.5, dtype=float))
    wp.tile_store(ints, wp.tile_arange(20, 8, -1, dtype=int))


@wp.kernel
def matmul(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    x = wp.tile_load(a, shape=(M, 7))
    y = wp.tile_load(b, shape=(7, N))
    acc = wp.tile_ones(shape=(M, N), dtype=float)
    wp.tile_matmul(x, y, acc, alpha=2.0, beta=0.5)
    wp.tile_store(c, acc + wp.tile_matmul(x, y))


@wp.kernel
def fused(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), out: wp.array2d(dtype=float), dots: wp.array(dtype=float)):
    x = wp.tile_load(a, shape=(M, N))
    y = wp.tile_load(b, shape=(M, N))
    wp.tile_axpy(2.0, x, y)
    wp.tile_store(out, y)
    wp.tile_store(dots, wp.tile_dot(x, x))


@wp.kernel
def indexed(a: wp.array2d(dtype=float), idx: wp.array(dtype=int), out: wp.array2d(dtype=float),
            scat: wp.array2d(dtype=float)):
    rows = wp.tile_load(idx, shape=4, storage="shared")
    g = wp.tile_load_indexed(a, indices=rows, shape=(4, N), offset=(0, 0), axis=0)
    wp.tile_store(out, g)
    wp.tile_store_indexed(scat, indices=rows, t=g * 2.0, offset=(0, 0), axis=0)


@wp.kernel
def from_thread(out: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_from_thread(shape=(2, 3), value=float(i) * 10.0, thread_idx=5)
    wp.tile_store(out, t, offset=(i / BD * 2, 0))


@wp.kernel
def lane_return(a: wp.array(dtype=float), out: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    x = a[i]
    t = wp.tile(x)
    if i % 3 == 0:
        return
    out[i] = x * 2.0
    wp.tile_atomic_add(total, wp.tile_sum(t))


@wp.kernel
def gather(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float), cols: wp.array2d(dtype=float)):
    x = wp.tile_load(a, shape=(M, N))
    rows = wp.tile_arange(4, 0, -1, dtype=int)
    wp.tile_store(out, x[rows, :] * 2.0)
    wp.tile_store(cols, x[:, wp.tile_arange(-1, -4, -1, dtype=int)])


@wp.kernel
def stack(counts: wp.array(dtype=int), popped: wp.array(dtype=int)):
    _b, lane = wp.tid()
    s = wp.tile_stack(capacity=6, dtype=int)
    slot = wp.tile_stack_push(s, lane * 10, lane % 2 == 0)
    if lane == 0:  # a count asked from one lane's own branch (no barrier inside: no deadlock on a GPU)
        counts[0] = wp.tile_stack_count(s)
    value, where = wp.tile_stack_pop(s)
    if where >= 0:
        popped[where] = value
    counts[1] = wp.tile_stack_count(s) + slot * 0


@wp.kernel
def scatter(a: wp.array(dtype=float), sums: wp.array(dtype=float), last: wp.array(dtype=float)):
    i = wp.tid()
    acc = wp.tile_zeros(shape=4, dtype=float)
    wp.tile_scatter_add(acc, i % 4, a[i], i % 3 != 0)
    mask = wp.tile_zeros(shape=BD, dtype=float)
    wp.tile_scatter_masked(mask, i % BD, a[i] * 2.0, i % 2 == 1)
    wp.tile_store(sums, acc, offset=i / BD * 4)
    wp.tile_store(last, mask, offset=i / BD * BD)
'''
