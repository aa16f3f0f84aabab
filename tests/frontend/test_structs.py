"""``@wp.struct``, differential against Warp on CPU.

Kernel side: struct arguments (scalar, vector, matrix, array and nested struct fields), reading
fields, ``S()`` then field assignment, keyword and positional construction, nested and component
assignment (``s.inner.v[1] = x``), value semantics of copies, structs carried through loops and
branches, structs as ``@wp.func`` parameters and results, arrays of structs written in place
(``a[i].f = x``), array fields written and atomically updated. Host side: default values, field
assignment and its errors, views, arrays of structs (``wp.zeros``, from instances, ``.numpy()``
as a structured array, ``.list()``, ``wp.full``), C++ names stable across processes, launch and
kernel errors located at the user's file:line.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import assert_same, load_both, need_warp, reference

import tilewarp

SRC = '''
import WP as wp


@wp.struct
class Inner:
    v: wp.vec3
    k: int


@wp.struct
class Params:
    scale: float
    offset: wp.vec3
    m: wp.mat33
    counts: wp.array(dtype=int)
    weights: wp.array(dtype=float, ndim=2)
    inner: Inner
    flag: wp.bool
    d: wp.float64


@wp.struct
class Particle:
    pos: wp.vec3
    vel: wp.vec3
    mass: float
    id: int


@wp.struct
class Mixed:
    b: wp.bool
    d: wp.float64
    h: wp.float16
    i8: wp.int8
    v: wp.vec3
    u16: wp.uint16
    i64: wp.int64
    m: wp.mat22d


@wp.func
def make_particle(x: wp.vec3, m: float) -> Particle:
    p = Particle()
    p.pos = x
    p.mass = m
    return p


@wp.func
def energy(p: Particle) -> float:
    return 0.5 * p.mass * wp.dot(p.vel, p.vel)


@wp.func
def moved(p: Particle, d: wp.vec3) -> Particle:
    p.pos = p.pos + d  # a copy: the caller's value stays as it was
    p.id = p.id + 1
    return p


@wp.kernel
def read_fields(p: Params, out: wp.array(dtype=float, ndim=2), iout: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    out[i, 0] = p.scale * float(i)
    out[i, 1] = p.offset[0] + p.offset.y + p.offset[2] * 2.0
    out[i, 2] = p.m[1, 2] - p.m[2, 0]
    out[i, 3] = wp.length(p.m @ p.offset)
    out[i, 4] = p.weights[i, 1] + p.weights[i][0]
    out[i, 5] = p.inner.v.z - p.inner.v[0]
    out[i, 6] = float(p.d * wp.float64(3.0))
    iout[i, 0] = p.counts[i] + p.inner.k
    iout[i, 1] = p.counts.shape[0] + len(p.counts) + p.weights.shape[1]
    if p.flag:
        iout[i, 2] = 1
    inner = p.inner
    iout[i, 3] = inner.k * 2


@wp.kernel
def construct(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=Particle), e: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    p = Particle()
    p.pos = x[i]
    p.vel = wp.vec3(1.0, 2.0, float(i))
    p.pos[1] = p.pos[1] * 3.0
    p.vel.z += 0.5
    p.mass = 2.0
    p.mass *= 1.5
    p.id = i * 7
    q = p  # a copy: writing q leaves p alone
    q.mass = 100.0
    q.vel.x = -1.0
    k = Particle(pos=x[i], vel=wp.vec3(0.5), mass=3.0, id=-i)
    pos = Particle(x[i] * 2.0, wp.vec3(1.0, 0.0, 0.0), 4.0, i)
    e[i, 0] = q.mass + q.vel[0]
    e[i, 1] = energy(p)
    e[i, 2] = energy(k) + float(k.id)
    e[i, 3] = energy(pos) + pos.pos[2] + float(pos.id)
    e[i, 4] = energy(make_particle(x[i], 3.0))
    m = moved(p, wp.vec3(1.0, 1.0, 1.0))
    e[i, 5] = m.pos[0] - p.pos[0] + float(m.id - p.id)
    out[i] = p


@wp.kernel
def update(ps: wp.array(dtype=Particle), dt: float):
    i = wp.tid()
    ps[i].pos = ps[i].pos + ps[i].vel * dt
    ps[i].vel.y -= 9.8 * dt
    ps[i].vel[0] = ps[i].vel[0] * 0.5
    ps[i].mass += 1.0
    ps[i].id = i
    p = ps[i]
    p.mass = 1000.0  # a local copy: not written back


@wp.kernel
def nested(params: wp.array(dtype=Params), out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    s = Params()
    s.inner.k = i + 3
    s.inner.v = wp.vec3(1.0, 2.0, 3.0)
    s.inner.v[2] = float(i)
    s.inner.v.x += 10.0
    s.m[1, 1] = 5.0
    s.m[0] = wp.vec3(1.0, 2.0, 3.0)
    t = s.inner
    t.k = 99  # a copy of the field
    s.scale = float(s.inner.k) + t.v[1]
    params[i].inner.v[1] = float(i) * 2.0
    params[i].inner.k = s.inner.k
    params[i].scale = s.scale
    params[i].m = s.m
    params[i].d = wp.float64(i) * wp.float64(0.25)
    out[i, 0] = s.inner.v[0] + s.inner.v[2] + float(t.k)
    out[i, 1] = s.m[1, 1] + s.m[0, 2]


@wp.kernel
def carried(n: int, out: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    acc = Inner()
    for j in range(n + i):
        acc.k += j
        acc.v[0] += float(j) * 0.5
    p = Particle()
    if i % 2 == 0:
        p.mass = 2.0
        p.vel.y = 3.0
    else:
        p.mass = -1.0
    w = Inner()
    while w.k < i:
        w.k = w.k + 1
        w.v.z = w.v.z + 2.0
    out[i, 0] = float(acc.k) + acc.v[0]
    out[i, 1] = p.mass + p.vel.y
    out[i, 2] = float(w.k) + w.v.z


@wp.kernel
def array_fields(p: Params):
    i = wp.tid()
    p.counts[i] = p.counts[i] * 2 + i
    wp.atomic_add(p.counts, 0, 1)
    p.weights[i, 0] = p.scale
    p.weights[i][1] += 1.0


@wp.kernel
def mixed_roundtrip(s: Mixed, out: wp.array(dtype=Mixed), f: wp.array(dtype=wp.float64)):
    i = wp.tid()
    f[0] = wp.float64(1.0) if s.b else wp.float64(0.0)
    f[1] = s.d
    f[2] = wp.float64(s.h)
    f[3] = wp.float64(s.i8)
    f[4] = wp.float64(s.v[2])
    f[5] = wp.float64(s.u16)
    f[6] = wp.float64(s.i64)
    f[7] = s.m[1, 0]
    t = s
    t.i8 = t.i8 + wp.int8(i)
    t.h = t.h * wp.float16(2.0)
    out[i] = t
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def compare(got, want, what):
    """Arrays equal; structured ones field by field (array fields are pointers: skipped)."""
    if got.dtype.names is None:
        assert_same(got, want, what=what)
        return
    assert got.dtype.names == want.dtype.names, what
    for name in got.dtype.names:
        if set(got.dtype[name].names or ()) >= {"data", "grad", "shape"}:
            continue
        compare(got[name], want[name], f"{what}.{name}")


def run_both(mods, kernel, dim, build, device):
    """``build(wp, mod, device) -> (inputs, arrays to read back)`` for each library; launches ``kernel``
    in tilewarp on ``device`` and Warp on CPU (without warp-lang, on a GPU: tilewarp on CPU), compares
    what was read back and returns tilewarp's."""
    results = []
    for mod, dev in ((mods[0], device), reference(mods, device)):
        inputs, outputs = build(mod.wp, mod, dev)
        mod.wp.launch(getattr(mod, kernel), dim=dim, inputs=inputs, device=dev)
        mod.wp.synchronize()
        results.append([o.numpy() for o in outputs])
    for k, (g, w) in enumerate(zip(*results)):
        compare(g, w, f"{kernel}: output #{k}")
    return results[0]


