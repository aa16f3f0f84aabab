"""Gradients of the vector builtins (native/core/vec.h adjoints) and of the composite plumbing
(constructors, v[i], v[i] = x) through real kernels, on random float64 inputs: each case by
central finite differences (``wp.autograd.gradcheck``), against warp-lang's gradients where Warp
has the overload, and a few in float32 against float64. Corner cases (zero vectors, ties, the
Huber seam, negative indices) have their own test. Quaternions, spatial and 2/4-vectors go through
the same generic adjoints.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as tw
from composite_grads import (Case, away, check_against_warp, check_float32, gradcheck, kernel_text,
                             tape_grads, uniform)
from conftest import load_module, warp

pytestmark = pytest.mark.skipif(not hasattr(tw, "Tape"), reason="autodiff (wp.Tape) not available yet")

V, F, Q = "vec3", "float", "quat"
CASES = [
    Case("add", "a + b", [V, V], V),
    Case("sub", "a - b", [V, V], V),
    Case("neg", "-a", [V], V),
    Case("pos", "+a", [V], V),
    Case("mul_vs", "a * b", [V, F], V),
    Case("mul_sv", "a * b", [F, V], V),
    Case("div_vs", "a / b", [V, F], V, [None, away(0.5, 2)]),
    Case("div_sv", "a / b", [F, V], V, [None, away(0.5, 2)]),
    Case("cw_mul", "wp.cw_mul(a, b)", [V, V], V),
    Case("cw_div", "wp.cw_div(a, b)", [V, V], V, [None, away(0.5, 2)]),
    Case("abs", "wp.abs(a)", [V], V, [away(0.1, 1)]),
    Case("min", "wp.min(a, b)", [V, V], V),
    Case("max", "wp.max(a, b)", [V, V], V),
    # componentwise clamp of vectors is a tilewarp extension (Warp 1.19: scalars only)
    Case("clamp", "wp.clamp(a, b, c)", [V, V, V], V, [uniform(-2, 2), uniform(-1, -0.6), uniform(0.6, 1)],
         warp=False),
    Case("lerp", "wp.lerp(a, b, c)", [V, V, F], V),
    Case("dot", "wp.dot(a, b)", [V, V], F),
    Case("cross", "wp.cross(a, b)", [V, V], V),
    Case("length", "wp.length(a)", [V], F),
    Case("length_sq", "wp.length_sq(a)", [V], F),
    Case("normalize", "wp.normalize(a)", [V], V),
    Case("norm_l1", "wp.norm_l1(a)", [V], F, [away(0.1, 1)], warp_bits=32),
    Case("norm_l2", "wp.norm_l2(a)", [V], F, warp_bits=32),
    Case("norm_huber_quad", "wp.norm_huber(a)", [V], F, [away(0.05, 0.5)], warp_bits=32),
    Case("norm_huber_lin", "wp.norm_huber(a)", [V], F, [away(1.0, 2.0)], warp_bits=32),
    Case("norm_huber_delta", "wp.norm_huber(a, b)", [V, F], F, [None, uniform(0.2, 2)], warp_bits=32),
    Case("norm_pseudo_huber", "wp.norm_pseudo_huber(a)", [V], F, warp_bits=32),
    Case("norm_pseudo_huber_delta", "wp.norm_pseudo_huber(a, b)", [V, F], F, [None, uniform(0.2, 2)],
         warp_bits=32),
    Case("smooth_normalize", "wp.smooth_normalize(a)", [V], V, warp_bits=32),
    Case("smooth_normalize_delta", "wp.smooth_normalize(a, b)", [V, F], V, [None, uniform(0.2, 2)],
         warp_bits=32),
    Case("extract", "a[1] * a[2]", [V], F),
    Case("extract_neg", "a[-1]", [V], F),
    # Warp also sends the overwritten component's gradient to a
    Case("with_component", "v", [V, F], V, pre=("v = a", "v[1] = b"), warp_wrong=(0,)),
    Case("with_component_neg", "v", [V, F], V, pre=("v = a", "v[-1] = b"), warp_wrong=(0,)),
    # augmented component assignment and attributes (Warp's in-place adjoints get a wrong)
    Case("components", "w + v", [V, F], V, warp_wrong=(0,),
         pre=("v = a", "v[1] += b", "v[0] *= b", "w = {vec3}(v.x, v.z * b, v.y)")),
    Case("outer", "wp.outer(a, b)", [V, "vec2"], "mat32"),
    Case("diag", "wp.diag(a)", [V], "mat33"),
    Case("skew", "wp.skew(a)", [V], "mat33"),
    Case("from_rows", "wp.matrix_from_rows(a, b)", [V, V], "mat23"),
    Case("from_cols", "wp.matrix_from_cols(a, b)", [V, V], "mat32"),
    Case("from_rows3", "wp.matrix_from_rows(a, b, c)", [V, V, V], "mat33"),
    Case("construct", "{vec3}(a, b * c, c)", [F, F, F], V),
    Case("construct_fill", "{vec3}(a)", [F], V),
    Case("construct_quat", "{quat}(a, b)", [V, F], Q),
    Case("construct_transform", "{transform}(a, b)", [V, Q], "transform"),
    # Warp 1.19 only builds spatial_vector(w, v) from its generic (float32) form
    Case("construct_spatial", "{spatial_vector}(a, b)", [V, V], "spatial_vector", warp=False),
    Case("vec2_length", "wp.length(a)", ["vec2"], F),
    Case("vec4_normalize", "wp.normalize(a)", ["vec4"], "vec4"),
    Case("vec4_lerp", "wp.lerp(a, b, c)", ["vec4", "vec4", F], "vec4"),
    Case("spatial_dot", "wp.dot(a, b)", ["spatial_vector"] * 2, F),
    Case("spatial_sub", "a - b", ["spatial_vector"] * 2, "spatial_vector"),
    Case("quat_dot", "wp.dot(a, b)", [Q, Q], F),
    Case("quat_length", "wp.length(a)", [Q], F),
    Case("quat_normalize", "wp.normalize(a)", [Q], Q),
    Case("quat_add", "a + b", [Q, Q], Q),
    Case("quat_scale", "a * b", [F, Q], Q),
    Case("quat_div", "a / b", [F, Q], Q, [None, away(0.5, 1)]),
    Case("quat_extract", "a[3] * a[0]", [Q], F),
    Case("transform_extract", "a[4]", ["transform"], F),
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


@pytest.mark.parametrize("name", ["normalize", "cross", "smooth_normalize_delta", "norm_huber_delta", "lerp",
                                  "quat_normalize", "div_sv"])
def test_float32_matches_float64(name, rng):
    check_float32(MODS[0], BY_NAME[name], rng)


def _grads(name, xs, adj_out, device="cpu"):
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    return tape_grads(MODS[0], BY_NAME[name], xs, np.asarray(adj_out, dtype=np.float64), device=device)[0]


def test_norms_of_zero_vector_have_zero_gradient(device):
    """normalize(0) is the constant 0 and |v| has a cone point at 0: the zero subgradient (Warp)."""
    zero = np.zeros((1, 3))
    (g,) = _grads("normalize", [zero], np.ones((1, 3)), device)
    np.testing.assert_array_equal(g, zero)
    (g,) = _grads("length", [zero], np.ones(1), device)
    np.testing.assert_array_equal(g, zero)
    (g,) = _grads("smooth_normalize", [zero], np.ones((1, 3)), device)  # smooth: 1 / delta
    np.testing.assert_allclose(g, np.ones((1, 3)), rtol=1e-15)


def test_componentwise_ties_follow_the_scalar_rules(device):
    """min/max ties send the gradient to the second argument, abs(0) has slope +1 (Warp)."""
    a = np.array([[1.0, 2.0, -0.5]])
    b = np.array([[1.0, 3.0, -0.5]])
    ga, gb = _grads("min", [a, b], np.ones((1, 3)), device)
    np.testing.assert_array_equal(ga, [[0.0, 1.0, 0.0]])
    np.testing.assert_array_equal(gb, [[1.0, 0.0, 1.0]])
    ga, gb = _grads("max", [a, b], np.ones((1, 3)), device)
    np.testing.assert_array_equal(ga, [[0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(gb, [[1.0, 1.0, 1.0]])
    (g,) = _grads("abs", [np.array([[0.0, -0.0, -2.0]])], np.ones((1, 3)), device)
    np.testing.assert_array_equal(g, [[1.0, 1.0, -1.0]])


def test_huber_seam_is_continuous(device):
    """At |v| == delta both branches give the gradient v; delta's gradient is |v| - delta = 0."""
    v = np.array([[0.6, 0.8, 0.0]])
    gv, gd = _grads("norm_huber_delta", [v, np.array([1.0])], np.ones(1), device)
    np.testing.assert_allclose(gv, v, rtol=1e-15)
    np.testing.assert_array_equal(gd, [0.0])
    gv, gd = _grads("norm_huber_delta", [np.array([[3.0, 4.0, 0.0]]), np.array([2.0])], np.ones(1), device)
    np.testing.assert_allclose(gv, [[1.2, 1.6, 0.0]], rtol=1e-15)  # delta v / |v|
    np.testing.assert_allclose(gd, [3.0], rtol=1e-15)  # |v| - delta


