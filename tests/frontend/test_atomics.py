"""Atomics: atomic_add/sub/min/max/cas/exch/and/or/xor and ``a[i] op= x``, returning the old value.

Contended tests launch far more than 4096 threads (so the CPU thread pool runs them in parallel),
check integer results exactly and float sums against float64 with a tolerance, and check returned
old values (a counter hands out every slot exactly once). Single-thread kernels are differential
against Warp on CPU for every type Warp accepts. Explicit ``wp.atomic_x()`` calls take Warp's types
only (and reject the others with Warp's message); ``a[i] op= x`` on 8/16-bit integer and float16
arrays still updates atomically (Warp does a plain read-modify-write there), checked against numpy.
"""
import os

import numpy as np
import pytest
from conftest import Arr, launch_both, load_both, load_module, run

import tilewarp as wp
from tilewarp import KernelTypeError

N = 1 << 17  # threads in contended launches

COUNTER = """
import WP as wp


@wp.kernel
def counter_{T}(counter: wp.array(dtype=wp.{T}), up: wp.array(dtype=wp.{T}), down: wp.array(dtype=wp.{T}),
                slots: wp.array(dtype=wp.int32)):
    i = wp.tid()
    slot = wp.atomic_add(counter, 0, wp.{T}(1))
    slots[int(slot)] = i
    up[i] = slot
    down[i] = wp.atomic_sub(counter, 1, wp.{T}(1))
"""

# widest exact count per type: a float16 counter is exact up to 2048, int8 up to 127
COUNTS = {"int8": 127, "uint8": 255, "int16": 30000, "uint16": 60000, "float16": 2048}
COUNTER_TYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64", "float16")


@pytest.mark.parametrize("t", COUNTER_TYPES)
def test_counter_hands_out_every_slot_once(device, t):
    """Returned old values of atomic_add on one counter are exactly 0..n-1 (and of atomic_sub n..1)."""
    n = COUNTS.get(t, N)
    mod = load_module(COUNTER.replace("{T}", t), "tilewarp")
    counter = np.array([0, n], dtype=t)
    got = run(mod, f"counter_{t}", n, [Arr(counter), Arr(np.zeros(n, t)), Arr(np.zeros(n, t)),
                                       Arr(np.full(n, -1, np.int32))], device)
    final, up, down, slots = got
    np.testing.assert_array_equal(final, np.array([n, 0], dtype=t))
    np.testing.assert_array_equal(np.sort(up.astype(np.int64)), np.arange(n))
    np.testing.assert_array_equal(np.sort(down.astype(np.int64)), np.arange(1, n + 1))
    np.testing.assert_array_equal(np.sort(slots), np.arange(n))  # every slot claimed by one thread


SUMS = """
import WP as wp


@wp.kernel
def sums_{T}(v: wp.array(dtype=wp.{T}), b1: wp.array(dtype=wp.{T}), b2: wp.array2d(dtype=wp.{T}),
             b3: wp.array3d(dtype=wp.{T}), b4: wp.array4d(dtype=wp.{T}), lo: wp.array(dtype=wp.{T}),
             hi: wp.array(dtype=wp.{T})):
    i = wp.tid()
    x = v[i]
    k = i % 7
    wp.atomic_add(b1, k, x)
    b1[k + 7] += x
    b1[k + 14] -= x
    wp.atomic_sub(b2, k % 2, k, x)
    wp.atomic_add(b3, 1, k % 3, k, x)
    b4[0, 1, k % 2, k] += x
    wp.atomic_min(lo, k, x)
    wp.atomic_max(hi, k, x)
"""
SUM_TYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64")


def _values(rng, t, n):
    if np.dtype(t).kind == "f":
        return rng.uniform(-1, 1, n).astype(t)
    info = np.iinfo(t)
    return rng.integers(info.min, info.max, n, endpoint=True, dtype=t)


