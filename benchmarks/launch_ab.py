"""Launch overhead of one tilewarp tree, for A/B runs of two trees in alternation on one machine
(host noise there moves single runs by 20 %): anchors.py's sec_launch (1-thread noop kernel, one
array, host clock around 2000 launches + synchronize, median of repeats), the same with the
driver entry stubbed (the Python share), and the driver entry alone with arguments packed once.

    python benchmarks/launch_ab.py --tree PATH [--device cuda:0] [--label old]
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

KERNEL = '''
import tilewarp as wp

@wp.kernel
def noop(a: wp.array(dtype=float)):
    i = wp.tid()
'''


def timeit(wp, fn, iters=2000, repeats=7, stat=statistics.median):
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
    return stat(times) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True, help="folder holding the tilewarp package to measure")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.tree))
    import tilewarp as wp

    wp.config.quiet = True
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "ab_kernels.py"), "w") as f:
        f.write(KERNEL)
    sys.path.insert(0, folder)
    import ab_kernels as k

    dev = wp.get_device(args.device)
    a = wp.zeros(1, dtype=float, device=dev)
    launch = lambda: wp.launch(k.noop, dim=1, inputs=[a], device=dev)  # noqa: E731
    full = timeit(wp, launch)
    compiled, backend = k.noop.compiled(dev), dev.backend
    submit = getattr(compiled, "submit", None)
    if submit is not None:  # the bytes fast path
        packer = compiled.packer
        args_ = packer.pack_bytes([a], dev, packer.bounds_bytes(1)[1])
        entry = timeit(wp, lambda: submit(args_, 1, 256))
    else:
        packed = compiled.packer.pack([a], dev, compiled.packer.bounds(1))
        addr, h = ctypes.addressof(packed), compiled.handle
        entry = timeit(wp, lambda: backend.launch(h, addr, 1, 256))
    real_launch = backend.launch
    backend.launch = lambda *x, **kw: None
    if submit is not None:
        compiled.submit = backend.launch
    python = timeit(wp, launch)
    backend.launch, compiled.__dict__["submit"] = real_launch, submit
    print(f"{args.label:>4s} wp.launch {full:6.2f} us | python only {python:5.2f} us | "
          f"driver entry pre-packed {entry:5.2f} us", flush=True)


if __name__ == "__main__":
    main()
