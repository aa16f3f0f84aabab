"""Random numbers: Warp's names, signatures and state semantics; tilewarp's own streams.

* Streams are exact: every value a kernel draws equals, bit for bit, the numpy reference in
  ``tilewarp.builtins.random`` (integer hashing, floats from correctly rounded operations only), on
  CPU and on CUDA alike.
* State semantics are Warp's, checked differentially: ``wp.randf(state)`` advances a local ``state``
  in place, a copy (``s2 = state``) keeps its own position, a ``@wp.func`` advances its own copy,
  loops and branches carry the advanced state, ``poisson(state, 0)`` consumes nothing.
* Distributions (Warp's streams are not reproduced): 10^6 samples per check, moments and ranges.
"""
import os

import numpy as np
import pytest
from conftest import Arr, Val, load_both, load_module, run

import tilewarp as wp
import tilewarp.builtins.random as R
from tilewarp import KernelTypeError

STREAMS = """
import WP as wp


@wp.kernel
def streams(seed: int, lam_small: float, lam_large: float, ints: wp.array(dtype=wp.int32, ndim=2),
            uints: wp.array(dtype=wp.uint32, ndim=2), floats: wp.array(dtype=float, ndim=2),
            v2: wp.array(dtype=wp.vec2, ndim=2), v3: wp.array(dtype=wp.vec3, ndim=2)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    uints[i, 0] = state
    uints[i, 1] = wp.rand_init(seed)
    uints[i, 2] = wp.randu(state)
    uints[i, 3] = wp.randu(state, wp.uint32(7), wp.uint32(4000000000))
    uints[i, 4] = wp.poisson(state, lam_small)
    uints[i, 5] = wp.poisson(state, lam_large)
    ints[i, 0] = wp.randi(state)
    ints[i, 1] = wp.randi(state, -5, 17)
    floats[i, 0] = wp.randf(state)
    floats[i, 1] = wp.randf(state, -2.5, 4.0)
    floats[i, 2] = wp.randn(state)
    v2[i, 0] = wp.sample_unit_square(state)
    v2[i, 1] = wp.sample_unit_ring(state)
    v2[i, 2] = wp.sample_unit_disk(state)
    v2[i, 3] = wp.sample_triangle(state)
    v3[i, 0] = wp.sample_unit_cube(state)
    v3[i, 1] = wp.sample_unit_sphere_surface(state)
    v3[i, 2] = wp.sample_unit_sphere(state)
    v3[i, 3] = wp.sample_unit_hemisphere_surface(state)
    v3[i, 4] = wp.sample_unit_hemisphere(state)
    uints[i, 6] = state
"""
N = 1 << 20


def _launch_streams(mod, device, n, seed, lam_small=3.5, lam_large=250.0):
    outs = [Arr(np.zeros((n, 2), np.int32)), Arr(np.zeros((n, 7), np.uint32)),
            Arr(np.zeros((n, 3), np.float32)), Arr(np.zeros((n, 4, 2), np.float32), "vec2"),
            Arr(np.zeros((n, 5, 3), np.float32), "vec3")]
    return run(mod, "streams", n, [seed, lam_small, lam_large, *outs], device)


def _reference(n, seed, lam_small=3.5, lam_large=250.0):
    """The same draws in numpy: each call uses the state, then the state steps once."""
    s = R.rand_init(np.full(n, seed), np.arange(n))
    ref = {"init": s, "init1": R.rand_init(np.full(n, seed))}
    calls = [("randu", lambda s: R.randu(s)), ("randu_r", lambda s: R.randu(s, 7, 4000000000)),
             ("poisson_s", lambda s: R.poisson(s, lam_small)),
             ("poisson_l", lambda s: R.poisson(s, lam_large)),
             ("randi", R.randi), ("randi_r", lambda s: R.randi(s, -5, 17)), ("randf", lambda s: R.randf(s)),
             ("randf_r", lambda s: R.randf(s, -2.5, 4.0)), ("randn", R.randn),
             ("square", R.sample_unit_square), ("ring", R.sample_unit_ring), ("disk", R.sample_unit_disk),
             ("triangle", R.sample_triangle), ("cube", R.sample_unit_cube),
             ("sphere_s", R.sample_unit_sphere_surface),
             ("sphere", R.sample_unit_sphere), ("hemi_s", R.sample_unit_hemisphere_surface),
             ("hemi", R.sample_unit_hemisphere)]
    for name, fn in calls:
        ref[name] = fn(s)
        s = R.step(s)
    ref["final"] = s
    return ref


