"""Gradients of every differentiable tile operation against central differences (float64).

Each kernel is launched over whole blocks (``dim=(blocks, BD)``, as ``wp.launch_tiled`` does) and
checked with ``wp.autograd.gradcheck``: the backward kernel's Jacobian against finite differences
of the forward kernel, entry by entry. Where Warp has no adjoint (min/max selection, scans, the
solve-free ops below) tilewarp's is checked the same way.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module

BD = 8
TEXT = '''
import WP as wp

BD = 8


@wp.func
def wave(x: wp.float64, y: wp.float64):
    return wp.sin(x) * y + x * x * y


@wp.kernel
def g_elementwise(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    x = wp.tile_load(a, shape=(3, 5), offset=(i * 3, 0))
    y = wp.tile_load(b, shape=(3, 5), offset=(i * 3, 0))
    z = wp.tile_map(wave, x, y) + x * y - y / (x * x + 2.0) + wp.tile_map(wp.exp, -x)
    wp.tile_store(out, -z * 1.5, offset=(i * 3, 0))


@wp.kernel
def g_reductions(a: wp.array2d(dtype=wp.float64), total: wp.array(dtype=wp.float64), rows: wp.array2d(dtype=wp.float64),
                 cols: wp.array2d(dtype=wp.float64), ext: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    x = wp.tile_load(a, shape=(3, 5), offset=(i * 3, 0))
    wp.tile_atomic_add(total, wp.tile_sum(x * x))
    wp.tile_store(rows[i], wp.tile_sum(x, axis=1) + wp.tile_reduce(wp.mul, x, axis=1))
    wp.tile_store(cols[i], wp.tile_max(x, axis=0))
    ext[i, 0] = wp.tile_min(x)[0]
    ext[i, 1] = wp.tile_max(x)[0] * 2.0 + wp.tile_reduce(wp.mul, x)[0]


@wp.kernel
def g_scans(a: wp.array(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=11)
    wp.tile_store(out[0], wp.tile_scan_inclusive(x * x))
    wp.tile_store(out[1], wp.tile_scan_exclusive(x))


@wp.kernel
def g_shapes(a: wp.array2d(dtype=wp.float64), bc: wp.array2d(dtype=wp.float64), tr: wp.array2d(dtype=wp.float64),
             rs: wp.array2d(dtype=wp.float64), sq: wp.array(dtype=wp.float64), cv: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=(3, 4))
    row = wp.tile_load(a, shape=(1, 4), offset=(1, 0))
    wp.tile_store(bc, wp.tile_broadcast(row, shape=(3, 4)) * x)
    wp.tile_store(tr, wp.tile_transpose(x) * 3.0)
    wp.tile_store(rs, wp.tile_reshape(x * x, shape=(2, 6)))
    wp.tile_store(sq, wp.tile_squeeze(row) * 2.0)
    wp.tile_store(cv, wp.tile_astype(wp.tile_astype(x, dtype=wp.float32) * wp.float32(2.0), dtype=wp.float64))


@wp.kernel
def g_views(a: wp.array2d(dtype=wp.float64), v: wp.array2d(dtype=wp.float64), s: wp.array2d(dtype=wp.float64),
            e: wp.array(dtype=wp.float64), b: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=(4, 6))
    wp.tile_store(v, wp.tile_view(x, offset=(1, 2), shape=(2, 3)) * 2.0)
    wp.tile_store(s, x[1:4, ::2] * x[0:3, 1::2])
    e[0] = x[2, 3] * x[1, 1] + wp.tile_sum(x[wp.tile_arange(0, 4, 2, dtype=int), :] * x[1:3, :])[0]
    y = wp.tile_zeros(shape=(4, 6), dtype=wp.float64)
    for r in range(4):
        wp.tile_assign(y[3 - r], x[r] * wp.float64(r + 1))
    wp.tile_store(b, y)


@wp.kernel
def g_simt(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    x = a[i] * a[i]
    t = wp.tile(x)
    s = wp.tile_sum(t * t)
    out[i] = wp.untile(t * 3.0) + s[0]


@wp.kernel
def g_simt_vec(a: wp.array(dtype=wp.float64), vec: wp.array(dtype=wp.vec3d), vout: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    tv = wp.tile(vec[i] * a[i])
    vout[i] = wp.untile(tv * tv)


@wp.kernel
def g_elements(a: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    t = wp.tile_zeros(shape=BD, dtype=wp.float64)
    t[BD - 1 - i % BD] = a[i] * a[i]
    h = wp.tile_zeros(shape=2, dtype=wp.float64)
    h[i % 2] += a[i]
    wp.tile_scatter_add(h, 1, a[i] * a[i], i % 3 == 0)
    m = wp.tile_zeros(shape=BD, dtype=wp.float64)
    wp.tile_scatter_masked(m, i % BD, a[i] * 3.0, i % 2 == 0)
    wp.tile_store(out, t * wp.tile_sum(h)[0] + m, offset=i / BD * BD)


@wp.kernel
def g_matmul(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64), c: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=(3, 4))
    y = wp.tile_load(b, shape=(4, 5))
    acc = wp.tile_load(c, shape=(3, 5))
    wp.tile_matmul(x, y, acc, alpha=2.0, beta=0.5)
    wp.tile_store(c, acc + wp.tile_matmul(x * x, y))


@wp.kernel
def g_fused_indexed(a: wp.array2d(dtype=wp.float64), idx: wp.array(dtype=int), out: wp.array2d(dtype=wp.float64),
                    acc: wp.array2d(dtype=wp.float64), dots: wp.array(dtype=wp.float64)):
    rows = wp.tile_load(idx, shape=3, storage="shared")
    g = wp.tile_load_indexed(a, indices=rows, shape=(3, 4), offset=(0, 0), axis=0)
    y = g * g
    wp.tile_axpy(wp.float64(3.0), g, y)
    wp.tile_store_indexed(out, indices=rows, t=y, offset=(0, 0), axis=0)
    wp.tile_atomic_add_indexed(acc, indices=rows, t=g * 2.0, offset=(0, 0), axis=0)
    wp.tile_store(dots, wp.tile_dot(g, y))


@wp.kernel
def g_loops(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64), out: wp.array(dtype=wp.float64),
            c: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    s = wp.tile_zeros(shape=1, dtype=wp.float64)
    acc = wp.tile_zeros(shape=(2, 2), dtype=wp.float64)
    for k in range(a.shape[1] / 3):  # a dynamic loop carrying a register tile and a shared one
        x = wp.tile_load(a, shape=(2, 3), offset=(i * 2, k * 3))
        y = wp.tile_load(b, shape=(3, 2), offset=(k * 3, 0))
        s += wp.tile_sum(x * x) * 0.5
        wp.tile_matmul(x, y, acc)
    wp.tile_store(out, s, offset=i)
    wp.tile_store(c, acc * acc, offset=(i * 2, 0))


@wp.func
def bend(x: wp.float64):
    return x * x + wp.sin(x)


@wp.kernel
def g_assign_after_read(a: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=(4, 6), storage="shared")
    col = wp.tile_view(x, offset=(0, 2), shape=(4, 1))
    wp.tile_assign(x, wp.tile_map(bend, col), offset=(0, 2))  # the map's gradient needs the old column
    wp.tile_store(out, x * x)


@wp.kernel
def g_full_atomic(a: wp.array2d(dtype=wp.float64), s: wp.array(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    i = wp.tid()
    x = wp.tile_load(a, shape=(2, 3), offset=(i * 2, 0))
    f = wp.tile_full(shape=(2, 3), value=s[0] * s[1], dtype=wp.float64)
    wp.tile_atomic_add(out, x * f + x, offset=(0, i))
'''
MOD = load_module(TEXT, "tilewarp")
TOL = dict(eps=1e-6, atol=1e-6, rtol=1e-5)


def arr(rng, shape, device, dtype=wp.float64, lo=-1.0, hi=1.0):
    data = rng.uniform(lo, hi, size=shape)
    if dtype is wp.vec3d:
        return wp.array(data, dtype=dtype, device=device, requires_grad=True)
    return wp.array(data, dtype=dtype, device=device, requires_grad=True)


def zeros(shape, device, dtype=wp.float64):
    return wp.zeros(shape, dtype=dtype, device=device, requires_grad=True)


def check(kernel, dim, inputs, outputs, device):
    assert wp.autograd.gradcheck(getattr(MOD, kernel), dim=dim, inputs=inputs, outputs=outputs, device=device,
                                 block_dim=BD, raise_exception=False, show_summary=False, **TOL)


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def test_load_store_map_arithmetic(device, rng):
    """tile_load, tile_store, tile_map (a @wp.func and a builtin), + - * / and unary minus."""
    a, b = arr(rng, (6, 5), device), arr(rng, (6, 5), device)
    check("g_elementwise", (2, BD), [a, b], [zeros((6, 5), device)], device)


def test_reductions(device, rng):
    """tile_sum (whole, axis), tile_max (axis), tile_min / tile_max (the extreme element gets it), and
    tile_reduce(wp.mul, ...) (whole, axis: the product of the others)."""
    a = arr(rng, (6, 5), device)
    outs = [zeros(1, device), zeros((2, 3), device), zeros((2, 5), device), zeros((2, 2), device)]
    check("g_reductions", (2, BD), [a], outs, device)


def test_scans(device, rng):
    """tile_scan_inclusive / tile_scan_exclusive (Warp has no adjoint for them)."""
    check("g_scans", (1, BD), [arr(rng, 11, device)], [zeros((2, 11), device)], device)


def test_shapes(device, rng):
    """tile_broadcast, tile_transpose, tile_reshape, tile_squeeze, tile_astype (through float32)."""
    a = arr(rng, (3, 4), device)
    outs = [zeros((3, 4), device), zeros((4, 3), device), zeros((2, 6), device), zeros(4, device), zeros((3, 4), device)]
    assert wp.autograd.gradcheck(MOD.g_shapes, dim=(1, BD), inputs=[a], outputs=outs, device=device, block_dim=BD,
                                 raise_exception=False, show_summary=False, eps=1e-3, atol=1e-3, rtol=1e-3)


def test_views_extract_and_assign(device, rng):
    """tile_view, slices and rows (views share their tile's adjoint), tile_extract (t[i, j]), tile_assign."""
    a = arr(rng, (4, 6), device)
    outs = [zeros((2, 3), device), zeros((3, 3), device), zeros(1, device), zeros((4, 6), device)]
    check("g_views", (1, BD), [a], outs, device)


def test_tile_and_untile(device, rng):
    """tile(x) of per-lane scalars and vectors, untile, in a SIMT launch of 2 blocks."""
    n = 2 * BD
    a, vec = arr(rng, n, device), arr(rng, (n, 3), device, wp.vec3d)
    check("g_simt", n, [a], [zeros(n, device)], device)
    check("g_simt_vec", n, [a, vec], [zeros(n, device, wp.vec3d)], device)


def test_element_writes(device, rng):
    """t[i] = x and t[i] += x from every lane (the second a shared accumulation)."""
    n = 2 * BD
    check("g_elements", n, [arr(rng, n, device)], [zeros(n, device)], device)


def test_matmul(device, rng):
    """tile_matmul(a, b) and tile_matmul(a, b, out, alpha, beta)."""
    a, b, c = arr(rng, (3, 4), device), arr(rng, (4, 5), device), arr(rng, (3, 5), device)
    out = zeros((3, 5), device)
    wp.copy(out, c)
    check("g_matmul", (1, BD), [a, b], [out], device)


def test_assign_over_a_tile_read_before(device, rng):
    """tile_assign over elements an earlier (nonlinear) tile_map read: the backward pass restores the
    old values for that map's gradient (Warp uses the new ones)."""
    check("g_assign_after_read", (1, BD), [arr(rng, (4, 6), device)], [zeros((4, 6), device)], device)


def test_full_and_atomic_add(device, rng):
    """tile_full from a value read once per block, and tile_atomic_add's gradient."""
    a, s = arr(rng, (4, 3), device), arr(rng, 2, device)
    check("g_full_atomic", (2, BD), [a, s], [zeros((2, 4), device)], device)


def test_indexed_and_fused(device, rng):
    """tile_load_indexed, tile_store_indexed, tile_atomic_add_indexed, tile_axpy, tile_dot."""
    a = arr(rng, (5, 4), device)
    idx = wp.array(np.array([3, 0, 4], np.int32), dtype=int, device=device)
    outs = [zeros((5, 4), device), zeros((5, 4), device), zeros(1, device)]
    check("g_fused_indexed", (1, BD), [a, idx], outs, device)


def test_loops_carrying_tiles(device, rng):
    """Dynamic loops carrying a register tile (s += ...) and a shared one (tile_matmul into acc):
    exact gradients through the loop checkpoints (the tiles chapter's GEMM pattern)."""
    a, b = arr(rng, (4, 9), device), arr(rng, (9, 2), device)
    check("g_loops", (2, BD), [a, b], [zeros(2, device), zeros((4, 2), device)], device)


def test_partial_last_block(device, rng):
    """A launch that ends inside a block: the lanes past it give zeros to tile(x) and get no gradient."""
    n = BD + 3
    check("g_simt", n, [arr(rng, n, device)], [zeros(n, device)], device)


SCALAR_OVER_MATRIX = '''
import WP as wp


@wp.kernel
def s_over_m(s: wp.array(dtype=wp.float64), m: wp.array(dtype=wp.mat22d), out: wp.array(dtype=wp.mat22d)):
    i = wp.tid()
    out[i] = s[i] / m[i]
'''


def test_scalar_over_matrix(device, rng):
    """s / M element by element (as Warp's, used by tiles of matrices): values and gradient."""
    mod = load_module(SCALAR_OVER_MATRIX, "tilewarp")
    s = arr(rng, 3, device, lo=0.5, hi=2.0)
    m = wp.array(rng.uniform(1.0, 2.0, size=(3, 2, 2)), dtype=wp.mat22d, device=device, requires_grad=True)
    out = zeros(3, device, wp.mat22d)
    wp.launch(mod.s_over_m, dim=3, inputs=[s, m, out], device=device)
    np.testing.assert_allclose(out.numpy(), s.numpy()[:, None, None] / m.numpy(), rtol=1e-12)
    assert wp.autograd.gradcheck(mod.s_over_m, dim=3, inputs=[s, m], outputs=[zeros(3, device, wp.mat22d)],
                                 device=device, raise_exception=False, show_summary=False, **TOL)
