"""tile_matmul on shapes that do not divide into the CPU GEMM's register blocks (6 rows, two vectors
of columns), transposed operand views, an output that is also an operand, and the gradients of all
three inputs, against float64 NumPy. On the CPU these take native/tile/gemm_host.h's packed and
in-place operand paths and its partial strips and panels; on CUDA the portable or tensor-core paths.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module

# (M, N, K, operand dtype, sum dtype, A transposed, B transposed)
CASES = [
    (7, 5, 3, "float32", "float32", False, False),
    (13, 17, 9, "float64", "float64", True, False),
    (6, 40, 33, "float32", "float32", False, True),
    (1, 1, 1, "float64", "float64", False, False),
    (20, 9, 16, "float16", "float32", True, True),
    (64, 24, 8, "float32", "float32", True, True),
]
ALPHA, BETA = 0.75, -0.5
KERNEL = '''
@wp.kernel
def mm_{i}(a: wp.array2d(dtype=wp.{ab}), b: wp.array2d(dtype=wp.{ab}), c: wp.array2d(dtype=wp.{acc}),
           out: wp.array2d(dtype=wp.{acc})):
    x = wp.tile_load(a, shape=({ar}, {ac}))
    y = wp.tile_load(b, shape=({br}, {bc}))
    z = wp.tile_load(c, shape=({m}, {n}))
    wp.tile_matmul({xa}, {yb}, z, alpha={alpha}, beta={beta})
    wp.tile_store(out, z)
'''
ALIASED = '''
@wp.kernel
def square_in_place(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    x = wp.tile_load(a, shape=(14, 19))
    y = wp.tile_load(b, shape=(19, 19))
    wp.tile_matmul(x, y, x)
    wp.tile_store(out, x)
'''


def _text():
    parts = ["import WP as wp\n"]
    for i, (m, n, k, ab, acc, ta, tb) in enumerate(CASES):
        ar, ac = (k, m) if ta else (m, k)
        br, bc = (n, k) if tb else (k, n)
        parts.append(KERNEL.format(i=i, ab=ab, acc=acc, ar=ar, ac=ac, br=br, bc=bc, m=m, n=n,
                                   xa="wp.tile_transpose(x)" if ta else "x", yb="wp.tile_transpose(y)" if tb else "y",
                                   alpha=ALPHA, beta=BETA))
    parts.append(ALIASED)
    return "".join(parts)


@pytest.fixture(scope="module")
def mod():
    return load_module(_text(), "tilewarp")


@pytest.mark.parametrize("case", range(len(CASES)))
def test_product_and_gradients(mod, device, rng, case):
    m, n, k, ab, acc, ta, tb = CASES[case]
    np_ab, np_acc = np.dtype(ab), np.dtype(acc)
    a = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(np_ab)
    b = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(np_ab)
    c = rng.uniform(-1, 1, (m, n)).astype(np_acc)
    wa, wb, wc = (wp.array(x, device=device, requires_grad=True) for x in (a, b, c))
    out = wp.zeros((m, n), dtype=getattr(wp, acc), device=device, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(getattr(mod, f"mm_{case}"), dim=1, inputs=[wa, wb, wc, out], block_dim=64, device=device)
    g = rng.uniform(-1, 1, (m, n))
    tape.backward(grads={out: wp.array(g.astype(np_acc), device=device)})

    A = (a.T if ta else a).astype(np.float64)
    B = (b.T if tb else b).astype(np.float64)
    want = ALPHA * A @ B + BETA * c.astype(np.float64)
    tol = {"float16": 1e-3, "float32": 2e-6, "float64": 1e-13}
    scale = np.abs(A) @ np.abs(B) + 1.0
    assert np.all(np.abs(out.numpy() - want) <= tol[acc] * scale), np.abs(out.numpy() - want).max()
    ga, gb = ALPHA * g @ B.T, ALPHA * A.T @ g  # gradients of A and B as used (untransposed)
    ga, gb = (ga.T if ta else ga), (gb.T if tb else gb)
    gtol = tol[ab] * (n + k + m)
    np.testing.assert_allclose(wa.grad.numpy().astype(np.float64), ga, atol=gtol, rtol=tol[ab] * 10)
    np.testing.assert_allclose(wb.grad.numpy().astype(np.float64), gb, atol=gtol, rtol=tol[ab] * 10)
    np.testing.assert_allclose(wc.grad.numpy().astype(np.float64), BETA * g, atol=tol[acc], rtol=tol[acc])


def test_output_that_is_also_an_operand(mod, device, rng):
    """tile_matmul(x, y, x): every product reads x as it was before the call (x @ y + x)."""
    a = rng.uniform(-1, 1, (14, 19)).astype(np.float32)
    b = rng.uniform(-1, 1, (19, 19)).astype(np.float32)
    out = wp.zeros((14, 19), dtype=float, device=device)
    wp.launch_tiled(mod.square_in_place, dim=1, inputs=[wp.array(a, device=device), wp.array(b, device=device), out],
                    block_dim=64, device=device)
    want = a.astype(np.float64) @ b + a
    np.testing.assert_allclose(out.numpy(), want, atol=2e-5 * (np.abs(a) @ np.abs(b) + 1).max())
