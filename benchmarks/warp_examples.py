"""Warp's own example programs, run unchanged but for the import: do they run under tilewarp?

    python -m benchmarks.warp_examples [--device cpu] [--only dem,sph] [--frames 3] [--module tilewarp]
                                       [--timeout 300] [--json out.json]

Each script of the installed warp-lang's ``warp/examples/<group>/example_*.py`` is copied with
``import warp`` / ``warp.`` spelled ``tilewarp`` (``--module warp`` runs the originals for a
baseline), then run in its own process with ``--device``, ``--num-frames``, no USD stage and no
viewer. Prints one line per example (ok / failed with the last line of its error, and the time) and
a total. The scripts read their data from ``wp.examples.get_asset_directory()``.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the programs issue 28 asks for (geometry), then the rest of Warp's core/optim/tile/geometry groups
GEOMETRY = ["core/example_dem", "core/example_sph", "optim/example_particle_repulsion", "core/example_mesh",
            "core/example_mesh_intersect", "core/example_raycast", "core/example_sample_mesh", "core/example_nvdb",
            "optim/example_diffray", "tile/example_tile_mcgp", "geometry/example_isosurface",
            "geometry/example_sparse_marching_cubes", "geometry/example_swept_volume"]


#: arguments that keep an example short (the defaults of some run for minutes on a CPU)
EXTRA = {"tile/example_tile_mcgp": ["--slices", "2", "--height", "64"]}


def warp_examples_dir() -> Path:
    """$WARP_EXAMPLES_DIR (a copy of warp-lang's examples, e.g. on a machine without warp-lang), else the
    installed warp-lang's."""
    env = os.environ.get("WARP_EXAMPLES_DIR")
    if env:
        return Path(env)
    return Path(importlib.metadata.distribution("warp-lang").locate_file("warp/examples"))


def all_examples() -> list[str]:
    root = warp_examples_dir()
    found = sorted(str(p.relative_to(root).with_suffix("")) for p in root.glob("*/example_*.py"))
    return GEOMETRY + [name for name in found if name not in GEOMETRY]


def _translate(text: str, module: str) -> str:
    if module == "warp":
        return text
    text = re.sub(r"^(\s*)import warp as wp\b", rf"\1import {module} as wp", text, flags=re.M)
    text = re.sub(r"^(\s*)import warp\.(\w+)", rf"\1import {module}.\2", text, flags=re.M)
    text = re.sub(r"^(\s*)from warp(\.\w+)* import", lambda m: m.group(0).replace("warp", module, 1), text, flags=re.M)
    return re.sub(r"\bwarp\.(\w)", rf"{module}.\1", text)


def run_one(name: str, module: str, device: str, frames: int, timeout: float, folder: Path) -> dict:
    src = warp_examples_dir() / f"{name}.py"
    dst = folder / (name.replace("/", "_") + ".py")
    dst.write_text(_translate(src.read_text(), module))
    cmd = [sys.executable, str(dst), "--device", device, "--num-frames", str(frames), "--stage-path", "None",
           "--headless", "--viewer", "null", *EXTRA.get(name, [])]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=timeout, env=env)
        ok, log = proc.returncode == 0, proc.stderr + proc.stdout
    except subprocess.TimeoutExpired as e:
        ok, log = False, f"timeout after {timeout:.0f} s\n{(e.stderr or b'')[-2000:]!r}"
    if not ok and "unrecognized arguments" in log:  # a script without some of the common flags
        cmd = [c for c in cmd if c not in ("--headless", "--viewer", "null")]
        proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=timeout, env=env)
        ok, log = proc.returncode == 0, proc.stderr + proc.stdout
    errors = [line for line in log.splitlines() if re.match(r"^\w*(Error|Exception)\b|^\w+\.\w+Error", line)]
    reason = errors[-1] if errors else (log.strip().splitlines() or [""])[-1]
    return {"name": name, "ok": ok, "seconds": round(time.perf_counter() - start, 1),
            "error": "" if ok else reason[:300]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--module", default="tilewarp")
    ap.add_argument("--only", default="", help="comma-separated substrings of example names")
    ap.add_argument("--geometry", action="store_true", help="only the geometry programs")
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    names = GEOMETRY if args.geometry else all_examples()
    if args.only:
        keys = args.only.split(",")
        names = [n for n in names if any(k in n for k in keys)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            r = run_one(name, args.module, args.device, args.frames, args.timeout, Path(tmp))
            results.append(r)
            print(f"{'ok    ' if r['ok'] else 'FAILED'} {name:45s} {r['seconds']:7.1f} s  {r['error']}", flush=True)
    passed = sum(r["ok"] for r in results)
    print(f"TOTAL: {passed} of {len(results)} ran ({args.module}, {args.device}, {args.frames} frames)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
