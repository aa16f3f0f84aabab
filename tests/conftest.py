"""Shared test setup: kernel caches, the ``device`` fixture, CUDA codegen checks, Warp differential runs.

* Kernel caches: tilewarp's in ``$TILEWARP_CACHE_DIR`` (default ``<repo>/.cache/kernels``), Warp's in
  a directory under the system temp dir, so neither touches ``~/.cache``.
* ``device``: ``"cpu"`` always, ``"cuda:0"`` when a GPU is present (``TILEWARP_TEST_DEVICES``
  overrides, e.g. ``TILEWARP_TEST_DEVICES=cpu,cuda:0``); CUDA params carry ``pytest.mark.cuda``.
* Every kernel a test builds is also compiled to a CUBIN for sm_90 through NVRTC (no GPU needed),
  in a worker process beside the tests, so CI proves the CUDA code generated for every test kernel
  compiles (a failure fails the session at its end, naming kernel and test).
* ``load_both(text)`` imports one kernel source text twice, under ``import tilewarp as wp`` and
  ``import warp as wp``; ``launch_both`` runs a kernel of each on the same inputs and compares.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("TILEWARP_CACHE_DIR", str(REPO / ".cache" / "kernels"))
os.environ.setdefault("TILEWARP_TUNE", "0")  # block programs take rule-of-thumb meta values (test_block_tuning.py tunes)

import tilewarp  # noqa: E402
import tilewarp.compile  # noqa: E402
import tilewarp.compile.cache  # noqa: E402
import tilewarp.compile.options  # noqa: E402
import tilewarp.api.pipeline  # noqa: E402

tilewarp.config.quiet = True

WARP_CACHE = Path(tempfile.gettempdir()) / "tilewarp-tests" / "warp-kernels"
LOAD_DIR = Path(tempfile.gettempdir()) / "tilewarp-tests" / "modules"

try:
    import warp

    warp.config.quiet = True  # Warp < 1.19; newer versions read log_level
    warp.config.log_level = getattr(warp, "LOG_WARNING", 30)
    warp.config.kernel_cache_dir = str(WARP_CACHE)
except ImportError:  # the differential tests skip themselves without the oracle
    warp = None


# ---- devices ----------------------------------------------------------------------------------


def _test_devices() -> list:
    env = os.environ.get("TILEWARP_TEST_DEVICES")
    if env:
        return [d.strip() for d in env.split(",") if d.strip()]
    try:
        has_cuda = tilewarp.get_cuda_device_count() > 0
    except Exception:  # no driver at all
        has_cuda = False
    return ["cpu", "cuda:0"] if has_cuda else ["cpu"]


def _device_params():
    return [pytest.param(d, id=d, marks=[pytest.mark.cuda] if d.startswith("cuda") else [])
            for d in _test_devices()]


@pytest.fixture(params=_device_params())
def device(request):
    """A tilewarp device alias to run kernels on."""
    return request.param


# ---- every test kernel also compiles for CUDA -----------------------------------------------------

CUDA_CHECK_ARCH = 90


def nvrtc_check(source: str, name: str, cache_dir: str):
    """Compile ``source`` to an sm_90 CUBIN into ``cache_dir`` (in the worker process): None, or
    what went wrong."""
    os.environ["TILEWARP_CACHE_DIR"] = cache_dir
    tilewarp.config.kernel_cache_dir = None
    try:
        tilewarp.compile.compile_cached(source, name, tilewarp.compile.options.Options("cuda", CUDA_CHECK_ARCH))
    except Exception as e:  # returned as text: the worker's exceptions need not unpickle here
        return f"{type(e).__name__}: {e}\n{getattr(e, 'log', '') or ''}"
    return None


class _CudaChecks:
    """NVRTC compiles of every kernel the tests build, in one worker process beside the tests (NVRTC
    is most of a cold run's compile time, and the host compiler and the tests need the other core):
    each kernel once, into the session's kernel cache; the session fails at its end, naming kernel
    and test, if one does not compile."""

    def __init__(self):
        self.pool, self.pending, self.seen = None, [], set()
        self.cache_dir = str(tilewarp.compile.cache.cache_dir())

    def submit(self, source: str, name: str, test: str) -> None:
        digest = hashlib.sha256(source.encode()).hexdigest()
        if digest in self.seen:
            return
        self.seen.add(digest)
        if self.pool is None:
            import concurrent.futures
            import multiprocessing

            self.pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        self.pending.append((test, name, self.pool.submit(nvrtc_check, source, name, self.cache_dir)))

    def failures(self) -> list:
        out = [(test, name, future.result()) for test, name, future in self.pending]
        if self.pool is not None:
            self.pool.shutdown()
        return [f for f in out if f[2]]


_cuda_checks = _CudaChecks()


def pytest_sessionfinish(session, exitstatus):
    failures = _cuda_checks.failures()
    report = session.config.pluginmanager.get_plugin("terminalreporter")
    if report is not None and _cuda_checks.pending:
        report.write("\n")
        report.write_line(f"CUDA codegen check: {len(_cuda_checks.pending)} kernel sources checked for "
                          f"sm_{CUDA_CHECK_ARCH} with NVRTC, {len(failures)} failed")
    if failures:
        report.write_sep("=", f"{len(failures)} kernel(s) failed the CUDA codegen check", red=True)
        for test, name, error in failures:
            report.write_line(f"CUDA codegen check (NVRTC, sm_{CUDA_CHECK_ARCH}) failed for kernel {name}, "
                              f"built by {test}:\n{error}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _also_compile_for_cuda(monkeypatch, request):
    """After each CPU build (forward and backward kernels: Tape, launch(adjoint=True)), queue the same
    source for an sm_90 CUBIN (``_CudaChecks``)."""
    for what, suffix in (("build", ""), ("build_backward", ".backward")):
        original = getattr(tilewarp.api.pipeline, what)

        def build(kernel, device, *rest, original=original, suffix=suffix):
            compiled = original(kernel, device, *rest)
            if getattr(device, "kind", None) != "cuda" or getattr(device, "arch", None) != CUDA_CHECK_ARCH:
                _cuda_checks.submit(compiled.source, kernel.key + suffix, request.node.nodeid)
            return compiled

        monkeypatch.setattr(tilewarp.api.pipeline, what, build)


# ---- one kernel text, two libraries ---------------------------------------------------------------

_BACKENDS = {"tilewarp": "import tilewarp as wp", "warp": "import warp as wp"}
_loaded: dict = {}


def load_module(text: str, backend: str):
    """Import ``text`` (which starts with ``import WP as wp``) as a real file with ``backend`` as wp."""
    if "import WP as wp" not in text:
        raise ValueError("kernel text must contain the line 'import WP as wp'")
    body = text.replace("import WP as wp", _BACKENDS[backend], 1)
    digest = hashlib.sha256(body.encode()).hexdigest()[:16]
    name = f"tw_{backend}_{digest}"  # content-named: Warp's module cache hits on reruns
    if name in _loaded:
        return _loaded[name]
    LOAD_DIR.mkdir(parents=True, exist_ok=True)
    path = LOAD_DIR / f"{name}.py"
    if not path.exists() or path.read_text() != body:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(body)
        tmp.replace(path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _loaded[name] = module
    return module


def load_both(text: str):
    """``(tilewarp_module, warp_module)`` from one kernel text using the placeholder ``import WP as wp``;
    the Warp module is None when warp-lang is not installed (``launch_both`` then skips CPU runs)."""
    return load_module(text, "tilewarp"), load_module(text, "warp") if warp is not None else None


def need_warp(mods):
    if mods[1] is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")


def reference(mods, device: str):
    """``(module, device)`` to compare a tilewarp run on ``device`` with: Warp on CPU, or without
    warp-lang tilewarp's own CPU run when ``device`` is a GPU."""
    if mods[1] is not None:
        return mods[1], "cpu"
    if device.startswith("cuda"):
        return mods[0], "cpu"
    need_warp(mods)


@dataclass
class Arr:
    """An array argument: numpy data and the dtype's name on ``wp`` (``"vec3"``, ``"float16"``...)."""

    data: np.ndarray
    dtype: str | None = None


@dataclass
class Val:
    """A typed scalar/vector/matrix argument: ``Val("vec3", (1, 2, 3))`` -> ``wp.vec3(1, 2, 3)``."""

    dtype: str
    value: object


def _to_lib(wp, arg, device):
    if isinstance(arg, Arr):
        dtype = getattr(wp, arg.dtype) if arg.dtype else None
        if dtype is None:
            return wp.array(arg.data, device=device)
        return wp.array(arg.data, dtype=dtype, device=device)
    if isinstance(arg, Val):
        t = getattr(wp, arg.dtype)
        v = arg.value
        return t(*v) if isinstance(v, (tuple, list)) else t(v)
    return arg


def run(mod, kernel: str, dim, args, device: str) -> list:
    """Launch ``mod.<kernel>`` over ``dim`` with ``args``; the numpy contents of every array afterwards."""
    wp = mod.wp
    values = [_to_lib(wp, a, device) for a in args]
    wp.launch(getattr(mod, kernel), dim=dim, inputs=values, device=device)
    wp.synchronize()
    return [v.numpy() for v in values if isinstance(v, wp.array)]


def assert_same(got, want, rtol=1e-6, atol=1e-6, what="array"):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        tol = {2: (1e-3, 1e-3), 4: (rtol, atol), 8: (1e-12, 1e-12)}[want.dtype.itemsize]
        np.testing.assert_allclose(got, want, rtol=tol[0], atol=tol[1], err_msg=what, equal_nan=True)


def launch_both(mods, kernel: str, dim, args, device: str = "cpu", rtol=1e-6, atol=1e-6) -> list:
    """Run ``kernel`` in tilewarp (on ``device``) and Warp (on CPU) with the same inputs; compare every
    array afterwards and return tilewarp's results. On a CUDA device tilewarp's own CPU results are a
    second reference, so GPU machines without warp-lang still check the CUDA path."""
    tw_mod, warp_mod = mods
    if warp_mod is None and not device.startswith("cuda"):
        need_warp(mods)
    got = run(tw_mod, kernel, dim, args, device)
    references = []
    if warp_mod is not None:
        references.append(("warp cpu", lambda: run(warp_mod, kernel, dim, args, "cpu")))
    if device.startswith("cuda"):
        references.append(("tilewarp cpu", lambda: run(tw_mod, kernel, dim, args, "cpu")))
    for name, reference in references:
        want = reference()
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, rtol, atol, what=f"{kernel}: array argument #{k} vs {name}")
    return got


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ---- located errors --------------------------------------------------------------------------------

ERROR_MARK = "# <- error"


def check_located(kernel, cls, *fragments, inputs=()):
    """Launching ``kernel`` raises ``cls`` located at its source line marked ``# <- error``: the
    message names the test file and line, shows that line, and contains every fragment."""
    import inspect

    from tilewarp import KernelError

    lines, first = inspect.getsourcelines(kernel)
    path = os.path.abspath(inspect.getsourcefile(kernel.fn))
    (line, text), = [(first + k, t.split(ERROR_MARK)[0].strip()) for k, t in enumerate(lines) if ERROR_MARK in t]
    with pytest.raises(cls) as info:
        tilewarp.launch(kernel, dim=1, inputs=list(inputs), device="cpu")
    msg = str(info.value)
    assert f"{path}:{line}:" in msg and text in msg, msg
    assert isinstance(info.value, KernelError) and info.value.loc.line == line
    assert "tilewarp/" not in msg.split("\n")[0]  # the user's file, not ours
    for fragment in fragments:
        assert fragment in msg, msg
