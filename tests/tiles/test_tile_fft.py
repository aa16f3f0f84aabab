"""Tile FFTs against numpy.fft (float64 references): power-of-two lengths (radix 2) and others
(the direct sum), 1- to 3-d tiles (every row its own transform), several block sizes; gradients
against central differences; the in-place change refused where a gradient would need the old value.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module

TEXT = '''
import WP as wp

B0 = wp.constant(2)
B1 = wp.constant(3)
N = wp.constant(NN)


@wp.func
def cmul(a: VT, b: VT):
    return VT(a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0])


@wp.kernel
def transforms(x: wp.array3d(dtype=VT), fwd: wp.array3d(dtype=VT), inv: wp.array3d(dtype=VT), rt: wp.array3d(dtype=VT),
               row: wp.array2d(dtype=VT)):
    t = wp.tile_load(x, shape=(B0, B1, N))
    wp.tile_fft(t)
    wp.tile_store(fwd, t)
    u = wp.tile_load(x, shape=(B0, B1, N))
    wp.tile_ifft(u)
    wp.tile_store(inv, u)
    wp.tile_fft(u)
    wp.tile_store(rt, u)
    r = wp.tile_load(x[1, 2], shape=N, storage="shared")
    wp.tile_fft(r)
    wp.tile_store(row[0], r)


@wp.kernel
def long_row(x: wp.array2d(dtype=VT), y: wp.array2d(dtype=VT)):
    t = wp.tile_load(x, shape=(1, N))
    wp.tile_ifft(t)
    wp.tile_store(y, t)


@wp.kernel
def g_spectral(x: wp.array2d(dtype=VT), h: wp.array2d(dtype=VT), out: wp.array2d(dtype=VT)):
    t = wp.tile_load(x, shape=(B0, N))
    wp.tile_fft(t)
    y = wp.tile_map(cmul, t, wp.tile_load(h, shape=(B0, N)))
    wp.tile_ifft(y)
    wp.tile_store(out, y)


@wp.kernel
def g_reads_before(x: wp.array2d(dtype=VT), out: wp.array2d(dtype=VT)):
    t = wp.tile_load(x, shape=(B0, N))
    s = wp.tile_map(cmul, t, t)
    wp.tile_fft(t)
    wp.tile_store(out, s + t)


@wp.kernel
def g_reads_in_loop(x: wp.array2d(dtype=VT), out: wp.array2d(dtype=VT)):
    t = wp.tile_load(x, shape=(B0, N))
    s = wp.tile_zeros(shape=(B0, N), dtype=VT)
    for _k in range(2):
        s += wp.tile_map(cmul, t, t)
        wp.tile_fft(t)
    wp.tile_store(out, s)
'''


def module(n, vt="wp.vec2d"):
    return load_module(TEXT.replace("NN", str(n)).replace("VT", vt), "tilewarp")


def complex_of(a):
    return a[..., 0] + 1j * a[..., 1]


@pytest.mark.parametrize("n, block_dim, vt", [(8, 4, "wp.vec2d"), (64, 32, "wp.vec2f"), (16, 1, "wp.vec2d"),
                                               (12, 32, "wp.vec2d"), (7, 3, "wp.vec2f"), (256, 64, "wp.vec2d")])
def test_transforms(device, n, block_dim, vt):
    rng = np.random.default_rng(n * block_dim)
    mod = module(n, vt)
    x = rng.uniform(-1, 1, (2, 3, n, 2))
    single = vt == "wp.vec2f"
    wdt = wp.vec2f if single else wp.vec2d
    xs = x.astype(np.float32 if single else np.float64)
    outs = [wp.zeros((2, 3, n), dtype=wdt, device=device) for _ in range(3)]
    row = wp.zeros((1, n), dtype=wdt, device=device)
    wp.launch_tiled(mod.transforms, dim=[1], inputs=[wp.array(xs, dtype=wdt, device=device), *outs, row],
                    block_dim=block_dim, device=device)
    c = complex_of(xs.astype(np.float64))
    tol = 1e-12 * n if not single else 3e-6 * n
    np.testing.assert_allclose(complex_of(outs[0].numpy()), np.fft.fft(c, axis=-1), atol=tol, err_msg="fft")
    np.testing.assert_allclose(complex_of(outs[1].numpy()), np.fft.ifft(c, axis=-1) * n, atol=tol, err_msg="ifft")
    np.testing.assert_allclose(complex_of(outs[2].numpy()), c * n, atol=tol * n, err_msg="round trip")
    np.testing.assert_allclose(complex_of(row.numpy())[0], np.fft.fft(c[1, 2]), atol=tol, err_msg="1-d")


@pytest.mark.parametrize("n, block_dim, vt", [(16384, 64, "wp.vec2f"), (22, 4, "wp.vec2d"), (4096, 1, "wp.vec2d")])
def test_long_and_prime_factor_rows(device, n, block_dim, vt):
    """Rows too long for the lanes' registers (in-place radix 2) and lengths with a prime factor
    above 7 (the direct sum)."""
    rng = np.random.default_rng(n)
    mod = module(n, vt)
    single = vt == "wp.vec2f"
    wdt = wp.vec2f if single else wp.vec2d
    x = rng.uniform(-1, 1, (1, n, 2)).astype(np.float32 if single else np.float64)
    y = wp.zeros((1, n), dtype=wdt, device=device)
    wp.launch_tiled(mod.long_row, dim=[1], inputs=[wp.array(x, dtype=wdt, device=device), y], block_dim=block_dim,
                    device=device)
    want = np.fft.ifft(complex_of(x.astype(np.float64)), axis=-1) * n
    np.testing.assert_allclose(complex_of(y.numpy()), want, atol=(3e-6 if single else 1e-12) * n)


@pytest.mark.parametrize("n, block_dim", [(8, 4), (6, 1)])
def test_spectral_filter_gradient(device, n, block_dim):
    """ifft(fft(x) * h): gradients to the signal and to the filter (complex products of vec2d tiles)."""
    rng = np.random.default_rng(n)
    mod = module(n)
    x, h = (wp.array(rng.uniform(-1, 1, (2, n, 2)), dtype=wp.vec2d, device=device, requires_grad=True)
            for _ in range(2))
    out = wp.zeros((2, n), dtype=wp.vec2d, device=device, requires_grad=True)
    assert wp.autograd.gradcheck(mod.g_spectral, dim=(1, block_dim), inputs=[x, h], outputs=[out], device=device,
                                 block_dim=block_dim, raise_exception=False, show_summary=False, eps=1e-6,
                                 atol=1e-6, rtol=1e-5)


def test_fft_gradient_matches_warp(device):
    """The adjoint Warp documents: the unnormalised inverse transform of the incoming gradient."""
    rng, n = np.random.default_rng(1), 16
    mod = module(n)
    x = wp.array(rng.uniform(-1, 1, (2, 3, n, 2)), dtype=wp.vec2d, device=device, requires_grad=True)
    outs = [wp.zeros((2, 3, n), dtype=wp.vec2d, device=device, requires_grad=True) for _ in range(3)]
    row = wp.zeros((1, n), dtype=wp.vec2d, device=device, requires_grad=True)
    adj = rng.uniform(-1, 1, (2, 3, n, 2))
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(mod.transforms, dim=[1], inputs=[x, *outs, row], block_dim=8, device=device)
    tape.backward(grads={outs[0]: wp.array(adj, dtype=wp.vec2d, device=device)})
    want = np.fft.ifft(complex_of(adj), axis=-1) * n
    np.testing.assert_allclose(complex_of(x.grad.numpy()), want, atol=1e-12)


def test_gradient_through_the_value_before_the_change(device):
    """t*t read before tile_fft(t) changes t in place: the backward pass saves t before the transform
    and puts it back after the transform's adjoint, so the product's gradient sees the old value."""
    rng, n = np.random.default_rng(2), 8
    mod = module(n)
    x = wp.array(rng.uniform(-1, 1, (2, n, 2)), dtype=wp.vec2d, device=device, requires_grad=True)
    out = wp.zeros((2, n), dtype=wp.vec2d, device=device, requires_grad=True)
    wp.launch_tiled(mod.g_reads_before, dim=[1], inputs=[x, out], block_dim=4, device=device)
    c = complex_of(x.numpy())
    np.testing.assert_allclose(complex_of(out.numpy()), c * c + np.fft.fft(c, axis=-1), atol=1e-12)
    assert wp.autograd.gradcheck(mod.g_reads_before, dim=(1, 4), inputs=[x], outputs=[out], device=device,
                                 block_dim=4, raise_exception=False, show_summary=False, eps=1e-6, atol=1e-6,
                                 rtol=1e-5)


def test_change_in_a_loop_after_a_read_raises(device):
    """Inside a loop every iteration would need its own saved copy: refused, naming both lines."""
    rng, n = np.random.default_rng(3), 8
    mod = module(n)
    x = wp.array(rng.uniform(-1, 1, (2, n, 2)), dtype=wp.vec2d, device=device, requires_grad=True)
    out = wp.zeros((2, n), dtype=wp.vec2d, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(mod.g_reads_in_loop, dim=[1], inputs=[x, out], block_dim=4, device=device)
    with pytest.raises(wp.AutodiffError, match=r"tile_fft\(\) in a loop changes a tile in place that line \d+ reads"):
        tape.backward(grads={out: wp.ones((2, n), dtype=wp.vec2d, device=device)})
