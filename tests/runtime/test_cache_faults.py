"""The kernel cache under faults: a stopped lock holder, a damaged precompiled header, an unwritable
cache folder, a cached library that does not load, temp files of killed builds, and where the
"damaged entry" warning points.

Scenarios that could hang or crash run in child processes with timeouts (a stopped process holding
the build lock made every other builder wait for ever).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

import tilewarp as wp
from tilewarp.compile import cache, host

REPO = Path(__file__).resolve().parents[2]

from tests.runtime.test_cache import KERNELS, cache_dir  # noqa: E402,F401 - the same kernels and fixture

MAIN = """\
import numpy as np
import tilewarp as wp
import kernels_{tag} as K
from tilewarp.compile import cache

wp.set_device("cpu")
a = wp.array(np.arange(8, dtype=np.float32))
wp.launch(K.scale, dim=8, inputs=[a, 3.0])
b = wp.zeros(8, dtype=wp.int32)
wp.launch(K.offset, dim=8, inputs=[b, 5])
print("RESULT", a.numpy().tolist(), b.numpy().tolist(), flush=True)
print("CACHE", cache.cache_dir(), flush=True)
"""

#: takes the build lock of the first kernel it builds, says so in a file, then stops itself there
STUCK_HOLDER = """\
import contextlib, os, signal
from pathlib import Path
from tilewarp.compile import cache

_building = cache.building

@contextlib.contextmanager
def stuck(key, *args, **kwargs):
    with _building(key, *args, **kwargs):
        Path({marker!r}).write_text(key)
        os.kill(os.getpid(), signal.SIGSTOP)
        yield

