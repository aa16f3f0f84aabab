"""Gradient checks shared by the quaternion, transform and spatial tests (test_grad_quat.py, ...).

A ``Case`` is one builtin (or operator) in one kernel: ``a0, a1, ...`` are input arrays of the
given kinds, ``x0, x1, ...`` their elements at ``i``, and ``body`` writes ``out0[i], out1[i], ...``.
``kernels_text`` turns a list of cases into one kernel source with placeholder types, loaded per
precision through ``conftest.load_module`` (tilewarp and warp-lang from the same text). Each case
is then checked three ways: ``wp.autograd.gradcheck`` (central differences of the forward kernel)
in float64, warp-lang's gradients for the same random output adjoints (unless Warp is known to
be wrong there), and float32 (or float16) gradients against float64 ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import tilewarp as tw
from conftest import load_module, warp

N = 12


def _unit_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def rotation_matrices(q):
    """Rotation matrices of unit quaternions (x, y, z, w): columns are the rotated basis vectors."""
    x, y, z, w = np.asarray(q).T
    rows = [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
            2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
            2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]
    return np.stack(rows, axis=1).reshape(len(x), 3, 3)


def _rotations(rng, n):
    return rotation_matrices(_unit_quats(rng, n))


#: kind -> (type placeholder, numpy generator(rng, n))
KINDS = {
    "s": ("_F_", lambda rng, n: rng.uniform(-1.5, 1.5, n)),
    "pos": ("_F_", lambda rng, n: rng.uniform(0.5, 2.0, n)),
    "t01": ("_F_", lambda rng, n: rng.uniform(-0.2, 1.2, n)),
    "angle": ("_F_", lambda rng, n: rng.uniform(-4.0, 4.0, n)),
    "v3": ("_V3_", lambda rng, n: rng.normal(size=(n, 3))),
    "v6": ("_SV_", lambda rng, n: rng.normal(size=(n, 6))),
    "q": ("_Q_", _unit_quats),
    # non-unit quaternions: every formula is differentiated as written, not only on the sphere
    "qn": ("_Q_", lambda rng, n: _unit_quats(rng, n) * rng.uniform(0.5, 2.0, (n, 1))),
    "m33": ("_M33_", lambda rng, n: rng.normal(size=(n, 3, 3))),
    "rot": ("_M33_", _rotations),
    "m44": ("_M44_", lambda rng, n: rng.normal(size=(n, 4, 4))),
    "m66": ("_SM_", lambda rng, n: rng.normal(size=(n, 6, 6))),
    "t": ("_T_", lambda rng, n: np.concatenate([rng.normal(size=(n, 3)), _unit_quats(rng, n)], axis=1)),
    "tn": ("_T_", lambda rng, n: np.concatenate([rng.normal(size=(n, 3)), KINDS["qn"][1](rng, n)], axis=1)),
}

TOKENS = {"f32": {"_F_": "wp.float32", "_V3_": "wp.vec3", "_Q_": "wp.quat", "_T_": "wp.transform",
                  "_M33_": "wp.mat33", "_M44_": "wp.mat44", "_SV_": "wp.spatial_vector",
                  "_SM_": "wp.spatial_matrix"},
          "f64": {"_F_": "wp.float64", "_V3_": "wp.vec3d", "_Q_": "wp.quatd", "_T_": "wp.transformd",
                  "_M33_": "wp.mat33d", "_M44_": "wp.mat44d", "_SV_": "wp.spatial_vectord",
                  "_SM_": "wp.spatial_matrixd"},
          "f16": {"_F_": "wp.float16", "_V3_": "wp.vec3h", "_Q_": "wp.quath", "_T_": "wp.transformh",
                  "_M33_": "wp.mat33h", "_M44_": "wp.mat44h", "_SV_": "wp.spatial_vectorh",
                  "_SM_": "wp.spatial_matrixh"}}
NUMPY = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


@dataclass
class Case:
    name: str
    inputs: str  # kinds, space separated
    outputs: str  # kinds of the outputs (their types), space separated
    body: str  # lines using x0, x1, ... and writing out0[i], ...
    warp_wrong: str = ""  # why warp-lang's gradient is not the reference here (empty: compare)
    warp_f32_only: bool = False  # Warp 1.19 has it in float32 only: compare with Warp in float32
    gens: dict = field(default_factory=dict)  # input index -> generator(rng, n) replacing its kind's

    @property
    def kinds(self):
        return self.inputs.split()


def kernels_text(cases) -> str:
    out = ["import WP as wp", ""]
    for c in cases:
        params = [f"a{k}: wp.array(dtype={KINDS[kind][0]})" for k, kind in enumerate(c.kinds)]
        params += [f"out{k}: wp.array(dtype={KINDS[kind][0]})" for k, kind in enumerate(c.outputs.split())]
        out += ["@wp.kernel", f"def k_{c.name}({', '.join(params)}):", "    i = wp.tid()"]
        out += [f"    x{k} = a{k}[i]" for k in range(len(c.kinds))]
        out += [f"    {line.strip()}" for line in c.body.strip().splitlines()]
        out += ["", ""]
    return "\n".join(out)


class Modules:
    """The cases' kernels for tilewarp and warp-lang, per precision (loaded on first use); Warp's
    float64 module leaves out the cases Warp has only in float32."""

    def __init__(self, cases):
        self.cases = cases
        self._mods = {}

    def __call__(self, prec):
        if prec not in self._mods:
            warp_cases = [c for c in self.cases if prec == "f32" or not c.warp_f32_only]
            ours = load_module(self._text(self.cases, prec), "tilewarp")
            # float16: compared with float64 only (Warp has few half-precision quaternion builtins)
            skip_warp = warp is None or prec == "f16"
            theirs = None if skip_warp else load_module(self._text(warp_cases, prec), "warp")
            self._mods[prec] = (ours, theirs)
        return self._mods[prec]

    @staticmethod
    def _text(cases, prec):
        text = kernels_text(cases)
        for token, name in TOKENS[prec].items():
            text = text.replace(token, name)
        return text


def input_data(case, rng, n=N):
    return [case.gens.get(k, KINDS[kind][1])(rng, n) for k, kind in enumerate(case.kinds)]


def _dtype(wp, prec, kind):
    return getattr(wp, TOKENS[prec][KINDS[kind][0]].split(".")[1])


def _arrays(wp, case, data, prec, device):
    ins = [wp.array(np.asarray(d, dtype=NUMPY[prec]), dtype=_dtype(wp, prec, k), requires_grad=True,
                    device=device) for d, k in zip(data, case.kinds)]
    outs = [wp.zeros(len(data[0]), dtype=_dtype(wp, prec, k), requires_grad=True, device=device)
            for k in case.outputs.split()]
    return ins, outs


def gradcheck(mods, case, data, device="cpu", eps=1e-6, atol=1e-6, rtol=1e-5) -> bool:
    """tilewarp's float64 backward kernel against central differences of its forward kernel."""
    mod = mods("f64")[0]
    ins, outs = _arrays(tw, case, data, "f64", device)
    return tw.autograd.gradcheck(getattr(mod, f"k_{case.name}"), dim=len(data[0]), inputs=ins, outputs=outs,
                                 eps=eps, atol=atol, rtol=rtol, raise_exception=False, device=device,
                                 show_summary=False)


