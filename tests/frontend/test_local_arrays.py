"""``wp.zeros(shape, dtype)`` inside kernels (fixed-size local arrays), differential against Warp on
CPU: 1-4 dimensions, scalar / vector / matrix elements, shapes from literals, globals and local
constants, re-zeroing at each call (in loops), rows and slices of local arrays, atomics and
augmented assignment on them, passing them to @wp.func array parameters, per-thread privacy,
debug-build bounds checks, the located error a backward pass raises, and bad inputs.
"""
import inspect
import os

import numpy as np
import pytest
from conftest import ERROR_MARK, Arr, check_located, launch_both, load_both

import tilewarp as wp
from tilewarp import KernelError, KernelTypeError

SRC = '''
import WP as wp

N = 3


@wp.func
def weighted(v: wp.array(dtype=float)):
    s = float(0.0)
    for k in range(v.shape[0]):
        s += v[k] * float(k + 1)
    return s


@wp.kernel
def local_arrays(x: wp.array(dtype=float), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    a = wp.zeros(shape=(2, N), dtype=float)
    for j in range(N):
        a[i % 2, j] = x[(i + j) % x.shape[0]]
    out[i, 0] = weighted(a[1]) + weighted(a[0]) * 10.0 + float(a.shape[0] * 100 + a.shape[1] * 1000)
    b = wp.zeros(5, dtype=float)
    b[1] += 2.0
    wp.atomic_add(b, 2, x[i % x.shape[0]])
    b[-1] = 4.0
    out[i, 1] = weighted(b) + float(len(b)) * 100.0
    total = float(0.0)
    for r in range(3):  # a fresh zeroed array each time round
        c = wp.zeros(2, dtype=float)
        c[r % 2] += x[r]
        total += c[0] * 10.0 + c[1]
    out[i, 2] = total
    v = wp.zeros(3, dtype=wp.vec3)
    v[1] = wp.vec3(x[0], x[1], x[2])
    v[2][1] = 5.0
    m = wp.zeros((2, 2), dtype=wp.mat22)
    m[1, 0] = wp.mat22(1.0, 2.0, 3.0, x[i % x.shape[0]])
    out[i, 3] = wp.length(v[1]) + v[2][1] + wp.determinant(m[1, 0]) + wp.length(v[0])


@wp.kernel
def local_ints(seed: wp.array(dtype=int), out: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    h = wp.zeros((2, 2, 2, 2), dtype=wp.int32)
    for k in range(16):
        h[k % 2, (k // 2) % 2, (k // 4) % 2, k // 8] = k * seed[i]
    out[i, 0] = h[1, 0, 1, 1] + h[0, 1, 0, 0] * 100
    counts = wp.zeros(4, dtype=wp.uint8)
    for k in range(10):
        counts[(k * seed[i]) % 4] += wp.uint8(1)
    out[i, 1] = int(counts[0]) + int(counts[1]) * 10 + int(counts[2]) * 100 + int(counts[3]) * 1000
    s = wp.zeros(6, dtype=int)
    for k in range(6):
        s[k] = k * 10 + i
    tail = s[3:]
    out[i, 2] = tail[0] + tail[2] * 1000
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def test_local_arrays(mods, device, rng):
    n = 64  # every thread has its own arrays: rows differ by i
    x = rng.uniform(-2, 2, 7).astype(np.float32)
    got = launch_both(mods, "local_arrays", n, [Arr(x), Arr(np.zeros((n, 4), np.float32))], device,
                      rtol=1e-5, atol=1e-5)[1]
    rows = np.zeros((2, 3))
    for j in range(3):
        rows[1, j] = x[(1 + j) % 7]
    np.testing.assert_allclose(got[1, 0], (rows[1] @ [1, 2, 3]) + 2 * 100 + 3 * 1000, rtol=1e-5)
    xi = x[np.arange(n) % 7].astype(np.float64)
    np.testing.assert_allclose(got[:, 1], 2 * 2 + 3 * xi + 5 * 4 + 500, rtol=1e-5)
    want_total = x[0] * 10 + x[1] + x[2] * 10
    np.testing.assert_allclose(got[:, 2], want_total, rtol=1e-5)


def test_local_integer_arrays(mods, device, rng):
    n = 16
    seed = rng.integers(1, 9, n).astype(np.int32)
    got = launch_both(mods, "local_ints", n, [Arr(seed), Arr(np.zeros((n, 3), np.int32))], device)[1]
    np.testing.assert_array_equal(got[:, 0], 13 * seed + 2 * seed * 100)
    np.testing.assert_array_equal(got[:, 2], 30 + np.arange(n) + (50 + np.arange(n)) * 1000)


@wp.kernel
def k_local_out_of_range(out: wp.array(dtype=float)):
    a = wp.zeros(3, dtype=float)
    k = int(out[0]) + 3
    a[k] = 1.0


def test_debug_build_checks_bounds():
    saved = wp.config.mode
    wp.config.mode = "debug"
    try:
        with pytest.raises(wp.KernelRuntimeError) as info:
            out = wp.zeros(1, dtype=float, device="cpu")
            wp.launch(k_local_out_of_range, dim=1, inputs=[out], device="cpu")
        assert "index 3 is out of bounds for dimension 0" in str(info.value), str(info.value)
    finally:
        wp.config.mode = saved


@wp.kernel
def k_with_local(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    a = wp.zeros(2, dtype=float)  # <- error
    a[0] = x[i]
    y[i] = a[0] * 2.0


def test_backward_through_local_arrays_raises():
    """Never a silent zero: the backward pass cannot replay stores into local arrays yet."""
    if not hasattr(wp, "Tape"):
        pytest.skip("autodiff not available")
    x = wp.array([1.0, 2.0], dtype=float, requires_grad=True, device="cpu")
    y = wp.zeros(2, dtype=float, requires_grad=True, device="cpu")
    tape = wp.Tape()
    with tape:
        wp.launch(k_with_local, dim=2, inputs=[x, y], device="cpu")
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    with pytest.raises(wp.AutodiffError) as info:
        tape.backward(grads={y: wp.ones(2, dtype=float, device="cpu")})
    msg = str(info.value)
    lines, first = inspect.getsourcelines(k_with_local)
    line = first + next(k for k, t in enumerate(lines) if ERROR_MARK in t)
    assert f"{os.path.abspath(__file__)}:{line}:" in msg and "local arrays have no gradient" in msg, msg


# ---- bad inputs: the error class, at the user's file:line ------------------------------------------

def check(kernel, cls, *fragments):
    check_located(kernel, cls, *fragments, inputs=[wp.zeros(1, dtype=int, device="cpu")])


@wp.kernel
def k_dynamic_shape(n: wp.array(dtype=int)):
    a = wp.zeros(n[0], dtype=float)  # <- error


@wp.kernel
def k_no_dtype(n: wp.array(dtype=int)):
    a = wp.zeros(4)  # <- error


@wp.kernel
def k_bad_dtype(n: wp.array(dtype=int)):
    a = wp.zeros(4, dtype=str)  # <- error


@wp.kernel
def k_float_shape(n: wp.array(dtype=int)):
    a = wp.zeros((2, 1.5), dtype=float)  # <- error


@wp.kernel
def k_too_big(n: wp.array(dtype=int)):
    a = wp.zeros((1000, 1000), dtype=float)  # <- error


BAD = [
    (k_dynamic_shape, KernelTypeError, "wp.zeros(): 'shape' must be a compile-time constant"),
    (k_no_dtype, KernelTypeError, "wp.zeros() in kernels takes (shape, dtype)"),
    (k_bad_dtype, KernelTypeError, "wp.zeros(): dtype"),
    (k_float_shape, KernelTypeError, "shape must be an int or a tuple of ints"),
    (k_too_big, KernelTypeError, "at most 65536 elements"),
]


@pytest.mark.parametrize("kernel,cls,fragments", [(k, c, f) for k, c, *f in BAD],
                         ids=[b[0].__name__ for b in BAD])
def test_bad_input(kernel, cls, fragments):
    check(kernel, cls, *fragments)
