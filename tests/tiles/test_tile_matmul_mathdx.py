"""tile_matmul through cuBLASDx (``enable_mathdx_gemm``, native/tile/dx.h) against the float64 NumPy
reference and against tilewarp's own paths (the oracle on a GPU). CI compiles each module for sm_90
through NVRTC with MathDx's headers (10-20 s a module: two modules here)."""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module

DX = '''
import WP as wp


@wp.kernel(module="unique", module_options={{"enable_mathdx_gemm": {dx}}})
def gemm(a: wp.array2d(dtype=wp.{ab}), b: wp.array2d(dtype=wp.{ab}), c: wp.array2d(dtype=wp.{acc}),
         alpha: float, beta: float):
    i, j = wp.tid()
    total = wp.tile_load(c, shape=(32, 64), offset=(i * 32, j * 64))
    for k in range(a.shape[1] // 16):
        x = wp.tile_load(a, shape=(32, 16), offset=(i * 32, k * 16))
        y = wp.tile_load(b, shape=(16, 64), offset=(k * 16, j * 64))
        wp.tile_matmul(x, y, total, alpha=alpha, beta=beta)
    wp.tile_store(c, total, offset=(i * 32, j * 64))
'''


@pytest.mark.parametrize("ab,acc,tol", [("float16", "float32", 2e-3), ("float64", "float64", 1e-12)])
def test_mathdx_gemm(device, rng, ab, acc, tol):
    """C = alpha A_k B_k + beta C over the K steps, with beta = 0 first (C holds NaN) then beta != 0;
    cuBLASDx on CUDA, the portable loop on the CPU; on CUDA also the same as tilewarp's own paths."""
    mods = {dx: load_module(DX.format(dx=dx, ab=ab, acc=acc), "tilewarp") for dx in (True, False)}
    kt, m, n = 3, 64, 128
    a = rng.uniform(-1, 1, (m, 16 * kt)).astype(ab)
    b = rng.uniform(-1, 1, (16 * kt, n)).astype(ab)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    got = {}
    for dx, mod in mods.items():
        c = wp.array(np.full((m, n), np.nan, dtype=acc), device=device)
        args = [wp.array(a, device=device), wp.array(b, device=device), c]
        wp.launch_tiled(mod.gemm, dim=(2, 2), inputs=[*args, 0.5, 0.0], block_dim=128, device=device)
        first = 0.5 * a64[:, 16 * (kt - 1):] @ b64[16 * (kt - 1):]  # beta 0: each step overwrites
        np.testing.assert_allclose(c.numpy(), first, atol=tol * 16 * kt)
        wp.launch_tiled(mod.gemm, dim=(2, 2), inputs=[*args, 2.0, -1.0], block_dim=128, device=device)
        want = first.copy()
        for k in range(kt):
            want = 2.0 * a64[:, 16 * k:16 * k + 16] @ b64[16 * k:16 * k + 16] - want
        np.testing.assert_allclose(c.numpy(), want, atol=tol * 64 * kt)
        got[dx] = c.numpy()
    np.testing.assert_allclose(got[True], got[False], atol=tol * 64 * kt)
