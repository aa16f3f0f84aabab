"""``wp.array`` and the creation functions, checked against warp-lang on the CPU.

Most tests run one function twice, once with ``tilewarp`` and once with ``warp`` as ``wp``, and
compare what comes out: shape, strides, element size, numpy contents and dtype.
"""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

import tilewarp as tw
from tilewarp import types as T

try:
    import warp

    warp.config.quiet = True
except ImportError:  # the oracle comparisons skip themselves
    warp = None

DEVICE = "cpu"


@pytest.fixture(scope="module", autouse=True)
def _kernel_caches(tmp_path_factory):
    """Kernel caches of this module's own (tilewarp's and Warp's), outside ~/.cache."""
    folder = tmp_path_factory.mktemp("array-kernels")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tw.config, "kernel_cache_dir", str(folder / "tilewarp"))
        mp.setenv("TILEWARP_CACHE_DIR", str(folder / "tilewarp"))
        if warp is not None:
            mp.setattr(warp.config, "kernel_cache_dir", str(folder / "warp"))
        previous = tw.get_device()
        tw.set_device("cpu")  # these tests are about the CPU unless they name a device
        try:
            yield
        finally:
            tw.set_device(previous)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


needs_warp = pytest.mark.skipif(warp is None, reason="warp-lang (the behavioural oracle) is not installed")


def both(fn):
    """``fn(wp)`` with tilewarp and with warp; exceptions are returned, not raised."""
    out = []
    for lib in (tw, warp):
        try:
            out.append(fn(lib))
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(e)
    return out


def summary(a):
    """What two arrays of two libraries must agree on."""
    arr = a.numpy()
    return {"shape": tuple(a.shape), "ndim": a.ndim, "size": a.size, "strides": tuple(a.strides),
            "itemsize": T.type_size(a.dtype) if isinstance(a, tw.array) else warp.types.type_size_in_bytes(a.dtype),
            "np_shape": arr.shape, "np_dtype": arr.dtype, "len": len(a) if a.ndim else None,
            "contiguous": a.is_contiguous}


