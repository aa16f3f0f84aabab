"""Function features of the kernel language, differential against Warp on CPU.

Multiple return values (``return a, b`` / ``x, y = f()``, tuples bound to a name, indexed and measured
with ``len``), overload sets of ``@wp.func`` resolved by argument types, ``wp.where`` (and the older
``wp.select``), casts to every scalar type, ``len`` of vectors/matrices/arrays, loops with negative
steps / ``reversed(range())`` / early returns / calls in conditions, ``for x in v`` (beyond Warp), and
``print``/``wp.printf`` output compared with what Warp prints for the same kernel (CPU, fd 1).
"""
import hashlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import LOAD_DIR, Arr, launch_both, load_both, need_warp, warp

import tilewarp as wp
from tilewarp import KernelError, KernelSyntaxError, KernelTypeError

SRC = '''
import WP as wp
from typing import Any


@wp.func
def divmod_(a: int, b: int):
    return a // b, a % b


@wp.func
def polar(v: wp.vec2):
    r = wp.length(v)
    if r == 0.0:
        return 0.0, 0.0
    return r, wp.atan2(v[1], v[0])


@wp.func
def stats(a: wp.array(dtype=float), n: int):
    lo = a[0]
    hi = a[0]
    s = float(0.0)
    for k in range(n):
        lo = wp.min(lo, a[k])
        hi = wp.max(hi, a[k])
        s += a[k]
    return lo, hi, s / float(n), n


@wp.func
def first_neg(a: wp.array(dtype=float), start: int, n: int):
    for k in range(start, n):
        if a[k] < 0.0:
            return k, a[k]
    return -1, 0.0


@wp.func
def flipped(x: float):
    p, q = polar(wp.vec2(x, 1.0))
    return q, p


@wp.func
def composite(v: wp.vec3, m: wp.mat22):
    return m * 2.0, v + wp.vec3(1.0, 2.0, 3.0), wp.dot(v, v)


@wp.kernel
def multi(a: wp.array(dtype=float), ints: wp.array(dtype=int), out: wp.array(dtype=float, ndim=2),
          iout: wp.array(dtype=int, ndim=2), vs: wp.array(dtype=wp.vec3), ms: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    q, r = divmod_(ints[i], 7)
    iout[i, 0] = q
    iout[i, 1] = r
    rad, ang = polar(wp.vec2(a[i], a[i + 1]))
    out[i, 0] = rad
    out[i, 1] = ang
    lo, hi, mean, n = stats(a, i % 9 + 1)
    out[i, 2] = lo
    out[i, 3] = hi
    out[i, 4] = mean
    iout[i, 2] = n
    k, v = first_neg(a, i, i + 4)
    iout[i, 3] = k
    out[i, 5] = v
    t = flipped(a[i])
    out[i, 6] = t[0] + t[1] * 2.0
    iout[i, 4] = len(t)
    m, v3, d = composite(vs[i], ms[i])
    vs[i] = v3
    ms[i] = m
    out[i, 7] = d
    x = ints[i] * 2
    x, y2 = divmod_(x, 3)
    iout[i, 5] = x + y2


@wp.func
def ov(x: float):
    return x * 10.0


@wp.func
def ov(x: int):
    return x + 100


@wp.func
def ov(x: Any, y: float):
    return y


@wp.func
def ov(x: float, y: float):
    return x + y + 1000.0


@wp.func
def ov(v: wp.vec3):
    return v[0] + v[1] + v[2]


@wp.kernel
def overloads(a: wp.array(dtype=float), b: wp.array(dtype=int), vs: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a[i * 6 + 0] = ov(2.0)
    b[i * 2 + 0] = ov(b[i * 2 + 0])
    a[i * 6 + 1] = ov(a[i * 6 + 1])
    a[i * 6 + 2] = ov(b[i * 2 + 1], 5.0)
    a[i * 6 + 3] = ov(a[i * 6 + 3], 5.0)
    a[i * 6 + 4] = ov(vs[i])
    a[i * 6 + 5] = ov(x=a[i * 6 + 5])


@wp.kernel
def choose(c: wp.array(dtype=int), a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3),
           maybe: wp.array(dtype=float), out: wp.array(dtype=float), vout: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i * 4 + 0] = wp.where(c[i] > 0, a[i], -a[i])
    out[i * 4 + 1] = wp.where(c[i], 1.5, 2.5)
    out[i * 4 + 2] = wp.where(maybe, 1.0, 0.0)
    out[i * 4 + 3] = wp.where(a[i] < 0.0 and c[i] != 0, a[i] * 2.0, 0.0)
    vout[i] = wp.where(c[i] % 2 == 0, v[i], wp.vec3(0.0, 1.0, 2.0))


mat23 = wp.types.matrix(shape=(2, 3), dtype=float)


@wp.kernel
def lengths(a2: wp.array(dtype=float, ndim=2), a1: wp.array(dtype=float), out: wp.array(dtype=int)):
    v2 = wp.vec2(1.0, 2.0)
    v4 = wp.vec4i(1, 2, 3, 4)
    m = wp.mat33()
    m23 = mat23()
    out[0] = len(v2)
    out[1] = len(v4)
    out[2] = len(m)
    out[3] = len(m23)
    out[4] = len(a2)
    out[5] = len(a1)
    out[6] = len(a2[1])
    for k in range(len(v4)):
        out[7] += v4[k]


@wp.func
def until_over(a: wp.array(dtype=float), limit: float):
    k = int(0)
    while k < len(a):
        for j in range(3):
            if a[k] + float(j) > limit:
                return k * 10 + j
        k += 1
    return -1


@wp.func
def half(x: int):
    return x // 2


@wp.func
def positive(x: float):
    return x > 0.0


@wp.kernel
def loops(a: wp.array(dtype=float), n: int, step: int, out: wp.array(dtype=int)):
    c = int(0)
    for k in range(n, -1, -2):
        out[c] = k
        c += 1
    for k in range(n, 0, step):
        out[c] = k
        c += 1
    for k in reversed(range(n)):
        out[c] = k
        c += 1
    for k in reversed(range(1, n + 4, 3)):
        out[c] = k
        c += 1
    for k in reversed(range(n, -3, step)):
        out[c] = k
        c += 1
    for k in reversed(range(10, 0, -4)):
        out[c] = k
        c += 1
    out[c] = until_over(a, 2.5)
    c += 1
    if positive(a[half(half(n))]) and half(n) > 1:
        out[c] = 1
    c += 1
    k = int(0)
    while half(k + 4) < n and positive(a[k] + 10.0):
        k += 1
    out[c] = k
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def test_multiple_return_values(mods, device, rng):
    n = 64
    a = rng.uniform(-3, 3, n + 12).astype(np.float32)
    ints = rng.integers(-1000, 1000, n).astype(np.int32)
    vs = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    ms = rng.uniform(-2, 2, (n, 2, 2)).astype(np.float32)
    args = [Arr(a), Arr(ints), Arr(np.zeros((n, 8), np.float32)), Arr(np.zeros((n, 6), np.int32)),
            Arr(vs, "vec3"), Arr(ms, "mat22")]
    got = launch_both(mods, "multi", n, args, device, rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(got[3][:, 0], ints // 7)
    np.testing.assert_array_equal(got[3][:, 1], np.fmod(ints, 7))  # Warp: // floors, % truncates
    np.testing.assert_array_equal(got[3][:, 4], 2)
    np.testing.assert_allclose(got[4], vs + [1, 2, 3], rtol=1e-6)
    np.testing.assert_allclose(got[5], ms * 2, rtol=1e-6)
    assert (got[3][:, 3] >= 0).any() and (got[3][:, 3] == -1).any()


def test_overload_sets_resolve_by_argument_types(mods, device, rng):
    n = 16
    a = rng.uniform(-3, 3, n * 6).astype(np.float32)
    b = rng.integers(-50, 50, n * 2).astype(np.int32)
    vs = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    got = launch_both(mods, "overloads", n, [Arr(a), Arr(b), Arr(vs, "vec3")], device)
    np.testing.assert_allclose(got[0][0::6], 20.0)
    np.testing.assert_array_equal(got[1][0::2], b[0::2] + 100)
    np.testing.assert_allclose(got[0][2::6], 5.0)  # the generic (Any, float) overload, as Warp picks
    np.testing.assert_allclose(got[0][3::6], a[3::6] + 1005.0, rtol=1e-6)
    np.testing.assert_allclose(got[0][4::6], vs.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(got[0][5::6], a[5::6] * 10.0, rtol=1e-6)


def test_overloads_called_from_python(mods):
    """Outside kernels an overloaded func runs the Python overload the values fit (as Warp)."""
    tw = mods[0]
    assert tw.ov(2.0) == 20.0 and tw.ov(3) == 103
    assert tw.ov(1, 5.0) == 5.0


def test_where(mods, device, rng):
    n = 32
    c = rng.integers(-2, 3, n).astype(np.int32)
    a = rng.uniform(-3, 3, n).astype(np.float32)
    v = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    for maybe in (Arr(np.ones(3, np.float32)), None):
        args = [Arr(c), Arr(a), Arr(v, "vec3"), maybe, Arr(np.zeros(n * 4, np.float32)),
                Arr(np.zeros((n, 3), np.float32), "vec3")]
        got = launch_both(mods, "choose", n, args, device)
        out = got[-2].reshape(n, 4)
        np.testing.assert_allclose(out[:, 0], np.where(c > 0, a, -a))
        np.testing.assert_allclose(out[:, 1], np.where(c != 0, 1.5, 2.5))
        np.testing.assert_allclose(out[:, 2], 1.0 if maybe is not None else 0.0)


def test_len(mods, device):
    args = [Arr(np.ones((5, 7), np.float32)), Arr(np.ones(11, np.float32)), Arr(np.zeros(8, np.int32))]
    got = launch_both(mods, "lengths", 1, args, device)
    np.testing.assert_array_equal(got[2], [2, 4, 3, 2, 5, 11, 7, 10])


def test_loops_negative_steps_reversed_early_return_calls_in_conditions(mods, device, rng):
    a = rng.uniform(-1, 3, 12).astype(np.float32)
    a[0] = 0.5
    for n, step in ((7, -3), (4, -1), (0, -2)):
        got = launch_both(mods, "loops", 1, [Arr(a), n, step, Arr(np.full(60, -7, np.int32))], device)
        want = [*range(n, -1, -2), *range(n, 0, step), *reversed(range(n)), *reversed(range(1, n + 4, 3)),
                *reversed(range(n, -3, step)), *reversed(range(10, 0, -4))]
        np.testing.assert_array_equal(got[1][:len(want)], want)


CAST_SRC = '''
import WP as wp