@pytest.fixture(scope="module")
def streams_mod():
    return load_module(STREAMS, "tilewarp")


@pytest.mark.parametrize("seed", [0, 42, -7, 2**31 - 1])
def test_streams_equal_the_numpy_reference_bit_for_bit(streams_mod, device, seed):
    n = 1 << 14
    ints, uints, floats, v2, v3 = _launch_streams(streams_mod, device, n, seed)
    ref = _reference(n, seed)
    got = {"init": uints[:, 0], "init1": uints[:, 1], "randu": uints[:, 2], "randu_r": uints[:, 3],
           "poisson_s": uints[:, 4], "poisson_l": uints[:, 5], "randi": ints[:, 0], "randi_r": ints[:, 1],
           "randf": floats[:, 0], "randf_r": floats[:, 1], "randn": floats[:, 2], "square": v2[:, 0],
           "ring": v2[:, 1], "disk": v2[:, 2], "triangle": v2[:, 3], "cube": v3[:, 0], "sphere_s": v3[:, 1],
           "sphere": v3[:, 2], "hemi_s": v3[:, 3], "hemi": v3[:, 4], "final": uints[:, 6]}
    for name, want in ref.items():
        g = got[name]
        np.testing.assert_array_equal(g.view(np.uint32), np.asarray(want).astype(g.dtype).view(np.uint32),
                                      err_msg=name)


def test_determinism_across_launches(streams_mod, device):
    a = _launch_streams(streams_mod, device, 4096, 1234)
    b = _launch_streams(streams_mod, device, 4096, 1234)
    c = _launch_streams(streams_mod, device, 4096, 1235)
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(x, y)
        assert not np.array_equal(x, z)


def test_python_scope_calls_use_the_same_algorithm_and_leave_the_state(streams_mod):
    state = wp.rand_init(42, 3)
    assert isinstance(state, wp.uint32) and int(state) == int(R.rand_init(42, 3))
    assert int(wp.rand_init(42)) == int(wp.rand_init(42, 0))
    first = wp.randf(state)
    assert wp.randf(state) == first == float(R.randf(np.array([int(state)], np.uint32))[0])
    assert 0 <= wp.randi(state, 0, 10) < 10 and isinstance(wp.randu(state), int)
    v = wp.sample_unit_sphere_surface(state)
    assert isinstance(v, wp.vec3) and abs(np.linalg.norm(v.numpy()) - 1) < 1e-6
    assert wp.poisson(state, 0.0) == 0


SEEDS = """
import WP as wp


@wp.kernel
def seeds(s32: wp.int32, u32: wp.uint32, s64: wp.int64, u64: wp.uint64, out: wp.array(dtype=wp.uint32)):
    out[0] = wp.rand_init(s32)
    out[1] = wp.rand_init(u32)
    out[2] = wp.rand_init(s64)
    out[3] = wp.rand_init(u64)
    out[4] = wp.rand_init(s64, s32)
    out[5] = wp.rand_init(wp.int8(-3), wp.uint16(9))
"""


def test_seeds_of_every_integer_type(device):
    """tilewarp takes any integer seed (Warp: int32); a seed's bits depend on its value while it fits 32
    bits, and 64-bit seeds fold in their high word."""
    mod = load_module(SEEDS, "tilewarp")
    vals = (-5, 4000000000, -(2**40) + 3, 2**63 + 11)
    out = run(mod, "seeds", 1, [Val("int32", vals[0]), Val("uint32", vals[1]), Val("int64", vals[2]),
                                Val("uint64", vals[3]), Arr(np.zeros(6, np.uint32))], device)[0]
    want = [R.rand_init(vals[0]), R.rand_init(vals[1], 0, (False, True)), R.rand_init(vals[2]),
            R.rand_init(np.uint64(vals[3]), 0, (False, True)), R.rand_init(vals[2], vals[0]),
            R.rand_init(-3, 9)]
    np.testing.assert_array_equal(out, np.array([int(w) for w in want], np.uint32))
    assert out[0] == int(wp.rand_init(-5))