def assert_same(got, want):
    """Compare a tilewarp result with Warp's (arrays, numpy data, plain values, or both raising)."""
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"Warp raised {want!r}, tilewarp returned {got!r}"
        return
    assert not isinstance(got, Exception), f"tilewarp raised {got!r}, Warp returned {want!r}"
    if isinstance(want, warp.array):
        assert isinstance(got, tw.array)
        assert summary(got) == summary(want)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert type_name(got.dtype) == type_name(want.dtype)
    elif isinstance(want, (tuple, list)) and want and isinstance(want[0], (warp.array, np.ndarray)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    elif isinstance(want, np.ndarray):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    else:
        assert got == want


def type_name(t) -> str:
    """A dtype's identity in either library: the scalar name, or kind + shape + scalar for vectors and
    matrices (Warp names them vec3f / mat33f, or vec_t / mat_t when made on the fly)."""
    if isinstance(t, type) and issubclass(t, (T.VectorBase, T.MatrixBase)):
        kind = "vec" if issubclass(t, T.VectorBase) else "mat"
        return f"{kind}{t._wp_shape_}{t._wp_scalar_type_.__name__}"
    shape = getattr(t, "_shape_", None)
    if shape is not None and hasattr(t, "_wp_scalar_type_"):  # a Warp vector/matrix type
        kind = "vec" if len(shape) == 1 else "mat"
        return f"{kind}{tuple(shape)}{t._wp_scalar_type_.__name__}"
    return t.__name__


def compare(fn):
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    got, want = both(fn)
    assert_same(got, want)
    return got


# ---- construction from data ------------------------------------------------------------------------

SCALARS = ["float32", "float64", "int32", "int64", "uint32", "bool", "float16", "int8", "uint8", "int16",
           "uint16", "uint64"]


@needs_warp
@pytest.mark.parametrize("name", SCALARS)
def test_from_numpy_infers_dtype(name, rng):
    data = (rng.random(7) * 100).astype(np.dtype(name)) if name != "bool" else rng.random(7) > 0.5
    got = compare(lambda wp: wp.array(data, device=DEVICE))
    assert got.dtype is getattr(tw, name)


@needs_warp
@pytest.mark.parametrize("name", SCALARS)
def test_explicit_dtype_converts(name):
    data = np.array([0.0, 1.0, 2.75, 3.0, 100.0])
    got = compare(lambda wp: wp.array(data, dtype=getattr(wp, name), device=DEVICE))
    assert got.dtype is getattr(tw, name)


@needs_warp
@pytest.mark.parametrize("data", [[1.0, 2.0, 3.5], [1, 2, 3], [True, False], [1, 2.5], [[1.0, 2.0], [3.0, 4.0]],
                                  [[1, 2, 3], [4, 5, 6]], [np.float32(1), np.float32(2)]],
                         ids=["floats", "ints", "bools", "mixed", "nested-floats", "nested-ints", "np-scalars"])
def test_from_list_infers_like_numpy(data):
    """Python floats -> float64, ints -> int64, as in Warp (numpy's inference)."""
    compare(lambda wp: wp.array(data, device=DEVICE))


@needs_warp
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint32", "bool", "float16"])
def test_from_list_with_dtype(dtype):
    compare(lambda wp: wp.array([0, 1, 2, 3], dtype=getattr(wp, dtype), device=DEVICE))


@needs_warp
@pytest.mark.parametrize("py, name", [(float, "float32"), (int, "int32"), (bool, "bool")])
def test_python_type_as_dtype(py, name):
    got = compare(lambda wp: wp.array([1, 0, 1], dtype=py, device=DEVICE))
    assert got.dtype is getattr(tw, name)


@needs_warp
@pytest.mark.parametrize("data_shape", [(4, 3), (12,), (2, 2, 3), (2, 6)])
def test_vec3_from_numpy(data_shape):
    data = np.arange(np.prod(data_shape), dtype=np.float32).reshape(data_shape)
    got = compare(lambda wp: wp.array(data, dtype=wp.vec3, device=DEVICE))
    assert got.dtype is tw.vec3
    assert got.numpy().shape[-1] == 3


@needs_warp
@pytest.mark.parametrize("data_shape", [(5,), (3, 2), (2, 4)])
def test_vec3_from_incompatible_numpy_raises(data_shape):
    data = np.zeros(data_shape, dtype=np.float32)
    got, want = both(lambda wp: wp.array(data, dtype=wp.vec3, device=DEVICE))
    assert isinstance(got, ValueError) and isinstance(want, Exception)
    assert "vec3" in str(got)


@needs_warp
def test_vec3_from_lists_and_values():
    compare(lambda wp: wp.array([[1, 2, 3], [4, 5, 6]], dtype=wp.vec3, device=DEVICE))
    compare(lambda wp: wp.array([(1, 2, 3)], dtype=wp.vec3, device=DEVICE))
    compare(lambda wp: wp.array([wp.vec3(1, 2, 3), wp.vec3(4, 5, 6)], dtype=wp.vec3, device=DEVICE))
    compare(lambda wp: wp.array(np.ones((3, 3)), dtype=wp.vec3d, device=DEVICE))
    compare(lambda wp: wp.array(np.ones((3, 3)), dtype=wp.vec3h, device=DEVICE))
    compare(lambda wp: wp.array(np.ones((3, 3), dtype=np.int32), dtype=wp.vec3i, device=DEVICE))
    compare(lambda wp: wp.array(np.ones((3, 4)), dtype=wp.vec4, device=DEVICE))
    compare(lambda wp: wp.array(np.ones((3, 2)), dtype=wp.vec2, device=DEVICE))


@needs_warp
@pytest.mark.parametrize("data_shape", [(4, 3, 3), (2, 9), (18,), (2, 2, 3, 3)])
def test_mat33_from_numpy(data_shape):
    data = np.arange(np.prod(data_shape), dtype=np.float32).reshape(data_shape)
    got = compare(lambda wp: wp.array(data, dtype=wp.mat33, device=DEVICE))
    assert got.dtype is tw.mat33 and got.numpy().shape[-2:] == (3, 3)


@needs_warp
def test_matrix_element_layout_is_row_major():
    data = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    got = compare(lambda wp: wp.array(data, dtype=wp.mat22, device=DEVICE))
    assert got.list()[1][0, 1] == 5.0 and got.list()[1][1, 0] == 6.0


@needs_warp
@pytest.mark.parametrize("shape", [(6,), (2, 3), (3, 2), (1, 2, 3), (1, 1, 2, 3)])
def test_shape_argument_reshapes(shape):
    data = np.arange(6, dtype=np.float32)
    compare(lambda wp: wp.array(data, dtype=wp.float32, shape=shape, device=DEVICE))


@needs_warp
def test_shape_argument_mismatch_raises():
    got, want = both(lambda wp: wp.array(np.ones(5), dtype=wp.float32, shape=(2, 3), device=DEVICE))
    assert isinstance(got, ValueError) and isinstance(want, Exception)


@needs_warp
@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_ndim_1_to_4(ndim, rng):
    data = rng.random((2, 3, 4, 5)[:ndim]).astype(np.float32)
    got = compare(lambda wp: wp.array(data, device=DEVICE))
    assert got.ndim == ndim


@needs_warp
def test_five_dimensions_rejected():
    got, want = both(lambda wp: wp.zeros((1, 2, 1, 2, 1), dtype=wp.float32, device=DEVICE))
    assert isinstance(got, ValueError) and isinstance(want, Exception)
    got, want = both(lambda wp: wp.array(np.zeros((1, 2, 1, 2, 1), dtype=np.float32), device=DEVICE))
    assert isinstance(got, ValueError) and isinstance(want, Exception)


@needs_warp
def test_from_other_array_copies():
    def make(wp):
        a = wp.array(np.arange(4, dtype=np.float32), device=DEVICE)
        b = wp.array(a)
        b.numpy()[0] = 100.0
        return [a, b, wp.array(a, dtype=wp.float64)]

    got = compare(make)
    assert got[0].ptr != got[1].ptr


@needs_warp
def test_from_other_vector_array():
    compare(lambda wp: wp.array(wp.array(np.ones((2, 3), dtype=np.float32), device=DEVICE), dtype=wp.vec3))


@needs_warp
def test_empty_data():
    compare(lambda wp: wp.array([], dtype=wp.float32, device=DEVICE))
    compare(lambda wp: wp.array(np.zeros((0, 3), dtype=np.float32), dtype=wp.vec3, device=DEVICE))


# ---- creation functions -------------------------------------------------------------------------------


@needs_warp
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint32", "bool", "float16", "vec3",
                                   "mat33"])
