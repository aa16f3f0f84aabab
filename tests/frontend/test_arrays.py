"""Launch indices and arrays, differential against Warp on CPU.

``wp.tid()`` in 1-, 2-, 3- and 4-D launches (tuple unpacking), 1-4-D arrays read and written with
``a[i, j]`` and ``a[i][j]``, ``a.shape``, and strided (non-contiguous) arrays.
"""
import numpy as np
import pytest
from conftest import Arr, launch_both, load_both, reference

SRC = '''
import WP as wp


@wp.kernel
def tid1(a: wp.array(dtype=float), out: wp.array(dtype=float), ids: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = a[i] * 2.0 + float(i)
    ids[i] = i


@wp.kernel
def tid2(a: wp.array(dtype=float, ndim=2), out: wp.array(dtype=float, ndim=2),
         ids: wp.array(dtype=int, ndim=3)):
    i, j = wp.tid()
    out[i, j] = a[i, j] - a[i][j] * 0.5 + float(j)
    out[i][j] += 1.0
    ids[i, j, 0] = i
    ids[i, j, 1] = j


@wp.kernel
def tid3(a: wp.array(dtype=float, ndim=3), out: wp.array(dtype=float, ndim=3),
         ids: wp.array(dtype=int, ndim=4)):
    i, j, k = wp.tid()
    out[i][j][k] = a[i, j, k] * float(k + 1) + a[i][j][k]
    ids[i, j, k, 0] = i
    ids[i][j][k][1] = j
    ids[i, j][k, 2] = k


@wp.kernel
def tid4(a: wp.array(dtype=float, ndim=4), out: wp.array(dtype=float, ndim=4),
         ids: wp.array(dtype=int, ndim=2)):
    i, j, k, l = wp.tid()
    out[i, j, k, l] = a[i, j, k, l] + a[i][j][k][l] * float(i - j + k - l)
    flat = ((i * a.shape[1] + j) * a.shape[2] + k) * a.shape[3] + l
    ids[flat, 0] = i
    ids[flat][1] = j
    row = ids[flat]
    row[2] = k
    row[3] = l


@wp.kernel
def flat_tid_2d_launch(out: wp.array(dtype=int)):
    t = wp.tid()
    out[t] = t * 3


@wp.kernel
def shapes(a: wp.array(dtype=float, ndim=3), out: wp.array(dtype=int)):
    i = wp.tid()
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = a.shape[2]
    out[3] = a.shape[0] * a.shape[1] * a.shape[2]
    out[4] = len(a)
    out[5] = len(wp.vec3()) + len(a[0])


@wp.kernel
def row_sums(a: wp.array(dtype=float, ndim=2), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(a.shape[1]):
        s += a[i, j]
    out[i] = s


@wp.kernel
def gather(src: wp.array(dtype=wp.int64, ndim=2), idx: wp.array(dtype=int),
           out: wp.array(dtype=wp.int64, ndim=2)):
    i, j = wp.tid()
    out[i, j] = src[idx[i], j] * wp.int64(2) + src[idx[i]][src.shape[1] - 1 - j]


@wp.kernel
def stencil(a: wp.array(dtype=float, ndim=2), out: wp.array(dtype=float, ndim=2)):
    i, j = wp.tid()
    n = a.shape[0]
    m = a.shape[1]
    if i > 0 and i < n - 1 and j > 0 and j < m - 1:
        out[i, j] = a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1] - 4.0 * a[i, j]
    else:
        out[i, j] = a[i, j]
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def test_tid_1d(mods, device, rng):
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    got = launch_both(mods, "tid1", n, [Arr(a), Arr(np.zeros(n, np.float32)), Arr(np.zeros(n, np.int32))],
                      device)
    np.testing.assert_array_equal(got[2], np.arange(n))


def test_tid_2d(mods, device, rng):
    shape = (13, 7)
    a = rng.standard_normal(shape).astype(np.float32)
    got = launch_both(mods, "tid2", shape, [Arr(a), Arr(np.zeros(shape, np.float32)),
                                            Arr(np.zeros((*shape, 2), np.int32))], device)
    i, j = np.indices(shape)
    np.testing.assert_array_equal(got[2], np.stack([i, j], -1))


def test_tid_3d(mods, device, rng):
    shape = (5, 4, 6)
    a = rng.standard_normal(shape).astype(np.float32)
    got = launch_both(mods, "tid3", shape, [Arr(a), Arr(np.zeros(shape, np.float32)),
                                            Arr(np.zeros((*shape, 3), np.int32))], device)
    np.testing.assert_array_equal(got[2], np.stack(np.indices(shape), -1))


def test_tid_4d(mods, device, rng):
    shape = (3, 4, 2, 5)
    a = rng.standard_normal(shape).astype(np.float32)
    got = launch_both(mods, "tid4", shape, [Arr(a), Arr(np.zeros(shape, np.float32)),
                                            Arr(np.zeros((a.size, 4), np.int32))], device)
    np.testing.assert_array_equal(got[2], np.stack(np.indices(shape), -1).reshape(-1, 4))


def test_single_tid_in_multidimensional_launch_is_first_coordinate(mods, device):
    """Warp 1.19: a lone ``wp.tid()`` in a 2-D launch is the first coordinate, not the flat index."""
    got = launch_both(mods, "flat_tid_2d_launch", (4, 5), [Arr(np.zeros(20, np.int32))], device)
    np.testing.assert_array_equal(got[0], np.r_[np.arange(4) * 3, np.zeros(16)])


def test_shape(mods, device, rng):
    a = rng.standard_normal((3, 5, 2)).astype(np.float32)
    got = launch_both(mods, "shapes", 1, [Arr(a), Arr(np.zeros(6, np.int32))], device)
    np.testing.assert_array_equal(got[1], [3, 5, 2, 30, 3, 8])


def test_loop_over_shape(mods, device, rng):
    a = rng.standard_normal((20, 9)).astype(np.float32)
    got = launch_both(mods, "row_sums", 20, [Arr(a), Arr(np.zeros(20, np.float32))], device, rtol=1e-5)
    np.testing.assert_allclose(got[1], a.sum(1), rtol=1e-5, atol=1e-5)


def test_indirect_indexing_int64(mods, device, rng):
    src = rng.integers(-(2**40), 2**40, (10, 6)).astype(np.int64)
    idx = rng.integers(0, 10, 8).astype(np.int32)
    got = launch_both(mods, "gather", (8, 6), [Arr(src), Arr(idx), Arr(np.zeros((8, 6), np.int64))], device)
    np.testing.assert_array_equal(got[2], src[idx] * 2 + src[idx][:, ::-1])


def test_stencil(mods, device, rng):
    a = rng.standard_normal((16, 12)).astype(np.float32)
    launch_both(mods, "stencil", a.shape, [Arr(a), Arr(np.zeros_like(a))], device)


def test_strided_arrays(mods, device, rng):
    """A transposed (non-contiguous) view reads and writes through its strides in both libraries."""
    a = rng.standard_normal((9, 14)).astype(np.float32)
    results = []
    for mod, dev in ((mods[0], device), reference(mods, device)):
        wp = mod.wp
        base = wp.array(a, dtype=float, device=dev)
        view = wp.array(ptr=base.ptr, dtype=float, shape=(14, 9), strides=(4, 14 * 4), device=dev)
        out = wp.zeros((14, 9), dtype=float, device=dev)
        wp.launch(mod.tid2, dim=(14, 9), inputs=[view, out, wp.zeros((14, 9, 2), dtype=int, device=dev)],
                  device=dev)
        results.append(out.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results[0], a.T * 0.5 + np.arange(9) + 1.0, rtol=1e-6, atol=1e-6)
