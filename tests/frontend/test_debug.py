"""Debug mode: bounds checks, asserts and ``wp.config.verify_fp``, raised after the launch.

Warp's debug builds abort the process on a failed check; tilewarp raises ``KernelRuntimeError``
naming the kernel, the array parameter, the index, the dimension's extent and the user's
file:line, and never touches memory outside the array. Release builds keep Warp's semantics
(asserts compiled out, checked differentially against Warp).
"""
import inspect
import os

import numpy as np
import pytest
from conftest import Arr, launch_both, load_both

import tilewarp as wp
from tilewarp.compile import cache, compile_cached
from tilewarp.compile.options import Options
from tilewarp.emit import emit_module
from tilewarp.emit.sites import SiteTable

THIS_FILE = os.path.abspath(__file__)


def line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    return start + next(k for k, text in enumerate(lines) if marker in text)


@pytest.fixture
def debug_mode():
    saved = wp.config.mode
    wp.config.mode = "debug"
    yield
    wp.config.mode = saved


@wp.kernel
def shifted_store(a: wp.array(dtype=float), n: int):
    i = wp.tid()
    a[i + n] = float(i) + 1.0  # <- store


@wp.kernel
def grid_read(a: wp.array2d(dtype=float), out: wp.array(dtype=float), j0: int):
    i = wp.tid()
    out[i] = a[i, i + j0]  # <- read


@wp.kernel
def view_read(a: wp.array2d(dtype=float), out: wp.array(dtype=float), j0: int):
    i = wp.tid()
    row = a[i]
    out[i] = row[i + j0]  # <- view read


@wp.kernel
def atomic_scatter(a: wp.array(dtype=int), n: int):
    i = wp.tid()
    wp.atomic_add(a, i * n, 1)  # <- atomic
    a[i - n] += 1  # <- aug


@wp.func
def get_twice(arr: wp.array(dtype=float), k: int):
    return arr[k] * 2.0  # <- func read


