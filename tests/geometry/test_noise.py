"""noise / pnoise / curlnoise (tilewarp/builtins/noise.py, native/geometry/noise.h): the properties
of Perlin gradient noise (range and spread, matched against warp-lang's statistics since the values
differ by design; zeros on the lattice; continuity of values and gradients across cell faces; exact
periods; determinism; an unadvanced state), curlnoise's octave convention and zero divergence, the
float32 and float64 forms agreeing, analytic gradients against central differences in float64 for
every form in 1-4D, typing errors at the user's line, and a CUDA (sm_90, NVRTC) compile of one kernel
calling every builtin of the geometry primitives and noise tables, forward and backward.
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import Arr, check_located, load_both, need_warp, run

import tilewarp as wp
from tilewarp import KernelTypeError

SRC = '''
import WP as wp


@wp.kernel
def sample(seed: int, x: wp.array(dtype=wp.vec4), px: int, py: int, pz: int, pt: int,
           out: wp.array(dtype=float, ndim=2), curl: wp.array(dtype=wp.vec3, ndim=2)):
    i = wp.tid()
    s = wp.rand_init(seed)
    p = x[i]
    out[i, 0] = wp.noise(s, p[0])
    out[i, 1] = wp.noise(s, wp.vec2(p[0], p[1]))
    out[i, 2] = wp.noise(s, wp.vec3(p[0], p[1], p[2]))
    out[i, 3] = wp.noise(s, p)
    out[i, 4] = wp.pnoise(s, p[0], px)
    out[i, 5] = wp.pnoise(s, wp.vec2(p[0], p[1]), px, py)
    out[i, 6] = wp.pnoise(s, wp.vec3(p[0], p[1], p[2]), px, py, pz)
    out[i, 7] = wp.pnoise(s, p, px, py, pz, pt)
    c2 = wp.curlnoise(s, wp.vec2(p[0], p[1]))
    curl[i, 0] = wp.vec3(c2[0], c2[1], 0.0)
    curl[i, 1] = wp.curlnoise(s, wp.vec3(p[0], p[1], p[2]))
    curl[i, 2] = wp.curlnoise(s, p)
'''
DIMS = [1, 2, 3, 4, 1, 2, 3, 4]  # coordinates per column of `out`
PERIODS = (3, 5, 2, 7)


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


def _sample(mod, x, device="cpu", seed=42, periods=PERIODS):
    n = len(x)
    args = [seed, Arr(np.asarray(x, np.float32), "vec4"), *periods, Arr(np.zeros((n, 8), np.float32)),
            Arr(np.zeros((n, 3, 3), np.float32), "vec3")]
    _, out, curl = run(mod, "sample", n, args, device)
    return out, curl


# ---- float64 kernels: values and gradients of every form --------------------------------------------------

FORMS = ["noise1", "noise2", "noise3", "noise4", "pnoise1", "pnoise2", "pnoise3", "pnoise4",
         "curl2", "curl3", "curl4", "curl2_octaves", "curl3_octaves", "curl4_octaves"]


@wp.kernel
def form64(which: int, seed: int, x: wp.array(dtype=wp.vec4d), w: wp.array(dtype=wp.vec3d),
           out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    s = wp.rand_init(seed)
    p = x[i]
    p2 = wp.vec2d(p[0], p[1])
    p3 = wp.vec3d(p[0], p[1], p[2])
    a = w[i]
    r = wp.float64(0.0)
    if which == 0:
        r = wp.noise(s, p[0])
    elif which == 1:
        r = wp.noise(s, p2)
    elif which == 2:
        r = wp.noise(s, p3)
    elif which == 3:
        r = wp.noise(s, p)
    elif which == 4:
        r = wp.pnoise(s, p[0], 3)
    elif which == 5:
        r = wp.pnoise(s, p2, 3, 5)
    elif which == 6:
        r = wp.pnoise(s, p3, 3, 5, 2)
    elif which == 7:
        r = wp.pnoise(s, p, 3, 5, 2, 7)
    elif which == 8:
        r = wp.dot(wp.curlnoise(s, p2), wp.vec2d(a[0], a[1]))
    elif which == 9:
        r = wp.dot(wp.curlnoise(s, p3), a)
    elif which == 10:
        r = wp.dot(wp.curlnoise(s, p), a)
    elif which == 11:
        r = wp.dot(wp.curlnoise(s, p2, 3, 2.0, 0.5), wp.vec2d(a[0], a[1]))
    elif which == 12:
        r = wp.dot(wp.curlnoise(s, p3, octaves=2, lacunarity=1.7, gain=0.6), a)
    else:
        r = wp.dot(wp.curlnoise(s, p, wp.uint32(3), 2.3, 0.4), a)
    out[i] = r


def _form64(which, x, w=None, seed=42, grad=False):
    n = len(x)
    xa = wp.array(np.asarray(x, np.float64), dtype=wp.vec4d, requires_grad=grad)
    wa = wp.array(np.ones((n, 3)) if w is None else w, dtype=wp.vec3d)
    out = wp.zeros(n, dtype=wp.float64, requires_grad=grad)
    if not grad:
        wp.launch(form64, dim=n, inputs=[FORMS.index(which), seed, xa, wa, out])
        return out.numpy()
    tape = wp.Tape()
    with tape:
        wp.launch(form64, dim=n, inputs=[FORMS.index(which), seed, xa, wa, out])
    tape.backward(grads={out: wp.ones(n, dtype=wp.float64)})
    return xa.grad.numpy()


def _coords(form):
    return int(form[-1]) if form[-1].isdigit() else int(form[4])


# ---- properties of the values ------------------------------------------------------------------------------


def test_range_and_spread_match_warp(mods, rng):
    """|noise| <= sqrt(n) / 2 (the bound of unit gradients), centred on 0, and as spread out as Warp's
    field (same construction, other random gradients): standard deviations within 10%."""
    x = rng.uniform(0, 40, (40000, 4))  # Warp's pnoise takes non-negative coordinates only
    x[:, 0] *= 50  # enough cells for 1D statistics, and (with these periods) enough corners in pnoise
    periods = (1024, 32, 16, 8)
    out, curl = _sample(mods[0], x, periods=periods)
    for col, n in enumerate(DIMS):
        v = out[:, col]
        assert np.abs(v).max() <= np.sqrt(n) / 2 + 1e-6, col
        assert abs(v.mean()) < 0.02 and v.std() > 0.1, col
    assert np.all(np.isfinite(curl)) and np.abs(curl[:, 0, 2]).max() == 0
    need_warp(mods)
    want_out, want_curl = _sample(mods[1], x, periods=periods)
    np.testing.assert_allclose(out.std(0), want_out.std(0), rtol=0.1)
    speed, want_speed = np.linalg.norm(curl, axis=2).mean(0), np.linalg.norm(want_curl, axis=2).mean(0)
    np.testing.assert_allclose(speed, want_speed, rtol=0.1)


def test_zero_on_the_lattice(mods, rng):
    x = rng.integers(-50, 50, (300, 4)).astype(np.float64)
    for form in FORMS[:8]:
        assert np.all(_form64(form, x) == 0), form
    out, _ = _sample(mods[0], x)
    assert np.all(out == 0)


def test_pnoise_is_exactly_periodic(mods, rng):
    """Shifting by whole periods (negative ones too) gives the same bits; dyadic coordinates keep the
    shifted points exact in float32."""
    x = rng.integers(-8 * 64, 8 * 64, (2000, 4)) / 64.0
    base, _ = _sample(mods[0], x)
    for k in (1, -1, 3):
        shift = k * np.array(PERIODS) * rng.integers(1, 4, 4)
        moved, _ = _sample(mods[0], x + shift)
        np.testing.assert_array_equal(moved[:, 4:], base[:, 4:])
    assert not np.array_equal(moved[:, :4], base[:, :4])  # noise itself does not repeat
    # inside the first period (corners not yet wrapped) pnoise is noise itself
    inside = rng.integers(0, (np.array(PERIODS) - 1) * 64, (500, 4)) / 64.0
    out, _ = _sample(mods[0], inside)
    np.testing.assert_array_equal(out[:, 4:], out[:, :4])


def test_deterministic_and_seeded(mods, rng, device):
    x = rng.uniform(-30, 30, (3000, 4))
    a, ca = _sample(mods[0], x, device)
    b, cb = _sample(mods[0], x, device)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ca, cb)
    c, _ = _sample(mods[0], x, device, seed=43)
    assert np.mean(np.abs(c - a) > 1e-3) > 0.9  # another seed, another field
    if device != "cpu":  # the same field on the CPU, up to the float rounding of the blend
        h, ch = _sample(mods[0], x, "cpu")
        np.testing.assert_allclose(a, h, atol=1e-5)
        np.testing.assert_allclose(ca, ch, atol=1e-4)


def test_float32_matches_float64(mods, rng):
    x = rng.uniform(-20, 20, (2000, 4)).astype(np.float32).astype(np.float64)
    out, _ = _sample(mods[0], x)
    for col, form in enumerate(FORMS[:8]):
        np.testing.assert_allclose(out[:, col], _form64(form, x), atol=2e-5, err_msg=form)


def test_continuous_across_cell_faces(rng):
    """Values and gradients (C1), and curlnoise's Jacobian through its adjoint (C2), agree on both
    sides of a cell face: points an integer plus and minus 1e-9 along a random axis."""
    n = 300
    x = rng.uniform(-10, 10, (n, 4))
    axis = rng.integers(0, 4, n)
    x[np.arange(n), axis] = np.round(x[np.arange(n), axis])
    lo, hi = x.copy(), x.copy()
    lo[np.arange(n), axis] -= 1e-9
    hi[np.arange(n), axis] += 1e-9
    w = rng.standard_normal((n, 3))
    for form in FORMS:
        used = np.arange(n)[axis < _coords(form)] if not form.startswith("curl") else np.arange(n)
        np.testing.assert_allclose(_form64(form, lo[used], w[used]), _form64(form, hi[used], w[used]),
                                   atol=1e-7, err_msg=form)
        np.testing.assert_allclose(_form64(form, lo[used], w[used], grad=True),
                                   _form64(form, hi[used], w[used], grad=True), atol=1e-6, err_msg=form)


# ---- gradients ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_gradient_matches_central_differences(form, rng):
    n = 64
    x = rng.uniform(-6, 6, (n, 4))
    w = rng.standard_normal((n, 3))
    got = _form64(form, x, w, grad=True)
    h = 1e-6
    fd = np.zeros_like(x)
    for j in range(4):
        e = np.zeros(4)
        e[j] = h
        fd[:, j] = (_form64(form, x + e, w) - _form64(form, x - e, w)) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-6)
    dims = 3 if form.startswith("curl3") else 2 if form.startswith("curl2") else _coords(form)
    assert np.all(got[:, dims:] == 0) and np.abs(got[:, :dims]).max() > 0.1


def test_curlnoise_conventions(rng):
    """2D: the rotated gradient (-dN/dy, dN/dx) of noise with the same state; octave i adds
    gain^i times the one-octave field at lacunarity^i x (no frequency factor); divergence-free."""
    n = 200
    x = rng.uniform(-5, 5, (n, 4))
    h = 1e-6

    def fd(form, j, pts, w):
        e = np.zeros(4)
        e[j] = h
        return (_form64(form, pts + e, w) - _form64(form, pts - e, w)) / (2 * h)

    ex, ey = np.tile([1.0, 0, 0], (n, 1)), np.tile([0, 1.0, 0], (n, 1))
    np.testing.assert_allclose(_form64("curl2", x, ex), -fd("noise2", 1, x, ex), atol=1e-7)
    np.testing.assert_allclose(_form64("curl2", x, ey), fd("noise2", 0, x, ex), atol=1e-7)
    # three octaves, lacunarity 2, gain 0.5 (curl2_octaves) against one-octave fields
    for e in (ex, ey):
        want = sum(0.5 ** k * _form64("curl2", x * 2.0 ** k, e) for k in range(3))
        np.testing.assert_allclose(_form64("curl2_octaves", x, e), want, atol=1e-12)
    # divergence: sum of d curl_j / d x_j
    for form, dims in (("curl2", 2), ("curl3", 3), ("curl4", 3), ("curl3_octaves", 3), ("curl4_octaves", 3)):
        div = sum(fd(form, j, x, np.tile(np.eye(3)[j], (n, 1))) for j in range(dims))
        scale = np.abs(fd(form, 0, x, np.tile(np.eye(3)[1], (n, 1)))).max()
        assert np.abs(div).max() < 1e-6 * max(scale, 1), form


@wp.kernel
def calls(out: wp.array(dtype=wp.vec3), vals: wp.array(dtype=float)):
    s = wp.rand_init(9)
    p = wp.vec3(0.3, 1.7, -2.2)
    out[0] = wp.curlnoise(s, p)
    out[1] = wp.curlnoise(s, p, wp.uint32(1), 2.0, 0.5)
    out[2] = wp.curlnoise(s, p, 2, gain=0.25)
    out[3] = wp.curlnoise(s, p, 2, 2.0, 0.25)
    out[4] = wp.curlnoise(s, p, 0)
    out[5] = wp.curlnoise(xyz=p, state=s, lacunarity=3)
    out[6] = wp.curlnoise(s, p, 1, 3.0, 0.5)
    vals[0] = wp.noise(s, p)
    vals[1] = wp.noise(s, p)  # the state is not advanced by a noise call
    vals[4] = wp.noise(state=s, xyz=p)
    vals[5] = wp.pnoise(s, xyz=p, px=2, py=3, pz=4)
    vals[6] = wp.pnoise(s, p, 2, 3, 4)
    vals[7] = wp.noise(wp.uint32(9), 0.5) - wp.noise(9, 0.5)  # a literal seed is a state too
    vals[2] = wp.randf(s)  # (this one advances s)
    vals[3] = wp.randf(wp.rand_init(9))


def test_defaults_keywords_and_state():
    out, vals = wp.zeros(7, dtype=wp.vec3), wp.zeros(8, dtype=float)
    wp.launch(calls, dim=1, inputs=[out, vals])
    o, v = out.numpy(), vals.numpy()
    # one value per line pair, up to the contraction (fma) choices the host compiler makes per call site
    same = dict(rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(o[0], o[1], **same)
    np.testing.assert_allclose(o[2], o[3], **same)
    assert np.all(o[4] == 0) and np.abs(o[0]).max() > 0 and np.abs(o[0] - o[2]).max() > 1e-3
    np.testing.assert_allclose(o[5], o[6], **same)
    np.testing.assert_allclose(v[[1, 3, 4, 6, 7]], v[[0, 2, 0, 5, 6]] - [0, 0, 0, 0, v[6]], **same)


# ---- typing errors at the user's line -------------------------------------------------------------------


@wp.kernel
def k_noise_float_state():
    r = wp.noise(1.5, wp.vec2())  # <- error


@wp.kernel
def k_noise_int_position():
    r = wp.noise(wp.rand_init(1), wp.vec3i())  # <- error


@wp.kernel
def k_noise_half():
    r = wp.noise(wp.rand_init(1), wp.vec3h())  # <- error


@wp.kernel
def k_pnoise_periods():
    r = wp.pnoise(wp.rand_init(1), wp.vec3(), 2, 2)  # <- error


@wp.kernel
def k_pnoise_float_period():
    r = wp.pnoise(wp.rand_init(1), 0.5, 2.0)  # <- error


@wp.kernel
def k_curl_scalar():
    r = wp.curlnoise(wp.rand_init(1), 0.5)  # <- error


@wp.kernel
def k_curl_unknown_keyword():
    r = wp.curlnoise(wp.rand_init(1), wp.vec2(), octave=2)  # <- error


@pytest.mark.parametrize("kernel, fragment", [
    (k_noise_float_state, "noise(): expects (state: uint32, x: a float, vec2, vec3 or vec4"),
    (k_noise_int_position, "got (uint32, vec3i)"),
    (k_noise_half, "got (uint32, vec3h)"),
    (k_pnoise_periods, "pnoise(): expects (state: uint32, x: a float, vec2, vec3 or vec4 (float32 or "
                       "float64), then one int period per coordinate), got (uint32, vec3, int32, int32)"),
    (k_pnoise_float_period, "got (uint32, float32, float32)"),
    (k_curl_scalar, "curlnoise(): expects (state: uint32, xy: vec2"),
    (k_curl_unknown_keyword, "unexpected keyword argument 'octave'"),
], ids=lambda v: getattr(v, "key", None) or "msg")
def test_bad_input(kernel, fragment):
    check_located(kernel, KernelTypeError, fragment)


# ---- CUDA code: every geometry-primitive and noise builtin, forward and backward, through NVRTC ---------


@wp.kernel
def every_builtin(x: wp.array(dtype=wp.vec4), y: wp.array(dtype=wp.vec4d), out: wp.array(dtype=float),
                  hits: wp.array(dtype=wp.int32)):
    i = wp.tid()
    s = wp.rand_init(i)
    p = x[i]
    q = y[i]
    p2, p3 = wp.vec2(p[0], p[1]), wp.vec3(p[0], p[1], p[2])
    q2, q3 = wp.vec2d(q[0], q[1]), wp.vec3d(q[0], q[1], q[2])
    r = wp.noise(s, p[0]) + wp.noise(s, p2) + wp.noise(s, p3) + wp.noise(s, p)
    r += wp.pnoise(s, p[0], 2) + wp.pnoise(s, p2, 2, 3) + wp.pnoise(s, p3, 2, 3, 4)
    r += wp.pnoise(s, p, 2, 3, 4, 5)
    r += wp.length(wp.curlnoise(s, p2)) + wp.length(wp.curlnoise(s, p3, 2))
    r += wp.length(wp.curlnoise(s, p, 3, 2.0, 0.5))
    d = wp.noise(s, q[0]) + wp.noise(s, q2) + wp.noise(s, q3) + wp.noise(s, q) + wp.pnoise(s, q, 2, 3, 4, 5)
    d += wp.length(wp.curlnoise(s, q2)) + wp.length(wp.curlnoise(s, q3)) + wp.length(wp.curlnoise(s, q))
    e = wp.closest_point_edge_edge(p3, p3 * 2.0, wp.vec3(1.0), wp.vec3(2.0, 0.0, 1.0), 1e-6)
    f = wp.closest_point_edge_edge(q3, q3 * 2.0, wp.vec3d(1.0), wp.vec3d(2.0, 0.0, 1.0), 1e-12)
    out[i] = r + e[2] + float(d + f[2])
    hits[i] = wp.intersect_tri_tri(p3, p3 * 2.0, wp.vec3(1.0), wp.vec3(0.0), wp.vec3(1.0, 0.0, 0.0),
                                   wp.vec3(0.0, 1.0, 0.0)) + wp.intersect_tri_tri(
        q3, q3 * 2.0, wp.vec3d(1.0), wp.vec3d(0.0), wp.vec3d(1.0, 0.0, 0.0), wp.vec3d(0.0, 1.0, 0.0))


@wp.kernel
def no_geometry(out: wp.array(dtype=float)):
    out[wp.tid()] = 1.0


def test_cuda_compile_of_every_builtin(tmp_path):
    """NVRTC (no GPU needed) compiles, for sm_90, the forward and backward code of a kernel calling all
    these builtins; the headers are included only where called."""
    from tilewarp.compile import nvrtc
    from tilewarp.emit import emit_module
    from tilewarp.emit.adjoint import backward_signature, emit_backward_module

    fn = every_builtin.ir
    forward = emit_module(fn)
    backward = emit_backward_module(fn, backward_signature(fn))
    for header in ("geometry/noise.h", "geometry/primitives.h"):
        assert f'#include "{header}"' in forward and f'#include "{header}"' in backward
        assert header not in emit_module(no_geometry.ir)
    for name, source in (("every_builtin", forward), ("every_builtin_bwd", backward)):
        cubin = nvrtc.compile_cubin(source, name, 90, defines={"TW_CUDA": 1}, source_dir=str(tmp_path))
        assert cubin[:4] == b"\x7fELF"
    # and it runs (CPU), gradients included
    n = 16
    rng = np.random.default_rng(0)
    x = wp.array(rng.uniform(0.1, 3, (n, 4)), dtype=wp.vec4, requires_grad=True)
    y = wp.array(rng.uniform(0.1, 3, (n, 4)), dtype=wp.vec4d, requires_grad=True)
    out, hits = wp.zeros(n, dtype=float, requires_grad=True), wp.zeros(n, dtype=wp.int32)
    tape = wp.Tape()
    with tape:
        wp.launch(every_builtin, dim=n, inputs=[x, y, out, hits])
    tape.backward(grads={out: wp.ones(n, dtype=float)})
    assert np.all(np.isfinite(x.grad.numpy())) and np.abs(y.grad.numpy()).max() > 0