@pytest.mark.parametrize("fn", ["zeros", "ones"])
def test_zeros_ones(fn, dtype):
    compare(lambda wp: getattr(wp, fn)((2, 3), dtype=getattr(wp, dtype), device=DEVICE))
    compare(lambda wp: getattr(wp, fn)(4, dtype=getattr(wp, dtype), device=DEVICE))


@needs_warp
def test_default_dtype_is_float32():
    got = compare(lambda wp: wp.zeros(3, device=DEVICE))
    assert got.dtype is tw.float32
    compare(lambda wp: wp.ones((2, 2), device=DEVICE))


@needs_warp
def test_empty_has_shape_and_dtype():
    def make(wp):
        e = wp.empty((2, 3), dtype=wp.vec3, device=DEVICE)
        return (e.shape, e.strides, e.numpy().shape, e.size)

    got, want = both(make)
    assert got == want
    got, want = both(lambda wp: (wp.empty(shape=0, dtype=wp.int64).shape, wp.empty(dtype=wp.int64).shape))
    assert got == want


@needs_warp
@pytest.mark.parametrize("value, dtype", [(2.5, None), (3, None), (True, None), (2.5, "float64"), (7, "int64"),
                                          (1.5, "float16"), ((1, 2, 3), "vec3"), (4.0, "vec3"), (2, "uint32")])
def test_full(value, dtype):
    def make(wp):
        kw = {} if dtype is None else {"dtype": getattr(wp, dtype)}
        return wp.full((2, 3), value, device=DEVICE, **kw)

    compare(make)


@needs_warp
def test_full_with_typed_values():
    compare(lambda wp: wp.full(3, wp.vec3(1, 2, 3), device=DEVICE))
    compare(lambda wp: wp.full(2, wp.mat22(1, 2, 3, 4), device=DEVICE))
    compare(lambda wp: wp.full((2, 2), 3.0, dtype=wp.float64, device=DEVICE))


@needs_warp
@pytest.mark.parametrize("dtype", ["float32", "int32", "vec3", "mat33", "float16"])
def test_like_functions(dtype):
    def make(wp):
        src = wp.ones((2, 3), dtype=getattr(wp, dtype), device=DEVICE)
        return [wp.zeros_like(src), wp.ones_like(src), wp.full_like(src, 2), wp.empty_like(src).zero_() or
                wp.zeros_like(src)]

    compare(make)


@needs_warp
def test_like_functions_keep_requires_grad():
    def make(wp):
        src = wp.ones(3, dtype=wp.float32, requires_grad=True, device=DEVICE)
        return [wp.zeros_like(src).requires_grad, wp.ones_like(src).grad is not None,
                wp.zeros_like(src, requires_grad=False).requires_grad, wp.clone(src).requires_grad]

    got, want = both(make)
    assert got == want


@needs_warp
def test_full_like_with_vector():
    compare(lambda wp: wp.full_like(wp.zeros(2, dtype=wp.vec3, device=DEVICE), wp.vec3(1, 2, 3)))
    compare(lambda wp: wp.full_like(wp.zeros(2, dtype=wp.vec3, device=DEVICE), 7.0))


@needs_warp
def test_clone_is_a_contiguous_copy():
    def make(wp):
        a = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), device=DEVICE)
        c = wp.clone(a)
        col = wp.clone(a[:, 1])
        c.fill_(0.0)
        return [a, c, col]

    got = compare(make)
    assert got[2].is_contiguous and got[2].strides == (4,)


@needs_warp
def test_clone_vectors_and_grad():
    compare(lambda wp: wp.clone(wp.array(np.arange(9, dtype=np.float32).reshape(3, 3), dtype=wp.vec3,
                                         device=DEVICE)))


