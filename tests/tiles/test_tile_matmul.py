"""tile_matmul over a grid of shapes, dtypes and block sizes against a float64 NumPy reference.

The kernel is the tiles chapter's GEMM (a K loop of tile_load + tile_matmul accumulating into a
tile, then tile_store), built per (tile shape, dtypes, block_dim). On CUDA the shapes here take the
tensor-core paths of native/tile/mma.h where they apply (float16 operands with float32 or float16
sums: mma.m16n8k16; float64: dmma.h's m16n8k8, or mma.m8n8k4 for 8-row multiples) and the portable
loop elsewhere (odd shapes, float32); CI compiles every one of them for sm_90 through NVRTC.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module

# the chapter's GEMM: a K loop accumulating into `total`, then `{tail}`
PLAIN = '''
import WP as wp

TM = wp.constant({tm})
TN = wp.constant({tn})
TK = wp.constant({tk})


@wp.kernel
def gemm(a: wp.array2d(dtype={ab}), b: wp.array2d(dtype={ab}), c: wp.array2d(dtype={acc})):
    i, j = wp.tid()
    total = wp.tile_zeros(shape=(TM, TN), dtype={acc})
    for k in range(a.shape[1] // TK):
        x = wp.tile_load(a, shape=(TM, TK), offset=(i * TM, k * TK))
        y = wp.tile_load(b, shape=(TK, TN), offset=(k * TK, j * TN))
        wp.tile_matmul(x, y, total)
{tail}
'''
STORE = "    wp.tile_store(c, total, offset=(i * TM, j * TN))"
# also the accumulating form with alpha and beta, on a tile read from c
GEMM = PLAIN.replace("{tail}", '''    old = wp.tile_load(c, shape=(TM, TN), offset=(i * TM, j * TN))
    wp.tile_matmul(wp.tile_load(a, shape=(TM, TK), offset=(i * TM, 0)), wp.tile_load(b, shape=(TK, TN), offset=(0, j * TN)),
                   old, alpha=0.5, beta=-2.0)
    wp.tile_store(c, total + old, offset=(i * TM, j * TN))''')

# (tile M, N, K, operand dtype, sum dtype): tensor-core shapes, warp tiles of several sizes, and
# shapes that only the portable loop takes
CASES = [
    (32, 32, 16, "float16", "float32"),
    (64, 32, 32, "float16", "float32"),
    (16, 8, 16, "float16", "float16"),
    (24, 12, 8, "float16", "float32"),
    (32, 16, 8, "float64", "float64"),
    (8, 24, 12, "float64", "float64"),
    (32, 32, 16, "float32", "float32"),
]
TOL = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}


def _operand(rng, shape, name, device):
    """Random values of dtype ``name`` (bfloat16: rounded to it, numpy has none) and their array."""
    from tilewarp.language.types import bf16_bits, bf16_values

    x = rng.uniform(-1, 1, shape)
    if name == "bfloat16":
        x = bf16_values(bf16_bits(x))
        return x, wp.array(x, dtype=wp.bfloat16, device=device)
    x = x.astype(_np(name))
    return x, wp.array(x, device=device)


def _np(name):
    return {"float16": np.float16, "float32": np.float32, "float64": np.float64}[name]


@pytest.mark.parametrize("tm,tn,tk,ab,acc", CASES)
@pytest.mark.parametrize("block_dim", [64, 128])
def test_tile_gemm(device, rng, tm, tn, tk, ab, acc, block_dim):
    mod = load_module(GEMM.format(tm=tm, tn=tn, tk=tk, ab=f"wp.{ab}", acc=f"wp.{acc}"), "tilewarp")
    bm, bn, kt = 3, 2, 4
    m, n, k = bm * tm, bn * tn, kt * tk
    a = rng.uniform(-1, 1, (m, k)).astype(_np(ab))
    b = rng.uniform(-1, 1, (k, n)).astype(_np(ab))
    c = rng.uniform(-1, 1, (m, n)).astype(_np(acc))
    alpha, beta = 0.5, -2.0  # as in the kernel text
    wa, wb = wp.array(a, device=device), wp.array(b, device=device)
    wc = wp.array(c, device=device)
    wp.launch_tiled(mod.gemm, dim=(bm, bn), inputs=[wa, wb, wc], block_dim=block_dim, device=device)
    a64, b64, c64 = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)
    first = np.zeros((m, n))
    for i in range(bm):
        for j in range(bn):  # the kernel's second product uses each block's first K tile only
            rows, cols = slice(i * tm, (i + 1) * tm), slice(j * tn, (j + 1) * tn)
            first[rows, cols] = a64[rows, :tk] @ b64[:tk, cols]
    want = a64 @ b64 + alpha * first + beta * c64
    got = wc.numpy().astype(np.float64)
    scale = np.abs(a64) @ np.abs(b64) + np.abs(c64) * 2 + 1.0
    assert np.all(np.abs(got - want) <= TOL[acc] * scale * (k if acc == "float16" else 1)), \
        f"max error {np.abs(got - want).max():.3g}"




# (tile M, N, K, operand dtype, sum dtype, block_dim, mtile kind): wgmma ("3, <columns a warpgroup
# owns>") where a warpgroup's 64-row tiles fit, else mma.sync warp tiles (1: float16, 2: float64);
# float32 without tensor cores: 4: a register block of outputs per thread
@pytest.mark.parametrize("tm,tn,tk,ab,acc,block_dim,kind", [
    (64, 64, 32, "float16", "float32", 128, "3, 64"),     # one warpgroup, one 64 x 64 tile
    (128, 128, 64, "float16", "float32", 256, "3, 128"),  # two warpgroups, a 64 x 128 tile each
    (128, 64, 16, "float16", "float32", 256, "3, 64"),
    (64, 96, 48, "float16", "float32", 128, "3, 32"),     # 32-column strips (64-byte swizzle)
    (64, 128, 16, "float16", "float32", 256, "3, 64"),    # two warpgroups side by side
    (32, 64, 16, "float16", "float32", 64, 1),            # 2 warps, two warp tiles each
    (32, 16, 16, "float16", "float16", 32, 1),
    (32, 32, 8, "float64", "float64", 64, 2),
    (64, 64, 32, "float64", "float64", 128, 2),           # float64: dmma.h's swizzled operands
    (64, 64, 32, "bfloat16", "float32", 128, "3, 64"),    # bfloat16 operands: the same paths
    (32, 64, 16, "bfloat16", "float32", 64, 1),
    (64, 64, 32, "float32", "float32", 128, 4),           # float32: 4 x 8 outputs a thread
    (128, 64, 16, "float32", "float32", 128, 4),          # 8 x 8
])
def test_gemm_with_register_accumulator(device, rng, tm, tn, tk, ab, acc, block_dim, kind):
    """The chapter's GEMM as written: its accumulator is only zeroed, accumulated into, carried and
    stored, so on CUDA it stays in tensor-core registers across the K loop (tw::mtile), and where
    wgmma applies the operand tiles take its swizzled layout."""
    from tilewarp.tiling.storage import accumulators

    mod = load_module(PLAIN.format(tm=tm, tn=tn, tk=tk, ab=f"wp.{ab}", acc=f"wp.{acc}", tail=STORE), "tilewarp")
    fn = mod.gemm.ir_for(block_dim)
    kinds, swizzled = accumulators(fn, block_dim)
    assert set(kinds.values()) == {kind}
    whole_strips = ab == "float64" and tm % 16 == tn % 16 == tk % 16 == 0
    assert len(swizzled) == (2 if isinstance(kind, str) or whole_strips else 0)  # wgmma / dmma.h operands
    bm, bn, kt = 2, 3, 5
    m, n, k = bm * tm, bn * tn, kt * tk
    (a, wa), (b, wb) = _operand(rng, (m, k), ab, device), _operand(rng, (k, n), ab, device)
    wc = wp.zeros((m, n), dtype=getattr(wp, acc), device=device)
    wp.launch_tiled(mod.gemm, dim=(bm, bn), inputs=[wa, wb, wc], block_dim=block_dim, device=device)
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 1.0
    got = wc.numpy().astype(np.float64)
    assert np.all(np.abs(got - want) <= TOL[acc] * scale * (k if acc == "float16" else 1)), \
        f"max error {np.abs(got - want).max():.3g}"


GRAD = '''
import WP as wp


@wp.kernel
def product(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64), c: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=(16, 8))
    y = wp.tile_load(b, shape=(8, 8))
    z = wp.tile_zeros(shape=(16, 8), dtype=wp.float64)
    wp.tile_matmul(x, y, z, alpha=1.5)
    wp.tile_store(c, z)
'''


def test_tile_matmul_gradient_float64(device, rng):
    """The tensor-core forward (float64: dmma.h's m16n8k8 on CUDA) with the exact adjoint: dA = alpha G B^T,
    dB = alpha A^T G, against the analytic gradient of a weighted sum."""
    mod = load_module(GRAD, "tilewarp")
    a = wp.array(rng.standard_normal((16, 8)), dtype=wp.float64, device=device, requires_grad=True)
    b = wp.array(rng.standard_normal((8, 8)), dtype=wp.float64, device=device, requires_grad=True)
    c = wp.zeros((16, 8), dtype=wp.float64, device=device, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(mod.product, dim=1, inputs=[a, b, c], block_dim=64, device=device)
    g = rng.standard_normal((16, 8))
    tape.backward(grads={c: wp.array(g, dtype=wp.float64, device=device)})
    np.testing.assert_allclose(c.numpy(), 1.5 * a.numpy() @ b.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), 1.5 * g @ b.numpy().T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), 1.5 * a.numpy().T @ g, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("ta,tb,tc", [("float32", "float16", "float64"), ("float64", "float32", "float16"),
                                      ("float16", "float16", "float64")])
def test_mixed_dtypes_sum_in_out_dtype(device, rng, ta, tb, tc):
    """As in Warp, a, b and out may each be float16/32/64; the sums are made in out's dtype."""
    mod = load_module(f'''
import WP as wp


@wp.kernel
def mixed(a: wp.array2d(dtype=wp.{ta}), b: wp.array2d(dtype=wp.{tb}), c: wp.array2d(dtype=wp.{tc})):
    x = wp.tile_load(a, shape=(16, 32))
    y = wp.tile_load(b, shape=(32, 8))
    z = wp.tile_load(c, shape=(16, 8))
    wp.tile_matmul(x, y, z, alpha=0.5)
    wp.tile_store(c, z)
''', "tilewarp")
    an, bn = rng.uniform(-1, 1, (16, 32)).astype(ta), rng.uniform(-1, 1, (32, 8)).astype(tb)
    cn = rng.uniform(-1, 1, (16, 8)).astype(tc)
    c = wp.array(cn, device=device)
    wp.launch_tiled(mod.mixed, dim=1, inputs=[wp.array(an, device=device), wp.array(bn, device=device), c],
                    block_dim=64, device=device)
    want = 0.5 * an.astype(np.float64) @ bn.astype(np.float64) + cn.astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, atol={"float16": 2e-2, "float64": 1e-5}[tc])


