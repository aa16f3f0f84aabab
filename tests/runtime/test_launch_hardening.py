"""Array shapes and launch arguments that used to be taken silently wrong: sizes that overflow
(np.prod wrapping, int32 extents), non-integer extents, ints too wide for their parameter, float or
bool launch dims that hit the bounds memo, and verify_fp blaming a kernel for a NaN it did not write.
Scenarios that crashed (or allocated gigabytes) on the old code run in a child process."""

import inspect
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilewarp as wp
from tilewarp.runtime import native_launch

TIMEOUT = 240


def _run_child(tmp_path, body: str, max_memory: int = 0) -> subprocess.CompletedProcess:
    """Run ``body`` (after ``import tilewarp as wp``) in a fresh interpreter (kernels need a file);
    ``max_memory`` caps its address space, so the old code's gigabyte allocations fail fast."""
    head = "import numpy as np\nimport tilewarp as wp\nwp.config.quiet = True\n"
    if max_memory:
        head = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({max_memory}, {max_memory}))\n" + head
    script = tmp_path / "child.py"
    script.write_text(head + textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT,
                          cwd=str(tmp_path))


@pytest.fixture(autouse=True)
def _extension_settled():
    """Load (or build) the native launch extension first: if it loaded while a test had patched
    native_launch.fast to None, undoing the patch would switch it off for the tests after."""
    native_launch.extension()


# ---- array sizes: every extent below 2**31, the byte size within int64 --------------------------------


def test_overflowing_shape_is_refused_before_a_kernel_can_write_it(tmp_path):
    """(2**31, 2**31, 4) floats: np.prod wrapped to 0 bytes and a kernel writing it segfaulted."""
    out = _run_child(tmp_path, """
        @wp.kernel
        def poke(a: wp.array3d(dtype=float)):
            a[1, 1, 1] = 1.0

        for shape in [(2**31, 2**31, 4), (2**30, 2**30, 4)]:
            try:
                a = wp.zeros(shape, dtype=float, device="cpu")
            except ValueError as e:
                print("ValueError:", e)
            else:
                wp.launch(poke, dim=1, inputs=[a], device="cpu")
                print("launched", a.capacity)
        """)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("ValueError:") for line in lines), out.stdout
    assert "(2147483648, 2147483648, 4)" in lines[0] and "32-bit" in lines[0]
    assert "(1073741824, 1073741824, 4)" in lines[1] and str(2**64) in lines[1]  # the bytes it would need


def test_extent_of_2_31_is_refused_not_seen_negative(tmp_path):
    """wp.zeros(2**31, dtype=uint8) was accepted (2 GiB) and kernels saw shape[0] == -2**31."""
    out = _run_child(tmp_path, """
        @wp.kernel
        def extent(x: wp.array(dtype=wp.uint8), out: wp.array(dtype=wp.int64)):
            out[0] = wp.int64(x.shape[0])

        out = wp.zeros(1, dtype=wp.int64, device="cpu")
        try:
            x = wp.zeros(2**31, dtype=wp.uint8, device="cpu")
            wp.launch(extent, dim=1, inputs=[x, out], device="cpu")
            print("seen", out.numpy()[0])
        except ValueError as e:
            print("ValueError:", e)
        """)
    assert out.returncode == 0, out.stderr[-2000:]
    msg = out.stdout.strip()
    assert msg.startswith("ValueError:") and "(2147483648,)" in msg and "32-bit" in msg, msg


@wp.kernel
def read_extents(x: wp.array2d(dtype=wp.uint8), out: wp.array(dtype=wp.int64)):
    out[0] = wp.int64(x.shape[0])
    out[1] = wp.int64(x.shape[1])


def test_largest_extent_reaches_the_kernel_intact():
    """2**31 - 1 is the largest extent; a view over a small buffer (nothing read) shows it is passed
    through unchanged, along with a random second extent."""
    rng = np.random.default_rng(3)
    backing = wp.zeros(16, dtype=wp.uint8, device="cpu")
    other = int(rng.integers(1, 2**31))
    x = wp.array(ptr=backing.ptr, dtype=wp.uint8, shape=(2**31 - 1, other), strides=(0, 0), device="cpu")
    out = wp.zeros(2, dtype=wp.int64, device="cpu")
    wp.launch(read_extents, dim=1, inputs=[x, out], device="cpu")
    assert out.numpy().tolist() == [2**31 - 1, other]
    assert x.size == (2**31 - 1) * other  # exact, not wrapped through int64