@needs_warp
@pytest.mark.parametrize("dest_offset, src_offset, count", [(0, 0, 0), (2, 1, 3), (0, 4, 1), (5, 0, 1), (1, 1, 0)])
def test_copy_with_offsets(dest_offset, src_offset, count):
    def make(wp):
        dest = wp.zeros(6, dtype=wp.float32, device=DEVICE)
        src = wp.array(np.arange(1, 6, dtype=np.float32), device=DEVICE)
        if count == 0 and dest_offset == src_offset == 0:
            dest = wp.zeros(5, dtype=wp.float32, device=DEVICE)
        wp.copy(dest, src, dest_offset=dest_offset, src_offset=src_offset, count=count or (5 - src_offset if
                                                                                          dest_offset else 0))
        return dest

    compare(make)


@needs_warp
def test_copy_vectors_with_offsets():
    def make(wp):
        v = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, device=DEVICE)
        d = wp.zeros(4, dtype=wp.vec3, device=DEVICE)
        wp.copy(d, v, dest_offset=1, src_offset=2, count=2)
        return d

    compare(make)


@needs_warp
def test_copy_between_shapes_and_strides():
    def make(wp):
        src = wp.array(np.arange(6, dtype=np.float32).reshape(2, 3), device=DEVICE)
        flat = wp.zeros(6, dtype=wp.float32, device=DEVICE)
        wp.copy(flat, src)
        col = wp.zeros(2, dtype=wp.float32, device=DEVICE)
        wp.copy(col, src[:, 1])
        into_view = wp.zeros((2, 3), dtype=wp.float32, device=DEVICE)
        wp.copy(into_view[:, 2], col)
        return [flat, col, into_view]

    compare(make)


def test_copy_errors():
    with pytest.raises(tw.LaunchError, match="elements"):
        tw.copy(tw.zeros(3), tw.zeros(4))
    with pytest.raises(tw.LaunchError, match="out of bounds"):
        tw.copy(tw.zeros(3), tw.zeros(4), count=4)
    with pytest.raises(tw.LaunchError, match="out of bounds"):
        tw.copy(tw.zeros(3), tw.zeros(4), src_offset=3, count=2)
    with pytest.raises(tw.LaunchError, match="int32"):
        tw.copy(tw.zeros(3), tw.zeros(3, dtype=tw.int32))


@needs_warp
@pytest.mark.parametrize("shape, dtype", [((4,), "float32"), ((4, 3), "float64"), ((2, 3), "int32"),
                                          ((2, 3, 3), "float32")])
def test_from_numpy_function(shape, dtype, rng):
    """Without a dtype, 2-d data becomes vectors and 3-d data matrices (Warp's rule)."""
    data = rng.random(shape).astype(dtype)
    got = compare(lambda wp: wp.from_numpy(data, device=DEVICE))
    if len(shape) == 2:
        assert T.is_vector(got.dtype) and got.dtype._length_ == shape[1]
    if len(shape) == 3:
        assert T.is_matrix(got.dtype) and got.dtype._wp_shape_ == shape[1:]
    assert tw.from_numpy(np.zeros((2, 3), dtype=np.float32)).dtype is tw.vec3
    assert tw.from_numpy(np.zeros((2, 3, 3), dtype=np.float32)).dtype is tw.mat33


@needs_warp
def test_from_numpy_with_dtype():
    compare(lambda wp: wp.from_numpy(np.ones((2, 4), dtype=np.float32), dtype=wp.float32, device=DEVICE))
    compare(lambda wp: wp.from_numpy(np.ones((2, 3), dtype=np.float32), dtype=wp.vec3, device=DEVICE))
    compare(lambda wp: wp.from_numpy(np.ones((2, 3, 3), dtype=np.float32), shape=(2,), device=DEVICE))


# ---- host access ------------------------------------------------------------------------------------


@needs_warp
@pytest.mark.parametrize("shape, dtype, np_shape", [((5,), "vec3", (5, 3)), ((2, 4), "vec3", (2, 4, 3)),
                                                    ((5,), "mat33", (5, 3, 3)), ((3,), "vec2d", (3, 2)),
                                                    ((3,), "vec4h", (3, 4)), ((3,), "mat22", (3, 2, 2))])
def test_numpy_shape_of_composite_arrays(shape, dtype, np_shape):
    got = compare(lambda wp: wp.zeros(shape, dtype=getattr(wp, dtype), device=DEVICE))
    assert got.numpy().shape == np_shape


def test_numpy_shares_memory_on_cpu():
    a = tw.zeros(4, dtype=tw.vec3)
    view = a.numpy()
    view[1] = (1, 2, 3)
    assert a.numpy()[1].tolist() == [1, 2, 3]
    assert np.shares_memory(view, a.numpy())
    assert np.asarray(a).shape == (4, 3)


