"""``wp.utils`` (array_sum, array_inner, array_scan, radix_sort_pairs, segmented_sort_pairs,
runlength_encode, array_cast) against warp-lang's on the CPU: random inputs, sizes around the block
and chunk sizes, empty and one-element arrays, sort stability, and the exception types of bad calls.

Warp mishandles some strided inputs (it reads ``array_sum``/``array_inner``/``runlength_encode``
arguments as contiguous memory); those cases are checked against NumPy instead.
"""
import inspect

import numpy as np
import pytest

import tilewarp as wp
import tilewarp.utils  # noqa: F401  (wp.utils)

try:
    import warp

    warp.config.quiet = True
except ImportError:  # GPU machines without the oracle compare with tilewarp's own CPU results
    warp = None

SUM_SIZES = [0, 1, 255, 256, 257, 3000, 70000]  # 70000 > REDUCE_CHUNK**2: three levels
SCAN_SIZES = [0, 1, 1023, 1024, 1025, 5000, 1024 * 1024 + 5]  # the last: three levels
SORT_SIZES = [0, 1, 2, 1023, 1025, 5000]


def _pair(lib, data, dtype, device="cpu"):
    """``lib.array`` of ``data``, whose trailing dimensions are the dtype's components."""
    data = np.asarray(data)
    shape = data.shape[:data.ndim - len(getattr(getattr(wp, dtype), "_wp_shape_", ()))]
    return lib.array(data, dtype=getattr(lib, dtype), shape=shape, device=device)


