"""Stable fluids: two jets of coloured dye swirl through a closed 2-D box of incompressible fluid.

Jos Stam's method, one step per frame, on a staggered (MAC) grid: dye lives at cell centres, each
velocity component on the cell faces it crosses. Velocity and dye are carried along the flow
semi-Lagrangianly (each sample looks back along the velocity and interpolates there: stable at any
time step), then the velocity is projected onto its divergence-free part: a pressure Poisson
equation solved by Jacobi iterations, whose gradient is subtracted. On the staggered grid the
divergence of that gradient is exactly the Laplacian solved for, so the projection leaves no
divergence behind. The walls let nothing through: their faces keep zero velocity.

    python examples/stable_fluids.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]
"""
import functools
import math
from typing import Any

import numpy as np

import example_utils
import tilewarp as wp


@wp.func
def sample(f: wp.array2d(dtype=Any), x: float, y: float):
    """Bilinear interpolation of f at index coordinates (x, y), clamped to the array."""
    x = wp.clamp(x, 0.0, float(f.shape[0] - 1))
    y = wp.clamp(y, 0.0, float(f.shape[1] - 1))
    i = wp.min(int(x), f.shape[0] - 2)
    j = wp.min(int(y), f.shape[1] - 2)
    s = x - float(i)
    t = y - float(j)
    return wp.lerp(wp.lerp(f[i, j], f[i + 1, j], s), wp.lerp(f[i, j + 1], f[i + 1, j + 1], s), t)


@wp.func
def velocity(ux: wp.array2d(dtype=float), uy: wp.array2d(dtype=float), p: wp.vec2):
    """The velocity at p (in cell widths from the box's corner): ux[i, j] sits at (i, j + 1/2),
    uy[i, j] at (i + 1/2, j)."""
    return wp.vec2(sample(ux, p[0], p[1] - 0.5), sample(uy, p[0] - 0.5, p[1]))


@wp.func
def trace_back(ux: wp.array2d(dtype=float), uy: wp.array2d(dtype=float), p: wp.vec2, dt_over_dx: float):
    """Where the fluid at p was a step ago (from the velocity at the midpoint: second order)."""
    mid = p - 0.5 * dt_over_dx * velocity(ux, uy, p)
    return p - dt_over_dx * velocity(ux, uy, mid)


@wp.kernel
def inject(ux: wp.array2d(dtype=float), uy: wp.array2d(dtype=float), dye: wp.array2d(dtype=wp.vec3),
           center: wp.vec2, radius: float, jet: wp.vec2, color: wp.vec3):
    i, j = wp.tid()  # over (n + 1) x (n + 1): faces and cells
    n = dye.shape[0]
    if i > 0 and i < n and j < n and wp.length(wp.vec2(float(i), float(j) + 0.5) - center) < radius:
        ux[i, j] = jet[0]
    if j > 0 and j < n and i < n and wp.length(wp.vec2(float(i) + 0.5, float(j)) - center) < radius:
        uy[i, j] = jet[1]
    if i < n and j < n and wp.length(wp.vec2(float(i) + 0.5, float(j) + 0.5) - center) < radius:
        dye[i, j] = color  # a nozzle: fluid leaves it at full colour


@wp.kernel
def advect(ux: wp.array2d(dtype=float), uy: wp.array2d(dtype=float), dye: wp.array2d(dtype=wp.vec3),
           dt_over_dx: float, ux_out: wp.array2d(dtype=float), uy_out: wp.array2d(dtype=float),
           dye_out: wp.array2d(dtype=wp.vec3)):
    i, j = wp.tid()  # over (n + 1) x (n + 1): faces and cells
    n = dye.shape[0]
    if i > 0 and i < n and j < n:  # inner x-faces (the walls' stay at zero)
        p = trace_back(ux, uy, wp.vec2(float(i), float(j) + 0.5), dt_over_dx)
        ux_out[i, j] = sample(ux, p[0], p[1] - 0.5)
    if j > 0 and j < n and i < n:
        p = trace_back(ux, uy, wp.vec2(float(i) + 0.5, float(j)), dt_over_dx)
        uy_out[i, j] = sample(uy, p[0] - 0.5, p[1])
    if i < n and j < n:
        p = trace_back(ux, uy, wp.vec2(float(i) + 0.5, float(j) + 0.5), dt_over_dx)
        dye_out[i, j] = sample(dye, p[0] - 0.5, p[1] - 0.5)


@wp.kernel
def divergence(ux: wp.array2d(dtype=float), uy: wp.array2d(dtype=float), inv_dx: float,
               div: wp.array2d(dtype=float)):
    i, j = wp.tid()
    div[i, j] = inv_dx * (ux[i + 1, j] - ux[i, j] + uy[i, j + 1] - uy[i, j])


