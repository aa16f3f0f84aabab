"""Side-by-side benchmarks: the same kernels through tilewarp and warp-lang, with ratios.

Timing: the median of repeats of N calls, warm-up excluded. Kernel throughput on a GPU (the SIMT
kernels, the tile programs, the copy ceiling) is the device's time between CUDA events recorded
before the first call and after the last (what CuPy, Triton's do_bench and Nsight report: the host
waiting for the last kernel is not the kernels' time), the calls queued behind a busy kernel so
that the host's launch rate does not limit them; on the CPU, and for what is host work
(launch overhead, Tape.backward, compiles), the host clock from the first call to the synchronize
after the last (the method of ../shared/bench/anchors.py). Usage:
    python -m benchmarks [--device cpu|cuda:0] [--quick] [--only integrate,bounce,launch,atomic,compile,backward,tiles,geometry]
"""
from __future__ import annotations

import argparse
import functools
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

from .geometry import KERNELS as GEOMETRY_KERNELS, bench_geometry, report_geometry
from .tiles import KERNELS, bench_tiles, report_tiles

INTEGRATE = textwrap.dedent('''
    @wp.kernel
    def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3),
                  inv_m: wp.array(dtype=float), dt: float):
        i = wp.tid()
        vn = v[i] + (f[i] * inv_m[i] + wp.vec3(0.0, -9.8, 0.0)) * dt
        v[i] = vn
        x[i] = x[i] + vn * dt

    @wp.func
    def accel(v: wp.vec3, damping: float):
        return wp.vec3(0.0, -9.8, 0.0) - damping * v

    @wp.kernel
    def bounce(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float, n_sub: int):
        i = wp.tid()
        xi = x[i]
        vi = v[i]
        for s in range(n_sub):
            vi = vi + accel(vi, 0.1) * dt
            xi = xi + vi * dt
            if xi[1] < 0.0:
                xi = wp.vec3(xi[0], 0.0, xi[2])
                vi = wp.vec3(vi[0], -0.5 * vi[1], vi[2])
        x[i] = xi
        v[i] = vi

    @wp.kernel
    def springs(x: wp.array(dtype=wp.vec3), rest: float, k: float, f: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        j = (i + 1) % x.shape[0]
        d = x[j] - x[i]
        l = wp.length(d)
        fs = k * (l - rest) / l * d
        wp.atomic_add(f, i, fs)
        wp.atomic_sub(f, j, fs)

    @wp.kernel
    def atomic_total(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
        i = wp.tid()
        wp.atomic_add(out, 0, x[i])

    @wp.kernel
    def noop(a: wp.array(dtype=float)):
        i = wp.tid()

    @wp.kernel
    def busy(n: int, out: wp.array(dtype=float)):
        x = float(0.0)
        for k in range(n):
            x = x * 0.999 + 1.0
        out[0] = x
''')
#: per wp module: its ``busy`` kernel, scratch, and the seconds one loop step takes on the GPU
_BUSY: dict = {}


