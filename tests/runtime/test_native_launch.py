"""wp.launch's native hot path (runtime/native_launch.py, native/runtime/launch_ext.cpp): it must
launch exactly what the general path launches (same argument bytes, same conversions of Python
scalars), hand everything else back untouched, and forget its decisions when a setting changes."""

import ctypes
import os
import subprocess
import sys
import sysconfig
import threading
from typing import Any

import numpy as np
import pytest

import tilewarp as wp
from tilewarp.runtime import native_launch


@wp.kernel
def echo(f32: float, f64: wp.float64, i8: wp.int8, i16: wp.int16, i32: int, i64: wp.int64, u8: wp.uint8,
         u16: wp.uint16, u32: wp.uint32, u64: wp.uint64, flag: bool, v: wp.vec3, m: wp.mat22,
         grid: wp.array2d(dtype=wp.float64), fl: wp.array(dtype=wp.float64), it: wp.array(dtype=wp.int64),
         ut: wp.array(dtype=wp.uint64)):
    i, j = wp.tid()
    fl[i * 3 + j] = grid[i, j] * 2.0
    if i == 0 and j == 0:
        fl[6] = wp.float64(f32)
        fl[7] = f64
        fl[8] = wp.float64(v[0] + v[1] * 10.0 + v[2] * 100.0)
        fl[9] = wp.float64(m[0, 0] + m[0, 1] * 10.0 + m[1, 0] * 100.0 + m[1, 1] * 1000.0)
        it[0] = wp.int64(i8)
        it[1] = wp.int64(i16)
        it[2] = wp.int64(i32)
        it[3] = i64
        it[4] = wp.int64(u8)
        it[5] = wp.int64(u16)
        it[6] = wp.int64(u32)
        it[7] = wp.where(flag, wp.int64(1), wp.int64(0))
        ut[0] = u64


@wp.kernel
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s


@wp.kernel
def index_at(a: wp.array(dtype=float), k: int):
    wp.tid()
    a[k] = a[k] + 1.0


@wp.kernel
def generic_add(a: wp.array(dtype=Any), s: Any):
    i = wp.tid()
    a[i] = a[i] + s


