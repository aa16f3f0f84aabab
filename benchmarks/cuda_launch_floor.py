"""The driver's share of a launch, measured from C (``cuda_launch_floor.cpp``): which stream, which
way of passing parameters, which kernel, and whether 2000 launches fill the launch queue so the
host ends up waiting for the GPU. Called by ``cuda_launch_bench.py`` (``--floor``); returns rows.

Every row is the median of 7 repeats. "submit" is host time per launch until the last launch call
returned; "total" adds the final cuCtxSynchronize (what ``anchors.py``'s sec_launch measures).
"""
from __future__ import annotations

import ctypes
import os
import platform
import statistics
import tempfile
from pathlib import Path

KERNELS = r'''
struct P64 { unsigned long long w[8]; };
extern "C" __global__ void empty0() {}
extern "C" __global__ void empty64(P64 p) {}
extern "C" __global__ void __launch_bounds__(256) empty64lb(P64 p) {}
extern "C" __global__ void spin(long long ns) {  // keeps the GPU busy so launches queue up
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < (unsigned long long)ns);
}
'''
MODES = {"kernelParams": 0, "extra buffer": 1, "cuLaunchKernelEx": 2, "no params": 3}
PER_THREAD = 2  # CU_STREAM_PER_THREAD


def _library():
    from tilewarp.compile.host import build_native

    lib = ctypes.CDLL(build_native(Path(__file__).parent / "cuda_launch_floor.cpp", "launch_floor",
                                   link_flags=["-ldl"]))
    vp, i64, i32, dp = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_double)
    lib.twb_launch_loop.argtypes = [vp, vp, vp, i64, i32, i32, ctypes.c_uint, i32, dp, dp]
    lib.twb_event_loop.argtypes = [vp, vp, i32, dp]
    lib.twb_host_costs.argtypes = [i32, dp]
    lib.twb_ctx_loop.argtypes = [i32, dp]
    if lib.twb_init() != 0:
        raise RuntimeError("libcuda entry points not found")
    return lib


class Floor:
    def __init__(self, dev, noop_fn: int, noop_args, repeats: int = 7):
        from tilewarp.compile.nvrtc import compile_cubin

        self.b, self.lib, self.repeats = dev.backend, _library(), repeats
        cubin = compile_cubin(KERNELS, "launch_floor", dev.arch, source_dir=tempfile.mkdtemp())
        mod = self.b.load_module(cubin)
        self.fn = {"tilewarp noop": noop_fn}
        for sym in ("empty0", "empty64", "empty64lb", "spin"):
            self.fn[sym] = int(self.b._cufn[mod.function(sym)])
        self.args = {"tilewarp noop": noop_args, "empty0": None}
        self.p64 = (ctypes.c_uint64 * 8)()
        self.out = (ctypes.c_double * 2)()

    def _args(self, kernel):
        a = self.args.get(kernel, self.p64)
        return (0, 0) if a is None else (ctypes.addressof(a), ctypes.sizeof(a))

    def loop(self, kernel, stream, mode=0, n=2000, flags=3, stamps=None):
        ptr, size = self._args(kernel)
        mode = 3 if kernel == "empty0" else mode
        err = self.lib.twb_launch_loop(self.fn[kernel], stream, ptr, size, n, mode, 256, flags, self.out,
                                       stamps)
        if err:
            raise RuntimeError(f"launch loop failed: CUresult {err} ({kernel}, stream {stream}, mode {mode})")
        return self.out[0] * 1e-3, self.out[1] * 1e-3

    def median(self, *a, **kw):
        runs = [self.loop(*a, **kw) for _ in range(self.repeats + 1)][1:]  # first run: warm-up
        return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)

    def spin(self, stream, ns):
        arg = ctypes.c_int64(ns)
        err = self.lib.twb_launch_loop(self.fn["spin"], stream, ctypes.addressof(arg), 8, 1, 0, 1, 0,
                                       self.out, None)
        assert not err, err


def host_facts() -> list[str]:
    facts = [f"python {platform.python_version()}, machine {platform.machine()}"]
    try:
        cpu = next(ln for ln in open("/proc/cpuinfo") if ln.startswith("model name")).split(":", 1)[1].strip()
        facts.append(f"cpu: {cpu}, {os.cpu_count()} cores")
        cs = "/sys/devices/system/clocksource/clocksource0/current_clocksource"
        facts.append(f"clocksource: {open(cs).read().strip()}")
    except (OSError, StopIteration):
        pass
    env = {k: v for k, v in os.environ.items() if k.startswith(("CUDA_", "TILEWARP_"))}
    facts.append(f"env: {env or 'no CUDA_* variables'}")
    return facts


