"""SPH dam break: a block of water collapses in a closed box and sloshes from wall to wall.

Weakly compressible smoothed-particle hydrodynamics: each particle's density is a kernel-weighted
sum over its neighbours, a stiff equation of state turns it into pressure, and pressure gradient,
viscosity and gravity accelerate the particles. Density and pressure force use the same (spiky)
kernel, so pressure forces do no work beyond what the compression stored: energy only drains away,
through viscosity and the walls. Neighbours come from a uniform grid with cells one smoothing
length wide, rebuilt every substep as per-cell linked lists (one atomic exchange per particle).

    python examples/sph_fluid.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]
"""
import math

import numpy as np

import example_utils
import tilewarp as wp
from example_utils import cell_index, first_in_cell

GRAVITY = wp.constant(wp.vec3(0.0, -9.81, 0.0))


@wp.func
def cell_of(x: wp.vec3, h: float, dims: wp.vec3i):
    return wp.vec3i(wp.clamp(int(x[0] / h), 0, dims[0] - 1), wp.clamp(int(x[1] / h), 0, dims[1] - 1),
                    wp.clamp(int(x[2] / h), 0, dims[2] - 1))


@wp.kernel
def build_grid(x: wp.array(dtype=wp.vec3), h: float, dims: wp.vec3i, head: wp.array(dtype=int),
               next_particle: wp.array(dtype=int)):
    i = wp.tid()
    # push i onto its cell's list: the old head becomes i's successor
    next_particle[i] = wp.atomic_exch(head, cell_index(cell_of(x[i], h, dims), dims), i)


@wp.kernel
def compute_density(x: wp.array(dtype=wp.vec3), head: wp.array(dtype=int), next_particle: wp.array(dtype=int),
                    h: float, dims: wp.vec3i, mass: float, rest_density: float, stiffness: float,
                    density: wp.array(dtype=float), pressure: wp.array(dtype=float)):
    i = wp.tid()
    xi = x[i]
    c = cell_of(xi, h, dims)
    w = 15.0 / (wp.pi * wp.pow(h, 6.0))  # spiky kernel: W(r) = w (h - r)^3
    rho = float(0.0)
    for dx in range(-1, 2):
        for dy in range(-1, 2):
            for dz in range(-1, 2):
                j = first_in_cell(head, c + wp.vec3i(dx, dy, dz), dims)
                while j >= 0:
                    q = h - wp.length(xi - x[j])
                    if q > 0.0:
                        rho += mass * w * q * q * q
                    j = next_particle[j]
    density[i] = rho
    pressure[i] = stiffness * wp.max(rho - rest_density, 0.0)  # no suction: surface particles would clump


@wp.kernel
def step(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), density: wp.array(dtype=float),
         pressure: wp.array(dtype=float), head: wp.array(dtype=int), next_particle: wp.array(dtype=int),
         h: float, dims: wp.vec3i, mass: float, viscosity: float, box: wp.vec3, dt: float,
         x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    xi = x[i]
    vi = v[i]
    rho_i = density[i]
    p_i = pressure[i] / (rho_i * rho_i)
    w = 45.0 / (wp.pi * wp.pow(h, 6.0))  # |grad W(r)| = w (h - r)^2, and for viscosity w (h - r)
    a = GRAVITY
    c = cell_of(xi, h, dims)
    for dx in range(-1, 2):
        for dy in range(-1, 2):
            for dz in range(-1, 2):
                j = first_in_cell(head, c + wp.vec3i(dx, dy, dz), dims)
                while j >= 0:
                    d = xi - x[j]
                    r = wp.length(d)
                    if r < h and j != i and r > 1e-9:
                        rho_j = density[j]
                        # symmetric in i and j: pair forces are equal and opposite (momentum is conserved)
                        p_ij = mass * (p_i + pressure[j] / (rho_j * rho_j))
                        a += p_ij * w * (h - r) * (h - r) / r * d
                        a += viscosity * mass / (rho_i * rho_j) * w * (h - r) * (v[j] - vi)
                    j = next_particle[j]
    vi = vi + a * dt
    xi = xi + vi * dt
    for k in range(3):  # the box's walls: stop at the wall, bounce back with a little restitution
        if xi[k] < 0.0:
            xi[k] = 0.0
            vi[k] = -0.3 * vi[k]
        if xi[k] > box[k]:
            xi[k] = box[k]
            vi[k] = -0.3 * vi[k]
    x_out[i] = xi
    v_out[i] = vi


