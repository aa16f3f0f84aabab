"""Tile Cholesky, triangular and Cholesky solves: values against NumPy (float64 references),
gradients against central differences, and bad input.

Each block factors / solves its own matrix (``a[i]``), so a launch of several blocks checks that the
blocks keep apart; block sizes from one lane to more lanes than rows check the lanes' share of each
step. Only the triangle a mode names is read: the other triangle holds garbage in every test.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module

TEXT = '''
import WP as wp

N = wp.constant(NN)
R = wp.constant(3)


@wp.kernel
def factor(a: wp.array3d(dtype=DT), lo: wp.array3d(dtype=DT), up: wp.array3d(dtype=DT), inl: wp.array3d(dtype=DT),
           inu: wp.array3d(dtype=DT)):
    i = wp.tid()
    m = wp.tile_load(a[i], shape=(N, N))
    wp.tile_store(lo[i], wp.tile_cholesky(m))
    wp.tile_store(up[i], wp.tile_cholesky(m, fill_mode="upper"))
    x = wp.tile_load(a[i], shape=(N, N), storage="shared")
    wp.tile_cholesky_inplace(x)
    wp.tile_store(inl[i], x)
    y = wp.tile_load(a[i], shape=(N, N))
    wp.tile_cholesky_inplace(y, "upper")
    wp.tile_store(inu[i], y)


@wp.kernel
def solves(f: wp.array3d(dtype=DT), b: wp.array2d(dtype=DT), bm: wp.array3d(dtype=DT), out: wp.array3d(dtype=DT),
           outm: wp.array4d(dtype=DT)):
    i = wp.tid()
    m = wp.tile_load(f[i], shape=(N, N))
    y = wp.tile_load(b[i], shape=N)
    ym = wp.tile_load(bm[i], shape=(N, R))
    wp.tile_store(out[i, 0], wp.tile_lower_solve(m, y))
    wp.tile_store(out[i, 1], wp.tile_upper_solve(m, y))
    wp.tile_store(out[i, 2], wp.tile_cholesky_solve(m, y))
    wp.tile_store(out[i, 3], wp.tile_cholesky_solve(m, y, fill_mode="upper"))
    wp.tile_store(out[i, 4], wp.tile_lower_solve(wp.tile_transpose(m), y))
    wp.tile_store(outm[i, 0], wp.tile_lower_solve(m, ym))
    wp.tile_store(outm[i, 1], wp.tile_upper_solve(m, ym))
    wp.tile_store(outm[i, 2], wp.tile_cholesky_solve(m, ym))
    wp.tile_store(outm[i, 3], wp.tile_cholesky_solve(m, ym, "upper"))
    z = wp.tile_load(b[i], shape=N, storage="shared")
    wp.tile_lower_solve_inplace(m, z)
    wp.tile_upper_solve_inplace(m, z)
    wp.tile_store(out[i, 5], z)
    zm = wp.tile_load(bm[i], shape=(N, R))
    wp.tile_cholesky_solve_inplace(m, zm, fill_mode="upper")
    wp.tile_store(outm[i, 4], zm)


@wp.kernel
def g_cholesky(a: wp.array3d(dtype=DT), lo: wp.array3d(dtype=DT), up: wp.array3d(dtype=DT)):
    i = wp.tid()
    m = wp.tile_load(a[i], shape=(N, N))
    wp.tile_store(lo[i], wp.tile_cholesky(m))
    u = wp.tile_cholesky(m, fill_mode="upper")
    wp.tile_store(up[i], u * u)


@wp.kernel
def g_solves(f: wp.array3d(dtype=DT), b: wp.array2d(dtype=DT), bm: wp.array3d(dtype=DT), out: wp.array3d(dtype=DT),
             outm: wp.array4d(dtype=DT)):
    i = wp.tid()
    m = wp.tile_load(f[i], shape=(N, N))
    y = wp.tile_load(b[i], shape=N)
    ym = wp.tile_load(bm[i], shape=(N, R))
    wp.tile_store(out[i, 0], wp.tile_lower_solve(m, y))
    wp.tile_store(out[i, 1], wp.tile_upper_solve(m, y * y))
    wp.tile_store(out[i, 2], wp.tile_lower_solve(wp.tile_transpose(m), y))
    wp.tile_store(outm[i, 0], wp.tile_upper_solve(m, ym))
    wp.tile_store(outm[i, 1], wp.tile_lower_solve(m, ym))


@wp.kernel
def g_cholesky_solve(f: wp.array3d(dtype=DT), b: wp.array2d(dtype=DT), bm: wp.array3d(dtype=DT),
                     out: wp.array3d(dtype=DT), outm: wp.array4d(dtype=DT)):
    i = wp.tid()
    m = wp.tile_load(f[i], shape=(N, N))
    y = wp.tile_load(b[i], shape=N)
    ym = wp.tile_load(bm[i], shape=(N, R))
    wp.tile_store(out[i, 0], wp.tile_cholesky_solve(m, y))
    wp.tile_store(out[i, 1], wp.tile_cholesky_solve(m, y, fill_mode="upper"))
    wp.tile_store(outm[i, 0], wp.tile_cholesky_solve(m, ym, "upper"))
    wp.tile_store(outm[i, 1], wp.tile_cholesky_solve(wp.tile_transpose(m), ym))


@wp.kernel
def g_inplace(a: wp.array3d(dtype=DT), lo: wp.array3d(dtype=DT)):
    i = wp.tid()
    m = wp.tile_load(a[i], shape=(N, N))
    wp.tile_cholesky_inplace(m)
    wp.tile_store(lo[i], m)
'''


def module(n, dtype="wp.float64"):
    return load_module(TEXT.replace("NN", str(n)).replace("DT", dtype), "tilewarp")


def spd(rng, batch, n):
    m = rng.standard_normal((batch, n, n))
    return m @ m.transpose(0, 2, 1) + n * np.eye(n)


def factors(rng, batch, n):
    """One matrix holding two well-conditioned factors: a lower one below and on the diagonal and
    another's strict upper triangle above it (each solve reads only its own triangle)."""
    lo = np.linalg.cholesky(spd(rng, batch, n))
    up = np.linalg.cholesky(spd(rng, batch, n)).transpose(0, 2, 1)
    return lo + np.triu(up, 1), lo


