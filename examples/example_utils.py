"""What every example of the gallery shares: command-line options, renderers, the frame loop.

An example subclasses ``Example`` and defines ``step()`` (advance one frame) and ``draw(renderer)``
(the scene, through the API common to ``UsdRenderer`` and ``ImageRenderer``). ``render()`` writes
the current frame to the USD stage; ``save()`` writes the stage and draws the final state into the PNG.
"""
import argparse
import os
import time

import numpy as np

import tilewarp as wp

OUTPUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "output")

# ---- a uniform grid of per-cell particle lists (head[cell] -> first, next_particle[i] -> next), as the
# DEM and SPH examples build it each substep


@wp.func
def in_grid(c: wp.vec3i, dims: wp.vec3i):
    return c[0] >= 0 and c[0] < dims[0] and c[1] >= 0 and c[1] < dims[1] and c[2] >= 0 and c[2] < dims[2]


@wp.func
def cell_index(c: wp.vec3i, dims: wp.vec3i):
    return (c[0] * dims[1] + c[1]) * dims[2] + c[2]


@wp.func
def first_in_cell(head: wp.array(dtype=int), c: wp.vec3i, dims: wp.vec3i):
    """The first particle of cell c's list, or -1 for none (or no such cell)."""
    if in_grid(c, dims):
        return head[cell_index(c, dims)]
    return -1


def parser(name: str, doc: str, num_frames: int) -> argparse.ArgumentParser:
    """The options every example takes; outputs default to ``examples/output/<name>.usd|.png``."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None, help="e.g. cpu or cuda:0 (default: the GPU if present)")
    p.add_argument("--stage_path", default=os.path.join(OUTPUT_DIR, f"{name}.usd"),
                   help="USD stage to write ('' for none)")
    p.add_argument("--image_path", default=os.path.join(OUTPUT_DIR, f"{name}.png"),
                   help="PNG of the last frame ('' for none)")
    p.add_argument("--image_size", type=int, nargs=2, default=(640, 480), metavar=("W", "H"))
    p.add_argument("--num_frames", type=int, default=num_frames)
    return p


def _parent_dir(path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)


def usd_renderer(stage_path, up_axis="Y", fps=60):
    """A ``UsdRenderer`` writing ``stage_path``, or None (saying why) without a path or without pxr."""
    if not stage_path:
        return None
    try:
        import pxr  # noqa: F401
    except ImportError:
        print("pxr (usd-core) is not installed: skipping the USD stage (pip install usd-core)")
        return None
    _parent_dir(stage_path)
    return wp.render.UsdRenderer(os.fspath(stage_path), up_axis=up_axis, fps=fps)


def image_renderer(image_path, image_size=(640, 480), up_axis="Y", **options):
    """An ``ImageRenderer`` writing ``image_path``, or None (saying why) without a path or Pillow."""
    if not image_path:
        return None
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("Pillow is not installed: skipping the PNG (pip install pillow)")
        return None
    _parent_dir(image_path)
    width, height = image_size
    return wp.render.ImageRenderer(os.fspath(image_path), width=width, height=height, up_axis=up_axis,
                                   **options)


def grid_triangles(rows, cols=None):
    """Two triangles per square of a rows x cols grid of vertices numbered row by row
    (vertex (i, j) is i * cols + j)."""
    cols = rows if cols is None else cols
    a = (np.arange(rows - 1)[:, None] * cols + np.arange(cols - 1)[None, :]).ravel()  # lower-left corners
    return np.concatenate([np.stack([a, a + cols, a + cols + 1], 1), np.stack([a, a + cols + 1, a + 1], 1)])


class Example:
    """Base of the gallery's examples: owns the renderers and the simulated time."""

    fps = 60
    up_axis = "Y"
    image_options = {}  # ImageRenderer options: camera_pos, camera_target, projection, background...

    def __init__(self, device=None, stage_path=None, image_path=None, image_size=(640, 480)):
        self.device = wp.get_device(device)
        self.sim_time = 0.0
        self.frame_dt = 1.0 / self.fps
        self.renderer = usd_renderer(stage_path, self.up_axis, self.fps)
        self.image = image_renderer(image_path, image_size, self.up_axis, **self.image_options)

    def step(self):
        raise NotImplementedError

    def draw(self, renderer):
        raise NotImplementedError

    def render(self):
        """Write the current state as one frame of the USD stage."""
        if self.renderer is not None:
            self.renderer.begin_frame(self.sim_time)
            self.draw(self.renderer)
            self.renderer.end_frame()

    def save(self):
        """Write the USD stage and a PNG of the current state; returns the paths written."""
        written = []
        if self.renderer is not None and self.renderer.save():
            written.append(self.renderer.stage.GetRootLayer().realPath)
        if self.image is not None:
            self.image.begin_frame(self.sim_time)
            self.draw(self.image)
            self.image.end_frame()
            self.image.save()
            written.append(self.image.path)
        return written


def run(example: Example, num_frames: int):
    """Step and render ``num_frames`` frames, printing the simulation time per frame, then save."""
    every = max(1, num_frames // 10)
    sim_ms = render_ms = 0.0
    window = []
    for frame in range(1, num_frames + 1):
        t0 = time.perf_counter()
        example.step()
        wp.synchronize_device(example.device)
        t1 = time.perf_counter()
        example.render()
        t2 = time.perf_counter()
        if frame == 1:  # compiles (or loads from the cache) every kernel: timed apart
            print(f"frame 1/{num_frames}, {(t1 - t0) * 1e3:.1f} ms (first frame: kernels built or loaded)")
            continue
        window.append(t1 - t0)
        sim_ms += (t1 - t0) * 1e3
        render_ms += (t2 - t1) * 1e3
        if frame % every == 0 or frame == num_frames:
            print(f"frame {frame}/{num_frames}, {1e3 * sum(window) / len(window):.1f} ms/frame")
            window = []
    if num_frames > 1:
        n = num_frames - 1
        print(f"{example.device}: simulation {sim_ms / n:.2f} ms/frame, "
              f"USD output {render_ms / n:.2f} ms/frame")
    for path in example.save():
        print(f"wrote {path}")