def constructors(shape, dtype):
    """Every way an array gets its shape (the child processes below run this function's source)."""
    backing = wp.zeros(4, dtype=dtype, device="cpu")  # ptr views allocate nothing
    return {
        "zeros": lambda: wp.zeros(shape, dtype=dtype, device="cpu"),
        "empty": lambda: wp.empty(shape, dtype=dtype, device="cpu"),
        "ones": lambda: wp.ones(shape, dtype=dtype, device="cpu"),
        "full": lambda: wp.full(shape, 3, dtype=dtype, device="cpu"),
        "array(shape=)": lambda: wp.array(shape=shape, dtype=dtype, device="cpu"),
        "array(data, shape=)": lambda: wp.array(np.zeros(4), dtype=dtype, shape=shape, device="cpu"),
        "array(ptr=)": lambda: wp.array(ptr=backing.ptr, dtype=dtype, shape=shape, device="cpu"),
    }


@pytest.mark.parametrize("shape", [(2**31,), (3, 2**31 + 5), (2**40, 2, 2, 2), (2**30, 2**30, 2**30)])
def test_every_constructor_refuses_oversized_shapes(tmp_path, shape):
    out = _run_child(tmp_path, inspect.getsource(constructors) + f"""
for name, make in constructors({shape!r}, wp.uint8).items():
    try:
        a = make()
        print(name, "accepted", a.shape, a.capacity)
    except Exception as e:
        print(name, type(e).__name__ + ":", e)
""", max_memory=1536 << 20)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 7, out.stdout
    for line in lines:
        assert "ValueError:" in line and str(shape) in line, line


def test_total_size_limit_is_exact():
    """Byte sizes up to 2**63 - 1 are taken, one more is refused (views: nothing is allocated)."""
    backing = wp.zeros(4, dtype=wp.uint8, device="cpu")
    exact = (7 * 7 * 73 * 127, 337 * 92737, 649657)  # 2**63 - 1, each extent below 2**31
    a = wp.array(ptr=backing.ptr, dtype=wp.uint8, shape=exact, strides=(0, 0, 0), device="cpu")
    assert a.capacity == a.size == 2**63 - 1
    with pytest.raises(ValueError, match=rf"{re.escape(str(exact))} of int16 needs {2**64 - 2} bytes"):
        wp.array(ptr=backing.ptr, dtype=wp.int16, shape=exact, strides=(0, 0, 0), device="cpu")
    big = (2**31 - 1, 2**31 - 1, 2)
    assert wp.array(ptr=backing.ptr, dtype=wp.uint8, shape=big, device="cpu").capacity == (2**31 - 1) ** 2 * 2
    with pytest.raises(ValueError, match=r"\(2147483647, 2147483647, 2\) of float32 needs"):
        wp.array(ptr=backing.ptr, dtype=float, shape=big, device="cpu")


# ---- non-integer extents --------------------------------------------------------------------------


@pytest.mark.parametrize("shape, shown", [
    ((2.7, 3), "(2.7, 3)"), (2.5, "2.5"), ((True, 3), "(True, 3)"), (True, "True"), (("3",), "('3',)"),
    ((None, 3), "(None, 3)"), ("4", "'4'"), ((4, np.float32(2.0)), "(4, np.float32(2.0))")])
def test_non_integer_extents_are_type_errors(shape, shown):
    """wp.zeros((2.7, 3)) made a (2, 3) array; wp.zeros(2.5) failed with "'float' object is not
    iterable". Every constructor now raises a TypeError naming the shape."""
    for name, make in constructors(shape, float).items():
        with pytest.raises(TypeError, match="array shape") as e:
            make()
        assert shown in str(e.value), (name, str(e.value))


def test_integer_spellings_still_work():
    rng = np.random.default_rng(9)
    n, m = (int(x) for x in rng.integers(1, 9, 2))
    for shape in (n, np.int64(n), (n, m), [n, m], (np.int32(n), m), np.array([n, m]), (np.uint8(n),)):
        a = wp.zeros(shape, dtype=float, device="cpu")
        want = tuple(int(s) for s in np.atleast_1d(np.asarray(shape)))
        assert a.shape == want and type(a.shape[0]) is int and a.size == int(np.prod(want))