SEMANTICS = """
import WP as wp


@wp.func
def second(s: wp.uint32):
    a = wp.randf(s)
    return wp.randf(s)


@wp.kernel
def sequence(seed: int, seq: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    for j in range(16):
        seq[i, j] = wp.randf(state)


@wp.kernel
def semantics(seed: int, out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    s2 = state
    out[i, 0] = wp.randf(state)
    out[i, 1] = wp.randf(s2)
    out[i, 2] = second(state)
    out[i, 3] = wp.randf(state)
    for j in range(3):
        out[i, 4 + j] = wp.randf(state)
    if out[i, 0] > 0.5:
        y = wp.randf(state)
    out[i, 7] = wp.randf(state)
    out[i, 8] = float(wp.poisson(state, 0.0))
    out[i, 9] = wp.randf(state)
    k = int(0)
    while k < 2:
        out[i, 10 + k] = wp.randf(state)
        k += 1
    out[i, 12] = wp.randf(state)
"""


def _draw_index(seq, out):
    """For every output, the position in its thread's stream of the equal draw (-1: none)."""
    hits = seq[:, None, :] == out[:, :, None]
    return np.where(hits.any(-1), hits.argmax(-1), -1)


def test_state_advances_like_warp(device):
    """Run under both libraries: each output is a known position in its own library's stream."""
    mods = load_both(SEMANTICS)
    n = 256
    for mod, dev in ((mods[0], device), (mods[1], "cpu")):
        if mod is None:
            continue
        seq = run(mod, "sequence", n, [7, Arr(np.zeros((n, 16), np.float32))], dev)[0]
        out = run(mod, "semantics", n, [7, Arr(np.zeros((n, 13), np.float32))], dev)[0]
        idx = _draw_index(seq, out)
        taken = (seq[:, 0] > 0.5).astype(int)  # the `if` consumed one draw
        fixed = [0, 0, 2, 1, 2, 3, 4]  # copy, @wp.func copy, loop; then the `if` may shift by one
        want = np.stack([np.full(n, k) for k in fixed] + [5 + taken, np.full(n, -1), 6 + taken, 7 + taken,
                                                          8 + taken, 9 + taken], 1)
        np.testing.assert_array_equal(idx, want, err_msg=mod.wp.__name__)
        assert (out[:, 8] == 0).all()


CONDITIONAL = """
import WP as wp


@wp.kernel
def conditional(seed: int, out: wp.array(dtype=float, ndim=2), count: wp.array(dtype=wp.int32)):
    i = wp.tid()
    state = wp.rand_init(seed, i)
    first = wp.randf(state)
    x = wp.randf(state) if first > 0.5 else -1.0
    out[i, 0] = x
    out[i, 1] = wp.randf(state)
    if first < 0.3 and wp.randf(state) < 0.5:
        out[i, 2] = 1.0
    out[i, 3] = wp.randf(state)
    n = int(0)
    while wp.randf(state) < 0.75:
        n += 1
    count[i] = n
    out[i, 4] = wp.randf(state)
"""


def test_conditional_expressions_and_loop_tests_advance_only_when_evaluated(device):
    """tilewarp only (Warp evaluates both sides of `and` and of a ternary): a draw in a branch of a
    conditional expression advances the state only when that branch runs; a `while` test draws each time."""
    mod = load_module(CONDITIONAL, "tilewarp")
    n = 512
    out, count = run(mod, "conditional", n,
                     [11, Arr(np.zeros((n, 5), np.float32)), Arr(np.zeros(n, np.int32))], device)
    seq = run(load_module(SEMANTICS, "tilewarp"), "sequence", n, [11, Arr(np.zeros((n, 16), np.float32))],
              device)[0]
    pos = 1 + (seq[:, 0] > 0.5)
    rows = np.arange(n)
    np.testing.assert_array_equal(out[:, 0], np.where(seq[:, 0] > 0.5, seq[:, 1], -1.0))
    np.testing.assert_array_equal(out[:, 1], seq[rows, pos])
    pos = pos + 1 + (seq[:, 0] < 0.3)
    np.testing.assert_array_equal(out[:, 3], seq[rows, pos])
    pos = pos + 1
    for i in range(n):  # the while test draws until one is >= 0.75, then out[i, 4] is the next draw
        k = 0
        while pos[i] + k < 15 and seq[i, pos[i] + k] < 0.75:
            k += 1
        if pos[i] + k < 15:
            assert count[i] == k and out[i, 4] == seq[i, pos[i] + k + 1]


# ---- distributions (10^6 samples) ----------------------------------------------------------------


@pytest.fixture(scope="module")
def samples(streams_mod):
    """One large launch on the CPU, shared by the distribution checks (the streams test covers CUDA)."""
    return _launch_streams(streams_mod, "cpu", N, 20240607)


