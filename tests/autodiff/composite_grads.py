"""Shared machinery of the vector and matrix gradient tests (test_grad_vector.py, test_grad_matrix.py).

A case is one expression over the per-thread inputs ``a, b, c, d`` of composite or scalar types,
named by base (``"vec3"``, ``"mat23"``, ``"quat"``, ``"float"``...). ``kernel_text`` turns a table
into one kernel per case and precision, loaded through both tilewarp and warp-lang, so each case
can be checked by finite differences (``wp.autograd.gradcheck``), against Warp's gradients and in
float32 against float64. ``{vec3}``-style fields in an expression name the case's precision's type.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

SHAPES = {"float": (), "vec2": (2,), "vec3": (3,), "vec4": (4,), "spatial_vector": (6,), "quat": (4,),
          "transform": (7,), "mat22": (2, 2), "mat33": (3, 3), "mat44": (4, 4), "mat23": (2, 3),
          "mat32": (3, 2), "spatial_matrix": (6, 6)}
ARGS = ("a", "b", "c", "d")
#: shapes without a Warp alias, declared at the top of the kernel text
CUSTOM = {"mat23": (2, 3), "mat32": (3, 2)}


def type_name(base: str, bits: int) -> str:
    """The kernel-text spelling of ``base`` in float``bits``."""
    if base == "float":
        return f"wp.float{bits}"
    if base in CUSTOM:
        return f"{base}{'d' if bits == 64 else 'f'}"
    return f"wp.{base}{'d' if bits == 64 else ''}"


def dtype_of(mod, base: str, bits: int):
    name = type_name(base, bits)
    return getattr(mod, name) if base in CUSTOM else getattr(mod.wp, name[3:])


def uniform(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def away(lo, hi):
    """Magnitudes in [lo, hi) with random signs: inputs kept off a kink or pole at 0."""
    return lambda rng, shape: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def invertible(rng, shape):
    """Random square matrices with a dominant diagonal (condition number of a few)."""
    n = shape[-1]
    return rng.uniform(-1, 1, shape) + 3.0 * np.eye(n) * rng.choice([-1.0, 1.0], shape[:-2] + (1, 1))


@dataclass
class Case:
    name: str
    expr: str  # the result, in a, b, c, d
    args: list  # base type per argument
    result: str  # base type of the result
    domains: list = field(default_factory=list)  # sampler per argument (default uniform(-1, 1))
    pre: tuple = ()  # statements before the result (e.g. component assignment)
    warp: bool = True  # compare with warp-lang (False where Warp lacks the overload)
    warp_wrong: tuple = ()  # argument indices where Warp's gradient is wrong
    warp_bits: int = 64  # precision of the Warp comparison (Warp's norm_* funcs are float32 only)

    def sampler(self, k) -> Callable:
        return self.domains[k] if k < len(self.domains) and self.domains[k] else uniform(-1, 1)


def kernel_text(cases, bits_list=(64, 32), for_warp=False) -> str:
    """Kernels ``k_<case>_<bits>``; ``for_warp`` keeps only what Warp compiles (one failing kernel
    fails Warp's whole module)."""
    lines = ["import WP as wp", ""]
    for base, shape in CUSTOM.items():
        for bits in bits_list:
            lines.append(f"{type_name(base, bits)} = wp.types.matrix(shape={shape}, dtype=wp.float{bits})")
    for bits in bits_list:
        names = {base: type_name(base, bits) for base in SHAPES}
        for c in cases:
            if for_warp and (not c.warp or bits != c.warp_bits):
                continue
            params = ", ".join(f"{a}_in: wp.array(dtype={names[t]})" for a, t in zip(ARGS, c.args))
            out = f"out: wp.array(dtype={names[c.result]})"
            lines += ["", "@wp.kernel", f"def k_{c.name}_{bits}({params}, {out}):"]
            lines += ["    i = wp.tid()"] + [f"    {a} = {a}_in[i]" for a in ARGS[: len(c.args)]]
            lines += [f"    {s.format(**names)}" for s in c.pre]
            lines += [f"    out[i] = {c.expr.format(**names)}"]
    return "\n".join(lines) + "\n"


def inputs_for(case, rng, n):
    return [case.sampler(k)(rng, (n, *SHAPES[t])) for k, t in enumerate(case.args)]


def tape_grads(mod, case, xs, adj_out, bits=64, device="cpu"):
    """(input gradients, output) for ``out.grad = adj_out`` through ``mod``'s Tape, as float64."""
    wp = mod.wp
    ins = [wp.array(x, dtype=dtype_of(mod, t, bits), device=device, requires_grad=True)
           for x, t in zip(xs, case.args)]
    rtype = dtype_of(mod, case.result, bits)
    out = wp.zeros(len(adj_out), dtype=rtype, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(getattr(mod, f"k_{case.name}_{bits}"), dim=len(adj_out), inputs=[*ins, out], device=device)
    tape.backward(grads={out: wp.array(adj_out, dtype=rtype, device=device)})
    return [a.grad.numpy().astype(np.float64) for a in ins], out.numpy().astype(np.float64)


def gradcheck(mod, case, rng, n=8) -> bool:
    wp = mod.wp
    autograd = importlib.import_module("tilewarp.autograd")
    xs = [wp.array(x, dtype=dtype_of(mod, t, 64), device="cpu", requires_grad=True)
          for x, t in zip(inputs_for(case, rng, n), case.args)]
    out = wp.zeros(n, dtype=dtype_of(mod, case.result, 64), device="cpu", requires_grad=True)
    return autograd.gradcheck(getattr(mod, f"k_{case.name}_64"), dim=n, inputs=xs, outputs=[out], eps=1e-6,
                              atol=1e-6, rtol=1e-5, raise_exception=False, device="cpu", show_summary=False)


def check_against_warp(mods, case, rng, device, n=24):
    """tilewarp on ``device`` against Warp on the CPU; without warp-lang (GPU machines), against
    tilewarp's own CPU run."""
    ref = mods[1] if mods[1] is not None else mods[0]
    bits = case.warp_bits
    cast = np.float64 if bits == 64 else np.float32
    xs = [x.astype(cast) for x in inputs_for(case, rng, n)]
    adj_out = rng.uniform(-2, 2, (n, *SHAPES[case.result])).astype(cast)
    got, out = tape_grads(mods[0], case, xs, adj_out, bits, device)
    want, warp_out = tape_grads(ref, case, xs, adj_out, bits)
    rtol, atol = (1e-9, 1e-11) if bits == 64 else (2e-5, 1e-6)
    np.testing.assert_allclose(out, warp_out, rtol=rtol, atol=atol, err_msg=f"{case.name} forward")
    for k, (g, w) in enumerate(zip(got, want)):
        if ref is mods[0] or k not in case.warp_wrong:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{case.name} arg {k}")


def check_float32(mod, case, rng, n=24):
    """float32 gradients agree with float64 ones to float32 accuracy (relative to their scale)."""
    xs = inputs_for(case, rng, n)
    adj_out = rng.uniform(-2, 2, (n, *SHAPES[case.result]))
    g64, _ = tape_grads(mod, case, xs, adj_out, 64)
    g32, _ = tape_grads(mod, case, [x.astype(np.float32) for x in xs], adj_out.astype(np.float32), 32)
    for k, (a, b) in enumerate(zip(g32, g64)):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4 * max(1.0, np.abs(b).max()),
                                   err_msg=f"{case.name} arg {k}")