def _bins(v, t, k, nbins):
    """Per-bin sums (wrapping for ints, float64 for floats), mins and maxes, bin = index % 7."""
    acc = np.int64 if np.dtype(t).kind in "iu" else np.float64
    sums = np.zeros(nbins, acc)
    with np.errstate(over="ignore"):
        np.add.at(sums, k, v.astype(acc) if acc is np.float64 else v.astype(np.int64))
    ext = np.iinfo(t) if np.dtype(t).kind in "iu" else np.finfo(t)
    lo, hi = np.full(nbins, ext.max, t), np.full(nbins, ext.min, t)
    np.minimum.at(lo, k, v)
    np.maximum.at(hi, k, v)
    return sums, lo, hi


@pytest.mark.parametrize("t", SUM_TYPES)
def test_contended_sums_min_max(device, rng, t):
    n = N if t != "float16" else 4096 + 512
    mod = load_module(SUMS.replace("{T}", t), "tilewarp")
    v = _values(rng, t, n)
    ext = np.iinfo(t) if np.dtype(t).kind in "iu" else np.finfo(t)
    arrays = [np.zeros(21, t), np.zeros((2, 7), t), np.zeros((2, 3, 7), t), np.zeros((1, 2, 2, 7), t),
              np.full(7, ext.max, t), np.full(7, ext.min, t)]
    b1, b2, b3, b4, lo, hi = run(mod, f"sums_{t}", n, [Arr(v)] + [Arr(a) for a in arrays], device)[1:]
    k = np.arange(n) % 7
    sums, want_lo, want_hi = _bins(v, t, k, 7)
    np.testing.assert_array_equal(lo, want_lo)
    np.testing.assert_array_equal(hi, want_hi)
    if t[0] == "f":
        tol = {"float16": 0.5, "float32": 2e-2, "float64": 1e-9}[t]
        for got in (b1[:7], b1[7:14], -b1[14:], b3[1].sum(0), b4[0, 1].sum(0)):
            np.testing.assert_allclose(got.astype(np.float64), sums, atol=tol)
        np.testing.assert_allclose(-b2.astype(np.float64).sum(0), sums, atol=2 * tol)
        return
    want = sums.astype(t)  # modular: the wrapped total
    np.testing.assert_array_equal(b1[:7], want)
    np.testing.assert_array_equal(b1[7:14], want)
    np.testing.assert_array_equal((b1[14:] + want).astype(t), np.zeros(7, t))
    np.testing.assert_array_equal((b2.astype(np.int64).sum(0) + sums).astype(t), np.zeros(7, t))
    np.testing.assert_array_equal(b3[1].astype(np.int64).sum(0).astype(t), want)
    np.testing.assert_array_equal(b4[0, 1].astype(np.int64).sum(0).astype(t), want)


NARROW = """
import WP as wp


@wp.kernel
def narrow_{T}(v: wp.array(dtype=wp.{T}), b1: wp.array(dtype=wp.{T}), b2: wp.array2d(dtype=wp.{T})):
    i = wp.tid()
    x = v[i]
    k = i % 7
    b1[k] += x
    b1[k + 7] -= x
    b2[k % 2, k] += x
"""
NARROW_TYPES = ("int8", "uint8", "int16", "uint16", "float16")


@pytest.mark.parametrize("t", NARROW_TYPES)
def test_narrow_in_place_updates_are_atomic(device, rng, t):
    """``a[i] += x`` on 8/16-bit slots sharing a 32-bit word loses no update (beyond Warp's plain update)."""
    n = N if t != "float16" else 4096 + 512
    mod = load_module(NARROW.replace("{T}", t), "tilewarp")
    v = _values(rng, t, n)
    b1, b2 = run(mod, f"narrow_{t}", n, [Arr(v), Arr(np.zeros(14, t)), Arr(np.zeros((2, 7), t))], device)[1:]
    sums = _bins(v, t, np.arange(n) % 7, 7)[0]
    if t == "float16":
        np.testing.assert_allclose(b1[:7].astype(np.float64), sums, atol=0.5)
        np.testing.assert_allclose(-b1[7:].astype(np.float64), sums, atol=0.5)
        np.testing.assert_allclose(b2.astype(np.float64).sum(0), sums, atol=1.0)
        return
    want = sums.astype(t)
    np.testing.assert_array_equal(b1[:7], want)
    np.testing.assert_array_equal((b1[7:] + want).astype(t), np.zeros(7, t))
    np.testing.assert_array_equal(b2.astype(np.int64).sum(0).astype(t), want)