@wp.kernel
def casts(f: wp.array(dtype=float), d: wp.array(dtype=wp.float64), i: wp.array(dtype=int),
          out_i8: wp.array(dtype=wp.int8), out_i16: wp.array(dtype=wp.int16), out_i32: wp.array(dtype=wp.int32),
          out_i64: wp.array(dtype=wp.int64), out_u8: wp.array(dtype=wp.uint8), out_u16: wp.array(dtype=wp.uint16),
          out_u32: wp.array(dtype=wp.uint32), out_u64: wp.array(dtype=wp.uint64),
          out_f16: wp.array(dtype=wp.float16), out_f32: wp.array(dtype=wp.float32),
          out_f64: wp.array(dtype=wp.float64), out_b: wp.array(dtype=wp.bool), out_int: wp.array(dtype=int),
          out_float: wp.array(dtype=float)):
    k = wp.tid()
    x = f[k]
    y = d[k]
    n = i[k]
    out_i8[k * 3 + 0] = wp.int8(x)
    out_i8[k * 3 + 1] = wp.int8(y)
    out_i8[k * 3 + 2] = wp.int8(n)
    out_i16[k * 3 + 0] = wp.int16(x)
    out_i16[k * 3 + 1] = wp.int16(y)
    out_i16[k * 3 + 2] = wp.int16(n)
    out_i32[k * 3 + 0] = wp.int32(x)
    out_i32[k * 3 + 1] = wp.int32(y)
    out_i32[k * 3 + 2] = wp.int32(wp.int64(n) * wp.int64(3))
    out_i64[k * 3 + 0] = wp.int64(x)
    out_i64[k * 3 + 1] = wp.int64(y)
    out_i64[k * 3 + 2] = wp.int64(n)
    out_u8[k * 3 + 0] = wp.uint8(wp.abs(x))
    out_u8[k * 3 + 1] = wp.uint8(wp.abs(y))
    out_u8[k * 3 + 2] = wp.uint8(n)
    out_u16[k * 3 + 0] = wp.uint16(wp.abs(x))
    out_u16[k * 3 + 1] = wp.uint16(wp.abs(y))
    out_u16[k * 3 + 2] = wp.uint16(n)
    out_u32[k * 3 + 0] = wp.uint32(wp.abs(x))
    out_u32[k * 3 + 1] = wp.uint32(wp.abs(y))
    out_u32[k * 3 + 2] = wp.uint32(n)
    out_u64[k * 3 + 0] = wp.uint64(wp.abs(x))
    out_u64[k * 3 + 1] = wp.uint64(wp.abs(y))
    out_u64[k * 3 + 2] = wp.uint64(wp.uint32(n))
    out_f16[k * 3 + 0] = wp.float16(x)
    out_f16[k * 3 + 1] = wp.float16(y)
    out_f16[k * 3 + 2] = wp.float16(n)
    out_f32[k * 3 + 0] = wp.float32(x)
    out_f32[k * 3 + 1] = wp.float32(y)
    out_f32[k * 3 + 2] = wp.float32(n)
    out_f64[k * 3 + 0] = wp.float64(x)
    out_f64[k * 3 + 1] = wp.float64(y)
    out_f64[k * 3 + 2] = wp.float64(n)
    out_b[k * 3 + 0] = wp.bool(x)
    out_b[k * 3 + 1] = bool(n)
    out_b[k * 3 + 2] = bool(n % 2)
    out_int[k * 3 + 0] = int(x)
    out_int[k * 3 + 1] = int(y)
    out_int[k * 3 + 2] = int(wp.int8(n))
    out_float[k * 3 + 0] = float(x)
    out_float[k * 3 + 1] = float(y)
    out_float[k * 3 + 2] = float(n)