def test_component_assignment_routes_gradients(device):
    """v[-1] = b: the overwritten component's gradient goes to b, the others to a."""
    a, b = np.array([[1.0, 2.0, 3.0]]), np.array([5.0])
    g = np.array([[0.5, -1.0, 4.0]])
    ga, gb = _grads("with_component_neg", [a, b], g, device)
    np.testing.assert_array_equal(ga, [[0.5, -1.0, 0.0]])
    np.testing.assert_array_equal(gb, [4.0])
    (ga,) = _grads("extract_neg", [a], np.array([2.0]), device)
    np.testing.assert_array_equal(ga, [[0.0, 0.0, 2.0]])


def test_clamp_matches_numpy(rng, device):
    """The componentwise clamp (no Warp counterpart) against its derivative written out."""
    n = 32
    x, lo, hi = rng.uniform(-2, 2, (n, 3)), -rng.uniform(0.6, 1, (n, 3)), rng.uniform(0.6, 1, (n, 3))
    g = rng.uniform(-1, 1, (n, 3))
    gx, glo, ghi = _grads("clamp", [x, lo, hi], g, device)
    np.testing.assert_allclose(gx, g * ((x > lo) & (x < hi)), rtol=1e-15)
    np.testing.assert_allclose(glo, g * (x < lo), rtol=1e-15)
    np.testing.assert_allclose(ghi, g * (x > hi), rtol=1e-15)