BITS = """
import WP as wp


@wp.kernel
def bits_{T}(v: wp.array(dtype=wp.{T}), ands: wp.array(dtype=wp.{T}), ors: wp.array(dtype=wp.{T}),
             xors: wp.array(dtype=wp.{T}), old: wp.array(dtype=wp.{T})):
    i = wp.tid()
    x = v[i]
    k = i % 5
    ands[k] &= x
    ors[k] |= x
    xors[k] ^= x
    {OLD}
"""
OLD_OR = "old[i] = wp.atomic_or(ors, k + 5, x)"  # explicit calls: 32/64-bit types only
OLD_OR_UPDATE = "ors[k + 5] |= x"  # 8/16-bit: the in-place update (no old value)
INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


@pytest.mark.parametrize("t", INT_TYPES)
def test_contended_bit_operations(device, rng, t):
    """Adjacent 8/16-bit slots share a 32-bit word: the GPU's emulated byte CAS must not lose updates."""
    wide = np.dtype(t).itemsize >= 4
    mod = load_module(BITS.replace("{T}", t).replace("{OLD}", OLD_OR if wide else OLD_OR_UPDATE), "tilewarp")
    n = N
    bits = 8 * np.dtype(t).itemsize
    one = np.ones(n, np.uint64) << (np.arange(n, dtype=np.uint64) % np.uint64(bits))
    v = one.astype(t)  # one bit per thread, and every third thread a random value
    v[::3] = _values(rng, t, n)[::3]
    ands0 = np.full(5, -1 if t[0] == "i" else np.iinfo(t).max, t)
    _, ands, ors, xors, old = run(mod, f"bits_{t}", n, [Arr(v), Arr(ands0), Arr(np.zeros(10, t)),
                                                        Arr(np.zeros(5, t)), Arr(np.zeros(n, t))], device)
    k = np.arange(n) % 5
    for j in range(5):
        np.testing.assert_array_equal(ands[j], np.bitwise_and.reduce(v[k == j]))
        np.testing.assert_array_equal(ors[j], np.bitwise_or.reduce(v[k == j]))
        np.testing.assert_array_equal(ors[j + 5], ors[j])
        np.testing.assert_array_equal(xors[j], np.bitwise_xor.reduce(v[k == j]))
        # every old value of an atomic_or is a subset of the final bits
        np.testing.assert_array_equal(old[k == j] & ~ors[j], np.zeros((k == j).sum(), t))


CAS_EXCH = """
import WP as wp


@wp.kernel
def claim_{T}(flags: wp.array(dtype=wp.{T}), won: wp.array(dtype=wp.int32), ids: wp.array(dtype=wp.{T})):
    i = wp.tid()
    me = ids[i]
    if wp.atomic_cas(flags, i % 11, wp.{T}(0), me) == wp.{T}(0):
        won[i] = 1


@wp.kernel
def chain_{T}(slot: wp.array(dtype=wp.{T}), ids: wp.array(dtype=wp.{T}), old: wp.array(dtype=wp.{T})):
    i = wp.tid()
    old[i] = wp.atomic_exch(slot, i % 3, ids[i])
"""
CAS_TYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64")


@pytest.mark.parametrize("t", CAS_TYPES)
def test_cas_elects_one_winner_per_slot(device, t):
    n = N if np.dtype(t).itemsize > 2 else 2000
    mod = load_module(CAS_EXCH.replace("{T}", t), "tilewarp")
    ids = ((np.arange(n) % 120) + 1).astype(t)  # nonzero, exact in every type
    flags, won, _ = run(mod, f"claim_{t}", n, [Arr(np.zeros(11, t)), Arr(np.zeros(n, np.int32)), Arr(ids)],
                        device)
    k = np.arange(n) % 11
    for j in range(11):
        winners = np.nonzero((won == 1) & (k == j))[0]
        assert winners.size == 1, (j, winners.size)
        assert flags[j] == ids[winners[0]]


