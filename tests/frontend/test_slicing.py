"""Slicing in kernels, differential against Warp on CPU. Arrays (``a[1:3]``, ``a[i, ::2]``, ``a[:, j]``,
``a[::-1]``): constant and runtime bounds, negative indices and steps, empty slices, slices of
slices and of views, shapes and lengths of the views, writes through them, debug-build bounds
checks of the integer indices among the slices, gradients through views. Vectors, quaternions,
transforms and matrices (``v[1:]``, ``m[0, 1:]``, ``m[:, j]``): reads, assignments and augmented
assignments of the selected components, runtime indices among constant slices, gradients. Bad inputs.
"""

import numpy as np
import pytest
from conftest import Arr, check_located, launch_both, load_both

import tilewarp as wp
from tilewarp import KernelError, KernelTypeError

SRC = '''
import WP as wp


@wp.func
def total(v: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(v.shape[0]):
        s += v[k] * float(k + 1)
    return s


@wp.kernel
def slices_1d(a: wp.array(dtype=float), lo: wp.array(dtype=int), hi: wp.array(dtype=int),
              out: wp.array(dtype=float, ndim=2), n: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    views_sum = total(a[1:3]) + total(a[:-1]) * 10.0 + total(a[::2]) * 100.0 + total(a[::-1]) * 1000.0
    out[i, 0] = views_sum
    out[i, 1] = total(a[-3:]) + total(a[lo[i]:hi[i]]) * 10.0 + total(a[hi[i]:lo[i]:-1]) * 100.0
    out[i, 2] = total(a[lo[i]::3]) + total(a[-100:100]) * 10.0 + total(a[5:2]) * 100.0
    out[i, 3] = total(a[1:-1][::2][1:])
    n[i, 0] = len(a[1:3])
    n[i, 1] = a[lo[i]:hi[i]].shape[0]
    n[i, 2] = len(a[100:])
    n[i, 3] = len(a[::-3])


@wp.kernel
def slices_2d(x: wp.array2d(dtype=float), j: wp.array(dtype=int), out: wp.array(dtype=float, ndim=2),
              n: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    out[i, 0] = total(x[i, 1:3]) + total(x[:, j[i]]) * 10.0 + total(x[i][::-2]) * 100.0
    sub = x[1:, ::2]
    s = float(0.0)
    for r in range(sub.shape[0]):
        for c in range(sub.shape[1]):
            s += sub[r, c] * float(r * 7 + c + 1)
    out[i, 1] = s
    out[i, 2] = total(x[-1, :]) + total(x[::-1, 0]) * 10.0 + total(x[i:, 1][1:]) * 100.0
    n[i, 0] = sub.shape[0] * 10 + sub.shape[1]
    n[i, 1] = len(x[:, 1:])


@wp.kernel
def composite_slices(v: wp.array(dtype=wp.vec4), m: wp.array(dtype=wp.mat33), q: wp.array(dtype=wp.quat),
                     j: wp.array(dtype=int), o2: wp.array(dtype=wp.vec2, ndim=2),
                     o3: wp.array(dtype=wp.vec3, ndim=2),
                     om: wp.array(dtype=wp.mat22, ndim=2), o4: wp.array(dtype=wp.vec4, ndim=2),
                     o33: wp.array(dtype=wp.mat33, ndim=2)):
    i = wp.tid()
    a = v[i]
    b = m[i]
    o2[i, 0] = a[1:3]
    o2[i, 1] = a[::-3]
    o2[i, 2] = b[j[i], 1:]
    o2[i, 3] = b[-2:, 2]
    o3[i, 0] = q[i][0:3]
    o3[i, 1] = b[:, 1]
    t = wp.transform(a[0:3], q[i])
    tail = t[-3:]
    o3[i, 2] = tail[::-1]
    om[i, 0] = b[::2, ::2]
    om[i, 1] = b[1:, :2]
    c = a
    c[1:3] = wp.vec2(7.0, a[0])
    c[::3] += wp.vec2(10.0, 20.0)
    o4[i, 0] = c
    d = b
    d[0, 1:] = wp.vec2(5.0, 6.0)
    d[1:, j[i]] = d[1:, 0] * 2.0
    d[1:, 1:] -= wp.mat22(1.0, 2.0, 3.0, 4.0)
    o33[i, 0] = d


@wp.kernel
def write_through(out: wp.array2d(dtype=float)):
    i = wp.tid()
    row = out[i, 1::2]
    for k in range(row.shape[0]):
        row[k] = float(i * 10 + k)
    out[i, ::-1][0] = -1.0
    out[i:i + 1, 0][0] = float(i) + 0.5
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def test_slices_1d(mods, device, rng):
    n = 16
    a = rng.uniform(-1, 1, 9).astype(np.float32)
    lo = rng.integers(-9, 9, n).astype(np.int32)
    hi = rng.integers(-9, 9, n).astype(np.int32)
    got = launch_both(mods, "slices_1d", n, [Arr(a), Arr(lo), Arr(hi), Arr(np.zeros((n, 4), np.float32)),
                                              Arr(np.zeros((n, 4), np.int32))], device, rtol=1e-5, atol=1e-5)

    def total(v):
        return float(np.sum(v.astype(np.float64) * np.arange(1, len(v) + 1)))

    want = [total(a[1:3]) + total(a[:-1]) * 10 + total(a[::2]) * 100 + total(a[::-1]) * 1000,
            total(a[-3:]) + total(a[lo[0]:hi[0]]) * 10 + total(a[hi[0]:lo[0]:-1]) * 100]
    np.testing.assert_allclose(got[3][0, :2], want, rtol=1e-5)
    np.testing.assert_array_equal(got[4][:, 1], [len(a[x:y]) for x, y in zip(lo, hi)])
    np.testing.assert_array_equal(got[4][0, [0, 2, 3]], [2, 0, 3])


def test_slices_2d(mods, device, rng):
    n = 5
    x = rng.uniform(-1, 1, (n, 6)).astype(np.float32)
    j = rng.integers(-6, 6, n).astype(np.int32)
    got = launch_both(mods, "slices_2d", n, [Arr(x), Arr(j), Arr(np.zeros((n, 3), np.float32)),
                                             Arr(np.zeros((n, 2), np.int32))], device, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[3][0], [(n - 1) * 10 + 3, n])


def test_composite_slices(mods, device, rng):
    n = 16
    v = rng.uniform(-2, 2, (n, 4)).astype(np.float32)
    m = rng.uniform(-2, 2, (n, 3, 3)).astype(np.float32)
    q = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    j = rng.integers(-3, 3, n).astype(np.int32)
    args = [Arr(v, "vec4"), Arr(m, "mat33"), Arr(q, "quat"), Arr(j),
            Arr(np.zeros((n, 4, 2), np.float32), "vec2"),
            Arr(np.zeros((n, 3, 3), np.float32), "vec3"), Arr(np.zeros((n, 2, 2, 2), np.float32), "mat22"),
            Arr(np.zeros((n, 1, 4), np.float32), "vec4"), Arr(np.zeros((n, 1, 3, 3), np.float32), "mat33")]
    got = launch_both(mods, "composite_slices", n, args, device)
    np.testing.assert_array_equal(got[4][:, 0], v[:, 1:3])
    np.testing.assert_array_equal(got[4][:, 1], v[:, ::-3])
    np.testing.assert_array_equal(got[4][:, 2], m[np.arange(n), j, 1:])
    np.testing.assert_array_equal(got[5][:, 1], m[:, :, 1])
    np.testing.assert_array_equal(got[6][:, 0], m[:, ::2, ::2])
    c = v.copy()
    c[:, 1:3] = np.stack([np.full(n, 7.0), v[:, 0]], 1)
    c[:, ::3] += [10.0, 20.0]
    np.testing.assert_array_equal(got[7][:, 0], c)


def test_writes_through_views(mods, device):
    n = 4
    got = launch_both(mods, "write_through", n, [Arr(np.zeros((n, 7), np.float32))], device)[0]
    want = np.zeros((n, 7), np.float32)
    for i in range(n):
        want[i, 1::2] = i * 10 + np.arange(3)
        want[i, -1] = -1
        want[i, 0] = i + 0.5
    np.testing.assert_array_equal(got, want)


@wp.kernel
def k_weighted_view(x: wp.array2d(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    v = x[i, ::-2]
    w = x[:, 1][1:]
    out[i] = v[0] * v[1] * wp.float64(3.0) + w[i % 3] * v[2]


@wp.kernel
def k_component_slices(v: wp.array(dtype=wp.vec4d), m: wp.array(dtype=wp.mat33d),
                       out: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    a = v[i]
    b = m[i]
    a[1:3] = b[1, ::2] * a[0]
    b[:, 0] += a[1:]
    out[i] = a[::-2] + b[2, :2] * b[0, 0]


def test_gradients_flow_through_component_slices(rng):
    v = wp.array(rng.uniform(-1, 1, (4, 4)), dtype=wp.vec4d, requires_grad=True, device="cpu")
    m = wp.array(rng.uniform(-1, 1, (4, 3, 3)), dtype=wp.mat33d, requires_grad=True, device="cpu")
    out = wp.zeros(4, dtype=wp.vec2d, requires_grad=True, device="cpu")
    assert wp.autograd.gradcheck(k_component_slices, dim=4, inputs=[v, m], outputs=[out], eps=1e-6, atol=1e-8,
                                 rtol=1e-6, raise_exception=False, device="cpu", show_summary=False)


def test_gradients_flow_through_views(rng):
    """A view's gradient is the same view of the gradient array."""
    x = wp.array(rng.uniform(-1, 1, (4, 6)), dtype=wp.float64, requires_grad=True, device="cpu")
    out = wp.zeros(4, dtype=wp.float64, requires_grad=True, device="cpu")
    assert wp.autograd.gradcheck(k_weighted_view, dim=4, inputs=[x], outputs=[out], eps=1e-6, atol=1e-8,
                                 rtol=1e-6, raise_exception=False, device="cpu", show_summary=False)


@wp.kernel
def k_index_out_of_range(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    v = a[5, 1:]
    out[0] = v[0]


def test_debug_build_checks_integer_indices():
    """In a debug build an integer index among the slices is bounds-checked like a[i]."""
    saved = wp.config.mode
    wp.config.mode = "debug"
    try:
        with pytest.raises(wp.KernelRuntimeError) as info:
            args = [wp.zeros((2, 3), dtype=float, device="cpu"), wp.zeros(1, dtype=float, device="cpu")]
            wp.launch(k_index_out_of_range, dim=1, inputs=args, device="cpu")
        msg = str(info.value)
        assert "index 5 is out of bounds for dimension 0 of array 'a'" in msg and "v = a[5, 1:]" in msg, msg
    finally:
        wp.config.mode = saved


# ---- bad inputs: the error class, at the user's file:line ------------------------------------------

check = check_located  # tests/conftest.py


@wp.kernel
def k_slice_scalar():
    v = 1.5
    w = v[0:2]  # <- error


@wp.kernel
def k_dynamic_vector_bound(a: wp.array(dtype=float)):
    n = int(a[0])
    w = wp.vec3()[0:n]  # <- error


@wp.kernel
def k_empty_vector_slice(a: wp.array(dtype=float)):
    w = wp.vec3()[2:1]  # <- error


@wp.kernel
def k_assign_wrong_length(a: wp.array(dtype=float)):
    v = wp.vec4()
    v[1:3] = wp.vec3()  # <- error


@wp.kernel
def k_zero_step(a: wp.array(dtype=float)):
    b = a[::0]  # <- error


@wp.kernel
def k_float_bound(a: wp.array(dtype=float)):
    b = a[0.5:]  # <- error


@wp.kernel
def k_too_many(a: wp.array(dtype=float)):
    b = a[1:, 2]  # <- error


@wp.kernel
def k_assign_to_slice(a: wp.array(dtype=float)):
    a[1:3] = 1.0  # <- error


BAD = [
    (k_slice_scalar, KernelTypeError, "only arrays, vectors and matrices can be sliced, got a float32"),
    (k_dynamic_vector_bound, KernelTypeError,
     "bound of a vector or matrix slice must be a compile-time constant"),
    (k_empty_vector_slice, KernelTypeError, "the slice selects no component of the vec3"),
    (k_assign_wrong_length, KernelTypeError, "slice has type vec2 but is assigned vec3"),
    (k_zero_step, KernelTypeError, "slice step cannot be zero"),
    (k_float_bound, KernelTypeError, "slice bounds and indices must be integers"),
    (k_too_many, KernelTypeError, "1-d array indexed with 2 indices"),
    (k_assign_to_slice, KernelError, "a[1:3]"),
]


@pytest.mark.parametrize("kernel,cls,fragments", [(k, c, f) for k, c, *f in BAD],
                         ids=[b[0].__name__ for b in BAD])
def test_bad_input(kernel, cls, fragments):
    args = [wp.zeros(4, dtype=float, device="cpu")] if kernel is not k_slice_scalar else []
    check(kernel, cls, *fragments, inputs=args)
