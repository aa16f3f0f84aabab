"""The on-disk kernel cache: content-hashed keys, atomic stores, checksummed loads.

A key covers everything that changes the binary (DESIGN decision 10), never Python's ``hash()``.
Each entry is ``<key><suffix>`` plus ``<key>.json`` with the binary's size and SHA-256: a loader
checks it before handing the file to dlopen/cuModuleLoadData, so a truncated or corrupted entry
is rebuilt with a warning instead of crashing the process.

Faults it survives: a cache folder that cannot be written (a private temporary one is used, with a
warning), a builder stopped while holding a build lock (others wait ``lock_timeout`` seconds, then
build without it) and temp files left by killed builds (swept: see ``sweep_stale``).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no build locks
    fcntl = None

from .. import config
from ..errors import TileWarpError, warn_user
from .paths import NATIVE_DIR

#: A temp file this old (seconds) is a killed build's leftover whoever wrote it: no build runs that long.
STALE_TEMP_AGE = 3600.0
#: Seconds a builder waits for another's build lock before saying what it waits for.
LOCK_NOTICE_AFTER = 2.0
#: Seconds a builder waits for the lock at most unless configured (NVRTC builds take up to ~20 s).
DEFAULT_LOCK_TIMEOUT = 60.0

_folders: dict[Path, Path] = {}  # configured cache folder -> the folder used (itself or a fallback)
_folders_lock = threading.Lock()


def _configured() -> tuple[Path, str]:
    """The cache folder asked for, and which setting asked (named in warnings)."""
    if config.kernel_cache_dir:
        return Path(config.kernel_cache_dir), "wp.config.kernel_cache_dir"
    if os.environ.get("TILEWARP_CACHE_DIR"):
        return Path(os.environ["TILEWARP_CACHE_DIR"]), "TILEWARP_CACHE_DIR"
    return Path.home() / ".cache" / "tilewarp", "the default; set TILEWARP_CACHE_DIR to choose another"


def cache_dir() -> Path:
    """The cache folder, created on first use. One that cannot be written (read-only, or a file)
    is replaced, for this process, by a private temporary folder, with one warning."""
    d, origin = _configured()
    used = _folders.get(d)
    if used is not None and used != d:
        return used
    try:
        d.mkdir(parents=True, exist_ok=True)
        if used is None:  # once per folder: mkdir succeeds on an existing read-only folder
            tempfile.TemporaryFile(dir=d).close()
    except OSError as e:
        with _folders_lock:
            if _folders.get(d, d) == d:
                _folders[d] = _fallback_dir(d, origin, e)
            return _folders[d]
    _folders[d] = d
    return d


def _fallback_dir(d: Path, origin: str, err: OSError) -> Path:
    import atexit
    import shutil

    if d.exists() and not d.is_dir():
        reason = "it is a file, not a folder"
    else:
        reason = err.strerror or str(err)
    try:
        tmp = Path(tempfile.mkdtemp(prefix="tilewarp-cache-"))
    except OSError as e2:
        raise TileWarpError(f"kernel cache folder {d} ({origin}) is unusable ({reason}) and no temporary "
                            f"folder could be made ({e2})") from None
    owner = os.getpid()  # a forked child must not remove its parent's folder
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(tmp, ignore_errors=True))
    warn_user(f"tilewarp: cannot use the kernel cache folder {d} ({origin}): {reason}; compiled kernels "
              f"go to the temporary folder {tmp}, removed when this process exits")
    return tmp


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
    h = hashlib.sha256()
    for part in (config.version, native_hash(), *parts):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


# ---- temp files: named after their writer, swept when it is gone --------------------------------

#: ``<final name>.<tag>-<pid>.<random>.tmp``: the writer's pid, valid where the tag matches ours
_TEMP_NAME = re.compile(r"\.([0-9a-f]{8})-(\d+)\.[^.]*\.tmp$")
_swept: set[str] = set()


@functools.lru_cache(maxsize=None)
def _writer_tag() -> str:
    """This boot of this machine and this PID namespace: a pid in a temp name is only checked by a
    process that sees the same pids (a cache on NFS or shared with containers sees others')."""
    parts = []
    for source in ("/proc/sys/kernel/random/boot_id", "/proc/self/ns/pid"):
        try:
            parts.append(os.readlink(source) if source.endswith("/pid") else Path(source).read_text())
        except OSError:
            parts.append("")
    import socket

    parts.append(socket.gethostname())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


def temp_file(path: Path) -> tuple[int, str]:
    """``mkstemp`` beside ``path``, named after ``path`` and its writer (so sweeps recognise a dead
    writer's leftover); the folder's stale temp files are swept first, once per process."""
    sweep_stale(path.parent)
    return tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.{_writer_tag()}-{os.getpid()}.",
                            suffix=".tmp")