@pytest.mark.parametrize("t", CAS_TYPES)
def test_exchange_chain_loses_no_value(device, t):
    """Exchanges on one slot form a chain: old values plus the final one are the initial plus all ids."""
    n = N if np.dtype(t).itemsize > 2 else 2000
    mod = load_module(CAS_EXCH.replace("{T}", t), "tilewarp")
    ids = np.arange(1, n + 1).astype(np.float64)
    ids = (ids % 1000 + 1) if t in ("float16", "int8", "uint8", "int16", "uint16") else ids
    ids = ids.astype(t)
    init = np.array([0, 0, 0], t)
    slot, _, old = run(mod, f"chain_{t}", n, [Arr(init), Arr(ids), Arr(np.zeros(n, t))], device)
    k = np.arange(n) % 3
    for j in range(3):
        seen = np.sort(np.concatenate([old[k == j], slot[j:j + 1]]).astype(np.float64))
        want = np.sort(np.concatenate([init[j:j + 1], ids[k == j]]).astype(np.float64))
        np.testing.assert_array_equal(seen, want)


SERIAL = """
import WP as wp


@wp.kernel
def ops_{T}(a: wp.array(dtype=wp.{T}), b: wp.array(dtype=wp.{T}), old: wp.array(dtype=wp.{T}),
            g: wp.array2d(dtype=wp.{T})):
    old[0] = wp.atomic_add(a, 0, b[0])
    old[1] = wp.atomic_sub(a, 1, b[1])
    old[2] = wp.atomic_min(a, 2, b[2])
    old[3] = wp.atomic_max(a, 3, b[3])
    old[4] = wp.atomic_exch(a, 4, b[4])
    old[5] = wp.atomic_cas(a, 5, a[5], b[5])
    old[6] = wp.atomic_cas(a, 6, b[6], b[7])
    a[7] += b[7]
    a[8] -= b[8]
    old[7] = wp.atomic_min(g, 1, 0, b[0])
    old[8] = wp.atomic_max(g, 0, 1, b[1])
    old[9] = wp.atomic_add(g, 1, 1, b[2])
"""
SERIAL_INT = """
@wp.kernel
def bits_{T}(a: wp.array(dtype=wp.{T}), b: wp.array(dtype=wp.{T}), old: wp.array(dtype=wp.{T})):
    old[0] = wp.atomic_and(a, 0, b[0])
    old[1] = wp.atomic_or(a, 1, b[1])
    old[2] = wp.atomic_xor(a, 2, b[2])
    a[3] &= b[3]
    a[4] |= b[4]
    a[5] ^= b[5]
"""
WARP_TYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64")


@pytest.mark.parametrize("t", WARP_TYPES)
def test_returned_values_and_results_match_warp(device, rng, t):
    src = SERIAL.replace("{T}", t) + (SERIAL_INT.replace("{T}", t) if t[0] != "f" else "")
    mods = load_both(src)
    a, b = _values(rng, t, 9), _values(rng, t, 9)
    a[6] = b[7] if b[6] == a[6] else a[6]  # slot 6: compare value differs, no swap
    g = _values(rng, t, 4).reshape(2, 2)
    out = launch_both(mods, f"ops_{t}", 1, [Arr(a), Arr(b), Arr(np.zeros(10, t)), Arr(g)], device)
    np.testing.assert_array_equal(out[2][:7], a[:7])  # every atomic returns the previous value
    assert out[0][5] == b[5] and out[0][6] == a[6]
    if t[0] != "f":
        out = launch_both(mods, f"bits_{t}", 1, [Arr(a), Arr(b), Arr(np.zeros(3, t))], device)
        want = [a[0] & b[0], a[1] | b[1], a[2] ^ b[2], a[3] & b[3], a[4] | b[4], a[5] ^ b[5]]
        np.testing.assert_array_equal(out[0][:6], np.array(want, t))
        np.testing.assert_array_equal(out[2], a[:3])


