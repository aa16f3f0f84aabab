"""2-D waves: a source circling over a pond leaves Doppler-shifted ripples, and drops fall now and then.

The damped wave equation h_tt = c^2 (h_xx + h_zz) - damping h_t for the surface height h on a
square grid, with the explicit leapfrog scheme (second order, stable while c dt / dx < 1/sqrt(2)).
The pond's banks reflect: across them the height has no slope, so the water's volume (the sum of
h) only changes where the source or a drop adds some. Rendered as a height-field mesh coloured by
height.

    python examples/wave_2d.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]
"""
import math

import numpy as np

import example_utils
import tilewarp as wp


@wp.kernel
def wave_step(h: wp.array2d(dtype=float), h_prev: wp.array2d(dtype=float), courant2: float,
              damping_dt: float, source: wp.vec2, source_value: float, source_radius: float, dx: float,
              h_next: wp.array2d(dtype=float)):
    i, j = wp.tid()
    n = h.shape[0]
    hc = h[i, j]
    # five-point Laplacian; a neighbour past the bank is this cell itself (no slope across it)
    lap = h[wp.max(i - 1, 0), j] + h[wp.min(i + 1, n - 1), j] - 4.0 * hc
    lap += h[i, wp.max(j - 1, 0)] + h[i, wp.min(j + 1, n - 1)]
    hn = hc + (1.0 - damping_dt) * (hc - h_prev[i, j]) + courant2 * lap
    # the source: a small disc whose height is driven up and down (blended in smoothly towards its rim)
    r = wp.length(wp.vec2(float(i), float(j)) * dx - source)
    if r < source_radius:
        hn = wp.lerp(hn, source_value, 0.5 * (1.0 + wp.cos(wp.pi * r / source_radius)))
    h_next[i, j] = hn


@wp.kernel
def add_drop(h: wp.array2d(dtype=float), h_prev: wp.array2d(dtype=float), center: wp.vec2, radius: float,
             depth: float, dx: float):
    i, j = wp.tid()
    d2 = wp.length_sq(wp.vec2(float(i), float(j)) * dx - center)
    dent = depth * wp.exp(-d2 / (radius * radius))
    h[i, j] = h[i, j] - dent
    h_prev[i, j] = h_prev[i, j] - dent  # a dent at rest: it starts moving on its own


class Example(example_utils.Example):
    image_options = {"camera_pos": (2.0, 5.5, 5.0), "camera_target": (2.0, -0.3, 1.9)}

    def __init__(self, resolution=128, size=4.0, wave_speed=1.5, damping=1.0, substeps=2, drops=True,
                 source=True, stage_resolution=64, image_resolution=128, seed=3, **kwargs):
        super().__init__(**kwargs)
        self.n, self.size = resolution, size
        self.dx = size / (resolution - 1)
        self.substeps = substeps
        self.sim_dt = self.frame_dt / substeps
        self.wave_speed = wave_speed
        self.courant2 = (wave_speed * self.sim_dt / self.dx) ** 2
        if self.courant2 >= 0.5:
            raise ValueError("c dt / dx >= 1/sqrt(2): the scheme would be unstable, use more substeps")
        self.damping = damping
        self.drops, self.source = drops, source
        self.rng = np.random.default_rng(seed)
        self.next_drop = 0.5
        self.h = wp.zeros((resolution, resolution), dtype=float, device=self.device)
        self.h_prev = wp.zeros_like(self.h)
        self.h_next = wp.zeros_like(self.h)
        self.stage_resolution, self.image_resolution = stage_resolution, image_resolution

    def step(self):
        shape = (self.n, self.n)
        if self.drops and self.sim_time >= self.next_drop:
            center = wp.vec2(*self.rng.uniform(0.2, 0.8, 2) * self.size)
            wp.launch(add_drop, dim=shape, device=self.device,
                      inputs=[self.h, self.h_prev, center, 0.1, 0.15, self.dx])
            self.next_drop += self.rng.uniform(1.0, 2.0)
        for _ in range(self.substeps):
            # the source circles the pond's centre at 0.5 m/s (a third of the wave speed), bobbing at 2 Hz
            angle = 0.5 / (0.25 * self.size) * self.sim_time
            source = wp.vec2(0.5 * self.size + 0.25 * self.size * math.cos(angle),
                             0.5 * self.size + 0.25 * self.size * math.sin(angle))
            value = 0.1 * math.sin(2.0 * math.pi * 2.0 * self.sim_time)
            radius = 0.12 if self.source else 0.0  # radius 0: no source
            wp.launch(wave_step, dim=shape, device=self.device,
                      inputs=[self.h, self.h_prev, self.courant2, self.damping * self.sim_dt, source, value,
                              radius, self.dx], outputs=[self.h_next])
            self.h_prev, self.h, self.h_next = self.h, self.h_next, self.h_prev
            self.sim_time += self.sim_dt

    def volume(self):
        """Water above the rest level (m^3): only the source and the drops change it."""
        return float(np.sum(self.h.numpy(), dtype=np.float64)) * self.dx**2

    def energy(self):
        """The leapfrog scheme's conserved energy (per unit density): kinetic plus c^2 times the
        product of the two time levels' slopes. Without damping and sources it stays constant."""
        h, h_prev = self.h.numpy().astype(np.float64), self.h_prev.numpy().astype(np.float64)
        v = (h - h_prev) / self.sim_dt
        slopes = sum(np.sum(np.diff(h, axis=k) * np.diff(h_prev, axis=k)) for k in (0, 1)) / self.dx**2
        return 0.5 * (np.sum(v * v) + self.wave_speed**2 * slopes) * self.dx**2

    def draw(self, renderer):
        # the picture gets the whole grid; the stage a coarser one, as it stores every frame's
        m = min(self.n, self.image_resolution if renderer is self.image else self.stage_resolution)
        idx = np.linspace(0, self.n - 1, m).round().astype(int)
        h = self.h.numpy()[np.ix_(idx, idx)]
        x, z = np.meshgrid(idx * self.dx, idx * self.dx, indexing="ij")
        points = np.stack([x, 2.0 * h, z], -1).reshape(-1, 3)  # heights exaggerated 2x
        t = np.clip(0.5 + 8.0 * h, 0.0, 1.0).reshape(-1, 1)  # troughs deep blue, crests white
        colors = (1.0 - t) * np.array([0.0, 0.15, 0.45]) + t * np.array([0.85, 0.95, 1.0])
        renderer.render_mesh("water", points, example_utils.grid_triangles(m), colors=colors)


def main():
    args = example_utils.parser("wave_2d", __doc__, num_frames=300).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    print(f"{example.n} x {example.n} grid, {example.substeps} substeps per frame")
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
