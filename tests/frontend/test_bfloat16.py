"""``wp.bfloat16`` (8-bit exponent, 7-bit mantissa, 16-bit storage) end to end.

Conversions are checked against a numpy model of round-to-nearest-even written here with integer
operations on float32 bits (independent of tilewarp's own); kernel arithmetic against that model
(each operation computed in float32 and rounded back) and bit for bit against warp-lang on CPU;
arrays round trip as their uint16 bits, which is what Warp's ``.numpy()`` returns for bfloat16; a
gradient through bfloat16 arithmetic against central finite differences; unsupported uses raise
typed, located errors. Inputs are random bit patterns or random values, never zeros only.
"""
import sys

import numpy as np
import pytest
from conftest import Arr, Val, check_located, launch_both, load_both, reference, run, warp

import tilewarp as wp
from tilewarp import KernelTypeError

BF16 = wp.bfloat16
VEC3BF = wp.vector(3, wp.bfloat16)


# ---- the reference: round to nearest even on float32 bits ------------------------------------------


def ref_bits(x) -> np.ndarray:
    """bfloat16 bits of ``x`` (rounded to float32 first): the top 16 bits, plus one where the dropped
    half is above 0x8000 or exactly 0x8000 with an odd top; a NaN keeps its top bits, made quiet."""
    f = np.asarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.int64)
    top, dropped = u >> 16, u & 0xFFFF
    up = (dropped > 0x8000) | ((dropped == 0x8000) & (top % 2 == 1))
    return np.where(np.isnan(f), top | 0x40, top + up).astype(np.uint16)


def ref_values(bits) -> np.ndarray:
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def ref_round(x) -> np.ndarray:
    return ref_values(ref_bits(x))


