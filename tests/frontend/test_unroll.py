"""Loops with constant bounds and at most ``wp.config.max_unroll`` iterations (Warp's setting, 16)
are unrolled whole in the generated code (``TW_UNROLL_ALL``), as Warp unrolls them: the results are
the same as the rolled loops', against NumPy, with negative steps, break / continue and nesting."""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module

TEXT = '''
import WP as wp


@wp.kernel
def loops(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for di in range(-2, 3):                   # 5: unrolled
        for dj in range(10, 0, -3):           # 4 (10, 7, 4, 1): unrolled
            if di == dj:
                continue
            s += x[i] * float(di * dj) + float(dj)
    for k in range(16):                       # 16: unrolled
        if k > 11:
            break
        s = s * 0.5 + float(k)
    for m in range(17):                       # 17: a loop
        s += 0.25 * float(m)
    out[i] = s
'''


def reference(x):
    s = np.zeros_like(x, dtype=np.float64)
    for di in range(-2, 3):
        for dj in range(10, 0, -3):
            if di != dj:
                s += x * (di * dj) + dj
    for k in range(12):
        s = s * 0.5 + k
    return s + 0.25 * sum(range(17))


@pytest.mark.parametrize("max_unroll", [16, 0])
def test_constant_loops(device, rng, monkeypatch, max_unroll):
    monkeypatch.setattr(wp.config, "max_unroll", max_unroll)
    mod = load_module(TEXT.replace("def loops", f"def loops_{max_unroll}"), "tilewarp")
    kernel = getattr(mod, f"loops_{max_unroll}")
    x = rng.uniform(-1, 1, 64).astype(np.float32)
    out = wp.zeros(64, dtype=float, device=device)
    wp.launch(kernel, dim=64, inputs=[wp.array(x, device=device)], outputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), reference(x.astype(np.float64)), rtol=1e-5, atol=1e-4)
    source = kernel.compiled(wp.get_device(device)).source
    assert source.count("TW_UNROLL_ALL") == (3 if max_unroll == 16 else 0)