COMPOSITE = """
import WP as wp


@wp.kernel
def composite(v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat22), vi: wp.array(dtype=wp.vec3i),
              x: wp.array(dtype=wp.vec3), xm: wp.array(dtype=wp.mat22), xi: wp.array(dtype=wp.vec3i),
              ov: wp.array(dtype=wp.vec3), om: wp.array(dtype=wp.mat22), oi: wp.array(dtype=wp.vec3i)):
    ov[0] = wp.atomic_add(v, 0, x[0])
    ov[1] = wp.atomic_sub(v, 1, x[1])
    ov[2] = wp.atomic_min(v, 2, x[2])
    ov[3] = wp.atomic_max(v, 3, x[3])
    ov[4] = wp.atomic_exch(v, 4, x[4])
    ov[5] = wp.atomic_cas(v, 5, v[5], x[5])
    ov[6] = wp.atomic_cas(v, 6, wp.vec3(v[6][0], v[6][1] + 1.0, v[6][2]), x[6])
    om[0] = wp.atomic_add(m, 0, xm[0])
    om[1] = wp.atomic_max(m, 1, xm[1])
    om[2] = wp.atomic_exch(m, 2, xm[2])
    om[3] = wp.atomic_cas(m, 3, m[3], xm[3])
    m[4] += xm[4]
    oi[0] = wp.atomic_and(vi, 0, xi[0])
    oi[1] = wp.atomic_or(vi, 1, xi[1])
    oi[2] = wp.atomic_xor(vi, 2, xi[2])
    oi[3] = wp.atomic_min(vi, 3, xi[3])
    vi[4] ^= xi[4]
"""


def test_vector_and_matrix_atomics_match_warp(device, rng):
    """Componentwise, returning the old vector/matrix; cas swaps only when the whole value matches."""
    mods = load_both(COMPOSITE)
    v, x = rng.uniform(-2, 2, (7, 3)).astype(np.float32), rng.uniform(-2, 2, (7, 3)).astype(np.float32)
    m, xm = rng.uniform(-2, 2, (5, 2, 2)).astype(np.float32), rng.uniform(-2, 2, (5, 2, 2)).astype(np.float32)
    vi, xi = rng.integers(-99, 99, (5, 3)).astype(np.int32), rng.integers(-99, 99, (5, 3)).astype(np.int32)
    args = [Arr(v, "vec3"), Arr(m, "mat22"), Arr(vi, "vec3i"), Arr(x, "vec3"), Arr(xm, "mat22"),
            Arr(xi, "vec3i"),
            Arr(np.zeros((7, 3), np.float32), "vec3"), Arr(np.zeros((4, 2, 2), np.float32), "mat22"),
            Arr(np.zeros((4, 3), np.int32), "vec3i")]
    got = launch_both(mods, "composite", 1, args, device)
    np.testing.assert_array_equal(got[6], v)
    np.testing.assert_array_equal(got[0][:4], np.stack([v[0] + x[0], v[1] - x[1], np.minimum(v[2], x[2]),
                                                        np.maximum(v[3], x[3])]))
    np.testing.assert_array_equal(got[0][5:], np.stack([x[5], v[6]]))  # swapped / left alone


