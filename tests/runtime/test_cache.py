"""The on-disk kernel cache (compile/cache.py): keys, atomic stores, checksummed loads, clearing.

Most tests run small scripts in fresh Python processes, because what the cache promises is about
the next process: a warm load, a damaged entry rebuilt with a warning, the same key whatever
Python's hash seed, two processes racing to build one kernel.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tilewarp as wp
from tilewarp.compile import cache

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh kernel cache for this test, for this process and every process it starts."""
    d = tmp_path / "kernel-cache"
    monkeypatch.setenv("TILEWARP_CACHE_DIR", str(d))
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(d))
    return d


# ---- helpers ----------------------------------------------------------------------------------

#: kernels the scripts build; SCALE_BODY is swapped to show that an edit rebuilds one kernel only
KERNELS = """
import tilewarp as wp

@wp.kernel
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = SCALE_BODY

@wp.kernel
def offset(a: wp.array(dtype=wp.int32), k: int):
    i = wp.tid()
    a[i] = a[i] + k * i
"""

MAIN = """
import sys
import numpy as np
import tilewarp as wp
import kernels_{tag} as K

wp.set_device("cpu")  # host entries (.so) also on machines with a GPU

a = wp.array(np.arange(8, dtype=np.float32))
wp.launch(K.scale, dim=8, inputs=[a, 3.0])
b = wp.zeros(8, dtype=wp.int32)
wp.launch(K.offset, dim=8, inputs=[b, 5])
print("RESULT", a.numpy().tolist(), b.numpy().tolist(), flush=True)
"""


