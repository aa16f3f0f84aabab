"""Emitted C++ -> a cached binary for one target (host .so or CUDA CUBIN)."""
from __future__ import annotations

import time
from pathlib import Path

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

    return nvrtc.compile_cubin(source, name, options.arch, defines={}, debug=options.debug,
                               fast_math=options.fast_math, source_dir=str(work))


def _cpu_identity(options: Options) -> str:
    from . import host

    return host.target_identity()


def _cuda_identity(options: Options) -> str:
    from . import nvrtc

    return f"nvrtc {nvrtc.nvrtc_version()} sm_{options.arch}"


#: target -> (build function, target identity for the key, binary suffix)
TOOLCHAINS = {"cpu": (_build_cpu, _cpu_identity, ".so"), "cuda": (_build_cuda, _cuda_identity, ".cubin")}


def compile_cached(source: str, name: str, options: Options, log=None) -> Path:
    """The binary for ``source``: from the cache when an intact entry exists, else built and stored.

    Builders of one entry take turns (``cache.building``), so when several processes start on a cold
    cache one compiles and the others load its result.
    """
    build, identity, suffix = TOOLCHAINS[options.target]
    key = cache.make_key(source, options.key(), identity(options))
    t0 = time.perf_counter()
    path = cache.lookup(key)
    if path is None:
        with cache.building(key):
            path = cache.lookup(key)  # another process may have built it while we waited
            if path is None:
                work = cache.source_dir(key)
                data = build(source, f"{name}_{key[:12]}", options, work)
                path = cache.store(key, suffix, data)
                if log:
                    log(f"{name} ({options.target}) compiled in {time.perf_counter() - t0:.2f} s")
                return path
    if log:
        log(f"{name} ({options.target}) loaded from cache in {(time.perf_counter() - t0) * 1e3:.1f} ms")
    return path
