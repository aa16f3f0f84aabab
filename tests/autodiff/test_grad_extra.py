"""Gradients of the factorisations (svd3, svd2, qr3, eig3, inverse_approx; native/core/linalg.h),
the rotation / frame helpers (quat_from/to_euler, quat_to_rpy, quat_twist*, velocity_at_point,
transform_from_matrix/compose/decompose/set_*; native/core/frames.h) and the scalar extras (erf,
erfc, erfinv, erfcinv, copysign, div_approx in every form; native/core/special.h) through kernels.

Each case runs ``wp.autograd.gradcheck`` in float64 and is compared with warp-lang's gradients for
the same random output adjoints (in float32 where Warp has the function only in float32).
Inputs keep the decompositions differentiable: distinct singular values / eigenvalues (random),
well-conditioned matrices for inverse_approx, Euler angles away from gimbal lock.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as tw
from spatial_grads import Case, Modules, check_against_warp, check_gradcheck

pytestmark = pytest.mark.skipif(not hasattr(tw, "Tape"), reason="autodiff (wp.Tape) not available yet")


def _well_conditioned(n_dim):
    return lambda rng, n: rng.normal(size=(n, n_dim, n_dim)) * 0.3 + 2 * np.eye(n_dim)


def _euler_safe(rng, n):
    """Unit quaternions whose Euler angles (for every order used below) are away from gimbal lock."""
    q = rng.normal(size=(n, 4)) * [0.3, 0.3, 0.3, 1.0]
    return q / np.linalg.norm(q, axis=1, keepdims=True)


SVD2 = """m = wp.matrix_from_rows(wp.vector(x0[0, 0], x0[0, 1]), wp.vector(x0[1, 0], x0[1, 1]))
U, s, V = wp.svd2(m)
out0[i] = _V3_(U[0, 0], U[0, 1], U[1, 0])
out1[i] = _V3_(U[1, 1], s[0], s[1])
out2[i] = _V3_(V[0, 0], V[0, 1], V[1, 0])
out3[i] = _V3_(V[1, 1], s[0] * s[1], U[0, 0] * V[0, 0])"""

SVD3_OUTPUTS = """U = _M33_()
s = _V3_()
V = _M33_()
wp.svd3(x0, U, s, V)
out0[i] = U * wp.transpose(V)
out1[i] = s"""

SETTERS = """t = x0
wp.transform_set_translation(t, x1)
out0[i] = t
wp.transform_set_rotation(t, x2)
out1[i] = t"""

CASES = [
    Case("svd3", "m33", "m33 v3 m33", "U, s, V = wp.svd3(x0)\nout0[i] = U\nout1[i] = s\nout2[i] = V"),
    Case("svd3_outputs", "m33", "m33 v3", SVD3_OUTPUTS),
    Case("svd2", "m33", "v3 v3 v3 v3", SVD2),
    Case("qr3", "m33", "m33 m33", "Q, R = wp.qr3(x0)\nout0[i] = Q\nout1[i] = R"),
    # eig3 reads a symmetric matrix: differentiate through a symmetrisation, as users must
    Case("eig3", "m33", "m33 v3", "Q, d = wp.eig3(x0 + wp.transpose(x0))\nout0[i] = Q\nout1[i] = d"),
    Case("eig3_values", "m33", "s", "Q, d = wp.eig3(x0 + wp.transpose(x0))\nout0[i] = d[0] * d[1] + d[2]"),
    Case("inverse_approx", "m33 m44", "m33 m44",
         "out0[i] = wp.inverse_approx(x0)\nout1[i] = wp.inverse_approx(x1)",
         gens={0: _well_conditioned(3), 1: _well_conditioned(4)}),
    Case("quat_from_euler", "v3", "q q q",
         "out0[i] = wp.quat_from_euler(x0, 0, 1, 2)\nout1[i] = wp.quat_from_euler(x0, 2, 0, 2)\n"
         "out2[i] = wp.quat_from_euler(x0, 1, 2, 0)", warp_f32_only=True),
    Case("quat_to_euler", "q", "v3 v3 v3 v3",
         "out0[i] = wp.quat_to_euler(x0, 0, 1, 2)\nout1[i] = wp.quat_to_euler(x0, 2, 1, 2)\n"
         "out2[i] = wp.quat_to_euler(x0, 1, 0, 2)\nout3[i] = wp.quat_to_euler(x0, 0, 2, 0)",
         gens={0: _euler_safe}, warp_f32_only=True),
    Case("quat_to_rpy", "q", "v3", "out0[i] = wp.quat_to_rpy(x0)", gens={0: _euler_safe}, warp_f32_only=True),
    Case("quat_twist", "v3 q", "q", "out0[i] = wp.quat_twist(wp.normalize(x0), x1)", warp_f32_only=True),
    Case("quat_twist_angle", "v3 q", "s s",
         "out0[i] = wp.quat_twist_angle(x0, x1)\nout1[i] = wp.quat_twist_angle_signed(x0, x1)",
         warp_f32_only=True),
    Case("velocity_at_point", "v6 v3", "v3", "out0[i] = wp.velocity_at_point(x0, x1)", warp_f32_only=True),
    Case("transform_from_matrix", "m44", "t", "out0[i] = wp.transform_from_matrix(x0)"),
    Case("transform_compose", "v3 qn v3", "m44", "out0[i] = wp.transform_compose(x0, x1, x2)"),
    Case("transform_decompose", "m44", "v3 q v3", "p, q, s = wp.transform_decompose(x0)\nout0[i] = p\n"
         "out1[i] = q\nout2[i] = s"),
    Case("transform_set", "t v3 q", "t t", SETTERS,
         warp_wrong="Warp 1.19's in-place setters also pass the overwritten part's adjoint back to the "
                    "original"),
]
DIV_APPROX = """out0[i] = wp.div_approx(x0, x1)
out1[i] = wp.div_approx(x2, x1)
out2[i] = wp.div_approx(x1, x2)
out3[i] = wp.div_approx(x3, x1)
out4[i] = wp.div_approx(x1, x3)
out5[i] = wp.div_approx(x4, x1)"""

CASES += [
    Case("erf_family", "s s", "s s s s",
         "out0[i] = wp.erf(x0)\nout1[i] = wp.erfc(x0)\nout2[i] = wp.erfinv(x1)\n"
         "out3[i] = wp.erfcinv(x1 + _F_(1.0))", gens={1: lambda rng, n: rng.uniform(-0.9, 0.9, n)}),
    Case("copysign", "s s", "s", "out0[i] = wp.copysign(x0, x1)"),
    Case("div_approx", "s pos v3 m33 qn", "s v3 v3 m33 m33 q", DIV_APPROX,
         gens={2: lambda rng, n: rng.uniform(0.5, 2, (n, 3)),
               3: lambda rng, n: rng.uniform(0.5, 2, (n, 3, 3))}),
]
BY_NAME = {c.name: c for c in CASES}
MODS = Modules(CASES)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_gradcheck(name, rng, device):
    check_gradcheck(MODS, BY_NAME[name], rng, device)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_matches_warp(name, rng):
    check_against_warp(MODS, BY_NAME[name], rng)