def _close(got, want, scale, eps):
    """|got - want| <= eps * (1 + scale): float sums in another order round differently."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= eps * (1 + np.asarray(scale))), np.abs(got - want).max()


def _eps(dtype):
    return 1e-5 if "float64" not in dtype and not dtype.endswith("d") else 1e-12


@pytest.fixture
def ref(device):
    """The library whose CPU results are the reference: Warp, or tilewarp's CPU when a GPU is tested
    without warp-lang."""
    if warp is not None:
        return warp
    if not device.startswith("cuda"):
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    return wp


def z(lib, shape, dtype="int32"):
    """Zeros of ``dtype`` (a name) in ``lib``: the arguments of the error cases."""
    return lib.zeros(shape, dtype=getattr(lib, dtype))


def _ints(*values):
    """An int32 array argument, made once the library is known (as ``_zeros``)."""
    return lambda lib: lib.array(values, dtype=lib.int32)


def _zeros(shape, dtype="int32", step=1):
    return lambda lib: z(lib, shape, dtype)[::step]


def same_error(make):
    """``make(lib)`` raises in tilewarp an exception of the type Warp raises."""
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    with pytest.raises(Exception) as theirs:
        make(warp)
    with pytest.raises(type(theirs.value)):
        make(wp)
    return theirs.value


NAMES = ["array_sum", "array_inner", "array_scan", "radix_sort_pairs", "segmented_sort_pairs",
         "runlength_encode", "array_cast"]


@pytest.mark.parametrize("name", NAMES)
def test_signatures_match_warp(name):
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    ours, theirs = (inspect.signature(getattr(lib.utils, name)).parameters for lib in (wp, warp))
    assert [(p.name, p.default, p.kind) for p in ours.values()] == [(p.name, p.default, p.kind)
                                                                     for p in theirs.values()]


# ---- array_sum / array_inner -------------------------------------------------------------------------


SUM_DTYPES = [("float32", ()), ("float64", ()), ("vec3", (3,)), ("mat22d", (2, 2))]
INNER_DTYPES = SUM_DTYPES + [("quat", (4,))]


@pytest.mark.parametrize("n", SUM_SIZES)
@pytest.mark.parametrize("dtype,inner", SUM_DTYPES, ids=[d for d, _ in SUM_DTYPES])
def test_array_sum_whole(device, ref, rng, n, dtype, inner):
    data = rng.standard_normal((n, *inner))
    ours = wp.utils.array_sum(_pair(wp, data, dtype, device))
    theirs = ref.utils.array_sum(_pair(ref, data, dtype))
    assert type(ours) is type(theirs) and np.shape(ours) == np.shape(theirs)
    assert np.asarray(ours).dtype == np.asarray(theirs).dtype
    _close(ours, theirs, np.abs(data).sum(), _eps(dtype))
    for count in (0, n // 3, -2) if n else ():  # (Warp fails on empty arrays with a count)
        ours = wp.utils.array_sum(_pair(wp, data, dtype, device), value_count=count)
        theirs = ref.utils.array_sum(_pair(ref, data, dtype), value_count=count)
        _close(ours, theirs, np.abs(data).sum(), _eps(dtype))


@pytest.mark.parametrize("shape,axis,count", [((7, 300), 0, None), ((7, 300), 1, None), ((7, 300), -1, 100),
                                              ((3, 4, 5), 1, 2), ((2, 3, 4, 5), 3, None), ((0, 4), 0, None),
                                              ((0, 4), 1, None), ((600, 2), 0, 599), ((5,), 0, None)])
@pytest.mark.parametrize("dtype,inner", SUM_DTYPES[:3], ids=[d for d, _ in SUM_DTYPES[:3]])
def test_array_sum_axis(device, ref, rng, shape, axis, count, dtype, inner):
    data = rng.standard_normal((*shape, *inner))
    ours = wp.utils.array_sum(_pair(wp, data, dtype, device), axis=axis, value_count=count)
    theirs = ref.utils.array_sum(_pair(ref, data, dtype), axis=axis, value_count=count)
    assert ours.shape == theirs.shape and ours.dtype is getattr(wp, dtype)
    _close(ours.numpy(), theirs.numpy(), np.abs(data).sum(), _eps(dtype))
    out = wp.zeros(ours.shape, dtype=ours.dtype, device=device)  # into a given out array
    assert wp.utils.array_sum(_pair(wp, data, dtype, device), out=out, axis=axis, value_count=count) is out
    _close(out.numpy(), theirs.numpy(), np.abs(data).sum(), _eps(dtype))


@pytest.mark.parametrize("n", SUM_SIZES)
@pytest.mark.parametrize("dtype,inner", INNER_DTYPES, ids=[d for d, _ in INNER_DTYPES])
def test_array_inner_whole(device, ref, rng, n, dtype, inner):
    a, b = rng.standard_normal((2, n, *inner))
    ours = wp.utils.array_inner(_pair(wp, a, dtype, device), _pair(wp, b, dtype, device))
    theirs = ref.utils.array_inner(_pair(ref, a, dtype), _pair(ref, b, dtype))
    assert type(ours) is type(theirs)  # a NumPy scalar (a Python float for empty arrays, as in Warp)
    _close(ours, theirs, np.abs(a * b).sum(), _eps(dtype))
    out = wp.full(1, 5.0, dtype=wp.types.scalar_of(getattr(wp, dtype)), device=device)
    ours = wp.utils.array_inner(*(_pair(wp, x, dtype, device) for x in (a, b)), out=out, count=n // 2)
    theirs = ref.utils.array_inner(_pair(ref, a, dtype), _pair(ref, b, dtype), count=n // 2)
    assert ours is out
    _close(out.numpy()[0], theirs, np.abs(a * b).sum(), _eps(dtype))


@pytest.mark.parametrize("shape,axis,count", [((7, 300), 0, None), ((7, 300), 1, 37), ((3, 4, 5), -2, None),
                                              ((0, 3), 0, None), ((600, 2), 0, None)])
@pytest.mark.parametrize("dtype,inner", [("float32", ()), ("vec3", (3,))], ids=["float32", "vec3"])
def test_array_inner_axis(device, ref, rng, shape, axis, count, dtype, inner):
    a, b = rng.standard_normal((2, *shape, *inner))
    ours = wp.utils.array_inner(*(_pair(wp, x, dtype, device) for x in (a, b)), axis=axis, count=count)
    theirs = ref.utils.array_inner(_pair(ref, a, dtype), _pair(ref, b, dtype), axis=axis, count=count)
    assert ours.shape == theirs.shape and ours.dtype is wp.float32
    _close(ours.numpy(), theirs.numpy(), np.abs(a * b).sum(), 1e-5)


def test_reductions_of_strided_arrays(device, rng):
    """Views with strides (and negative ones, which Warp lacks): checked against NumPy, since Warp sums
    the memory after a strided array's first element as if it were contiguous."""
    data = rng.standard_normal((40, 30)).astype(np.float32)
    a = wp.array(data, device=device)
    for view, want in ((a[:, ::3], data[:, ::3]), (a[::-2, 1:], data[::-2, 1:]), (a[5], data[5]),
                       (a.transpose(), data.T), (a[:, 7], data[:, 7])):
        _close(wp.utils.array_sum(view), want.sum(), np.abs(want).sum(), 1e-5)
        _close(wp.utils.array_sum(view, value_count=17), want.ravel()[:17].sum(), np.abs(want).sum(), 1e-5)
        _close(wp.utils.array_inner(view, view), (want * want).sum(), (want * want).sum(), 1e-5)
        for axis in range(want.ndim):
            _close(wp.utils.array_sum(view, axis=axis).numpy(), want.sum(axis=axis, keepdims=True), 1e3, 1e-5)
    out = wp.zeros((30, 2), dtype=float, device=device)  # a strided out array
    wp.utils.array_sum(a.transpose(), axis=1, out=out[:, 1:])
    _close(out.numpy()[:, 1], data.sum(axis=0), 1e3, 1e-5)
    assert not out.numpy()[:, 0].any()