def stream_rows(f: Floor, streams: dict) -> list:
    rows = []
    for sname, s in streams.items():
        for mode in ("kernelParams", "extra buffer", "cuLaunchKernelEx"):
            sub, tot = f.median("tilewarp noop", s, MODES[mode])
            rows.append((f"C loop: noop, {sname}, {mode}", sub, tot))
    for kernel in ("empty0", "empty64", "empty64lb"):
        for sname in ("created blocking", "created non-blocking"):
            sub, tot = f.median(kernel, streams[sname])
            rows.append((f"C loop: {kernel}, {sname}", sub, tot))
    return rows


def queue_rows(f: Floor, stream: int, sname: str) -> list:
    """Submission while the GPU is busy (a 100 ms spin kernel): where the host starts to block, and
    how fast the GPU then drains queued launches (events around them)."""
    b = f.b
    rows = []
    for n in (100, 1000, 2000, 10000):
        sub, tot = f.median("tilewarp noop", stream, n=n)
        rows.append((f"C loop: noop, {sname}, n={n}", sub, tot))
    e0, e1 = b.create_event(enable_timing=True), b.create_event(enable_timing=True)
    n, first_block = 5000, None
    for attempt in range(3):  # later passes: fewer launches than the queue holds, so the GPU alone drains
        stamps = (ctypes.c_double * n)()
        b.synchronize()
        f.spin(stream, 100_000_000)
        b.record_event(e0, stream)
        f.loop("tilewarp noop", stream, n=n, flags=0, stamps=stamps)
        b.record_event(e1, stream)
        b.synchronize()
        gaps = [stamps[i] - (stamps[i - 1] if i else 0.0) for i in range(n)]
        blocked = next((i for i, g in enumerate(gaps) if g > 50_000), None)  # > 50 us: waited for the GPU
        if attempt == 0:
            first_block = blocked
            free = stamps[(blocked or n) - 1] / (blocked or n) * 1e-3
        if blocked is None:
            break
        n = max(blocked - 16, 16)
    # a pass in which the host still blocked timed the host, not the GPU: no number
    gpu_us = b.event_elapsed_ms(e0, e1) * 1e3 / n if blocked is None else float("nan")
    rows.append((f"queued behind a busy GPU ({sname}): host per launch before the queue filled", free, None))
    rows.append((f"  queue full after {first_block or 'more than 5000'} launches; "
                 f"GPU drain per queued launch (n={n})", gpu_us, None))
    for ev in (e0, e1):
        b.destroy_event(ev)
    return rows


def run(dev, noop_fn: int, noop_args) -> tuple[list, list[str]]:
    f = Floor(dev, noop_fn, noop_args)
    b = f.b
    streams = {"created blocking": b.default_stream, "created non-blocking": b.create_stream(blocking=False),
               "legacy NULL": 0, "per-thread default": PER_THREAD}
    rows = stream_rows(f, streams)
    for sname in ("created blocking", "created non-blocking", "legacy NULL"):
        rows += queue_rows(f, streams[sname], sname)
    ev = b.create_event()
    f.lib.twb_event_loop(ev, streams["created blocking"], 2000, f.out)
    rows.append(("C loop: cuEventRecord (a submission, no kernel)", f.out[0] * 1e-3, None))
    b.destroy_event(ev)
    f.lib.twb_ctx_loop(100000, f.out)
    rows.append(("C loop: cuCtxGetCurrent (tw_cuda_submit's context check)", f.out[0] * 1e-3, None))
    cap = b.create_stream()
    b.begin_capture(cap)
    sub, _ = f.loop("tilewarp noop", cap, n=2000, flags=0)
    b.destroy_graph(graph=b.end_capture(cap))
    rows.append(("C loop: noop into a capturing stream (no submission)", sub, None))
    f.lib.twb_host_costs(100000, f.out)
    facts = host_facts() + [f"clock_gettime {f.out[0]:.0f} ns, getppid syscall {f.out[1]:.0f} ns"]
    return rows, facts