'''

CAST_OUT = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
            "float64", "bool", "int32", "float32")


def test_casts_to_every_scalar_type(device, rng):
    """In-range values only: converting out-of-range floats to integers is undefined in C++ (and Warp)."""
    mods = load_both(CAST_SRC)
    n = 64
    f = (rng.uniform(-120, 120, n) * rng.choice([1.0, 0.01], n)).astype(np.float32)
    f[:4] = [0.0, -0.0, 0.5, -0.99]
    d = rng.uniform(-120, 120, n)
    i = rng.integers(-(2**31), 2**31 - 1, n).astype(np.int32)
    i[:4] = [0, 1, -1, 300]
    outs = [Arr(np.zeros(n * 3, np.dtype(t if t != "bool" else np.bool_)), t) for t in CAST_OUT]
    got = launch_both(mods, "casts", n, [Arr(f), Arr(d, "float64"), Arr(i), *outs], device)
    np.testing.assert_array_equal(got[3][0::3], np.trunc(f).astype(np.int8))
    np.testing.assert_array_equal(got[3][2::3], i.astype(np.int8))
    np.testing.assert_array_equal(got[14][0::3], f != 0)


# ---- for x in v (beyond Warp: it loops over ranges only) --------------------------------------------


@wp.kernel
def k_components(v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat33d), out: wp.array(dtype=float),
                 rows: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    s = float(0.0)
    vi = v[i]
    for x in vi:
        s += x * x
        vi = vi * 2.0  # rebinding the sequence inside the loop does not change what it walks
    out[i] = s
    acc = wp.vec3d()
    for r in m[i]:
        acc += r
    rows[i] = acc


def test_for_over_vector_components_and_matrix_rows(device, rng):
    v = rng.uniform(-2, 2, (20, 3)).astype(np.float32)
    m = rng.uniform(-2, 2, (20, 3, 3))
    va = wp.array(v, dtype=wp.vec3, device=device)
    ma = wp.array(m, dtype=wp.mat33d, device=device)
    out = wp.zeros(20, dtype=float, device=device)
    rows = wp.zeros(20, dtype=wp.vec3d, device=device)
    wp.launch(k_components, 20, inputs=[va, ma, out, rows], device=device)
    np.testing.assert_allclose(out.numpy(), (v.astype(np.float64) ** 2).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(rows.numpy(), m.sum(axis=1), rtol=1e-12)


# ---- wp.select: removed in Warp 1.19 (use wp.where); kept here with its old argument order ----------


@wp.kernel
def k_select(c: wp.array(dtype=int), a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.select(c[i] > 0, a[i], 7.0)


def test_select_takes_false_value_first(device, rng):
    c = rng.integers(-2, 3, 40).astype(np.int32)
    a = rng.uniform(-3, 3, 40).astype(np.float32)
    out = wp.zeros(40, dtype=float, device=device)
    wp.launch(k_select, 40, inputs=[wp.array(c, device=device), wp.array(a, device=device), out], device=device)
    np.testing.assert_array_equal(out.numpy(), np.where(c > 0, 7.0, a).astype(np.float32))
    assert wp.select(True, 1, 2) == 2 and wp.where(True, 1, 2) == 1


# ---- print / printf: the same output as Warp ------------------------------------------------------

PRINT_SRC = '''
import WP as wp


