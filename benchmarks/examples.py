"""The examples gallery timed under tilewarp and under warp-lang: the same scripts, one import changed.

    python -m benchmarks.examples [--device cuda:0] [--modules tilewarp,warp] [--frames 20] [--only a,b]
                                  [--warp-examples]

--warp-examples times Warp's own example programs instead (``WARP_EXAMPLES``, from the installed
warp-lang or $WARP_EXAMPLES_DIR), each translated to the library as benchmarks/warp_examples.py does:
those with an ``Example`` class by its ``step()`` as above (constructed with its defaults, no stage,
headless), the scripts without one by the wall time of a whole second run (the kernel cache then
warm: Python's start and imports included).

Each library runs in its own process on a copy of ``examples/`` whose ``import tilewarp as wp``
names that library. Per example: the first frame (kernel builds included: a fresh kernel cache per
process for tilewarp, Warp's own cache as it is) and the median time of a frame after it, with the
device synchronised around each frame. Prints one table with the ratio warp / tilewarp.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NAMES = ["wave_2d", "stable_fluids", "cloth_sphere", "dem_particles", "sph_fluid", "diff_ball", "tile_nbody",
         "tile_mlp", "tile_ropes", "tile_poisson", "mesh_collision"]


def _copy_examples(module: str, into: Path) -> None:
    for src in EXAMPLES.glob("*.py"):
        text = src.read_text()
        (into / src.name).write_text(re.sub(r"^import tilewarp as wp$", f"import {module} as wp", text, flags=re.M))


def _time_example(name: str, prepare, device: str, frames: int) -> None:
    """Prints one JSON line: ``prepare()`` imports an example and gives (its constructor, its wp); then
    the first ``step()`` (construction and kernel builds included) and the median step after it, the
    device synchronised around each; or the error."""
    try:
        make, wp = prepare()
        t0 = time.perf_counter()
        ex = make()
        ex.step()
        wp.synchronize_device(device)
        first = time.perf_counter() - t0
        times = []
        for _ in range(frames):
            t0 = time.perf_counter()
            ex.step()
            wp.synchronize_device(device)
            times.append(time.perf_counter() - t0)
        print(json.dumps({"name": name, "first_s": first, "frame_ms": statistics.median(times) * 1e3}), flush=True)
    except Exception as e:  # noqa: BLE001 - one example failing must not hide the others' numbers
        print(json.dumps({"name": name, "error": f"{type(e).__name__}: {str(e)[:200]}"}), flush=True)


def _child(names: list[str], device: str, frames: int) -> None:
    """Runs in the copied folder: times each example, prints one JSON line per example."""
    import importlib

    import numpy as np  # noqa: F401  (the examples' own dependency, imported before timing)

    sys.path.insert(0, os.getcwd())
    for name in names:
        def prepare(name=name):
            mod = importlib.import_module(name)
            return (lambda: mod.Example(device=device)), mod.wp
        _time_example(name, prepare, device, frames)


#: Warp's own programs issue 29 times side by side (those that run under both libraries)
WARP_EXAMPLES = ["core/example_wave", "core/example_fdtd_3d", "core/example_fft_poisson_navier_stokes_2d",
                 "core/example_dem", "core/example_sph", "tile/example_tile_nbody", "tile/example_tile_matmul",
                 "tile/example_tile_cholesky", "tile/example_tile_fft", "tile/example_tile_filtering",
                 "tile/example_tile_convolution"]
#: constructor arguments for Warp's Example classes (the rest keep their defaults)
_WARP_ARGS = {"stage_path": None, "headless": True, "verbose": False}


def _warp_child(names: list[str], module: str, device: str, frames: int) -> None:
    """Runs in the folder of translated scripts: one JSON line per example with an Example class."""
    import importlib
    import inspect

    sys.path.insert(0, os.getcwd())
    for name in names:
        def prepare(name=name):
            mod = importlib.import_module(name.replace("/", "_"))
            mod.wp.set_device(device)  # Warp's programs use the default device
            params = inspect.signature(mod.Example).parameters
            return (lambda: mod.Example(**{k: v for k, v in _WARP_ARGS.items() if k in params})), mod.wp
        _time_example(name, prepare, device, frames)


def run_warp_examples(module: str, names, device: str, frames: int, timeout: float) -> dict:
    """Warp's programs under ``module``: {name: result} (``frame_ms``: a step, or a warm whole run)."""
    from .warp_examples import _translate, warp_examples_dir

    rows = {}
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ)
        if module == "tilewarp":
            env["TILEWARP_CACHE_DIR"] = os.path.join(d, "cache")
        repo = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH", "")) if p)
        classes, scripts = [], []
        for name in names:
            text = (warp_examples_dir() / f"{name}.py").read_text()
            (Path(d) / (name.replace("/", "_") + ".py")).write_text(_translate(text, module))
            (classes if re.search(r"^class Example\b", text, flags=re.M) else scripts).append(name)
        if classes:
            code = f"from benchmarks.examples import _warp_child; _warp_child({classes!r}, {module!r}, {device!r}, {frames})"
            try:
                out = subprocess.run([sys.executable, "-c", code], cwd=d, env=env, capture_output=True, text=True,
                                     timeout=timeout).stdout
            except subprocess.TimeoutExpired as e:
                out = e.stdout if isinstance(e.stdout, str) else ""
            rows.update({r["name"]: r for r in map(json.loads, (ln for ln in out.splitlines() if ln.startswith("{")))})
        for name in scripts:
            path = str(Path(d) / (name.replace("/", "_") + ".py"))
            cmd = [sys.executable, path, "--device", device]
            try:
                t0 = time.perf_counter()
                first = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=timeout)
                t1 = time.perf_counter()
                again = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=timeout)
                t2 = time.perf_counter()
            except subprocess.TimeoutExpired:
                rows[name] = {"name": name, "error": f"timeout after {timeout:.0f} s"}
                continue
            if first.returncode or again.returncode:
                err = [ln for ln in (first.stderr + again.stderr).splitlines() if "Error" in ln]
                rows[name] = {"name": name, "error": (err[-1] if err else "failed")[:200]}
            else:  # a whole run, warm: shown in ms like a step
                rows[name] = {"name": name, "first_s": t1 - t0, "frame_ms": (t2 - t1) * 1e3}
    return rows