def sweep_stale(folder, again: bool = False) -> None:
    """Remove ``*.tmp`` files of killed builds from ``folder``: those whose writer no longer runs, and
    any older than ``STALE_TEMP_AGE``. Once per folder and process unless ``again``."""
    name = os.fspath(folder)
    if name in _swept and not again:
        return
    _swept.add(name)
    now = time.time()
    try:
        entries = list(os.scandir(name))
    except OSError:
        return
    for entry in entries:
        if entry.name.endswith(".tmp") and _is_stale(entry, now):
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def _is_stale(entry: os.DirEntry, now: float) -> bool:
    m = _TEMP_NAME.search(entry.name)
    if m and m.group(1) == _writer_tag() and not _running(int(m.group(2))):
        return True
    try:
        return now - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_AGE
    except OSError:
        return False


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process
        return True
    return True


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` so readers see the old file, or the new one, never a mix; ``mode``:
    the file's permissions (mkstemp makes 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---- entries ------------------------------------------------------------------------------------


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


def _read_index(meta: Path):
    """The parsed index, None when damaged; FileNotFoundError when there is none."""
    try:
        return json.loads(meta.read_bytes())
    except FileNotFoundError:
        raise
    except (OSError, ValueError):
        return None


def lookup(key: str) -> Path | None:
    """The cached binary for ``key`` if present and intact; a damaged entry is removed with a warning."""
    meta = _meta(key)
    try:
        info = _read_index(meta)
    except FileNotFoundError:
        return None
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
        warn_user(f"tilewarp: kernel cache entry {meta} is damaged; rebuilding it")
        if path is not None:
            path.unlink(missing_ok=True)
        meta.unlink(missing_ok=True)
        return None
    return path


def discard(key: str, path: Path) -> None:
    """Remove the entry of ``key`` whose binary ``path`` passed its checksum but would not load; its
    index goes too unless another process has published a new binary meanwhile."""
    meta = _meta(key)
    try:
        if _entry_file(key, _read_index(meta)) == path.name:
            meta.unlink(missing_ok=True)
    except FileNotFoundError:
        pass
    path.unlink(missing_ok=True)


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


# ---- build locks --------------------------------------------------------------------------------


def building(key: str, what: str | None = None) -> "BuildLock":
    """Hold the build lock of ``key``: processes (and threads) building one entry take turns, so the
    second finds the first one's entry instead of compiling again. ``with`` gives whether the lock is
    held (False: gave up waiting, see ``BuildLock``). The entry folder's stale temp files go first."""
    folder = cache_dir() / key[:2]
    return BuildLock(folder / f"{key}.lock", what or f"kernel cache entry {key[:16]}",
                     lambda: sweep_stale(folder, again=True))


def lock_timeout() -> float:
    """``wp.config.lock_timeout``, else $TILEWARP_LOCK_TIMEOUT, else 60 seconds."""
    value = config.lock_timeout
    if value is None:
        value = os.environ.get("TILEWARP_LOCK_TIMEOUT") or DEFAULT_LOCK_TIMEOUT
    try:
        return float(value)
    except (TypeError, ValueError):
        warn_user(f"tilewarp: lock timeout {value!r} is not a number of seconds; "
                  f"using {DEFAULT_LOCK_TIMEOUT:g}")
        return DEFAULT_LOCK_TIMEOUT


class BuildLock:
    """An advisory ``flock`` on the file ``lock``, with the holder's pid written in it.

    A holder that never lets go (a process stopped by Ctrl-Z) is waited for ``lock_timeout()``
    seconds, with a notice after ``LOCK_NOTICE_AFTER``; then ``with`` gives False and the caller
    builds without the lock, which is safe (every write is atomic), only wasteful. Without flock (not
    POSIX) builders just race. A class, not a generator: warnings then point past it to the user.
    """

    def __init__(self, lock: Path, what: str, on_enter=None):
        self.lock, self.what, self.on_enter = Path(lock), what, on_enter
        self.fd: int | None = None
        self.held = False

    def __enter__(self) -> bool:
        try:
            self.lock.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o644) if fcntl else None
        except OSError:
            self.fd = None
        if self.fd is not None:
            try:
                self.held = _acquire(self.fd, self.lock, self.what)
                if self.held:
                    _write_pid(self.fd)
            except BaseException:
                self.__exit__(None, None, None)
                raise
        if self.on_enter is not None:
            self.on_enter()
        return self.held

    def __exit__(self, *exc) -> None:
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            if self.held:  # no stale pid for the next waiter to name
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            pass
        finally:
            self.held = False
            os.close(fd)


def _write_pid(fd: int) -> None:
    """Name this process in the lock file for waiters' messages (best effort: a full disk)."""
    mine = f"{os.getpid()}\n".encode()
    try:
        os.pwrite(fd, mine, 0)
        os.ftruncate(fd, len(mine))
    except OSError:
        pass


def _holder(fd: int) -> str:
    try:
        words = os.pread(fd, 32, 0).decode("ascii", "replace").split()
    except OSError:
        words = []
    return f"process {words[0]}" if words and words[0].isdigit() else "another process"


def _acquire(fd: int, lock: Path, what: str) -> bool:
    """Poll for the lock (a blocking flock cannot time out) until ``lock_timeout()``; False: gave up."""
    timeout, start, delay, told = lock_timeout(), time.monotonic(), 0.005, False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        except OSError:  # a file system without locks: builders race, which is safe
            return True
        waited = time.monotonic() - start
        if waited >= timeout:
            warn_user(f"tilewarp: gave up after {timeout:g} s waiting for the build lock {lock} of {what}, "
                      f"held by {_holder(fd)} (stopped?); building without it "
                      f"(TILEWARP_LOCK_TIMEOUT or wp.config.lock_timeout sets the wait)")
            return False
        if not told and waited >= LOCK_NOTICE_AFTER:
            told = True
            if not config.quiet and _holder(fd) != f"process {os.getpid()}":  # (not another thread of ours)
                print(f"tilewarp: waiting for {what}: {_holder(fd)} holds its build lock {lock} "
                      f"(building without it after {timeout:g} s)", file=sys.stderr, flush=True)
        time.sleep(min(delay, max(timeout - waited, 0.0)))
        delay = min(delay * 2, 0.05)
