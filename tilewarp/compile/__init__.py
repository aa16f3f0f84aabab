"""Emitted C++ -> a cached binary for one target (host .so or CUDA CUBIN)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from .. import config
from ..errors import warn_user
from ..language.names import MATHDX_MARK
from . import cache
from .options import Options


def _build_cpu(source: str, name: str, options: Options, work: Path) -> bytes:
    from . import host

    out = work / f"{name}.so"
    host.compile_shared(source, out, include_dirs=[str(cache.NATIVE_DIR)], debug=options.debug,
                        fast_math=options.fast_math, pch_dir=cache.cache_dir() / "pch")
    data = out.read_bytes()
    out.unlink(missing_ok=True)  # the cache stores its own checksummed copy
    return data


def _build_cuda(source: str, name: str, options: Options, work: Path) -> bytes:
    from . import nvrtc

    mathdx = MATHDX_MARK in source  # tile_matmul through cuBLASDx (native/tile/dx.h)
    return nvrtc.compile_cubin(source, name, options.arch, defines={"TW_DX_SM": options.arch * 10} if mathdx else {},
                               debug=options.debug, fast_math=options.fast_math, source_dir=str(work),
                               extra_options=nvrtc.mathdx_options() if mathdx else ())


def _cpu_identity(options: Options) -> str:
    from . import host

    return host.target_identity()


def _cuda_identity(options: Options) -> str:
    from . import nvrtc

    return f"nvrtc {nvrtc.nvrtc_version()} sm_{options.arch}"


#: target -> (build function, target identity for the key, binary suffix)
TOOLCHAINS = {"cpu": (_build_cpu, _cpu_identity, ".so"), "cuda": (_build_cuda, _cuda_identity, ".cubin")}


def _compile(source: str, name: str, options: Options) -> tuple[str, Path, bool]:
    """(key, binary, whether this call built it): from the cache when an intact entry exists, else
    built and stored. Builders of one entry take turns (``cache.building``), so when several
    processes start on a cold cache one compiles and the others load its result."""
    build, identity, suffix = TOOLCHAINS[options.target]
    key = cache.make_key(source, options.key(), identity(options))
    path = cache.lookup(key)
    if path is not None:
        return key, path, False
    with cache.building(key, f"kernel {name} ({options.target})"):
        path = cache.lookup(key)  # another process may have built it while we waited
        if path is not None:
            return key, path, False
        # worded like a load line (Warp's output checks let "Module ... load on device" lines through)
        with _progress(f"Module {name} load on device '{options.target}{_arch(options)}': still compiling ..."):
            data = build(source, f"{name}_{key[:12]}", options, cache.source_dir(key))
        return key, cache.store(key, suffix, data), True


#: a compile still running after this many seconds says so (cuBLASDx instances take 10-20 s)
PROGRESS_AFTER = 2.0
_ahead = threading.local()  # .on in threads that compile ahead of need (compile_ahead)


def compile_ahead(source: str, name: str, options: Options) -> None:
    """Build ``source``'s cache entry for a binary nobody waits for yet (a background thread's
    work): silently (a progress line would name a kernel the user did not ask for), and a failure is
    left for the build that needs it, which reports it."""
    _ahead.on = True
    try:
        _compile(source, name, options)
    except Exception:  # noqa: BLE001 - see the docstring
        pass


class _progress:
    """Prints ``message`` once if the block is still running after ``PROGRESS_AFTER`` seconds, so a
    long compile does not look like a hang (nothing when ``wp.config.quiet``)."""

    def __init__(self, message: str):
        if getattr(_ahead, "on", False):
            message = None
        self.timer = threading.Timer(PROGRESS_AFTER, self._say, (message,))
        self.timer.daemon = True

    @staticmethod
    def _say(message):
        if message and not config.quiet:
            print(message, flush=True)

    def __enter__(self):
        self.timer.start()

    def __exit__(self, *exc):
        self.timer.cancel()


def _arch(options: Options) -> str:
    return f" sm_{options.arch}" if options.target == "cuda" else ""


def _log(log, name: str, options: Options, built: bool, t0: float) -> None:
    """``log(name, built, seconds)``: the caller words it (``api.pipeline.log_load``)."""
    if log:
        log(name, built, time.perf_counter() - t0)


def compile_cached(source: str, name: str, options: Options, log=None) -> Path:
    """The binary for ``source``: from the cache when an intact entry exists, else built and stored."""
    t0 = time.perf_counter()
    _, path, built = _compile(source, name, options)
    _log(log, name, options, built, t0)
    return path


def load_cached(source: str, name: str, options: Options, load, log=None):
    """``load(binary)`` (a backend's ``load_module``) of ``compile_cached``'s binary. A cached binary
    that passes its checksum but will not load (dlopen's OSError: a file replaced together with its
    index) is a damaged entry: removed with a warning, rebuilt and loaded."""
    t0 = time.perf_counter()
    key, path, built = _compile(source, name, options)
    try:
        module = load(path)
    except OSError as e:
        if built:
            raise
        warn_user(f"tilewarp: kernel cache entry {path} could not be loaded ({e}); rebuilding it")
        cache.discard(key, path)
        key, path, built = _compile(source, name, options)
        module = load(path)
    _log(log, name, options, built, t0)
    return module