def make_params(wp, mod, device, rng_seed=7, n=16):
    rng = np.random.default_rng(rng_seed)
    p = mod.Params()
    p.scale = float(rng.uniform(0.5, 2.0))
    p.offset = wp.vec3(*rng.uniform(-1, 1, 3))
    p.m = wp.mat33(*rng.uniform(-1, 1, 9))
    p.counts = wp.array(rng.integers(-5, 5, n).astype(np.int32), dtype=int, device=device)
    p.weights = wp.array(rng.uniform(-1, 1, (n, 2)).astype(np.float32), dtype=float, device=device)
    p.inner.v = wp.vec3(*rng.uniform(-1, 1, 3))
    p.inner.k = int(rng.integers(1, 9))
    p.flag = True
    p.d = float(rng.uniform(1, 2))
    return p


def test_read_fields(mods, device):
    n = 16

    def build(wp, mod, dev):
        out = wp.zeros((n, 7), dtype=float, device=dev)
        iout = wp.zeros((n, 4), dtype=int, device=dev)
        return [make_params(wp, mod, dev, n=n), out, iout], [out, iout]

    out, iout = run_both(mods, "read_fields", n, build, device)
    assert np.all(iout[:, 2] == 1) and np.all(iout[:, 1] == 2 * n + 2)
    assert np.abs(out).sum() > 0


