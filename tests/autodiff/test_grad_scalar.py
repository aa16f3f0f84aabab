"""Gradients of the scalar builtins (native/core/scalar.h adjoints) through real kernels.

Each builtin is checked three ways on random float64 inputs: against its derivative written out
in numpy, by ``wp.autograd.gradcheck`` (central finite differences through the forward kernel),
and against warp-lang's gradients where Warp's are right (it gives ``frac`` no gradient and
``mod`` none for the divisor). Corner cases (ties, zeros, clamped ranges) have their own test.
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import tilewarp as tw
from conftest import load_both

pytestmark = pytest.mark.skipif(not hasattr(tw, "Tape"), reason="autodiff (wp.Tape) not available yet")

N = 48
LN2, LN10 = math.log(2.0), math.log(10.0)


@dataclass
class Case:
    name: str
    expr: str  # in x, y, z (the kernel's per-thread inputs)
    domains: list  # (low, high) per argument
    grad: Callable  # numpy: args -> one gradient per argument (of the result, adj_ret = 1)
    warp_wrong: tuple = ()  # argument indices where Warp's gradient is wrong


def _smoothstep_grad(e0, e1, x):
    d = e1 - e0
    t = (x - e0) / d
    k = np.where((t > 0) & (t < 1), 6 * t * (1 - t) / d, 0.0)
    return k * (t - 1), -k * t, k


CASES = [
    Case("add", "x + y", [(-3, 3)] * 2, lambda x, y: (1.0, 1.0)),
    Case("sub", "x - y", [(-3, 3)] * 2, lambda x, y: (1.0, -1.0)),
    Case("mul", "x * y", [(-3, 3)] * 2, lambda x, y: (y, x)),
    Case("div", "x / y", [(-3, 3), (0.3, 3)], lambda x, y: (1 / y, -x / y**2)),
    Case("div_neg", "x / y", [(-3, 3), (-3, -0.3)], lambda x, y: (1 / y, -x / y**2)),
    Case("mod", "x % y", [(-9, 9), (0.7, 3)], lambda x, y: (1.0, -np.trunc(x / y)), warp_wrong=(1,)),
    Case("pow", "wp.pow(x, y)", [(0.2, 3), (-2, 2)], lambda x, y: (y * x ** (y - 1), x**y * np.log(x))),
    Case("pow_op", "x ** y", [(0.2, 3), (-2, 2)], lambda x, y: (y * x ** (y - 1), x**y * np.log(x))),
    Case("neg", "-x", [(-3, 3)], lambda x: (-1.0,)),
    Case("pos", "+x", [(-3, 3)], lambda x: (1.0,)),
    Case("abs", "wp.abs(x)", [(-3, 3)], lambda x: (np.sign(x),)),
    Case("min", "wp.min(x, y)", [(-3, 3)] * 2, lambda x, y: (1.0 * (x < y), 1.0 * (x >= y))),
    Case("max", "wp.max(x, y)", [(-3, 3)] * 2, lambda x, y: (1.0 * (x > y), 1.0 * (x <= y))),
    Case("clamp", "wp.clamp(x, y, z)", [(-3, 3), (-2, 0), (0, 2)],
         lambda x, lo, hi: (1.0 * ((x > lo) & (x < hi)), 1.0 * (x < lo), 1.0 * (x > hi))),
    Case("atan2", "wp.atan2(x, y)", [(-3, 3)] * 2, lambda y, x: (x / (x * x + y * y), -y / (x * x + y * y))),
    Case("lerp", "wp.lerp(x, y, z)", [(-3, 3), (-3, 3), (-1, 2)], lambda a, b, t: (1 - t, t, b - a)),
    Case("smoothstep", "wp.smoothstep(x, y, z)", [(-2, -0.5), (0.5, 2), (-2.5, 2.5)], _smoothstep_grad),
    Case("smoothstep_rev", "wp.smoothstep(x, y, z)", [(0.5, 2), (-2, -0.5), (-2.5, 2.5)], _smoothstep_grad),
    Case("sqrt", "wp.sqrt(x)", [(0.1, 5)], lambda x: (0.5 / np.sqrt(x),)),
    Case("cbrt", "wp.cbrt(x)", [(-5, 5)], lambda x: (1 / (3 * np.cbrt(x) ** 2),)),
    Case("exp", "wp.exp(x)", [(-3, 3)], lambda x: (np.exp(x),)),
    Case("log", "wp.log(x)", [(0.1, 5)], lambda x: (1 / x,)),
    Case("log2", "wp.log2(x)", [(0.1, 5)], lambda x: (1 / (x * LN2),)),
    Case("log10", "wp.log10(x)", [(0.1, 5)], lambda x: (1 / (x * LN10),)),
    Case("sin", "wp.sin(x)", [(-4, 4)], lambda x: (np.cos(x),)),
    Case("cos", "wp.cos(x)", [(-4, 4)], lambda x: (-np.sin(x),)),
    Case("tan", "wp.tan(x)", [(-1.2, 1.2)], lambda x: (1 / np.cos(x) ** 2,)),
    Case("asin", "wp.asin(x)", [(-0.9, 0.9)], lambda x: (1 / np.sqrt(1 - x * x),)),
    Case("acos", "wp.acos(x)", [(-0.9, 0.9)], lambda x: (-1 / np.sqrt(1 - x * x),)),
    Case("atan", "wp.atan(x)", [(-4, 4)], lambda x: (1 / (1 + x * x),)),
    Case("sinh", "wp.sinh(x)", [(-3, 3)], lambda x: (np.cosh(x),)),
    Case("cosh", "wp.cosh(x)", [(-3, 3)], lambda x: (np.sinh(x),)),
    Case("tanh", "wp.tanh(x)", [(-3, 3)], lambda x: (1 / np.cosh(x) ** 2,)),
    Case("degrees", "wp.degrees(x)", [(-3, 3)], lambda x: (180 / np.pi,)),
    Case("radians", "wp.radians(x)", [(-200, 200)], lambda x: (np.pi / 180,)),
    Case("frac", "wp.frac(x)", [(-5, 5)], lambda x: (1.0,), warp_wrong=(0,)),
]
BY_NAME = {c.name: c for c in CASES}
ARGS = ("x", "y", "z")


def kernel_text(cases, dtype="wp.float64") -> str:
    lines = ["import WP as wp", ""]
    for c in cases:
        n = len(c.domains)
        params = ", ".join(f"{a}s: wp.array(dtype={dtype})" for a in ARGS[:n])
        lines += ["@wp.kernel", f"def k_{c.name}({params}, out: wp.array(dtype={dtype})):"]
        lines += ["    i = wp.tid()"]
        lines += [f"    {a} = {a}s[i]" for a in ARGS[:n]]
        lines += [f"    out[i] = {c.expr}", ""]
    return "\n".join(lines)


MODS = load_both(kernel_text(CASES))


def inputs_for(case, rng, n=N):
    xs = [rng.uniform(lo, hi, n) for lo, hi in case.domains]
    if case.name == "frac":  # keep away from the jumps at integers
        xs[0] = np.floor(xs[0]) + rng.uniform(0.05, 0.95, n)
    if case.name == "mod":  # and away from the jumps at multiples of y
        x, y = xs
        xs[0] = (np.trunc(x / y) + np.sign(x) * rng.uniform(0.05, 0.95, n)) * y
    return xs


def tape_grads(mod, name, xs, adj_out, device="cpu", dtype=None):
    """Gradients of every input for ``out.grad = adj_out`` through the library's Tape."""
    wp = mod.wp
    dtype = dtype or wp.float64
    ins = [wp.array(x, dtype=dtype, device=device, requires_grad=True) for x in xs]
    out = wp.zeros(len(adj_out), dtype=dtype, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(getattr(mod, f"k_{name}"), dim=len(adj_out), inputs=[*ins, out], device=device)
    tape.backward(grads={out: wp.array(adj_out, dtype=dtype, device=device)})
    return [a.grad.numpy().astype(np.float64) for a in ins], out.numpy().astype(np.float64)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradient_matches_derivative(case, device, rng):
    xs = inputs_for(case, rng)
    adj_out = rng.uniform(-2, 2, N)
    grads, _ = tape_grads(MODS[0], case.name, xs, adj_out, device)
    for k, (got, want) in enumerate(zip(grads, case.grad(*xs))):
        np.testing.assert_allclose(got, adj_out * want, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{case.name} arg {k}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradcheck(case, device, rng):
    wp = MODS[0].wp
    autograd = importlib.import_module("tilewarp.autograd")
    xs = [wp.array(x, dtype=wp.float64, device=device, requires_grad=True) for x in inputs_for(case, rng, 16)]
    out = wp.zeros(16, dtype=wp.float64, device=device, requires_grad=True)
    assert autograd.gradcheck(getattr(MODS[0], f"k_{case.name}"), dim=16, inputs=xs, outputs=[out], eps=1e-6,
                              atol=1e-6, rtol=1e-5, raise_exception=False, device=device, show_summary=False)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_against_warp(case, rng):
    if MODS[1] is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    xs = inputs_for(case, rng)
    adj_out = rng.uniform(-2, 2, N)
    got, out = tape_grads(MODS[0], case.name, xs, adj_out)
    want, warp_out = tape_grads(MODS[1], case.name, xs, adj_out)
    np.testing.assert_allclose(out, warp_out, rtol=1e-12, atol=1e-12)
    for k, (g, w) in enumerate(zip(got, want)):
        if k not in case.warp_wrong:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"{case.name} arg {k}")


INF, NAN = math.inf, math.nan
# (kernel, inputs per argument, expected gradient per argument for adj_out = 1): subgradient
# choices at kinks follow Warp; singular points give the one-sided limit.
CORNERS = [
    ("abs", [[0.0, -0.0]], [[1.0, 1.0]]),  # Warp: +1 at 0
    ("min", [[1.5], [1.5]], [[0.0], [1.0]]),  # ties go to the second argument (Warp)
    ("max", [[1.5], [1.5]], [[0.0], [1.0]]),
    ("min", [[NAN, 1.0], [1.0, NAN]], [[0.0, 1.0], [1.0, 0.0]]),  # the number the forward returned
    ("max", [[NAN, 1.0], [1.0, NAN]], [[0.0, 1.0], [1.0, 0.0]]),
    # clamp(x, lo, hi) = min(max(lo, x), hi): x == lo feeds x, x == hi feeds hi (Warp)
    ("clamp", [[-1.0, 1.0, 3.0, -3.0], [-1.0, -1.0, -1.0, -1.0], [1.0, 1.0, 1.0, 1.0]],
     [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0]]),
    ("sqrt", [[0.0]], [[INF]]),
    ("cbrt", [[0.0]], [[INF]]),
    ("log", [[0.0]], [[INF]]),
    ("asin", [[1.0, -1.0]], [[INF, INF]]),  # Warp gives 0 at |x| = 1
    ("acos", [[1.0, -1.0]], [[-INF, -INF]]),
    # d/dx of x^0 is 0 even at x = 0; d/dy of 0^y is 0; d/dy of (-2)^y does not exist
    ("pow", [[0.0, 0.0, 0.0, -2.0, 2.0], [2.0, 0.0, 1.0, 3.0, 0.0]],
     [[0.0, 0.0, 1.0, 12.0, 0.0], [0.0, 0.0, 0.0, NAN, math.log(2.0)]]),
    ("atan2", [[0.0, 3e-200, 3e200], [0.0, 4e-200, 4e200]],  # (y, x); (0, 0) has no direction
     [[0.0, 0.16e200, 0.16e-200], [0.0, -0.12e200, -0.12e-200]]),
    ("tanh", [[30.0, -30.0]], [[4.0 / (math.exp(30) + math.exp(-30)) ** 2] * 2]),  # 1 - tanh^2 would be 0
    # outside [e0, e1] smoothstep is flat; coincident edges have no gradient
    ("smoothstep", [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0], [-0.5, 1.5, 1.0]], [[0.0] * 3] * 3),
    ("mod", [[7.0, -7.0, 7.0], [2.0, 2.0, -2.0]], [[1.0] * 3, [-3.0, 3.0, 3.0]]),
    ("frac", [[2.5, -2.5]], [[1.0, 1.0]]),
    ("div", [[1e-300], [1e-200]], [[1e200], [-1e100]]),  # -x / y^2 would be -inf (y^2 underflows)
]