def test_reductions_with_cuda_chunking(monkeypatch, rng):
    """The interleaved chunks of CUDA reductions (neighbouring threads, neighbouring elements), on the CPU."""
    monkeypatch.setattr(wp.utils, "_chunk_steps", lambda device, groups: (1, groups))
    data = rng.standard_normal((3, 70000)).astype(np.float32)
    a = wp.array(data)
    scale = np.abs(data).sum()
    _close(wp.utils.array_sum(a, axis=1).numpy(), data.sum(axis=1, keepdims=True), scale, 1e-5)
    _close(wp.utils.array_sum(a[1], value_count=12345), data[1, :12345].sum(), scale, 1e-5)
    _close(wp.utils.array_inner(a, a, count=66000, axis=1).numpy(),
           (data[:, :66000] ** 2).sum(axis=1, keepdims=True), (data ** 2).sum(), 1e-5)


REDUCTION_ERRORS = {
    "int32": lambda lib: lib.utils.array_sum(z(lib, 3)),
    "float16": lambda lib: lib.utils.array_sum(z(lib, 3, "float16")),
    "vec3i": lambda lib: lib.utils.array_sum(z(lib, 3, "vec3i")),
    "axis": lambda lib: lib.utils.array_sum(z(lib, (3, 2), "float32"), axis=2),
    "negative axis": lambda lib: lib.utils.array_sum(z(lib, (3, 2), "float32"), axis=-3),
    "axis before dtype": lambda lib: lib.utils.array_sum(z(lib, 3), axis=1),
    "out dtype": lambda lib: lib.utils.array_sum(z(lib, 3, "float32"), out=z(lib, 1, "float64")),
    "out shape": lambda lib: lib.utils.array_sum(z(lib, 3, "float32"), out=z(lib, 2, "float32")),
    "out axis shape": lambda lib: lib.utils.array_sum(z(lib, (3, 4), "float32"), axis=0,
                                                      out=z(lib, 4, "float32")),
    "inner shapes": lambda lib: lib.utils.array_inner(z(lib, 3, "float32"), z(lib, 4, "float32")),
    "inner dtypes": lambda lib: lib.utils.array_inner(z(lib, 3, "float32"), z(lib, 3, "float64")),
    "inner int": lambda lib: lib.utils.array_inner(z(lib, 3), z(lib, 3)),
    "inner axis": lambda lib: lib.utils.array_inner(z(lib, 3, "float32"), z(lib, 3, "float32"), axis=1),
    "inner out dtype": lambda lib: lib.utils.array_inner(z(lib, 3, "vec3"), z(lib, 3, "vec3"),
                                                         out=z(lib, 1, "vec3")),
}


@pytest.mark.parametrize("case", REDUCTION_ERRORS)
def test_reduction_errors_match_warp(case):
    same_error(REDUCTION_ERRORS[case])


def test_counts_past_the_end_raise():
    """Warp reads out of bounds there; tilewarp refuses."""
    with pytest.raises(RuntimeError, match="exceeds"):
        wp.utils.array_sum(wp.zeros(3), value_count=4)
    with pytest.raises(RuntimeError, match="exceeds"):
        wp.utils.array_inner(wp.zeros((2, 3)), wp.zeros((2, 3)), count=4, axis=1)