def load(module_name: str, cache: str):
    """Import ``module_name`` as wp and define the benchmark kernels in a real file (for getsource)."""
    os.environ["TILEWARP_CACHE_DIR"] = os.environ["WARP_CACHE_PATH"] = cache
    wp = importlib.import_module(module_name)
    wp.config.quiet = True
    if module_name == "warp":
        wp.config.kernel_cache_dir = cache
        wp.init()
    path = os.path.join(cache, f"bench_kernels_{module_name}.py")
    with open(path, "w") as f:
        f.write(f"import {module_name} as wp\n" + INTEGRATE + KERNELS + GEOMETRY_KERNELS)
    spec = importlib.util.spec_from_file_location(f"bench_kernels_{module_name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _BUSY[module_name] = [mod.busy, None, 0.0]
    return wp, mod


def _keep_busy(wp, device, seconds: float):
    """Queue ``seconds`` of one-thread work on ``device``, so that the host queues the timed calls
    while the GPU is still busy: the events then time the kernels back to back, not the host's
    launch rate (a tile launch from Python took 13-22 us on the device machines' hosts, more than
    the 18-25 us row sum now and then: its "slow mode", benchmarks/RESULTS.md)."""
    entry = _BUSY.get(wp.__name__)
    if entry is None:
        return
    kernel, out, step = entry
    if out is None:  # time one long loop once
        out = entry[1] = wp.zeros(1, dtype=float, device=device)
        wp.launch(kernel, dim=1, inputs=[1000, out], device=device)
        wp.synchronize()
        start, end = wp.Event(device, enable_timing=True), wp.Event(device, enable_timing=True)
        stream = wp.get_stream(device)
        stream.record_event(start)
        wp.launch(kernel, dim=1, inputs=[200000, out], device=device)
        stream.record_event(end)
        wp.synchronize()
        step = entry[2] = wp.get_event_elapsed_time(start, end) / 1e3 / 200000
    wp.launch(kernel, dim=1, inputs=[int(seconds / step), out], device=device)


def timeit(wp, fn, iters, repeats=7, device=None):
    """Median seconds per call of ``fn``: by CUDA events on a CUDA ``device`` (the calls queued
    behind enough work that the host's launch rate does not count), else the host clock."""
    fn()
    wp.synchronize()
    stream = wp.get_stream(device) if device is not None and str(device).startswith("cuda") else None
    host = 0.0
    if stream is not None:  # how long the host takes to queue the calls
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        host = time.perf_counter() - t
    times = []
    for _ in range(repeats):
        wp.synchronize()
        if stream is not None:
            _keep_busy(wp, device, 2 * host + 2e-4)
            start, end = wp.Event(device, enable_timing=True), wp.Event(device, enable_timing=True)
            stream.record_event(start)
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        if stream is not None:
            stream.record_event(end)
        wp.synchronize()
        elapsed = time.perf_counter() - t if stream is None else wp.get_event_elapsed_time(start, end) / 1e3
        times.append(elapsed / iters)
    return statistics.median(times)


def bench_integrate(wp, k, device, n, on_gpu):
    rng = np.random.default_rng(0)
    x, v, f = (wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3, device=device) for _ in range(3))
    im = wp.array(rng.random(n, dtype=np.float32) + 0.5, dtype=float, device=device)
    s = timeit(wp, lambda: wp.launch(k.integrate, dim=n, inputs=[x, v, f, im, 0.01], device=device),
               20 if on_gpu else 10, device=device)
    return s, n * 64  # bytes: read x, v, f (3 x 12), inv_m (4); write v, x (2 x 12)


def bench_bounce(wp, k, device, n, on_gpu):
    rng = np.random.default_rng(0)
    x = wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3, device=device)
    v = wp.zeros(n, dtype=wp.vec3, device=device)
    s = timeit(wp, lambda: wp.launch(k.bounce, dim=n, inputs=[x, v, 1e-3, 4], device=device), 20 if on_gpu else 10,
               device=device)
    return s, n * 48


def bench_atomic(wp, k, device, on_gpu):
    """Issue 29's contended atomic sum: 1024^2 float64 values added into one address (the sum checked
    against NumPy's, to rounding)."""
    n = 1 << 20
    x = np.random.default_rng(0).random(n)
    wx, out = wp.array(x, dtype=wp.float64, device=device), wp.zeros(1, dtype=wp.float64, device=device)
    s = timeit(wp, lambda: wp.launch(k.atomic_total, dim=n, inputs=[wx, out], device=device), 20 if on_gpu else 5,
               device=device)
    out.zero_()
    wp.launch(k.atomic_total, dim=n, inputs=[wx, out], device=device)
    assert abs(out.numpy()[0] - x.sum()) < 1e-9 * n, (out.numpy()[0], x.sum())
    return s


def bench_launch(wp, k, device):
    """Host time of a launch: a one-thread SIMT kernel, and a one-block tile kernel (launch_tiled)."""
    a = wp.zeros(32, dtype=float, device=device)
    simt = timeit(wp, lambda: wp.launch(k.noop, dim=1, inputs=[a], device=device), 2000)
    return simt, timeit(wp, lambda: wp.launch_tiled(k.tile_one, dim=[1], inputs=[a], block_dim=32, device=device), 2000)