def test_vector_atomics_contended(device, rng):
    src = """
import WP as wp


@wp.kernel
def spread(x: wp.array(dtype=wp.vec3), acc: wp.array(dtype=wp.vec3), lo: wp.array(dtype=wp.vec3),
           m: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    acc[i % 3] += x[i]
    wp.atomic_min(lo, i % 2, x[i])
    wp.atomic_add(m, 0, wp.mat22(x[i][0], x[i][1], x[i][2], 1.0))
"""
    mod = load_module(src, "tilewarp")
    # multiples of 1/64 in [-1, 1]: every partial sum of N of them is a multiple of 1/64 below
    # 2**17 in magnitude, exact in float32 (2**17 * 64 = 2**23), so the sums are exact in any order
    x = (rng.integers(-64, 65, (N, 3)) / 64).astype(np.float32)
    _, acc, lo, m = run(mod, "spread", N, [Arr(x, "vec3"), Arr(np.zeros((3, 3), np.float32), "vec3"),
                                           Arr(np.full((2, 3), 9, np.float32), "vec3"),
                                           Arr(np.zeros((1, 2, 2), np.float32), "mat22")], device)
    k = np.arange(N)
    for j in range(3):
        np.testing.assert_array_equal(acc[j], x[k % 3 == j].astype(np.float64).sum(0))
    for j in range(2):
        np.testing.assert_array_equal(lo[j], x[k % 2 == j].min(0))
    np.testing.assert_array_equal(m[0].reshape(-1)[:3], x.astype(np.float64).sum(0))
    assert m[0, 1, 1] == N


LITERALS = """
import WP as wp


@wp.kernel
def literal_values(a: wp.array(dtype=wp.int64), h: wp.array(dtype=wp.float16), u: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    wp.atomic_add(a, 0, 1)
    wp.atomic_cas(a, 1, 0, 7)
    h[0] += 0.5
    wp.atomic_max(u, 0, 200)
"""


def test_literal_values_take_the_array_type(device):
    """tilewarp only (Warp wants typed values): a bare literal becomes the array's element type."""
    mod = load_module(LITERALS, "tilewarp")
    a, h, u = run(mod, "literal_values", 1000, [Arr(np.zeros(2, np.int64)), Arr(np.zeros(1, np.float16)),
                                                Arr(np.zeros(1, np.uint32))], device)
    np.testing.assert_array_equal(a, [1000, 7])
    assert h[0] == 500 and u[0] == 200


# ---- bad input ----------------------------------------------------------------------------------

MARK = "# <- error"
BAD = """
import tilewarp as wp


@wp.kernel
def on_bool(a: wp.array(dtype=wp.bool)):
    wp.atomic_add(a, 0, True)  # <- error


@wp.kernel
def and_on_float(a: wp.array(dtype=float)):
    a[0] &= 1.0  # <- error


@wp.kernel
def wrong_value_type(a: wp.array(dtype=wp.int64)):
    wp.atomic_min(a, 0, wp.int32(3))  # <- error


@wp.kernel
def too_few_indices(a: wp.array2d(dtype=float)):
    wp.atomic_exch(a, 0, 1.0)  # <- error


@wp.kernel
def cas_missing_value(a: wp.array(dtype=wp.int32)):
    wp.atomic_cas(a, 0, 1)  # <- error


@wp.kernel
def add_on_int8(a: wp.array(dtype=wp.int8)):
    wp.atomic_add(a, 0, wp.int8(1))  # <- error


@wp.kernel
def max_on_vec3h(a: wp.array(dtype=wp.vec3h)):
    wp.atomic_max(a, 0, wp.vec3h())  # <- error


@wp.kernel
def and_on_vec3(a: wp.array(dtype=wp.vec3)):
    wp.atomic_and(a, 0, wp.vec3())  # <- error


@wp.kernel
def not_an_array(a: wp.array(dtype=float)):
    x = a[0]
    wp.atomic_add(x, 0, 1.0)  # <- error
"""
BAD_ARGS = {"on_bool": "bool", "and_on_float": "float32", "wrong_value_type": "int64",
            "too_few_indices": ("float32", 2), "cas_missing_value": "int32", "not_an_array": "float32",
            "add_on_int8": "int8", "max_on_vec3h": "vec3h", "and_on_vec3": "vec3"}
# Warp's wording, which scripts and Warp's own tests match (the message ends the error text)
WARP_MESSAGES = {
    "add_on_int8": "atomic_add() operations only work on arrays with [u]int32, [u]int64, float16, bfloat16, "
                   "float32, or float64 as the underlying scalar types, but got int8 (with scalar type int8)",
    "max_on_vec3h": "atomic_max() operations only work on arrays with [u]int32, [u]int64, bfloat16, float32, "
                    "or float64 as the underlying scalar types, but got vec3h (with scalar type float16)",
    "and_on_vec3": "atomic_and() operations only work on arrays with [u]int32 or [u]int64 as the underlying "
                   f"scalar types, but got {wp.types.type_repr(wp.vec3)} (with scalar type float32)",
}


