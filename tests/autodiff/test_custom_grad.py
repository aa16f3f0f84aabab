"""User-written gradients: @wp.func_grad, @wp.func_replay, wp.grad(f), wp.adjoint[x].

The custom gradients below differ from the true ones on purpose (a straight-through estimator,
gradient clipping, a replay that returns another value), so a run that silently used the generated
adjoint or the forward function would give other numbers. Every case runs the same kernel text
through tilewarp and warp-lang on random float64 inputs and also checks a closed form; where Warp
cannot (a dynamic loop carrying a value, wp.grad of a function with a custom gradient: Warp's C++
does not compile), the closed form alone.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import tilewarp as tw
from conftest import load_both, load_module

TEXT = '''
import WP as wp

f64 = wp.float64


@wp.func
def snap(x: f64):
    return wp.round(x)


@wp.func_grad(snap)
def snap_grad(x: f64, adj_ret: f64):  # straight-through: round() passes its adjoint on unchanged
    wp.adjoint[x] += adj_ret


@wp.func
def clipped(x: f64, c: f64):
    return x


@wp.func_grad(clipped)
def clipped_grad(x: f64, c: f64, adj_ret: f64):  # identity with its gradient clipped to [-c, c]
    wp.adjoint[x] += wp.clamp(adj_ret, -c, c)


@wp.kernel
def ste(x: wp.array(dtype=f64), w: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    q = snap(x[i] * w[i])
    out[i] = clipped(q * q, f64(0.5)) + wp.sin(x[i])


@wp.func
def unit(v: wp.vec3d):
    return wp.normalize(v)


@wp.func_grad(unit)
def unit_grad(v: wp.vec3d, adj_ret: wp.vec3d):  # without the projection: not normalize's gradient
    wp.adjoint[v] += adj_ret / wp.length(v)


@wp.func
def polar(p: wp.vec2d, s: f64):
    return wp.length(p) * s, wp.atan2(p[1], p[0])


@wp.func_grad(polar)
def polar_grad(p: wp.vec2d, s: f64, adj_r: f64, adj_theta: f64):
    wp.adjoint[p] += wp.vec2d(adj_r, f64(0.0))
    wp.adjoint[s] += f64(3.0) * adj_r
    for k in range(2):
        wp.adjoint[p][k] += f64(2 * k) * adj_theta


@wp.func
def through(v: wp.vec3d, p: wp.vec2d, s: f64):
    r, th = polar(p, s)
    return wp.dot(unit(v), wp.vec3d(r, th, s))


@wp.kernel
def composite(v: wp.array(dtype=wp.vec3d), p: wp.array(dtype=wp.vec2d), s: wp.array(dtype=f64), n: int,
              out: wp.array(dtype=f64)):
    i = wp.tid()
    for j in range(n):  # no value carried from one iteration to the next: Warp's gradient is right
        wp.atomic_add(out, i, through(v[i], p[i], s[i]) * f64(j + 1))


@wp.func
def pick(a: wp.array(dtype=f64), i: int):
    return a[i] * f64(2.0)


@wp.func_grad(pick)
def pick_grad(a: wp.array(dtype=f64), i: int, adj_ret: f64):
    wp.adjoint[a][i] += f64(30.0) * adj_ret


@wp.kernel
def gather(a: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = pick(a, i) * pick(a, (i + 1) % 4)


@wp.func
def scaled(x: f64):
    return x * f64(2.0)


@wp.func
def scaled(x: wp.vec2d):
    return x * f64(2.0)


@wp.func_grad(scaled)
def scaled_vec_grad(x: wp.vec2d, adj_ret: wp.vec2d):  # chosen by the types: the vec2d overload
    wp.adjoint[x] += wp.vec2d(adj_ret[1], adj_ret[0])


@wp.func_grad(scaled)
def scaled_grad(x: f64, adj_ret: f64):
    wp.adjoint[x] += f64(-1.0) * adj_ret


@wp.kernel
def overloads(x: wp.array(dtype=f64), p: wp.array(dtype=wp.vec2d), out: wp.array(dtype=f64)):
    i = wp.tid()
    q = scaled(p[i])
    out[i] = scaled(x[i]) * q[0] + q[1]


@wp.func
def sq(x: f64):
    return x * x


@wp.func_replay(sq)
def sq_replay(x: f64):
    return x * x + f64(100.0)


@wp.func
def cube(x: f64):
    return sq(x) * x


@wp.kernel
def replayed(x: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    y = sq(x[i])
    z = cube(x[i])
    out[i] = y * y + z * z


@wp.kernel
def replayed_static_loop(x: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    s = f64(0.0)
    for j in range(4):
        s = s * f64(0.5) + sq(x[j])
    out[0] = s * s


@wp.func
def counted(x: f64, calls: wp.array(dtype=int)):
    wp.atomic_add(calls, 0, 1)
    return x * f64(3.0)


@wp.func_replay(counted)
def counted_replay(x: f64, calls: wp.array(dtype=int)):  # the same value, without counting again
    return x * f64(3.0)


@wp.kernel
def count(x: wp.array(dtype=f64), calls: wp.array(dtype=int), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = counted(x[i], calls) * x[i]


@wp.func
def field(v: wp.vec3d, s: f64):
    return v * s + wp.vec3d(wp.sin(s), f64(0.0), f64(0.0))


@wp.func
def poly(x: f64, n: int):
    return x * x * x * f64(n)


@wp.kernel
def grads(v: wp.array(dtype=wp.vec3d), s: wp.array(dtype=f64), gv: wp.array(dtype=wp.vec3d),
          gs: wp.array(dtype=f64), gp: wp.array(dtype=f64), ga: wp.array(dtype=wp.vec2d)):
    i = wp.tid()
    a, b = wp.grad(field)(v[i], s[i])
    gv[i] = a
    gs[i] = b
    g = wp.grad(poly)
    dx, dn = g(s[i], 3)
    gp[i] = dx + f64(1000 * dn)
    y, x = wp.grad(wp.atan2)(s[i], v[i][0])
    ga[i] = wp.vec2d(y, x)


@wp.kernel
def grad_in_backward(x: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    # wp.grad is forward code: the backward treats its value as a constant (as Warp)
    out[i] = x[i] * wp.grad(sq)(x[i]) + wp.sin(x[i])
'''

MODS = load_both(TEXT)
TW, WARP = MODS


def need_warp():
    if WARP is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")


def tape_grads(mod, kernel, inputs, n_out, device="cpu", seed=None, extra=(), dim=None):
    """Input gradients of ``kernel(*inputs, *extra, out)`` for ``out.grad = seed`` (ones by default),
    launched over ``dim`` (the first input's length by default)."""
    wp = mod.wp
    arrays = [wp.array(x, dtype=t(wp), device=device, requires_grad=True) for x, t in inputs]
    out = wp.zeros(n_out, dtype=wp.float64, device=device, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(getattr(mod, kernel), dim=dim or len(inputs[0][0]), inputs=[*arrays, *extra, out], device=device)
    seed = np.ones(n_out) if seed is None else seed
    tape.backward(grads={out: wp.array(seed, dtype=wp.float64, device=device)})
    return [a.grad.numpy() for a in arrays], out.numpy()


def both(kernel, inputs, n_out, device, **kw):
    """tilewarp's gradients on ``device``, checked equal to Warp's (CPU) in float64."""
    got = tape_grads(TW, kernel, inputs, n_out, device, **kw)
    if WARP is not None:
        want = tape_grads(WARP, kernel, inputs, n_out, "cpu", **kw)
        for g, w in zip([*got[0], got[1]], [*want[0], want[1]]):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    return got


F64 = (lambda wp: wp.float64)  # noqa: E731
V3 = (lambda wp: wp.vec3d)  # noqa: E731
V2 = (lambda wp: wp.vec2d)  # noqa: E731


# ---- @wp.func_grad --------------------------------------------------------------------------------


def test_straight_through_and_clipping(device, rng):
    x, w = rng.uniform(-3, 3, 64), rng.uniform(0.5, 2, 64)
    seed = rng.uniform(-1, 1, 64)
    (gx, gw), out = both("ste", [(x, F64), (w, F64)], 64, device, seed=seed)
    q = np.round(x * w)
    dq = 2 * q * np.clip(seed, -0.5, 0.5)  # clipped() clips its adjoint, round() passes it through
    np.testing.assert_allclose(gx, dq * w + seed * np.cos(x), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(gw, dq * x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(out, q * q + np.sin(x), rtol=1e-13)


def test_vectors_tuples_nested_funcs_and_loops(device, rng):
    m = 16
    v = rng.uniform(-2, 2, (m, 3))
    p, s = rng.uniform(0.3, 2, (m, 2)), rng.uniform(-1, 1, m)
    n = 3
    (gv, gp, gs), _ = both("composite", [(v, V3), (p, V2), (s, F64)], m, device, extra=(n,))
    r, th = np.linalg.norm(p, axis=1) * s, np.arctan2(p[:, 1], p[:, 0])
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    c = n * (n + 1) / 2  # the loop adds the value (j + 1) times
    want_v = c * np.stack([r, th, s], 1) / np.linalg.norm(v, axis=1, keepdims=True)
    np.testing.assert_allclose(gv, want_v, rtol=1e-12)
    adj_r, adj_th = c * u[:, 0], c * u[:, 1]
    np.testing.assert_allclose(gp, np.stack([adj_r, 2 * adj_th], 1), rtol=1e-12)
    np.testing.assert_allclose(gs, 3 * adj_r + c * u[:, 2], rtol=1e-12)


def test_overloads(device, rng):
    x, p = rng.uniform(-1, 1, 8), rng.uniform(-1, 1, (8, 2))
    (gx, gp), _ = both("overloads", [(x, F64), (p, V2)], 8, device)
    np.testing.assert_allclose(gx, -2 * p[:, 0], rtol=1e-13)
    # adjoint of q = (2x, 1): the custom gradient swaps its components
    np.testing.assert_allclose(gp, np.stack([np.ones(8), 2 * x], 1), rtol=1e-13)


def test_array_parameter_gradient(device, rng):
    a = rng.uniform(-1, 1, 4)
    (ga,), out = both("gather", [(a, F64)], 4, device)
    nxt = np.roll(a, -1)
    # d/da of pick(a, i) * pick(a, i+1): 30 * (the other factor), scattered to both elements
    want = 30 * 2 * nxt + np.roll(30 * 2 * a, 1)
    np.testing.assert_allclose(ga, want, rtol=1e-12)
    np.testing.assert_allclose(out, 4 * a * nxt, rtol=1e-13)


SAFE = """
import WP as wp


@wp.func
def soft_norm(v: wp.vec3d):
    return wp.sqrt(wp.dot(v, v) + wp.float64(1e-3))


@wp.func_grad(soft_norm)
def soft_norm_grad(v: wp.vec3d, adj_ret: wp.float64):  # the true gradient, written by hand
    wp.adjoint[v] += v * (adj_ret / soft_norm(v))


@wp.kernel
def norms(v: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = soft_norm(v[i]) * soft_norm(v[i] * wp.float64(2.0))
"""


def test_correct_custom_gradient_passes_gradcheck(device, rng):
    mod = load_module(SAFE, "tilewarp")
    wp = mod.wp
    v = wp.array(rng.uniform(-1, 1, (8, 3)), dtype=wp.vec3d, device=device)
    out = wp.zeros(8, dtype=wp.float64, device=device)
    assert tw.autograd.gradcheck(mod.norms, dim=8, inputs=[v], outputs=[out], eps=1e-6, atol=1e-7, rtol=1e-6,
                                 raise_exception=False, device=device, show_summary=False)


ASSIGN = """
import WP as wp


@wp.func
def f(x: wp.float64):
    return x * wp.float64(3.0)


@wp.func_grad(f)
def f_grad(x: wp.float64, adj_ret: wp.float64):
    wp.adjoint[x] = wp.float64(7.0) * adj_ret
    wp.adjoint[x] += wp.adjoint[x]


@wp.kernel
def k(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = f(x[i]) * x[i] + x[i] * x[i]
"""


def test_adjoint_assignment_is_this_calls_contribution(rng):
    """``wp.adjoint[x] = g`` sets this call's contribution; the caller's other uses of x still count
    (Warp hands the caller's accumulator over, so there the result depends on statement order)."""
    mod = load_module(ASSIGN, "tilewarp")
    x = rng.uniform(-2, 2, 8)
    (gx,), _ = tape_grads(mod, "k", [(x, F64)], 8)
    np.testing.assert_allclose(gx, 14 * x + 3 * x + 2 * x, rtol=1e-13)


# ---- @wp.func_replay ------------------------------------------------------------------------------


def test_replay_value_is_used(device, rng):
    x = rng.uniform(-2, 2, 32)
    (gx,), out = both("replayed", [(x, F64)], 32, device)
    np.testing.assert_allclose(out, x**4 + x**6, rtol=1e-13)
    # the adjoints see the replayed sq (x^2 + 100) wherever a backward pass replays a call of it: in
    # the kernel and in the generated adjoint of cube (the replay of cube's own call runs cube's
    # forward, whose sq is the real one); sq's own gradient stays 2x
    y = x**2 + 100
    adj_z = 2 * x**3
    want = 2 * y * 2 * x + adj_z * y + 2 * x * (adj_z * x)
    np.testing.assert_allclose(gx, want, rtol=1e-12)


def test_replay_in_loops(device, rng):
    x = rng.uniform(-1, 1, 4)
    (gx,), _ = both("replayed_static_loop", [(x, F64)], 1, device, dim=1)
    decay = 0.5 ** np.arange(3, -1, -1)
    s_replayed = np.sum(decay * (x**2 + 100))
    np.testing.assert_allclose(gx, 2 * s_replayed * decay * 2 * x, rtol=1e-12)


DYNAMIC = """
import WP as wp


@wp.func
def sq(x: wp.float64):
    return x * x


@wp.func_replay(sq)
def sq_replay(x: wp.float64):
    return x * x + wp.float64(100.0)


@wp.func
def snap(x: wp.float64):
    return wp.round(x)


@wp.func_grad(snap)
def snap_grad(x: wp.float64, adj_ret: wp.float64):
    wp.adjoint[x] += wp.float64(3.0) * adj_ret


@wp.kernel
def loop(x: wp.array(dtype=wp.float64), n: int, out: wp.array(dtype=wp.float64)):
    s = wp.float64(0.0)
    j = int(0)
    while j < n:
        s = s * wp.float64(0.5) + sq(x[j % 7])
        j += 1
    out[0] = s * s


@wp.kernel
def snap_loop(x: wp.array(dtype=wp.float64), n: int, out: wp.array(dtype=wp.float64)):
    s = wp.float64(0.0)
    for j in range(n):
        s = s * wp.float64(0.5) + snap(x[j % 7] * s + x[j % 7])
    out[0] = s
"""


@pytest.mark.parametrize("n", [1, 7, 40, 300])
def test_replay_in_dynamic_loops(device, rng, n):
    """Checkpointed loop reversal replays through the replacement too (Warp's dynamic loops are wrong)."""
    mod = load_module(DYNAMIC, "tilewarp")
    x = rng.uniform(-1, 1, 7)
    wp = mod.wp
    xa = wp.array(x, dtype=wp.float64, device=device, requires_grad=True)
    out = wp.zeros(1, dtype=wp.float64, device=device, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(mod.loop, dim=1, inputs=[xa, n, out], device=device)
    tape.backward(out)
    idx = np.arange(n) % 7
    decay = 0.5 ** np.arange(n - 1, -1, -1)
    s_replayed = np.sum(decay * (x[idx] ** 2 + 100))
    want = np.zeros(7)
    np.add.at(want, idx, 2 * s_replayed * decay * 2 * x[idx])
    np.testing.assert_allclose(xa.grad.numpy(), want, rtol=1e-11)


@pytest.mark.parametrize("n", [1, 5, 70])
def test_custom_gradient_in_a_dynamic_loop(device, rng, n):
    """s_j+1 = s_j / 2 + round(x s_j + x) with round's gradient taken as 3: a carried value."""
    mod = load_module(DYNAMIC, "tilewarp")
    x = rng.uniform(-2, 2, 7)
    idx = np.arange(n) % 7
    s = [0.0]
    for j in range(n):
        s.append(s[-1] * 0.5 + np.round(x[idx[j]] * s[-1] + x[idx[j]]))
    gs, want = 1.0, np.zeros(7)  # reverse: ds_j+1 / ds_j = 1/2 + 3 x; ds_j+1 / dx = 3 (s_j + 1)
    for j in reversed(range(n)):
        want[idx[j]] += gs * 3 * (s[j] + 1)
        gs *= 0.5 + 3 * x[idx[j]]
    (gx,), out = tape_grads(mod, "snap_loop", [(x, F64)], 1, device, extra=(n,), dim=1)
    np.testing.assert_allclose(out, [s[-1]], rtol=1e-13)
    np.testing.assert_allclose(gx, want, rtol=1e-11)


def test_replay_avoids_a_side_effect(device, rng):
    x = rng.uniform(-1, 1, 10)
    for mod, dev in [(TW, device)] + ([(WARP, "cpu")] if WARP is not None else []):
        wp = mod.wp
        calls = wp.zeros(1, dtype=wp.int32, device=dev)
        (gx,), _ = tape_grads(mod, "count", [(x, F64)], 10, dev, extra=(calls,))
        assert calls.numpy()[0] == 10  # the forward launch only: the backward replays counted_replay
        np.testing.assert_allclose(gx, 6 * x, rtol=1e-13)


# ---- wp.grad ----------------------------------------------------------------------------------------


def test_grad_of_funcs_and_builtins(device, rng):
    m = 12
    v, s = rng.uniform(-2, 2, (m, 3)), rng.uniform(-2, 2, m)
    results = []
    for mod, dev in [(TW, device)] + ([(WARP, "cpu")] if WARP is not None else []):
        wp = mod.wp
        outs = [wp.zeros(m, dtype=t, device=dev) for t in (wp.vec3d, wp.float64, wp.float64, wp.vec2d)]
        wp.launch(mod.grads, dim=m, inputs=[wp.array(v, dtype=wp.vec3d, device=dev),
                                            wp.array(s, dtype=wp.float64, device=dev), *outs], device=dev)
        results.append([o.numpy() for o in outs])
    gv, gs, gp, ga = results[0]
    # field(v, s) = v s + (sin s, 0, 0), seeded with ones: dv = s (1, 1, 1), ds = sum(v) + cos s
    np.testing.assert_allclose(gv, np.repeat(s[:, None], 3, 1), rtol=1e-13)
    np.testing.assert_allclose(gs, v.sum(1) + np.cos(s), rtol=1e-13)
    np.testing.assert_allclose(gp, 9 * s**2, rtol=1e-13)  # an int parameter gets no gradient
    r2 = s**2 + v[:, 0] ** 2
    np.testing.assert_allclose(ga, np.stack([v[:, 0] / r2, -s / r2], 1), rtol=1e-13)
    for k in (0, 1, 3):  # Warp truncates a gradient into the int parameter
        np.testing.assert_allclose(results[0][k], results[-1][k], rtol=1e-13)


def test_grad_is_constant_in_backward(device, rng):
    x = rng.uniform(-1, 1, 16)
    (gx,), out = both("grad_in_backward", [(x, F64)], 16, device)
    np.testing.assert_allclose(out, 2 * x * x + np.sin(x), rtol=1e-13)
    np.testing.assert_allclose(gx, 2 * x + np.cos(x), rtol=1e-13)


GRAD_OF_CUSTOM = """
import WP as wp


@wp.func
def f(x: wp.float64, y: wp.float64):
    return x * y


@wp.func_grad(f)
def f_grad(x: wp.float64, y: wp.float64, adj_ret: wp.float64):
    wp.adjoint[x] += wp.float64(10.0) * adj_ret
    wp.adjoint[y] += x * adj_ret


@wp.kernel
def k(x: wp.array(dtype=wp.float64), gx: wp.array(dtype=wp.float64), gy: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a, b = wp.grad(f)(x[i], wp.float64(2.0))
    gx[i] = a
    gy[i] = b


@wp.func
def inner(x: wp.float64):
    return wp.exp(x)


@wp.func
def outer(x: wp.float64):
    return inner(x) * x


@wp.func_grad(outer)
def outer_grad(x: wp.float64, adj_ret: wp.float64):  # d(inner)/dx, times 5
    wp.adjoint[x] += wp.float64(5.0) * wp.grad(inner)(x) * adj_ret


@wp.kernel
def uses_outer(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = outer(x[i]) * x[i]
"""


def test_grad_with_custom_gradients(device, rng):
    """wp.grad of a function with a custom gradient uses it, and wp.grad works inside a func_grad
    (Warp 1.19 emits, in both cases, a call of an adjoint it never defines)."""
    mod = load_module(GRAD_OF_CUSTOM, "tilewarp")
    wp = mod.wp
    x = rng.uniform(-1, 1, 8)
    gx, gy = wp.zeros(8, dtype=wp.float64, device=device), wp.zeros(8, dtype=wp.float64, device=device)
    wp.launch(mod.k, dim=8, inputs=[wp.array(x, dtype=wp.float64, device=device), gx, gy], device=device)
    np.testing.assert_allclose(gx.numpy(), np.full(8, 10.0))
    np.testing.assert_allclose(gy.numpy(), x)
    (g,), out = tape_grads(mod, "uses_outer", [(x, F64)], 8, device)
    np.testing.assert_allclose(out, np.exp(x) * x * x, rtol=1e-13)
    np.testing.assert_allclose(g, 5 * np.exp(x) * x + np.exp(x) * x, rtol=1e-13)


def test_python_side():
    with pytest.raises(RuntimeError, match="inside kernels"):
        tw.grad(TW.sq)(1.0)
    with pytest.raises(TypeError, match="takes a @wp.func"):
        tw.grad(lambda x: x)
    with pytest.raises(RuntimeError, match="func_grad"):
        tw.adjoint[1.0]
    assert TW.snap_grad.__name__ == "snap_grad"  # the decorators return the function itself
    assert TW.sq(3.0) == 9.0


# ---- errors --------------------------------------------------------------------------------------


def line_of(marker: str) -> int:
    """The line of this file holding ``marker`` (in a comment)."""
    lines, first = inspect.getsourcelines(inspect.getmodule(line_of))
    return next(k for k, text in enumerate(lines, 1) if marker in text and "line_of" not in text)


@tw.func
def f2(x: float, y: float):
    return x * y


def check_error(exc, marker, *words):
    assert exc.value.loc.file == __file__
    assert exc.value.loc.line == line_of(marker)
    for w in words:
        assert w in str(exc.value)


def test_signature_errors():
    with pytest.raises(tw.KernelTypeError) as e:
        @tw.func_grad(f2)  # <- missing adj_ret
        def g1(x: float, y: float):
            tw.adjoint[x] += 1.0
    check_error(e, "<- missing adj_ret", "adj_ret: float32")
    with pytest.raises(tw.KernelTypeError) as e:
        @tw.func_grad(f2)
        def g2(x: float, y: int, adj_ret: float):  # <- wrong type
            pass
    check_error(e, "<- wrong type", "'y' is int32", "float32")
    with pytest.raises(tw.KernelTypeError) as e:
        @tw.func_grad(f2)
        def g3(x: float, y: float, adj_ret: tw.float64):  # <- wrong adjoint type
            pass
    check_error(e, "<- wrong adjoint type", "adjoint of a float32 result", "float64")
    with pytest.raises(tw.KernelTypeError) as e:
        @tw.func_grad(f2)
        def g4(x: float, y: float, adj_ret: float, z: float):  # <- one too many
            pass
    check_error(e, "<- one too many", "'z' is one too many")
    with pytest.raises(tw.KernelTypeError) as e:
        @tw.func_grad(f2)
        def g5(y: float, x: float, adj_ret: float):  # <- swapped names
            pass
    check_error(e, "<- swapped names", "named 'y'", "f2(x, y)")
    with pytest.raises(tw.KernelTypeError) as e:
        @tw.func_replay(f2)  # <- replay signature
        def r1(x: float):
            return x
    check_error(e, "<- replay signature", "takes 2 parameter(s)")


def plain(x: float):
    return x


@tw.func
def generic(x: tw.Float):
    return x


def test_targets_that_are_not_funcs():
    for target, word in [(plain, "got function 'plain'"), (tw.sin, "'sin'"), (generic, "generic")]:
        with pytest.raises(tw.KernelTypeError) as e:
            @tw.func_grad(target)  # <- not a func
            def g(x: float, adj_ret: float):
                pass
        check_error(e, "<- not a func", word)


BODY_ERRORS = """
import WP as wp


@wp.func
def f(x: float, n: int):
    return x * float(n)


@wp.func_grad(f)
def f_grad(x: float, n: int, adj_ret: float):
    BODY


@wp.kernel
def k(a: wp.array(dtype=float)):
    a[0] = f(a[1], 2)
"""


@pytest.mark.parametrize("body, words", [
    ("z = x * 2.0\n    wp.adjoint[z] += adj_ret", ["takes a parameter of f (x, n)", "'z' is not one"]),
    ("wp.adjoint[adj_ret] += adj_ret", ["'adj_ret' is not one"]),
    ("wp.adjoint[n] += 1", ["'n' of f is int32", "no adjoint"]),
    ("x = x * 2.0\n    wp.adjoint[x] += adj_ret", ["'x' was reassigned"]),
    ("return adj_ret", ["returns nothing"]),
])
def test_body_errors(body, words):
    mod = load_module(BODY_ERRORS.replace("BODY", body), "tilewarp")
    wp = mod.wp
    a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(mod.k, dim=1, inputs=[a])
    with pytest.raises(tw.KernelTypeError) as e:
        tape.backward(grads={a: wp.array([1.0, 0.0], dtype=float)})
    text = body.split("\n")[-1].strip()
    assert e.value.loc.file == mod.__file__ and e.value.loc.text.strip() == text
    assert all(w in str(e.value) for w in words), str(e.value)


def test_adjoint_outside_func_grad():
    @tw.kernel
    def k(a: tw.array(dtype=float)):
        tw.adjoint[a] += 1.0  # <- adjoint in a kernel

    with pytest.raises(tw.KernelTypeError) as e:
        tw.launch(k, dim=1, inputs=[tw.zeros(1)])
    check_error(e, "<- adjoint in a kernel", "@wp.func_grad")


def test_replay_with_another_result_type():
    @tw.func
    def h(x: float):
        return x * 2.0

    @tw.func_replay(h)  # <- replay result
    def h_replay(x: float):
        return tw.vec2(x, x)

    @tw.kernel
    def k(a: tw.array(dtype=float)):
        a[0] = h(a[1])

    a = tw.array([1.0, 2.0], dtype=float, requires_grad=True)
    with tw.Tape() as tape:
        tw.launch(k, dim=1, inputs=[a])
    with pytest.raises(tw.KernelTypeError) as e:
        tape.backward(grads={a: tw.array([1.0, 0.0], dtype=float)})
    check_error(e, "<- replay result", "returns vec2", "float32")