def bench_backward(wp, k, device, n, on_gpu):
    """Tape.backward of one recorded bounce launch over n particles (its dynamic loop is where
    Warp's gradients are wrong; it updates in place, so both replay from the updated state: timed
    all the same), of a chain of springs (no loop, scattered atomic forces: Warp's gradient is
    right), and the cost of a launch under a Tape."""
    rng = np.random.default_rng(0)
    x, v = (wp.array(rng.random((n, 3), dtype=np.float32), dtype=wp.vec3, device=device, requires_grad=True)
            for _ in range(2))
    tape = wp.Tape()
    with tape:
        wp.launch(k.bounce, dim=n, inputs=[x, v, 1e-3, 4], device=device)
    x.grad.fill_(1.0)
    s = timeit(wp, lambda: tape.backward(), 10 if on_gpu else 3)
    # a loop-free kernel with scattered forces (a chain of springs), where Warp's gradient is right
    f = wp.zeros(n, dtype=wp.vec3, device=device, requires_grad=True)
    spring_tape = wp.Tape()
    with spring_tape:
        wp.launch(k.springs, dim=n, inputs=[x, 0.01, 100.0], outputs=[f], device=device)
    f.grad.assign(rng.random((n, 3), dtype=np.float32))  # (ones would sum the forces to zero)
    x.grad.zero_()
    spring_tape.backward()
    assert np.isfinite(x.grad.numpy()).all() and np.abs(x.grad.numpy()).max() > 0
    springs = timeit(wp, lambda: spring_tape.backward(), 10 if on_gpu else 3)
    a = wp.zeros(1, dtype=float, device=device)

    def under_tape():
        with wp.Tape():
            for _ in range(100):
                wp.launch(k.noop, dim=1, inputs=[a], device=device)

    return (s, n * 96), (springs, n * 72), timeit(wp, under_tape, 20) / 100


COMPILE_SCRIPT = textwrap.dedent('''
    import os, sys, time
    t0 = time.perf_counter()
    import {module} as wp
    wp.config.quiet = True
    if "{module}" == "warp":
        wp.config.kernel_cache_dir = os.environ["WARP_CACHE_PATH"]
    wp.init()  # both: devices and CUDA contexts before the clock starts (Warp creates them here)
    sys.path.insert(0, os.environ["BENCH_DIR"])
    import bench_compile_{module} as k
    t1 = time.perf_counter()
    a = wp.zeros(16, dtype=wp.vec3, device="{device}")
    b = wp.zeros(16, dtype=wp.vec3, device="{device}")
    wp.launch(k.bounce, dim=16, inputs=[a, b, 0.01, 2], device="{device}")
    wp.synchronize()
    print(time.perf_counter() - t1)
''')