def test_exception_types_match_warp_where_warp_refuses():
    """Warp raises TypeError for a float shape and for None inside one; so does tilewarp."""
    warp = pytest.importorskip("warp")
    for shape in (2.5, (None, 3)):
        with pytest.raises(TypeError):
            warp.zeros(shape, dtype=float, device="cpu")
        with pytest.raises(TypeError):
            wp.zeros(shape, dtype=float, device="cpu")
    with pytest.raises(ValueError):  # extents >= 2**31: ValueError in both
        warp.array(ptr=wp.zeros(1, device="cpu").ptr, dtype=float, shape=(2**31,), device="cpu")
    with pytest.raises(ValueError):
        wp.array(ptr=wp.zeros(1, device="cpu").ptr, dtype=float, shape=(2**31,), device="cpu")


# ---- integer launch arguments ---------------------------------------------------------------------


@wp.kernel
def store_ints(out: wp.array(dtype=wp.int64), i: int, i8: wp.int8, u8: wp.uint8, u32: wp.uint32, i64: wp.int64,
               u64: wp.uint64, flag: bool):
    out[0] = wp.int64(i)
    out[1] = wp.int64(i8)
    out[2] = wp.int64(u8)
    out[3] = wp.int64(u32)
    out[4] = i64
    out[5] = wp.int64(u64)
    out[6] = wp.where(flag, wp.int64(1), wp.int64(0))


RANGES = {"i": ("int32", -2**31, 2**31 - 1), "i8": ("int8", -128, 127), "u8": ("uint8", -128, 255),
          "u32": ("uint32", -2**31, 2**32 - 1), "i64": ("int64", -2**63, 2**63 - 1),
          "u64": ("uint64", -2**63, 2**64 - 1)}
NAMES = list(RANGES) + ["flag"]


def _launch_ints(values, native: bool, monkeypatch, device="cpu"):
    out = wp.zeros(7, dtype=wp.int64, device=device)
    with monkeypatch.context() as m:
        if not native:
            m.setattr(native_launch, "fast", None)
        wp.launch(store_ints, dim=1, inputs=[out, *values], device=device)
    return out.numpy().tolist()


def _seen(v, name):
    """What ``wp.int64(x)`` gives in the kernel for parameter ``name`` holding the Python int ``v``:
    signed values as they are, unsigned ones as their bits (uint64 then reread as int64)."""
    if name[0] != "u":
        return v
    bits = int(RANGES[name][0][4:])
    v %= 2**bits
    return v - 2**64 if v >= 2**63 else v


