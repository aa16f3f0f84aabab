"""Gradients of the quaternion builtins and operators (native/core/quat.h adjoints) through kernels.

Every case runs ``wp.autograd.gradcheck`` in float64 on random unit and non-unit quaternions, is
compared with warp-lang's gradients for the same output adjoints, and (for a few) float32 gradients
are compared with float64 ones. Corner cases: quat_slerp as the two quaternions meet (and at
t = 0, 1), quat_to_axis_angle near and at the identity, each of quat_from_matrix's four branches.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as tw
from spatial_grads import (Case, Modules, check_against_warp, check_float32, check_gradcheck, gradcheck,
                           output_seeds, rotation_matrices, tape_grads)

pytestmark = pytest.mark.skipif(not hasattr(tw, "Tape"), reason="autodiff (wp.Tape) not available yet")

CASES = [
    Case("mul", "qn qn", "q", "out0[i] = x0 * x1"),
    Case("add", "qn qn", "q", "out0[i] = x0 + x1"),
    Case("sub", "qn qn", "q", "out0[i] = x0 - x1"),
    Case("neg_pos", "qn", "q q", "out0[i] = -x0\nout1[i] = +x0"),
    Case("scale", "qn s", "q q", "out0[i] = x0 * x1\nout1[i] = x1 * x0"),
    Case("div", "qn pos", "q", "out0[i] = x0 / x1"),
    Case("dot", "qn qn", "s", "out0[i] = wp.dot(x0, x1)"),
    Case("length", "qn", "s s", "out0[i] = wp.length(x0)\nout1[i] = wp.length_sq(x0)"),
    Case("normalize", "qn", "q", "out0[i] = wp.normalize(x0)"),
    Case("components", "qn", "s", "out0[i] = x0[0] * x0.y + x0[-1] * x0.z - x0.w"),
    Case("with_component", "qn s", "q", "q = x0\nq[2] = x1\nq.w = x1 * x1\nout0[i] = q",
         warp_wrong="Warp 1.19 also passes the overwritten components' adjoints back to the original"),
    Case("construct", "v3 s", "q q", "out0[i] = _Q_(x0, x1)\nout1[i] = _Q_(x0[2], x1, x0[0], x0[1])"),
    Case("quat_inverse", "qn", "q", "out0[i] = wp.quat_inverse(x0)"),
    Case("quat_from_axis_angle", "v3 angle", "q", "out0[i] = wp.quat_from_axis_angle(x0, x1)"),
    Case("quat_to_axis_angle", "qn", "v3 s", "axis, angle = wp.quat_to_axis_angle(x0)\nout0[i] = axis\n"
         "out1[i] = angle"),
    Case("quat_rotate", "qn v3", "v3", "out0[i] = wp.quat_rotate(x0, x1)"),
    Case("quat_rotate_inv", "qn v3", "v3", "out0[i] = wp.quat_rotate_inv(x0, x1)"),
    Case("quat_to_matrix", "qn", "m33", "out0[i] = wp.quat_to_matrix(x0)"),
    Case("quat_from_matrix_rot", "rot", "q", "out0[i] = wp.quat_from_matrix(x0)"),
    Case("quat_from_matrix_33", "m33", "q", "out0[i] = wp.quat_from_matrix(x0)"),
    Case("quat_from_matrix_44", "m44", "q", "out0[i] = wp.quat_from_matrix(x0)"),
    Case("quat_slerp", "q q t01", "q", "out0[i] = wp.quat_slerp(x0, x1, x2)"),
    Case("quat_slerp_nonunit", "qn qn t01", "q", "out0[i] = wp.quat_slerp(x0, x1, x2)"),
    Case("quat_rpy", "angle angle angle", "q", "out0[i] = wp.quat_rpy(x0, x1, x2)"),
]
BY_NAME = {c.name: c for c in CASES}
MODS = Modules(CASES)
FLOAT32 = ["mul", "quat_rotate", "quat_to_matrix", "quat_from_matrix_rot", "quat_slerp", "quat_rpy"]


@pytest.mark.parametrize("name", list(BY_NAME))
def test_gradcheck(name, rng, device):
    check_gradcheck(MODS, BY_NAME[name], rng, device)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_matches_warp(name, rng):
    check_against_warp(MODS, BY_NAME[name], rng)


@pytest.mark.parametrize("name", FLOAT32)
def test_float32_matches_float64(name, rng):
    check_float32(MODS, BY_NAME[name], rng)


# ---- corner cases --------------------------------------------------------------------------------


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("gap", [1e-2, 1e-5, 1e-8, 0.0])
def test_slerp_as_the_quaternions_meet(gap, rng):
    """slerp(a, b, t) is smooth in b through b == a (the axis of a^-1 b is not): its gradient
    stays exact, as close as the two may come, and at t = 0 and t = 1."""
    n = 12
    a = _unit(rng.normal(size=(n, 4)))
    b = _unit(a + gap * rng.normal(size=(n, 4)))
    b[-4:] *= -1  # the same rotations, taking the other sign branch of a^-1 b
    t = np.concatenate([[0.0, 1.0, 1.0, 0.0], rng.uniform(-0.2, 1.2, n - 4)])
    assert gradcheck(MODS, BY_NAME["quat_slerp"], [a, b, t], eps=1e-7, atol=1e-6, rtol=1e-5)


def test_slerp_gradient_at_equal_quaternions_is_the_limit(rng):
    """At b == a exactly the gradient is the limit of the nearby ones (Warp 1.19 gives zeros there)."""
    case, n = BY_NAME["quat_slerp"], 8
    a = _unit(rng.normal(size=(n, 4)))
    t = rng.uniform(0.1, 0.9, n)
    seeds = output_seeds(case, rng, n)
    ga, gb, gt = tape_grads(MODS("f64")[0], case, [a, a.copy(), t], seeds, "f64")
    near = tape_grads(MODS("f64")[0], case, [a, _unit(a + 1e-9 * rng.normal(size=(n, 4))), t], seeds, "f64")
    for got, want in zip((ga, gb, gt), near):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert np.abs(gb).max() > 0.05


@pytest.mark.parametrize("size", [1e-1, 1e-3])
def test_to_axis_angle_near_the_identity(size, rng):
    n = 12
    v = _unit(rng.normal(size=(n, 3))) * size
    w = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)[:, None]  # both sign branches
    q = np.concatenate([v, w], axis=1) * rng.uniform(0.5, 2.0, (n, 1))
    eps = size * 1e-4  # the axis curves on the scale of |v|
    assert gradcheck(MODS, BY_NAME["quat_to_axis_angle"], [q], eps=eps, atol=1e-6, rtol=1e-4)


def test_to_axis_angle_at_the_identity_has_zero_gradient(rng):
    """At v == 0 the axis is the zero vector and the angle a cone point: the zero subgradient."""
    case = BY_NAME["quat_to_axis_angle"]
    q = np.array([[0, 0, 0, 1.0], [0, 0, 0, -2.0], [0, 0, 0, 0.5]])
    (g,) = tape_grads(MODS("f64")[0], case, [q], output_seeds(case, rng, 3), "f64")
    np.testing.assert_array_equal(g, np.zeros_like(g))


@pytest.mark.parametrize("pivot", ["w", "x", "y", "z"])
def test_from_matrix_each_branch(pivot, rng):
    """quat_from_matrix's four branches (the pivot is the largest of w, x, y, z), on rotation
    matrices and on perturbed (non-orthogonal) ones."""
    n = 12
    q = rng.normal(scale=0.3, size=(n, 4))
    q[:, "xyzw".index(pivot)] = rng.choice([-1.0, 1.0], n) * rng.uniform(1.5, 2.0, n)
    rot = rotation_matrices(_unit(q))
    rot[n // 2:] += rng.normal(scale=0.05, size=(n - n // 2, 3, 3))
    assert gradcheck(MODS, BY_NAME["quat_from_matrix_rot"], [rot])
    m44 = rng.normal(size=(n, 4, 4))
    m44[:, :3, :3] = rot
    assert gradcheck(MODS, BY_NAME["quat_from_matrix_44"], [m44])


@pytest.mark.parametrize("name", ["quat_rotate", "quat_slerp", "mul"])
def test_float16_matches_float64(name, rng):
    check_float32(MODS, BY_NAME[name], rng, "f16", tol=3e-2)
