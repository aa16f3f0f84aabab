"""Where a CUDA launch's host time goes, all variants in one run: wp.launch through the native path
(launch_ext.cpp) and through the general Python path, on each kind of stream, the native entry and
cuda.bindings with pre-packed arguments, the Python share with the driver call stubbed, graph
replay, and (``--floor``, on by default) the driver alone from a C loop (``cuda_launch_floor.py``:
streams, parameter passing, kernels, queue depth, GPU drain rate); ``--paired N`` alternates
wp.launch with that C loop.

    python benchmarks/cuda_launch_bench.py [--device cuda:0] [--iters 2000] [--no-floor]

Same timing method as ``python -m benchmarks`` / anchors.py's sec_launch: host clock around N
launches followed by a synchronize, median of 7 repeats, one warm-up round excluded ("total").
"submit" rows stop the clock before the synchronize (host cost only, 200 launches).
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
from tilewarp.runtime import native_launch  # noqa: E402
from tilewarp.runtime.cuda import LaunchRec  # noqa: E402

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


def timeit(fn, iters, repeats=7, sync=True):
    fn()
    wp.synchronize()
    times = []
    for _ in range(repeats):
        wp.synchronize()
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        if sync:
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


def wp_rows(k, dev, dev_name, a, b, n):
    """wp.launch as users call it (anchors.py's sec_launch is the first row)."""
    noop = lambda: wp.launch(k.noop, dim=1, inputs=[a], device=dev)  # noqa: E731
    rows = [("wp.launch noop (1 array)", timeit(noop, n)),
            ("wp.launch noop, submit only (200, no sync)", timeit(noop, 200, sync=False)),
            ("wp.launch noop dim=0 (everything but the submit)", timeit(
                lambda: wp.launch(k.noop, dim=0, inputs=[a], device=dev), n)),
            ("wp.launch noop, device as a string", timeit(
                lambda: wp.launch(k.noop, dim=1, inputs=[a], device=dev_name), n)),
            ("wp.launch 4 params", timeit(
                lambda: wp.launch(k.bump, dim=1, inputs=[a, b, 1.0, 3], device=dev), n))]
    fast, native_launch.fast = native_launch.fast, None
    rows.append(("wp.launch noop, general path (native path off)", timeit(noop, n)))
    native_launch.fast = fast
    if not dev.is_cuda:
        return rows
    backend = dev.backend
    s = wp.Stream(dev)
    rows.append(("wp.launch(stream=s)", timeit(lambda: wp.launch(k.noop, dim=1, inputs=[a], stream=s), n)))
    streams = (("created non-blocking", backend.create_stream(blocking=False)), ("legacy NULL", 0),
               ("per-thread default", 2))  # 2: CU_STREAM_PER_THREAD
    for label, h in streams:
        saved = backend.stream
        backend.set_stream(h)
        rows.append((f"wp.launch noop, current stream {label}", timeit(noop, n)))
        backend.set_stream(saved)
    compiled = k.noop.compiled(dev)
    real, real_submit = backend.launch, compiled.submit
    backend.launch = compiled.submit = lambda *x, **kw: None
    fast, native_launch.fast = native_launch.fast, None
    rows.append(("wp.launch general path, Python only (driver entry stubbed)", timeit(noop, n)))
    backend.launch, compiled.submit, native_launch.fast = real, real_submit, fast
    with wp.ScopedCapture(dev) as cap:
        for _ in range(100):
            noop()
    replay = timeit(lambda: wp.capture_launch(cap.graph), max(n // 100, 20)) / 100
    rows.append(("graph replay, per captured launch", replay))
    return rows


def entry_rows(k, dev, a, n):
    """The backend and driver entries with the arguments packed once."""
    backend = dev.backend
    compiled = k.noop.compiled(dev)
    packed = compiled.packer.pack([a], dev, compiled.packer.bounds(1))
    addr, h = ctypes.addressof(packed), compiled.handle
    rows = [("backend.launch, pre-packed", timeit(lambda: backend.launch(h, addr, 1, 256), n))]
    submit, packer = compiled.submit, compiled.packer
    args = packer.pack_bytes([a], dev, packer.bounds_bytes(1)[1])
    rows.append(("wp.launch's submit (native tw_cuda_submit), pre-packed bytes", timeit(
        lambda: submit(args, 1, 256), n)))
    if backend._submit is not None:
        empty = packer.pack_bytes([a], dev, packer.bounds_bytes(0)[1])
        rec = LaunchRec(int(backend._cufn[h]), backend._stream_slot_addr, 0, 256, backend._ctx_id)
        rows.append(("tw_cuda_submit ctypes call only (0 tasks: no driver call)", timeit(
            lambda: backend._submit(ctypes.addressof(rec), empty), n)))
    if backend._native is not None:
        rows.append(("tw_cuda_launch ctypes call only (n_tasks=0: no driver call)", timeit(
            lambda: backend._native(h, addr, 0, 256), n)))
        # the general path with cuda.bindings' cuLaunchKernel (what runs without a host compiler)
        saved = backend._native, native_launch.fast
        backend._native = native_launch.fast = None
        compiled.submit = lambda args, n_tasks, block_dim: backend.launch(h, args, n_tasks, block_dim)
        rows.append(("wp.launch via cuda.bindings (no native library)", timeit(
            lambda: wp.launch(k.noop, dim=1, inputs=[a], device=dev), n)))
        rows.append(("cuLaunchKernel bindings, pre-packed", timeit(
            lambda: backend._launch_bindings(h, addr, 1, 256, 0, None), n)))
        (backend._native, native_launch.fast), compiled.submit = saved, submit
    return rows, int(backend._cufn[h]), packed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--no-floor", action="store_true", help="skip the C-loop driver measurements")
    ap.add_argument("--paired", type=int, default=0, metavar="N",
                    help="then N alternations of wp.launch and the C loop (same kernel, stream, arguments)")
    args = ap.parse_args()
    wp.config.quiet = True
    k = load_kernels()
    dev = wp.get_device(args.device)
    a = wp.zeros(1, dtype=float, device=dev)
    b = wp.zeros(1, dtype=float, device=dev)
    rows = wp_rows(k, dev, args.device, a, b, args.iters)
    facts = []
    if dev.is_cuda:
        more, cufn, packed = entry_rows(k, dev, a, args.iters)
        rows += more
        if not args.no_floor:
            from benchmarks.cuda_launch_floor import run as floor

            floor_rows, facts = floor(dev, cufn, packed)
            rows += [(name, tot if tot is not None else sub, sub if tot is not None else None)
                     for name, sub, tot in floor_rows]
    print(f"device: {dev} ({dev.name}), iters={args.iters}, native entry: "
          f"{'yes' if dev.is_cuda and dev.backend._native is not None else 'no'}, native launch path: "
          f"{'yes' if native_launch.fast is not None else 'no'}")
    for fact in facts:
        print(fact)
    print(f"{'':<86s} {'total us':>9s} {'submit us':>9s}")
    for name, us, *sub in rows:
        extra = f" {sub[0]:9.2f}" if sub and sub[0] is not None else ""
        print(f"{name:<86s} {us:9.2f}{extra}")
    if dev.is_cuda and args.paired:
        paired(k, dev, a, args.iters, args.paired)


def paired(k, dev, a, n, rounds):
    """wp.launch against the driver alone, back to back, so both see the host in the same phase:
    the difference is what tilewarp adds to a launch."""
    from benchmarks.cuda_launch_floor import Floor

    compiled = k.noop.compiled(dev)
    packed = compiled.packer.pack([a], dev, compiled.packer.bounds(1))
    floor = Floor(dev, int(dev.backend._cufn[compiled.handle]), packed)
    noop = lambda: wp.launch(k.noop, dim=1, inputs=[a], device=dev)  # noqa: E731
    diffs = []
    print(f"{'round':<8s}{'wp.launch us':>14s}{'C loop us':>12s}{'difference':>12s}")
    for r in range(rounds):
        ours = timeit(noop, n, repeats=1)
        driver = floor.loop("tilewarp noop", dev.backend.stream, n=n)[1]
        diffs.append(ours - driver)
        print(f"{r:<8d}{ours:14.2f}{driver:12.2f}{ours - driver:12.2f}")
    print(f"median difference (tilewarp's share of a launch): {statistics.median(diffs):.2f} us")


if __name__ == "__main__":
    main()