def write_script(folder: Path, tag: str = "x", body: str = "a[i] * s", barrier: Path | None = None) -> Path:
    """``kernels_<tag>.py`` plus ``main_<tag>.py`` (which launches both kernels) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"kernels_{tag}.py").write_text(KERNELS.replace("SCALE_BODY", body))
    main = MAIN.format(tag=tag)
    if barrier is not None:  # wait until every racer is ready, then all compile at the same moment
        main = textwrap.dedent(f"""
            import os, time
            from pathlib import Path
            gate = Path({str(barrier)!r})
            (gate / f"ready-{{os.getpid()}}").touch()
            deadline = time.time() + 60
            while len(list(gate.glob("ready-*"))) < 2 and time.time() < deadline:
                time.sleep(0.001)
            """) + main
    path = folder / f"main_{tag}.py"
    path.write_text(main)
    return path


def start(script: Path, cache: Path, **env) -> subprocess.Popen:
    environ = dict(os.environ, TILEWARP_CACHE_DIR=str(cache), PYTHONPATH=f"{script.parent}{os.pathsep}{REPO}",
                   **env)
    environ.pop("TILEWARP_DUMP", None)
    return subprocess.Popen([sys.executable, "-W", "default", str(script)], cwd=script.parent, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, f"script failed (exit {proc.returncode}):\n{out}\n{err}"
    return out, err


def run(script: Path, cache: Path, **env) -> tuple[str, str]:
    return finish(start(script, cache, **env))


def result(out: str):
    line = next(ln for ln in out.splitlines() if ln.startswith("RESULT"))
    return line


def expected(factor=3.0):
    return f"RESULT {[float(i) * factor for i in range(8)]} {[5 * i for i in range(8)]}"


def log_lines(out: str, kernel: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith(f"Module {kernel} load on device 'cpu'")]


def cpu_entries(cache: Path) -> dict:
    """key -> index dict of every host (.so) entry (CUDA entries, if a test setup adds any, are skipped)."""
    found = {}
    for meta in cache.glob("??/*.json"):
        info = json.loads(meta.read_text())
        if info["file"].endswith(".so"):
            found[meta.stem] = info
    return found


def entry_for(cache: Path, kernel: str) -> tuple[Path, Path]:
    """(index json, binary) of the host entry whose generated source belongs to ``kernel``."""
    for key, info in cpu_entries(cache).items():
        folder = cache / key[:2]
        if (folder / f"{kernel}_{key[:12]}.cpp").exists():
            return folder / f"{key}.json", folder / info["file"]
    raise AssertionError(f"no cache entry for {kernel} in {sorted(p.name for p in cache.rglob('*'))}")


def import_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ---- (a) warm load in a new process -------------------------------------------------------------


def test_second_process_loads_from_cache(tmp_path, cache_dir):
    script = write_script(tmp_path / "src")
    out1, _ = run(script, cache_dir)
    assert len(log_lines(out1, "scale")) == 1 and "(compiled)" in log_lines(out1, "scale")[0]
    assert len(log_lines(out1, "offset")) == 1 and "(compiled)" in log_lines(out1, "offset")[0]
    assert result(out1) == expected()

    out2, _ = run(script, cache_dir)
    for kernel in ("scale", "offset"):
        lines = log_lines(out2, kernel)
        assert len(lines) == 1, out2
        assert "(cached)" in lines[0]
    assert "compiled" not in out2
    assert result(out2) == result(out1)


def test_entry_layout_and_index(tmp_path, cache_dir):
    """``<key>.json`` names the binary and records its size and SHA-256; no temp files are left."""
    import hashlib

    run(write_script(tmp_path / "src"), cache_dir)
    entries = cpu_entries(cache_dir)
    assert len(entries) == 2
    for key, info in entries.items():
        assert len(key) == 64 and all(c in "0123456789abcdef" for c in key)
        data = (cache_dir / key[:2] / info["file"]).read_bytes()
        assert info["size"] == len(data)
        assert info["sha256"] == hashlib.sha256(data).hexdigest()
    assert not list(cache_dir.rglob("*.tmp"))


def test_quiet_silences_log(tmp_path, cache_dir):
    script = write_script(tmp_path / "src")
    quiet = script.with_name("quiet.py")
    quiet.write_text("import tilewarp as wp\nwp.config.quiet = True\n" + script.read_text())
    out, _ = run(quiet, cache_dir)
    assert "tilewarp:" not in out
    assert result(out) == expected()


# ---- (b) two processes compiling the same new kernel at once ---------------------------------------


def test_concurrent_compiles_of_one_kernel(tmp_path, cache_dir):
    barrier = tmp_path / "gate"
    barrier.mkdir()
    script = write_script(tmp_path / "src", barrier=barrier)
    procs = [start(script, cache_dir) for _ in range(2)]
    outs = [finish(p)[0] for p in procs]
    for out in outs:
        assert result(out) == expected()
    for kernel in ("scale", "offset"):  # builders take turns: one compiles, the other loads its entry
        lines = [ln for out in outs for ln in log_lines(out, kernel)]
        assert len(lines) == 2 and sum("(compiled)" in ln for ln in lines) == 1, outs
    entries = cpu_entries(cache_dir)
    assert len(entries) == 2  # one entry per kernel
    for key in entries:
        path = cache.lookup(key)  # verifies size + checksum
        assert path is not None and path.is_file()
        assert len(list(path.parent.glob(f"{key}*.so"))) == 1
    assert not list(cache_dir.rglob("*.tmp"))
    # and a third process loads both
    out3, _ = run(script, cache_dir)
    assert out3.count("(cached)") == 2 and result(out3) == expected()


def test_concurrent_compiles_four_processes(tmp_path, cache_dir):
    """Several processes (more than two) racing on a cold cache all succeed."""
    gate = tmp_path / "gate"
    gate.mkdir()
    script = write_script(tmp_path / "src", barrier=gate)
    script.write_text(script.read_text().replace("< 2", "< 4"))
    procs = [start(script, cache_dir) for _ in range(4)]
    for p in procs:
        assert result(finish(p)[0]) == expected()
    assert len(cpu_entries(cache_dir)) == 2


# ---- (c) damaged entries -------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncate", "overwrite", "delete-binary", "garble-index", "empty-index",
                                    "index-not-a-dict", "index-wrong-size", "index-escapes"])
def test_damaged_entry_is_rebuilt_with_warning(tmp_path, cache_dir, damage):
    script = write_script(tmp_path / "src")
    run(script, cache_dir)
    meta, binary = entry_for(cache_dir, "scale")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    if damage == "truncate":
        binary.write_bytes(binary.read_bytes()[: binary.stat().st_size // 2])
    elif damage == "overwrite":
        data = bytearray(binary.read_bytes())
        data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64  # same size, wrong bytes
        binary.write_bytes(bytes(data))
    elif damage == "delete-binary":
        binary.unlink()
    elif damage == "garble-index":
        meta.write_text('{"file": "abc", "si')
    elif damage == "empty-index":
        meta.write_bytes(b"")
    elif damage == "index-not-a-dict":
        meta.write_text("[1, 2, 3]")
    elif damage == "index-wrong-size":
        info = json.loads(meta.read_text())
        info["size"] += 1
        meta.write_text(json.dumps(info))
    elif damage == "index-escapes":  # a damaged index must never make the cache delete other files
        info = json.loads(meta.read_text())
        info["file"] = os.path.relpath(victim, meta.parent)
        meta.write_text(json.dumps(info))

    out, err = run(script, cache_dir)
    assert "damaged" in err and "RuntimeWarning" in err, err
    assert "(compiled)" in log_lines(out, "scale")[0]
    assert "(cached)" in log_lines(out, "offset")[0]  # the neighbour is untouched
    assert result(out) == expected()
    assert victim.read_text() == "keep me"
    # the rebuilt entry is intact: a third process loads it without a warning
    out3, err3 = run(script, cache_dir)
    assert "damaged" not in err3 and out3.count("(cached)") == 2


def test_missing_index_just_rebuilds(tmp_path, cache_dir):
    script = write_script(tmp_path / "src")
    run(script, cache_dir)
    meta, _ = entry_for(cache_dir, "scale")
    meta.unlink()
    out, err = run(script, cache_dir)
    assert "damaged" not in err  # no index means no entry: a plain miss
    assert "(compiled)" in log_lines(out, "scale")[0]
    assert result(out) == expected()


def test_lookup_of_damaged_entry_in_process(cache_dir):
    key = cache.make_key("some source", "opts", "target")
    assert cache.lookup(key) is None
    path = cache.store(key, ".so", b"\x7fELF pretend binary")
    assert cache.lookup(key) == path and path.read_bytes() == b"\x7fELF pretend binary"
    path.write_bytes(b"\x7fELF pretend binarY")
    with pytest.warns(RuntimeWarning, match="damaged"):
        assert cache.lookup(key) is None
    assert not path.exists() and cache.lookup(key) is None  # removed: the next lookup is a plain miss


# ---- (d) keys -------------------------------------------------------------------------------------


def test_key_covers_every_part(monkeypatch):
    base = cache.make_key("src", "opts", "target")
    assert base == cache.make_key("src", "opts", "target")
    assert len({base, cache.make_key("src2", "opts", "target"), cache.make_key("src", "opts2", "target"),
                cache.make_key("src", "opts", "target2")}) == 4
    # parts are delimited: moving text from one part to the next changes the key
    assert cache.make_key("ab", "c", "t") != cache.make_key("a", "bc", "t")
    monkeypatch.setattr(wp.config, "version", wp.config.version + ".post1")
    assert cache.make_key("src", "opts", "target") != base
    monkeypatch.undo()
    monkeypatch.setattr(cache, "native_hash", lambda: "0" * 64)
    assert cache.make_key("src", "opts", "target") != base


def test_native_hash_covers_headers():
    h = cache.native_hash()
    assert len(h) == 64
    assert any(p.suffix == ".h" for p in cache.NATIVE_DIR.rglob("*"))


def test_options_change_the_key(tmp_path, cache_dir, monkeypatch):
    """debug / fast-math kernels are separate entries from release ones."""
    from tilewarp.compile.options import Options

    assert Options("cpu").key() != Options("cpu", debug=True).key()
    assert Options("cpu").key() != Options("cpu", fast_math=True).key()
    assert Options("cuda", 80).key() != Options("cuda", 90).key()
    script = write_script(tmp_path / "src")
    run(script, cache_dir)
    debug = script.with_name("debug.py")
    debug.write_text("import tilewarp as wp\nwp.config.mode = 'debug'\n" + script.read_text())
    out, _ = run(debug, cache_dir)
    assert out.count("(compiled)") == 2 and result(out) == expected()
    assert len(cpu_entries(cache_dir)) == 4


def test_same_source_same_key_across_processes(tmp_path):
    """Keys are content hashes, not Python ``hash()``: different hash seeds, different cache folders,
    the same entry names. (The generated source names the kernel's file, so the script stays put.)"""
    script = write_script(tmp_path / "src")
    keys = []
    for seed in ("1", "2"):
        folder = tmp_path / f"cache-{seed}"
        run(script, folder, PYTHONHASHSEED=seed)
        keys.append(sorted(cpu_entries(folder)))
    assert len(keys[0]) == 2 and keys[0] == keys[1]


def test_editing_one_kernel_rebuilds_only_it(tmp_path, cache_dir):
    src = tmp_path / "src"
    script = write_script(src, body="a[i] * s")
    run(script, cache_dir)
    before = cpu_entries(cache_dir)
    write_script(src, body="a[i] * s * 2.0")  # edit the body of scale only
    out, _ = run(script, cache_dir)
    assert "(compiled)" in log_lines(out, "scale")[0]
    assert "(cached)" in log_lines(out, "offset")[0]
    assert result(out) == expected(6.0)
    after = cpu_entries(cache_dir)
    assert set(before) < set(after) and len(after) == 3  # old scale, new scale, offset
    # and back again: the original body is still cached
    write_script(src, body="a[i] * s")
    out, _ = run(script, cache_dir)
    assert out.count("(cached)") == 2 and result(out) == expected()


def test_log_line_per_compile_and_load_in_process(tmp_path, cache_dir, monkeypatch, capsys):
    monkeypatch.setattr(wp.config, "quiet", False)
    write_script(tmp_path / "src", tag="inproc")
    path = tmp_path / "src" / "kernels_inproc.py"
    first = import_file(path, "tw_cache_test_first")
    a = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(first.scale, dim=4, inputs=[a, 1.0])
    wp.launch(first.scale, dim=4, inputs=[a, 1.0])  # already loaded: no more lines
    out = capsys.readouterr().out
    assert len(log_lines(out, "scale")) == 1 and "(compiled)" in out
    second = import_file(path, "tw_cache_test_first")  # the same module again: new Kernel objects
    assert second.scale is not first.scale
    wp.launch(second.scale, dim=4, inputs=[a, 1.0])
    out = capsys.readouterr().out
    assert len(log_lines(out, "scale")) == 1 and "(cached)" in out


# ---- (e) clearing and the cache folder --------------------------------------------------------------


def test_clear_kernel_cache(tmp_path, cache_dir):
    script = write_script(tmp_path / "src")
    run(script, cache_dir)
    assert len(cpu_entries(cache_dir)) == 2
    stray = cache_dir / "notes.txt"  # clear removes kernel entries, not unrelated files
    stray.write_text("mine")
    wp.clear_kernel_cache()
    assert cpu_entries(cache_dir) == {}
    assert not list(cache_dir.glob("??/*.so"))
    assert stray.read_text() == "mine"
    out, _ = run(script, cache_dir)
    assert out.count("(compiled)") == 2 and result(out) == expected()


def test_clear_on_missing_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "not-yet"))
    wp.clear_kernel_cache()  # creates/clears without error


