"""Gradients of the rigid-transform builtins and operators (native/core/transform.h adjoints).

Every case runs ``wp.autograd.gradcheck`` in float64 on random transforms (unit and non-unit
rotations) and 4x4 matrices, is compared with warp-lang's gradients for the same output adjoints,
and a few compare float32 gradients with float64 ones.
"""
from __future__ import annotations

import pytest

import tilewarp as tw
from spatial_grads import Case, Modules, check_against_warp, check_float32, check_gradcheck

pytestmark = pytest.mark.skipif(not hasattr(tw, "Tape"), reason="autodiff (wp.Tape) not available yet")

OVERWRITE = "Warp 1.19 also passes the overwritten part's adjoint back to the original transform"
CASES = [
    Case("transform_point", "tn v3", "v3", "out0[i] = wp.transform_point(x0, x1)"),
    Case("transform_vector", "tn v3", "v3", "out0[i] = wp.transform_vector(x0, x1)"),
    Case("transform_point_m44", "m44 v3", "v3", "out0[i] = wp.transform_point(x0, x1)"),
    Case("transform_vector_m44", "m44 v3", "v3", "out0[i] = wp.transform_vector(x0, x1)"),
    Case("transform_multiply", "tn tn", "t", "out0[i] = wp.transform_multiply(x0, x1)"),
    Case("mul", "tn tn", "t", "out0[i] = x0 * x1"),
    Case("transform_inverse", "tn", "t", "out0[i] = wp.transform_inverse(x0)"),
    Case("get_parts", "tn", "v3 q", "out0[i] = wp.transform_get_translation(x0)\n"
         "out1[i] = wp.transform_get_rotation(x0)"),
    Case("attributes", "tn", "v3 q", "out0[i] = x0.p * x0.q[3]\nout1[i] = x0.q * x0.p[1]"),
    Case("with_translation", "tn v3", "t", "t = x0\nt.p = x1 * x0[6]\nout0[i] = t", warp_wrong=OVERWRITE),
    Case("with_rotation", "tn q", "t", "t = x0\nt.q = x1 * x0[0]\nout0[i] = t", warp_wrong=OVERWRITE),
    Case("transform_to_matrix", "tn", "m44", "out0[i] = wp.transform_to_matrix(x0)"),
    Case("transform_twist", "tn v6", "v6", "out0[i] = wp.transform_twist(x0, x1)", warp_f32_only=True),
    Case("transform_wrench", "tn v6", "v6", "out0[i] = wp.transform_wrench(x0, x1)", warp_f32_only=True),
    Case("add_sub", "tn tn", "t t", "out0[i] = x0 + x1\nout1[i] = x0 - x1"),
    Case("scale", "tn s", "t t", "out0[i] = x0 * x1\nout1[i] = x1 * x0"),
    Case("components", "tn", "s", "out0[i] = x0[0] * x0[4] - x0[-1] * x0[2]"),
    Case("construct", "v3 q", "t t", "out0[i] = _T_(x0, x1)\nout1[i] = _T_(x0)"),
    Case("construct_keywords", "v3 q", "t", "out0[i] = _T_(p=x0 * x1.w, q=x1)"),
]
BY_NAME = {c.name: c for c in CASES}
MODS = Modules(CASES)
FLOAT32 = ["transform_point", "transform_multiply", "transform_inverse", "transform_twist"]


@pytest.mark.parametrize("name", list(BY_NAME))
def test_gradcheck(name, rng, device):
    check_gradcheck(MODS, BY_NAME[name], rng, device)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_matches_warp(name, rng):
    check_against_warp(MODS, BY_NAME[name], rng)


@pytest.mark.parametrize("name", FLOAT32)
def test_float32_matches_float64(name, rng):
    check_float32(MODS, BY_NAME[name], rng)


@pytest.mark.parametrize("name", ["transform_point", "transform_multiply"])
def test_float16_matches_float64(name, rng):
    check_float32(MODS, BY_NAME[name], rng, "f16", tol=3e-2)
