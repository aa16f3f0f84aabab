"""Tiled N-body gravity: a self-gravitating disc of stars in a dark-matter halo winds up into spiral arms.

Every star attracts every other (Plummer-softened Newtonian gravity, G = 1, total mass 1): N^2
interactions per step. The force kernel is tiled: a block of TILE threads handles TILE stars, and
walks over all the stars TILE at a time, loading each batch once into shared memory with
``wp.tile_load``, where all the block's threads read it, instead of every thread reading every
star from global memory. Symplectic Euler keeps the energy bounded over long runs. (tilewarp's CPU
runs all TILE lanes of a block, as a GPU does; NVIDIA Warp's CPU needs wp.config.enable_cpu_blocks.)

    python examples/tile_nbody.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]
"""
import numpy as np

import example_utils
import tilewarp as wp

TILE = 64  # stars per block, and per batch loaded into shared memory


@wp.kernel
def accelerations(x: wp.array(dtype=wp.vec3), mass: float, softening2: float, a: wp.array(dtype=wp.vec3)):
    block, lane = wp.tid()
    i = block * TILE + lane
    xi = x[i]
    acc = wp.vec3()
    for batch in range(x.shape[0] // TILE):
        stars = wp.tile_load(x, shape=TILE, offset=batch * TILE, storage="shared")
        for j in range(TILE):
            d = stars[j] - xi
            r2 = wp.length_sq(d) + softening2  # a star's pull on itself is zero: d = 0
            acc += d / (r2 * wp.sqrt(r2))
    a[i] = mass * acc


@wp.func
def halo_acceleration(x: wp.vec3, v_halo: float, core: float):
    """Pull of a fixed dark-matter halo with a flat rotation curve (speed v_halo far out): it keeps
    the disc from breaking into clumps and makes it rotate differentially, winding up spirals."""
    return -v_halo * v_halo / (wp.length_sq(x) + core * core) * x


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), a: wp.array(dtype=wp.vec3),
              v_halo: float, core: float, dt: float):
    i = wp.tid()
    v[i] = v[i] + (a[i] + halo_acceleration(x[i], v_halo, core)) * dt
    x[i] = x[i] + v[i] * dt


def rotating_disc(n, rng, softening, v_halo, core):
    """Positions and velocities of n stars in a thin exponential disc, each on a circular orbit
    under the halo and the disc mass inside its radius (a crude equilibrium: the disc finds its own)."""
    r = rng.exponential(0.35, n) + 0.05
    theta = rng.uniform(0.0, 2.0 * np.pi, n)
    x = np.stack([r * np.cos(theta), 0.02 * rng.standard_normal(n), r * np.sin(theta)], axis=1)
    enclosed = (np.argsort(np.argsort(r)) + 1) / n  # mass within each star's radius
    speed = np.sqrt(enclosed * r**2 / (r**2 + softening**2) ** 1.5 + v_halo**2 * r**2 / (r**2 + core**2))
    v = np.stack([-np.sin(theta), np.zeros(n), np.cos(theta)], axis=1) * speed[:, None]
    return x, v


class Example(example_utils.Example):
    image_options = {"camera_pos": (0.0, 2.8, 1.2), "camera_target": (0.0, 0.0, 0.0),
                     "background": (0.0, 0.0, 0.05)}

    def __init__(self, num_bodies=4096, dt=0.01, softening=0.05, v_halo=1.0, halo_core=0.2, seed=11,
                 **kwargs):
        super().__init__(**kwargs)
        if num_bodies % TILE:
            raise ValueError(f"num_bodies must be a multiple of {TILE}")
        self.num_bodies = num_bodies
        self.mass = 1.0 / num_bodies
        self.softening = softening
        self.sim_dt = dt
        self.v_halo, self.halo_core = v_halo, halo_core
        rng = np.random.default_rng(seed)
        x, v = rotating_disc(num_bodies, rng, softening, v_halo, halo_core)
        self.x = wp.array(x, dtype=wp.vec3, device=self.device)
        self.v = wp.array(v, dtype=wp.vec3, device=self.device)
        self.a = wp.zeros_like(self.x)
        r = np.linalg.norm(x, axis=1)
        t = np.clip(r / 1.2, 0.0, 1.0)[:, None]  # colour by starting radius: shows how the disc winds up
        self.colors = (1.0 - t) * np.array([1.0, 0.85, 0.5]) + t * np.array([0.3, 0.45, 1.0])

    def compute_accelerations(self):
        wp.launch_tiled(accelerations, dim=[self.num_bodies // TILE], block_dim=TILE, device=self.device,
                        inputs=[self.x, self.mass, self.softening**2], outputs=[self.a])

    def step(self):
        self.compute_accelerations()
        wp.launch(integrate, dim=self.num_bodies, device=self.device,
                  inputs=[self.x, self.v, self.a, self.v_halo, self.halo_core, self.sim_dt])
        self.sim_time += self.frame_dt

    def energy(self):
        """Kinetic plus potential energy (softened pairs and the halo), in float64 on the host."""
        x, v = self.x.numpy().astype(np.float64), self.v.numpy().astype(np.float64)
        d2 = np.sum((x[:, None] - x[None]) ** 2, axis=-1) + self.softening**2
        potential = -0.5 * self.mass**2 * (np.sum(1.0 / np.sqrt(d2)) - len(x) / self.softening)
        halo = 0.5 * self.mass * self.v_halo**2 * np.sum(np.log(np.sum(x * x, axis=1) + self.halo_core**2))
        return 0.5 * self.mass * np.sum(v * v) + potential + halo

    def draw(self, renderer):
        renderer.render_points("stars", self.x, 0.01, colors=self.colors)


def main():
    args = example_utils.parser("tile_nbody", __doc__, num_frames=150).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    print(f"{example.num_bodies} bodies, tiles of {TILE}")
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