def test_cache_dir_override(tmp_path, monkeypatch):
    monkeypatch.setattr(wp.config, "kernel_cache_dir", None)
    monkeypatch.setenv("TILEWARP_CACHE_DIR", str(tmp_path / "from-env"))
    assert cache.cache_dir() == tmp_path / "from-env" and (tmp_path / "from-env").is_dir()
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "from-config"))
    assert cache.cache_dir() == tmp_path / "from-config"  # config wins over the environment
    monkeypatch.setattr(wp.config, "kernel_cache_dir", None)
    monkeypatch.delenv("TILEWARP_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "tilewarp"


def test_env_override_in_new_process(tmp_path):
    folder = tmp_path / "elsewhere"
    out, _ = run(write_script(tmp_path / "src"), folder)
    assert result(out) == expected()
    assert len(cpu_entries(folder)) == 2


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "f.bin"
    cache.atomic_write(target, b"old")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        cache.atomic_write(target, b"new contents")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_a_long_compile_says_it_is_compiling(monkeypatch, capsys):
    """A compile still running after PROGRESS_AFTER seconds prints one progress line (not when quiet)."""
    import time

    import tilewarp.compile as compile_mod
    from tilewarp.compile.options import Options

    monkeypatch.setattr(compile_mod, "PROGRESS_AFTER", 0.05)
    slow = lambda source, name, options, work: (time.sleep(0.3), b"binary")[1]  # noqa: E731
    monkeypatch.setitem(compile_mod.TOOLCHAINS, "cpu", (slow, lambda o: "fake", ".so"))
    monkeypatch.setattr(wp.config, "quiet", False)
    source = f"// {os.urandom(8).hex()}"  # a fresh key
    compile_mod.compile_cached(source, "slowpoke", Options("cpu", 0))
    assert capsys.readouterr().out.count("Module slowpoke load on device 'cpu': still compiling ...") == 1
    monkeypatch.setattr(wp.config, "quiet", True)
    compile_mod.compile_cached(source + " ", "hushed", Options("cpu", 0))
    assert "hushed" not in capsys.readouterr().out


# ---- (e) a first launch on a Tape compiles its backward beside it ------------------------------------

TAPED_KERNEL = """
import tilewarp as wp

@wp.kernel
def cube(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    b[i] = a[i] * a[i] * a[i]
"""
TAPED = """
import numpy as np
import tilewarp as wp
import taped_kernels as K

wp.set_device("cpu")
a = wp.array(np.arange(8, dtype=np.float32), requires_grad=True)
b = wp.zeros(8, dtype=float, requires_grad=True)
tape = wp.Tape()
with tape:
    wp.launch(K.cube, dim=8, inputs=[a], outputs=[b])
tape.backward(grads={b: wp.ones(8, dtype=float)})
print("RESULT", a.grad.numpy().tolist(), flush=True)
"""


def test_backward_compiled_beside_a_taped_first_launch(tmp_path, cache_dir):
    """The forward's first build on a Tape starts the backward's compile in a second compiler
    process: the backward is then loaded from the cache (its log line says so), silently (no progress
    line or lock notice of its own), and its gradient is right (3 a^2)."""
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "taped_kernels.py").write_text(TAPED_KERNEL)
    script = folder / "taped.py"
    script.write_text(TAPED)
    out, err = run(script, cache_dir)
    assert result(out) == f"RESULT {[3.0 * i * i for i in range(8)]}", out
    backward = log_lines(out, "cube.backward")
    assert len(backward) == 1 and backward[0].endswith("(cached)"), out
    assert "cube.backward load on device 'cpu': still" not in out and "build lock" not in err, (out, err)
    entry_for(cache_dir, "cube.backward")  # its entry is in the cache
