"""DEM granular pile: a column of spheres collapses onto the ground and settles into a heap.

Discrete element method: every pair of touching spheres (and each sphere and the ground) pushes apart
with a spring-dashpot normal force and resists sliding with Coulomb friction. Neighbours come from a
uniform grid rebuilt every substep: one atomic exchange per particle threads it onto its cell's
linked list. Semi-implicit Euler, 32 substeps per frame (a contact lasts about 20 substeps).

    python examples/dem_particles.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]
"""
import numpy as np

import example_utils
import tilewarp as wp
from example_utils import cell_index, first_in_cell

GRAVITY = wp.constant(wp.vec3(0.0, -9.81, 0.0))


@wp.func
def cell_of(x: wp.vec3, cell_size: float, dims: wp.vec3i):
    """The cell holding x, on a grid centred on the origin across and starting at the ground. A
    particle outside it falls into a border cell: still found, since distances are checked."""
    c = wp.vec3i(int(wp.floor(x[0] / cell_size)) + dims[0] // 2, int(wp.floor(x[1] / cell_size)),
                 int(wp.floor(x[2] / cell_size)) + dims[2] // 2)
    return wp.vec3i(wp.clamp(c[0], 0, dims[0] - 1), wp.clamp(c[1], 0, dims[1] - 1),
                    wp.clamp(c[2], 0, dims[2] - 1))


@wp.kernel
def build_grid(x: wp.array(dtype=wp.vec3), cell_size: float, dims: wp.vec3i,
               head: wp.array(dtype=int), next_particle: wp.array(dtype=int)):
    i = wp.tid()
    # push i onto its cell's list: the old head becomes i's successor
    next_particle[i] = wp.atomic_exch(head, cell_index(cell_of(x[i], cell_size, dims), dims), i)


@wp.func
def contact_force(n: wp.vec3, overlap: float, v_rel: wp.vec3, k_n: float, c_n: float, mu: float, c_t: float):
    """Force on a body touching another along normal ``n`` (pointing at it), ``v_rel`` its velocity
    relative to the other: spring-dashpot along n, regularised Coulomb friction across it."""
    vn = wp.dot(v_rel, n)
    fn = wp.max(k_n * overlap - c_n * vn, 0.0)  # contacts push, never pull
    vt = v_rel - vn * n
    speed = wp.length(vt)
    ft = wp.vec3()
    if speed > 1e-9:
        ft = -wp.min(mu * fn, c_t * speed) / speed * vt  # viscous when slow, capped at mu * fn
    return fn * n + ft


@wp.kernel
def step(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), head: wp.array(dtype=int),
         next_particle: wp.array(dtype=int), cell_size: float, dims: wp.vec3i, radius: float, mass: float,
         k_n: float, c_n: float, mu: float, c_t: float, dt: float,
         x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    xi = x[i]
    vi = v[i]
    f = mass * GRAVITY
    c_pair = 0.7071 * c_n  # between two equal masses the damper acts on half a mass: c_n / sqrt(2)
    c = cell_of(xi, cell_size, dims)
    for dx in range(-1, 2):
        for dy in range(-1, 2):
            for dz in range(-1, 2):
                j = first_in_cell(head, c + wp.vec3i(dx, dy, dz), dims)
                while j >= 0:
                    d = xi - x[j]
                    dist = wp.length(d)
                    if j != i and dist < 2.0 * radius and dist > 1e-9:
                        f += contact_force(d / dist, 2.0 * radius - dist, vi - v[j], k_n, c_pair, mu, c_t)
                    j = next_particle[j]
    if xi[1] < radius:  # the ground plane y = 0
        f += contact_force(wp.vec3(0.0, 1.0, 0.0), radius - xi[1], vi, k_n, c_n, mu, c_t)
    vi = vi + f / mass * dt
    v_out[i] = vi
    x_out[i] = xi + vi * dt


class Example(example_utils.Example):
    image_options = {"camera_pos": (2.2, 1.6, 3.4), "camera_target": (0.0, 0.45, 0.0)}

    def __init__(self, columns=(12, 28, 12), radius=0.05, substeps=32, seed=42, **kwargs):
        super().__init__(**kwargs)
        self.radius = radius
        self.mass = 2000.0 * 4.0 / 3.0 * np.pi * radius**3  # sand-like density, kg/m^3
        self.k_n = 5.0e4  # N/m: 3 mm of overlap under a stack of 15 spheres
        self.c_n = 2.0 * 0.3 * np.sqrt(self.k_n * self.mass)  # 30% of critical damping: restitution ~0.4
        self.mu = 0.5
        self.c_t = 0.15 * self.mass / (self.frame_dt / substeps)  # explicit Euler: stable to ~12 contacts
        self.substeps = substeps
        self.sim_dt = self.frame_dt / substeps

        # a loosely packed, jittered column of spheres, resting a little above the ground
        nx, ny, nz = columns
        rng = np.random.default_rng(seed)
        ijk = np.stack(np.meshgrid(*[np.arange(k) for k in columns], indexing="ij"), -1).reshape(-1, 3)
        spacing = 2.1 * radius
        pos = (ijk - [0.5 * (nx - 1), -2.0, 0.5 * (nz - 1)]) * spacing
        pos += rng.uniform(-0.02, 0.02, pos.shape) * radius
        self.num_particles = len(pos)
        self.x = wp.array(pos, dtype=wp.vec3, device=self.device)
        self.v = wp.zeros_like(self.x)
        self.x_next = wp.zeros_like(self.x)
        self.v_next = wp.zeros_like(self.x)
        # colour by initial height in bands: the heap shows how the column's layers mix
        band = (ijk[:, 1] // 4) % 2
        self.colors = np.where(band[:, None] == 1, [0.85, 0.55, 0.25], [0.35, 0.5, 0.75])

        self.cell_size = 2.0 * radius  # touching spheres are at most one cell apart
        self.dims = wp.vec3i(64, max(48, ny + 8), 64)
        self.head = wp.zeros(self.dims[0] * self.dims[1] * self.dims[2], dtype=int, device=self.device)
        self.next_particle = wp.zeros(self.num_particles, dtype=int, device=self.device)

    def step(self):
        for _ in range(self.substeps):
            self.head.fill_(-1)
            wp.launch(build_grid, dim=self.num_particles, device=self.device,
                      inputs=[self.x, self.cell_size, self.dims, self.head, self.next_particle])
            wp.launch(step, dim=self.num_particles, device=self.device,
                      inputs=[self.x, self.v, self.head, self.next_particle, self.cell_size, self.dims,
                              self.radius, self.mass, self.k_n, self.c_n, self.mu, self.c_t, self.sim_dt],
                      outputs=[self.x_next, self.v_next])
            self.x, self.x_next = self.x_next, self.x
            self.v, self.v_next = self.v_next, self.v
        self.sim_time += self.frame_dt

    def energy(self):
        """Kinetic plus gravitational energy (J): never above its start, as contacts dissipate energy
        and their springs hold the rest."""
        x, v = self.x.numpy().astype(np.float64), self.v.numpy().astype(np.float64)
        return self.mass * (0.5 * np.sum(v * v) + 9.81 * np.sum(x[:, 1]))

    def draw(self, renderer):
        renderer.render_ground(size=3.0)
        renderer.render_points("particles", self.x, self.radius, colors=self.colors)


def main():
    args = example_utils.parser("dem_particles", __doc__, num_frames=240).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    print(f"{example.num_particles} particles, {example.substeps} substeps per frame")
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
