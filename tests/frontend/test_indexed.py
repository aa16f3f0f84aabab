"""Arrays in kernels: ``wp.indexedarray`` (host and kernel side), negative indices, ``a.shape[k]``,
``len(a)``, views passed to functions and ``wp.array(ptr=...)``; differential against Warp on CPU.
"""
import numpy as np
import pytest
from conftest import Arr, launch_both, load_both, need_warp, reference

import tilewarp as wp

SRC = '''
import WP as wp


@wp.func
def ends(v: wp.indexedarray(dtype=float)):
    return v[0] * 10.0 + v[-1]


@wp.kernel(enable_backward=False)
def indexed2d(a: wp.indexedarray2d(dtype=float), w: wp.indexedarray2d(dtype=float), out: wp.array(dtype=float),
              c: wp.indexedarray(dtype=float)):
    i, j = wp.tid()
    w[i, j] = a[i, j] * 2.0 + float(a.shape[0] * 10 + a.shape[1])
    wrow = w[i]
    wrow[j] = wrow[j] + 0.5
    row = a[i]
    out[i * a.shape[1] + j] = row[j] + ends(row) + a[-1 - i, -1]
    c[i] += 1.0
    wp.atomic_add(c, j, 0.5)
    c[j] -= 0.25


@wp.kernel(enable_backward=False)
def indexed3d(a: wp.indexedarray3d(dtype=wp.vec2), out: wp.array3d(dtype=wp.vec2)):
    i, j, k = wp.tid()
    out[i, j, k] = a[i, j, k] + a[i][j][k] * float(k + 1)
    plane = a[i]
    line = plane[j]
    line[k] = wp.vec2(float(i), float(j * 10 + k))


@wp.kernel(enable_backward=False)
def indexed1d(a: wp.indexedarray(dtype=int), m: wp.indexedarray(dtype=int), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = a[i] * 100 + a.shape[0]
    wp.atomic_max(m, i, a[i])


@wp.func
def fill_row(r: wp.array(dtype=float), value: float):
    for k in range(r.shape[0]):
        r[k] = value + float(k)


@wp.func
def row_sum(r: wp.array(dtype=float)) -> float:
    s = float(0.0)
    for k in range(len(r)):
        s += r[k]
    return s


@wp.kernel
def views_and_shapes(a: wp.array2d(dtype=float), b: wp.array3d(dtype=float), out: wp.array(dtype=float),
                     dims: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = row_sum(a[i]) + row_sum(b[i][1]) + row_sum(b[i, 0])
    fill_row(b[i][2], float(i))
    k = i % 3
    dims[i] = b.shape[k] * 100 + len(b) * 10 + len(a)


@wp.kernel
def negative(a: wp.array(dtype=float), b: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[-1 - i] + b[-1, -2] + b[-2][-1]
    c = b[-1]
    out[-1] = c[-3]
    b[-1, -1] = 99.0
    wp.atomic_add(a, -6, 1.0)


@wp.kernel(enable_backward=False)
def subscripted(a: wp.array[float], b: wp.array2d[wp.vec2], c: wp.array[int, 2], d: wp.indexedarray[float]):
    i = wp.tid()
    a[i] = a[i] + b[i, 1].y + float(c[i, 0]) + d[i]


@wp.kernel
def search(a: wp.array(dtype=float), q: wp.array(dtype=float), out: wp.array(dtype=int), ai: wp.array(dtype=wp.int64),
           half: wp.array(dtype=wp.float16)):
    i = wp.tid()
    out[i] = wp.lower_bound(a, q[i])
    out[i + 8] = wp.lower_bound(a, 1, 4, q[i])
    out[i + 16] = wp.lower_bound(ai, wp.int64(i - 2))
    out[i + 24] = wp.lower_bound(a, 2, 2, q[i]) + wp.lower_bound(half, wp.float16(q[i])) * 10


@wp.kernel
def through_ptr(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = a[i, j] + float(i * 10 + j)
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def _run_indexed(mod, kernel, dim, make_args, device):
    """Build the arguments with ``make_args(wp, device)`` -> (args, arrays to compare) and launch."""
    wp_ = mod.wp
    args, keep = make_args(wp_, device)
    wp_.launch(getattr(mod, kernel), dim=dim, inputs=args, device=device)
    wp_.synchronize()
    return [k.numpy() for k in keep]


def _compare(mods, kernel, dim, make_args, device):
    ref_mod, ref_device = reference(mods, device)
    got = _run_indexed(mods[0], kernel, dim, make_args, device)
    want = _run_indexed(ref_mod, kernel, dim, make_args, ref_device)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=f"{kernel}: array #{k}")
    return got


def test_indexed2d(mods, device, rng):
    data = rng.random((5, 6), dtype=np.float32)
    c_data = rng.random(7, dtype=np.float32)

    def make(wp_, dev):
        d, w = wp_.array(data, device=dev), wp_.zeros((5, 6), dtype=float, device=dev)
        rows = wp_.array([4, 1, 2], dtype=wp_.int32, device=dev)
        cols = wp_.array([0, 5, 2, 3], dtype=wp_.int32, device=dev)
        c = wp_.array(c_data, device=dev)
        out = wp_.zeros(12, dtype=float, device=dev)
        ci = wp_.indexedarray(c, wp_.array([6, 0, 3, 2], dtype=wp_.int32, device=dev))
        args = [wp_.indexedarray(d, [rows, cols]), wp_.indexedarray(w, [rows, cols]), out, ci]
        return args, [d, w, out, c]

    _compare(mods, "indexed2d", (3, 4), make, device)


def test_indexed3d_vectors_and_views(mods, device, rng):
    data = rng.random((3, 4, 5, 2), dtype=np.float32)

    def make(wp_, dev):
        d = wp_.array(data, dtype=wp_.vec2, device=dev)
        mid = wp_.array([3, 0], dtype=wp_.int32, device=dev)
        out = wp_.zeros((3, 2, 5), dtype=wp_.vec2, device=dev)
        return [wp_.indexedarray(d, [None, mid]), out], [d, out]

    _compare(mods, "indexed3d", (3, 2, 5), make, device)


def test_indexed1d_int_and_single_index_array(mods, device, rng):
    data = rng.integers(-20, 20, size=9).astype(np.int32)

    def make(wp_, dev):
        d = wp_.array(data, dtype=wp_.int32, device=dev)
        m = wp_.zeros(9, dtype=wp_.int32, device=dev)
        out = wp_.zeros(4, dtype=wp_.int32, device=dev)
        idx = wp_.array([8, 2, 2, 0], dtype=wp_.int32, device=dev)  # two threads meet at element 2
        return [wp_.indexedarray(d, idx), wp_.indexedarray(m, idx), out], [d, m, out]

    _compare(mods, "indexed1d", 4, make, device)


def test_views_to_functions_shape_and_len(mods, device, rng):
    a = rng.random((4, 5), dtype=np.float32)
    b = rng.random((4, 3, 6), dtype=np.float32)
    launch_both(mods, "views_and_shapes", 4, [Arr(a), Arr(b), Arr(np.zeros(4, np.float32)),
                                               Arr(np.zeros(4, np.int32))], device)


def test_negative_indices_wrap(mods, device, rng):
    a = rng.random(6, dtype=np.float32)
    b = rng.random((3, 4), dtype=np.float32)
    launch_both(mods, "negative", 4, [Arr(a), Arr(b), Arr(np.zeros(5, np.float32))], device)


def test_lower_bound(mods, device, rng):
    a = np.sort(rng.integers(0, 6, size=9)).astype(np.float32) * 0.5  # repeated values
    q = np.concatenate([[-1.0, 99.0], rng.choice(a, 3), rng.random(3, dtype=np.float32) * 3]).astype(np.float32)
    ai = np.sort(rng.integers(-3, 4, size=7)).astype(np.int64)
    launch_both(mods, "search", 8, [Arr(a), Arr(q), Arr(np.zeros(32, np.int32)), Arr(ai),
                                    Arr(a.astype(np.float16), "float16")], device)


def test_array_from_ptr(mods, device, rng):
    base_data = rng.random(8, dtype=np.float32)

    def make(wp_, dev):
        base = wp_.array(base_data, device=dev)
        view = wp_.array(ptr=base.ptr + 4, shape=(2, 3), dtype=float, device=dev)
        assert view.shape == (2, 3) and view.dtype is wp_.float32
        return [view], [base]

    got = _compare(mods, "through_ptr", (2, 3), make, device)[0]
    np.testing.assert_allclose(got[[0, 7]], base_data[[0, 7]])  # outside the view: untouched


def test_subscripted_annotations(mods, device, rng):
    a, b = rng.random(4, dtype=np.float32), rng.random((4, 2, 2), dtype=np.float32)
    c, d = rng.integers(-9, 9, size=(4, 3)).astype(np.int32), rng.random(6, dtype=np.float32)

    def make(wp_, dev):
        arrays = [wp_.array(a, device=dev), wp_.array(b, dtype=wp_.vec2, device=dev), wp_.array(c, device=dev)]
        ia = wp_.indexedarray(wp_.array(d, device=dev), wp_.array([5, 3, 1, 0], dtype=wp_.int32, device=dev))
        return arrays + [ia], arrays[:1]

    _compare(mods, "subscripted", 4, make, device)


def test_subscript_forms():
    assert wp.array[wp.vec3, 2].__tw_annotation__() == wp.array(dtype=wp.vec3, ndim=2).__tw_annotation__()
    assert wp.array2d[float].ndim == 2 and wp.indexedarray[float, 3].ndim == 3
    with pytest.raises(ValueError, match="ndim must be between 1 and 4"):
        wp.array[float, 5]
    with pytest.raises(TypeError, match="expects 1 or 2 type parameters"):
        wp.indexedarray[float, 1, 2]


# ---- host side ------------------------------------------------------------------------------------


def _host_summary(wp_, data):
    d = wp_.array(data, device="cpu")
    i0 = wp_.array([3, 1], dtype=wp_.int32, device="cpu")
    i1 = wp_.array([0, 4, 2], dtype=wp_.int32, device="cpu")
    ia = wp_.indexedarray(d, [i0, i1])
    out = [ia.shape, ia.size, ia.ndim, len(ia), ia.is_contiguous, ia.numpy(), np.asarray(ia.list())]
    out += [wp_.indexedarray(d).shape, wp_.indexedarray(d, i0).shape, wp_.indexedarray(d, [None, i1]).shape]
    out += [type(ia.contiguous()).__name__, ia.contiguous().numpy(), str(ia)]
    ia.fill_(7.0)
    out.append(d.numpy().copy())
    ia.assign(np.arange(6, dtype=np.float32).reshape(2, 3))
    out.append(d.numpy().copy())
    ia.zero_()
    out.append(d.numpy().copy())
    out.append([idx is None for idx in ia.indices])
    return out


def test_host_side_matches_warp(mods, rng):
    need_warp(mods)
    data = rng.random((4, 5), dtype=np.float32)
    got, want = _host_summary(mods[0].wp, data), _host_summary(mods[1].wp, data)
    for g, w in zip(got, want):
        if isinstance(w, np.ndarray):
            np.testing.assert_array_equal(g, w)
        else:
            assert g == w


def _error_of(wp_, make):
    try:
        make(wp_)
    except Exception as e:  # noqa: BLE001 - the class and text are what is compared
        return type(e).__name__, str(e).split("(")[0]
    return None


BAD = [
    lambda wp_: wp_.indexedarray(np.zeros(3)),
    lambda wp_: wp_.indexedarray(wp_.zeros((2, 2), dtype=float, device="cpu"),
                                 [wp_.array([1], dtype=wp_.int64, device="cpu")]),
    lambda wp_: wp_.indexedarray(wp_.zeros(4, dtype=float, device="cpu"),
                                 [wp_.zeros((2, 2), dtype=wp_.int32, device="cpu")]),
    lambda wp_: wp_.indexedarray(wp_.zeros(4, dtype=float, device="cpu"),
                                 [wp_.zeros(2, dtype=wp_.int32, device="cpu")] * 2),
    lambda wp_: wp_.indexedarray(wp_.zeros(4, dtype=float, device="cpu"), 5),
    lambda wp_: wp_.indexedarray(wp_.zeros(4, dtype=float, device="cpu"), dtype=wp_.float64),
    lambda wp_: wp_.indexedarray(wp_.zeros(4, dtype=float, device="cpu"), ndim=2),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_constructor_errors_match_warp(mods, k):
    need_warp(mods)
    got, want = _error_of(mods[0].wp, BAD[k]), _error_of(mods[1].wp, BAD[k])
    assert got is not None and got[0] == want[0]
    assert got[1].split()[:3] == want[1].split()[:3], (got, want)


def test_plain_array_for_indexed_parameter_is_a_launch_error(mods):
    a = wp.zeros((2, 2), dtype=float, device="cpu")
    with pytest.raises(wp.LaunchError, match="argument 'a' expects indexedarray"):
        wp.launch(mods[0].indexed2d, dim=(1, 1), inputs=[a, a, wp.zeros(4, dtype=float, device="cpu"),
                                                         wp.indexedarray(wp.zeros(2, dtype=float, device="cpu"))],
                  device="cpu")
    ia = wp.indexedarray(wp.zeros(3, dtype=int, device="cpu"))
    with pytest.raises(wp.LaunchError, match="argument 'out' expects array"):
        wp.launch(mods[0].indexed1d, dim=1, inputs=[ia, ia, ia], device="cpu")


# ---- debug checks on indexed arrays -----------------------------------------------------------------


@wp.kernel(module="unique", module_options={"mode": "debug"})
def indexed_read(a: wp.indexedarray(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    out[i] = a[i + n]  # <- read


@wp.kernel(module="unique", module_options={"mode": "debug"})
def search_range(a: wp.array(dtype=float), out: wp.array(dtype=int), end: int):
    out[0] = wp.lower_bound(a, 0, end, 2.5)  # <- search


def test_debug_lower_bound_range():
    a = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    out = wp.zeros(1, dtype=int, device="cpu")
    wp.launch(search_range, dim=1, inputs=[a, out, 4], device="cpu")
    assert out.numpy()[0] == 3
    with pytest.raises(wp.KernelRuntimeError) as info:
        wp.launch(search_range, dim=1, inputs=[a, out, 40], device="cpu")
    assert info.value.array == "a" and info.value.extent == 4 and "<- search" in str(info.value)


def test_lower_bound_type_errors():
    def k(a: wp.array(dtype=wp.int64), b: wp.array2d(dtype=float), out: wp.array(dtype=int)):
        out[0] = wp.lower_bound(a, 3)  # an int32 literal for an int64 array, as Warp rejects

    with pytest.raises(wp.KernelTypeError, match="value must be the array's type int64"):
        wp.kernel(k).ir


def test_debug_indexed_bounds(device):
    d = wp.array(np.arange(5, dtype=np.float32), device=device)
    out = wp.zeros(3, dtype=float, device=device)
    ia = wp.indexedarray(d, wp.array([4, 0, 2], dtype=wp.int32, device=device))
    wp.launch(indexed_read, dim=3, inputs=[ia, out, 0], device=device)
    np.testing.assert_array_equal(out.numpy(), [4, 0, 2])
    with pytest.raises(wp.KernelRuntimeError) as info:
        wp.launch(indexed_read, dim=3, inputs=[ia, out, 1], device=device)  # position 3 of 3
    e = info.value
    assert (e.kind, e.array, e.index, e.extent) == ("bounds", "a", 3, 3), str(e)
    assert "indexedarray 'a'" in str(e) and "<- read" in str(e)
    bad = wp.indexedarray(d, wp.array([4, 9, 2], dtype=wp.int32, device=device))  # 9: outside the data
    with pytest.raises(wp.KernelRuntimeError) as info:
        wp.launch(indexed_read, dim=3, inputs=[bad, out, 0], device=device)
    e = info.value
    assert (e.kind, e.array, e.index, e.extent) == ("indexed", "a", 9, 5), str(e)
