"""The on-disk kernel cache: content-hashed keys, atomic stores, checksummed loads.

A key covers everything that changes the binary (DESIGN decision 10), never Python's ``hash()``.
Each entry is ``<key><suffix>`` plus ``<key>.json`` with the binary's size and SHA-256: a loader
checks it before handing the file to dlopen/cuModuleLoadData, so a truncated or corrupted entry
is rebuilt with a warning instead of crashing the process.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path

from .paths import NATIVE_DIR


def cache_dir() -> Path:
    from .. import config

    d = config.kernel_cache_dir or os.environ.get("TILEWARP_CACHE_DIR") or Path.home() / ".cache" / "tilewarp"
    d = Path(d)
    d.mkdir(parents=True, exist_ok=True)
    return d


@functools.lru_cache(maxsize=None)
def native_hash() -> str:
    """Hash of every native header/source, so editing native/ invalidates every entry."""
    h = hashlib.sha256()
    for p in sorted(NATIVE_DIR.rglob("*")):
        if p.is_file() and p.suffix in (".h", ".cpp", ".cu"):
            h.update(str(p.relative_to(NATIVE_DIR)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def make_key(*parts: str) -> str:
    from .. import __version__

    h = hashlib.sha256()
    for part in (__version__, native_hash(), *parts):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file, or the new one, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _meta(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}.json"


def _entry_file(key: str, info) -> str | None:
    """The binary's file name from an index, or None when the index is not one this module wrote
    (a damaged index must never point the cache at some other file)."""
    if not isinstance(info, dict):
        return None
    name = info.get("file")
    if not isinstance(name, str) or not name.startswith(key) or Path(name).name != name:
        return None
    return name


def lookup(key: str) -> Path | None:
    """The cached binary for ``key`` if present and intact; a damaged entry is removed with a warning."""
    meta = _meta(key)
    try:
        info = json.loads(meta.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        info = None
    name = _entry_file(key, info)
    path = meta.parent / name if name else None
    ok = False
    if path is not None:
        try:
            data = path.read_bytes()
            ok = len(data) == info["size"] and hashlib.sha256(data).hexdigest() == info["sha256"]
        except (OSError, KeyError, TypeError):
            ok = False
    if not ok:
        warnings.warn(f"tilewarp: kernel cache entry {meta} is damaged; rebuilding it", RuntimeWarning,
                      stacklevel=3)
        if path is not None:
            path.unlink(missing_ok=True)
        meta.unlink(missing_ok=True)
        return None
    return path


@contextlib.contextmanager
def building(key: str):
    """Hold the build lock of ``key``: processes (and threads) building one entry take turns, so the
    second finds the first one's entry instead of compiling again. Advisory ``flock``; where that is
    unavailable, builders just race (each writes complete files, so that is still safe)."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    lock = cache_dir() / key[:2] / f"{key}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+b") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        except OSError:  # a file system without locks
            pass
        try:
            yield
        finally:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            except OSError:
                pass


def store(key: str, suffix: str, data: bytes) -> Path:
    """Store a binary under a name derived from its own checksum, then publish it through
    ``<key>.json``. Concurrent writers each write a complete file; the last index rename wins."""
    digest = hashlib.sha256(data).hexdigest()
    path = cache_dir() / key[:2] / f"{key}-{digest[:12]}{suffix}"
    atomic_write(path, data)
    atomic_write(_meta(key), json.dumps({"file": path.name, "size": len(data), "sha256": digest}).encode())
    return path


def source_dir(key: str) -> Path:
    """Where the generated source of an entry is kept (error messages and TILEWARP_DUMP point here)."""
    d = cache_dir() / key[:2]
    d.mkdir(parents=True, exist_ok=True)
    return d


def clear() -> None:
    """Remove every cached kernel (``wp.clear_kernel_cache()``)."""
    import shutil

    d = cache_dir()
    for child in d.iterdir():
        if child.is_dir() and len(child.name) == 2:
            shutil.rmtree(child, ignore_errors=True)