def test_construct_copy_and_funcs(mods, device):
    n = 24
    x = np.random.default_rng(3).uniform(-2, 2, (n, 3)).astype(np.float32)

    def build(wp, mod, dev):
        out = wp.zeros(n, dtype=mod.Particle, device=dev)
        e = wp.zeros((n, 6), dtype=float, device=dev)
        return [wp.array(x, dtype=wp.vec3, device=dev), out, e], [out, e]

    out, e = run_both(mods, "construct", n, build, device)
    assert out.dtype.names == ("pos", "vel", "mass", "id")
    np.testing.assert_array_equal(out["mass"], np.full(n, 3.0, np.float32))  # q's edit did not reach p
    np.testing.assert_array_equal(out["id"], np.arange(n) * 7)
    np.testing.assert_allclose(e[:, 5], np.full(n, 2.0), rtol=1e-6)


def test_array_of_structs_written_in_place(mods, device):
    n = 32
    rng = np.random.default_rng(5)
    pos, vel = rng.uniform(-1, 1, (2, n, 3)).astype(np.float32)
    mass = rng.uniform(1, 2, n).astype(np.float32)

    def build(wp, mod, dev):
        items = []
        for k in range(n):
            p = mod.Particle()
            p.pos, p.vel, p.mass, p.id = wp.vec3(*pos[k]), wp.vec3(*vel[k]), float(mass[k]), -1
            items.append(p)
        ps = wp.array(items, dtype=mod.Particle, device=dev)
        return [ps, 0.01], [ps]

    (ps,) = run_both(mods, "update", n, build, device)
    np.testing.assert_allclose(ps["pos"], pos + vel * np.float32(0.01), rtol=1e-6)
    np.testing.assert_allclose(ps["mass"], mass + 1, rtol=1e-6)
    np.testing.assert_array_equal(ps["id"], np.arange(n))


def test_nested_fields_and_components(mods, device):
    n = 8

    def build(wp, mod, dev):
        params = wp.zeros(n, dtype=mod.Params, device=dev)
        out = wp.zeros((n, 2), dtype=float, device=dev)
        return [params, out], [params, out]

    params, out = run_both(mods, "nested", n, build, device)
    np.testing.assert_array_equal(params["inner"]["k"], np.arange(n) + 3)
    np.testing.assert_array_equal(out[:, 0], 11.0 + np.arange(n) + 99)