class Example(example_utils.Example):
    image_options = {"camera_pos": (0.2, 0.9, 1.6), "camera_target": (0.5, 0.2, 0.2)}

    def __init__(self, block=(20, 24, 16), spacing=0.02, box=(1.0, 0.6, 0.4), substeps=14, seed=7, **kwargs):
        super().__init__(**kwargs)
        self.spacing = spacing
        self.h = 2.0 * spacing  # smoothing length: about 30 neighbours
        self.rest_density = 1000.0
        self.box = wp.vec3(*box)
        speed_of_sound = 12.0  # ~4x the fastest flow: density varies by a few percent
        self.stiffness = speed_of_sound**2
        self.viscosity = 0.5  # Pa s: damps particle noise, keeps the splash
        self.substeps = substeps
        self.sim_dt = self.frame_dt / substeps  # under 0.4 h / speed_of_sound (CFL)

        # a block of water in the box's corner: a lattice, jittered a hair to break its symmetry
        rng = np.random.default_rng(seed)
        ijk = np.stack(np.meshgrid(*[np.arange(n) for n in block], indexing="ij"), -1).reshape(-1, 3)
        pos = (ijk + 0.5) * spacing + rng.uniform(-0.005, 0.005, ijk.shape) * spacing
        self.num_particles = len(pos)
        # mass chosen so the block's interior starts exactly at rest density
        offsets = np.stack(np.meshgrid(*[np.arange(-2, 3)] * 3, indexing="ij"), -1).reshape(-1, 3) * spacing
        q = np.maximum(self.h - np.linalg.norm(offsets, axis=1), 0.0)
        self.mass = self.rest_density / np.sum(15.0 / (math.pi * self.h**6) * q**3)

        self.x = wp.array(pos, dtype=wp.vec3, device=self.device)
        self.v = wp.zeros_like(self.x)
        self.x_next, self.v_next = wp.zeros_like(self.x), wp.zeros_like(self.x)
        self.density = wp.zeros(self.num_particles, dtype=float, device=self.device)
        self.pressure = wp.zeros_like(self.density)
        self.dims = wp.vec3i(*[max(1, math.ceil(b / self.h)) for b in box])
        self.head = wp.zeros(self.dims[0] * self.dims[1] * self.dims[2], dtype=int, device=self.device)
        self.next_particle = wp.zeros(self.num_particles, dtype=int, device=self.device)

    def step(self):
        for _ in range(self.substeps):
            self.head.fill_(-1)
            wp.launch(build_grid, dim=self.num_particles, device=self.device,
                      inputs=[self.x, self.h, self.dims, self.head, self.next_particle])
            wp.launch(compute_density, dim=self.num_particles, device=self.device,
                      inputs=[self.x, self.head, self.next_particle, self.h, self.dims, self.mass,
                              self.rest_density, self.stiffness], outputs=[self.density, self.pressure])
            wp.launch(step, dim=self.num_particles, device=self.device,
                      inputs=[self.x, self.v, self.density, self.pressure, self.head, self.next_particle,
                              self.h, self.dims, self.mass, self.viscosity, self.box, self.sim_dt],
                      outputs=[self.x_next, self.v_next])
            self.x, self.x_next = self.x_next, self.x
            self.v, self.v_next = self.v_next, self.v
        self.sim_time += self.frame_dt

    def energy(self):
        """Kinetic plus gravitational energy (J): viscosity and the walls can only take it away."""
        x, v = self.x.numpy().astype(np.float64), self.v.numpy().astype(np.float64)
        return self.mass * (0.5 * np.sum(v * v) + 9.81 * np.sum(x[:, 1]))

    def draw(self, renderer):
        speed = np.linalg.norm(self.v.numpy(), axis=1)
        t = np.clip(speed / 2.0, 0.0, 1.0)[:, None]  # deep blue at rest, pale cyan at 2 m/s and more
        colors = (1.0 - t) * np.array([0.1, 0.3, 0.8]) + t * np.array([0.75, 0.95, 1.0])
        renderer.render_points("fluid", self.x, 0.5 * self.spacing, colors=colors)
        b = self.box
        corners = np.array([[x, y, z] for x in (0.0, b[0]) for y in (0.0, b[1]) for z in (0.0, b[2])])
        edges = [0, 1, 2, 3, 4, 5, 6, 7, 0, 2, 1, 3, 4, 6, 5, 7, 0, 4, 1, 5, 2, 6, 3, 7]
        renderer.render_line_list("box", corners, edges, color=(0.3, 0.3, 0.3), radius=0.003)


def main():
    args = example_utils.parser("sph_fluid", __doc__, num_frames=240).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    print(f"{example.num_particles} particles, {example.substeps} substeps per frame")
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