@needs_warp
def test_list():
    got, want = both(lambda wp: wp.array([1, 2, 3], dtype=wp.int32, device=DEVICE).list())
    assert got == want
    got, want = both(lambda wp: [list(v) for v in wp.array(np.ones((2, 3)), dtype=wp.vec3, device=DEVICE).list()])
    assert got == want
    assert isinstance(tw.zeros(2, dtype=tw.vec3).list()[0], tw.vec3)


@needs_warp
@pytest.mark.parametrize("src", ["numpy", "list", "array", "vec-numpy"])
def test_assign(src):
    def make(wp):
        if src == "vec-numpy":
            a = wp.zeros(3, dtype=wp.vec3, device=DEVICE)
            a.assign(np.arange(9, dtype=np.float32).reshape(3, 3))
            return a
        a = wp.zeros(4, dtype=wp.float32, device=DEVICE)
        value = {"numpy": np.arange(4, dtype=np.float32), "list": [4.0, 3.0, 2.0, 1.0],
                 "array": wp.array(np.ones(4, dtype=np.float32) * 5, device=DEVICE)}[src]
        a.assign(value)
        return a

    compare(make)


@needs_warp
def test_assign_into_views():
    def make(wp):
        a = wp.zeros(6, dtype=wp.float32, device=DEVICE)
        a[1::2].assign([7.0, 8.0, 9.0])
        m = wp.zeros((3, 4), dtype=wp.float32, device=DEVICE)
        m[:, 1].assign(np.array([1.0, 2.0, 3.0], dtype=np.float32))
        return [a, m]

    compare(make)


@needs_warp
@pytest.mark.parametrize("dtype, value", [("float32", 2.5), ("float64", -1.25), ("int32", 7), ("int64", -3),
                                          ("uint32", 9), ("bool", True), ("float16", 0.5), ("vec3", (1, 2, 3)),
                                          ("vec3", 2.0), ("mat22", (1, 2, 3, 4)), ("float32", -0.0),
                                          ("int64", -1), ("int16", -2), ("uint8", 5), ("vec2h", 1.5)])
def test_fill(dtype, value):
    def make(wp):
        a = wp.ones((2, 3), dtype=getattr(wp, dtype), device=DEVICE)
        v = getattr(wp, dtype)(*value) if isinstance(value, tuple) else value
        a.fill_(v)
        return a

    got = compare(make)
    if value == 0.0 and dtype == "float32":
        assert np.signbit(got.numpy()).all()


@needs_warp
def test_fill_vector_spellings():
    def make(wp):
        out = []
        for v in (wp.vec3(1, 2, 3), (4, 5, 6), [7, 8, 9], np.array([1, 1, 2], dtype=np.float32)):
            a = wp.zeros(3, dtype=wp.vec3, device=DEVICE)
            a.fill_(v)
            out.append(a)
        return out

    compare(make)


@needs_warp
def test_fill_and_zero_views():
    def make(wp):
        a = wp.zeros(6, dtype=wp.float32, device=DEVICE)
        a[::2].fill_(4.0)
        b = wp.ones(6, dtype=wp.float32, device=DEVICE)
        b[1:4].zero_()
        c = wp.zeros(7, dtype=wp.int32, device=DEVICE)
        c[2:5].fill_(-1)  # a contiguous view: one word over and over, only there
        m = wp.zeros((2, 3), dtype=wp.vec3, device=DEVICE)
        m[:, 1].fill_(wp.vec3(1, 2, 3))
        return [a, b, c, m]

    compare(make)


@needs_warp
@pytest.mark.parametrize("dtype", ["float32", "vec3", "int64", "mat33"])
def test_zero(dtype):
    def make(wp):
        a = wp.ones((3, 2), dtype=getattr(wp, dtype), device=DEVICE)
        a.zero_()
        return a

    compare(make)


# ---- properties -------------------------------------------------------------------------------------------


@needs_warp
@pytest.mark.parametrize("shape, dtype", [((7,), "float32"), ((2, 3), "float64"), ((2, 3, 4), "int16"),
                                          ((2, 1, 3, 2), "vec3"), ((4,), "mat33"), ((0,), "float32")])
def test_properties(shape, dtype):
    def make(wp):
        a = wp.zeros(shape, dtype=getattr(wp, dtype), device=DEVICE)
        return (a.shape, a.strides, a.size, a.ndim, a.capacity, a.is_contiguous, str(a.device),
                a.device == "cpu", a.requires_grad, a.grad is None)

    got, want = both(make)
    assert got == want


def test_property_types():
    a = tw.zeros((2, 3), dtype=tw.vec3)
    assert isinstance(a.shape, tuple) and isinstance(a.strides, tuple)
    assert a.dtype is tw.vec3 and isinstance(a.device, tw.Device) and a.device == tw.get_device("cpu")
    assert len(a) == 2 and a.size == 6 and a.ndim == 2