def test_structs_carried_through_loops_and_branches(mods, device):
    def build(wp, mod, dev):
        out = wp.zeros((10, 3), dtype=float, device=dev)
        return [4, out], [out]

    (out,) = run_both(mods, "carried", 10, build, device)
    np.testing.assert_array_equal(out[:, 2], np.arange(10) * 3.0)


def test_array_fields_written_by_the_kernel(mods, device):
    n = 16
    results = []
    for mod, dev in ((mods[0], device), reference(mods, device)):
        p = make_params(mod.wp, mod, dev, rng_seed=11, n=n)
        before = p.counts.numpy().copy()
        mod.wp.launch(mod.array_fields, dim=n, inputs=[p], device=dev)
        results.append((p.counts.numpy(), p.weights.numpy()))
    for g, w in zip(*results):
        assert_same(g, w)
    expected = before * 2 + np.arange(n)
    expected[0] += n
    np.testing.assert_array_equal(results[0][0], expected)


def test_layout_matches_cpp(mods, device):
    """Odd-sized fields (bool, half, int8, uint16 between doubles) read and written at the right offsets."""
    def build(wp, mod, dev):
        s = mod.Mixed()
        s.b, s.d, s.h, s.i8, s.v, s.u16, s.i64 = True, 1.25, 0.5, -7, wp.vec3(1, 2, 3), 65000, -(2**40)
        s.m = wp.mat22d(1.5, 2.5, 3.5, 4.5)
        out = wp.zeros(3, dtype=mod.Mixed, device=dev)
        f = wp.zeros(8, dtype=wp.float64, device=dev)
        return [s, out, f], [out, f]

    out, f = run_both(mods, "mixed_roundtrip", 3, build, device)
    np.testing.assert_array_equal(f, [1, 1.25, 0.5, -7, 3, 65000, -(2**40), 3.5])
    np.testing.assert_array_equal(out["i8"], [-7, -6, -5])
    np.testing.assert_array_equal(out["h"], np.full(3, 1.0, np.float16))


# ---- host side --------------------------------------------------------------------------------------


def test_defaults_and_numpy_layout_match_warp(mods):
    need_warp(mods)
    tw, wa = mods[0].Particle(), mods[1].Particle()
    for s in (tw, wa):
        assert s.mass == 0 and s.id == 0 and list(s.pos) == [0, 0, 0]
    assert mods[0].Params().counts is None and mods[0].Params().inner.k == 0
    got, want = (m.wp.zeros(4, dtype=m.Particle, device="cpu").numpy() for m in mods)
    assert got.dtype == want.dtype  # names, formats, offsets and itemsize
    got, want = (m.wp.zeros(2, dtype=m.Mixed, device="cpu").numpy() for m in mods)
    assert got.dtype == want.dtype


def test_host_instances(mods):
    wp, S = tilewarp, mods[0].Params
    s = S()
    s.scale = 3
    assert s.scale == 3
    s.offset = (1, 2, 3)
    assert isinstance(s.offset, wp.vec3) and s.offset is s.offset
    s.offset[0] = 7.0  # a view into the struct
    assert s.offset[0] == 7.0 and s.numpy_value()["offset"][0] == 7.0
    inner = mods[0].Inner()
    inner.k = 42
    s.inner = inner  # copied in, as Warp does
    inner.k = 43
    assert s.inner.k == 42
    with pytest.raises(TypeError):
        s.scale = "a"
    with pytest.raises(TypeError):
        s.inner.k = 1.5
    with pytest.raises(ValueError):
        s.offset = wp.vec2(1, 2)
    with pytest.raises(TypeError):
        s.offset = 1.0
    with pytest.raises(TypeError):
        s.counts = wp.zeros(3, dtype=float, device="cpu")
    with pytest.raises(TypeError):
        s.counts = np.zeros(3, np.int32)
    with pytest.raises(TypeError):
        s.inner = 5
    with pytest.raises(AttributeError):
        s.nope = 1
    assert S(scale=2.0).scale == 2.0  # keyword construction on the host: an addition to Warp