@wp.kernel
def printing(a: wp.array(dtype=float), d: wp.array(dtype=wp.float64), n: wp.array(dtype=wp.int64)):
    print(a[0])
    print(a[1])
    print(d[0])
    print(wp.float16(a[0]))
    print(n[0])
    print(wp.int8(-3))
    print(wp.uint8(250))
    print(wp.uint64(18446744073709551615))
    print(wp.uint32(4000000000))
    print(wp.int16(-32000))
    print(a[0] > 0.0)
    print(a[0] < 0.0)
    print(wp.vec3(a[0], a[1], 2.5))
    print(wp.vec2i(7, -8))
    print(wp.mat22(1.0, 2.0, 3.0, 4.5))
    print(wp.mat33d())
    print("hello")
    wp.printf("f=%f g=%g e=%.3e\\n", a[0], a[1], d[0])
    wp.printf("d=%d lld=%lld u=%u x=%x\\n", 42, n[0], wp.uint32(4000000000), 255)
    wp.printf("s=%s %s|%5.1f|%-4d|\\n", "str", "a\\tb\\\\", a[0], 7)
    wp.printf("100%% done\\n")
    wp.printf("b=%d\\n", a[0] > 0.0)
'''


def _run_warp_script(text: str) -> str:
    """Run ``text`` with ``import warp as wp`` in a fresh process (Warp's printf output reaches fd 1 at exit)."""
    LOAD_DIR.mkdir(parents=True, exist_ok=True)
    text = text.replace("import WP as wp", "import warp as wp\nwp.config.log_level = 30", 1)
    path = LOAD_DIR / f"print_{hashlib.sha256(text.encode()).hexdigest()[:16]}.py"  # one file per script text
    path.write_text(text)
    env = dict(os.environ, WARP_CACHE_PATH=str(LOAD_DIR / "warp-cache"))
    res = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout


PRINT_MAIN = '''
import numpy as np
a = wp.array(np.array([1.5, -1e-7], np.float32), dtype=float, device="cpu")
d = wp.array(np.array([123456789.125]), dtype=wp.float64, device="cpu")
n = wp.array(np.array([-(2**40)]), dtype=wp.int64, device="cpu")
wp.launch(printing, 1, inputs=[a, d, n], device="cpu")
wp.synchronize()
'''


def test_print_and_printf_match_warp(capfd):
    text = PRINT_SRC + PRINT_MAIN
    tw_mod = load_both(PRINT_SRC)[0]
    capfd.readouterr()
    exec(compile(PRINT_MAIN, "<print-main>", "exec"), {"wp": tw_mod.wp, "printing": tw_mod.printing})
    got = capfd.readouterr().out
    assert "hello\n" in got and "1 2 \n3 4.5 \n" in got, got
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    assert got == _run_warp_script(text)


PRINT_ROT_SRC = '''
import WP as wp


