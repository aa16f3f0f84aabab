"""Control flow and assignment, differential against Warp on CPU.

if/elif/else (incl. names first bound in both branches), for-range with 1/2/3 arguments (constant,
dynamic and negative steps), while, break, continue, nested loops, ternaries, augmented assignment
of locals and array elements, and ``a[i] += x`` as an atomic under heavy contention.
"""
import numpy as np
import pytest
from conftest import Arr, launch_both, load_both

SRC = '''
import WP as wp


@wp.kernel
def branches(a: wp.array(dtype=float), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = 0.0
    if x < -1.0:
        y = x * 2.0
    elif x < 0.0:
        y = -x
    elif x < 1.0:
        y = x + 10.0
    else:
        y = 1.0 / x
    if i % 3 == 0:
        y = y + 100.0
    out[i, 0] = y
    if x > 0.0:
        z = x
    else:
        z = -x * 0.5
    out[i, 1] = z
    w = x
    if x > 2.0:
        w = w * w
    out[i, 2] = w
    if i % 2 == 0:
        if x > 0.5:
            out[i, 3] = 1.0
        else:
            out[i, 3] = 2.0
    else:
        out[i, 3] = 3.0


@wp.kernel
def ternaries(a: wp.array(dtype=float), out: wp.array(dtype=float), outi: wp.array(dtype=int)):
    i = wp.tid()
    x = a[i]
    out[i] = x if x > 0.0 else -2.0 * x
    outi[i] = i * 2 if i % 3 == 0 else (i + 100 if x > 1.0 else -i)


@wp.kernel
def for_loops(out: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    s = int(0)
    for k in range(i):
        s += k
    out[i, 0] = s
    s = int(0)
    for k in range(2, i + 3):
        s = s + k * k
    out[i, 1] = s
    s = int(0)
    for k in range(i, -5, -3):
        s = s * 2 + k
    out[i, 2] = s
    s = int(0)
    for k in range(0, 20, 3):
        s += k * i
    out[i, 3] = s
    s = int(0)
    step = -(i % 3 + 1)
    for k in range(i, 0, step):
        s += k
    out[i, 4] = s
    s = int(7)
    for k in range(5, 2):
        s = int(0)
    out[i, 5] = s
    s = int(0)
    for k in range(10, i, -1):
        s = s * 3 % 1000 + k
    out[i, 6] = s


@wp.kernel
def break_continue(out: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    s = int(0)
    for k in range(100):
        if k % 2 == 0:
            continue
        if k > i:
            break
        s += k
    out[i, 0] = s
    s = int(0)
    for a in range(4):
        for b in range(a, 6):
            if a == b:
                continue
            if b > a + i % 3:
                break
            s += a * 10 + b
    out[i, 1] = s + i
    j = int(0)
    while True:
        j += 1
        if j * j > i:
            break
    out[i, 2] = j
    j = int(0)
    n = int(0)
    while j < 30:
        j += 1
        if j % 4 == i % 4:
            continue
        n += j
    out[i, 3] = n


@wp.kernel
def while_loops(seed: wp.array(dtype=int), out: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    x = seed[i]
    steps = int(0)
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    out[i, 0] = steps
    a = seed[i]
    b = i + 7
    while b != 0:
        t = a % b
        a = b
        b = t
    out[i, 1] = a


@wp.kernel
def aug_locals(a: wp.array(dtype=float), b: wp.array(dtype=int), out: wp.array(dtype=float, ndim=2),
               outi: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    x = a[i]
    x += 1.5
    out[i, 0] = x
    x -= 0.25
    out[i, 1] = x
    x *= 3.0
    out[i, 2] = x
    x /= 7.0
    out[i, 3] = x
    k = b[i]
    k += 3
    k -= 1
    k *= 5
    outi[i, 0] = k
    k //= 4
    outi[i, 1] = k
    k %= 7
    outi[i, 2] = k


@wp.kernel
def aug_arrays(a: wp.array(dtype=float), m: wp.array(dtype=float, ndim=2), k: wp.array(dtype=int)):
    i = wp.tid()
    a[i] *= 2.0
    a[i] -= 1.0
    a[i] /= 4.0
    m[i, 1] += a[i]
    m[i, 0] -= 3.0
    k[i] *= 3
    k[i] += i


@wp.kernel
def early_exit(a: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    if i >= n:
        return
    x = a[i]
    if x < 0.0:
        out[i] = -1.0
        return
    for k in range(10):
        if float(k) > x:
            out[i] = float(k)
            return
    out[i] = 100.0


@wp.kernel
def aliasing(a: wp.array(dtype=float), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = x
    v = wp.vec2(x, 1.0)
    w = v
    for k in range(3):
        z = x
        x = x * 2.0 + 1.0
        v[0] = v[0] + 1.0
        if k == 1:
            y = z
    out[i, 0] = x
    out[i, 1] = y
    out[i, 2] = v[0] - w[0]
    out[i, 3] = w[1]
    c = i < 4 and a[i + 1] > 0.0
    out[i, 4] = float(c)


@wp.kernel
def atomics(idx: wp.array(dtype=int), vals: wp.array(dtype=float), hist: wp.array(dtype=int),
            acc: wp.array(dtype=float), total: wp.array(dtype=wp.int64), grid: wp.array(dtype=int, ndim=2),
            vacc: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    b = idx[i]
    hist[b] += 1
    acc[b] -= vals[i]
    total[0] += wp.int64(i)
    grid[b % 4, b % 3] += 2
    vacc[b % 2] += wp.vec3(vals[i], 1.0, -2.0)
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def test_if_elif_else(mods, device, rng):
    a = rng.uniform(-3, 3, 300).astype(np.float32)
    launch_both(mods, "branches", 300, [Arr(a), Arr(np.zeros((300, 4), np.float32))], device)


def test_ternary(mods, device, rng):
    a = rng.uniform(-3, 3, 100).astype(np.float32)
    outs = [Arr(np.zeros(100, np.float32)), Arr(np.zeros(100, np.int32))]
    launch_both(mods, "ternaries", 100, [Arr(a), *outs], device)


def test_for_range(mods, device):
    got = launch_both(mods, "for_loops", 40, [Arr(np.zeros((40, 7), np.int32))], device)[0]
    i = np.arange(40)
    np.testing.assert_array_equal(got[:, 0], i * (i - 1) // 2)
    np.testing.assert_array_equal(got[:, 5], 7)


def test_break_continue(mods, device):
    launch_both(mods, "break_continue", 50, [Arr(np.zeros((50, 4), np.int32))], device)


def test_while(mods, device, rng):
    seed = rng.integers(1, 10_000, 128).astype(np.int32)
    got = launch_both(mods, "while_loops", 128, [Arr(seed), Arr(np.zeros((128, 2), np.int32))], device)[1]
    np.testing.assert_array_equal(got[:, 1], np.gcd(seed, np.arange(128) + 7))


def test_early_return_from_kernel(mods, device, rng):
    a = rng.uniform(-3, 12, 64).astype(np.float32)
    got = launch_both(mods, "early_exit", 64, [Arr(a), 50, Arr(np.full(64, 7.0, np.float32))], device)[1]
    np.testing.assert_array_equal(got[50:], 7.0)


def test_names_rebound_in_loops_do_not_alias(mods, device, rng):
    a = rng.uniform(-3, 3, 5).astype(np.float32)
    got = launch_both(mods, "aliasing", 5, [Arr(a), Arr(np.zeros((5, 5), np.float32))], device)[1]
    np.testing.assert_allclose(got[:, 1], a * 2 + 1, rtol=1e-6)
    np.testing.assert_array_equal(got[:, 2:4], [[3.0, 1.0]] * 5)


def test_augmented_assignment_of_locals(mods, device, rng):
    a = rng.uniform(-5, 5, 100).astype(np.float32)
    b = rng.integers(-100, 100, 100).astype(np.int32)
    launch_both(mods, "aug_locals", 100, [Arr(a), Arr(b), Arr(np.zeros((100, 4), np.float32)),
                                          Arr(np.zeros((100, 3), np.int32))], device)


def test_augmented_assignment_of_array_elements(mods, device, rng):
    a = rng.uniform(-5, 5, 100).astype(np.float32)
    m = rng.uniform(-5, 5, (100, 2)).astype(np.float32)
    k = rng.integers(-100, 100, 100).astype(np.int32)
    launch_both(mods, "aug_arrays", 100, [Arr(a), Arr(m), Arr(k)], device)


def test_atomic_add_under_contention(mods, device, rng):
    """``a[i] += x`` is atomic in Warp: 100k threads hit a handful of elements."""
    n = 100_000
    idx = rng.integers(0, 6, n).astype(np.int32)
    vals = (rng.integers(-8, 8, n) * 0.25).astype(np.float32)  # exact in float32: order does not matter
    hist, acc = np.zeros(6, np.int32), np.zeros(6, np.float32)
    total, grid, vacc = np.zeros(1, np.int64), np.zeros((4, 3), np.int32), np.zeros((2, 3), np.float32)
    got = launch_both(mods, "atomics", n, [Arr(idx), Arr(vals), Arr(hist), Arr(acc), Arr(total), Arr(grid),
                                           Arr(vacc, "vec3")], device)
    np.testing.assert_array_equal(got[2], np.bincount(idx, minlength=6))
    np.testing.assert_array_equal(got[3], -np.bincount(idx, weights=vals, minlength=6).astype(np.float32))
    assert got[4][0] == n * (n - 1) // 2
    np.testing.assert_array_equal(got[6][:, 1], np.bincount(idx % 2, minlength=2))