@pytest.mark.parametrize("body,error,match", [
    ("wp.tile_matmul(wp.tile_load(i, shape=(16, 16)), x, z)", wp.KernelTypeError, r"float16/bfloat16/float32/float64 tiles"),
    ("wp.tile_matmul(x, x, wp.tile_zeros(shape=(16, 8), dtype=float))", wp.KernelTypeError, r"shape \(16, 16\)"),
    ("wp.tile_matmul(x, x, z, precision='fp8')", wp.KernelValueError, r"'default' or 'tf32'"),
    ("wp.tile_matmul(x, x, z, precision='tf32')", wp.KernelTypeError, r"tf32.*float32 tiles"),
])
def test_tile_matmul_bad_arguments(body, error, match):
    mod = load_module(f'''
import WP as wp


@wp.kernel
def bad(a: wp.array2d(dtype=wp.float16), i: wp.array2d(dtype=int), c: wp.array2d(dtype=float)):
    x = wp.tile_load(a, shape=(16, 16))
    z = wp.tile_zeros(shape=(16, 16), dtype=float)
    {body}
    wp.tile_store(c, z)
''', "tilewarp")
    args = [wp.zeros((16, 16), dtype=wp.float16, device="cpu"), wp.zeros((16, 16), dtype=int, device="cpu"),
            wp.zeros((16, 16), dtype=float, device="cpu")]
    with pytest.raises(error, match=match):
        wp.launch_tiled(mod.bad, dim=1, inputs=args, block_dim=32, device="cpu")


