"""Where a gallery example's frame goes, part by part, under tilewarp and under warp-lang.

    python -m benchmarks.example_parts [--device cuda:0] [--modules tilewarp,warp]
        [--example mesh_collision|tile_mlp|tile_nbody]

mesh_collision: the frame's substeps with only the hash-grid builds, only the step launches, and
both (the example's frame). tile_mlp: one training iteration's forward launch, forward and
Tape.backward, the Adam launches, and the whole iteration. tile_nbody: the tiled accelerations
kernel against a plain per-thread kernel of the same float32 arithmetic over the same stars (the
issue's yardstick on the CPU, where Warp runs one lane a block), and the step. Host wall time with the device
synchronised after each part, the median of 20 repeats; and the device time of one repeat's
launches by CUDA events.
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import time

from .examples import _copy_examples


def _mesh_collision_parts(mod, ex, device):
    wp = mod.wp

    def build():
        for _ in range(ex.substeps):
            ex.grid.build(ex.x, 2.0 * ex.radius)
            ex.x, ex.x_next = ex.x_next, ex.x

    def launch():
        for _ in range(ex.substeps):
            wp.launch(mod.step, dim=ex.num_particles, device=device,
                      inputs=[ex.grid.id, ex.mesh.id, ex.x, ex.v, ex.radius, ex.mass, ex.k_n, ex.c_n, ex.mu, ex.c_t,
                              ex.sim_dt], outputs=[ex.x_next, ex.v_next])

    return (("builds", build), ("step launches", launch), ("frame", ex.step))


def _tile_mlp_parts(mod, ex, device):
    wp = mod.wp

    def forward_backward():
        ex.tape.reset()
        with ex.tape:
            ex.forward()
        ex.tape.backward(ex.loss)

    def adam():
        for p, (m, v) in zip(ex.params, ex.moments):
            wp.launch(mod.adam, dim=p.shape, device=device, inputs=[p, p.grad, m, v, 1e-3, ex.beta1, ex.beta2])

    return (("forward", ex.forward), ("forward+backward", forward_backward), ("adam", adam),
            ("iteration", ex.train_step))


def _plain_nbody(wp):
    @wp.kernel
    def plain_accelerations(x: wp.array(dtype=wp.vec3), mass: float, softening2: float, a: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        xi = x[i]
        acc = wp.vec3()
        for j in range(x.shape[0]):
            d = x[j] - xi
            r2 = wp.length_sq(d) + softening2
            acc += d / (r2 * wp.sqrt(r2))
        a[i] = mass * acc

    return plain_accelerations


def _tile_nbody_parts(mod, ex, device):
    wp = mod.wp
    plain = _plain_nbody(wp)
    out = wp.zeros_like(ex.a)

    def per_thread():
        wp.launch(plain, dim=ex.num_bodies, device=device, inputs=[ex.x, ex.mass, ex.softening**2], outputs=[out])

    per_thread()
    ex.compute_accelerations()
    a, b = ex.a.numpy(), out.numpy()
    assert abs(a - b).max() <= 1e-4 * abs(b).max(), "the two kernels disagree"
    return (("tiled accelerations", ex.compute_accelerations), ("plain accelerations", per_thread),
            ("step", ex.step))


PARTS = {"mesh_collision": _mesh_collision_parts, "tile_mlp": _tile_mlp_parts, "tile_nbody": _tile_nbody_parts}


def _child(example: str, device: str, frames: int) -> None:
    sys.path.insert(0, os.getcwd())
    mod = importlib.import_module(example)
    wp = mod.wp
    ex = mod.Example(device=device, **({"verbose": False} if example == "tile_mlp" else {}))
    ex.step()
    wp.synchronize_device(device)
    for name, fn in PARTS[example](mod, ex, device):
        fn()
        wp.synchronize_device(device)
        times = []
        for _ in range(frames):
            t0 = time.perf_counter()
            fn()
            wp.synchronize_device(device)
            times.append(time.perf_counter() - t0)
        line = f"{name:19s} host {statistics.median(times) * 1e3:8.3f} ms"
        if device.startswith("cuda"):
            start, end = wp.Event(device, enable_timing=True), wp.Event(device, enable_timing=True)
            stream = wp.get_stream(device)
            stream.record_event(start)
            fn()
            stream.record_event(end)
            wp.synchronize_device(device)
            line += f"   device {wp.get_event_elapsed_time(start, end):8.3f} ms"
        print(line, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--modules", default="tilewarp,warp")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--example", default="mesh_collision", choices=sorted(PARTS))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        _child(a.example, a.device, a.frames)
        return
    import tempfile
    from pathlib import Path

    for module in a.modules.split(","):
        with tempfile.TemporaryDirectory() as d:
            _copy_examples(module, Path(d))
            print(f"-- {module}", flush=True)
            subprocess.run([sys.executable, "-m", "benchmarks.example_parts", "--child", "--device", a.device,
                            "--frames", str(a.frames), "--example", a.example], cwd=d, check=False,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                                             os.environ.get("PYTHONPATH", "")])})


if __name__ == "__main__":
    main()