@pytest.mark.parametrize("n, block_dim, dtype", [(5, 32, "wp.float64"), (16, 1, "wp.float64"), (16, 64, "wp.float32"),
                                                  (32, 8, "wp.float64")])
def test_cholesky(device, n, block_dim, dtype):
    rng = np.random.default_rng(n + block_dim)
    mod, batch = module(n, dtype), 3
    a = spd(rng, batch, n)
    garbage = a + np.triu(rng.standard_normal((batch, n, n)) * 9, 1)  # the lower modes never read it
    garbage_up = a + np.tril(rng.standard_normal((batch, n, n)) * 9, -1)
    np_dt = np.float64 if dtype == "wp.float64" else np.float32
    tol = 1e-10 if dtype == "wp.float64" else 2e-4
    wdt = wp.float64 if dtype == "wp.float64" else wp.float32
    ref = np.linalg.cholesky(a)
    for src, check in ((garbage, ("lo", "inl")), (garbage_up, ("up", "inu"))):
        outs = {k: wp.zeros((batch, n, n), dtype=wdt, device=device) for k in ("lo", "up", "inl", "inu")}
        wp.launch_tiled(mod.factor, dim=[batch], inputs=[wp.array(src.astype(np_dt), dtype=wdt, device=device),
                                                          *outs.values()], block_dim=block_dim, device=device)
        for k in check:
            got = outs[k].numpy()
            want = ref if k in ("lo", "inl") else ref.transpose(0, 2, 1)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * n, err_msg=k)


@pytest.mark.parametrize("n, block_dim, dtype", [(5, 32, "wp.float64"), (16, 1, "wp.float64"), (16, 64, "wp.float32"),
                                                  (32, 8, "wp.float64")])
def test_solves(device, n, block_dim, dtype):
    rng = np.random.default_rng(2 * n + block_dim)
    mod, batch = module(n, dtype), 2
    f, lo = factors(rng, batch, n)
    b = rng.standard_normal((batch, n))
    bm = rng.standard_normal((batch, n, 3))
    np_dt = np.float64 if dtype == "wp.float64" else np.float32
    wdt = wp.float64 if dtype == "wp.float64" else wp.float32
    tol = 1e-9 if dtype == "wp.float64" else 1e-3
    out = wp.zeros((batch, 6, n), dtype=wdt, device=device)
    outm = wp.zeros((batch, 5, n, 3), dtype=wdt, device=device)
    wp.launch_tiled(mod.solves, dim=[batch], block_dim=block_dim, device=device,
                    inputs=[wp.array(f.astype(np_dt), dtype=wdt, device=device),
                            wp.array(b.astype(np_dt), dtype=wdt, device=device),
                            wp.array(bm.astype(np_dt), dtype=wdt, device=device), out, outm])
    A_lo = lo @ lo.transpose(0, 2, 1)   # the matrix whose lower factor is f's lower triangle
    U_full = np.triu(f)                 # f's upper triangle (diagonal: the lower factor's)
    A_up = U_full.transpose(0, 2, 1) @ U_full
    solve = np.linalg.solve
    want = [solve(lo, b[..., None])[..., 0], solve(U_full, b[..., None])[..., 0], solve(A_lo, b[..., None])[..., 0],
            solve(A_up, b[..., None])[..., 0], solve(U_full.transpose(0, 2, 1), b[..., None])[..., 0],
            solve(U_full, solve(lo, b[..., None]))[..., 0]]
    wantm = [solve(lo, bm), solve(U_full, bm), solve(A_lo, bm), solve(A_up, bm), solve(A_up, bm)]
    got, gotm = out.numpy(), outm.numpy()
    for k, w in enumerate(want):
        np.testing.assert_allclose(got[:, k], w, rtol=tol, atol=tol, err_msg=f"vector {k}")
    for k, w in enumerate(wantm):
        np.testing.assert_allclose(gotm[:, k], w, rtol=tol, atol=tol, err_msg=f"matrix {k}")


