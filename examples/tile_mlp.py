"""Tiled MLP: a small neural network learns a picture, trained with wp.Tape and Adam.

The network maps a pixel's coordinates (encoded as sines and cosines of a few frequencies, so it
can represent fine detail) to its colour through two hidden layers of 32 ReLU units. Each block
evaluates BATCH pixels at once: ``wp.tile_load`` brings the layer weights and the block's inputs
into tiles, ``wp.tile_matmul`` multiplies them, ``wp.tile_map`` applies the activation, and the
squared error is summed into the loss. ``wp.Tape`` records the launch, its backward pass gives
every weight's gradient, and an Adam step (one thread per weight) updates them.

    python examples/tile_mlp.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]

(here a frame is ``iterations_per_frame`` training iterations)
"""
import numpy as np

import example_utils
import tilewarp as wp

FREQUENCIES = 4
FEATURES = 4 * FREQUENCIES  # sin and cos of each frequency, for x and for y
HIDDEN = 32
CHANNELS = 3
BATCH = 64  # pixels per block: the tiles' column count


@wp.func
def relu(x: float):
    return wp.max(x, 0.0)


@wp.kernel
def mlp(features: wp.array2d(dtype=float), w0: wp.array2d(dtype=float), b0: wp.array2d(dtype=float),
        w1: wp.array2d(dtype=float), b1: wp.array2d(dtype=float), w2: wp.array2d(dtype=float),
        b2: wp.array2d(dtype=float), target: wp.array2d(dtype=float), loss_scale: float,
        output: wp.array2d(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    x = wp.tile_load(features, shape=(FEATURES, BATCH), offset=(0, i * BATCH))  # one column per pixel
    z = wp.tile_matmul(wp.tile_load(w0, shape=(HIDDEN, FEATURES)), x)
    h = wp.tile_map(relu, z + wp.tile_broadcast(wp.tile_load(b0, shape=(HIDDEN, 1)), shape=(HIDDEN, BATCH)))
    z = wp.tile_matmul(wp.tile_load(w1, shape=(HIDDEN, HIDDEN)), h)
    h = wp.tile_map(relu, z + wp.tile_broadcast(wp.tile_load(b1, shape=(HIDDEN, 1)), shape=(HIDDEN, BATCH)))
    z = wp.tile_matmul(wp.tile_load(w2, shape=(CHANNELS, HIDDEN)), h)
    y = z + wp.tile_broadcast(wp.tile_load(b2, shape=(CHANNELS, 1)), shape=(CHANNELS, BATCH))
    wp.tile_store(output, y, offset=(0, i * BATCH))
    error = y - wp.tile_load(target, shape=(CHANNELS, BATCH), offset=(0, i * BATCH))
    wp.tile_atomic_add(loss, wp.tile_sum(error * error) * loss_scale)


@wp.kernel
def adam(p: wp.array2d(dtype=float), g: wp.array2d(dtype=float), m: wp.array2d(dtype=float),
         v: wp.array2d(dtype=float), step_size: float, beta1: float, beta2: float):
    i, j = wp.tid()
    m[i, j] = beta1 * m[i, j] + (1.0 - beta1) * g[i, j]
    v[i, j] = beta2 * v[i, j] + (1.0 - beta2) * g[i, j] * g[i, j]
    p[i, j] = p[i, j] - step_size * m[i, j] / (wp.sqrt(v[i, j]) + 1.0e-8)


def picture(u, v):
    """The picture to learn: coloured rings around an off-centre point, RGB in [0, 1]."""
    d = np.hypot(u - 0.4, v - 0.55)
    angle = np.arctan2(v - 0.55, u - 0.4)
    rings = 0.5 + 0.5 * np.cos(25.0 * d)
    rgb = [0.5 + 0.5 * np.cos(angle + phase) for phase in (0.0, 2.1, 4.2)]
    return np.stack([0.1 + 0.85 * rings * c for c in rgb])


def encode(u, v):
    """Fourier features of the coordinates: (FEATURES, pixels)."""
    k = 2.0 ** np.arange(FREQUENCIES) * np.pi
    return np.concatenate([f(k[:, None] * c[None]) for c in (u, v) for f in (np.sin, np.cos)])


class Example(example_utils.Example):
    fps = 10
    image_options = {"camera_pos": (1.05, 0.5, 3.0), "camera_target": (1.05, 0.5, 0.0),
                     "projection": "orthographic"}

    def __init__(self, resolution=64, iterations_per_frame=20, learning_rate=0.01, seed=5, verbose=True,
                 **kwargs):
        super().__init__(**kwargs)
        if resolution * resolution % BATCH:
            raise ValueError(f"resolution^2 must be a multiple of {BATCH}")
        self.resolution = resolution
        self.pixels = resolution * resolution
        self.iterations = iterations_per_frame
        self.learning_rate, self.beta1, self.beta2 = learning_rate, 0.9, 0.999
        self.verbose = verbose
        self.step_count = 0
        dev = self.device

        u, v = [c.ravel() for c in np.meshgrid((np.arange(resolution) + 0.5) / resolution,
                                               (np.arange(resolution) + 0.5) / resolution, indexing="ij")]
        self.features = wp.array(encode(u, v), dtype=float, device=dev)
        self.target_rgb = picture(u, v)
        self.target = wp.array(self.target_rgb, dtype=float, device=dev)
        self.output = wp.zeros((CHANNELS, self.pixels), dtype=float, device=dev, requires_grad=True)
        self.loss = wp.zeros(1, dtype=float, device=dev, requires_grad=True)

        # He initialisation: ReLU layers keep their activations' scale
        rng = np.random.default_rng(seed)
        sizes = [(HIDDEN, FEATURES), (HIDDEN, HIDDEN), (CHANNELS, HIDDEN)]
        self.params = []
        for rows, cols in sizes:
            self.params.append(wp.array(rng.normal(0.0, np.sqrt(2.0 / cols), (rows, cols)), dtype=float,
                                        device=dev, requires_grad=True))
            self.params.append(wp.zeros((rows, 1), dtype=float, device=dev, requires_grad=True))
        self.moments = [(wp.zeros_like(p), wp.zeros_like(p)) for p in self.params]
        self.tape = wp.Tape()

    def forward(self):
        self.loss.zero_()
        wp.launch_tiled(mlp, dim=[self.pixels // BATCH], block_dim=BATCH, device=self.device,
                        inputs=[self.features, *self.params, self.target, 1.0 / (CHANNELS * self.pixels)],
                        outputs=[self.output, self.loss])

    def train_step(self):
        """One Adam step on the mean squared error; returns the loss before it."""
        self.tape.reset()
        with self.tape:
            self.forward()
        self.tape.backward(self.loss)
        self.step_count += 1
        t = self.step_count  # Adam's bias corrections folded into the step size
        step_size = self.learning_rate * np.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
        for p, (m, v) in zip(self.params, self.moments):
            wp.launch(adam, dim=p.shape, device=self.device,
                      inputs=[p, p.grad, m, v, step_size, self.beta1, self.beta2])
        return float(self.loss.numpy()[0])

    def step(self):
        for _ in range(self.iterations):
            loss = self.train_step()
        if self.verbose:
            print(f"iteration {self.step_count}: loss {loss:.5f}")
        self.sim_time += self.frame_dt

    def draw(self, renderer):
        # the picture (left) and the network's (right), one vertex per pixel
        n = self.resolution
        ij = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1).reshape(-1, 2)
        points = np.concatenate([(ij + 0.5) / n, np.zeros((len(ij), 1))], axis=1)
        tris = example_utils.grid_triangles(n)
        predicted = np.clip(self.output.numpy().T, 0.0, 1.0)
        renderer.render_mesh("target", points, tris, colors=self.target_rgb.T)
        renderer.render_mesh("network", points + [1.1, 0.0, 0.0], tris, colors=predicted)


def main():
    args = example_utils.parser("tile_mlp", __doc__, num_frames=50).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    print(f"{example.pixels} pixels, {sum(p.size for p in example.params)} weights")
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