WRAPS = {"i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
         "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64}


def _native_available() -> bool:
    include = sysconfig.get_paths().get("include")
    return bool(include) and os.path.isfile(os.path.join(include, "Python.h"))


pytestmark = pytest.mark.skipif(not _native_available() or os.environ.get("TILEWARP_FAST_LAUNCH") == "0",
                                reason="no Python headers to build the extension with")


def _echo_args(rng, device, scalars=None):
    scalars = scalars or {
        "f32": float(rng.normal()), "f64": float(rng.normal()) * 1e10, "i8": int(rng.integers(-128, 128)),
        "i16": int(rng.integers(-2**15, 2**15)), "i32": int(rng.integers(-2**31, 2**31)),
        "i64": int(rng.integers(-2**63, 2**63)), "u8": int(rng.integers(0, 256)), "u16": int(rng.integers(0, 2**16)),
        "u32": int(rng.integers(0, 2**32)), "u64": int(rng.integers(0, 2**63)) * 2 + 1, "flag": bool(rng.integers(2))}
    v, m = wp.vec3(*rng.integers(0, 9, 3).astype(float)), wp.mat22(*rng.integers(0, 9, 4).astype(float))
    grid = wp.array(rng.normal(size=(2, 3)), dtype=wp.float64, device=device)
    outs = (wp.zeros(10, dtype=wp.float64, device=device), wp.zeros(8, dtype=wp.int64, device=device),
            wp.zeros(1, dtype=wp.uint64, device=device))
    return [*scalars.values(), v, m, grid], list(outs), scalars


def _warm(kernel, dim, inputs, outputs=(), device=None):
    """Two general-path launches: the first settles that the kernel is not generic, the second
    remembers its launcher."""
    for _ in range(2):
        wp.launch(kernel, dim=dim, inputs=inputs, outputs=list(outputs), device=device)


def _results(outs):
    return [o.numpy().copy() for o in outs]  # a CPU array's numpy() shares its memory


@pytest.fixture(autouse=True)
def _loaded():
    """The extension is built in the background on first use; these tests need it loaded."""
    assert native_launch.extension() is not None, "launch_ext.cpp did not build or load"


def test_extension_builds_where_python_headers_exist():
    assert native_launch.fast is native_launch.extension().launch


def test_first_build_happens_in_the_background(tmp_path):
    """Where the extension is not built yet, the first launches take the general path while it
    builds; once it is loaded, the next launch goes native."""
    code = ("import numpy as np, pathlib, sys, tilewarp as wp\n"
            "import tilewarp.compile.host as host\n"
            "host.PACKAGE_RUNTIME_DIR = pathlib.Path(sys.argv[1])  # an empty install folder\n"
            "from tilewarp.runtime import native_launch\n"
            "@wp.kernel\n"
            "def k(a: wp.array(dtype=float)):\n"
            "    a[wp.tid()] += 1.0\n"
            "a = wp.zeros(3, dtype=float, device='cpu')\n"
            "for _ in range(2): wp.launch(k, dim=3, inputs=[a], device='cpu')\n"
            "print(native_launch.fast is None, native_launch._loader.is_alive())\n"
            "native_launch._ready.wait()\n"
            "for _ in range(2): wp.launch(k, dim=3, inputs=[a], device='cpu')\n"
            "print(native_launch.fast(k, 3, [a], (), 'cpu', 256), a.numpy().tolist())\n")
    script = tmp_path / "first_build.py"
    script.write_text(code)
    env = {**os.environ, "TILEWARP_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "native")], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.split("\n")[-3:-1] == ["True True", "True [5.0, 5.0, 5.0]"]


def test_native_launch_equals_general_path(device, monkeypatch):
    rng = np.random.default_rng(7)
    inputs, outs, _ = _echo_args(rng, device)
    _warm(echo, (2, 3), inputs, outs, device)
    for trial in range(5):
        inputs, outs, scalars = _echo_args(rng, device)
        assert native_launch.fast(echo, (2, 3), inputs, outs, device, 256) is True
        native = _results(outs)
        for o in outs:
            o.zero_()
        with monkeypatch.context() as m:
            m.setattr(native_launch, "fast", None)
            wp.launch(echo, dim=(2, 3), inputs=inputs, outputs=outs, device=device)
        general = _results(outs)
        for got, want in zip(native, general):
            np.testing.assert_array_equal(got, want)
        fl, it, ut = native
        np.testing.assert_array_equal(fl[:6], inputs[13].numpy().reshape(-1) * 2.0)
        assert fl[6] == np.float32(scalars["f32"]) and fl[7] == scalars["f64"]
        assert list(it[:7]) == [scalars[k] for k in ("i8", "i16", "i32", "i64", "u8", "u16", "u32")]
        assert it[7] == int(scalars["flag"]) and int(ut[0]) == scalars["u64"]


@pytest.mark.parametrize("case", ["extremes", "bools", "ints_as_floats"])
def test_python_scalars_convert_as_the_general_path_does(device, case):
    """Ints at the ends of each type's range pass unchanged, negatives reach unsigned parameters as
    their two's complement bits (as in Warp), bools are ints, ints are floats: as the general path."""
    rng = np.random.default_rng(11)
    base = _echo_args(rng, device)[2]
    if case == "extremes":
        values = {**base}
        for k_, k in enumerate(WRAPS):
            bits = 8 * ctypes.sizeof(WRAPS[k])
            lo, hi = -(2 ** (bits - 1)), 2 ** (bits if k.startswith("u") else bits - 1) - 1
            values[k] = [lo, hi, int(rng.integers(lo, 0))][(k_ + int(rng.integers(3))) % 3]
        values["u64"] = -int(rng.integers(1, 2**40))
    elif case == "bools":
        values = {**base, **{k: bool(k_ % 2) for k_, k in enumerate(WRAPS)}, "flag": 2, "f32": True}
    else:
        values = {**base, "f32": int(rng.integers(-1000, 1000)), "f64": 2**60 + 1}
    inputs, outs, _ = _echo_args(rng, device, values)
    _warm(echo, (2, 3), inputs, outs, device)
    for o in outs:
        o.zero_()
    assert native_launch.fast(echo, (2, 3), inputs, outs, device, 256) is True
    fl, it, ut = _results(outs)
    for k_, k in enumerate(("i8", "i16", "i32", "i64", "u8", "u16", "u32")):
        assert it[k_] == WRAPS[k](values[k]).value, k
    assert int(ut[0]) == WRAPS["u64"](values["u64"]).value
    assert it[7] == int(bool(values["flag"]))
    assert fl[6] == np.float32(float(values["f32"])) and fl[7] == float(values["f64"])


@pytest.mark.parametrize("name", list(WRAPS))
def test_out_of_range_ints_raise_on_both_paths(device, name):
    """An int a parameter cannot hold is not cut to its low bits: the extension hands the launch
    back and the general path raises, naming the argument, its type and the value."""
    rng = np.random.default_rng(list(WRAPS).index(name) + 100)
    inputs, outs, scalars = _echo_args(rng, device)
    _warm(echo, (2, 3), inputs, outs, device)
    bits = 8 * ctypes.sizeof(WRAPS[name])
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits if name.startswith("u") else bits - 1) - 1
    wp_type = {"i": "int", "u": "uint"}[name[0]] + str(bits)
    for bad in (hi + 1 + int(rng.integers(0, 2**20)), lo - 1 - int(rng.integers(0, 2**20)), 2**40 + 7, -2**70):
        if lo <= bad <= hi:
            continue
        values = list(inputs)
        values[list(scalars).index(name)] = bad
        for o in outs:
            o.zero_()
        assert native_launch.fast(echo, (2, 3), values, outs, device, 256) is False, bad
        with pytest.raises(wp.LaunchError, match=rf"argument '{name}' expects {wp_type}, got {bad},"):
            wp.launch(echo, dim=(2, 3), inputs=values, outputs=outs, device=device)
        with pytest.raises(wp.LaunchError, match=rf"argument '{name}'.*{bad}"):  # the ctypes struct path too
            wp.launch(echo, dim=(2, 3), inputs=values, outputs=outs, device=device, record_cmd=True)
        assert not any(o.numpy().any() for o in outs), "nothing may run"


def test_hands_back_what_it_does_not_pack(device):
    """Anything unusual returns False having launched nothing; wp.launch then gives the general
    path's result or error."""
    a = wp.array(np.ones(4, dtype=np.float32), device=device)
    _warm(scale, 4, [a, 1.0], device=device)
    fast = native_launch.fast
    handed_back = [
        (scale, [4], [a, 2.0], (), device, 256),                     # dim as a list
        (scale, 4, [a, np.float32(2.0)], (), device, 256),          # a NumPy scalar
        (scale, 4, [a, wp.float32(2.0)], (), device, 256),          # a tilewarp scalar object
        (scale, 4, [a, 1e39], (), device, 256),                     # float32 overflow: ctypes makes it inf
        (scale, 4, [a, 2**1100], (), device, 256),                  # beyond a double
        (scale, 4, [a], (), device, 256),                           # too few arguments
        (scale, 4, [wp.zeros(4, dtype=int, device=device), 2.0], (), device, 256),  # wrong dtype
        (scale, 4, [wp.zeros((2, 2), dtype=float, device=device), 2.0], (), device, 256),  # wrong ndim
        (scale, 4, [None, 2.0], (), device, 256),                   # None for an array
        (scale, 4, [a, "2"], (), device, 256),                      # a string
        (scale, (4, 1), [a, 2.0], (), device, 256),                 # 2-d launch: fine, see below
        (scale, 4, (a, 2.0), [], device, 0),                        # block_dim 0
        (scale, -1, [a, 2.0], (), device, 256),                     # negative dim
        (scale, 2**31, [a, 2.0], (), device, 256),                  # dim too large
        (a, 4, [a, 2.0], (), device, 256),                          # not a kernel
    ]
    for k, args in enumerate(handed_back):
        launched = fast(*args)
        if k == 10:
            assert launched is True  # scale reads one index: any launch shape goes
            continue
        assert launched is False, k
    wp.synchronize()
    np.testing.assert_array_equal(a.numpy(), np.full(4, 2.0, dtype=np.float32))  # only the 2-d launch ran
    with pytest.raises(wp.LaunchError, match="argument 'a'"):
        wp.launch(scale, dim=4, inputs=[wp.zeros(4, dtype=int, device=device), 2.0], device=device)
    with pytest.raises(wp.LaunchError, match="argument 's'"):
        wp.launch(scale, dim=4, inputs=[a, "2"], device=device)
    wp.launch(scale, dim=4, inputs=[a, np.float32(0.5)], device=device)
    np.testing.assert_array_equal(a.numpy(), np.ones(4, dtype=np.float32))


def test_tid_arity_and_zero_sized_launches(device):
    @wp.kernel
    def fill2d(a: wp.array2d(dtype=int)):
        i, j = wp.tid()
        a[i, j] = i * 10 + j

    a = wp.zeros((3, 4), dtype=int, device=device)
    _warm(fill2d, (3, 4), [a], device=device)
    a.zero_()
    assert native_launch.fast(fill2d, (3, 4), [a], (), device, 64) is True
    np.testing.assert_array_equal(a.numpy(), np.add.outer(np.arange(3) * 10, np.arange(4)))
    assert native_launch.fast(fill2d, 12, [a], (), device, 64) is False  # wrong arity: Python raises
    with pytest.raises(wp.LaunchError, match="unpacks wp.tid"):
        wp.launch(fill2d, dim=12, inputs=[a], device=device)
    assert native_launch.fast(fill2d, (0, 4), [a], (), device, 64) is True  # nothing to run
    with pytest.raises(wp.LaunchError, match="argument 'a'"):  # still checked when nothing runs
        wp.launch(fill2d, dim=(0, 4), inputs=[wp.zeros(3, dtype=int, device=device)], device=device)


def test_argument_list_changed_while_packing(device):
    """Making an array's token runs Python; if another thread changes the argument list meanwhile,
    the launch is handed back, not read out of bounds."""
    from tilewarp.runtime import retired
    from tilewarp.runtime.array import array

    a = wp.array(np.ones(4, dtype=np.float32), device=device)
    _warm(scale, 4, [a, 1.0], device=device)
    ext = native_launch.extension()
    inputs = [wp.array(np.ones(4, dtype=np.float32), device=device), 2.0]  # no token yet

    def token_and_shrink(x):
        inputs.clear()
        return native_launch.array_token(x)

    ext.configure(array, token_and_shrink, retired.ids)
    try:
        assert native_launch.fast(scale, 4, inputs, (), device, 256) is False
    finally:
        ext.configure(array, native_launch.array_token, retired.ids)
    assert inputs == []


def test_device_spellings(device):
    """device=None (from the arrays), the alias, the Device object: one launcher serves them all."""
    dev = wp.get_device(device)
    a = wp.array(np.ones(4, dtype=np.float32), device=dev)
    _warm(scale, 4, [a, 1.0], device=device)
    for spelling in (None, device, dev, str(dev)):
        assert native_launch.fast(scale, 4, [a, 2.0], (), spelling, 256) is True, spelling
    assert native_launch.fast(scale, 4, [a, 2.0], (), "cuda:7", 256) is False
    np.testing.assert_array_equal(a.numpy(), np.full(4, 16.0, dtype=np.float32))
    if dev.is_cuda:  # "cuda": the current CUDA device
        with wp.ScopedDevice(dev):
            assert native_launch.fast(scale, 4, [a, 0.5], (), "cuda", 256) is True
        np.testing.assert_array_equal(a.numpy(), np.full(4, 8.0, dtype=np.float32))
    other = "cpu" if dev.is_cuda else None
    if other:  # arrays on the GPU, launch asked on the CPU: the general path's error
        with pytest.raises(wp.LaunchError, match="is on device"):
            wp.launch(scale, dim=4, inputs=[a, 2.0], device=other)


def test_default_device_follows_scoped_device(device):
    @wp.kernel
    def count(n: int):
        wp.tid()

    with wp.ScopedDevice(device):
        _warm(count, 1, [3])
        assert native_launch.fast(count, 1, [3], (), None, 256) is True
    other = "cpu" if wp.get_device(device).is_cuda else None
    if other:
        with wp.ScopedDevice(other):  # no launcher for this device yet: back to Python
            assert native_launch.fast(count, 1, [3], (), None, 256) is False


def test_array_token_follows_the_descriptor(device):
    a = wp.zeros(3, dtype=float, device=device)
    _warm(scale, 3, [a, 1.0], device=device)
    assert a._tw_token is not None and a._tw_token[1] == bytes(a.__ctype__())
    a.requires_grad = True  # a new descriptor (the grad pointer)
    assert a._tw_token is None
    assert native_launch.fast(scale, 3, [a, 1.0], (), device, 256) is True
    assert a._tw_token[1] == bytes(a.__ctype__()) and a.__ctype__().grad == a.grad.ptr
    a.grad = wp.zeros(3, dtype=float, device=device)
    assert a._tw_token is None


@pytest.mark.parametrize("switch", ["config", "set_module_options", "module_options_dict"])
def test_debug_mode_switch_is_seen(device, switch, monkeypatch):
    """A launch remembered in release mode must not skip debug checks once debug mode is on."""
    a = wp.zeros(4, dtype=float, device=device)
    _warm(index_at, 1, [a, 0], device=device)
    assert index_at._tw_fast
    if switch == "config":
        monkeypatch.setattr(wp.config, "mode", "debug")
    else:
        opts = wp.get_module_options(__name__)
        monkeypatch.setitem(opts, "mode", None)  # restored afterwards (an announced change too)
        if switch == "set_module_options":
            wp.set_module_options({"mode": "debug"}, __name__)
        else:
            opts["mode"] = "debug"
    assert index_at._tw_fast == []
    with pytest.raises(wp.KernelRuntimeError, match="out of bounds"):
        wp.launch(index_at, dim=1, inputs=[a, 9], device=device)


def test_verify_fp_switch_is_seen(device, monkeypatch):
    a = wp.array(np.ones(2, dtype=np.float32), device=device)
    _warm(scale, 2, [a, 1.0], device=device)
    monkeypatch.setattr(wp.config, "verify_fp", True)
    with pytest.raises(wp.KernelRuntimeError):
        wp.launch(scale, dim=2, inputs=[a, float("nan")], device=device)


def test_generic_kernels_take_the_general_path(device):
    a = wp.array(np.ones(3, dtype=np.float64), device=device)
    for _ in range(3):
        wp.launch(generic_add, dim=3, inputs=[a, wp.float64(1.5)], device=device)
    assert generic_add._tw_fast == []
    np.testing.assert_array_equal(a.numpy(), np.full(3, 5.5))


def test_threads_launch_concurrently(device):
    arrays = [wp.array(np.ones(1000, dtype=np.float32), device=device) for _ in range(4)]
    _warm(scale, 1000, [arrays[0], 1.0], device=device)
    errors = []

    def work(a):
        try:
            for _ in range(200):
                wp.launch(scale, dim=1000, inputs=[a, 1.01], device=device)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wp.synchronize()
    assert not errors, errors
    expected = np.float32(1.0)
    for _ in range(200):
        expected = np.float32(expected * np.float32(1.01))
    for a in arrays:
        np.testing.assert_allclose(a.numpy(), expected, rtol=1e-6)


def test_disabled_by_environment(tmp_path):
    code = ("import numpy as np, tilewarp as wp\n"
            "from tilewarp.runtime import native_launch\n"
            "@wp.kernel\n"
            "def k(a: wp.array(dtype=float)):\n"
            "    a[wp.tid()] = 2.0\n"
            "a = wp.zeros(3, dtype=float, device='cpu')\n"
            "for _ in range(3): wp.launch(k, dim=3, inputs=[a], device='cpu')\n"
            "print(native_launch.fast, k._tw_fast, a.numpy().tolist())\n")
    script = tmp_path / "no_native.py"  # a file: kernels need their source
    script.write_text(code)
    env = {**os.environ, "TILEWARP_FAST_LAUNCH": "0"}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[-2] == "None [] [2.0, 2.0, 2.0]"


def test_no_python_headers_means_no_extension(monkeypatch, tmp_path):
    import tilewarp.compile.host as host

    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"include": str(tmp_path)})
    monkeypatch.setattr(host, "installed", lambda stem, source: None)  # pip could not build it either
    assert native_launch._library() is None


