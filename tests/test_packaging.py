"""A non-editable install works: the wheel carries every package and the C++ headers and runtime
sources (native/, as tilewarp/native), and, installed by pip into a fresh virtual environment, a
kernel compiles and runs from the installed copy, its first launch on the native path."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[1]


def _listed_packages() -> set:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return set(tomllib.load(f)["tool"]["setuptools"]["packages"])


def test_every_package_and_native_folder_is_listed():
    python = {".".join(p.relative_to(ROOT).parts) for p in (ROOT / "tilewarp").rglob("*")
              if p.is_dir() and any(p.glob("*.py")) and "__pycache__" not in p.parts}
    native = {"tilewarp." + ".".join(p.relative_to(ROOT).parts) for p in (ROOT / "native").rglob("*") if p.is_dir()}
    missing = (python | native | {"tilewarp.native"}) - _listed_packages()
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


SCRIPT = r'''
import numpy as np, tilewarp as wp, tilewarp.compile.paths as paths
from tilewarp.runtime import cpu, native_launch
assert tilewarp_dir in wp.__file__ and tilewarp_dir in str(paths.NATIVE_DIR), (wp.__file__, paths.NATIVE_DIR)

@wp.kernel
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s

@wp.kernel
def sum_sq(a: wp.array(dtype=float), loss: wp.array(dtype=float)):
    wp.atomic_add(loss, 0, a[wp.tid()] * a[wp.tid()])

x = np.random.default_rng(0).random(300, dtype=np.float32)
a = wp.array(x, device="cpu", requires_grad=True)
wp.launch(scale, 300, inputs=[a, 3.0], device="cpu")
assert np.allclose(a.numpy(), 3 * x)
# the libraries pip built: the native launch path from the first launch, the CPU runtime
assert native_launch.fast is not None and tilewarp_dir in native_launch._ext.__file__, native_launch._ext
assert tilewarp_dir in cpu.runtime_library()._name, cpu.runtime_library()._name
wp.launch(scale, 300, inputs=[a, 1.0], device="cpu")
assert scale._tw_fast, "the second launch went native"
loss = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)
with wp.Tape() as tape:
    wp.launch(sum_sq, 300, inputs=[a], outputs=[loss], device="cpu")
tape.backward(loss)
assert np.allclose(a.grad.numpy(), 6 * x, rtol=1e-5)
print("ok", paths.NATIVE_DIR)
'''


@pytest.mark.slow
def test_a_built_wheel_installs_and_runs(tmp_path):
    wheels, src = tmp_path / "wheels", tmp_path / "src"
    for part in ("tilewarp", "native"):  # a clean copy: setuptools reuses a build/ folder in the tree
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__", "_native"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(src)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next(wheels.glob("tilewarp-*.whl"))
    # a real virtual environment, the wheel installed into it by its own pip; the dependencies come
    # from this interpreter's site-packages (a .pth line, appended after the venv's own, so the
    # installed tilewarp - not a development copy - is the one imported)
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    parents = [p for p in sys.path if p and Path(p).is_dir() and Path(p).resolve() != ROOT
               and not (Path(p) / "tilewarp").exists()]  # dependencies, never a development copy
    (Path(site) / "parent_env.pth").write_text("\n".join(parents) + "\n")
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    target = Path(site)
    assert (target / "tilewarp" / "native" / "tilewarp.h").is_file()
    assert (target / "tilewarp" / "native" / "runtime" / "thread_pool.cpp").is_file()
    built = sorted(p.name.split(".")[0] for p in (target / "tilewarp").glob("_*.so"))
    assert built == ["_libtilewarp_cpu", "_libtilewarp_cuda", "_tw_launch"], built  # compiled by pip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TILEWARP_CACHE_DIR"] = str(tmp_path / "cache")
    script = tmp_path / "use_installed.py"  # kernels need a source file
    script.write_text(f"tilewarp_dir = {str(target / 'tilewarp')!r}\n" + SCRIPT)
    run = subprocess.run([str(python), str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "ok" in run.stdout
