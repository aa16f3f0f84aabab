"""Cloth on a sphere: a square sheet falls onto a ball, drapes over it and slides off its sides.

A mass-spring cloth on an N x N grid of particles: stretch springs to the 4 nearest neighbours,
shear springs along the diagonals and bend springs two particles away, each a spring with a damper
along it. On a grid every particle knows its 12 neighbours, so one thread per particle gathers its
spring forces (no atomics) and advances it with semi-implicit Euler. Contacts with the sphere and
the ground push the particle out, cancel its velocity into the surface and apply Coulomb friction.

    python examples/cloth_sphere.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]
"""
import numpy as np

import example_utils
import tilewarp as wp

GRAVITY = wp.constant(wp.vec3(0.0, -9.81, 0.0))


@wp.func
def spring_force(xi: wp.vec3, vi: wp.vec3, xj: wp.vec3, vj: wp.vec3, rest: float, k: float, c: float):
    d = xj - xi
    length = wp.length(d)
    n = d / wp.max(length, 1e-9)
    return (k * (length - rest) + c * wp.dot(vj - vi, n)) * n


@wp.func
def collide(x: wp.vec3, v: wp.vec3, n: wp.vec3, depth: float, mu: float):
    """Push x out along the surface normal n by depth; cancel the velocity into the surface and take
    friction (at most mu times that change) off the sliding velocity."""
    vn = wp.dot(v, n)
    if vn < 0.0:
        vt = v - vn * n
        speed = wp.length(vt)
        v = vt * wp.max(1.0 + mu * vn / wp.max(speed, 1e-9), 0.0)
    return x + depth * n, v


@wp.kernel
def step(x: wp.array2d(dtype=wp.vec3), v: wp.array2d(dtype=wp.vec3), spacing: float, k_stretch: float,
         k_shear: float, k_bend: float, damping: float, mass: float, drag: float, center: wp.vec3,
         radius: float, thickness: float, mu: float, dt: float,
         x_out: wp.array2d(dtype=wp.vec3), v_out: wp.array2d(dtype=wp.vec3)):
    i, j = wp.tid()
    n = x.shape[0]
    xi = x[i, j]
    vi = v[i, j]
    f = mass * GRAVITY - drag * vi
    for di in range(-2, 3):
        for dj in range(-2, 3):
            a = wp.abs(di)
            b = wp.abs(dj)
            # which spring (if any) joins (i, j) to this neighbour: stretch, shear or bend
            k = float(0.0)
            if a + b == 1:
                k = k_stretch
            elif a == 1 and b == 1:
                k = k_shear
            elif (a == 2 and b == 0) or (a == 0 and b == 2):
                k = k_bend
            ni = i + di
            nj = j + dj
            if k > 0.0 and ni >= 0 and ni < n and nj >= 0 and nj < n:
                rest = spacing * wp.sqrt(float(a * a + b * b))
                f += spring_force(xi, vi, x[ni, nj], v[ni, nj], rest, k, damping)
    vi = vi + f / mass * dt
    xi = xi + vi * dt
    # contacts, thickness apart so the cloth's triangles stay outside the surfaces
    d = xi - center
    dist = wp.length(d)
    if dist < radius + thickness:
        xi, vi = collide(xi, vi, d / dist, radius + thickness - dist, mu)
    if xi[1] < thickness:
        xi, vi = collide(xi, vi, wp.vec3(0.0, 1.0, 0.0), thickness - xi[1], mu)
    x_out[i, j] = xi
    v_out[i, j] = vi


class Example(example_utils.Example):
    image_options = {"camera_pos": (1.3, 1.2, 1.8), "camera_target": (0.0, 0.45, 0.0)}

    def __init__(self, resolution=48, size=1.6, height=1.4, substeps=32, **kwargs):
        super().__init__(**kwargs)
        self.n = resolution
        self.spacing = size / (resolution - 1)
        self.mass = 0.2 * size * size / resolution**2  # a light fabric: 200 g/m^2
        # N/m per spring: on a square grid that is the sheet's stiffness whatever the resolution;
        # hanging from the ball it stretches by ~1%. Shear and bending are softer.
        self.k_stretch, self.k_shear, self.k_bend = 100.0, 50.0, 5.0
        self.damping = 0.005  # N s/m along each spring: well inside explicit Euler's limit
        self.drag = 0.5 * self.mass  # air: light compared with gravity
        self.sphere_center, self.sphere_radius = wp.vec3(0.0, 0.5, 0.0), 0.5
        self.thickness, self.mu = 0.01, 0.3
        self.substeps = substeps
        self.sim_dt = self.frame_dt / substeps

        # a flat sheet above the ball, slightly rotated so it does not land perfectly symmetric
        u = np.linspace(-0.5 * size, 0.5 * size, resolution)
        gx, gz = np.meshgrid(u, u, indexing="ij")
        angle = 0.3
        pos = np.stack([np.cos(angle) * gx - np.sin(angle) * gz, np.full_like(gx, height),
                        np.sin(angle) * gx + np.cos(angle) * gz], -1)
        self.x = wp.array(pos, dtype=wp.vec3, device=self.device)
        self.v = wp.zeros_like(self.x)
        self.x_next, self.v_next = wp.zeros_like(self.x), wp.zeros_like(self.x)
        self.triangles = example_utils.grid_triangles(resolution)

    def step(self):
        for _ in range(self.substeps):
            wp.launch(step, dim=(self.n, self.n), device=self.device,
                      inputs=[self.x, self.v, self.spacing, self.k_stretch, self.k_shear, self.k_bend,
                              self.damping, self.mass, self.drag, self.sphere_center, self.sphere_radius,
                              self.thickness, self.mu, self.sim_dt],
                      outputs=[self.x_next, self.v_next])
            self.x, self.x_next = self.x_next, self.x
            self.v, self.v_next = self.v_next, self.v
        self.sim_time += self.frame_dt

    def draw(self, renderer):
        renderer.render_ground(size=2.0)
        renderer.render_sphere("ball", tuple(self.sphere_center), (0.0, 0.0, 0.0, 1.0), self.sphere_radius,
                               color=(0.8, 0.3, 0.25))
        renderer.render_mesh("cloth", self.x.numpy().reshape(-1, 3), self.triangles, colors=(0.25, 0.5, 0.8))


def main():
    args = example_utils.parser("cloth_sphere", __doc__, num_frames=240).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    print(f"{example.n} x {example.n} particles, {example.substeps} substeps per frame")
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
