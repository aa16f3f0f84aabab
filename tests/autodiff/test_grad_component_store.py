"""Writes of single components of array elements (``y[i][c] = v``, ``y[i].z = v``, ``m[i][r, c] = v``):
each write's gradient is its component's, however many components of one element a kernel writes
(a read-modify-write of the whole element handed the other components' gradients back once per
write: 26 instead of 10 in Warp's quaternion test)."""
import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module, warp

TEXT = '''
import WP as wp


@wp.kernel
def parts(x: wp.array2d(dtype=float), q: wp.array2d(dtype=wp.quat), v: wp.array(dtype=wp.vec3),
          m: wp.array(dtype=wp.mat22)):
    i, j = wp.tid()
    s = x[i, j]
    q[i, j][0] = 1.0 * s
    q[i, j][1] = 2.0 * s
    q[i, j].z = 3.0 * s
    q[i, j][3] = 4.0 * s
    v[i * 3 + j][2] = s * s
    v[i * 3 + j].x = wp.sin(s)
    m[i * 3 + j][1, 0] = 5.0 * s
    m[i * 3 + j][0, 1] = -s
'''


def _run(lib, x, gq, gv, gm, device):
    mod = load_module(TEXT, "tilewarp" if lib is wp else "warp")
    n = x.shape[0] * x.shape[1]
    xa = lib.array(x, dtype=float, requires_grad=True, device=device)
    q = lib.zeros(x.shape, dtype=lib.quat, requires_grad=True, device=device)
    v = lib.zeros(n, dtype=lib.vec3, requires_grad=True, device=device)
    m = lib.zeros(n, dtype=lib.mat22, requires_grad=True, device=device)
    tape = lib.Tape()
    with tape:
        lib.launch(mod.parts, x.shape, inputs=[xa], outputs=[q, v, m], device=device)
    tape.backward(grads={q: lib.array(gq, dtype=lib.quat, device=device),
                         v: lib.array(gv, dtype=lib.vec3, device=device),
                         m: lib.array(gm, dtype=lib.mat22, device=device)})
    return q.numpy(), v.numpy(), m.numpy(), xa.grad.numpy()


def test_component_writes_have_their_components_gradients(device, rng):
    x = rng.uniform(0.5, 1.5, (2, 3)).astype(np.float32)
    gq = rng.standard_normal((2, 3, 4)).astype(np.float32)
    gv = rng.standard_normal((6, 3)).astype(np.float32)
    gm = rng.standard_normal((6, 2, 2)).astype(np.float32)
    q, v, m, gx = _run(wp, x, gq, gv, gm, device)
    s = x.reshape(-1)
    np.testing.assert_allclose(q.reshape(-1, 4), s[:, None] * [1.0, 2.0, 3.0, 4.0], rtol=1e-6)
    np.testing.assert_allclose(v[:, 2], s * s, rtol=1e-6)
    np.testing.assert_allclose(v[:, 0], np.sin(s), rtol=1e-6)
    assert not v[:, 1].any()
    np.testing.assert_allclose(m[:, 1, 0], 5 * s, rtol=1e-6)
    np.testing.assert_allclose(m[:, 0, 1], -s, rtol=1e-6)
    want = (gq.reshape(-1, 4) @ [1.0, 2.0, 3.0, 4.0] + gv[:, 2] * 2 * s + gv[:, 0] * np.cos(s)
            + 5 * gm[:, 1, 0] - gm[:, 0, 1])
    np.testing.assert_allclose(gx.reshape(-1), want, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(warp is None, reason="warp-lang (the behavioural oracle) is not installed")
def test_component_writes_against_warp(rng):
    x = rng.uniform(0.5, 1.5, (2, 3)).astype(np.float32)
    grads = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (6, 3), (6, 2, 2))]
    ours, theirs = _run(wp, x, *grads, "cpu"), _run(warp, x, *grads, "cpu")
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


PARTS = '''
import WP as wp


@wp.kernel
def parts(x: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.quat), t: wp.array(dtype=wp.transform)):
    i = wp.tid()
    t[i].p = x[i] * 2.0
    t[i].q = q[i]
'''


@pytest.mark.parametrize("lib", ["tilewarp", "warp"])
def test_transform_parts_of_array_elements(device, rng, lib):
    """``t[i].p = v`` / ``t[i].q = r``: each part's gradient once (Warp's test_transform_array_assign)."""
    if lib == "warp" and (warp is None or device != "cpu"):
        pytest.skip("warp-lang's CPU is the oracle")
    m = wp if lib == "tilewarp" else warp
    mod = load_module(PARTS, lib)
    x = m.array(rng.standard_normal((4, 3)), dtype=m.vec3, requires_grad=True, device=device)
    q = m.array(rng.standard_normal((4, 4)), dtype=m.quat, requires_grad=True, device=device)
    t = m.zeros(4, dtype=m.transform, requires_grad=True, device=device)
    g = rng.standard_normal((4, 7)).astype(np.float32)
    tape = m.Tape()
    with tape:
        m.launch(mod.parts, 4, inputs=[x, q], outputs=[t], device=device)
    tape.backward(grads={t: m.array(g, dtype=m.transform, device=device)})
    np.testing.assert_allclose(t.numpy(), np.concatenate([2 * x.numpy(), q.numpy()], axis=1), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * g[:, :3], rtol=1e-6)
    np.testing.assert_allclose(q.grad.numpy(), g[:, 3:], rtol=1e-6)