def _moments(x, mean, var, tol=5):
    """Sample mean and variance within ``tol`` standard errors (normal-theory, generous for var)."""
    n = x.shape[0]
    x = x.astype(np.float64)
    assert abs(x.mean(0) - mean).max() < tol * np.sqrt(var / n), (x.mean(0), mean)
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    assert abs(x.var(0) - var).max() < tol * np.sqrt(np.max(m4 - x.var(0) ** 2) / n), (x.var(0), var)


def test_uniform_integers_and_floats(samples):
    ints, uints, floats = samples[:3]
    u = floats[:, 0]
    assert u.min() >= 0 and u.max() < 1 and np.all(u * 2**24 == np.floor(u * 2**24))
    _moments(u, 0.5, 1 / 12)
    r = floats[:, 1]
    assert r.min() >= -2.5 and r.max() < 4.0
    _moments(r, 0.75, 6.5**2 / 12)
    k = ints[:, 1]
    assert k.min() == -5 and k.max() == 16
    counts = np.bincount(k + 5)
    chi2 = ((counts - N / 22) ** 2 / (N / 22)).sum()
    assert chi2 < 60, chi2  # 21 degrees of freedom: p ~ 1e-5
    full = uints[:, 2].astype(np.float64)
    _moments(full, (2**32 - 1) / 2, (2**64 - 1) / 12)
    _moments(ints[:, 0].astype(np.float64), -0.5, (2**64 - 1) / 12)
    assert uints[:, 3].min() >= 7 and uints[:, 3].max() < 4000000000
    bits = np.unpackbits(np.ascontiguousarray(uints[:, 2]).view(np.uint8)).reshape(N, 32).mean(0)
    assert np.abs(bits - 0.5).max() < 5 * 0.5 / np.sqrt(N)


def test_normal(samples):
    z = samples[2][:, 2].astype(np.float64)
    _moments(z, 0.0, 1.0)
    assert abs(((z - z.mean()) ** 3).mean()) < 0.01  # skewness
    assert abs((z ** 4).mean() - 3) < 0.03  # kurtosis
    for k, p in ((1, 0.6826894921), (2, 0.9544997361), (3, 0.9973002039)):
        assert abs((np.abs(z) < k).mean() - p) < 5 * np.sqrt(p * (1 - p) / N)


def test_points_on_and_in_shapes(samples):
    v2, v3 = samples[3], samples[4]
    square, ring, disk, tri = v2[:, 0], v2[:, 1], v2[:, 2], v2[:, 3]
    cube, sphere_s, ball, hemi_s, hemi = (v3[:, k] for k in range(5))
    for box in (square, cube):
        assert box.min() >= -0.5 and box.max() < 0.5
        _moments(box, 0.0, 1 / 12)
    for surface in (ring, sphere_s, hemi_s):
        np.testing.assert_allclose(np.linalg.norm(surface.astype(np.float64), axis=1), 1.0, atol=1e-6)
    _moments(ring, 0.0, 0.5)
    _moments(sphere_s, 0.0, 1 / 3)  # Archimedes: each coordinate uniform on [-1, 1]
    assert hemi_s[:, 2].min() >= 0 and hemi[:, 2].min() >= 0
    _moments(hemi_s[:, 2], 0.5, 1 / 12)
    for inside, dim in ((disk, 2), (ball, 3), (hemi, 3)):
        r = np.linalg.norm(inside.astype(np.float64), axis=1)
        assert r.max() <= 1.0
        _moments(r ** dim, 0.5, 1 / 12)  # uniform in volume: r^dim is uniform on [0, 1]
    _moments(ball, 0.0, 1 / 5)
    assert tri.min() >= 0 and (tri.sum(1) <= 1 + 1e-7).all()
    _moments(tri, 1 / 3, 1 / 18)


