"""Ropes by projective dynamics: one block per rope, a Cholesky factorisation and solves per block.

Each rope is a chain of N particles joined by springs, its first particle pinned to an anchor. A
step of projective dynamics (Bouaziz et al. 2014) alternates a *local* step, in which every spring
proposes its rest-length version of itself, and a *global* step, the linear solve
``(M / h^2 + w L + w_pin e0 e0^T) x = M / h^2 y + w A^T p + w_pin anchor`` whose matrix (a mass term,
the chain's graph Laplacian L weighted by the rope's stiffness, the pin) is the same for every
iteration. One block handles one rope with one lane per particle: the lanes compute the springs'
projections in SIMT style, ``wp.tile`` gathers the right-hand sides, ``wp.tile_cholesky`` factors
the rope's matrix once per step and ``wp.tile_cholesky_solve`` solves for all three coordinates at
once; every lane then reads its particle's row back. The ropes differ in stiffness (the stiff ones
swing as pendulums, the soft ones stretch and whip).

    python examples/tile_ropes.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]
"""
import numpy as np

import example_utils
import tilewarp as wp

N = wp.constant(32)       # particles per rope (lanes per block)
ITERATIONS = wp.constant(12)  # local / global iterations per step


@wp.kernel
def rope_step(x: wp.array3d(dtype=float), v: wp.array3d(dtype=float), system: wp.array3d(dtype=float),
              anchor: wp.array2d(dtype=float), stiffness: wp.array(dtype=float), rest: float, mass_term: float,
              pin: float, h: float, damping: float):
    r, i = wp.tid()  # rope, particle
    a = wp.tile_cholesky(wp.tile_load(system[r], shape=(N, N), storage="shared"))
    xi = wp.vec3(x[r, i, 0], x[r, i, 1], x[r, i, 2])
    vi = wp.vec3(v[r, i, 0], v[r, i, 1], v[r, i, 2])
    y = xi + h * vi + h * h * wp.vec3(0.0, -9.81, 0.0)  # where inertia and gravity alone would take it
    q = y
    w = stiffness[r]
    for _it in range(ITERATIONS):
        positions = wp.tile(q)  # (3, N): every lane's iterate, for its neighbours
        rhs = mass_term * y
        if i > 0:  # the spring to the previous particle pushes this one towards rest length
            d = q - wp.vec3(positions[0, i - 1], positions[1, i - 1], positions[2, i - 1])
            rhs += w * rest * wp.normalize(d)
        if i < N - 1:
            d = wp.vec3(positions[0, i + 1], positions[1, i + 1], positions[2, i + 1]) - q
            rhs -= w * rest * wp.normalize(d)
        if i == 0:
            rhs += pin * wp.vec3(anchor[r, 0], anchor[r, 1], anchor[r, 2])
        solved = wp.tile_cholesky_solve(a, wp.tile_transpose(wp.tile(rhs)))  # (N, 3)
        q = wp.vec3(solved[i, 0], solved[i, 1], solved[i, 2])
    vn = (q - xi) * (damping / h)
    for c in range(3):
        x[r, i, c] = q[c]
        v[r, i, c] = vn[c]


def rope_matrices(stiffness, mass_term, pin, n):
    """M / h^2 + w L + pin e0 e0^T per rope: the chain's Laplacian, the pin on particle 0."""
    lap = 2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    lap[0, 0] = lap[-1, -1] = 1.0
    a = mass_term * np.eye(n)[None] + stiffness[:, None, None] * lap[None]
    a[:, 0, 0] += pin
    return a


class Example(example_utils.Example):
    fps = 30
    image_options = {"camera_pos": (3.2, -0.9, 3.2), "camera_target": (-0.7, -1.1, 0.0)}

    def __init__(self, ropes=16, substeps=4, seed=3, **kwargs):
        super().__init__(**kwargs)
        self.ropes, self.substeps = ropes, substeps
        self.h = self.frame_dt / substeps
        n = N.value if hasattr(N, "value") else int(N)
        self.length = 2.0
        self.rest = self.length / (n - 1)
        self.mass = 0.05
        self.mass_term = self.mass / self.h**2
        self.pin = 1.0e4 * self.mass_term
        rng = np.random.default_rng(seed)
        self.stiffness_values = self.mass_term * np.geomspace(2.0, 100.0, ropes) * rng.uniform(0.9, 1.1, ropes)
        # ropes start horizontal, in a row along z, each pinned at its first particle
        z = np.linspace(-2.0, 2.0, ropes)
        s = np.arange(n) * self.rest
        x0 = np.stack([np.broadcast_to(s - 1.0, (ropes, n)), np.zeros((ropes, n)),
                       np.broadcast_to(z[:, None], (ropes, n))], axis=-1)
        self.anchors = x0[:, 0, :].copy()
        dev = self.device
        self.x = wp.array(x0, dtype=float, device=dev)
        self.v = wp.zeros((ropes, n, 3), dtype=float, device=dev)
        self.system = wp.array(rope_matrices(self.stiffness_values, self.mass_term, self.pin, n), dtype=float,
                               device=dev)
        self.anchor = wp.array(self.anchors, dtype=float, device=dev)
        self.stiffness = wp.array(self.stiffness_values, dtype=float, device=dev)
        self.n = n

    def step(self):
        for _ in range(self.substeps):
            wp.launch_tiled(rope_step, dim=[self.ropes], block_dim=self.n, device=self.device,
                            inputs=[self.x, self.v, self.system, self.anchor, self.stiffness, self.rest,
                                    self.mass_term, self.pin, self.h, 0.998])
        self.sim_time += self.frame_dt

    def stretch(self):
        """Each rope's length over its rest length."""
        x = self.x.numpy()
        return np.linalg.norm(np.diff(x, axis=1), axis=-1).sum(axis=1) / self.length

    def draw(self, renderer):
        x = self.x.numpy()
        for r in range(self.ropes):
            t = r / max(self.ropes - 1, 1)
            renderer.render_line_strip(f"rope_{r}", x[r], color=(0.9 - 0.6 * t, 0.3 + 0.4 * t, 0.2 + 0.7 * t),
                                       radius=0.02)


def main():
    args = example_utils.parser("tile_ropes", __doc__, num_frames=90).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    example_utils.run(example, args.num_frames)
    print("rope length / rest length:", np.round(example.stretch(), 3))


if __name__ == "__main__":
    main()