def test_the_extension_pip_built_needs_no_headers(monkeypatch, tmp_path):
    import tilewarp.compile.host as host

    built = tmp_path / "_tw_launch.so"
    built.write_bytes(b"")
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"include": str(tmp_path)})
    monkeypatch.setattr(host, "installed", lambda stem, source: built if stem == "_tw_launch" else None)
    assert native_launch._library() == (str(built), None)


def test_an_installed_library_older_than_its_source_is_not_used_in_a_source_tree(monkeypatch, tmp_path):
    import importlib.machinery

    import tilewarp.compile.host as host

    package = tmp_path / "tilewarp"
    (package / "_native").mkdir(parents=True)
    source = tmp_path / "native" / "runtime" / "x.cpp"
    source.parent.mkdir(parents=True)
    source.write_text("// source")
    lib = package / f"_x{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    lib.write_bytes(b"")
    monkeypatch.setattr(host, "PACKAGE_RUNTIME_DIR", package / "_native")
    monkeypatch.setattr(host, "NATIVE_DIR", tmp_path / "native")  # a source tree: native/ beside the package
    os.utime(source, (1000, 1000))
    os.utime(lib, (2000, 2000))
    assert host.installed("x", source) == lib
    os.utime(source, (3000, 3000))  # edited after the install built it
    assert host.installed("x", source) is None
    monkeypatch.setattr(host, "NATIVE_DIR", package / "native")  # an installed wheel: sources do not change
    assert host.installed("x", source) == lib