def test_arrays_of_structs_on_the_host(mods):
    wp, P = tilewarp, mods[0].Particle
    a, b = P(), P()
    a.pos, a.mass, a.id = wp.vec3(1, 2, 3), 1.5, 4
    b.mass, b.id = 2.5, -1
    arr = wp.array([a, b], dtype=P, device="cpu")
    n = arr.numpy()
    np.testing.assert_array_equal(n["mass"], [1.5, 2.5])
    np.testing.assert_array_equal(n["pos"][0], [1, 2, 3])
    back = arr.list()
    assert isinstance(back[0], P) and back[0].id == 4 and back[1].mass == 2.5 and back[0].pos[2] == 3
    again = wp.array(n, dtype=P, device="cpu")
    np.testing.assert_array_equal(again.numpy(), n)
    np.testing.assert_array_equal(wp.clone(arr).numpy()["id"], [4, -1])
    full = wp.full(3, a, dtype=P, device="cpu")
    np.testing.assert_array_equal(full.numpy()["id"], [4, 4, 4])
    full.zero_()
    assert not full.numpy()["mass"].any()
    assert not wp.empty(2, dtype=P, device="cpu").numpy()["id"].any()


def test_cpp_names_are_stable_across_processes(tmp_path):
    """The C++ struct name depends on module.qualname and field types, never on Python's hash seed."""
    (tmp_path / "structmod.py").write_text(textwrap.dedent('''
        import tilewarp as wp

        @wp.struct
        class Body:
            x: wp.vec3
            w: wp.array(dtype=float)
    '''))
    code = "import structmod; print(structmod.Body.native_name)"
    names = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONPATH=str(tmp_path), PYTHONHASHSEED=seed)
        names.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                 check=True).stdout.strip())
    assert len(names) == 1 and names.pop().startswith("Body_")


def test_launch_errors(mods):
    k = mods[0].read_fields
    out = tilewarp.zeros((1, 7), dtype=float, device="cpu")
    iout = tilewarp.zeros((1, 4), dtype=int, device="cpu")
    for bad in (mods[0].Particle(), 1.0, None):
        with pytest.raises(tilewarp.LaunchError, match="argument 'p'"):
            tilewarp.launch(k, dim=1, inputs=[bad, out, iout], device="cpu")


# ---- bad kernel code: located errors --------------------------------------------------------------

wp = tilewarp
MARK = "# <- error"
THIS_FILE = os.path.abspath(__file__)


@wp.struct
class Body:
    x: wp.vec3
    m: float


@wp.func
def make_body() -> Body:
    return Body()


@wp.kernel
def k_unknown_field_read(a: wp.array(dtype=float)):
    b = Body()
    a[0] = b.nope  # <- error


@wp.kernel
def k_unknown_field_write(a: wp.array(dtype=float)):
    b = Body()
    b.nope = 1.0  # <- error


@wp.kernel
def k_wrong_field_type(a: wp.array(dtype=float)):
    b = Body()
    b.m = wp.vec3(1.0)  # <- error


@wp.kernel
def k_wrong_nested_type(a: wp.array(dtype=Body)):
    a[0].x.y = wp.vec3(1.0)  # <- error


@wp.kernel
def k_unknown_keyword(a: wp.array(dtype=float)):
    b = Body(x=wp.vec3(1.0), w=2.0)  # <- error


@wp.kernel
def k_too_many_values(a: wp.array(dtype=float)):
    b = Body(wp.vec3(1.0), 2.0, 3.0)  # <- error


@wp.kernel
def k_wrong_constructor_type(a: wp.array(dtype=float)):
    b = Body(1.0, 2.0)  # <- error


