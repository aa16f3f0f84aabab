"""Gradients of wp.where / wp.select (every value type they choose between) and of scalar casts.

The chosen value gets the result's gradient, the other value and the condition none; a cast
between float types passes the gradient through (converted), a cast through an integer stops it.
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import tilewarp as tw
from conftest import load_both, load_module

pytestmark = pytest.mark.skipif(not hasattr(tw, "Tape"), reason="autodiff (wp.Tape) not available yet")

N = 40
# dtype name on wp -> numpy shape of one element
TYPES = {"float64": (), "vec3d": (3,), "mat22d": (2, 2), "quatd": (4,), "transformd": (7,),
         "spatial_vectord": (6,)}

TEXT = ["import WP as wp", ""]
for _name in TYPES:
    TEXT += [
        "@wp.kernel",
        f"def where_{_name}(c: wp.array(dtype=wp.int32), a: wp.array(dtype=wp.{_name}),",
        f"                  b: wp.array(dtype=wp.{_name}), out: wp.array(dtype=wp.{_name})):",
        "    i = wp.tid()",
        "    out[i] = wp.where(c[i] > 0, a[i], b[i])",
        "",
    ]
TEXT += '''
@wp.kernel
def where_int_cond(c: wp.array(dtype=wp.int32), a: wp.array(dtype=wp.float64),
                   b: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.where(c[i], a[i] * b[i], b[i]) + wp.where(c[i] > 1, a[i], wp.float64(2.0))


@wp.kernel
def where_sqrt(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    out[i] = wp.where(x[i] > wp.float64(0.0), wp.sqrt(x[i]), wp.float64(0.0))


@wp.struct
class Pair:
    s: wp.float64
    v: wp.vec3d


@wp.kernel
def where_struct(c: wp.array(dtype=wp.int32), xa: wp.array(dtype=wp.float64),
                 va: wp.array(dtype=wp.vec3d), xb: wp.array(dtype=wp.float64),
                 vb: wp.array(dtype=wp.vec3d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    p = Pair()
    p.s = xa[i]
    p.v = va[i]
    q = Pair()
    q.s = xb[i]
    q.v = vb[i]
    r = wp.where(c[i] > 0, p, q)
    out[i] = r.s * r.v[0] + r.v[1] - r.v[2]


@wp.kernel
def cast_float(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    f = wp.float32(x[i])
    out[i] = wp.float64(f * wp.float32(2.5)) + wp.float64(wp.int32(x[i])) * wp.float64(7.0)


@wp.kernel
def cast_half(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    h = wp.float16(wp.float32(x[i]))
    out[i] = wp.float64(h * h) * wp.float64(3.0)
'''.splitlines()
MODS = load_both("\n".join(TEXT))
# Warp 1.19 has removed select (its pre-1.10 spelling of where, arguments the other way round)
SELECT = load_module("import WP as wp\n" + """@wp.kernel
def select_vec(c: wp.array(dtype=wp.int32), f: wp.array(dtype=wp.vec3d), t: wp.array(dtype=wp.vec3d),
               out: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    out[i] = wp.select(c[i] > 0, f[i], t[i])""", "tilewarp")


def backward(mod, kernel, arrays, adj_out, out_dtype, device="cpu"):
    """``[(numpy data, wp dtype name or None)]`` in, the gradient of each float input out."""
    wp = mod.wp
    ins = []
    for data, dtype in arrays:
        if dtype is None:
            ins.append(wp.array(data, dtype=wp.int32, device=device))
        else:
            ins.append(wp.array(data, dtype=getattr(wp, dtype), device=device, requires_grad=True))
    out = wp.zeros(len(adj_out), dtype=getattr(wp, out_dtype), device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(getattr(mod, kernel), dim=len(adj_out), inputs=[*ins, out], device=device)
    tape.backward(grads={out: wp.array(adj_out, dtype=getattr(wp, out_dtype), device=device)})
    return [a.grad.numpy() if d is not None else None for a, (_, d) in zip(ins, arrays)]


def _chosen(c, shape):
    return c.reshape((-1,) + (1,) * len(shape)) > 0


@pytest.mark.parametrize("name", TYPES)
def test_where_routes_the_gradient(name, device, rng):
    shape = TYPES[name]
    c = rng.integers(-1, 2, N).astype(np.int32)
    a, b, adj_out = (rng.uniform(-2, 2, (N, *shape)) for _ in range(3))
    _, ga, gb = backward(MODS[0], f"where_{name}", [(c, None), (a, name), (b, name)], adj_out, name, device)
    mask = _chosen(c, shape)
    np.testing.assert_array_equal(ga, np.where(mask, adj_out, 0.0))
    np.testing.assert_array_equal(gb, np.where(mask, 0.0, adj_out))
    if MODS[1] is not None:  # Warp agrees
        _, wa, wb = backward(MODS[1], f"where_{name}", [(c, None), (a, name), (b, name)], adj_out, name)
        np.testing.assert_array_equal(ga, wa)
        np.testing.assert_array_equal(gb, wb)


def test_select_routes_the_gradient(device, rng):
    c = rng.integers(-1, 2, N).astype(np.int32)
    f, t, adj_out = (rng.uniform(-2, 2, (N, 3)) for _ in range(3))
    args = [(c, None), (f, "vec3d"), (t, "vec3d")]
    _, gf, gt = backward(SELECT, "select_vec", args, adj_out, "vec3d", device)
    mask = _chosen(c, (3,))
    np.testing.assert_array_equal(gt, np.where(mask, adj_out, 0.0))
    np.testing.assert_array_equal(gf, np.where(mask, 0.0, adj_out))


def test_where_int_condition_and_literal_branch(device, rng):
    c = rng.integers(-1, 3, N).astype(np.int32)
    a, b, adj_out = (rng.uniform(-2, 2, N) for _ in range(3))
    _, ga, gb = backward(MODS[0], "where_int_cond", [(c, None), (a, "float64"), (b, "float64")], adj_out,
                         "float64", device)
    np.testing.assert_allclose(ga, adj_out * (np.where(c != 0, b, 0.0) + (c > 1)), rtol=1e-15)
    np.testing.assert_allclose(gb, adj_out * np.where(c != 0, a, 1.0), rtol=1e-15)
    autograd = importlib.import_module("tilewarp.autograd")
    wp = MODS[0].wp
    ins = [wp.array(c, dtype=wp.int32, device=device)]
    ins += [wp.array(v, dtype=wp.float64, device=device, requires_grad=True) for v in (a, b)]
    out = wp.zeros(N, dtype=wp.float64, device=device, requires_grad=True)
    assert autograd.gradcheck(MODS[0].where_int_cond, dim=N, inputs=ins, outputs=[out], eps=1e-6, atol=1e-6,
                              rtol=1e-5, raise_exception=False, device=device, show_summary=False)


def test_untaken_branch_adds_no_nan(device):
    """where evaluates both values; sqrt's infinite slope at 0 must not turn the untaken branch's zero
    gradient into NaN (Warp's gradient is NaN here)."""
    (g,) = backward(MODS[0], "where_sqrt", [(np.array([0.0, 4.0]), "float64")], np.ones(2), "float64", device)
    np.testing.assert_array_equal(g, [0.0, 0.25])


def test_where_on_structs(device, rng):
    c = rng.integers(-1, 2, N).astype(np.int32)
    xa, xb, adj_out = (rng.uniform(-2, 2, N) for _ in range(3))
    va, vb = (rng.uniform(-2, 2, (N, 3)) for _ in range(2))
    args = [(c, None), (xa, "float64"), (va, "vec3d"), (xb, "float64"), (vb, "vec3d")]
    _, gxa, gva, gxb, gvb = backward(MODS[0], "where_struct", args, adj_out, "float64", device)
    m = c > 0
    x, v = np.where(m, xa, xb), np.where(m[:, None], va, vb)
    gx = adj_out * v[:, 0]
    gv = adj_out[:, None] * np.stack([x, np.ones(N), -np.ones(N)], axis=1)
    np.testing.assert_allclose(gxa, np.where(m, gx, 0.0), rtol=1e-15)
    np.testing.assert_allclose(gxb, np.where(m, 0.0, gx), rtol=1e-15)
    np.testing.assert_allclose(gva, np.where(m[:, None], gv, 0.0), rtol=1e-15)
    np.testing.assert_allclose(gvb, np.where(m[:, None], 0.0, gv), rtol=1e-15)


def test_cast_gradients(device, rng):
    x = rng.uniform(-4, 4, N)
    adj_out = rng.uniform(-2, 2, N)
    # float64 -> float32 -> float64 passes the gradient (in float32); the int32 path adds none
    (g,) = backward(MODS[0], "cast_float", [(x, "float64")], adj_out, "float64", device)
    np.testing.assert_allclose(g, 2.5 * adj_out, rtol=1e-6)
    if MODS[1] is not None:
        (w,) = backward(MODS[1], "cast_float", [(x, "float64")], adj_out, "float64")
        np.testing.assert_allclose(g, w, rtol=1e-6)
    # through half: d/dx (3 h^2) = 6 h, within half's rounding of the gradient on the way
    (g,) = backward(MODS[0], "cast_half", [(x, "float64")], adj_out, "float64", device)
    h = x.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(g, 6 * h * adj_out, rtol=3e-3)
