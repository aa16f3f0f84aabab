"""Data-parallel differentiable simulation: every rank rolls out its own batch of throws under a
``wp.Tape``, the gradients are summed over the ranks (tilewarp.distributed), and every rank takes the
same optimiser step.

A launcher throws balls with one initial velocity (the parameter); each ball feels gravity and its
own quadratic air drag (drag coefficients differ from ball to ball, as if the balls differed). The
loss is the mean squared distance of the balls from a target at the end of the flight, over all the
balls of all ranks. Each rank differentiates its share of the loss through its rollout, the
gradients are all-reduced, and gradient descent on the velocity makes the loss fall. ``--check``
runs all the balls in one process on rank 0 and compares losses and gradients step by step.

    python examples/dist_diffsim.py [--device cpu] [--balls 256] [--iterations 30] [--check]
    mpiexec -n 2 python examples/dist_diffsim.py --device cpu --check
    torchrun --nproc_per_node 2 examples/dist_diffsim.py --check
"""
import argparse

import numpy as np

import tilewarp as wp
from tilewarp import distributed as dist

TARGET = (6.0, 0.0, 1.5)
GRAVITY = -9.81


@wp.kernel
def launch_balls(velocity: wp.array(dtype=wp.vec3), x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    x[i] = wp.vec3(0.0, 1.0, 0.0)
    v[i] = velocity[0]


@wp.kernel
def fly(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), drag: wp.array(dtype=float), dt: float,
        x_next: wp.array(dtype=wp.vec3), v_next: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    vi = v[i]
    a = wp.vec3(0.0, GRAVITY, 0.0) - drag[i] * wp.length(vi) * vi
    vn = vi + a * dt
    v_next[i] = vn
    x_next[i] = x[i] + vn * dt


@wp.kernel
def distance_loss(x: wp.array(dtype=wp.vec3), target: wp.vec3, scale: float, loss: wp.array(dtype=float)):
    i = wp.tid()
    d = x[i] - target
    wp.atomic_add(loss, 0, scale * wp.dot(d, d))


def drags(first, count, seed=11):
    """Drag coefficients of balls ``first`` .. ``first + count`` of the whole batch (by ball, so
    any split over ranks gives every ball the same one)."""
    all_balls = np.random.default_rng(seed).uniform(0.02, 0.12, size=first + count)
    return all_balls[first:first + count].astype(np.float32)


class Rollout:
    """One rank's share of the balls: ``loss_and_gradient(velocity)`` differentiates its part of the
    mean over all ``total`` balls."""

    def __init__(self, first, count, total, device, steps=60, dt=0.02):
        self.n, self.steps, self.dt, self.device = count, steps, dt, device
        self.scale = 1.0 / total
        self.drag = wp.array(drags(first, count), dtype=float, device=device)
        self.x = [wp.zeros(count, dtype=wp.vec3, device=device, requires_grad=True) for _ in range(steps + 1)]
        self.v = [wp.zeros(count, dtype=wp.vec3, device=device, requires_grad=True) for _ in range(steps + 1)]

    def loss_and_gradient(self, velocity):
        loss = wp.zeros(1, dtype=float, device=self.device, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(launch_balls, dim=self.n, inputs=[velocity, self.x[0], self.v[0]], device=self.device)
            for k in range(self.steps):
                wp.launch(fly, dim=self.n, inputs=[self.x[k], self.v[k], self.drag, self.dt, self.x[k + 1], self.v[k + 1]],
                          device=self.device)
            wp.launch(distance_loss, dim=self.n, inputs=[self.x[-1], wp.vec3(*TARGET), self.scale, loss],
                      device=self.device)
        tape.backward(loss)
        gradient = wp.clone(velocity.grad)
        tape.zero()  # the states' gradients too: the next rollout reuses the arrays
        return loss, gradient


def optimise(ctx, balls, iterations, learning_rate=0.2):
    """Loss and gradient per iteration on this rank (after the all-reduce: the same on every rank)."""
    first, count = dist.split(balls, ctx.size, ctx.rank)
    rollout = Rollout(first, count, balls, ctx.device)
    velocity = wp.array([wp.vec3(3.0, 4.0, 0.0)], dtype=wp.vec3, device=ctx.device, requires_grad=True)
    history = []
    for _ in range(iterations):
        loss, grad = rollout.loss_and_gradient(velocity)
        ctx.allreduce([loss, grad])  # this rank's share of the mean -> the whole mean, and its gradient
        loss_value, g = float(loss.numpy()[0]), grad.numpy()[0].copy()
        history.append((loss_value, g))
        velocity.assign(wp.array([wp.vec3(*(velocity.numpy()[0] - learning_rate * g))], dtype=wp.vec3,
                                 device=ctx.device))
    return history, velocity.numpy()[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None, help="cpu or cuda:N (default: cuda:<local rank> where GPUs are)")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--balls", type=int, default=256)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--check", action="store_true", help="rank 0 runs all the balls alone and compares")
    a = ap.parse_args(argv)
    wp.config.quiet = True
    ctx = dist.init(a.backend, device=a.device)
    history, velocity = optimise(ctx, a.balls, a.iterations)
    if ctx.rank != 0:
        return None
    losses = [h[0] for h in history]
    print(f"{ctx.size} rank(s) on {ctx.device} ({ctx.backend}), {a.balls} balls: loss {losses[0]:.4f} -> "
          f"{losses[-1]:.4f} in {a.iterations} steps; launch velocity {np.round(velocity, 3).tolist()}")
    if not losses[-1] < losses[0]:
        raise SystemExit("the loss did not fall")
    if a.check:
        alone, _ = optimise(dist.Context(0, 1, 0, "single", ctx.device), a.balls, a.iterations)
        worst = max(max(abs(l1 - l2) / max(abs(l2), 1e-12), float(np.abs(g1 - g2).max() / max(np.abs(g2).max(), 1e-12)))
                    for (l1, g1), (l2, g2) in zip(history, alone))
        print(f"check against one process: largest relative difference in losses and gradients {worst:.2g}")
        if worst > 1e-4:
            raise SystemExit("the data-parallel run differs from the single-process run")
    return history


if __name__ == "__main__":
    main()