@pytest.mark.parametrize("native", [False, True])
def test_in_range_ints_arrive_exactly(native, monkeypatch, device):
    """Random values across each range, ends included; negatives reach unsigned parameters as their
    two's complement bits (as in Warp: -1 is all ones)."""
    if native and native_launch.extension() is None:
        pytest.skip("no native launch extension (no Python headers or host compiler)")
    rng = np.random.default_rng(21 + native)
    for trial in range(8):
        values = []
        for name, (_, lo, hi) in RANGES.items():
            rand_neg, rand_pos = int(rng.integers(lo, 0)), int(rng.integers(0, hi // 2 + 1)) * 2 + int(rng.integers(2))
            values.append([lo, hi, rand_neg, min(rand_pos, hi)][(trial + int(rng.integers(4))) % 4])
        values.append([True, False, int(rng.integers(2, 2**40)), 0][trial % 4])  # bool: any int, by its truth
        got = _launch_ints(values, native, monkeypatch, device)
        assert got[:6] == [_seen(v, n) for n, v in zip(RANGES, values)], values
        assert got[6] == int(bool(values[6]))


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("name", list(RANGES))
def test_out_of_range_ints_raise_naming_argument_type_and_value(native, name, monkeypatch, device):
    """`v: int` given 2**40 + 7 arrived as 7; now a LaunchError names the argument, its type and the
    value, on the general path and when the native path (warmed up below) hands the launch back."""
    if native and native_launch.extension() is None:
        pytest.skip("no native launch extension (no Python headers or host compiler)")
    rng = np.random.default_rng(list(RANGES).index(name) + 40 * native)
    base = [1, 2, 3, 4, 5, 6, True]
    for _ in range(2):  # warm: the second launch remembers the native launcher
        _launch_ints(base, native, monkeypatch, device)
    assert store_ints._tw_fast or not native
    out = wp.zeros(7, dtype=wp.int64, device=device)
    type_name, lo, hi = RANGES[name]
    k = NAMES.index(name)
    for bad in (hi + 1, lo - 1, hi + int(rng.integers(1, 2**62)), lo - int(rng.integers(1, 2**62)), 2**40 + 7):
        if lo <= bad <= hi:
            continue
        values = list(base)
        values[k] = bad
        if native:  # handed back untouched (the general path then raises)
            assert native_launch.fast(store_ints, 1, [out, *values], (), device, 256) is False
            assert not out.numpy().any()
        with pytest.raises(wp.LaunchError) as e:
            _launch_ints(values, native, monkeypatch, device)
        msg = str(e.value)
        assert f"argument '{name}'" in msg and type_name in msg and str(bad) in msg, msg
        assert f"{lo} to {hi}" in msg, msg
        values[k] = np.int64(bad) if -2**63 <= bad < 2**63 else bad  # NumPy ints are checked too
        with pytest.raises(wp.LaunchError, match=f"argument '{name}'"):
            _launch_ints(values, native, monkeypatch, device)


def test_packers_refuse_what_launch_refuses():
    """pack_bytes (wp.launch's packer) and pack (the ctypes struct, record_cmd / debug) both raise."""
    dev = wp.get_device("cpu")
    packer = store_ints.compiled(dev).packer
    out = wp.zeros(7, dtype=wp.int64, device="cpu")
    values = [out, 2**31, 0, 0, 0, 0, 0, False]
    _, bounds = packer.bounds_bytes(1)
    with pytest.raises(wp.LaunchError, match=r"argument 'i' expects int32, got 2147483648"):
        packer.pack_bytes(values, dev, bounds)
    with pytest.raises(wp.LaunchError, match=r"argument 'i' expects int32, got 2147483648"):
        packer.pack(values, dev, packer.bounds(1))
    with pytest.raises(wp.LaunchError, match=r"argument 'i'"):
        wp.launch(store_ints, dim=1, inputs=values, device="cpu", record_cmd=True)


@wp.kernel
def scaled(a: wp.array(dtype=wp.float64), s: wp.float64):
    i = wp.tid()
    a[i] = wp.float64(i) * s


def test_int_too_large_for_a_float_parameter():
    a = wp.zeros(2, dtype=wp.float64, device="cpu")
    with pytest.raises(wp.LaunchError, match=r"argument 's' expects float64, got 1\d+, too large"):
        wp.launch(scaled, dim=2, inputs=[a, 2**1100], device="cpu")
    wp.launch(scaled, dim=2, inputs=[a, 2**60], device="cpu")
    assert a.numpy().tolist() == [0.0, float(2**60)]


# ---- launch dims: floats and bools always refused ------------------------------------------------


@wp.kernel
def ids(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i + 1


@wp.kernel
def ids2(out: wp.array2d(dtype=int)):
    i, j = wp.tid()
    out[i, j] = i * 100 + j


@pytest.mark.parametrize("native", [False, True])
def test_float_and_bool_dims_refused_even_after_int_launches(native, monkeypatch, device):
    """dim=8.0 was refused on the first launch but taken after dim=8 (8.0 == 8 as a memo key)."""
    rng = np.random.default_rng(13 + native)
    n, m = (int(x) for x in rng.integers(2, 9, 2))
    out, out2 = wp.zeros(n, dtype=int, device=device), wp.zeros((n, m), dtype=int, device=device)
    with monkeypatch.context() as mp:
        if not native:
            mp.setattr(native_launch, "fast", None)
        for dim, kernel, arr in [(float(n), ids, out), (True, ids, out), ((float(n), m), ids2, out2),
                                 ((n, True), ids2, out2), ((np.float64(n), m), ids2, out2)]:
            for _ in range(2):  # the first one with an int dim memoises its bounds (and warms native)
                good = int(dim) if not isinstance(dim, tuple) else tuple(int(d) for d in dim)
                arr.zero_()
                wp.launch(kernel, dim=good, inputs=[arr], device=device)
                assert arr.numpy().any()
                arr.zero_()
                if native:  # the extension hands it back, nothing launched
                    assert native_launch.fast(kernel, dim, [arr], (), device, 256) is False
                with pytest.raises(wp.LaunchError, match=r"dim must be a non-negative int") as e:
                    wp.launch(kernel, dim=dim, inputs=[arr], device=device)
                assert repr(dim) in str(e.value)
                assert not arr.numpy().any(), "nothing may run"
    wp.launch(ids, dim=np.int64(n), inputs=[out], device=device)  # NumPy ints are ints
    np.testing.assert_array_equal(out.numpy(), np.arange(1, n + 1))
    wp.launch(ids2, dim=(n, np.int32(m)), inputs=[out2], device=device)
    np.testing.assert_array_equal(out2.numpy(), np.add.outer(np.arange(n) * 100, np.arange(m)))


def test_bounds_memo_answers_the_same_every_time():
    rng = np.random.default_rng(23)
    n = int(rng.integers(2, 100))
    packer = ids.compiled(wp.get_device("cpu")).packer
    good, bad = [n, (n,), np.int64(n)], [float(n), True, (float(n),), (True,), (np.float32(n),), [float(n)]]
    for _ in range(2):
        for get in (packer.bounds, packer.bounds_bytes):
            for dim in good:
                size = get(dim)
                assert (size if type(size) is tuple else (size.size,))[0] == n
            for dim in bad:
                with pytest.raises(wp.LaunchError, match="dim must be"):
                    get(dim)
    assert all(type(k) is int or all(type(d) is int for d in k) for k in [*packer._bounds, *packer._bb])


# ---- verify_fp: only what the launch wrote --------------------------------------------------------


@wp.kernel
def double_it(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] * 2.0


@wp.kernel
def add_roots(x: wp.array(dtype=float), a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + wp.sqrt(x[i])


@pytest.fixture
def verify_fp(monkeypatch):
    monkeypatch.setattr(wp.config, "verify_fp", True)


def test_verify_fp_does_not_blame_nans_present_before_the_launch(verify_fp, device):
    rng = np.random.default_rng(17)
    n = 32
    data = rng.normal(size=n).astype(np.float32)
    old = rng.choice(n, 3, replace=False)
    data[old[:2]], data[old[2]] = np.nan, np.inf
    a = wp.array(data, dtype=float, device=device)
    wp.launch(double_it, dim=n, inputs=[a], device=device)  # NaN * 2 is still the old NaN
    got = a.numpy()
    fine = np.isfinite(data)
    np.testing.assert_array_equal(got[fine], data[fine] * 2)
    assert np.isnan(got[old[:2]]).all() and np.isinf(got[old[2]])


def test_verify_fp_reports_the_new_nan_not_the_old_one(verify_fp, device):
    rng = np.random.default_rng(19)
    n = 32
    old, new = int(rng.integers(0, n // 2)), int(rng.integers(n // 2, n))  # the old one comes first
    x = np.abs(rng.normal(size=n)).astype(np.float32) + 0.5
    x[new] = -1.0
    before = np.ones(n, dtype=np.float32)
    before[old] = np.nan
    a = wp.array(before, dtype=float, device=device)
    with pytest.raises(wp.KernelRuntimeError) as e:
        wp.launch(add_roots, dim=n, inputs=[wp.array(x, dtype=float, device=device), a], device=device)
    err = e.value
    assert err.kind == "nonfinite" and err.array == "a" and err.index == (new,), str(err)
    assert "1 non-finite value(s) already there before the launch" in str(err)
    got = a.numpy()
    keep = (np.arange(n) != new) & (np.arange(n) != old)
    np.testing.assert_allclose(got[keep], 1.0 + np.sqrt(x[keep]), rtol=1e-6)
    assert np.isnan(got[old]) and np.isnan(got[new])


def test_verify_fp_replayed_launch_checks_the_same_way(verify_fp, device):
    a = wp.array(np.array([np.nan, 1.0, 2.0], dtype=np.float32), dtype=float, device=device)
    cmd = wp.launch(double_it, dim=3, inputs=[a], device=device, record_cmd=True)
    cmd.launch()
    cmd.launch()
    assert a.numpy()[1:].tolist() == [4.0, 8.0] and np.isnan(a.numpy()[0])
