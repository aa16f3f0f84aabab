"""Gradients of the matrix builtins (native/core/mat.h adjoints) through real kernels, on random
float64 inputs: each case by central finite differences (``wp.autograd.gradcheck``), against
warp-lang's gradients where Warp has the overload, and a few in float32 against float64. Singular
matrices (determinant's cofactors, inverse's zero matrix) and casts have their own tests.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as tw
from composite_grads import (Case, away, check_against_warp, check_float32, gradcheck, invertible,
                             kernel_text, tape_grads)
from conftest import load_module, warp

pytestmark = pytest.mark.skipif(not hasattr(tw, "Tape"), reason="autodiff (wp.Tape) not available yet")

M, V, F = "mat33", "vec3", "float"
CASES = [
    Case("add", "a + b", [M, M], M),
    Case("sub", "a - b", [M, M], M),
    Case("neg", "-a", [M], M),
    Case("pos", "+a", [M], M),
    Case("mul_ms", "a * b", [M, F], M),
    Case("mul_sm", "a * b", [F, M], M),
    Case("div_ms", "a / b", [M, F], M, [None, away(0.5, 2)]),
    Case("cw_mul", "wp.cw_mul(a, b)", [M, M], M),
    Case("cw_div", "wp.cw_div(a, b)", [M, M], M, [None, away(0.5, 2)]),
    Case("mat_vec", "a * b", [M, V], V),
    Case("matmul_vec", "a @ b", ["mat23", V], "vec2"),
    Case("vec_mat", "a * b", [V, M], V),
    Case("vecmatmul", "a @ b", ["vec2", "mat23"], V),
    Case("mat_mat", "a * b", [M, M], M),
    Case("matmul_23_32", "a @ b", ["mat23", "mat32"], "mat22"),
    Case("matmul_32_23", "a @ b", ["mat32", "mat23"], M),
    Case("matmul_44", "a @ b", ["mat44", "mat44"], "mat44"),
    Case("spatial_mat_vec", "a * b", ["spatial_matrix", "spatial_vector"], "spatial_vector"),
    Case("transpose", "wp.transpose(a)", ["mat23"], "mat32"),
    Case("trace", "wp.trace(a)", [M], F),
    Case("ddot", "wp.ddot(a, b)", [M, M], F),
    Case("get_diag", "wp.get_diag(a)", [M], V),
    Case("determinant22", "wp.determinant(a)", ["mat22"], F),
    Case("determinant33", "wp.determinant(a)", [M], F),
    Case("determinant44", "wp.determinant(a)", ["mat44"], F),
    Case("inverse22", "wp.inverse(a)", ["mat22"], "mat22", [invertible]),
    Case("inverse33", "wp.inverse(a)", [M], M, [invertible]),
    Case("inverse44", "wp.inverse(a)", ["mat44"], "mat44", [invertible]),
    Case("extract", "a[1, 2] * a[0, 0]", [M], F),
    Case("extract_neg", "a[-1, -3]", [M], F),
    Case("extract_row", "a[1]", ["mat23"], V),
    # Warp also sends the overwritten entries' gradient to a
    Case("with_component", "m", [M, F], M, pre=("m = a", "m[1, 2] = b"), warp_wrong=(0,)),
    Case("with_row", "m", [M, V], M, pre=("m = a", "m[-1] = b"), warp_wrong=(0,)),
    Case("components", "m", [M, F, V], M, pre=("m = a", "m[1, 2] += b * m[0, 0]", "m[0] = c * m[2, 1]"),
         warp_wrong=(0,)),
    Case("lerp", "wp.lerp(a, b, c)", [M, M, F], M),
    Case("construct", "{mat22}(a, b, c * a, d)", [F, F, F, F], "mat22"),
    Case("construct_fill", "{mat33}(a)", [F], M),
    Case("chain", "wp.transpose(wp.inverse(a)) @ wp.outer(b, b) * wp.determinant(a)", [M, V], M,
         [invertible]),
]
BY_NAME = {c.name: c for c in CASES}
MODS = (load_module(kernel_text(CASES), "tilewarp"),
        load_module(kernel_text(CASES, for_warp=True), "warp") if warp is not None else None)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradcheck(case, rng):
    assert gradcheck(MODS[0], case, rng)


@pytest.mark.parametrize("case", [c for c in CASES if c.warp], ids=lambda c: c.name)
def test_against_warp(case, rng, device):
    if MODS[1] is None and not device.startswith("cuda"):
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    check_against_warp(MODS, case, rng, device)


@pytest.mark.parametrize("name", ["inverse33", "inverse44", "determinant44", "matmul_32_23", "chain"])
def test_float32_matches_float64(name, rng):
    check_float32(MODS[0], BY_NAME[name], rng)


def _grads(name, xs, adj_out, device="cpu"):
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    return tape_grads(MODS[0], BY_NAME[name], xs, np.asarray(adj_out, dtype=np.float64), device=device)[0]


def _cofactors(m):
    n = m.shape[0]
    c = np.empty_like(m)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(m, i, 0), j, 1)
            c[i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return c


@pytest.mark.parametrize("n", [2, 3, 4])
def test_determinant_gradient_of_singular_matrix(n, rng, device):
    """d det / dm is the cofactor matrix, which stays exact (and nonzero) where m is singular."""
    m = rng.uniform(-1, 1, (n, n))
    m[-1] = 2.0 * m[0]  # rank n - 1
    (g,) = _grads(f"determinant{n}{n}", [m[None]], [1.5], device)
    np.testing.assert_allclose(g[0], 1.5 * _cofactors(m), rtol=1e-12, atol=1e-14)
    assert np.abs(g).max() > 0.01


@pytest.mark.parametrize("n", [2, 3, 4])
def test_inverse_gradient(n, rng, device):
    """adj_m = -R^T G R^T (R = m^-1), and none where m is singular (inverse is the constant 0)."""
    m = invertible(rng, (1, n, n))
    g = rng.uniform(-1, 1, (1, n, n))
    (got,) = _grads(f"inverse{n}{n}", [m], g, device)
    r = np.linalg.inv(m[0])
    np.testing.assert_allclose(got[0], -r.T @ g[0] @ r.T, rtol=1e-11, atol=1e-13)
    singular = np.ones((1, n, n))
    (got,) = _grads(f"inverse{n}{n}", [singular], g, device)
    np.testing.assert_array_equal(got, np.zeros_like(singular))


CAST_TEXT = """import WP as wp

