"""Gradients through @wp.struct values (struct_new / struct_get / struct_set adjoints) and through
tuples (make_tuple / tuple_get: multiple return values), in float64 kernels: gradcheck, warp-lang's
gradients for the same output adjoints, and numpy derivatives where gradcheck cannot look (array
fields of struct arguments).
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as tw
from conftest import load_both, load_module

pytestmark = pytest.mark.skipif(not hasattr(tw, "Tape"), reason="autodiff (wp.Tape) not available yet")

TEXT = '''
import WP as wp


@wp.struct
class Inner:
    v: wp.vec3d
    k: wp.float64


@wp.struct
class Body:
    x: wp.vec3d
    q: wp.quatd
    m: wp.float64
    count: int
    inner: Inner


@wp.struct
class Params:
    scale: wp.float64
    data: wp.array(dtype=wp.float64)


@wp.func
def spin(b: Body) -> Body:
    out = b
    out.q = b.q * b.q
    out.inner.v = wp.quat_rotate(b.q, b.inner.v) * b.inner.k
    return out


@wp.kernel
def fields(x: wp.array(dtype=wp.vec3d), q: wp.array(dtype=wp.quatd), m: wp.array(dtype=wp.float64),
           out: wp.array(dtype=wp.vec3d), out_q: wp.array(dtype=wp.quatd)):
    i = wp.tid()
    b = Body()
    b.x = x[i]
    b.q = q[i]
    b.m = m[i]
    b.count = 3
    b.inner.v = x[i] * m[i]
    b.inner.k = m[i] * m[i]
    b.x = b.x * b.m  # overwritten: the first value's adjoint must not leak through
    c = spin(b)
    out[i] = wp.quat_rotate(c.q, c.x) + c.inner.v * wp.float64(c.count)
    out_q[i] = c.q * c.inner.k


@wp.kernel
def constructed(x: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    a = Inner(x[i] * m[i], m[i])
    b = Inner(v=x[i], k=wp.length(x[i]))
    out[i] = wp.dot(a.v, b.v) * a.k + b.k


@wp.kernel
def array_field(p: Params, out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = p.data[i] * p.data[i] * p.scale


@wp.func
def polar(v: wp.vec3d):
    r = wp.length(v)
    return r, wp.atan2(v[1], v[0]), v * r


@wp.kernel
def tuples(x: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64), out_v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    r, phi, w = polar(x[i])
    out[i] = r * wp.sin(phi) + r * r
    out_v[i] = w * phi
'''

# tilewarp only: a tuple bound to a name and indexed (Warp 1.19 cannot index into its elements)
TUPLE_VALUES = '''
import WP as wp


@wp.func
def parts(v: wp.vec3d):
    return wp.length(v), v * v[0], wp.quat_from_axis_angle(v, v[2])


@wp.kernel
def tuple_values(x: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    t = parts(x[i])
    u = t
    out[i] = u[0] * t[1][2] + t[2].w * t[2][1] + wp.float64(len(t))
'''

MODS = load_both(TEXT)
N = 10


def _grads(mod, kernel, ins, outs, seeds):
    wp = mod.wp
    a_in = [wp.array(a, dtype=t, requires_grad=True) for a, t in ins]
    a_out = [wp.zeros(N, dtype=t, requires_grad=True) for t in outs]
    with wp.Tape() as tape:
        wp.launch(getattr(mod, kernel), dim=N, inputs=a_in, outputs=a_out)
    tape.backward(grads={o: wp.array(s, dtype=o.dtype) for o, s in zip(a_out, seeds)})
    return [a.grad.numpy() for a in a_in]


def _check(kernel, ins, outs, rng):
    wp = MODS[0].wp
    a_in = [wp.array(a, dtype=getattr(wp, t), requires_grad=True) for a, t in ins]
    a_out = [wp.zeros(N, dtype=getattr(wp, t), requires_grad=True) for t in outs]
    assert wp.autograd.gradcheck(getattr(MODS[0], kernel), dim=N, inputs=a_in, outputs=a_out, eps=1e-6,
                                 atol=1e-6, rtol=1e-5, raise_exception=False, show_summary=False)
    if MODS[1] is None:
        return
    seeds = [rng.normal(size=o.numpy().shape) for o in a_out]
    got = _grads(MODS[0], kernel, [(a, getattr(MODS[0].wp, t)) for a, t in ins],
                 [getattr(MODS[0].wp, t) for t in outs], seeds)
    want = _grads(MODS[1], kernel, [(a, getattr(MODS[1].wp, t)) for a, t in ins],
                  [getattr(MODS[1].wp, t) for t in outs], seeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)


def _quats(rng):
    q = rng.normal(size=(N, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True) * rng.uniform(0.5, 2.0, (N, 1))


def test_struct_fields_and_assignment(rng):
    """Field writes (nested too), an overwritten field, a struct through a @wp.func and back."""
    ins = [(rng.normal(size=(N, 3)), "vec3d"), (_quats(rng), "quatd"), (rng.uniform(0.5, 2, N), "float64")]
    _check("fields", ins, ["vec3d", "quatd"], rng)


def test_struct_constructors(rng):
    ins = [(rng.normal(size=(N, 3)), "vec3d"), (rng.uniform(0.5, 2, N), "float64")]
    _check("constructed", ins, ["float64"], rng)


def test_tuple_returns(rng):
    ins = [(rng.normal(size=(N, 3)), "vec3d")]
    _check("tuples", ins, ["float64", "vec3d"], rng)


def test_tuple_values_indexed():
    mod = load_module(TUPLE_VALUES, "tilewarp")
    x = tw.array(np.random.default_rng(5).normal(size=(N, 3)), dtype=tw.vec3d, requires_grad=True)
    out = tw.zeros(N, dtype=tw.float64, requires_grad=True)
    assert tw.autograd.gradcheck(mod.tuple_values, dim=N, inputs=[x], outputs=[out], eps=1e-6, atol=1e-6,
                                 rtol=1e-5, raise_exception=False, show_summary=False)


@pytest.mark.parametrize("lib", [0, 1])
def test_array_field_of_a_struct_argument(lib, rng):
    """The gradient of an array field is that array's .grad (gradcheck does not see struct arguments)."""
    mod = MODS[lib]
    if mod is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    wp = mod.wp
    data = rng.normal(size=N)
    p = mod.Params()
    p.scale = 1.7
    p.data = wp.array(data, dtype=wp.float64, requires_grad=True)
    out = wp.zeros(N, dtype=wp.float64, requires_grad=True)
    seed = rng.normal(size=N)
    with wp.Tape() as tape:
        wp.launch(mod.array_field, dim=N, inputs=[p], outputs=[out])
    tape.backward(grads={out: wp.array(seed, dtype=wp.float64)})
    np.testing.assert_allclose(p.data.grad.numpy(), 2 * data * 1.7 * seed, rtol=1e-12)