@needs_warp
def test_str_and_repr():
    got, want = both(lambda wp: str(wp.array([1.0, 2.0], dtype=wp.float32, device=DEVICE)))
    assert got == want
    assert "float32" in repr(tw.zeros(2))
    assert "vec3" in repr(tw.array(dtype=tw.vec3))


# ---- gradients ------------------------------------------------------------------------------------------------


@needs_warp
@pytest.mark.parametrize("maker", ["zeros", "ones", "empty", "array", "full"])
@pytest.mark.parametrize("dtype", ["float32", "vec3", "float64"])
def test_requires_grad_allocates_zeroed_grad(maker, dtype):
    def make(wp):
        t = getattr(wp, dtype)
        kw = dict(dtype=t, device=DEVICE, requires_grad=True)
        a = {"zeros": lambda: wp.zeros((2, 3), **kw), "ones": lambda: wp.ones((2, 3), **kw),
             "empty": lambda: wp.empty((2, 3), **kw), "full": lambda: wp.full((2, 3), 2.0, **kw),
             "array": lambda: wp.array(np.ones((2, 3, 3) if dtype == "vec3" else (2, 3)), **kw)}[maker]()
        return [a.grad, a.requires_grad]

    got, want = both(make)
    assert not isinstance(got, Exception), got
    assert got[1] is True and want[1] is True
    assert_same(got[0], want[0])
    assert got[0].shape == (2, 3) and not got[0].numpy().any()


@needs_warp
def test_requires_grad_setter_and_views():
    def make(wp):
        a = wp.zeros((3, 4), dtype=wp.float32, device=DEVICE)
        before = a.grad is None
        a.requires_grad = True
        a.grad.fill_(1.0)
        col = a[:, 1]
        return (before, a.grad.shape, col.requires_grad, col.grad.shape, col.grad.strides,
                col.grad.numpy().tolist())

    got, want = both(make)
    assert got == want


# ---- views -------------------------------------------------------------------------------------------------------


@needs_warp
@pytest.mark.parametrize("key", [slice(None, None, 2), slice(2, 5), slice(1, None, 3), slice(-3, None), 1, -1],
                         ids=["::2", "2:5", "1::3", "-3:", "1", "-1"])
def test_slicing_1d_and_2d(key):
    def make(wp):
        base = wp.array(np.arange(24, dtype=np.float32).reshape(6, 4), device=DEVICE)
        return [base[key], wp.array(np.arange(10, dtype=np.float32), device=DEVICE)[key]
                if not isinstance(key, int) else base[key]]

    compare(make)


@needs_warp
@pytest.mark.parametrize("key", [(slice(None), 1), (slice(1, None), slice(1, 3)), (slice(None, None, 2), 2),
                                 (2, slice(None)), (slice(None), slice(None, None, 2))],
                         ids=[":,1", "1:,1:3", "::2,2", "2,:", ":,::2"])
def test_slicing_2d(key):
    def make(wp):
        base = wp.array(np.arange(24, dtype=np.float32).reshape(6, 4), device=DEVICE)
        return base[key]

    compare(make)


@needs_warp
def test_slicing_vector_arrays():
    def make(wp):
        v = wp.array(np.arange(18, dtype=np.float32).reshape(6, 3), dtype=wp.vec3, device=DEVICE)
        return [v[1:3], v[::2], v[-2:]]

    compare(make)


@needs_warp
def test_views_share_memory():
    def make(wp):
        base = wp.zeros(8, dtype=wp.float32, device=DEVICE)
        even = base[::2]
        mid = base[2:5]
        even.numpy()[:] = [1, 2, 3, 4]
        mid.fill_(9.0)
        m = wp.zeros((3, 4), dtype=wp.float32, device=DEVICE)
        m[:, 1].fill_(5.0)
        m.numpy()[2, 1] = 6.0
        return [base, even, mid, m, m[:, 1]]

    got = compare(make)
    assert got[0].numpy().tolist() == [1, 0, 9, 9, 9, 0, 4, 0]
    base = tw.zeros(8)
    assert base[2:5].ptr == base.ptr + 8 and base[::2].strides == (8,)


def test_view_keeps_memory_alive():
    view = tw.array(np.arange(100, dtype=np.float32))[10:20]
    import gc

    gc.collect()
    assert view.numpy().tolist() == list(range(10, 20))


def test_bad_indices():
    a = tw.zeros((3, 4))
    with pytest.raises(IndexError):
        a[3]
    with pytest.raises(IndexError):
        a[0, 0, 0]
    with pytest.raises(IndexError):
        tw.zeros(4)[:, 1]


def test_negative_step_view():
    a = tw.array(np.arange(6, dtype=np.float32))
    r = a[::-1]
    assert r.numpy().tolist() == [5, 4, 3, 2, 1, 0] and r.strides == (-4,)
    assert r._extent() == (-20, 4)
    assert tw.clone(r).numpy().tolist() == [5, 4, 3, 2, 1, 0]
    r[:2].assign([10.0, 11.0])
    assert a.numpy().tolist() == [0, 1, 2, 3, 11, 10]