def test_tf32_precision_computes_in_float32(rng):
    """precision='tf32' (Warp: TF32 inputs where cuBLASDx runs, float32 elsewhere) is float32 here."""
    mod = load_module('''
import WP as wp


@wp.kernel
def tf(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    z = wp.tile_matmul(wp.tile_load(a, shape=(16, 16)), wp.tile_load(b, shape=(16, 16)), precision="tf32")
    wp.tile_store(c, z)
''', "tilewarp")
    an, bn = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    c = wp.zeros((16, 16), dtype=float, device="cpu")
    wp.launch_tiled(mod.tf, dim=1, inputs=[wp.array(an, device="cpu"), wp.array(bn, device="cpu"), c], block_dim=32,
                    device="cpu")
    np.testing.assert_allclose(c.numpy(), an.astype(np.float64) @ bn.astype(np.float64), rtol=1e-5, atol=1e-5)


# K loops whose loads run ahead (tiling/prefetch.py): any start, constant step and trip count,
# including loops shorter than the pipeline and loops that do not run at all
STRIDED = '''
import WP as wp


@wp.kernel
def gemm(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float16), c: wp.array2d(dtype=wp.float32),
         stop: int):
    i, j = wp.tid()
    total = wp.tile_zeros(shape=(64, 32), dtype=wp.float32)
    for k in range({start}, stop, {step}):
        x = wp.tile_load(a, shape=(64, 16), offset=(i * 64, k * 16))
        y = wp.tile_load(b, shape=(16, 32), offset=(k * 16, j * 32))
        wp.tile_matmul(x, y, total)
    wp.tile_store(c, total, offset=(i * 64, j * 32))
'''
# a loop-carried offset: the loads cannot be issued ahead (their offsets come from the last iteration)
CARRIED = '''
import WP as wp


@wp.kernel
def gemm(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float16), c: wp.array2d(dtype=wp.float32),
         stop: int):
    i, j = wp.tid()
    total = wp.tile_zeros(shape=(64, 32), dtype=wp.float32)
    off = int(0)
    for k in range(stop):
        x = wp.tile_load(a, shape=(64, 16), offset=(i * 64, off))
        y = wp.tile_load(b, shape=(16, 32), offset=(off, j * 32))
        wp.tile_matmul(x, y, total)
        off = off + 16
    wp.tile_store(c, total, offset=(i * 64, j * 32))
'''