@pytest.mark.parametrize("name", sorted(BAD_ARGS))
def test_bad_atomics_name_the_users_line(tmp_path, name):
    import importlib.util

    path = tmp_path / "bad_atomics.py"
    path.write_text(BAD)
    spec = importlib.util.spec_from_file_location(f"bad_atomics_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = BAD.splitlines()
    start = lines.index(next(x for x in lines if x.startswith(f"def {name}(")))
    line = next(k for k in range(start, len(lines)) if MARK in lines[k]) + 1
    dtype, ndim = BAD_ARGS[name] if isinstance(BAD_ARGS[name], tuple) else (BAD_ARGS[name], 1)
    arr = wp.zeros((1,) * ndim, dtype=getattr(wp, dtype), device="cpu")
    with pytest.raises(KernelTypeError) as info:
        wp.launch(getattr(module, name), dim=1, inputs=[arr], device="cpu")
    msg = str(info.value)
    assert f"{path}:{line}:" in msg, msg
    assert lines[line - 1].split(MARK)[0].strip() in msg, msg
    assert f"tilewarp{os.sep}" not in msg, msg
    if name in WARP_MESSAGES:
        assert isinstance(info.value, RuntimeError) and msg.endswith(WARP_MESSAGES[name]), msg


@wp.kernel
def _combinable(x: wp.array(dtype=wp.float64), total: wp.array(dtype=wp.float64), bins: wp.array(dtype=wp.int32),
                seen: wp.array(dtype=wp.int32), order: wp.array(dtype=wp.int32)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i])
    total[1] += 2.0 * x[i]
    bins[i % 3] -= 1
    order[wp.atomic_add(seen, 0, 1)] = i  # the old value is read: a plain atomic


@wp.kernel
def _read_too(x: wp.array(dtype=wp.float64), total: wp.array(dtype=wp.float64)):
    i = wp.tid()
    total[0] += x[i]
    if total[1] < 0.0:  # a read of the array: its adds stay atomics
        total[1] = 0.0


def test_adds_nobody_reads_are_combined_per_thread(device, rng):
    """A SIMT kernel's adds into an array it uses for nothing else, whose old values nobody reads, go
    through each thread's combiner (one atomic per run of equal addresses, flushed after its last
    task): the emitted code says so, and the totals are the sums, contended over many threads. An
    add whose old value is used, or into an array the kernel also reads, stays an atomic."""
    from tilewarp.emit import emit_module

    source = emit_module(_combinable.ir)
    assert source.count("tw::atomic_add_combined(") == 2 and source.count("tw::atomic_sub_combined(") == 1
    assert source.count("tw::atomic_add(") == 1  # seen's
    assert "combined(" not in emit_module(_read_too.ir).split("// kernel")[1]
    n = N
    x = rng.random(n)
    total, bins = wp.zeros(2, dtype=wp.float64, device=device), wp.zeros(3, dtype=wp.int32, device=device)
    seen, order = wp.zeros(1, dtype=wp.int32, device=device), wp.zeros(n, dtype=wp.int32, device=device)
    wp.launch(_combinable, dim=n, inputs=[wp.array(x, dtype=wp.float64, device=device), total, bins, seen, order],
              device=device)
    np.testing.assert_allclose(total.numpy(), [x.sum(), 2.0 * x.sum()], rtol=1e-12)
    np.testing.assert_array_equal(bins.numpy(), -np.bincount(np.arange(n) % 3))
    assert sorted(order.numpy().tolist()) == list(range(n))
    both = wp.zeros(2, dtype=wp.float64, device=device)
    wp.launch(_read_too, dim=n, inputs=[wp.array(x, dtype=wp.float64, device=device), both], device=device)
    np.testing.assert_allclose(both.numpy()[0], x.sum(), rtol=1e-12)