# ---- views as kernel arguments (strided access in generated code) ---------------------------------------------

KERNELS = """
import WP as wp

@wp.kernel
def add_index(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s + float(i)

@wp.kernel
def fill_2d(m: wp.array2d(dtype=float)):
    i, j = wp.tid()
    m[i, j] = float(i * 100 + j)

@wp.kernel
def scale_vec(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    v[i] = v[i] * 2.0
    out[i] = wp.length(v[i])
"""


def load_kernels(folder, lib: str):
    name = f"tw_test_array_kernels_{lib}"
    if name in sys.modules:
        return sys.modules[name]
    path = folder / f"{name}.py"
    path.write_text(KERNELS.replace("import WP as wp", f"import {lib} as wp"))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("array-kernel-src")


@pytest.fixture(scope="module")
def kernel_mods(kernel_dir):
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    return [load_kernels(kernel_dir, "tilewarp"), load_kernels(kernel_dir, "warp")]


@pytest.fixture(scope="module")
def tw_kernels(kernel_dir):
    return load_kernels(kernel_dir, "tilewarp")


def compare_kernel(mods, fn):
    tw_mod, warp_mod = mods
    got, want = fn(tw_mod.wp, tw_mod), fn(warp_mod.wp, warp_mod)
    assert_same(got, want)
    return got


@pytest.mark.parametrize("key", [slice(None, None, 2), slice(2, 5), slice(1, None, 3)], ids=["::2", "2:5", "1::3"])
def test_strided_view_as_kernel_argument(kernel_mods, key):
    def run(wp, mod):
        base = wp.array(np.arange(12, dtype=np.float32), device=DEVICE)
        view = base[key]
        wp.launch(mod.add_index, dim=view.shape[0], inputs=[view, 10.0], device=DEVICE)
        return [base, view]

    got = compare_kernel(kernel_mods, run)
    expect = np.arange(12, dtype=np.float32)
    expect[key] = expect[key] * 10 + np.arange(len(expect[key]))
    np.testing.assert_array_equal(got[0].numpy(), expect)  # elements outside the view untouched


def test_column_view_as_kernel_argument(kernel_mods):
    def run(wp, mod):
        m = wp.array(np.arange(12, dtype=np.float32).reshape(3, 4), device=DEVICE)
        wp.launch(mod.add_index, dim=3, inputs=[m[:, 1], -1.0], device=DEVICE)
        return m

    got = compare_kernel(kernel_mods, run)
    assert got.numpy()[:, 1].tolist() == [-1.0, -4.0, -7.0]


def test_2d_view_as_kernel_argument(kernel_mods):
    def run(wp, mod):
        m = wp.zeros((4, 6), dtype=wp.float32, device=DEVICE)
        sub = m[1:, ::2]
        wp.launch(mod.fill_2d, dim=sub.shape, inputs=[sub], device=DEVICE)
        return [m, sub]

    got = compare_kernel(kernel_mods, run)
    assert got[0].numpy()[0].tolist() == [0.0] * 6 and got[0].numpy()[2, 2] == 101.0


def test_vector_view_as_kernel_argument(kernel_mods):
    def run(wp, mod):
        v = wp.array(np.arange(18, dtype=np.float32).reshape(6, 3), dtype=wp.vec3, device=DEVICE)
        out = wp.zeros(6, dtype=wp.float32, device=DEVICE)
        wp.launch(mod.scale_vec, dim=3, inputs=[v[::2], out[1:4]], device=DEVICE)
        return [v, out]

    got = tw_got = compare_kernel(kernel_mods, run)
    assert tw_got[0].numpy()[1].tolist() == [3.0, 4.0, 5.0]  # odd rows untouched
    assert got[1].numpy()[0] == 0.0


def test_kernel_writes_visible_through_other_views(kernel_mods):
    tw_mod = kernel_mods[0]
    base = tw.zeros(8, dtype=tw.float32)
    tw.launch(tw_mod.add_index, dim=4, inputs=[base[4:], 1.0])
    assert base.numpy().tolist() == [0, 0, 0, 0, 0, 1, 2, 3]
    assert base[4:].numpy().tolist() == [0, 1, 2, 3]


# ---- the same behaviours on every device tilewarp has here (cuda:0 too when a GPU is present) ----------------


def _devices():
    try:
        gpus = tw.get_cuda_device_count()
    except Exception:  # noqa: BLE001 - no driver at all
        gpus = 0
    return ["cpu"] + (["cuda:0"] if gpus else [])


@pytest.fixture(params=_devices())
def device(request):
    return request.param