# ---- array_scan --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", SCAN_SIZES)
@pytest.mark.parametrize("dtype", ["int32", "float32", "int64", "float64"])
def test_array_scan(device, ref, rng, n, dtype):
    if n > 5000 and dtype not in ("int32", "float32"):
        pytest.skip("one three-level scan per 4-byte type is enough")
    data = rng.integers(-1000, 1000, n) if dtype.startswith("int") else rng.standard_normal(n)
    for inclusive in (True, False):
        src = _pair(wp, data, dtype, device)
        out = wp.zeros(n, dtype=src.dtype, device=device)
        wp.utils.array_scan(src, out, inclusive)
        theirs = ref.zeros(n, dtype=getattr(ref, dtype), device="cpu")
        ref.utils.array_scan(_pair(ref, data, dtype), theirs, inclusive)
        if dtype.startswith("int"):
            np.testing.assert_array_equal(out.numpy(), theirs.numpy())
        else:  # blocked and sequential sums round differently
            scale = np.abs(data).cumsum() if n else 0
            _close(out.numpy(), theirs.numpy(), scale, 1e-4 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("dtype,inner", [("vec3i", (3,)), ("vec2d", (2,)), ("int32", (4,))])
def test_array_scan_layouts(device, ref, rng, dtype, inner):
    """Vectors (component-wise), 2-d arrays (row-major order), in place, strided 1-d views."""
    data = rng.integers(-50, 50, (2100, *inner))
    for inclusive in (True, False):
        theirs = ref.zeros(data.shape[:1] if dtype != "int32" else data.shape, dtype=getattr(ref, dtype), device="cpu")
        ref.utils.array_scan(_pair(ref, data, dtype), theirs, inclusive)
        ours = _pair(wp, data, dtype, device)
        wp.utils.array_scan(ours, ours, inclusive)  # in place
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    flat = rng.integers(-50, 50, 3000).astype(np.int32)
    src, out = wp.array(flat, device=device), wp.zeros(3000, dtype=int, device=device)
    wp.utils.array_scan(src[::2], out[::2], True)
    np.testing.assert_array_equal(out.numpy()[::2], np.cumsum(flat[::2]))
    assert not out.numpy()[1::2].any()


SCAN_ERRORS = {
    "sizes": lambda lib: lib.utils.array_scan(z(lib, 3), z(lib, 4)),
    "dtypes": lambda lib: lib.utils.array_scan(z(lib, 3), z(lib, 3, "float32")),
    "uint32": lambda lib: lib.utils.array_scan(z(lib, 3, "uint32"), z(lib, 3, "uint32")),
    "float16": lambda lib: lib.utils.array_scan(z(lib, 3, "float16"), z(lib, 3, "float16")),
    "mat22": lambda lib: lib.utils.array_scan(z(lib, 3, "mat22"), z(lib, 3, "mat22")),
    "quat": lambda lib: lib.utils.array_scan(z(lib, 3, "quat"), z(lib, 3, "quat")),
    "strided 2-d": lambda lib: lib.utils.array_scan(z(lib, (3, 4))[:, ::2], z(lib, (3, 2))),
}


@pytest.mark.parametrize("case", SCAN_ERRORS)
def test_scan_errors_match_warp(case):
    same_error(SCAN_ERRORS[case])


# ---- radix_sort_pairs --------------------------------------------------------------------------------


def _keys(rng, dtype, n):
    """Keys with many duplicates, negatives, and for floats signed zeros and infinities."""
    if dtype.startswith("float"):
        k = rng.integers(-40, 40, n) / 8.0
        specials = [-0.0, 0.0, np.inf, -np.inf, -1e-30, 1e30]
        k[rng.integers(0, n, 12)] = rng.choice(specials, 12)
        return k
    if dtype.startswith("uint"):
        top = 2 ** (32 if dtype == "uint32" else 64)
        return rng.choice(np.array([0, 1, 5, top // 2 - 1, top // 2, top - 1], dtype=np.uint64), n)
    return rng.integers(-30, 30, n) * (1 if dtype == "int32" else 2 ** 33 + 1)


def _sort_both(ref, keys, values, kdtype, vdtype, count, device, **bits):
    ours = [_pair(wp, keys, kdtype, device), _pair(wp, values, vdtype, device)]
    theirs = [_pair(ref, keys, kdtype), _pair(ref, values, vdtype)]
    wp.utils.radix_sort_pairs(*ours, count, **bits)
    ref.utils.radix_sort_pairs(*theirs, count, **bits)
    return [a.numpy() for a in ours], [a.numpy() for a in theirs]


@pytest.mark.parametrize("n", SORT_SIZES)
@pytest.mark.parametrize("kdtype", ["int32", "float32", "uint32", "int64", "float64", "uint64"])
def test_radix_sort_pairs(device, ref, rng, n, kdtype):
    keys = _keys(rng, kdtype, 2 * n + 3)
    values = np.arange(2 * n + 3)  # distinct values: the order of equal keys shows
    ours, theirs = _sort_both(ref, keys, values, kdtype, "int32", n, device)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o[:n], t[:n])  # (Warp uses [n, 2n) as scratch)
    bits, moved = ours[0][:n].view(f"u{ours[0].itemsize}"), ours[1][:n]
    assert (moved[1:] > moved[:-1])[bits[1:] == bits[:-1]].all()  # stable: equal keys keep their order
    np.testing.assert_array_equal(ours[1][n:], values[n:])  # the rest is left alone


@pytest.mark.parametrize("kdtype,n", [("int32", 3003), ("float64", 3003), ("uint64", 20011), ("float32", 9)])
def test_radix_sort_lane_path_on_the_cpu(monkeypatch, rng, kdtype, n):
    """The GPU's sort (a histogram of every pass, then one pass a launch: block ranks over rounds, 8-bit
    digits, look-back over the chunks before) run on the CPU, where a block is one task taking
    RADIX_ROUNDS elements: it must give the stable order too, with a last chunk that is not full."""
    import functools

    monkeypatch.setattr(wp.utils.radix, "_radix_passes", functools.partial(wp.utils.radix._radix_passes, lanes=True))
    keys = rng.integers(-50, 50, 2 * n).astype(kdtype)
    if kdtype == "uint64":  # spread over every byte (all eight passes) with many equal keys
        keys = rng.integers(0, 200, 2 * n).astype(np.uint64) * np.uint64(0x0101010101010101)
    k, v = wp.array(keys, device="cpu"), wp.array(np.arange(2 * n, dtype=np.int32), device="cpu")
    wp.utils.radix_sort_pairs(k, v, n)
    order = np.argsort(keys[:n], kind="stable")
    np.testing.assert_array_equal(v.numpy()[:n], order)
    np.testing.assert_array_equal(k.numpy()[:n], keys[:n][order])


@pytest.mark.parametrize("varying", [(0,), (7,), (1, 6), (0, 2, 3, 5), ()])
def test_lane_sort_passes_where_every_key_has_one_digit(monkeypatch, rng, varying):
    """Passes whose digit is the same for every key (constant bytes: the first pass, the last, every
    one) copy the keys and order as they are; the result is the stable order all the same."""
    import functools

    monkeypatch.setattr(wp.utils.radix, "_radix_passes", functools.partial(wp.utils.radix._radix_passes, lanes=True))
    n = 5003
    keys = np.full(n, 0x1122334455667788, np.uint64)
    for b in varying:  # byte b takes a few values, so equal keys abound
        keys = keys & ~np.uint64(0xFF << (8 * b)) | (rng.integers(0, 4, n).astype(np.uint64) << np.uint64(8 * b))
    k, order = wp.array(keys, device="cpu"), wp.empty(n, dtype=wp.int32, device="cpu")
    wp.utils.sort_order(k, order, 0, 64, uniform=True)
    np.testing.assert_array_equal(order.numpy(), np.argsort(keys, kind="stable"))
    np.testing.assert_array_equal(k.numpy(), np.sort(keys))


@pytest.mark.parametrize("bits", [1, 5, 8, 13, 21, 31])
def test_sort_order_lane_path_on_the_cpu_over_bit_ranges(monkeypatch, rng, bits):
    """sort_order over [0, bits): a last pass of fewer than 8 bits counts and places only its digits;
    the bits above the range (set here) are left out of the order."""
    import functools

    monkeypatch.setattr(wp.utils.radix, "_radix_passes", functools.partial(wp.utils.radix._radix_passes, lanes=True))
    n = 5000
    low = rng.integers(0, 1 << bits, n).astype(np.uint32)
    keys = low | (rng.integers(0, 2, n).astype(np.uint32) << np.uint32(31)) if bits < 31 else low
    k, order = wp.array(keys, device="cpu"), wp.empty(n, dtype=wp.int32, device="cpu")
    wp.utils.sort_order(k, order, 0, bits)
    np.testing.assert_array_equal(order.numpy(), np.argsort(low, kind="stable"))
    np.testing.assert_array_equal(k.numpy(), keys[np.argsort(low, kind="stable")])


@pytest.mark.parametrize("vdtype,inner", [("float64", ()), ("vec2h", (2,)), ("uint32", ())])
def test_radix_sort_value_types_and_nans(device, ref, rng, vdtype, inner):
    n = 700
    keys = rng.integers(-5, 5, 2 * n).astype(np.float32)
    keys[[3, 50, 400]] = [np.nan, -np.nan, np.nan]  # NaNs by sign bit: -NaN first, NaN last, as Warp
    values = rng.integers(0, 1000, (2 * n, *inner))
    ours, theirs = _sort_both(ref, keys, values, "float32", vdtype, n, device)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o[:n], t[:n])


@pytest.mark.parametrize("kdtype,begin,end", [("int32", 4, None), ("int32", 0, 4), ("int32", 28, 32),
                                              ("float32", 28, 32), ("int64", 32, 64), ("int32", 3, 3)])
def test_radix_sort_bit_ranges(device, ref, rng, kdtype, begin, end):
    n = 1500
    keys = rng.integers(-2 ** 31, 2 ** 31, 2 * n) if kdtype != "float32" else rng.standard_normal(2 * n) * 100
    bits = {"begin_bit": begin, "end_bit": end}
    ours, theirs = _sort_both(ref, keys, np.arange(2 * n), kdtype, "int32", n, device, **bits)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o[:n], t[:n])


SORT_ERRORS = {  # name: (keys, values, keyword arguments) of a sort of 3 pairs
    "small keys": (_zeros(5), _zeros(6), {}),
    "small values": (_zeros(6), _zeros(5), {}),
    "key dtype": (_zeros(6, "int16"), _zeros(6), {}),
    "float16 keys": (_zeros(6, "float16"), _zeros(6), {}),
    "value dtype": (_zeros(6), _zeros(6, "int16"), {}),
    "vec3 values": (_zeros(6), _zeros(6, "vec3"), {}),
    "strided keys": (_zeros(12, step=2), _zeros(6), {}),
    "strided values": (_zeros(6), _zeros(12, step=2), {}),
    "bits past width": (_zeros(6), _zeros(6), {"end_bit": 33}),
    "bits reversed": (_zeros(6), _zeros(6), {"begin_bit": 5, "end_bit": 3}),
    "negative bit": (_zeros(6), _zeros(6), {"begin_bit": -1}),
}


@pytest.mark.parametrize("case", SORT_ERRORS)
def test_sort_errors_match_warp(case):
    keys, values, bits = SORT_ERRORS[case]
    same_error(lambda lib: lib.utils.radix_sort_pairs(keys(lib), values(lib), 3, **bits))


def test_sort_trivial_counts():
    for lib in (wp, warp) if warp is not None else (wp,):  # count 0 (any bit range) or below: nothing
        keys, values = lib.array([3, 1, 2, 0], dtype=lib.int32), lib.array([0, 1, 2, 3], dtype=lib.int32)
        lib.utils.radix_sort_pairs(keys, values, 0, end_bit=40)
        lib.utils.radix_sort_pairs(keys, values, -1)
        assert keys.numpy().tolist() == [3, 1, 2, 0] and values.numpy().tolist() == [0, 1, 2, 3]


# ---- segmented_sort_pairs ----------------------------------------------------------------------------


SEGMENTS = {  # name: (count, starts, ends or None)
    "adjacent": (3000, [0, 1000, 1001, 1500, 2999, 3000], None),
    "with gaps": (3000, [10, 1100, 1500, 2000], [900, 1400, 1500, 3000]),
    "one": (2049, [0, 2049], None),
    "single element": (1, [0, 1], None),
    "none": (500, [250], None),
    "unordered": (2000, [1500, 0, 700], [2000, 500, 1500]),
}


@pytest.mark.parametrize("name", SEGMENTS)
@pytest.mark.parametrize("kdtype", ["int32", "float32"])
def test_segmented_sort_pairs(device, ref, rng, name, kdtype):
    count, starts, ends = SEGMENTS[name]
    keys = rng.integers(-20, 20, 2 * count + 1) / (4.0 if kdtype == "float32" else 1)
    values = np.arange(2 * count + 1)
    results = []
    for lib, dev in ((wp, device), (ref, "cpu")):
        arrays = [_pair(lib, keys, kdtype, dev), _pair(lib, values, "int32", dev)]
        bounds = [lib.array(np.array(s, dtype=np.int32), device=dev) for s in (starts, ends) if s is not None]
        lib.utils.segmented_sort_pairs(*arrays, count, *bounds)
        results.append([a.numpy()[:count] for a in arrays])
    for o, t in zip(*results):
        np.testing.assert_array_equal(o, t)


K, S = _zeros(8), _ints(0, 4)
SEGMENT_ERRORS = {  # name: the arguments (keys, values, count, starts[, ends]); callables take the library
    "count type": (K, K, 2.0, S),
    "negative count": (K, K, -1, S),
    "huge count": (K, K, 2 ** 31, S),
    "small storage": (K, K, 5, S),
    "float64 keys": (_zeros(8, "float64"), K, 4, S),
    "int64 keys": (_zeros(8, "int64"), K, 4, S),
    "float values": (K, _zeros(8, "float32"), 4, S),
    "int64 starts": (K, K, 4, _zeros(2, "int64")),
    "2-d starts": (K, K, 4, _zeros((2, 2))),
    "strided keys": (_zeros(16, step=2), K, 4, S),
    "strided starts": (K, K, 4, _zeros(4, step=2)),
    "ends size": (K, K, 4, S, _zeros(3)),
    "end past count": (K, K, 4, _ints(0, 5)),
    "reversed range": (K, K, 4, _ints(3, 1)),
    "negative start": (K, K, 4, _ints(-1, 2)),
}


@pytest.mark.parametrize("case", SEGMENT_ERRORS)
def test_segment_errors_match_warp(case):
    spec = SEGMENT_ERRORS[case]
    same_error(lambda lib: lib.utils.segmented_sort_pairs(*(a(lib) if callable(a) else a for a in spec)))


# ---- runlength_encode --------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 1023, 1025, 5000])
def test_runlength_encode(device, ref, rng, n):
    values = np.repeat(rng.integers(-3, 3, n), rng.integers(1, 4, n))[:n]
    for value_count in (None, n // 2):
        for with_count in (False, True):
            results = []
            for lib, dev in ((wp, device), (ref, "cpu")):
                outs = [lib.full(n + 2, 7, dtype=lib.int32, device=dev) for _ in range(2)]
                counter = lib.full(1, 9, dtype=lib.int32, device=dev) if with_count else None
                ret = lib.utils.runlength_encode(lib.array(values, dtype=lib.int32, device=dev), *outs,
                                                 run_count=counter, value_count=value_count)
                assert ret is counter if with_count else type(ret) is int
                results.append([o.numpy() for o in outs] + [ret.numpy() if with_count else ret])
            for o, t in zip(*results):
                np.testing.assert_array_equal(o, t)


def test_runlength_encode_strided(device):
    """Strided values and outputs (Warp reads and writes them as contiguous memory)."""
    values = wp.array([1, 9, 1, 9, 2, 9, 2, 9, 2, 9, 1, 9], dtype=wp.int32, device=device)
    run_values, run_lengths = wp.zeros(12, dtype=int, device=device), wp.zeros(6, dtype=int, device=device)
    assert wp.utils.runlength_encode(values[::2], run_values[::2], run_lengths) == 3
    assert run_values.numpy().tolist() == [1, 0, 2, 0, 1] + [0] * 7
    assert run_lengths.numpy().tolist() == [2, 3, 1, 0, 0, 0]


RLE_ERRORS = {  # name: the arguments (values, run_values, run_lengths[, run_count, value_count])
    "float values": (_zeros(3, "float32"), _zeros(3, "float32"), _zeros(3)),
    "int64 values": (_zeros(3, "int64"), _zeros(3, "int64"), _zeros(3)),
    "run value dtype": (_zeros(3), _zeros(3, "float32"), _zeros(3)),
    "run length dtype": (_zeros(3), _zeros(3), _zeros(3, "int64")),
    "run count dtype": (_zeros(3), _zeros(3), _zeros(3), _zeros(1, "float32")),
    "small outputs": (_zeros(3), _zeros(2), _zeros(3)),
    "negative count": (_zeros(3), _zeros(3), _zeros(3), None, -1),
}


@pytest.mark.parametrize("case", RLE_ERRORS)
def test_runlength_errors_match_warp(case):
    spec = RLE_ERRORS[case]
    same_error(lambda lib: lib.utils.runlength_encode(*(a(lib) if callable(a) else a for a in spec)))


# ---- array_cast --------------------------------------------------------------------------------------


CASTS = {  # name: (source dtype, data shape, destination dtype, destination shape, count)
    "float to int": ("float32", (1000,), "int32", (1000,), None),
    "partial": ("float32", (1000,), "int32", (1200,), 700),
    "int to half": ("int32", (300,), "float16", (300,), None),
    "2-d": ("float32", (20, 30), "int32", (20, 30), None),
    "vectors": ("vec3", (50, 3), "vec3d", (50,), None),
    "matrices": ("mat22", (40, 2, 2), "mat22d", (40,), 40),
    "vectors to scalars": ("vec3", (50, 3), "float64", (150,), None),
    "scalars to vectors": ("float32", (100,), "vec3d", (40,), 20),
    "vec3 to vec2": ("vec3", (40, 3), "vec2d", (60,), 7),
    "2-d to 1-d": ("float32", (6, 5), "int32", (31,), None),
    "to bool": ("int32", (64,), "bool", (64,), None),
    "same dtype": ("float32", (100,), "float32", (120,), 50),
}


@pytest.mark.parametrize("name", CASTS)
def test_array_cast(device, ref, rng, name):
    src, shape, dst, dst_shape, count = CASTS[name]
    data = rng.integers(-3, 3, shape) if src in ("int32",) else rng.standard_normal(shape) * 50
    results = []
    for lib, dev in ((wp, device), (ref, "cpu")):
        out = lib.zeros(dst_shape, dtype=getattr(lib, dst), device=dev)
        assert lib.utils.array_cast(_pair(lib, data, src, dev), out, count) is None
        results.append(out.numpy())
    np.testing.assert_array_equal(*results)


def test_array_cast_strided(device, rng):
    data = (rng.standard_normal((8, 10)) * 50).astype(np.float32)
    a = wp.array(data, device=device)
    out = wp.zeros((8, 10), dtype=wp.int32, device=device)
    wp.utils.array_cast(a[:, ::2], out[:, 1::2])
    np.testing.assert_array_equal(out.numpy()[:, 1::2], data[:, ::2].astype(np.int32))
    assert not out.numpy()[:, ::2].any()
    out = wp.zeros(10, dtype=wp.float64, device=device)
    wp.utils.array_cast(a[3, ::2], out, count=4)
    np.testing.assert_array_equal(out.numpy(), np.r_[data[3, ::2][:4], np.zeros(6)])


CAST_ERRORS = {
    "count too big": lambda lib: lib.utils.array_cast(z(lib, 3, "float32"), z(lib, 3), 4),
    "output too small": lambda lib: lib.utils.array_cast(z(lib, 3, "float32"), z(lib, 2)),
    "same dtype, output too small": lambda lib: lib.utils.array_cast(z(lib, 3), z(lib, 2)),
    "negative count": lambda lib: lib.utils.array_cast(z(lib, 3, "float32"), z(lib, 3), -1),
    "same dtype, negative count": lambda lib: lib.utils.array_cast(z(lib, 3), z(lib, 3), -1),
    "2-d shapes": lambda lib: lib.utils.array_cast(z(lib, (2, 3), "float32"), z(lib, (3, 2))),
    "2-d partial": lambda lib: lib.utils.array_cast(z(lib, (2, 3), "float32"), z(lib, (2, 3)), 3),
    "flat count too big": lambda lib: lib.utils.array_cast(z(lib, 4, "vec3"), z(lib, 12, "float32"), 5),
    "flat strided": lambda lib: lib.utils.array_cast(z(lib, (3, 4), "float32")[:, ::2], z(lib, 6)),
}


@pytest.mark.parametrize("case", CAST_ERRORS)
def test_cast_errors_match_warp(case):
    same_error(CAST_ERRORS[case])
