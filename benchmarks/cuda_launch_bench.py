"""Where a CUDA launch's host time goes: wp.launch through the native entry and through
cuda.bindings, explicit streams, the raw entry with pre-packed arguments, and graph replay.

    python benchmarks/cuda_launch_bench.py [--device cuda:0] [--iters 2000]

Same timing method as ``python -m benchmarks``: host clock around N launches followed by a
synchronize, median of 7 repeats, one warm-up round excluded.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tilewarp as wp  # noqa: E402

KERNEL = '''
import tilewarp as wp

@wp.kernel
def noop(a: wp.array(dtype=float)):
    i = wp.tid()

@wp.kernel
def bump(a: wp.array(dtype=float), b: wp.array(dtype=float), s: float, n: int):
    i = wp.tid()
    a[i] = a[i] + s
'''


def timeit(fn, iters, repeats=7):
    fn()
    wp.synchronize()
    times = []
    for _ in range(repeats):
        wp.synchronize()
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        wp.synchronize()
        times.append((time.perf_counter() - t) / iters)
    return statistics.median(times) * 1e6


def load_kernels():
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "launch_bench_kernels.py")
    with open(path, "w") as f:
        f.write(KERNEL)
    sys.path.insert(0, folder)
    import launch_bench_kernels as k
    return k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--iters", type=int, default=2000)
    args = ap.parse_args()
    wp.config.quiet = True
    k = load_kernels()
    dev = wp.get_device(args.device)
    n = args.iters
    a = wp.zeros(1, dtype=float, device=dev)
    b = wp.zeros(1, dtype=float, device=dev)
    rows = []
    rows.append(("wp.launch noop (1 array)", timeit(lambda: wp.launch(k.noop, dim=1, inputs=[a], device=dev), n)))
    rows.append(("wp.launch noop, device as a string", timeit(
        lambda: wp.launch(k.noop, dim=1, inputs=[a], device=args.device), n)))
    rows.append(("wp.launch 4 params", timeit(lambda: wp.launch(k.bump, dim=1, inputs=[a, b, 1.0, 3], device=dev), n)))
    if dev.is_cuda:
        backend = dev.backend
        s = wp.Stream(dev)
        rows.append(("wp.launch(stream=s)", timeit(lambda: wp.launch(k.noop, dim=1, inputs=[a], stream=s), n)))
        compiled = k.noop.compiled(dev)
        packed = compiled.packer.pack([a], dev, compiled.packer.bounds(1))
        addr, h = ctypes.addressof(packed), compiled.handle
        h_fn = h
        rows.append(("backend.launch, pre-packed", timeit(lambda: backend.launch(h, addr, 1, 256), n)))
        if backend._native is not None:
            native = backend._native
            rows.append(("tw_cuda_launch (ctypes floor)", timeit(lambda: native(h, addr, 1, 256), n)))
            saved, backend._native = backend._native, None
            rows.append(("wp.launch via cuda.bindings", timeit(
                lambda: wp.launch(k.noop, dim=1, inputs=[a], device=dev), n)))
            rows.append(("cuLaunchKernel bindings, pre-packed", timeit(
                lambda: backend._launch_bindings(h, addr, 1, 256, 0, None), n)))
            backend._native = saved
        for label, h in (("legacy stream 0", 0), ("non-blocking stream", backend.create_stream(blocking=False))):
            saved = backend.stream
            backend.set_stream(h)
            rows.append((f"backend.launch pre-packed, {label}", timeit(lambda: backend.launch(h_fn, addr, 1, 256), n)))
            backend.set_stream(saved)
        real = backend.launch
        backend.launch = lambda *x, **kw: None
        rows.append(("wp.launch Python only (no driver call)", timeit(
            lambda: wp.launch(k.noop, dim=1, inputs=[a], device=dev), n)))
        backend.launch = real
        with wp.ScopedCapture(dev) as cap:
            for _ in range(100):
                wp.launch(k.noop, dim=1, inputs=[a], device=dev)
        per = timeit(lambda: wp.capture_launch(cap.graph), max(n // 100, 20)) / 100
        rows.append(("graph replay, per captured launch", per))
    print(f"device: {dev} ({dev.name}), iters={n}, native entry: "
          f"{'yes' if dev.is_cuda and dev.backend._native is not None else 'no'}")
    for name, us in rows:
        print(f"{name:<42s} {us:8.2f} us")


if __name__ == "__main__":
    main()
