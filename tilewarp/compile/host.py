"""Host C++ compiler driver: generated source -> shared library (.so) for the CPU backend.

Every output is written to a temporary name and ``os.replace``d into place, so several processes
may build the same file at once and a reader never sees half a library.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tilewarp import config
from tilewarp.errors import CompileError, warn_user

from tilewarp.compile.cache import BuildLock, atomic_write, sweep_stale, temp_file
from tilewarp.compile.paths import NATIVE_DIR
PCH_HEADER = "tilewarp.h"
RUNTIME_SOURCE = NATIVE_DIR / "runtime" / "thread_pool.cpp"

_pch_failed: set[str] = set()  # PCH keys that failed to build in this process: don't retry
_pch_verified: set[str] = set()  # PCH files whose checksum this process has checked


def compiler() -> str:
    """The host C++ compiler: config.host_compiler, else $CXX, else g++ (resolved on PATH)."""
    name = config.host_compiler or os.environ.get("CXX") or "g++"
    return shutil.which(name) or name


@functools.lru_cache(maxsize=None)
def _identity(cxx: str) -> tuple[str, bool]:
    """(identity string, is_gcc) for one compiler path."""
    try:
        version = _run([cxx, "--version"]).stdout
    except OSError as e:
        raise CompileError(f"host C++ compiler {cxx!r} not found ({e})") from None
    is_gcc = "clang" not in version.lower()
    if is_gcc:  # the target options -march=native switches on (CPU name, ISA extensions, caches)
        target = _run([cxx, "-march=native", "-Q", "--help=target"]).stdout
    else:  # clang: the cc1 command line names -target-cpu and every -target-feature
        target = _run([cxx, "-march=native", "-###", "-E", "-x", "c++", os.devnull]).stderr
    digest = hashlib.sha256((version + "\0" + target).encode()).hexdigest()
    name = version.splitlines()[0].split()[0] if version.strip() else "cxx"
    return f"{Path(name).name}-{digest[:32]}", is_gcc


def _machine_fingerprint(cxx: str) -> str:
    """Cheap stand-in for the slow probe: compiler file identity plus this CPU's model and flags."""
    st = os.stat(cxx) if os.path.exists(cxx) else None
    try:
        with open("/proc/cpuinfo") as f:
            cpu = "".join(line for line in f if line.startswith(("model name", "flags")))
    except OSError:
        cpu = os.uname().machine
    parts = [os.path.realpath(cxx), str(st and (st.st_mtime_ns, st.st_size)), cpu]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


@functools.lru_cache(maxsize=None)
def _identity_memo(cxx: str) -> tuple[str, bool]:
    """``_identity`` remembered on disk: probing the compiler costs ~30 ms of subprocesses per process."""
    import json

    from .cache import cache_dir

    memo = cache_dir() / "host" / f"identity-{_machine_fingerprint(cxx)}.json"
    try:
        ident, is_gcc = json.loads(memo.read_text())
        return str(ident), bool(is_gcc)
    except (OSError, ValueError, TypeError):
        result = _identity(cxx)
        atomic_write(memo, json.dumps(list(result)).encode())
        return result


def target_identity() -> str:
    """Hash of the compiler's ``--version`` and the CPU features ``-march=native`` expands to."""
    return _identity_memo(compiler())[0]


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    if config.verbose:
        print("tilewarp:", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)


