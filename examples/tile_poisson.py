"""Spectral Poisson solve with tile FFTs: the electric potential of charges orbiting in a periodic box.

Every frame the charges (Gaussian blobs, as many positive as negative) are spread onto an N x N grid,
then one block solves ``laplacian(phi) = -rho`` exactly in Fourier space: ``wp.tile_fft`` transforms
the tile's rows, and again through ``wp.tile_transpose`` its columns (a view: the transform runs in
place through it), the spectrum is multiplied by the Green's function ``1 / |k|^2`` (zero for the
mean), and two inverse transforms bring the potential back. The picture colours the potential
(red positive, blue negative) with the charges on top.

    python examples/tile_poisson.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]
"""
import numpy as np

import example_utils
import tilewarp as wp

N = wp.constant(64)
CHARGES = 6
WIDTH = 0.03  # of a charge's Gaussian, in box lengths


@wp.kernel
def deposit(centres: wp.array(dtype=wp.vec2), charge: wp.array(dtype=float), rho: wp.array2d(dtype=wp.vec2f)):
    i, j = wp.tid()
    p = wp.vec2((float(i) + 0.5) / float(N), (float(j) + 0.5) / float(N))
    total = float(0.0)
    for c in range(CHARGES):
        d = p - centres[c]
        d = d - wp.vec2(wp.round(d[0]), wp.round(d[1]))  # the nearest periodic image
        total += charge[c] * wp.exp(-wp.dot(d, d) / (2.0 * WIDTH * WIDTH))
    rho[i, j] = wp.vec2f(total, 0.0)


@wp.func
def real_part(z: wp.vec2f):
    return z[0]


@wp.kernel
def solve(rho: wp.array2d(dtype=wp.vec2f), green: wp.array2d(dtype=float), phi: wp.array2d(dtype=float)):
    t = wp.tile_load(rho, shape=(N, N))
    wp.tile_fft(t)                       # along each row
    wp.tile_fft(wp.tile_transpose(t))    # along each column, through the transposed view
    s = t * wp.tile_load(green, shape=(N, N))
    wp.tile_ifft(s)
    wp.tile_ifft(wp.tile_transpose(s))
    wp.tile_store(phi, wp.tile_map(real_part, s))


def green_function(n):
    """1 / |k|^2 on the FFT's frequency grid (0 for the mean), over n^2 for the unnormalised inverse."""
    k = 2.0 * np.pi * np.fft.fftfreq(n, d=1.0 / n)
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    g = np.zeros((n, n))
    g[k2 > 0] = 1.0 / k2[k2 > 0]
    return g / (n * n)


class Example(example_utils.Example):
    fps = 30
    image_options = {"camera_pos": (0.5, 0.5, 2.2), "camera_target": (0.5, 0.5, 0.0), "projection": "orthographic"}

    def __init__(self, seed=2, **kwargs):
        super().__init__(**kwargs)
        self.n = n = int(getattr(N, "value", N))
        rng = np.random.default_rng(seed)
        self.radius = rng.uniform(0.12, 0.35, CHARGES)
        self.speed = rng.uniform(0.5, 1.5, CHARGES) * rng.choice([-1.0, 1.0], CHARGES)
        self.phase = rng.uniform(0.0, 2.0 * np.pi, CHARGES)
        self.charges = np.tile([1.0, -1.0], CHARGES // 2)
        dev = self.device
        self.centres = wp.zeros(CHARGES, dtype=wp.vec2, device=dev)
        self.charge = wp.array(self.charges, dtype=float, device=dev)
        self.rho = wp.zeros((n, n), dtype=wp.vec2f, device=dev)
        self.green = wp.array(green_function(n), dtype=float, device=dev)
        self.phi = wp.zeros((n, n), dtype=float, device=dev)
        self.place()

    def positions(self):
        a = self.phase + self.speed * self.sim_time
        return 0.5 + self.radius[:, None] * np.stack([np.cos(a), np.sin(a)], axis=1)

    def place(self):
        self.centres.assign(self.positions().astype(np.float32))

    def step(self):
        self.sim_time += self.frame_dt
        self.place()
        wp.launch(deposit, dim=(self.n, self.n), inputs=[self.centres, self.charge, self.rho], device=self.device)
        wp.launch_tiled(solve, dim=[1], inputs=[self.rho, self.green, self.phi], block_dim=128, device=self.device)

    def draw(self, renderer):
        n = self.n
        ij = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1).reshape(-1, 2)
        points = np.concatenate([(ij + 0.5) / n, np.zeros((len(ij), 1))], axis=1)
        phi = self.phi.numpy().ravel()
        t = np.clip(phi / (np.abs(phi).max() + 1e-12), -1.0, 1.0)[:, None]
        red, blue, white = np.array([0.85, 0.2, 0.15]), np.array([0.15, 0.3, 0.85]), np.ones(3)
        colors = np.where(t > 0, white + t * (red - white), white - t * (blue - white))
        renderer.render_mesh("potential", points, example_utils.grid_triangles(n), colors=colors)
        c = np.concatenate([self.positions(), np.full((CHARGES, 1), 0.01)], axis=1)
        renderer.render_points("charges", c, radius=0.015,
                               colors=[(0.5, 0.0, 0.0) if q > 0 else (0.0, 0.0, 0.5) for q in self.charges])


def main():
    args = example_utils.parser("tile_poisson", __doc__, num_frames=60).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
