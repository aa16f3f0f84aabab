"""Bouncing particles: gravity, air drag and an inelastic floor, integrated with sub-steps.

Runs on the default device (the GPU when one is present, otherwise all CPU cores), checks the
result against a float64 NumPy integration of the same equations, and prints what a user can
verify: the device, the speed, the final height statistics and the deviation from NumPy.
Usage: python examples/bouncing_particles.py [--n 1000000] [--frames 60] [--device cpu]
"""
import argparse
import time

import numpy as np

import tilewarp as wp

GRAVITY = wp.constant(-9.8)
RESTITUTION = 0.5


@wp.func
def accel(v: wp.vec3, damping: float):
    return wp.vec3(0.0, GRAVITY, 0.0) - damping * v


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float, n_sub: int):
    i = wp.tid()
    xi = x[i]
    vi = v[i]
    for s in range(n_sub):
        vi = vi + accel(vi, 0.1) * dt
        xi = xi + vi * dt
        if xi[1] < 0.0:
            xi = wp.vec3(xi[0], 0.0, xi[2])
            vi = wp.vec3(vi[0], -RESTITUTION * vi[1], vi[2])
    x[i] = xi
    v[i] = vi


def reference(x, v, dt, n_sub, frames):
    """The same equations in float64 NumPy."""
    x, v = x.astype(np.float64), v.astype(np.float64)
    g = np.array([0.0, -9.8, 0.0])
    for _ in range(frames):
        for _ in range(n_sub):
            v = v + (g - 0.1 * v) * dt
            x = x + v * dt
            below = x[:, 1] < 0.0
            x[below, 1] = 0.0
            v[below, 1] *= -RESTITUTION
    return x, v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--substeps", type=int, default=8)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()

    device = wp.get_device(args.device)
    rng = np.random.default_rng(42)
    x0 = (rng.random((args.n, 3)) * [10.0, 5.0, 10.0]).astype(np.float32)
    v0 = (rng.standard_normal((args.n, 3)) * 2.0).astype(np.float32)
    x = wp.array(x0, dtype=wp.vec3, device=device)
    v = wp.array(v0, dtype=wp.vec3, device=device)
    dt = 1.0 / 60.0 / args.substeps

    wp.launch(integrate, dim=args.n, inputs=[x, v, dt, args.substeps], device=device)  # compile + warm up
    x.assign(x0)
    v.assign(v0)
    wp.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.frames):
        wp.launch(integrate, dim=args.n, inputs=[x, v, dt, args.substeps], device=device)
    wp.synchronize()
    elapsed = time.perf_counter() - t0

    xs = x.numpy()
    check = min(args.n, 20_000)
    ref_x, _ = reference(x0[:check], v0[:check], dt, args.substeps, args.frames)
    err = np.abs(xs[:check] - ref_x).max()
    steps = args.n * args.frames * args.substeps
    print(f"device: {device} ({device.name})")
    print(f"{args.n} particles, {args.frames} frames x {args.substeps} substeps in {elapsed * 1e3:.1f} ms "
          f"({steps / elapsed / 1e9:.2f} G particle-steps/s)")
    print(f"height after {args.frames / 60:.1f} s: min {xs[:, 1].min():.4f}  mean {xs[:, 1].mean():.4f}  "
          f"max {xs[:, 1].max():.4f}")
    print(f"max |x - numpy float64 reference| over {check} particles: {err:.2e}")
    if not (xs[:, 1].min() >= 0.0 and err < 1e-2):
        raise SystemExit("FAILED: result disagrees with the NumPy reference")
    print("OK")


if __name__ == "__main__":
    main()