def _flags(include_dirs, defines, opt_level, debug, fast_math, extra_flags) -> list[str]:
    """Flags shared by the compile and its precompiled header (they must match exactly)."""
    flags = ["-std=c++17", "-march=native", "-fPIC", "-fno-math-errno", "-pipe"]
    flags += ["-O0", "-g", "-DTW_DEBUG=1"] if debug else [f"-O{opt_level}"]
    if fast_math:
        flags.append("-ffast-math")
    for k, v in sorted((defines or {}).items()):
        flags.append(f"-D{k}" if v is None else f"-D{k}={v}")
    flags += list(extra_flags or ())
    dirs = [str(d) for d in (include_dirs or ())]
    if str(NATIVE_DIR) not in dirs:
        dirs.append(str(NATIVE_DIR))
    return flags + [f"-I{d}" for d in dirs]


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _header_hash() -> str:
    """Hash of every header under native/ (tilewarp.h includes the others)."""
    h = hashlib.sha256()
    for p in sorted(NATIVE_DIR.rglob("*.h")):
        h.update(str(p.relative_to(NATIVE_DIR)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def precompiled_header(pch_dir, flags: list[str], cxx: str) -> str | None:
    """Folder holding ``tilewarp.h.gch`` built with exactly `flags`, or None if it can't be had.

    g++ looks for ``X.gch`` in each include folder just before ``X``, so putting this folder first
    in the -I list makes ``#include "tilewarp.h"`` (the first line of every generated source) load
    the PCH; a source that doesn't start with it silently uses the plain header instead. A damaged
    PCH (g++ refuses a truncated one, failing every compile) fails its checksum and is rebuilt.
    """
    header = NATIVE_DIR / PCH_HEADER
    if not header.is_file() or not _identity_memo(cxx)[1]:  # clang's PCH rules differ: skip it
        return None
    key_src = "\0".join([target_identity(), cxx, _header_hash(), *flags])
    key = hashlib.sha256(key_src.encode()).hexdigest()[:20]
    folder = Path(pch_dir) / f"pch-{key}"
    gch = folder / (PCH_HEADER + ".gch")
    if key in _pch_failed:
        return None
    sweep_stale(folder)  # a killed PCH build's temp file (once per process)
    if _pch_state(gch) == "ok":
        return str(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with BuildLock(folder / "build.lock", "the precompiled header", lambda: sweep_stale(folder, again=True)):
        state = _pch_state(gch)  # another process may have built it while we waited
        if state == "ok":
            return str(folder)
        if state == "damaged":
            warn_user(f"tilewarp: precompiled header {gch} is damaged; rebuilding it")
        for p in (gch, _pch_record(gch)):
            _unlink(p)
        return str(folder) if _build_pch(header, gch, flags, cxx, key) else None


def _pch_record(gch: Path) -> Path:
    """``tilewarp.h.gch.json``: the PCH's size and SHA-256, as kernel cache entries have."""
    return gch.with_name(gch.name + ".json")


def _sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _pch_state(gch: Path) -> str:
    """"ok"; "missing" (no PCH, or no record: a build killed between the two renames); or "damaged".
    The checksum is read once per process and PCH (~20 MB, ~40 ms)."""
    import json

    if str(gch) in _pch_verified and gch.is_file():
        return "ok"
    try:
        record = json.loads(_pch_record(gch).read_bytes())
        size = gch.stat().st_size
        ok = size == record["size"] and _sha256_file(gch) == record["sha256"]
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        return "damaged"
    _pch_verified.add(str(gch))
    return "ok"


def _build_pch(header: Path, gch: Path, flags: list[str], cxx: str, key: str) -> bool:
    """Compile the PCH into a temp file, rename it into place, then write its record."""
    import json

    fd, tmp = temp_file(gch)
    os.close(fd)
    try:
        res = _run([cxx, *flags, "-x", "c++-header", str(header), "-o", tmp])
        if res.returncode != 0:
            _unlink(tmp)
            _pch_failed.add(key)
            return False
        os.chmod(tmp, 0o644)
        record = {"size": os.path.getsize(tmp), "sha256": _sha256_file(tmp)}
        os.replace(tmp, gch)
    except BaseException:
        _unlink(tmp)
        raise
    atomic_write(_pch_record(gch), json.dumps(record).encode())
    _pch_verified.add(str(gch))
    return True


def _drop_pch(folder: str, why: str) -> None:
    """Remove a PCH that broke a compile which works without it; the next compile builds a new one."""
    gch = Path(folder) / (PCH_HEADER + ".gch")
    _pch_verified.discard(str(gch))
    for p in (gch, _pch_record(gch)):
        _unlink(p)
    warn_user(f"tilewarp: the precompiled header {gch} broke a compile that works without it ({why}); "
              f"removed it, the next compile builds a new one")


def _first_error(stderr: str) -> str:
    return next((ln for ln in stderr.splitlines() if "error" in ln), "").strip()


def compile_shared(source: str, out_path, *, include_dirs=(), defines=None, opt_level: int = 3,
                   debug: bool = False, fast_math: bool = False, pch_dir=None,
                   extra_flags=(), link_flags=()) -> None:
    """Compile C++ `source` into the shared library `out_path`.

    The source is kept next to the output as ``<out stem>.cpp`` so compiler messages and
    CompileError point at a real file. `pch_dir`, when given, is where the tilewarp.h PCH lives.
    """
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    cpp = out.with_suffix(".cpp")
    atomic_write(cpp, source.encode(), mode=0o644)  # an ordinary file beside the library
    cxx = compiler()
    flags = _flags(include_dirs, defines, opt_level, debug, fast_math, extra_flags)
    folder = precompiled_header(pch_dir, flags, cxx) if pch_dir is not None else None
    res = _compile_once(cxx, flags, cpp, out, folder, link_flags)
    if res.returncode != 0 and folder:
        # a PCH can pass its checksum and still be refused (damaged before its record was written):
        # if the compile works without it, the PCH was at fault
        plain = _compile_once(cxx, flags, cpp, out, None, link_flags)
        if plain.returncode == 0:
            _drop_pch(folder, _first_error(res.stderr))
        res = plain
    if res.returncode != 0:
        first = _first_error(res.stderr)
        msg = f"host C++ compilation failed ({Path(cxx).name} exit {res.returncode})"
        raise CompileError(msg + (f": {first}" if first else ""), log=res.stderr, source_path=str(cpp))


def _compile_once(cxx: str, flags, cpp: Path, out: Path, pch_folder, link_flags):
    """One compiler run into a temp file, renamed onto `out` when it succeeds."""
    pch_flags = [f"-I{pch_folder}", "-Winvalid-pch"] if pch_folder else []
    fd, tmp = temp_file(out)
    os.close(fd)
    cmd = [cxx, *pch_flags, *flags, "-shared", str(cpp), "-o", tmp, *link_flags]
    try:
        res = _run(cmd)
    except OSError as e:
        _unlink(tmp)
        raise CompileError(f"could not run host C++ compiler {cxx!r}: {e}", source_path=str(cpp)) from None
    except BaseException:
        _unlink(tmp)
        raise
    if res.returncode != 0:
        _unlink(tmp)
        return res
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)
    return res


#: Where the native runtime libraries are built: beside the package, once per install (as Warp ships
#: warp/bin), so a fresh kernel cache does not build them again; the kernel cache's runtime/ folder
#: when the package folder cannot be written.
PACKAGE_RUNTIME_DIR = Path(__file__).resolve().parents[1] / "_native"


def native_output(source: Path, stem: str, folder=None, key_extra: str = "") -> Path:
    """Where ``build_native`` finds or puts ``source``'s library, ``<stem>-<key>.so``, the key hashing
    the source text, the compiler identity and ``key_extra``: in ``folder`` when given, else beside
    the package or in the kernel cache (wherever it exists already; else the first writable)."""
    if folder is None:
        built = installed(stem, source)
        if built is not None:
            return built
    key = "\0".join((source.read_text(), target_identity(), key_extra))
    name = f"{stem}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.so"
    if folder is not None:
        return Path(folder) / name
    from .cache import cache_dir

    folders = (PACKAGE_RUNTIME_DIR, cache_dir() / "runtime")
    for f in folders:
        if (f / name).is_file():
            return f / name
    try:
        PACKAGE_RUNTIME_DIR.mkdir(exist_ok=True)
        writable = os.access(PACKAGE_RUNTIME_DIR, os.W_OK)
    except OSError:
        writable = False
    return (folders[0] if writable else folders[1]) / name


def installed(stem: str, source: Path) -> Path | None:
    """``source``'s library as ``pip install`` built it (pyproject's ext-modules: ``tilewarp/_<stem>``
    plus the interpreter's extension suffix), or None. In a source tree (an editable install) the
    source may have been edited since: a library older than its source is not used."""
    import importlib.machinery

    package = PACKAGE_RUNTIME_DIR.parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = package / f"_{stem.lstrip('_')}{suffix}"
        if path.is_file():
            in_source_tree = NATIVE_DIR.parent == package.parent
            if in_source_tree and source.stat().st_mtime > path.stat().st_mtime:
                return None
            return path
    return None


def build_native(source: Path, stem: str, folder=None, key_extra: str = "", **options) -> str:
    """Build the native runtime source ``source`` where ``native_output`` says, unless it is there
    already; ``options`` go to ``compile_shared``."""
    out = native_output(source, stem, folder, key_extra)
    sweep_stale(out.parent)  # leftovers of builds killed midway (once per process and folder)
    if not out.is_file():
        compile_shared(source.read_text(), out, opt_level=2, **options)
    return str(out)


def build_runtime(folder=None) -> str:
    """The CPU runtime (native/runtime/thread_pool.cpp: the thread pool and tw_cpu_submit)."""
    return build_native(RUNTIME_SOURCE, "libtilewarp_cpu", folder, extra_flags=["-pthread"])