def test_views_on_device(device):
    a = tw.array(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    assert a[:, 1].numpy().tolist() == [1, 5, 9]
    assert a[1:, 1:3].numpy().tolist() == [[5, 6], [9, 10]]
    b = tw.array(np.arange(6, dtype=np.float32), device=device)
    r = b[::-1]
    assert r.numpy().tolist() == [5, 4, 3, 2, 1, 0]
    r[:2].assign([10.0, 11.0])
    assert b.numpy().tolist() == [0, 1, 2, 3, 11, 10]
    assert tw.clone(r).numpy().tolist() == [10, 11, 3, 2, 1, 0]
    b[1::2].fill_(-1.0)
    assert b.numpy().tolist() == [0, -1, 2, -1, 11, -1]
    assert tw.zeros(0, device=device).numpy().shape == (0,)
    assert a[3:].numpy().shape == (0, 4)


def test_fill_assign_copy_on_device(device):
    v = tw.zeros((2, 3), dtype=tw.vec3, device=device)
    v[:, 1].fill_(tw.vec3(1, 2, 3))
    x = v.numpy()
    assert x.shape == (2, 3, 3) and x[:, 1].tolist() == [[1, 2, 3]] * 2 and not x[:, 0].any() and not x[:, 2].any()
    z = tw.ones(4, device=device)
    z.fill_(-0.0)
    assert np.signbit(z.numpy()).all()
    k = tw.zeros(5, device=device)
    tw.copy(k, tw.array(np.arange(5.0, dtype=np.float32), device=device), dest_offset=1, src_offset=2, count=2)
    assert k.numpy().tolist() == [0, 2, 3, 0, 0]
    host = tw.zeros(3, device="cpu")
    tw.copy(host, k[::2])  # strided, across devices
    assert host.numpy().tolist() == [0, 3, 0]
    back = tw.zeros((2, 2), device=device)
    tw.copy(back[:, 1], tw.array([7.0, 8.0], dtype=tw.float32))
    assert back.numpy().tolist() == [[0, 7], [0, 8]]
    g = tw.zeros((3, 2), dtype=tw.float32, device=device, requires_grad=True)
    assert g.grad.device == device and g[:, 1].grad.shape == (3,) and not g.grad.numpy().any()
    assert tw.from_numpy(np.ones((2, 3, 3), dtype=np.float32), device=device).numpy().shape == (2, 3, 3)


def test_strided_kernel_arguments_on_device(tw_kernels, device):
    base = tw.array(np.arange(12, dtype=np.float32), device=device)
    tw.launch(tw_kernels.add_index, dim=4, inputs=[base[1::3], 10.0], device=device)
    expect = np.arange(12, dtype=np.float32)
    expect[1::3] = expect[1::3] * 10 + np.arange(4)
    np.testing.assert_array_equal(base.numpy(), expect)
    m = tw.zeros((4, 6), dtype=tw.float32, device=device)
    sub = m[1:, ::2]
    tw.launch(tw_kernels.fill_2d, dim=sub.shape, inputs=[sub], device=device)
    want = np.zeros((4, 6), dtype=np.float32)
    want[1:, ::2] = np.add.outer(np.arange(3) * 100, np.arange(3))
    np.testing.assert_array_equal(m.numpy(), want)
    v = tw.array(np.arange(18, dtype=np.float32).reshape(6, 3), dtype=tw.vec3, device=device)
    out = tw.zeros(6, dtype=tw.float32, device=device)
    tw.launch(tw_kernels.scale_vec, dim=3, inputs=[v[::2], out[1:4]], device=device)
    got = v.numpy()
    assert got[0].tolist() == [0, 2, 4] and got[1].tolist() == [3, 4, 5] and got[4].tolist() == [24, 26, 28]
    np.testing.assert_allclose(out.numpy()[1:4], np.linalg.norm(got[::2], axis=1), rtol=1e-6)
    assert out.numpy()[0] == 0 and out.numpy()[4] == 0


def test_transpose_is_a_view_with_its_gradient():
    import numpy as np
    import tilewarp as wp

    data = np.random.default_rng(3).random((2, 3, 4)).astype(np.float32)
    a = wp.array(data, requires_grad=True)
    t = a.transpose((2, 0, 1))
    np.testing.assert_array_equal(t.numpy(), data.transpose(2, 0, 1))
    assert t.grad.shape == (4, 2, 3)
    np.testing.assert_array_equal(a.transpose().numpy(), data.T)


def test_dtype_conversions_match_warp():
    import numpy as np
    import tilewarp as wp

    for name in ("float16", "float32", "float64", "int8", "int32", "uint64", "bool"):
        t = getattr(wp, name)
        assert wp.dtype_from_numpy(wp.dtype_to_numpy(t)) is t
    assert wp.dtype_from_numpy(np.dtype("float32")) is wp.float32
    assert wp.dtype_to_numpy(wp.vec3d) is np.float64
