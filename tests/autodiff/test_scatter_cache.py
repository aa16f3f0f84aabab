"""Gradient scatters of arrays a SIMT kernel only reads go through a per-thread cache on the CPU
(``tw::scatter_cache``): the gradients stay NumPy's on launches split over the worker threads, and
an array the kernel also writes keeps its plain atomic scatters."""
import numpy as np
import pytest

import tilewarp as wp


@wp.kernel
def springs(x: wp.array(dtype=wp.vec3), rest: float, k: float, f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    j = (i + 1) % x.shape[0]
    d = x[j] - x[i]
    l = wp.length(d)
    fs = k * (l - rest) / l * d
    wp.atomic_add(f, i, fs)
    wp.atomic_sub(f, j, fs)


@wp.kernel
def gather_in_place(x: wp.array(dtype=float), idx: wp.array(dtype=int), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[idx[i]] * x[idx[i]]  # x only read: its scatters are cached
    wp.atomic_add(y, idx[i], 0.0)  # y written: no cache


def _spring_grad(x, rest, k, g):
    """d(sum(f * g))/dx of the spring chain, in float64."""
    n = len(x)
    j = (np.arange(n) + 1) % n
    d = x[j] - x
    l = np.linalg.norm(d, axis=1, keepdims=True)
    gd = g - g[j]  # f_i += fs, f_j -= fs: fs meets g_i - g_j
    s = k * (l - rest) / l
    # fs = s(l) d; d fs / d d = s I + d (ds/dl) d^T / l, ds/dl = k rest / l^2
    ds = k * rest / l**2
    dd = s * gd + ds * (d * gd).sum(1, keepdims=True) * d / l
    out = np.zeros_like(x)
    np.add.at(out, j, dd)
    np.add.at(out, np.arange(n), -dd)
    return out


@pytest.mark.parametrize("n", [7, 4099, 100_000])
def test_spring_chain_gradient_matches_numpy(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 3))
    g = rng.standard_normal((n, 3))
    wx = wp.array(x, dtype=wp.vec3, requires_grad=True)
    f = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(springs, dim=n, inputs=[wx, 0.1, 50.0], outputs=[f])
    tape.backward(grads={f: wp.array(g, dtype=wp.vec3)})
    np.testing.assert_allclose(wx.grad.numpy(), _spring_grad(x, 0.1, 50.0, g), rtol=2e-3, atol=2e-3)
    source = springs.compiled_backward(wp.get_device("cpu")).source
    assert "tw::adj_load_cached(tw_deferred.g0" in source and "tw::scatter_cache<tw::vec_t<3, float>>" in source


def test_a_written_array_scatters_atomically():
    rng = np.random.default_rng(5)
    n = 20_000
    x = rng.standard_normal(n)
    idx = rng.integers(0, n, n)
    wx = wp.array(x, dtype=float, requires_grad=True)
    y = wp.zeros(n, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(gather_in_place, dim=n, inputs=[wx, wp.array(idx, dtype=int)], outputs=[y])
    tape.backward(grads={y: wp.ones(n, dtype=float)})
    want = np.zeros(n)
    np.add.at(want, idx, 2.0 * x[idx])
    np.testing.assert_allclose(wx.grad.numpy(), want, rtol=1e-4, atol=1e-4)
    source = gather_in_place.compiled_backward(wp.get_device("cpu")).source
    assert source.count("tw::adj_load_cached(") == 2  # the two reads of x
    assert "tw::adj_load_cached(tw_deferred.g0, adj_v" in source and "scatter_cache<float>" in source
