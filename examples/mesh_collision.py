"""Sand on a mesh: a column of spheres pours into a wavy bowl given as a triangle mesh.

Geometry queries do the collision work: ``wp.HashGrid`` finds each sphere's neighbours (rebuilt
every substep, queried with ``wp.hash_grid_query``), ``wp.mesh_query_point_sign_normal`` gives each
sphere the closest point of the bowl and which side of it the sphere is on, so a sphere that
tunnelled below the surface is still pushed back out. Contacts are spring-dashpots with Coulomb
friction; semi-implicit Euler with 24 substeps per frame.

    python examples/mesh_collision.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]
"""
import numpy as np

import example_utils
import tilewarp as wp

GRAVITY = wp.constant(wp.vec3(0.0, -9.81, 0.0))


@wp.func
def contact_force(n: wp.vec3, overlap: float, v_rel: wp.vec3, k_n: float, c_n: float, mu: float, c_t: float):
    """Force on a sphere pressed ``overlap`` into something along normal ``n`` (pointing at the sphere),
    moving at ``v_rel`` relative to it: spring-dashpot along n, regularised Coulomb friction across."""
    vn = wp.dot(v_rel, n)
    fn = wp.max(k_n * overlap - c_n * vn, 0.0)
    vt = v_rel - vn * n
    speed = wp.length(vt)
    ft = wp.vec3()
    if speed > 1e-9:
        ft = -wp.min(mu * fn, c_t * speed) / speed * vt
    return fn * n + ft


@wp.kernel
def step(grid: wp.uint64, mesh: wp.uint64, x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3),
         radius: float, mass: float, k_n: float, c_n: float, mu: float, c_t: float, dt: float,
         x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)  # neighbouring threads handle neighbouring spheres
    xi = x[i]
    vi = v[i]
    f = mass * GRAVITY
    for j in wp.hash_grid_query(grid, xi, 2.0 * radius):
        d = xi - x[j]
        dist = wp.length(d)
        if j != i and dist < 2.0 * radius and dist > 1e-9:
            f += contact_force(d / dist, 2.0 * radius - dist, vi - v[j], k_n, 0.7071 * c_n, mu, c_t)
    # the bowl: its closest point within reach, and which side of the surface the centre is on (the
    # triangles face up, so sign < 0 means the centre tunnelled below: push it back out through p)
    q = wp.mesh_query_point_sign_normal(mesh, xi, 4.0 * radius)
    if q.result:
        delta = xi - wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        dist = wp.length(delta)
        n = wp.mesh_eval_face_normal(mesh, q.face)
        if dist > 1e-9:
            n = q.sign * delta / dist
        depth = radius - q.sign * dist
        if depth > 0.0:
            f += contact_force(n, depth, vi, k_n, c_n, mu, c_t)
    vi = vi + f / mass * dt
    v_out[i] = vi
    x_out[i] = xi + vi * dt


def bowl(resolution=48, size=2.4, depth=0.6):
    """A wavy bowl: the height field y = depth * (r / R)^2 + ripples over a square, as triangles."""
    s = np.linspace(-size / 2, size / 2, resolution)
    x, z = np.meshgrid(s, s, indexing="ij")
    r2 = (x**2 + z**2) / (size / 2) ** 2
    y = depth * r2 + 0.04 * np.sin(5 * x) * np.cos(4 * z)
    points = np.stack([x, y, z], -1).reshape(-1, 3).astype(np.float32)
    tris = example_utils.grid_triangles(resolution)[:, ::-1]  # wound to face up (+y)
    return points, np.ascontiguousarray(tris, dtype=np.int32)


class Example(example_utils.Example):
    image_options = {"camera_pos": (1.5, 3.1, 2.3), "camera_target": (0.0, 0.15, 0.0)}

    def __init__(self, columns=(10, 24, 10), radius=0.04, substeps=24, resolution=48, seed=7, **kwargs):
        super().__init__(**kwargs)
        self.radius = radius
        self.mass = 2000.0 * 4.0 / 3.0 * np.pi * radius**3
        self.k_n = 4.0e4
        self.c_n = 2.0 * 0.3 * np.sqrt(self.k_n * self.mass)
        self.mu = 0.5
        self.c_t = 0.15 * self.mass / (self.frame_dt / substeps)
        self.substeps = substeps
        self.sim_dt = self.frame_dt / substeps

        points, tris = bowl(resolution)
        self.mesh_points, self.mesh_indices = points, tris
        self.mesh = wp.Mesh(points=wp.array(points, dtype=wp.vec3, device=self.device),
                            indices=wp.array(tris.ravel(), dtype=wp.int32, device=self.device))

        nx, ny, nz = columns
        rng = np.random.default_rng(seed)
        ijk = np.stack(np.meshgrid(*[np.arange(k) for k in columns], indexing="ij"), -1).reshape(-1, 3)
        pos = (ijk - [0.5 * (nx - 1), -12.0, 0.5 * (nz - 1)]) * 2.1 * radius + [0.35, 0.0, 0.2]
        pos += rng.uniform(-0.03, 0.03, pos.shape) * radius
        self.num_particles = len(pos)
        self.x = wp.array(pos, dtype=wp.vec3, device=self.device)
        self.v = wp.zeros_like(self.x)
        self.x_next = wp.zeros_like(self.x)
        self.v_next = wp.zeros_like(self.x)
        band = (ijk[:, 1] // 4) % 2
        self.colors = np.where(band[:, None] == 1, [0.9, 0.6, 0.3], [0.3, 0.55, 0.8])
        self.grid = wp.HashGrid(64, 64, 64, device=self.device)

    def step(self):
        for _ in range(self.substeps):
            self.grid.build(self.x, 2.0 * self.radius)
            wp.launch(step, dim=self.num_particles, device=self.device,
                      inputs=[self.grid.id, self.mesh.id, self.x, self.v, self.radius, self.mass, self.k_n,
                              self.c_n, self.mu, self.c_t, self.sim_dt],
                      outputs=[self.x_next, self.v_next])
            self.x, self.x_next = self.x_next, self.x
            self.v, self.v_next = self.v_next, self.v
        self.sim_time += self.frame_dt

    def heights_above_bowl(self):
        """Each sphere centre's height above the bowl surface below it (NumPy, bilinear in the grid)."""
        x = self.x.numpy().astype(np.float64)
        size, depth = 2.4, 0.6
        r2 = (x[:, 0] ** 2 + x[:, 2] ** 2) / (size / 2) ** 2
        surface = depth * r2 + 0.04 * np.sin(5 * x[:, 0]) * np.cos(4 * x[:, 2])
        return x[:, 1] - surface

    def draw(self, renderer):
        renderer.render_mesh("bowl", self.mesh_points, self.mesh_indices.ravel(), colors=(0.55, 0.55, 0.6))
        renderer.render_points("particles", self.x, self.radius, colors=self.colors)


def main():
    args = example_utils.parser("mesh_collision", __doc__, num_frames=240).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    print(f"{example.num_particles} spheres, a bowl of {len(example.mesh_indices)} triangles, "
          f"{example.substeps} substeps per frame")
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