# offsets not affine in the loop variable (k - k % 2 steps 0, 0, 2, 2, ...): the loads still run
# ahead, but the K loop has one copy, whose loads test each box
FOLDED = STRIDED.replace("for k in range({start}, stop, {step}):", "for kk in range({start}, stop, {step}):\n        k = kk - kk % 2")


@pytest.mark.parametrize("text,start,step,pipelined,affine", [
    (STRIDED, 0, 1, True, True), (STRIDED, 1, 2, True, True), (STRIDED, 4, 3, True, True),
    (CARRIED, 0, 1, False, False), (FOLDED, 0, 1, True, False)])
@pytest.mark.parametrize("stop", [0, 1, 2, 7])
def test_gemm_loop_runs_loads_ahead(device, rng, text, start, step, pipelined, affine, stop):
    """The loads of later iterations in flight while one multiplies; where their offsets are affine
    in the loop variable, a second copy of the loop without per-box tests, taken when the first,
    second and last boxes fit (on CUDA; emit/cpp.py)."""
    from tilewarp.tiling.storage import plan
    from tilewarp.emit import emit_module
    from tilewarp.emit.block import BlockShape

    mod = load_module(text.format(start=start, step=step), "tilewarp")
    pipes = plan(mod.gemm.ir_for(128), threads=128, pipeline=True).pipelined
    assert bool(pipes) == pipelined and any(p.affine for p in pipes.values()) == affine
    source = emit_module(mod.gemm.ir_for(128), None, BlockShape(128), False, 0)
    assert ("tw::tile_prefetch_walk(" in source) == affine and ("tw::tile_prefetch(" in source) == pipelined
    kt = 8
    a = rng.uniform(-1, 1, (128, 16 * kt)).astype(np.float16)
    b = rng.uniform(-1, 1, (16 * kt, 64)).astype(np.float16)
    wc = wp.zeros((128, 64), dtype=wp.float32, device=device)
    wp.launch_tiled(mod.gemm, dim=(2, 2), inputs=[wp.array(a, device=device), wp.array(b, device=device), wc, stop],
                    block_dim=128, device=device)
    ks = list(range(stop)) if text is CARRIED else [k - k % 2 if text is FOLDED else k for k in range(start, stop, step)]
    cols = [c for k in ks for c in range(16 * k, 16 * k + 16)]
    want = a[:, cols].astype(np.float64) @ b[cols, :].astype(np.float64)
    np.testing.assert_allclose(wc.numpy(), want, atol=2e-3 * (1 + np.abs(want).max()))


