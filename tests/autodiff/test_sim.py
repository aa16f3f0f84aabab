"""A differentiable simulation through wp.Tape: a hanging mass-spring chain stepped by semi-implicit
Euler (spring forces, gravity, damping), one launch per step writing a new state, as Warp's
examples do. The initial velocity is optimised by gradient descent so the chain's free end reaches
a target; the Tape's gradient is checked against central differences of the whole simulation.
"""
from __future__ import annotations

import numpy as np

import tilewarp as tw
from conftest import load_both, need_warp

TEXT = '''
import WP as wp

f64 = wp.float64


@wp.func
def spring(a: wp.vec3d, b: wp.vec3d, rest: wp.float64, k: wp.float64) -> wp.vec3d:
    d = b - a
    n = wp.length(d)
    return d * (k * (n - rest) / n)


@wp.kernel
def step(x0: wp.array(dtype=wp.vec3d), v0: wp.array(dtype=wp.vec3d), rest: wp.float64, k: wp.float64,
         damping: wp.float64, dt: wp.float64, x1: wp.array(dtype=wp.vec3d), v1: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    if i == 0:  # the anchor: pinned where it starts
        x1[i] = x0[i]
        v1[i] = wp.vec3d()
        return
    f = wp.vec3d(f64(0.0), f64(-9.81), f64(0.0)) + spring(x0[i], x0[i - 1], rest, k)
    if i + 1 < x0.shape[0]:
        f = f + spring(x0[i], x0[i + 1], rest, k)
    v = v0[i] + (f - v0[i] * damping) * dt
    x1[i] = x0[i] + v * dt
    v1[i] = v


@wp.kernel
def end_loss(x: wp.array(dtype=wp.vec3d), target: wp.vec3d, loss: wp.array(dtype=wp.float64)):
    d = x[x.shape[0] - 1] - target
    loss[0] = wp.dot(d, d)
'''

MODS = load_both(TEXT)
PARTICLES, STEPS, DT = 12, 60, 0.01
REST, STIFFNESS, DAMPING = 0.1, 60.0, 0.5


class Chain:
    """The states of one simulation (one array pair per step) on one library and device."""

    def __init__(self, mod, device="cpu"):
        self.mod, self.wp, self.device = mod, mod.wp, device
        wp = self.wp
        x = np.zeros((PARTICLES, 3))
        x[:, 0] = np.arange(PARTICLES) * REST  # a horizontal chain at rest length
        self.xs = [wp.array(x, dtype=wp.vec3d, device=device, requires_grad=True)]
        self.xs += [self.state() for _ in range(STEPS)]
        self.vs = [self.state() for _ in range(STEPS + 1)]
        self.loss = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)

    def state(self):
        return self.wp.zeros(PARTICLES, dtype=self.wp.vec3d, device=self.device, requires_grad=True)

    def run(self, target) -> float:
        wp, f = self.wp, self.wp.float64
        for t in range(STEPS):
            wp.launch(self.mod.step, dim=PARTICLES, device=self.device,
                      inputs=[self.xs[t], self.vs[t], f(REST), f(STIFFNESS), f(DAMPING), f(DT)],
                      outputs=[self.xs[t + 1], self.vs[t + 1]])
        wp.launch(self.mod.end_loss, dim=1, inputs=[self.xs[-1], wp.vec3d(*target)], outputs=[self.loss],
                  device=self.device)
        return float(self.loss.numpy()[0])

    def gradient(self, v0, target):
        """(loss, d loss / d initial velocity) through a Tape."""
        self.vs[0].assign(v0)
        tape = self.wp.Tape()
        with tape:
            loss = self.run(target)
        tape.backward(self.loss)
        grad = self.vs[0].grad.numpy().copy()
        tape.zero()
        return loss, grad

    def loss_at(self, v0, target) -> float:
        self.vs[0].assign(v0)
        return self.run(target)


TARGET = np.array([0.6, -0.55, 0.25])


def _central_differences(chain, v0, eps=1e-6):
    grad = np.zeros_like(v0)
    for idx in np.ndindex(*v0.shape):
        hi, lo = v0.copy(), v0.copy()
        hi[idx] += eps
        lo[idx] -= eps
        grad[idx] = (chain.loss_at(hi, TARGET) - chain.loss_at(lo, TARGET)) / (2 * eps)
    return grad


def test_tape_gradient_matches_finite_differences(device):
    chain = Chain(MODS[0], device)
    v0 = np.random.default_rng(3).uniform(-0.5, 0.5, (PARTICLES, 3))
    loss, grad = chain.gradient(v0, TARGET)
    assert loss > 1e-2
    fd = _central_differences(chain, v0)
    assert np.abs(fd[-3:]).min() > 1e-3  # the particles near the end move it most
    np.testing.assert_allclose(grad[0], 0.0)  # the anchor's velocity is overwritten at once
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)


def test_gradient_descent_reaches_the_target(device):
    chain = Chain(MODS[0], device)
    v0 = np.zeros((PARTICLES, 3))
    losses = []
    for _ in range(10):
        loss, grad = chain.gradient(v0, TARGET)
        losses.append(loss)
        v0 = v0 - 2.0 * grad
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.01 * losses[0], losses  # 1.48 -> 0.0025 (the end starts 1.2 away)
    chain.loss_at(v0, TARGET)
    assert np.linalg.norm(chain.xs[-1].numpy()[-1] - TARGET) < 0.05


def test_same_gradient_as_warp():
    """No dynamic loops and no overwritten values: Warp's Tape is right here."""
    need_warp(MODS)
    v0 = np.random.default_rng(4).uniform(-0.5, 0.5, (PARTICLES, 3))
    (l_tw, g_tw), (l_wp, g_wp) = (Chain(mod).gradient(v0, TARGET) for mod in MODS)
    np.testing.assert_allclose(l_tw, l_wp, rtol=1e-12)
    np.testing.assert_allclose(g_tw, g_wp, rtol=1e-9, atol=1e-12)