cache.building = stuck
"""


def write_script(folder: Path, tag: str = "x", body: str = "a[i] * s", prelude: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"kernels_{tag}.py").write_text(KERNELS.replace("SCALE_BODY", body))
    path = folder / f"main_{tag}.py"
    path.write_text(prelude + MAIN.format(tag=tag))
    return path


def child_env(cache: Path | str, **env) -> dict:
    environ = dict(os.environ, TILEWARP_CACHE_DIR=str(cache), PYTHONPATH=str(REPO), **env)
    environ.pop("TILEWARP_DUMP", None)
    return environ


def start(script: Path, cache: Path | str, preexec_fn=None, new_session=False, **env) -> subprocess.Popen:
    environ = child_env(cache, **env)
    environ["PYTHONPATH"] = f"{script.parent}{os.pathsep}{REPO}"
    return subprocess.Popen([sys.executable, "-W", "default", str(script)], cwd=script.parent, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn,
                            start_new_session=new_session)


def run(script: Path, cache: Path | str, timeout: float = 300, preexec_fn=None, **env) -> tuple[str, str]:
    proc = start(script, cache, preexec_fn=preexec_fn, **env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{script.name} did not finish in {timeout} s (hung?):\n{out}\n{err}")
    assert proc.returncode == 0, f"script failed (exit {proc.returncode}):\n{out}\n{err}"
    return out, err


EXPECTED = f"RESULT {[i * 3.0 for i in range(8)]} {[5 * i for i in range(8)]}"


def result(out: str) -> str:
    return next(ln for ln in out.splitlines() if ln.startswith("RESULT"))


def used_cache(out: str) -> Path:
    return Path(next(ln for ln in out.splitlines() if ln.startswith("CACHE "))[len("CACHE "):])


def log_line(out: str, kernel: str) -> str:
    return next(ln for ln in out.splitlines() if ln.startswith(f"Module {kernel} load on device 'cpu'"))


def entry_for(cache: Path, kernel: str) -> tuple[Path, Path]:
    """(index json, binary) of the host entry whose generated source belongs to ``kernel``."""
    for meta in cache.glob("??/*.json"):
        info = json.loads(meta.read_text())
        key = meta.stem
        if info["file"].endswith(".so") and (meta.parent / f"{kernel}_{key[:12]}.cpp").exists():
            return meta, meta.parent / info["file"]
    raise AssertionError(f"no cache entry for {kernel} in {sorted(p.name for p in cache.rglob('*'))}")


def runtime_warnings(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if "RuntimeWarning" in ln]


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def process_state(pid: int) -> str:
    """The state letter in /proc/<pid>/stat ("T": stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


# ---- a stopped process holding the build lock (issue 5) ------------------------------------------


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX signals")
def test_stopped_lock_holder_does_not_hang_other_builders(tmp_path, cache_dir):
    marker = tmp_path / "locked"
    script = write_script(tmp_path / "src")
    holder_script = script.with_name("holder.py")
    holder_script.write_text(STUCK_HOLDER.format(marker=str(marker)) + script.read_text())
    holder = start(holder_script, cache_dir)
    try:
        wait_for(lambda: marker.exists() or holder.poll() is not None, 120, "the holder to take the lock")
        assert holder.poll() is None, holder.communicate()
        wait_for(lambda: process_state(holder.pid) == "T", 30, "the holder to stop")
        key = marker.read_text()
        lock = cache_dir / key[:2] / f"{key}.lock"
        assert lock.read_text().strip() == str(holder.pid)  # the holder names itself in the lock file

        t0 = time.monotonic()
        out, err = run(script, cache_dir, timeout=120, TILEWARP_LOCK_TIMEOUT="4")
        waited = time.monotonic() - t0
    finally:
        holder.kill()  # SIGKILL ends a stopped process too
        holder.communicate()
    assert result(out) == EXPECTED
    assert "(compiled)" in log_line(out, "scale")
    # a notice while waiting names the lock file and the holder, then a warning when giving up
    notice = [ln for ln in err.splitlines() if "waiting" in ln and str(lock) in ln]
    assert notice and f"process {holder.pid}" in notice[0], err
    gave_up = [ln for ln in runtime_warnings(err) if str(lock) in ln]
    assert len(gave_up) == 1 and f"process {holder.pid}" in gave_up[0], err
    assert "TILEWARP_LOCK_TIMEOUT" in gave_up[0]
    assert waited >= 4
    assert cache.lookup(key) is not None  # the private build stored an intact entry


def test_lock_names_its_holder_while_held(cache_dir):
    key = cache.make_key("lock holder", "opts", "target")
    lock = cache_dir / key[:2] / f"{key}.lock"
    with cache.building(key):
        assert lock.read_text().strip() == str(os.getpid())
    assert lock.read_text() == ""  # released: no stale pid for the next waiter to blame


CONTENDED = """\
import fcntl, warnings
import tilewarp as wp
from tilewarp.compile import cache

wp.config.quiet = True
wp.config.lock_timeout = 0.3
key = cache.make_key("contended", "opts", "target")
lock = cache.cache_dir() / key[:2] / f"{key}.lock"
lock.parent.mkdir(parents=True, exist_ok=True)
with open(lock, "w") as f:  # this process holds it through another open file description
    f.write("424242\\n")
    f.flush()
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with cache.building(key) as held:
            print("HELD", held)
for w in caught:
    print("WARN", w.filename, w.lineno, w.message)
"""


def test_quiet_lock_wait_prints_nothing_and_warns(tmp_path, cache_dir):
    """wp.config.lock_timeout bounds the wait; wp.config.quiet silences the notice, not the warning."""
    script = tmp_path / "contended.py"
    script.write_text(CONTENDED)
    out, err = run(script, cache_dir, timeout=60)
    assert "HELD False" in out
    (warning,) = [ln for ln in out.splitlines() if ln.startswith("WARN")]
    line = 1 + next(i for i, ln in enumerate(CONTENDED.splitlines()) if "cache.building(key)" in ln)
    assert warning.startswith(f"WARN {script} {line} ") and "process 424242" in warning, out
    assert err == ""


# ---- a damaged precompiled header (issue 6) ------------------------------------------------------


def pch_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("pch/*/tilewarp.h.gch"))