def random_floats(rng, n) -> np.ndarray:
    """Random float32 bit patterns (every exponent, subnormals, infinities, NaN payloads) and ties."""
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    bits[: n // 4] = (bits[: n // 4] & np.uint32(0xFFFF0000)) | np.uint32(0x8000)  # exact halfway cases
    bits[n // 4: n // 4 + 8] = [0x7F7FFFFF, 0xFF7F8000, 0x7F800000, 0xFF800000, 0x7F800001, 0xFFFFFFFF,
                                0x00008000, 0x80018000]  # max float, overflow ties, inf, NaNs, subnormals
    return bits.view(np.float32)


def bits_of(a) -> np.ndarray:
    return np.asarray(a.numpy(), dtype=np.uint16)


def test_reference_model_on_known_values():
    assert ref_bits(np.float32(1.0)) == 0x3F80 and ref_bits(np.float32(-2.0)) == 0xC000
    assert ref_bits(np.uint32(0x3F808000).view(np.float32)) == 0x3F80  # tie, even top stays
    assert ref_bits(np.uint32(0x3F818000).view(np.float32)) == 0x3F82  # tie, odd top rounds up
    assert ref_bits(np.float32(3.4e38)) == 0x7F80  # beyond the largest bfloat16's halfway: inf
    assert np.isnan(ref_values(ref_bits(np.uint32(0x7F800001).view(np.float32))))  # NaN stays NaN


# ---- host side: scalars and arrays --------------------------------------------------------------------


def test_host_conversion_matches_reference(rng):
    x = random_floats(rng, 100_000)
    np.testing.assert_array_equal(bits_of(wp.array(x, dtype=BF16)), ref_bits(x))
    for v in x[::97]:
        got, want = np.float32(BF16(float(v)).value), ref_values(ref_bits(v))
        assert got.view(np.uint32) == want.view(np.uint32) or (np.isnan(got) and np.isnan(v))
    # a float64 rounds through float32, as in Warp: 1 + 2^-8 + 2^-40 becomes the tie 1 + 2^-8 -> 1.0
    assert BF16(1 + 2**-8 + 2**-40).value == 1.0 and BF16(1 + 2**-8 + 2**-20).value == 1 + 2**-7


def test_array_round_trip_and_warp_numpy(rng):
    every = np.arange(2**16, dtype=np.uint16)  # uint16 data is taken as bits, as in Warp
    np.testing.assert_array_equal(bits_of(wp.array(every, dtype=BF16)), every)
    x = rng.uniform(-1e4, 1e4, 1000).astype(np.float32)
    a = wp.array(x, dtype=BF16)
    assert a.numpy().dtype == np.uint16 and a.dtype is BF16
    assert [v.value for v in a.list()] == ref_round(x).tolist() and type(a.list()[0]) is BF16
    if warp is not None:
        theirs = warp.array(x, dtype=warp.bfloat16, device="cpu").numpy()
        assert theirs.dtype == np.uint16
        np.testing.assert_array_equal(a.numpy(), theirs)
    assert not bits_of(wp.zeros(7, dtype=BF16)).any()
    a.fill_(BF16(-1.1))
    np.testing.assert_array_equal(a.numpy(), np.full(1000, ref_bits(-1.1)))
    a.assign(x[::-1])
    np.testing.assert_array_equal(a.numpy(), ref_bits(x[::-1]))
    v = wp.array(x[:999].reshape(333, 3), dtype=VEC3BF)
    assert v.numpy().shape == (333, 3) and v.numpy().dtype == np.uint16
    np.testing.assert_array_equal(v.numpy(), ref_bits(x[:999]).reshape(333, 3))
    assert v.list()[5] == VEC3BF(*x[15:18])
    assert wp.types.type_repr(BF16) == "bfloat16" and VEC3BF.__name__ == "vec3bf"
    assert wp.types.type_size(BF16) == 2 and wp.dtype_to_numpy(BF16) is np.uint16


def test_dlpack_keeps_bfloat16(rng):
    a = wp.array(rng.uniform(-3, 3, 64).astype(np.float32), dtype=BF16)
    b = wp.from_dlpack(wp.to_dlpack(a))
    assert b.dtype is BF16 and b.ptr == a.ptr
    np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_host_arithmetic_rounds_each_result(rng):
    x, y = ref_round(rng.uniform(-50, 50, 300)), ref_round(rng.uniform(0.5, 9, 300))
    for a, b in zip(x.tolist(), y.tolist()):
        got = [BF16(a) + BF16(b), BF16(a) - BF16(b), BF16(a) * BF16(b), BF16(a) / BF16(b), -BF16(a)]
        p, q = np.float32(a), np.float32(b)
        want = ref_round(np.array([p + q, p - q, p * q, p / q, -p]))
        assert all(type(g) is BF16 for g in got)
        np.testing.assert_array_equal([g.value for g in got], want)
    assert (BF16(1.5) + 2).value == 3.5 and repr(BF16(1.1)) == "bfloat16(1.1015625)"
    assert VEC3BF(1.1, 2.2, 3.3) * BF16(2) == VEC3BF(2.203125, 4.40625, 6.59375)


@pytest.mark.parametrize("other", [lambda: wp.float16(1), lambda: wp.float32(1), lambda: np.float32(1),
                                   lambda: np.uint16(1)],
                         ids=["float16", "float32", "np.float32", "np.uint16"])
def test_host_types_do_not_mix(other):
    with pytest.raises(TypeError, match="unsupported operand types"):
        BF16(1) * other()


# ---- kernels ---------------------------------------------------------------------------------------

OPS = ["x + y", "x - y", "x * y", "x / y", "wp.min(x, y)", "wp.max(x, y)", "wp.sqrt(wp.abs(x))", "wp.abs(x)",
       "-x", "x // y", "x % y", "wp.floor(x)", "wp.ceil(x)", "wp.trunc(x)", "wp.round(x)", "wp.rint(x)",
       "wp.sign(x)", "x * y + x", "wp.clamp(x, y, wp.bfloat16(2.0))", "wp.frac(x)",
       "wp.lerp(x, y, wp.bfloat16(0.25))", "wp.smoothstep(x, y, wp.bfloat16(0.5))", "wp.copysign(x, y)",
       "wp.step(x)", "wp.degrees(x)",
       # from here on float32 library functions, whose last bits differ between CPU and GPU libraries
       "wp.sin(x)", "wp.exp(y)", "wp.log(wp.abs(x))", "wp.pow(wp.abs(x), y)", "wp.abs(x) ** y",
       "wp.atan2(x, y)", "wp.tanh(x)", "wp.cbrt(x)", "wp.erf(x)"]
N_EXACT = OPS.index("wp.sin(x)")  # the columns before are correctly rounded: the same bits everywhere
CMP = ["x < y", "x <= y", "x > y", "x >= y", "x == y", "x != y", "wp.isnan(x)", "wp.isinf(y)",
       "wp.isfinite(x)"]

SRC = f'''import WP as wp


@wp.kernel
def ops(a: wp.array(dtype=wp.bfloat16), b: wp.array(dtype=wp.bfloat16),
        out: wp.array(dtype=wp.bfloat16, ndim=2), cmp: wp.array(dtype=wp.bool, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = b[i]
{"".join(f"    out[i, {k}] = {e}{chr(10)}" for k, e in enumerate(OPS))}\
{"".join(f"    cmp[i, {k}] = {e}{chr(10)}" for k, e in enumerate(CMP))}

@wp.kernel
def casts(a: wp.array(dtype=wp.bfloat16), f: wp.array(dtype=wp.float32), d: wp.array(dtype=wp.float64),
          n: wp.array(dtype=wp.int32), h: wp.array(dtype=wp.float16), o: wp.array(dtype=wp.bfloat16, ndim=2),
          back: wp.array(dtype=wp.float64, ndim=2), ints: wp.array(dtype=wp.int32, ndim=2)):
    i = wp.tid()
    o[i, 0] = wp.bfloat16(f[i])
    o[i, 1] = wp.bfloat16(d[i])
    o[i, 2] = wp.bfloat16(n[i])
    o[i, 3] = wp.bfloat16(h[i])
    x = a[i]
    back[i, 0] = wp.float64(float(x))
    back[i, 1] = wp.float64(x)
    back[i, 2] = wp.float64(wp.float16(x))
    ints[i, 0] = int(x)
    ints[i, 1] = wp.int32(wp.int64(x))
    ints[i, 2] = wp.int32(wp.int16(x))


@wp.kernel
def atomics(v: wp.array(dtype=wp.bfloat16), idx: wp.array(dtype=wp.int32),
            acc: wp.array(dtype=wp.bfloat16, ndim=2)):
    i = wp.tid()
    k = idx[i]
    wp.atomic_add(acc, 0, k, v[i])
    wp.atomic_sub(acc, 1, k, v[i])
    wp.atomic_min(acc, 2, k, v[i])
    wp.atomic_max(acc, 3, k, v[i])
    acc[4, k] += v[i]
    acc[5, k] -= v[i]


@wp.kernel
def scaled(a: wp.array(dtype=wp.bfloat16), s: wp.bfloat16, out: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    out[i] = a[i] * s
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def _operands(rng, n):
    """Random bfloat16 values, no zeros or NaNs: Warp's -x of those differs (docs/COMPATIBILITY.md)."""
    a = ref_round(rng.uniform(-10, 10, n))
    a[a == 0] = 1.5
    b = ref_round(rng.uniform(0.25, 3, n) * rng.choice([-1, 1], n))
    b[:40] = a[:40]  # ties for min/max and ==
    return a, b


def test_arithmetic_matches_model_and_warp(mods, device, rng):
    n = 2000
    a, b = _operands(rng, n)
    args = [Arr(a, "bfloat16"), Arr(b, "bfloat16"), Arr(np.zeros((n, len(OPS)), np.float32), "bfloat16"),
            Arr(np.zeros((n, len(CMP)), bool))]
    _, _, out, cmp = run(mods[0], "ops", n, args, device)
    ref_mod, ref_device = reference(mods, device)  # Warp on CPU (tilewarp's CPU run without warp-lang)
    _, _, want, want_cmp = run(ref_mod, "ops", n, args, ref_device)
    np.testing.assert_array_equal(out[:, :N_EXACT], want[:, :N_EXACT])  # bit for bit
    np.testing.assert_array_equal(cmp, want_cmp)
    steps = np.abs(out[:, N_EXACT:].astype(np.int32) - want[:, N_EXACT:].astype(np.int32))
    assert steps.max() <= 1, [OPS[N_EXACT + k] for k in np.nonzero(steps.max(0) > 1)[0]]  # one bfloat16 ulp
    x, y = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        model = [x + y, x - y, x * y, x / y, np.minimum(x, y), np.maximum(x, y), np.sqrt(np.abs(x)),
                 np.abs(x), -x]
    for k, m in enumerate(model):
        np.testing.assert_array_equal(out[:, k], ref_bits(m), err_msg=OPS[k])
    np.testing.assert_array_equal(cmp[:, :6], np.stack([x < y, x <= y, x > y, x >= y, x == y, x != y], 1))
    assert cmp[:, 8].all() and not cmp[:, 6:8].any()


def test_negation_and_classification_on_special_values(mods, device):
    """-x flips the sign bit (so -0 and -NaN, as float32 does); isnan/isinf/isfinite by the bits."""
    a = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3.0], np.float32)
    b = np.array([np.inf, 1.0, -np.inf, np.nan, 2.0, 1.0, np.inf], np.float32)
    args = [Arr(a, "bfloat16"), Arr(b, "bfloat16"), Arr(np.zeros((7, len(OPS)), np.float32), "bfloat16"),
            Arr(np.zeros((7, len(CMP)), bool))]
    _, _, out, cmp = run(mods[0], "ops", 7, args, device)
    np.testing.assert_array_equal(out[:, OPS.index("-x")], ref_bits(a) ^ np.uint16(0x8000))
    absolute = out[:, OPS.index("wp.abs(x)")]  # through fabsf: a NaN's payload is the library's
    np.testing.assert_array_equal(np.isnan(ref_values(absolute)), np.isnan(a))
    np.testing.assert_array_equal(absolute[~np.isnan(a)], ref_bits(np.abs(a[~np.isnan(a)])))
    np.testing.assert_array_equal(cmp[:, 6], np.isnan(a))
    np.testing.assert_array_equal(cmp[:, 7], np.isinf(b))
    np.testing.assert_array_equal(cmp[:, 8], np.isfinite(a))


def test_conversions_in_kernels(mods, device, rng):
    n = 4000
    with_nans = random_floats(rng, n)
    f = np.where(np.isnan(with_nans), np.float32(1.5), with_nans)  # Warp's kernels may keep a NaN signalling
    d = rng.standard_normal(n) * 10.0 ** rng.integers(-40, 40, n)
    d[:2] = [1 + 2**-8 + 2**-40, -(1 + 2**-8 + 2**-40)]  # through float32: ties, rounded to even
    ints = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    h = rng.uniform(-1000, 1000, n).astype(np.float16)
    a = ref_round(rng.uniform(-300, 300, n))
    outs = [Arr(np.zeros((n, 4), np.float32), "bfloat16"), Arr(np.zeros((n, 3))),
            Arr(np.zeros((n, 3), np.int32))]
    args = [Arr(a, "bfloat16"), Arr(f), Arr(d), Arr(ints), Arr(h), *outs]
    got = launch_both(mods, "casts", n, args, device)
    o, back, ints_back = got[5], got[6], got[7]
    np.testing.assert_array_equal(o[:, 0], ref_bits(f))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(o[:, 1], ref_bits(d.astype(np.float32)))
    assert o[0, 1] == 0x3F80 and o[1, 1] == 0xBF80
    np.testing.assert_array_equal(o[:, 2], ref_bits(ints.astype(np.float32)))
    np.testing.assert_array_equal(o[:, 3], ref_bits(h.astype(np.float32)))
    np.testing.assert_array_equal(back[:, 0], a)  # exact: a bfloat16 is a float32 with a short mantissa
    np.testing.assert_array_equal(back[:, 1], a)
    np.testing.assert_array_equal(back[:, 2], a.astype(np.float16))
    for k in range(3):  # int, int64 and int16 all truncate (values within range: no overflow)
        np.testing.assert_array_equal(ints_back[:, k], np.trunc(a).astype(np.int32))
    args[1] = Arr(with_nans)
    np.testing.assert_array_equal(run(mods[0], "casts", n, args, device)[5][:, 0], ref_bits(with_nans))


def test_atomics_and_augmented_assignment(mods, device, rng):
    """Values are multiples of 1/2 with partial sums below 128, so every order of the atomic updates
    gives the same exact sum in bfloat16."""
    n, m = 600, 24
    v = rng.integers(-4, 5, n) / 2.0
    idx = rng.integers(0, m, n).astype(np.int32)
    acc0 = rng.integers(-8, 9, (6, m)) / 4.0
    args = [Arr(v, "bfloat16"), Arr(idx), Arr(acc0, "bfloat16")]
    acc = ref_values(launch_both(mods, "atomics", n, args, device)[2])
    sums = np.bincount(idx, weights=v, minlength=m)
    lows = np.array([min([acc0[2, k], *v[idx == k]]) for k in range(m)])
    highs = np.array([max([acc0[3, k], *v[idx == k]]) for k in range(m)])
    np.testing.assert_array_equal(acc, np.stack([acc0[0] + sums, acc0[1] - sums, lows, highs,
                                                 acc0[4] + sums, acc0[5] - sums]))


def test_scalar_parameter(mods, device, rng):
    a = ref_round(rng.uniform(-4, 4, 256))
    for s in (1.1, -2.7):
        out = launch_both(mods, "scaled", 256, [Arr(a, "bfloat16"), Val("bfloat16", s),
                                                Arr(np.zeros(256, np.float32), "bfloat16")], device)[1]
        np.testing.assert_array_equal(out, ref_bits(a * ref_round(s)))
        # a plain Python float converts as wp.bfloat16(s) does
        args = [Arr(a, "bfloat16"), s, Arr(np.zeros(256, np.float32), "bfloat16")]
        mine = run(mods[0], "scaled", 256, args, device)[1]
        np.testing.assert_array_equal(mine, out)


def _run_vectors(wpl, kernel, xs, device):
    v3 = wpl.types.vector(3, wpl.bfloat16)
    m33 = wpl.types.matrix((3, 3), wpl.bfloat16)
    arrays = [wpl.array(xs[0], dtype=v3, device=device), wpl.array(xs[1], dtype=v3, device=device),
              wpl.array(xs[2], dtype=m33, device=device), wpl.zeros((len(xs[0]), 5), dtype=v3, device=device),
              wpl.zeros((len(xs[0]), 5), dtype=wpl.bfloat16, device=device)]
    wpl.launch(kernel, dim=len(xs[0]), inputs=arrays, device=device)
    return arrays[3].numpy(), arrays[4].numpy()


VEC_SRC = '''import WP as wp

V = wp.types.vector(3, wp.bfloat16)
M = wp.types.matrix((3, 3), wp.bfloat16)


@wp.kernel
def vecs(a: wp.array(dtype=V), b: wp.array(dtype=V), m: wp.array(dtype=M), out: wp.array(dtype=V, ndim=2),
         s: wp.array(dtype=wp.bfloat16, ndim=2)):
    i = wp.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x * y[0]
    out[i, 2] = wp.cross(x, y)
    out[i, 3] = wp.normalize(x)
    out[i, 4] = m[i] * x
    s[i, 0] = wp.dot(x, y)
    s[i, 1] = wp.length(x)
    s[i, 2] = x[1]
    s[i, 3] = wp.determinant(m[i])
    s[i, 4] = wp.length_sq(y)
'''


def test_vectors_and_matrices_match_warp(device, rng):
    vec_mods = load_both(VEC_SRC)
    n = 500
    xs = [rng.uniform(-3, 3, (n, 3)).astype(np.float32), rng.uniform(-3, 3, (n, 3)).astype(np.float32),
          rng.uniform(-3, 3, (n, 3, 3)).astype(np.float32)]
    out, s = _run_vectors(wp, vec_mods[0].vecs, xs, device)
    np.testing.assert_array_equal(out[:, 0], ref_bits(ref_round(xs[0]) + ref_round(xs[1])))
    if vec_mods[1] is not None:
        want_out, want_s = _run_vectors(warp, vec_mods[1].vecs, xs, "cpu")
        np.testing.assert_array_equal(out, want_out)
        np.testing.assert_array_equal(s, want_s)


@wp.kernel
def bool_casts(h: wp.array(dtype=wp.bfloat16), b: wp.array(dtype=wp.bool), to_bool: wp.array(dtype=wp.bool),
               to_bf: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    to_bool[i] = wp.bool(h[i])
    to_bf[i] = wp.bfloat16(b[i])


def test_bool_casts(device, rng):
    """Beyond Warp, which cannot compile bool <-> bfloat16 (as for float16)."""
    h = ref_round(rng.uniform(-2, 2, 100))
    h[:10] = 0.0
    b = rng.integers(0, 2, 100).astype(bool)
    got = run(sys.modules[__name__], "bool_casts", 100, [Arr(h, "bfloat16"), Arr(b), Arr(np.zeros(100, bool)),
                                                        Arr(np.zeros(100, np.float32), "bfloat16")], device)
    np.testing.assert_array_equal(got[2], h != 0)
    np.testing.assert_array_equal(got[3], ref_bits(b.astype(np.float32)))


@wp.struct
class Params:
    scale: wp.bfloat16
    offset: VEC3BF


@wp.kernel
def with_struct(p: Params, a: wp.array(dtype=VEC3BF), out: wp.array(dtype=VEC3BF)):
    i = wp.tid()
    out[i] = a[i] * p.scale + p.offset


def test_struct_fields(device, rng):
    x = rng.uniform(-4, 4, (64, 3)).astype(np.float32)
    p = Params()
    p.scale, p.offset = 1.1, VEC3BF(0.3, -0.7, 2.2)
    out = wp.zeros(64, dtype=VEC3BF, device=device)
    wp.launch(with_struct, dim=64, inputs=[p, wp.array(x, dtype=VEC3BF, device=device), out], device=device)
    scaled = ref_round(ref_round(x) * ref_round(1.1))
    np.testing.assert_array_equal(out.numpy(), ref_bits(scaled + ref_round(np.float32([0.3, -0.7, 2.2]))))


# ---- gradients -------------------------------------------------------------------------------------


@wp.kernel
def smooth(x: wp.array(dtype=wp.bfloat16), c: wp.array(dtype=wp.bfloat16), y: wp.array(dtype=wp.bfloat16)):
    i = wp.tid()
    v = x[i]
    y[i] = v * v * c[i] + wp.sin(v) * wp.bfloat16(0.5)


def test_gradient_against_finite_differences(device, rng):
    """Central differences through the bfloat16 kernel itself. x, c and h are multiples of 2^-6 below 2,
    so x +- h and c +- h are exact bfloat16 values; the bound allows each evaluation's rounding (2^-9
    of each of the three rounded terms) over 2h, and 2^-6 of the gradient for its own roundings."""
    n, h = 256, 0.125

    def multiples(limit):
        return rng.integers(-limit * 64, limit * 64 + 1, n) / 64.0

    x, c = multiples(1.75), multiples(1.5)
    seed = ref_round(rng.uniform(0.5, 2, n)).astype(np.float64)
    xa = wp.array(x, dtype=BF16, device=device, requires_grad=True)
    ca = wp.array(c, dtype=BF16, device=device, requires_grad=True)
    y = wp.zeros(n, dtype=BF16, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(smooth, dim=n, inputs=[xa, ca, y], device=device)
    tape.backward(grads={y: wp.array(seed, dtype=BF16, device=device)})
    gx, gc = (ref_values(g.numpy()).astype(np.float64) for g in (xa.grad, ca.grad))

    def f(xs, cs):
        out = wp.zeros(n, dtype=BF16, device=device)
        wp.launch(smooth, dim=n, inputs=[wp.array(xs, dtype=BF16, device=device),
                                         wp.array(cs, dtype=BF16, device=device), out], device=device)
        return ref_values(out.numpy()).astype(np.float64)

    fd_x = seed * (f(x + h, c) - f(x - h, c)) / (2 * h)
    fd_c = seed * (f(x, c + h) - f(x, c - h)) / (2 * h)
    for got, fd in ((gx, fd_x), (gc, fd_c)):
        rounding = 2**-9 * (3 * (np.abs(x) + h) ** 2 * (np.abs(c) + h) + 1)
        bound = seed * rounding / h + 2**-6 * np.abs(fd) + 1e-3
        assert np.all(np.abs(got - fd) <= bound), np.max(np.abs(got - fd) - bound)
    np.testing.assert_allclose(gx, seed * (2 * x * c + 0.5 * np.cos(x)), rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(gc, seed * x * x, rtol=1e-2, atol=1e-3)
    assert np.abs(gx).max() > 1 and np.abs(gc).max() > 1  # not a vacuous pass


# ---- literals: Python numbers and wp.constant values typed bfloat16 ----------------------------------


CONST = wp.constant(BF16(1.5))


@wp.kernel
def literals(a: wp.array(dtype=wp.bfloat16), out: wp.array(dtype=wp.bfloat16, ndim=2)):
    i = wp.tid()
    x = a[i]
    out[i, 0] = x * CONST  # Warp accepts this one
    out[i, 1] = x * 2.0  # the others are tilewarp's literal typing (Warp wants wp.bfloat16(2.0))
    out[i, 2] = 0.1 - x
    out[i, 3] = wp.max(x, 0.5)


def test_constants_take_bfloat16(device, rng):
    a = ref_round(rng.uniform(-4, 4, 128))
    args = [Arr(a, "bfloat16"), Arr(np.zeros((128, 4), np.float32), "bfloat16")]
    out = run(sys.modules[__name__], "literals", 128, args, device)[1]
    want = np.stack([a * 1.5, a * 2, ref_round(0.1) - a, np.maximum(a, 0.5)], 1)
    np.testing.assert_array_equal(out, ref_bits(want))


# ---- unsupported uses: typed, located errors ----------------------------------------------------------


@wp.kernel
def mixes_float32(a: wp.array(dtype=wp.bfloat16), f: wp.array(dtype=float)):
    f[0] = a[0] + f[0]  # <- error


@wp.kernel
def stores_float32(a: wp.array(dtype=wp.bfloat16), f: wp.array(dtype=float)):
    a[0] = f[0]  # <- error


@wp.kernel
def bit_ops(a: wp.array(dtype=wp.bfloat16)):
    a[0] = a[0] & a[1]  # <- error


@wp.kernel
def cas_on_bf16(a: wp.array(dtype=wp.bfloat16)):
    wp.atomic_cas(a, 0, a[1], a[2])  # <- error


@wp.kernel
def exch_on_vec(a: wp.array(dtype=VEC3BF)):
    wp.atomic_exch(a, 0, a[1])  # <- error


@wp.kernel
def min_on_float16(a: wp.array(dtype=wp.float16)):
    wp.atomic_min(a, 0, a[1])  # <- error


BAD = {
    mixes_float32: ("bfloat16, float32",),
    stores_float32: ("array element has type bfloat16 but is assigned float32",),
    bit_ops: ("unsupported argument type (bfloat16, bfloat16)",),
    cas_on_bf16: ("atomic_cas() operations only work on arrays with [u]int32, [u]int64, float32, or float64 "
                  "as the underlying scalar types, but got bfloat16 (with scalar type bfloat16)",),
    exch_on_vec: ("but got vec3bf (with scalar type bfloat16)",),
    min_on_float16: ("[u]int32, [u]int64, bfloat16, float32, or float64", "but got float16"),
}


@pytest.mark.parametrize("kernel", list(BAD), ids=lambda k: k.fn.__name__)
def test_unsupported_uses_raise_located_errors(kernel):
    dtype = VEC3BF if kernel is exch_on_vec else wp.float16 if kernel is min_on_float16 else BF16
    inputs = [wp.zeros(3, dtype=dtype)]
    if kernel in (mixes_float32, stores_float32):
        inputs.append(wp.zeros(1, dtype=float))
    check_located(kernel, KernelTypeError, *BAD[kernel], inputs=inputs)