@pytest.mark.parametrize("lam", [0.3, 3.5, 9.99, 10.0, 42.0, 1000.0, 123456.0])
def test_poisson_mean_and_variance(streams_mod, lam):
    counts = _launch_streams(streams_mod, "cpu", N // 4, 99, lam_small=min(lam, 9.99), lam_large=lam)[1]
    k = counts[:, 5 if lam >= 10 else 4].astype(np.float64)
    lam = min(lam, 9.99) if lam < 10 else lam
    n = k.size
    assert abs(k.mean() - lam) < 5 * np.sqrt(lam / n)
    assert abs(k.var() / lam - 1) < 5 * np.sqrt(2 / n + 1 / (lam * n))
    if lam < 50:  # the whole law: frequencies of each count against the Poisson pmf
        from math import exp, lgamma, log

        values = np.arange(int(lam + 6 * np.sqrt(lam)) + 3)
        pmf = np.array([exp(v * log(lam) - lam - lgamma(v + 1)) for v in values])
        freq = np.bincount(k.astype(np.int64), minlength=values.size)[: values.size] / n
        assert np.abs(freq - pmf).max() < 5 * np.sqrt(pmf.max() / n)


CDF = """
import WP as wp


@wp.kernel
def pick(seed: int, cdf: wp.array(dtype=float), out: wp.array(dtype=int), after: wp.array(dtype=float)):
    i = wp.tid()
    rng = wp.rand_init(seed, i)
    out[i] = wp.sample_cdf(rng, cdf)
    after[i] = wp.randf(rng)
"""


def test_sample_cdf(device):
    """Warp's semantics: the first index whose cdf entry is >= u; it advances the state once."""
    mods = load_both(CDF)
    weights = np.array([0.1, 0.0, 0.4, 0.2, 0.3], np.float32)
    cdf = (np.cumsum(weights) / weights.sum()).astype(np.float32)
    n = 200000
    args = [5, Arr(cdf), Arr(np.zeros(n, np.int32)), Arr(np.zeros(n, np.float32))]
    out, after = run(mods[0], "pick", n, args, device)[1:]
    s = R.rand_init(np.full(n, 5), np.arange(n))
    np.testing.assert_array_equal(out, R.sample_cdf(s, cdf))
    np.testing.assert_array_equal(after, R.randf(R.step(s)))
    freq = np.bincount(out, minlength=5) / n
    assert np.abs(freq - weights).max() < 5 * np.sqrt(0.25 / n) and freq[1] == 0
    if mods[1] is not None:  # Warp's own stream, the same law
        warp_out = run(mods[1], "pick", n, [5, Arr(cdf), Arr(np.zeros(n, np.int32)),
                                            Arr(np.zeros(n, np.float32))], "cpu")[1]
        assert np.abs(np.bincount(warp_out, minlength=5) / n - weights).max() < 5 * np.sqrt(0.25 / n)


# ---- bad input -----------------------------------------------------------------------------------

MARK = "# <- error"
BAD = """
import tilewarp as wp


@wp.kernel
def int_state(a: wp.array(dtype=float)):
    state = wp.int32(5)
    a[0] = wp.randf(state)  # <- error


@wp.kernel
def float_bounds_for_randi(a: wp.array(dtype=float)):
    state = wp.rand_init(1)
    a[0] = float(wp.randi(state, 0.5, 2.5))  # <- error


@wp.kernel
def float_seed(a: wp.array(dtype=float)):
    state = wp.rand_init(1.5)  # <- error


@wp.kernel
def int_cdf(a: wp.array(dtype=float), c: wp.array(dtype=int)):
    state = wp.rand_init(1)
    a[0] = float(wp.sample_cdf(state, c))  # <- error


@wp.kernel
def no_state(a: wp.array(dtype=float)):
    a[0] = wp.randn()  # <- error
"""
BAD_ARGS = {"int_state": 1, "float_bounds_for_randi": 1, "float_seed": 1, "int_cdf": 2, "no_state": 1}


@pytest.mark.parametrize("name", sorted(BAD_ARGS))
def test_bad_random_calls_name_the_users_line(tmp_path, name):
    import importlib.util

    path = tmp_path / "bad_random.py"
    path.write_text(BAD)
    spec = importlib.util.spec_from_file_location(f"bad_random_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = BAD.splitlines()
    start = lines.index(next(x for x in lines if x.startswith(f"def {name}(")))
    line = next(k for k in range(start, len(lines)) if MARK in lines[k]) + 1
    inputs = [wp.zeros(1, dtype=float, device="cpu"), wp.zeros(1, dtype=int, device="cpu")][:BAD_ARGS[name]]
    with pytest.raises(KernelTypeError) as info:
        wp.launch(getattr(module, name), dim=1, inputs=inputs, device="cpu")
    msg = str(info.value)
    assert f"{path}:{line}:" in msg, msg
    assert lines[line - 1].split(MARK)[0].strip() in msg, msg
    assert f"tilewarp{os.sep}" not in msg, msg