@pytest.mark.parametrize("name,xs,want", CORNERS, ids=[c[0] for c in CORNERS])
def test_corner_cases(name, xs, want, device):
    xs = [np.array(x, dtype=np.float64) for x in xs]
    with np.errstate(all="ignore"):
        grads, _ = tape_grads(MODS[0], name, xs, np.ones(len(xs[0])), device)
    for k, (got, w) in enumerate(zip(grads, want)):
        np.testing.assert_allclose(got, np.array(w, dtype=np.float64), rtol=1e-12, atol=0, equal_nan=True,
                                   err_msg=f"{name} arg {k}")


LOW = ["mul", "div", "mod", "pow", "atan2", "lerp", "smoothstep", "clamp", "sqrt", "exp", "log", "sin",
       "tanh", "asin", "degrees"]
MODS_LOW = {"float32": load_both(kernel_text([BY_NAME[n] for n in LOW], "wp.float32"))[0],
            "float16": load_both(kernel_text([BY_NAME[n] for n in LOW], "wp.float16"))[0]}


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-6), ("float16", 4e-3)])
@pytest.mark.parametrize("name", LOW)
def test_low_precision_against_float64(name, dtype, tol, device, rng):
    """float32 / float16 gradients equal the float64 ones at the same (representable) points, to a
    few units of their precision (half computes its partials in float and rounds once)."""
    case = BY_NAME[name]
    np_t = np.dtype(dtype)
    xs = [x.astype(np_t).astype(np.float64) for x in inputs_for(case, rng)]
    adj_out = rng.uniform(-2, 2, N).astype(np_t).astype(np.float64)
    want, _ = tape_grads(MODS[0], name, xs, adj_out, device)
    mod = MODS_LOW[dtype]
    got, _ = tape_grads(mod, name, xs, adj_out, device, getattr(mod.wp, dtype))
    for k, (g, w) in enumerate(zip(got, want)):
        scale = np.maximum(np.abs(w), 1.0)  # absolute near zero: the rounding of the inputs
        err = np.max(np.abs(g - w) / scale)
        assert err <= 8 * tol, f"{name} {dtype} arg {k}: relative error {err}"