def tape_grads(mod, case, data, seeds, prec, device="cpu") -> list:
    """Input gradients from one Tape backward with the output adjoints ``seeds`` (either library)."""
    wp = mod.wp
    ins, outs = _arrays(wp, case, data, prec, device)
    with wp.Tape() as tape:
        wp.launch(getattr(mod, f"k_{case.name}"), dim=len(data[0]), inputs=ins, outputs=outs, device=device)
    tape.backward(grads={o: wp.array(np.asarray(g, dtype=NUMPY[prec]), dtype=o.dtype, device=device)
                         for o, g in zip(outs, seeds)})
    return [a.grad.numpy().astype(np.float64) for a in ins]


def output_seeds(case, rng, n=N) -> list:
    """Random adjoints for the outputs (their numpy shapes come from float64 tilewarp arrays)."""
    shapes = [tw.zeros(n, dtype=_dtype(tw, "f64", k)).numpy().shape for k in case.outputs.split()]
    return [rng.normal(size=shape) for shape in shapes]


# ---- the three checks, shared by the test files ---------------------------------------------------


def check_gradcheck(mods, case, rng, device="cpu"):
    assert gradcheck(mods, case, input_data(case, rng), device), f"{case.name}: gradcheck failed"


def check_against_warp(mods, case, rng):
    """Same inputs and output adjoints through warp-lang's and tilewarp's backward kernels (float64,
    or float32 where Warp has only that)."""
    if case.warp_wrong:
        pytest.skip(f"warp-lang is not the reference: {case.warp_wrong}")
    prec, tol = ("f32", 1e-5) if case.warp_f32_only else ("f64", 1e-9)
    tw_mod, warp_mod = mods(prec)
    if warp_mod is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    data, seeds = input_data(case, rng), output_seeds(case, rng)
    got, want = tape_grads(tw_mod, case, data, seeds, prec), tape_grads(warp_mod, case, data, seeds, prec)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{case.name}: gradient of a{k}")


def check_float32(mods, case, rng, prec="f32", tol=2e-4):
    """float32 (or float16) gradients are the float64 ones, rounded: a loose tolerance of a few
    ulps per operation. The inputs are rounded to the lower precision first."""
    data, seeds = input_data(case, rng), output_seeds(case, rng)
    data = [np.asarray(d, dtype=NUMPY[prec]).astype(np.float64) for d in data]
    seeds = [np.asarray(g, dtype=NUMPY[prec]).astype(np.float64) for g in seeds]
    low = tape_grads(mods(prec)[0], case, data, seeds, prec)
    g64 = tape_grads(mods("f64")[0], case, data, seeds, "f64")
    for k, (a, b) in enumerate(zip(low, g64)):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"{case.name}: {prec} gradient, a{k}")