def _check_grads(mod, kernel, inputs, outputs, device, block_dim):
    assert wp.autograd.gradcheck(getattr(mod, kernel), dim=(len(inputs[0]), block_dim), inputs=inputs,
                                 outputs=outputs, device=device, block_dim=block_dim, raise_exception=False,
                                 show_summary=False, eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("block_dim", [1, 16])
def test_cholesky_gradient(device, block_dim):
    """d(L)/dA and d(U*U)/dA for the triangle each mode reads (the other gets none)."""
    rng, n = np.random.default_rng(3), 5
    mod = module(n)
    a = spd(rng, 2, n)
    z = [wp.zeros((2, n, n), dtype=wp.float64, device=device, requires_grad=True) for _ in range(2)]
    _check_grads(mod, "g_cholesky", [wp.array(a, dtype=wp.float64, device=device, requires_grad=True)], z, device,
                 block_dim)


@pytest.mark.parametrize("block_dim", [1, 16])
def test_solve_gradients(device, block_dim):
    """Triangular solves (vector and matrix right-hand sides, a transposed factor) and Cholesky
    solves (both modes): gradients to the factor's read triangle and to the right-hand side."""
    rng, n = np.random.default_rng(4), 4
    mod = module(n)
    f, _ = factors(rng, 2, n)
    args = [wp.array(x, dtype=wp.float64, device=device, requires_grad=True)
            for x in (f, rng.standard_normal((2, n)), rng.standard_normal((2, n, 3)))]
    outs = [wp.zeros((2, 3, n), dtype=wp.float64, device=device, requires_grad=True),
            wp.zeros((2, 2, n, 3), dtype=wp.float64, device=device, requires_grad=True)]
    _check_grads(mod, "g_solves", args, outs, device, block_dim)
    outs = [wp.zeros((2, 2, n), dtype=wp.float64, device=device, requires_grad=True),
            wp.zeros((2, 2, n, 3), dtype=wp.float64, device=device, requires_grad=True)]
    _check_grads(mod, "g_cholesky_solve", args, outs, device, block_dim)


def test_cholesky_gradient_matches_warp_formula(device):
    """The adjoint Warp documents (tril(L^-T Phi(L^T adj_L) L^-1) with halved diagonal), under a Tape."""
    rng, n = np.random.default_rng(5), 6
    mod = module(n)
    a = spd(rng, 1, n)
    adj = rng.standard_normal((1, n, n))
    A = wp.array(a, dtype=wp.float64, device=device, requires_grad=True)
    lo, up = (wp.zeros((1, n, n), dtype=wp.float64, device=device, requires_grad=True) for _ in range(2))
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(mod.g_cholesky, dim=[1], inputs=[A, lo, up], block_dim=32, device=device)
    tape.backward(grads={lo: wp.array(adj, dtype=wp.float64, device=device)})
    L = np.linalg.cholesky(a[0])
    P = np.tril(L.T @ np.tril(adj[0]))
    P[np.diag_indices(n)] *= 0.5
    B = np.linalg.solve(L.T, np.linalg.solve(L.T, P + P.T).T)
    want = np.tril(B)
    want[np.diag_indices(n)] *= 0.5
    np.testing.assert_allclose(A.grad.numpy()[0], want, rtol=1e-9, atol=1e-9)


def test_inplace_forms_refuse_a_gradient(device):
    rng, n = np.random.default_rng(6), 4
    mod = module(n)
    a = spd(rng, 1, n)
    A = wp.array(a, dtype=wp.float64, device=device, requires_grad=True)
    lo = wp.zeros((1, n, n), dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(mod.g_inplace, dim=[1], inputs=[A, lo], block_dim=8, device=device)
    np.testing.assert_allclose(lo.numpy()[0], np.linalg.cholesky(a[0]), rtol=1e-10)
    with pytest.raises(wp.AutodiffError, match="tile_cholesky_inplace"):
        tape.backward(grads={lo: wp.ones((1, n, n), dtype=wp.float64, device=device)})


BAD = {
    "not square": ("a = wp.tile_load(x, shape=(4, 3))\n    b = wp.tile_cholesky(a)", "square 2-d tile"),
    "integer": ("a = wp.tile_zeros(shape=(3, 3), dtype=int)\n    b = wp.tile_cholesky(a)", "float32 or float64"),
    "fill mode": ("a = wp.tile_load(x, shape=(3, 3))\n    b = wp.tile_cholesky(a, fill_mode='diag')",
                  "fill_mode must be 'lower' or 'upper'"),
    "rows": ("a = wp.tile_load(x, shape=(3, 3))\n    y = wp.tile_load(x, shape=(4, 3))\n    b = wp.tile_lower_solve(a, y)",
             "right-hand side must have shape"),
    "dtypes": ("a = wp.tile_load(x, shape=(3, 3))\n    y = wp.tile_zeros(shape=3, dtype=wp.float64)\n"
               "    b = wp.tile_cholesky_solve(a, y)", "one dtype"),
    "fft dtype": ("a = wp.tile_load(x, shape=(3, 3))\n    wp.tile_fft(a)", "vec2f or vec2d"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input(case, tmp_path):
    body, message = BAD[case]
    src = tmp_path / f"bad_linalg_{case.replace(' ', '_')}.py"
    src.write_text("import tilewarp as wp\n\n\n@wp.kernel\ndef k(x: wp.array2d(dtype=float)):\n    " + body + "\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location(src.stem, src)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    with pytest.raises((wp.KernelTypeError, wp.KernelValueError), match=message) as e:
        wp.launch_tiled(m.k, dim=[1], inputs=[wp.zeros((4, 4), dtype=float, device="cpu")], block_dim=4, device="cpu")
    assert src.name in str(e.value)


SIMT_SOLVE = '''
import WP as wp


@wp.kernel
def lane_rhs(f: wp.array2d(dtype=wp.float64), b: wp.array(dtype=wp.float64), x: wp.array(dtype=wp.float64)):
    i, lane = wp.tid()
    y = wp.tile(b[lane] * b[lane])  # block_dim lanes: a right-hand side for an 8 x 8 solve at block_dim 8 only
    z = wp.tile_lower_solve(wp.tile_load(f, shape=(8, 8)), y)
    x[lane] = wp.untile(z)
'''


def test_shapes_that_fit_only_the_launch_block_size(device):
    """tile(x) of block_dim lanes as a solve's right-hand side: the kernel type-checks at block_dim 8
    only (not at the default 256), under a Tape and backwards too."""
    mod = load_module(SIMT_SOLVE, "tilewarp")
    rng = np.random.default_rng(7)
    f, _ = factors(rng, 1, 8)
    L = np.tril(f[0])
    b = rng.uniform(0.5, 1.5, 8)
    F = wp.array(f[0], dtype=wp.float64, device=device, requires_grad=True)
    B = wp.array(b, dtype=wp.float64, device=device, requires_grad=True)
    X = wp.zeros(8, dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(mod.lane_rhs, dim=[1], inputs=[F, B, X], block_dim=8, device=device)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(L, b * b), rtol=1e-12)
    tape.backward(grads={X: wp.ones(8, dtype=wp.float64, device=device)})
    w = np.linalg.solve(L.T, np.ones(8))
    np.testing.assert_allclose(B.grad.numpy(), 2.0 * b * w, rtol=1e-10)


NOT_SPD = '''
import WP as wp


@wp.kernel(module="unique", module_options={"mode": "debug"})
def checked(a: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    m = wp.tile_load(a, shape=(4, 4))
    wp.tile_store(out, wp.tile_cholesky(m))


@wp.kernel
def unchecked(a: wp.array2d(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    m = wp.tile_load(a, shape=(4, 4))
    wp.tile_store(out, wp.tile_cholesky(m))
'''


def test_not_positive_definite(device):
    """A debug build names the pivot and the user's line; a release build gives NaN, as Warp."""
    mod = load_module(NOT_SPD, "tilewarp")
    a = np.eye(4)
    a[2, 2] = -1.0
    out = wp.zeros((4, 4), dtype=wp.float64, device=device)
    A = wp.array(a, dtype=wp.float64, device=device)
    wp.launch_tiled(mod.unchecked, dim=[1], inputs=[A, out], block_dim=8, device=device)
    assert np.isnan(out.numpy()[2, 2])
    with pytest.raises(wp.KernelRuntimeError, match="pivot 2 of 4 not positive") as e:
        wp.launch_tiled(mod.checked, dim=[1], inputs=[A, out], block_dim=8, device=device)
    assert e.value.kind == "not_spd" and "wp.tile_cholesky(m)" in e.value.loc.text
    wp.launch_tiled(mod.checked, dim=[1], inputs=[wp.array(np.eye(4) * 4.0, dtype=wp.float64, device=device), out],
                    block_dim=8, device=device)
    np.testing.assert_allclose(out.numpy(), np.eye(4) * 2.0)
