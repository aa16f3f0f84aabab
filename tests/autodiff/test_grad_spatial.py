"""Gradients of the spatial-vector builtins (native/core/spatial.h adjoints) and of spatial vector
and matrix operators, through kernels: float64 gradcheck, warp-lang's gradients for the same
output adjoints, and float32 against float64 for a few.
"""
from __future__ import annotations

import pytest

import tilewarp as tw
from spatial_grads import Case, Modules, check_against_warp, check_float32, check_gradcheck

pytestmark = pytest.mark.skipif(not hasattr(tw, "Tape"), reason="autodiff (wp.Tape) not available yet")

CASES = [
    Case("spatial_dot", "v6 v6", "s", "out0[i] = wp.spatial_dot(x0, x1)"),
    Case("spatial_cross", "v6 v6", "v6", "out0[i] = wp.spatial_cross(x0, x1)"),
    Case("spatial_cross_dual", "v6 v6", "v6", "out0[i] = wp.spatial_cross_dual(x0, x1)"),
    Case("top_bottom", "v6", "v3 v3", "out0[i] = wp.spatial_top(x0)\n"
         "out1[i] = wp.spatial_bottom(x0) * x0[1]"),
    Case("spatial_adjoint", "m33 m33", "m66", "out0[i] = wp.spatial_adjoint(x0, x1)"),
    Case("construct", "v3 v3", "v6", "out0[i] = _SV_(x0, x1 * x0[2])", warp_f32_only=True),
    Case("matrix_vector", "m66 v6", "v6 v6", "out0[i] = x0 * x1\nout1[i] = x1 * x0"),
    Case("matrix_matrix", "m66 m66", "m66 m66", "out0[i] = x0 * x1\nout1[i] = x0 + x1 - wp.transpose(x1)"),
    Case("scale", "v6 s", "v6 v6", "out0[i] = x0 * x1 - x0 / (x1 * x1 + _F_(1.0))\nout1[i] = -x0"),
    Case("components", "v6", "s", "out0[i] = x0[0] * x0[5] - x0[-2]"),
]
BY_NAME = {c.name: c for c in CASES}
MODS = Modules(CASES)
FLOAT32 = ["spatial_cross", "spatial_cross_dual", "matrix_vector"]


@pytest.mark.parametrize("name", list(BY_NAME))
def test_gradcheck(name, rng, device):
    check_gradcheck(MODS, BY_NAME[name], rng, device)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_matches_warp(name, rng):
    check_against_warp(MODS, BY_NAME[name], rng)


@pytest.mark.parametrize("name", FLOAT32)
def test_float32_matches_float64(name, rng):
    check_float32(MODS, BY_NAME[name], rng)