@wp.kernel
def jacobi(p: wp.array2d(dtype=float), div: wp.array2d(dtype=float), dx: float,
           p_out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    n = p.shape[0]
    # neighbours past a wall do not count: no pressure gradient (hence no flow) across the wall
    total = float(0.0)
    count = float(0.0)
    if i > 0:
        total += p[i - 1, j]
        count += 1.0
    if i < n - 1:
        total += p[i + 1, j]
        count += 1.0
    if j > 0:
        total += p[i, j - 1]
        count += 1.0
    if j < n - 1:
        total += p[i, j + 1]
        count += 1.0
    p_out[i, j] = (total - dx * dx * div[i, j]) / count


@wp.kernel
def project(ux: wp.array2d(dtype=float), uy: wp.array2d(dtype=float), p: wp.array2d(dtype=float),
            inv_dx: float):
    i, j = wp.tid()  # over (n + 1) x (n + 1) faces
    n = p.shape[0]
    if i > 0 and i < n and j < n:
        ux[i, j] = ux[i, j] - inv_dx * (p[i, j] - p[i - 1, j])
    if j > 0 and j < n and i < n:
        uy[i, j] = uy[i, j] - inv_dx * (p[i, j] - p[i, j - 1])


@functools.cache
def grid_mesh(m):
    """An m x m grid of vertices over the unit square in the x-y plane, at the centres of m x m
    blocks of cells (in the dye's (x, y) order), and its triangles."""
    ij = np.stack(np.meshgrid(np.arange(m), np.arange(m), indexing="ij"), -1).reshape(-1, 2)
    return np.concatenate([(ij + 0.5) / m, np.zeros((len(ij), 1))], axis=1), example_utils.grid_triangles(m)


class Example(example_utils.Example):
    image_options = {"camera_pos": (0.5, 0.5, 2.0), "camera_target": (0.5, 0.5, 0.0),
                     "projection": "orthographic"}

    def __init__(self, resolution=256, pressure_iterations=60, stage_resolution=64, image_resolution=128,
                 **kwargs):
        super().__init__(**kwargs)
        n = self.n = resolution
        self.dx = 1.0 / n  # the box is 1 x 1
        self.iterations = pressure_iterations
        self.stage_resolution, self.image_resolution = stage_resolution, image_resolution
        dev = self.device
        self.ux = wp.zeros((n + 1, n), dtype=float, device=dev)  # x-velocity on the faces across x
        self.uy = wp.zeros((n, n + 1), dtype=float, device=dev)
        self.ux_next, self.uy_next = wp.zeros_like(self.ux), wp.zeros_like(self.uy)
        self.dye = wp.zeros((n, n), dtype=wp.vec3, device=dev)
        self.dye_next = wp.zeros_like(self.dye)
        self.div = wp.zeros((n, n), dtype=float, device=dev)
        self.p, self.p_next = wp.zeros_like(self.div), wp.zeros_like(self.div)
        # (centre in cell widths, colour) of each jet; they sweep slowly side to side
        self.jets = [((0.25 * n, 0.1 * n), wp.vec3(1.0, 0.45, 0.1)),
                     ((0.75 * n, 0.1 * n), wp.vec3(0.1, 0.6, 1.0))]
        self.jet_speed = 1.0  # box widths per second
        self.jet_radius = 0.04 * n

    def step(self):
        dt = self.frame_dt
        faces = (self.n + 1, self.n + 1)
        for k, (center, color) in enumerate(self.jets):
            angle = 0.5 * math.pi + (0.5 if k == 0 else -0.5) * math.sin(0.7 * self.sim_time + k)
            jet = wp.vec2(self.jet_speed * math.cos(angle), self.jet_speed * math.sin(angle))
            wp.launch(inject, dim=faces, device=self.device,
                      inputs=[self.ux, self.uy, self.dye, wp.vec2(*center), self.jet_radius, jet, color])
        wp.launch(advect, dim=faces, device=self.device, inputs=[self.ux, self.uy, self.dye, dt / self.dx],
                  outputs=[self.ux_next, self.uy_next, self.dye_next])
        self.ux, self.ux_next = self.ux_next, self.ux
        self.uy, self.uy_next = self.uy_next, self.uy
        self.dye, self.dye_next = self.dye_next, self.dye
        self.make_incompressible()
        self.sim_time += dt

    def divergence(self):
        """The velocity's divergence in each cell (1/s), computed into (and returned as) ``self.div``."""
        wp.launch(divergence, dim=(self.n, self.n), device=self.device,
                  inputs=[self.ux, self.uy, 1.0 / self.dx], outputs=[self.div])
        return self.div

    def make_incompressible(self):
        self.divergence()
        for _ in range(self.iterations):  # warm-started from the last step's pressure
            wp.launch(jacobi, dim=(self.n, self.n), device=self.device, inputs=[self.p, self.div, self.dx],
                      outputs=[self.p_next])
            self.p, self.p_next = self.p_next, self.p
        wp.launch(project, dim=(self.n + 1, self.n + 1), device=self.device,
                  inputs=[self.ux, self.uy, self.p, 1.0 / self.dx])

    def draw(self, renderer):
        # the picture gets a finer mesh; the stage keeps a small one, as it stores every frame's
        m = min(self.n, self.image_resolution if renderer is self.image else self.stage_resolution)
        s = self.n // m
        dye = self.dye.numpy()[: m * s, : m * s].reshape(m, s, m, s, 3).mean(axis=(1, 3))
        colors = np.clip(np.array([0.02, 0.03, 0.08]) + dye, 0.0, 1.0)  # dye glows on a dark background
        renderer.render_mesh("dye", *grid_mesh(m), colors=colors.reshape(-1, 3))


def main():
    args = example_utils.parser("stable_fluids", __doc__, num_frames=300).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    print(f"{example.n} x {example.n} cells, {example.iterations} Jacobi iterations per step")
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