@wp.kernel
def via_func(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    out[i] = get_twice(a, i + n)


@wp.kernel
def checked(a: wp.array(dtype=float), limit: float):
    i = wp.tid()
    assert a[i] < limit  # <- assert
    a[i] = a[i] + 1.0


# ---- bounds ---------------------------------------------------------------------------------------


def run_expecting(kernel, dim, inputs, device="cpu"):
    with pytest.raises(wp.KernelRuntimeError) as info:
        wp.launch(kernel, dim=dim, inputs=inputs, device=device)
    return info.value


def test_store_out_of_bounds_names_array_index_and_line(debug_mode, device):
    big = wp.zeros(10, dtype=float, device=device)
    a = big[2:6]  # the surrounding elements catch any stray write
    e = run_expecting(shifted_store, 4, [a, 2], device)
    assert e.kind == "bounds" and e.kernel == "shifted_store" and e.array == "a"
    assert (e.index, e.dim, e.extent) in {(4, 0, 4), (5, 0, 4)}
    msg = str(e)
    assert msg.startswith(f"{THIS_FILE}:{line_of(shifted_store, '<- store')}:"), msg
    assert "array 'a'" in msg and "dimension 0" in msg and "size 4" in msg, msg
    np.testing.assert_array_equal(big.numpy(), [0, 0, 0, 0, 1, 2, 0, 0, 0, 0])  # in-bounds writes only


def test_negative_index_below_extent(debug_mode, device):
    a = wp.zeros(4, dtype=float, device=device)
    wp.launch(shifted_store, dim=4, inputs=[a, -4], device=device)  # -4..-1 wrap, as in Warp
    np.testing.assert_array_equal(a.numpy(), [1, 2, 3, 4])
    e = run_expecting(shifted_store, 4, [a, -5], device)
    assert e.index == -5 and e.extent == 4


def test_second_dimension_and_views(debug_mode, device, rng):
    a = wp.array(rng.random((3, 4), dtype=np.float32), device=device)
    out = wp.zeros(3, dtype=float, device=device)
    e = run_expecting(grid_read, 3, [a, out, 2], device)
    assert (e.index, e.dim, e.extent, e.array) == (4, 1, 4, "a")
    assert str(e).startswith(f"{THIS_FILE}:{line_of(grid_read, '<- read')}:")
    e = run_expecting(view_read, 3, [a, out, 2], device)
    assert (e.index, e.dim, e.extent, e.array) == (4, 1, 4, "a"), str(e)
    assert str(e).startswith(f"{THIS_FILE}:{line_of(view_read, '<- view read')}:")


def test_atomics_and_augmented_assignment(debug_mode, device):
    a = wp.zeros(4, dtype=int, device=device)
    e = run_expecting(atomic_scatter, 4, [a, 2], device)
    assert e.array == "a" and e.extent == 4
    assert str(e).startswith(f"{THIS_FILE}:{line_of(atomic_scatter, '<- atomic')}:")
    a = wp.zeros(4, dtype=int, device=device)
    wp.launch(atomic_scatter, dim=4, inputs=[a, 0], device=device)
    np.testing.assert_array_equal(a.numpy(), [5, 1, 1, 1])
    e = run_expecting(atomic_scatter, 1, [wp.zeros(4, dtype=int, device=device), 5], device)
    assert str(e).startswith(f"{THIS_FILE}:{line_of(atomic_scatter, '<- aug')}:"), str(e)


def test_access_inside_function_names_the_function(debug_mode, device):
    a = wp.zeros(4, dtype=float, device=device)
    out = wp.zeros(4, dtype=float, device=device)
    e = run_expecting(via_func, 4, [a, out, 1], device)
    assert e.array == "arr" and "get_twice()" in str(e) and e.kernel == "via_func"
    assert str(e).startswith(f"{THIS_FILE}:{line_of(get_twice, '<- func read')}:")


def test_error_slot_is_reset_between_launches(debug_mode, device):
    a = wp.zeros(4, dtype=float, device=device)
    run_expecting(shifted_store, 4, [a, 1], device)
    wp.launch(shifted_store, dim=4, inputs=[a, 0], device=device)  # clean launch: no stale error
    np.testing.assert_array_equal(a.numpy(), [1, 2, 3, 4])


def test_recorded_launch_is_checked(debug_mode, device):
    a = wp.zeros(4, dtype=float, device=device)
    cmd = wp.launch(shifted_store, dim=4, inputs=[a, 3], device=device, record_cmd=True)
    with pytest.raises(wp.KernelRuntimeError):
        cmd.launch()


def test_release_mode_does_not_check(device):
    assert wp.config.mode == "release"
    a = wp.zeros(4, dtype=float, device=device)
    wp.launch(checked, dim=4, inputs=[a, -1.0], device=device)  # failing assert compiled out
    np.testing.assert_array_equal(a.numpy(), [1, 1, 1, 1])


# ---- asserts ---------------------------------------------------------------------------------------


def test_assert_reports_file_and_line(debug_mode, device):
    a = wp.array(np.array([0.0, 1.0, 5.0, 2.0], dtype=np.float32), device=device)
    wp.launch(checked, dim=4, inputs=[a, 6.0], device=device)
    e = run_expecting(checked, 4, [a, 5.0], device)
    assert e.kind == "assert" and e.kernel == "checked"
    msg = str(e)
    assert msg.startswith(f"{THIS_FILE}:{line_of(checked, '<- assert')}:"), msg
    assert "assertion failed" in msg and "assert a[i] < limit" in msg


ASSERT_SRC = '''
import WP as wp


@wp.kernel
def asserting(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    assert a[i] > 100.0
    assert i < 0, "never true"
    out[i] = a[i] * 2.0
'''


def test_release_asserts_compiled_out_like_warp(rng):
    mods = load_both(ASSERT_SRC)
    a = rng.random(16, dtype=np.float32)
    launch_both(mods, "asserting", 16, [Arr(a), Arr(np.zeros(16, np.float32))])


# ---- modes, options, cache keys --------------------------------------------------------------------


@wp.kernel(module="unique", module_options={"mode": "debug"})
def unique_debug(a: wp.array(dtype=float), n: int):
    i = wp.tid()
    a[i + n] = 1.0


def test_kernel_module_options_debug(device):
    assert wp.config.mode == "release"
    e = run_expecting(unique_debug, 2, [wp.zeros(2, dtype=float, device=device), 1], device)
    assert e.index == 2


def test_module_options_validation_matches_warp():
    def f(a: wp.array(dtype=float)):
        pass

    with pytest.raises(ValueError, match="requires module=\"unique\""):
        wp.kernel(f, module_options={"mode": "debug"})
    with pytest.raises(ValueError, match="unknown module_options: 'bogus'"):
        wp.kernel(f, module="unique", module_options={"bogus": 1})
    with pytest.raises(TypeError, match="must be a dict"):
        wp.kernel(f, module="unique", module_options=["mode"])


def test_set_module_options_mode(device):
    name = shifted_store.module
    saved = dict(wp.get_module_options(name))
    try:
        wp.set_module_options({"mode": "debug"}, module=name)
        assert wp.get_module_options(name)["mode"] == "debug"
        run_expecting(shifted_store, 4, [wp.zeros(4, dtype=float, device=device), 1], device)
        wp.set_module_options({"mode": "release"}, module=name)
        wp.config.mode = "debug"  # the module's own option wins over the global one, as in Warp
        big = wp.zeros(8, dtype=float, device=device)
        wp.launch(shifted_store, dim=4, inputs=[big[:4], 1], device=device)  # unchecked: writes big[4]
        np.testing.assert_array_equal(big.numpy(), [0, 1, 2, 3, 4, 0, 0, 0])
    finally:
        wp.config.mode = "release"
        wp.get_module_options(name).clear()
        wp.get_module_options(name).update(saved)


def test_mode_switch_recompiles(device):
    a = wp.zeros(4, dtype=float, device=device)
    wp.launch(shifted_store, dim=1, inputs=[a, 0], device=device)  # release build first
    wp.config.mode = "debug"
    try:
        run_expecting(shifted_store, 4, [a, 1], device)
    finally:
        wp.config.mode = "release"


def test_debug_and_release_cache_keys_differ():
    fn = shifted_store.ir
    release, sites = emit_module(fn), SiteTable()
    debug = emit_module(fn, sites)
    assert release != debug and len(sites.sites) == 1
    key = lambda src, opts: cache.make_key(src, opts.key(), "identity")
    assert key(release, Options("cpu")) != key(release, Options("cpu", debug=True))
    assert key(debug, Options("cpu")) != key(debug, Options("cpu", debug=True))
    # sites are numbers: no file name or line number in the source, so moving the script keeps the key
    assert THIS_FILE not in debug and "test_debug" not in debug
    assert str(line_of(shifted_store, "<- store")) not in debug.replace("TW_LOC(0, 0)", "")


def test_debug_source_compiles_for_cuda_in_debug_mode():
    sites = SiteTable()
    source = emit_module(via_func.ir, sites)
    path = compile_cached(source, "via_func", Options("cuda", 90, debug=True))
    assert path.exists() and path.stat().st_size > 0


# ---- verify_fp ------------------------------------------------------------------------------------


@wp.kernel
def roots(x: wp.array(dtype=float), out: wp.array(dtype=float), scale: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.sqrt(x[i]) * scale[0]


@pytest.fixture
def verify_fp():
    wp.config.verify_fp = True
    yield
    wp.config.verify_fp = False


def test_verify_fp_names_kernel_and_array(verify_fp, device):
    x = wp.array(np.array([4.0, 1.0, -1.0, 9.0], dtype=np.float32), device=device)
    out = wp.zeros(4, dtype=float, device=device)
    scale = wp.array(np.array([1.0, np.inf], dtype=np.float32), device=device)  # read-only: not checked
    e = run_expecting(roots, 4, [x, out, scale], device)
    assert e.kind == "nonfinite" and e.kernel == "roots" and e.array == "out" and e.index == (2,)
    assert "nan" in str(e) and "verify_fp" in str(e)
    x.assign(np.array([4.0, 1.0, 0.0, 9.0], dtype=np.float32))
    wp.launch(roots, dim=4, inputs=[x, out, scale], device=device)
    np.testing.assert_array_equal(out.numpy(), [2, 1, 0, 3])


def test_verify_fp_follows_writes_through_functions(verify_fp, device):
    a = wp.array(np.array([1.0, np.inf, 3.0, 4.0], dtype=np.float32), device=device)
    out = wp.zeros(4, dtype=float, device=device)
    e = run_expecting(via_func, 4, [a, out, 0], device)
    assert e.array == "out" and e.index == (1,) and "inf" in str(e)