@wp.kernel
def printing_rot(a: wp.array(dtype=float)):
    q = wp.quat(a[0], 0.5, -0.25, 1.0)
    print(q)
    print(wp.transform(wp.vec3(1.0, a[0], 3.0), q))
    print(wp.spatial_vector(1.0, 2.0, 3.0, 4.0, 5.0, 6.0))
'''


def test_print_quaternion_and_transform_match_warp(capfd):
    if not hasattr(wp, "quat"):
        pytest.skip("quaternions are not in this tilewarp yet")
    main = 'wp.launch(printing_rot, 1, inputs=[wp.array([1.5], dtype=float, device="cpu")], device="cpu")\n'
    tw_mod = load_both(PRINT_ROT_SRC)[0]
    capfd.readouterr()
    exec(compile(main, "<print-rot>", "exec"), {"wp": tw_mod.wp, "printing_rot": tw_mod.printing_rot})
    got = capfd.readouterr().out
    assert got.startswith("1.5 0.5 -0.25 1\n(1 1.5 3) (1.5 0.5 -0.25 1)\n"), got
    if warp is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    assert got == _run_warp_script(PRINT_ROT_SRC + main + "wp.synchronize()\n")


LABEL = "label"


@wp.kernel
def k_printf_half(x: wp.float16, i: int):
    wp.printf("half=%g bool=%d %s\n", x, i > 0, LABEL)
    print(x)
    print(LABEL)


def test_printf_of_half_and_bool_on_cpu(capfd):
    """A half or bool passed to printf is converted to what %g / %d read (in Warp that is undefined);
    module-level strings print too (Warp accepts only literals)."""
    capfd.readouterr()
    wp.launch(k_printf_half, 1, inputs=[wp.float16(0.75), 3], device="cpu")
    assert capfd.readouterr().out == "half=0.75 bool=1 label\n0.75\nlabel\n"


# ---- bad input: the right error, at the user's line ------------------------------------------------

THIS_FILE = os.path.abspath(__file__)
MARK = "# <- error"


def _check(kernel, cls, *fragments, where=None, inputs=()):
    import inspect

    lines, first = inspect.getsourcelines(where or kernel)
    hits = [first + k for k, text in enumerate(lines) if MARK in text]
    assert len(hits) == 1
    with pytest.raises(cls) as info:
        wp.launch(kernel, dim=1, inputs=list(inputs), device="cpu")
    msg = str(info.value)
    assert f"{THIS_FILE}:{hits[0]}:" in msg, msg
    assert isinstance(info.value, KernelError) and info.value.loc.line == hits[0]
    for fragment in fragments:
        assert fragment in msg, msg
    return msg


@wp.func
def two(x: float):
    return x, x * 2.0


@wp.func
def ragged(x: float):  # <- error (reported at the def line, as for any two return types)
    if x > 0.0:
        return x, x
    return x


@wp.kernel
def k_unpack_three():
    a, b, c = two(1.0)  # <- error


@wp.kernel
def k_unpack_scalar():
    a, b = wp.sqrt(2.0)  # <- error


@wp.kernel
def k_tuple_runtime_index(i: int):
    t = two(1.0)
    x = t[i]  # <- error


@wp.kernel
def k_tuple_index_range():
    t = two(1.0)
    x = t[2]  # <- error


@wp.kernel
def k_tuple_store(a: wp.array(dtype=float)):
    a[0] = two(1.0)  # <- error


@wp.kernel
def k_ragged():
    x = ragged(1.0)


@wp.kernel
def k_print_two():
    print(1.0, 2.0)  # <- error


@wp.kernel
def k_printf_no_format():
    wp.printf(1.0)  # <- error


@wp.kernel
def k_printf_vector():
    wp.printf("%f\n", wp.vec3())  # <- error


@wp.kernel
def k_where_types():
    x = wp.where(True, wp.vec3(), 1.0)  # <- error


@wp.kernel
def k_where_float_cond():
    x = wp.where(0.5, 1.0, 2.0)  # <- error


@wp.kernel
def k_no_overload():
    x = ov2(wp.float64(1.0))  # <- error


@wp.func
def ov2(x: float):
    return x


@wp.func
def ov2(x: int):
    return x


@wp.kernel
def k_loop_over_float():
    for x in 1.0:  # <- error
        pass


@wp.kernel
def k_reversed_unsigned(n: wp.uint32):
    for k in reversed(range(n)):  # <- error
        pass


@pytest.mark.parametrize("kernel,cls,fragments,where,inputs", [
    (k_unpack_three, KernelTypeError, ("cannot unpack 2 values into 3 names",), None, []),
    (k_unpack_scalar, KernelTypeError, ("cannot unpack a float32 value",), None, []),
    (k_tuple_runtime_index, KernelTypeError, ("constant integer",), None, [1]),
    (k_tuple_index_range, KernelTypeError, ("out of range",), None, []),
    (k_tuple_store, KernelTypeError, ("tuple(float32, float32)",), None, [wp.zeros(1, device="cpu")]),
    (k_ragged, KernelTypeError, ("returns different types",), ragged, []),
    (k_print_two, KernelTypeError, ("print() takes one value",), None, []),
    (k_printf_no_format, KernelTypeError, ("format string",), None, []),
    (k_printf_vector, KernelTypeError, ("vec3",), None, []),
    (k_where_types, KernelTypeError, ("one type",), None, []),
    (k_where_float_cond, KernelTypeError, ("condition",), None, []),
    (k_no_overload, KernelTypeError, ("no overload of ov2() takes (float64)", "ov2(x: float32)"), None, []),
    (k_loop_over_float, KernelSyntaxError, ("range(...), a vector or a matrix",), None, []),
    (k_reversed_unsigned, KernelTypeError, ("signed integers",), None, [3]),
], ids=lambda p: getattr(p, "key", None))
def test_bad_input(kernel, cls, fragments, where, inputs):
    _check(kernel, cls, *fragments, where=where, inputs=inputs)


def test_module_scope_same_signature_replaces():
    """A second @wp.func with the same name and annotations replaces the first (Warp's redefinition)."""
    text = textwrap.dedent('''
        import WP as wp

        @wp.func
        def f(x: float):
            return x + 1.0

        @wp.func
        def f(x: float):
            return x + 2.0

        @wp.kernel
        def k(a: wp.array(dtype=float)):
            a[0] = f(a[0])
    ''')
    mods = load_both(text)
    assert len(mods[0].f.overloads) == 1
    need_warp(mods)
    got = launch_both(mods, "k", 1, [Arr(np.array([1.0], np.float32))])
    np.testing.assert_array_equal(got[0], [3.0])