@pytest.mark.parametrize("m,n,shift", [(150, 70, 0), (128, 64, 1)])
def test_gemm_edges_and_unaligned_operands(device, rng, m, n, shift):
    """Edge tiles partly outside the matrices (zero-padded loads, clipped stores) and operands whose
    rows are not 16-byte aligned (no cp.async: the pipelined loop's loads fall back to element copies)
    give the float64 reference on the wgmma-shaped GEMM."""
    mod = load_module(STRIDED.format(start=0, step=1), "tilewarp")
    kt = 6
    a_full = rng.uniform(-1, 1, (m, 16 * kt + shift)).astype(np.float16)
    b = rng.uniform(-1, 1, (16 * kt, n)).astype(np.float16)
    a_dev = wp.array(a_full, device=device)
    a = a_dev[:, shift:] if shift else a_dev  # a view starting `shift` halves into each row
    wc = wp.zeros((m, n), dtype=wp.float32, device=device)
    wp.launch_tiled(mod.gemm, dim=(-(-m // 64), -(-n // 32)), inputs=[a, wp.array(b, device=device), wc, kt],
                    block_dim=128, device=device)
    want = a_full[:, shift:].astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(wc.numpy(), want, atol=2e-3 * (1 + np.abs(want).max()))


SCALED = '''
import WP as wp


@wp.kernel
def scaled(a: wp.array2d(dtype=wp.float64), b: wp.array2d(dtype=wp.float64), c: wp.array2d(dtype=wp.float64),
           s: wp.array(dtype=wp.float64), out: wp.array2d(dtype=wp.float64)):
    x = wp.tile_load(a, shape=(16, 8))
    y = wp.tile_load(b, shape=(8, 8))
    z = wp.tile_load(c, shape=(16, 8))
    wp.tile_matmul(x, y, z, alpha=s[0], beta=s[1])
    wp.tile_store(out, z)
'''


def test_tile_matmul_runtime_alpha_beta_and_gradients(device, rng):
    """alpha and beta computed at run time (Warp takes any float expression), with the gradients of
    all five inputs: dA = alpha G B^T, dB = alpha A^T G, dC = beta G, d alpha = sum(G * AB),
    d beta = sum(G * C)."""
    mod = load_module(SCALED, "tilewarp")
    an, bn, cn = rng.standard_normal((16, 8)), rng.standard_normal((8, 8)), rng.standard_normal((16, 8))
    sn = np.array([rng.uniform(0.5, 2.0), rng.uniform(-2.0, -0.5)])
    a, b, c, s = (wp.array(x, dtype=wp.float64, device=device, requires_grad=True) for x in (an, bn, cn, sn))
    out = wp.zeros((16, 8), dtype=wp.float64, device=device, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(mod.scaled, dim=1, inputs=[a, b, c, s], outputs=[out], block_dim=64, device=device)
    g = rng.standard_normal((16, 8))
    tape.backward(grads={out: wp.array(g, dtype=wp.float64, device=device)})
    alpha, beta = sn
    np.testing.assert_allclose(out.numpy(), alpha * an @ bn + beta * cn, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), alpha * g @ bn.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), alpha * an.T @ g, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.grad.numpy(), beta * g, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.grad.numpy(), [np.sum(g * (an @ bn)), np.sum(g * cn)], rtol=1e-11)


@pytest.mark.parametrize("dtype,block_dim", [("float64", 64), ("float16", 128)])
def test_tile_matmul_beta_zero_never_reads_out(device, rng, dtype, block_dim):
    """beta = 0 (a run-time value here) overwrites out without reading it: NaN there stays out of the
    result, on the register-accumulator (mma.sync / wgmma) paths too."""
    acc = "float32" if dtype == "float16" else dtype
    mod = load_module(f'''
import WP as wp


@wp.kernel
def over(a: wp.array2d(dtype=wp.{dtype}), b: wp.array2d(dtype=wp.{dtype}), c: wp.array2d(dtype=wp.{acc}),
         alpha: float, beta: float):
    x = wp.tile_load(a, shape=(64, 32))
    y = wp.tile_load(b, shape=(32, 64))
    z = wp.tile_load(c, shape=(64, 64))
    wp.tile_matmul(x, y, z, alpha=alpha, beta=beta)
    wp.tile_store(c, z)
''', "tilewarp")
    an = rng.uniform(-1, 1, (64, 32)).astype(dtype)
    bn = rng.uniform(-1, 1, (32, 64)).astype(dtype)
    c = wp.array(np.full((64, 64), np.nan, dtype=acc), device=device)
    wp.launch_tiled(mod.over, dim=1, inputs=[wp.array(an, device=device), wp.array(bn, device=device), c, 0.75, 0.0],
                    block_dim=block_dim, device=device)
    want = 0.75 * an.astype(np.float64) @ bn.astype(np.float64)
    np.testing.assert_allclose(c.numpy(), want, atol=1e-3 if dtype == "float16" else 1e-12)


@pytest.mark.parametrize("stage_kb,alone,limit_kb,stages", [
    (32, False, 227, 3),  # 128 x 128 x 64 float16 operands, two blocks an SM: within 96 KB
    (48, True, 227, 4),   # 128 x 256 x 64 alone on an H100 SM: up to 200 KB
    (48, True, 99, 2),    # the same on an sm_89 GPU (99 KB a block)
    (48, True, 0, 2),     # device not known (the CPU)
    (48, False, 227, 2),
    (100, False, 227, 1),  # no room for two stages: loads stay where they are
])
def test_prefetch_stages_fit_the_device(stage_kb, alone, limit_kb, stages):
    from tilewarp.tiling.prefetch import stages_for

    assert stages_for(stage_kb * 1024, alone, limit_kb * 1024) == stages


def test_bfloat16_operands_and_gradients(device, rng):
    """bfloat16 a, b into a float32 tile (Warp: forward only): products exact in float32 and the
    operands' gradients G B^T, A^T G rounded to bfloat16."""
    from tilewarp.language.types import bf16_values

    mod = load_module('''
import WP as wp


@wp.kernel
def product(a: wp.array2d(dtype=wp.bfloat16), b: wp.array2d(dtype=wp.bfloat16), c: wp.array2d(dtype=float)):
    z = wp.tile_zeros(shape=(64, 32), dtype=float)
    wp.tile_matmul(wp.tile_load(a, shape=(64, 16)), wp.tile_load(b, shape=(16, 32)), z)
    wp.tile_store(c, z)
''', "tilewarp")
    (an, a), (bn, b) = _operand(rng, (64, 16), "bfloat16", device), _operand(rng, (16, 32), "bfloat16", device)
    a.requires_grad = b.requires_grad = True
    c = wp.zeros((64, 32), dtype=float, device=device, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(mod.product, dim=1, inputs=[a, b, c], block_dim=128, device=device)
    g = rng.standard_normal((64, 32))
    tape.backward(grads={c: wp.array(g.astype(np.float32), device=device)})
    np.testing.assert_allclose(c.numpy(), an @ bn, rtol=1e-5, atol=1e-5)
    for grad, want in ((a.grad, g @ bn.T), (b.grad, an.T @ g)):
        np.testing.assert_allclose(bf16_values(grad.numpy()), want, rtol=2 ** -7, atol=1e-2)


def test_loop_writing_arrays_keeps_its_loads_in_place(device, rng):
    """A K loop that stores into the array it loads from (each step reads the row the previous one
    wrote) must not run its loads ahead: the result is the serial one."""
    from tilewarp.tiling.storage import plan

    mod = load_module('''
import WP as wp


@wp.kernel
def chain(a: wp.array2d(dtype=wp.float64), m: wp.array2d(dtype=wp.float64)):
    w = wp.tile_load(m, shape=(8, 8))
    for k in range(a.shape[0] // 8 - 1):
        x = wp.tile_load(a, shape=(8, 8), offset=(k * 8, 0))
        y = wp.tile_zeros(shape=(8, 8), dtype=wp.float64)
        wp.tile_matmul(x, w, y)
        wp.tile_store(a, y, offset=(k * 8 + 8, 0))
''', "tilewarp")
    assert not plan(mod.chain.ir_for(64), threads=64, pipeline=True).pipelined
    an, mn = rng.uniform(-1, 1, (40, 8)), rng.uniform(-0.5, 0.5, (8, 8))
    a = wp.array(an, dtype=wp.float64, device=device)
    wp.launch_tiled(mod.chain, dim=1, inputs=[a, wp.array(mn, dtype=wp.float64, device=device)], block_dim=64,
                    device=device)
    want = an.copy()
    for k in range(4):
        want[8 * k + 8:8 * k + 16] = want[8 * k:8 * k + 8] @ mn
    np.testing.assert_allclose(a.numpy(), want, rtol=1e-12, atol=1e-12)


def test_mixed_dtypes_gradients(device, rng):
    """Gradients of a float32 x float64 product into float64: each operand's gradient in its own dtype
    (G B^T rounded to float32 for a, A^T G in float64 for b)."""
    mod = load_module('''
import WP as wp


@wp.kernel
def mixed(a: wp.array2d(dtype=wp.float32), b: wp.array2d(dtype=wp.float64), c: wp.array2d(dtype=wp.float64)):
    z = wp.tile_zeros(shape=(16, 8), dtype=wp.float64)
    wp.tile_matmul(wp.tile_load(a, shape=(16, 32)), wp.tile_load(b, shape=(32, 8)), z, alpha=2.0)
    wp.tile_store(c, z)
''', "tilewarp")
    an, bn = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((32, 8))
    a = wp.array(an, device=device, requires_grad=True)
    b = wp.array(bn, dtype=wp.float64, device=device, requires_grad=True)
    c = wp.zeros((16, 8), dtype=wp.float64, device=device, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch_tiled(mod.mixed, dim=1, inputs=[a, b, c], block_dim=64, device=device)
    g = rng.standard_normal((16, 8))
    tape.backward(grads={c: wp.array(g, dtype=wp.float64, device=device)})
    np.testing.assert_allclose(c.numpy(), 2.0 * an.astype(np.float64) @ bn, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * g @ bn.T, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), 2.0 * an.astype(np.float64).T @ g, rtol=1e-12, atol=1e-12)


def test_loaded_tile_used_after_the_product_waits_for_it():
    """A K loop that also touches an operand tile after the product (here writes an element) keeps its wgmma
    products synchronous: the loaded buffers are not left to a product still reading them while
    other code runs on them."""
    from tilewarp.tiling.storage import plan

    mod = load_module('''
import WP as wp


@wp.kernel
def gemm_and_sum(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float16), c: wp.array2d(dtype=wp.float32),
                 s: wp.array(dtype=wp.float32)):
    total = wp.tile_zeros(shape=(64, 64), dtype=wp.float32)
    for k in range(a.shape[1] // 16):
        x = wp.tile_load(a, shape=(64, 16), offset=(0, k * 16))
        y = wp.tile_load(b, shape=(16, 64), offset=(k * 16, 0))
        wp.tile_matmul(x, y, total)
        x[0, 0] = wp.float16(0.0)
    wp.tile_store(c, total)
''', "tilewarp")
    pipes = plan(mod.gemm_and_sum.ir_for(128), threads=128, pipeline=True).pipelined
    assert pipes and all(not p.asynchronous for p in pipes.values())
    plain = load_module(STRIDED.format(start=0, step=1), "tilewarp")
    pipes = plan(plain.gemm.ir_for(128), threads=128, pipeline=True).pipelined
    assert pipes and all(p.asynchronous for p in pipes.values())