def run_module(module: str, names, device: str, frames: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as d:
        _copy_examples(module, Path(d))
        env = dict(os.environ)
        if module == "tilewarp":
            env["TILEWARP_CACHE_DIR"] = os.path.join(d, "cache")  # cold builds, as a first run
        repo = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH", "")) if p)
        code = ("import sys; from benchmarks.examples import _child; "
                f"_child({list(names)!r}, {device!r}, {frames})")
        try:
            out = subprocess.run([sys.executable, "-c", code], cwd=d, env=env, capture_output=True, text=True,
                                 timeout=timeout)
        except subprocess.TimeoutExpired as e:
            out = e
        rows = {}
        for line in (out.stdout or "").splitlines() if isinstance(out.stdout, str) else []:
            if line.startswith("{"):
                r = json.loads(line)
                rows[r["name"]] = r
        if not rows:
            tail = (out.stderr or "")[-800:] if isinstance(out.stderr, str) else ""
            print(f"{module}: no results\n{tail}", file=sys.stderr)
        return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--modules", default="tilewarp,warp")
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--only", default="")
    ap.add_argument("--timeout", type=float, default=400)
    ap.add_argument("--warp-examples", action="store_true", help="Warp's own example programs (WARP_EXAMPLES)")
    a = ap.parse_args(argv)
    every, run = (WARP_EXAMPLES, run_warp_examples) if a.warp_examples else (NAMES, run_module)
    names = [n for n in every if not a.only or any(k in n for k in a.only.split(","))]
    results = {m: run(m, names, a.device, a.frames, a.timeout) for m in a.modules.split(",")}
    mods = list(results)
    width = max(16, *(len(n) for n in names))
    head = f"{'example':{width}s}" + "".join(f" {m + ' frame ms':>20s} {m + ' first s':>16s}" for m in mods)
    print(head + ("   ratio" if len(mods) == 2 else ""))
    for n in names:
        line = f"{n:{width}s}"
        ms = []
        for m in mods:
            r = results[m].get(n, {})
            if "frame_ms" in r:
                line += f" {r['frame_ms']:20.3f} {r['first_s']:16.2f}"
                ms.append(r["frame_ms"])
            else:
                line += f" {r.get('error', 'no result')[:37]:>37s}"
        if len(ms) == 2:
            line += f"   {ms[1] / ms[0]:.2f}x"
        print(line)


if __name__ == "__main__":
    main()