@wp.kernel
def casts(a: wp.array(dtype=wp.vec3d), m: wp.array(dtype=wp.mat22d), s: wp.array(dtype=wp.float64),
          out: wp.array(dtype=wp.vec3d), mout: wp.array(dtype=wp.mat22d)):
    k = wp.tid()
    out[k] = wp.vec3d(wp.vec3(a[k])) + wp.vec3d(wp.float64(wp.float32(s[k])))
    mout[k] = wp.mat22d(wp.mat22h(m[k]))
"""


def test_casts_pass_gradients_through(rng, device):
    """Float-to-float casts of vectors, matrices and scalars hand the gradient back, rounded to
    the narrower type on the way; a fill sums its components' gradients."""
    mod = load_module(CAST_TEXT, "tilewarp")
    wp = mod.wp
    n = 16
    a = wp.array(rng.uniform(-1, 1, (n, 3)), dtype=wp.vec3d, device=device, requires_grad=True)
    m = wp.array(rng.uniform(-1, 1, (n, 2, 2)), dtype=wp.mat22d, device=device, requires_grad=True)
    s = wp.array(rng.uniform(-1, 1, n), dtype=wp.float64, device=device, requires_grad=True)
    out = wp.zeros(n, dtype=wp.vec3d, device=device, requires_grad=True)
    mout = wp.zeros(n, dtype=wp.mat22d, device=device, requires_grad=True)
    g, gm = rng.uniform(-1, 1, (n, 3)), rng.uniform(-1, 1, (n, 2, 2))
    with wp.Tape() as tape:
        wp.launch(mod.casts, dim=n, inputs=[a, m, s, out, mout], device=device)
    tape.backward(grads={out: wp.array(g, dtype=wp.vec3d, device=device),
                         mout: wp.array(gm, dtype=wp.mat22d, device=device)})
    np.testing.assert_array_equal(a.grad.numpy(), g.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(s.grad.numpy(), g.sum(axis=1).astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(m.grad.numpy(), gm.astype(np.float16).astype(np.float64))