@pytest.mark.skipif(not host._identity(host.compiler())[1], reason="the PCH is only used with g++")
def test_truncated_pch_is_rebuilt(tmp_path, cache_dir):
    run(write_script(tmp_path / "a", tag="a"), cache_dir)
    (gch,) = pch_files(cache_dir)
    size = gch.stat().st_size
    gch.write_bytes(gch.read_bytes()[: size // 2])

    out, err = run(write_script(tmp_path / "b", tag="b", body="a[i] * s + 1.0"), cache_dir)
    assert "(compiled)" in log_line(out, "scale") and result(out) != EXPECTED  # a new kernel, built
    assert pch_files(cache_dir) == [gch] and gch.stat().st_size > size // 2  # rebuilt in place
    assert any("damaged" in ln and "tilewarp.h.gch" in ln for ln in runtime_warnings(err)), err
    # the rebuilt PCH is accepted by the next process without a warning
    out, err = run(write_script(tmp_path / "c", tag="c", body="a[i] * s + 2.0"), cache_dir)
    assert not runtime_warnings(err), err


@pytest.mark.skipif(not host._identity(host.compiler())[1], reason="the PCH is only used with g++")
def test_pch_that_breaks_a_compile_is_dropped(tmp_path, cache_dir, monkeypatch):
    """A PCH whose checksum matches but which g++ rejects: the compile succeeds without it and the
    PCH is removed, so the next compile builds a fresh one."""
    native = tmp_path / "native"
    native.mkdir()
    (native / "tilewarp.h").write_text("#pragma once\ninline int tw_seven() { return 7; }\n")
    monkeypatch.setattr(host, "NATIVE_DIR", native)
    src = '#include "tilewarp.h"\nextern "C" int NAME() { return tw_seven(); }\n'
    host.compile_shared(src.replace("NAME", "seven"), tmp_path / "a.so", pch_dir=tmp_path / "pch")
    (gch,) = (tmp_path / "pch").rglob("tilewarp.h.gch")
    data = gch.read_bytes()[:200]  # truncated, and its record rewritten to match
    gch.write_bytes(data)
    record = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    gch.with_name(gch.name + ".json").write_text(json.dumps(record))

    with pytest.warns(RuntimeWarning, match="precompiled header .* broke a compile"):
        host.compile_shared(src.replace("NAME", "eight"), tmp_path / "b.so", pch_dir=tmp_path / "pch")
    assert ctypes.CDLL(str(tmp_path / "b.so")).eight() == 7
    assert not gch.exists()
    host.compile_shared(src.replace("NAME", "nine"), tmp_path / "c.so", pch_dir=tmp_path / "pch")
    assert gch.is_file() and gch.stat().st_size > 200  # built afresh
    assert ctypes.CDLL(str(tmp_path / "c.so")).nine() == 7


# ---- an unusable cache folder (issue 14) ---------------------------------------------------------


def test_cache_path_is_a_regular_file(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("mine")
    out, err = run(write_script(tmp_path / "src"), blocker)
    assert result(out) == EXPECTED
    (warning,) = runtime_warnings(err)
    assert "TILEWARP_CACHE_DIR" in warning and str(blocker) in warning and "not a folder" in warning
    assert blocker.read_text() == "mine"
    fallback = used_cache(out)
    assert fallback != blocker and not fallback.exists()  # private to that process: removed at its exit


def _drop_file_capabilities():
    """In the child: give up root's right to write anywhere (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
    CAP_FOWNER), so a read-only folder is read-only to it too."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2, 3):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP: gone after exec
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _can_drop_capabilities() -> bool:
    probe = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=_drop_file_capabilities,
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_read_only_cache_folder(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    preexec = None
    if os.geteuid() == 0:  # root ignores permissions: the child drops that privilege first
        if not sys.platform.startswith("linux") or not _can_drop_capabilities():
            pytest.skip("running as root without a way to drop CAP_DAC_OVERRIDE")
        preexec = _drop_file_capabilities
    try:
        out, err = run(write_script(tmp_path / "src"), folder, preexec_fn=preexec)
    finally:
        folder.chmod(0o755)
    assert result(out) == EXPECTED
    (warning,) = runtime_warnings(err)
    assert "TILEWARP_CACHE_DIR" in warning and str(folder) in warning and "Permission denied" in warning
    assert list(folder.iterdir()) == []


def test_config_cache_path_is_a_file_in_process(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(blocker))
    with pytest.warns(RuntimeWarning, match="wp.config.kernel_cache_dir") as record:
        first = cache.cache_dir()
    assert str(blocker) in str(record[0].message) and record[0].filename == __file__
    assert first.is_dir() and first != blocker
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per folder, not one per call
        assert cache.cache_dir() == first
    cache.atomic_write(first / "probe.bin", b"ok")
    assert (first / "probe.bin").read_bytes() == b"ok"


# ---- a cached library that does not load (issue 15) ------------------------------------------------


def test_unloadable_library_with_matching_index_is_rebuilt(tmp_path, cache_dir):
    script = write_script(tmp_path / "src")
    run(script, cache_dir)
    meta, binary = entry_for(cache_dir, "scale")
    garbage = b"this is not a shared library\n" * 100
    binary.write_bytes(garbage)  # and an index that vouches for it
    meta.write_text(json.dumps({"file": binary.name, "size": len(garbage),
                                "sha256": hashlib.sha256(garbage).hexdigest()}))

    out, err = run(script, cache_dir)
    assert result(out) == EXPECTED
    (warning,) = runtime_warnings(err)
    assert str(binary) in warning and "could not be loaded" in warning, err
    assert "(compiled)" in log_line(out, "scale") and "(cached)" in log_line(out, "offset")
    _, rebuilt = entry_for(cache_dir, "scale")
    assert rebuilt.read_bytes()[:4] == b"\x7fELF"  # (the same name: named after the good build's checksum)
    out, err = run(script, cache_dir)  # the rebuilt entry loads
    assert not runtime_warnings(err) and out.count("(cached)") == 2


# ---- temp files of killed builds (issue 16) -------------------------------------------------------


def age(path: Path, seconds: float) -> Path:
    t = time.time() - seconds
    os.utime(path, (t, t))
    return path


def test_stale_temp_files_are_swept_on_the_next_build(tmp_path, cache_dir):
    script = write_script(tmp_path / "src")
    run(script, cache_dir)
    meta, _ = entry_for(cache_dir, "scale")
    pch_folders = sorted(cache_dir.glob("pch/*/"))
    stale = [meta.parent / "scale_0123456789ab.so.k2j4h5l6.tmp",
             meta.parent / f"{meta.stem}.json.m3n4b5v6.tmp"]
    stale += [folder / "tilewarp.h.gch.a1b2c3d4.tmp" for folder in pch_folders]
    fresh = meta.parent / "other.so.z9y8x7w6.tmp"  # young, writer unknown: may be in flight
    for p in stale + [fresh]:
        p.write_bytes(b"partial")
    for p in stale:
        age(p, 2 * 3600)
    meta.unlink()  # the next run rebuilds scale, in the folder holding the leftovers

    out, _ = run(script, cache_dir)
    assert "(compiled)" in log_line(out, "scale") and result(out) == EXPECTED
    assert [p for p in stale if p.exists()] == []
    assert fresh.exists()


def test_stale_temp_files_in_native_folder(tmp_path):
    folder = tmp_path / "native-libs"
    folder.mkdir()
    stale = folder / "libtilewarp_cpu-0000.so.q1w2e3r4.tmp"
    stale.write_bytes(b"partial")
    age(stale, 2 * 3600)
    fresh = folder / "libtilewarp_cpu-0001.so.t5y6u7i8.tmp"
    fresh.write_bytes(b"in flight")
    path = host.build_runtime(folder)
    assert os.path.isfile(path) and not stale.exists() and fresh.exists()


WRITER = """\
import sys
from pathlib import Path
from tilewarp.compile import cache

fd, tmp = cache.temp_file(Path(sys.argv[1]) / "lib.so")
print(tmp, flush=True)
sys.stdin.read()  # "writing" until the test closes stdin or kills it
"""


def test_sweep_keeps_a_running_writers_temp_file(tmp_path):
    """A young temp file is removed as soon as its writer is gone, never while it runs."""
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], env=child_env(tmp_path / "c"),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        tmp = Path(writer.stdout.readline().strip())
        assert tmp.parent == tmp_path and tmp.name.startswith("lib.so.") and tmp.exists()
        cache.sweep_stale(tmp_path, again=True)
        assert tmp.exists()
    finally:
        writer.kill()
        writer.communicate(timeout=60)
    cache.sweep_stale(tmp_path, again=True)
    assert not tmp.exists()


SLOW_CXX = """#!/bin/sh
# stands in for the compiler: a kernel library compile announces itself and then hangs
for arg in "$@"; do
    if [ "$arg" = "-shared" ]; then
        touch "{marker}"
        sleep 300
    fi
done
exec "{real}" "$@"
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="shell wrapper and process groups")
def test_compile_killed_midway_leaves_nothing_after_next_build(tmp_path, cache_dir):
    marker = tmp_path / "compiling"
    real = host.compiler()
    wrapper = tmp_path / "slow-cxx"
    wrapper.write_text(SLOW_CXX.format(marker=marker, real=real))
    wrapper.chmod(0o755)
    script = write_script(tmp_path / "src")

    child = start(script, cache_dir, new_session=True, CXX=str(wrapper))
    try:
        wait_for(lambda: marker.exists() or child.poll() is not None, 120, "the compile to start")
        assert child.poll() is None, child.communicate()
        leftovers = list(cache_dir.glob("??/*.tmp"))
        assert leftovers  # the compiler's output file, named before the compiler runs
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the interpreter and its compiler
        child.communicate()
    assert all(p.exists() for p in leftovers)

    out, _ = run(script, cache_dir, CXX=real)
    assert "(compiled)" in log_line(out, "scale") and result(out) == EXPECTED
    assert not list(cache_dir.rglob("*.tmp")), sorted(cache_dir.rglob("*.tmp"))


# ---- where the damaged-entry warning points (issue 17) --------------------------------------------


def test_damaged_entry_warning_points_at_the_launch(tmp_path, cache_dir):
    script = write_script(tmp_path / "src")
    run(script, cache_dir)
    _, binary = entry_for(cache_dir, "scale")
    binary.write_bytes(binary.read_bytes()[:100])
    out, err = run(script, cache_dir)
    assert result(out) == EXPECTED
    line = 1 + script.read_text().splitlines().index("wp.launch(K.scale, dim=8, inputs=[a, 3.0])")
    (warning,) = runtime_warnings(err)
    assert warning.startswith(f"{script}:{line}: RuntimeWarning: tilewarp: kernel cache entry"), err
    assert "damaged" in warning
