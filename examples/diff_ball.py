"""Differentiable simulation: learn the throw that bounces a ball off the ground onto a target.

The ball flies under gravity and bounces on a soft ground (a penalty force that grows smoothly
with the overlap, with damping: it is smooth in the state, so the whole trajectory is). Each
iteration simulates the throw under a ``wp.Tape``, measures the squared distance between the
ball and the target at the final time, runs the tape backward to get the gradient of that loss
with respect to the initial velocity, and takes a gradient-descent step on it.

    python examples/diff_ball.py [--device cpu|cuda:0] [--stage_path out.usd] [--num_frames N]

(here a frame is one optimisation iteration)
"""
import numpy as np

import example_utils
import tilewarp as wp

GRAVITY = wp.constant(wp.vec3(0.0, -9.81, 0.0))


@wp.kernel
def step(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), radius: float, k_contact: float,
         c_contact: float, dt: float, x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    xi = x[i]
    vi = v[i]
    a = GRAVITY
    depth = radius - xi[1]
    if depth > 0.0:
        # soft ground: a penalty growing as depth^3 starts with zero slope and curvature, so when the
        # touch falls between two time steps the trajectory barely notices: it depends smoothly on
        # the throw, and so does the loss. Damping scales with it (Hunt-Crossley): no pull on release.
        a += wp.vec3(0.0, k_contact * depth * depth * depth * wp.max(1.0 - c_contact * vi[1], 0.0), 0.0)
    vi = vi + a * dt
    x_out[i] = xi + vi * dt
    v_out[i] = vi


@wp.kernel
def distance_sq(x: wp.array(dtype=wp.vec3), target: wp.vec3, loss: wp.array(dtype=float)):
    loss[0] = wp.length_sq(x[0] - target)


class Example(example_utils.Example):
    fps = 10  # stage playback: one iteration every 0.1 s
    image_options = {"camera_pos": (1.0, 0.8, 3.0), "camera_target": (1.0, 0.6, 0.0)}

    def __init__(self, duration=1.0, sim_steps=400, learning_rate=0.4, velocity=(1.0, 2.5, 0.0),
                 target=(2.0, 0.4, 0.0), verbose=True, **kwargs):
        super().__init__(**kwargs)
        self.radius = 0.1
        self.k_contact, self.c_contact = 5.0e6, 0.03  # per unit mass: ~5 cm deep, restitution ~0.9
        self.sim_steps = sim_steps
        self.sim_dt = duration / sim_steps
        self.learning_rate = learning_rate
        self.target = wp.vec3(*target)
        self.verbose = verbose
        self.iteration = 0

        # one array per time step: the tape needs every intermediate state for the backward pass
        dev = self.device
        self.x = [wp.zeros(1, dtype=wp.vec3, device=dev, requires_grad=True) for _ in range(sim_steps + 1)]
        self.v = [wp.zeros(1, dtype=wp.vec3, device=dev, requires_grad=True) for _ in range(sim_steps + 1)]
        self.x[0].assign(np.array([[0.0, 1.0, 0.0]]))
        self.v[0].assign(np.array([velocity]))
        self.loss = wp.zeros(1, dtype=float, device=dev, requires_grad=True)
        self.tape = wp.Tape()
        self.history = []  # the trajectory of every iteration, for the picture
        self.losses = []

    def forward(self):
        for t in range(self.sim_steps):
            wp.launch(step, dim=1, device=self.device,
                      inputs=[self.x[t], self.v[t], self.radius, self.k_contact, self.c_contact, self.sim_dt],
                      outputs=[self.x[t + 1], self.v[t + 1]])
        wp.launch(distance_sq, dim=1, device=self.device, inputs=[self.x[-1], self.target],
                  outputs=[self.loss])

    def compute_loss(self, velocity=None):
        """The loss of a throw (without recording a tape): for checks by finite differences."""
        if velocity is not None:
            self.v[0].assign(np.array([velocity]))
        self.forward()
        return float(self.loss.numpy()[0])

    def gradient(self):
        """Loss and its gradient with respect to the initial velocity, through the tape."""
        self.tape.reset()
        with self.tape:
            self.forward()
        self.tape.backward(self.loss)
        return float(self.loss.numpy()[0]), self.v[0].grad.numpy()[0].copy()

    def step(self):
        loss, grad = self.gradient()
        self.losses.append(loss)
        samples = list(range(0, self.sim_steps, max(1, self.sim_steps // 60))) + [self.sim_steps]
        self.history.append(np.array([self.x[t].numpy()[0] for t in samples]))
        thrown = self.v[0].numpy()[0].copy()
        self.v[0].assign((thrown - self.learning_rate * grad)[None])
        if self.verbose:
            print(f"iteration {self.iteration}: velocity ({thrown[0]:.3f}, {thrown[1]:.3f}) m/s, "
                  f"loss {loss:.3e}")
        self.iteration += 1
        self.sim_time = self.iteration * self.frame_dt

    def draw(self, renderer):
        renderer.render_ground(size=2.5)
        renderer.render_sphere("ball", tuple(self.x[0].numpy()[0]), (0.0, 0.0, 0.0, 1.0), self.radius,
                               color=(0.2, 0.3, 0.8))
        renderer.render_sphere("target", tuple(self.target), (0.0, 0.0, 0.0, 1.0), 0.07,
                               color=(0.9, 0.15, 0.1))
        # the picture shows every throw; the stage animates the latest
        n = len(self.history)
        every = renderer is self.image
        for k in range(0 if every else max(n - 1, 0), n):
            t = k / max(n - 1, 1)  # the first throws orange, the last dark blue
            color = tuple((1.0 - t) * np.array([1.0, 0.65, 0.2]) + t * np.array([0.1, 0.2, 0.7]))
            path = self.history[k] + [0.0, 0.0, 1e-3 * k]  # later throws a hair nearer the camera: on top
            name = f"throw_{k:03d}" if every else "throw"
            renderer.render_line_strip(name, path, color=color, radius=0.008)


def main():
    args = example_utils.parser("diff_ball", __doc__, num_frames=30).parse_args()
    example = Example(device=args.device, stage_path=args.stage_path, image_path=args.image_path,
                      image_size=args.image_size)
    example_utils.run(example, args.num_frames)


if __name__ == "__main__":
    main()