def bench_compile(module_name, device):
    """Seconds for compile + first launch of a small SIMT module in a fresh process: (cold, warm)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, f"bench_compile_{module_name}.py"), "w") as f:
            f.write(f"import {module_name} as wp\n" + INTEGRATE)
        env = dict(os.environ, TILEWARP_CACHE_DIR=d + "/cache", WARP_CACHE_PATH=d + "/cache", BENCH_DIR=d)
        if module_name == "tilewarp":  # the native runtime is built once per install, as Warp ships its own
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            subprocess.run([sys.executable, os.path.join(root, "build_lib.py")], env=env, check=True,
                           capture_output=True)
        script = COMPILE_SCRIPT.format(module=module_name, device=device)
        out = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
            if r.returncode:
                raise RuntimeError(r.stderr[-2000:])
            out.append(float(r.stdout.strip().splitlines()[-1]))
        return tuple(out)


def copy_ceiling(wp, device, nbytes):
    """Device copy bandwidth in bytes/s (read + write counted), the memory-bound ceiling."""
    n = nbytes // 4
    a = wp.zeros(n, dtype=float, device=device)
    b = wp.zeros(n, dtype=float, device=device)
    s = timeit(wp, lambda: wp.copy(b, a), 20, device=device)
    return 2 * n * 4 / s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="integrate,bounce,launch,atomic,compile,backward,tiles,geometry")
    ap.add_argument("--modules", default="tilewarp,warp")
    args = ap.parse_args()
    only = set(args.only.split(","))
    modules = args.modules.split(",")
    results: dict = {m: {} for m in modules}
    cache = tempfile.mkdtemp(prefix="twbench_")
    device = None
    for m in modules:
        try:
            wp, k = load(m, cache)
        except ImportError as e:
            print(f"{m}: not available ({e})")
            continue
        device = args.device or ("cuda:0" if wp.get_cuda_device_count() > 0 else "cpu")
        on_gpu = device.startswith("cuda")
        n = 1 << (18 if (args.quick or not on_gpu) else 24)
        r = results[m]
        if "integrate" in only:
            r["integrate"] = bench_integrate(wp, k, device, n, on_gpu)
            r["ceiling"] = copy_ceiling(wp, device, n * 32)
        if "bounce" in only:
            r["bounce"] = bench_bounce(wp, k, device, n, on_gpu)
        if "launch" in only:
            r["launch"], r["tile_launch"] = bench_launch(wp, k, device)
        if "atomic" in only:
            r["atomic"] = bench_atomic(wp, k, device, on_gpu)
        if "compile" in only:
            r["compile"] = bench_compile(m, device)
        if "backward" in only:
            r["backward"], r["backward_springs"], r["tape_launch"] = bench_backward(wp, k, device, n, on_gpu)
        if "tiles" in only:
            r["tiles"] = bench_tiles(wp, k, device, on_gpu, functools.partial(timeit, device=device))
            r.setdefault("ceiling", copy_ceiling(wp, device, (1 << 24) * 32 if on_gpu else (1 << 18) * 32))
        if "geometry" in only:
            r["geometry"] = bench_geometry(wp, k, device, on_gpu, functools.partial(timeit, device=device))
    report(results, modules, device)


def report(results, modules, device):
    tw, ref = results.get("tilewarp", {}), results.get("warp", {})
    print(f"\n## device {device}  (ratio = warp time / tilewarp time; > 1 means tilewarp is faster)")
    print(f"{'benchmark':<34}{'tilewarp':>14}{'warp-lang':>14}{'ratio':>8}  note")

    def line(name, a, b, unit="ms", scale=1e3, note=""):
        fa = f"{a * scale:.4g} {unit}" if a is not None else "-"
        fb = f"{b * scale:.4g} {unit}" if b is not None else "-"
        ratio = f"{b / a:.2f}x" if a and b else "-"
        print(f"{name:<34}{fa:>14}{fb:>14}{ratio:>8}  {note}")

    for key, label in (("integrate", "SIMT integrate (anchors kernel)"), ("bounce", "SIMT bounce (issue kernel)"),
                       ("backward", "Tape.backward of bounce"), ("backward_springs", "Tape.backward of springs")):
        if key in tw or key in ref:
            (a, nbytes) = tw.get(key, (None, 0))
            (b, _) = ref.get(key, (None, 0))
            note = ""
            if a and "ceiling" in tw and key == "integrate":
                gbs = nbytes / a / 1e9
                what = "wp.copy (one-thread memmove)" if device == "cpu" else "device copy"
                note = f"{gbs:.1f} GB/s = {100 * nbytes / a / tw['ceiling']:.1f}% of {what} {tw['ceiling'] / 1e9:.1f} GB/s"
            line(label, a, b, note=note)
    if "launch" in tw or "launch" in ref:
        line("launch overhead (1-thread kernel)", tw.get("launch"), ref.get("launch"), "us", 1e6)
        line("tile launch overhead (1 block)", tw.get("tile_launch"), ref.get("tile_launch"), "us", 1e6)
    if "atomic" in tw or "atomic" in ref:
        line("atomic sum, 1M float64 -> 1 address", tw.get("atomic"), ref.get("atomic"))
    if "tape_launch" in tw or "tape_launch" in ref:
        line("launch under a Tape (1 thread)", tw.get("tape_launch"), ref.get("tape_launch"), "us", 1e6)
    if "tiles" in tw or "tiles" in ref:
        report_tiles(tw.get("tiles", {}), ref.get("tiles", {}), tw.get("ceiling"), line)
    if "geometry" in tw or "geometry" in ref:
        report_geometry(tw.get("geometry", {}), ref.get("geometry", {}), line)
    if "compile" in tw or "compile" in ref:
        a, b = tw.get("compile", (None, None)), ref.get("compile", (None, None))
        line("cold compile + first launch", a[0], b[0], "s", 1)
        line("warm (cached) load + first launch", a[1], b[1], "s", 1)


if __name__ == "__main__":
    main()
