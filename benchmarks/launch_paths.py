"""Host time of each kind of launch, for A/B runs of two trees in alternation on one machine (host
noise moves single runs by 20 %): a SIMT kernel (the native path), a SIMT kernel with a struct
parameter (no native path: a remembered plan), a one-block tile kernel (launch_tiled), the same two
launches while a Tape records, and Tape.backward of one recorded launch. Median of repeats of
``--iters`` launches each, then a synchronize (``--stat min``: the fastest repeat, steadier where
other work shares the host).

    python benchmarks/launch_paths.py --tree PATH [--device cpu|cuda:0] [--label old]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch_ab import timeit as timeit_stat  # noqa: E402

KERNELS = '''
import tilewarp as wp

@wp.struct
class Params:
    scale: float

@wp.kernel
def noop(a: wp.array(dtype=float)):
    i = wp.tid()

@wp.kernel
def with_struct(a: wp.array(dtype=float), p: Params):
    i = wp.tid()
    a[i] = a[i] * p.scale

@wp.kernel
def tile_one(a: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=32)
    wp.tile_store(a, t)

@wp.kernel
def square(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] * a[i]
'''


STAT = statistics.median


def timeit(wp, fn, iters):
    return timeit_stat(wp, fn, iters, stat=STAT)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True, help="folder holding the tilewarp package to measure")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--label", default="")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--stat", choices=("median", "min"), default="median")
    args = ap.parse_args()
    global STAT
    STAT = min if args.stat == "min" else statistics.median
    sys.path.insert(0, os.path.abspath(args.tree))
    import tilewarp as wp

    wp.config.quiet = True
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "lp_kernels.py"), "w") as f:
        f.write(KERNELS)
    sys.path.insert(0, folder)
    import lp_kernels as k

    dev, n = wp.get_device(args.device), args.iters
    a = wp.zeros(32, dtype=float, device=dev)
    p = k.Params()
    p.scale = 1.0
    out = {
        "simt": timeit(wp, lambda: wp.launch(k.noop, dim=1, inputs=[a], device=dev), n),
        "struct": timeit(wp, lambda: wp.launch(k.with_struct, dim=1, inputs=[a, p], device=dev), n),
        "tile": timeit(wp, lambda: wp.launch_tiled(k.tile_one, dim=[1], inputs=[a], block_dim=32, device=dev), n),
    }
    x = wp.ones(32, dtype=float, device=dev, requires_grad=True)
    y = wp.zeros(32, dtype=float, device=dev, requires_grad=True)
    tape = wp.Tape()
    with tape:  # launches while a Tape records (cleared every 100 so it does not grow)
        def taped(fn):
            count = [0]

            def run():
                fn()
                count[0] += 1
                if count[0] % 100 == 0:
                    tape.reset()
            return run
        out["tape simt"] = timeit(wp, taped(lambda: wp.launch(k.square, dim=32, inputs=[x], outputs=[y],
                                                              device=dev)), n)
        out["tape tile"] = timeit(wp, taped(lambda: wp.launch_tiled(k.tile_one, dim=[1], inputs=[x], block_dim=32,
                                                                    device=dev)), n)
    tape.reset()
    with tape:
        wp.launch(k.square, dim=32, inputs=[x], outputs=[y], device=dev)
    seed = wp.ones(32, dtype=float, device=dev)
    out["backward"] = timeit(wp, lambda: tape.backward(grads={y: seed}), max(n // 4, 1))
    print(f"{args.label:>6} " + "  ".join(f"{name} {us:6.2f}" for name, us in out.items()) + "  (us)")


if __name__ == "__main__":
    main()