@wp.kernel
def k_compare_structs(a: wp.array(dtype=float)):
    if Body() == Body():  # <- error
        a[0] = 1.0


@wp.kernel
def k_field_of_temporary(a: wp.array(dtype=float)):
    make_body().m = 1.0  # <- error


@wp.kernel
def k_struct_into_float_array(a: wp.array(dtype=float)):
    a[0] = Body()  # <- error


@wp.kernel
def k_add_structs(a: wp.array(dtype=Body)):
    a[0] += Body()  # <- error


@pytest.mark.parametrize("kernel,cls,fragment", [
    (k_unknown_field_read, tilewarp.KernelTypeError, "nope"),
    (k_unknown_field_write, tilewarp.KernelTypeError, "nope"),
    (k_wrong_field_type, tilewarp.KernelTypeError, "field 'm'"),
    (k_wrong_nested_type, tilewarp.KernelTypeError, "component"),
    (k_unknown_keyword, tilewarp.KernelTypeError, "'w'"),
    (k_too_many_values, tilewarp.KernelTypeError, "at most 2"),
    (k_wrong_constructor_type, tilewarp.KernelTypeError, "field 'x'"),
    (k_compare_structs, tilewarp.KernelTypeError, "=="),
    (k_field_of_temporary, tilewarp.KernelSyntaxError, "local variable"),
    (k_struct_into_float_array, tilewarp.KernelTypeError, "array element"),
    (k_add_structs, tilewarp.KernelTypeError, "+"),
], ids=lambda p: getattr(p, "key", None) or getattr(p, "__name__", None) or str(p))
def test_kernel_errors_are_located(kernel, cls, fragment):
    lines, first = __import__("inspect").getsourcelines(kernel.fn)
    (line,) = [first + k for k, text in enumerate(lines) if MARK in text]
    with pytest.raises(cls) as info:
        wp.launch(kernel, dim=1, inputs=[None], device="cpu")
    msg = str(info.value)
    assert f"{THIS_FILE}:{line}:" in msg and fragment in msg, msg
    assert "tilewarp/" not in msg, msg


def test_bad_struct_definitions():
    with pytest.raises(TypeError, match="no annotated fields"):
        wp.struct(type("Empty", (), {}))
    with pytest.raises(TypeError, match="field 'f'"):
        @wp.struct
        class Bad:
            f: str


FUTURE_SRC = '''
from __future__ import annotations

import WP as wp


@wp.struct
class Seg:
    a: wp.vec3
    b: wp.vec3


@wp.struct
class Mesh:
    segs: wp.array(dtype=Seg)
    n: int


@wp.kernel
def seg_lengths(m: Mesh, out: wp.array(dtype=float)):
    i = wp.tid()
    s = m.segs[i]
    out[i] = wp.length(s.b - s.a) + float(m.n)
    m.segs[i].a = wp.vec3(float(i))
    m.segs[i].b.y += 1.0
'''


def test_postponed_annotations_and_arrays_of_structs_in_structs(device):
    mods = load_both(FUTURE_SRC)
    ends = np.random.default_rng(9).uniform(-1, 1, (2, 12, 3)).astype(np.float32)
    results = []
    for mod, dev in ((mods[0], device), reference(mods, device)):
        items = []
        for a, b in zip(*ends):
            s = mod.Seg()
            s.a, s.b = mod.wp.vec3(*a), mod.wp.vec3(*b)
            items.append(s)
        m = mod.Mesh()
        m.segs, m.n = mod.wp.array(items, dtype=mod.Seg, device=dev), 5
        out = mod.wp.zeros(12, dtype=float, device=dev)
        mod.wp.launch(mod.seg_lengths, dim=12, inputs=[m, out], device=dev)
        results.append((out.numpy(), m.segs.numpy()))
    for g, w in zip(*results):
        compare(g, w, "seg_lengths")
    np.testing.assert_allclose(results[0][0], np.linalg.norm(ends[1] - ends[0], axis=1) + 5, rtol=1e-6)
