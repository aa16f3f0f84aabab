"""tilewarp.arrange: the NineToothed document's kernels and the arrangement rules around them."""
import numpy as np
import pytest

import tilewarp as wp
from tilewarp import arrange
from tilewarp.arrange import BlockSpecError, Symbol, Tensor
from tilewarp.errors import KernelTypeError

BLOCK_SIZE = Symbol("BLOCK_SIZE", meta=True)


@arrange.jit
def add_kernel(x: Tensor(1).tile((BLOCK_SIZE,)), y: Tensor(1).tile((BLOCK_SIZE,)), z: Tensor(1).tile((BLOCK_SIZE,))):
    z = x + y  # noqa: F841 (assigning an output tile stores it)


BLOCK_SIZE_M = Symbol("BLOCK_SIZE_M", meta=True)
BLOCK_SIZE_N = Symbol("BLOCK_SIZE_N", meta=True)
BLOCK_SIZE_K = Symbol("BLOCK_SIZE_K", meta=True)

a_tiled = Tensor(2).tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1))
b_tiled = Tensor(2).tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1))
c_tiled = Tensor(2).tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
a_tiled = a_tiled.expand((-1, c_tiled.shape[1]))
b_tiled = b_tiled.expand((c_tiled.shape[0], -1))
a_tiled.dtype = a_tiled.dtype.squeeze(0)
b_tiled.dtype = b_tiled.dtype.squeeze(1)


@arrange.jit
def matmul_kernel(a: a_tiled, b: b_tiled, c: c_tiled):
    accumulator = wp.tile_zeros(c.shape, dtype=wp.float32)
    for k in range(a.shape[0]):
        accumulator += a[k] @ b[k]
    c = wp.tile_astype(accumulator, c.dtype)  # noqa: F841


def arr(a, device, **kw):
    return wp.array(np.asarray(a), device=device, **kw)


@pytest.mark.parametrize("n,block", [(8192, 1024), (1000, 128), (37, 64)])
def test_vector_add(n, block, device):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    z = wp.zeros(n, dtype=wp.float32, device=device)
    add_kernel(arr(x, device), arr(y, device), z, BLOCK_SIZE=block)
    np.testing.assert_array_equal(z.numpy(), x + y)


@pytest.mark.parametrize("shape,meta", [((128, 96, 64), (32, 32, 16)), ((70, 50, 72), (32, 16, 16))])
def test_matmul_float16_inputs_float32_sums(shape, meta, device):
    m, n, k = shape
    rng = np.random.default_rng(m)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = wp.zeros((m, n), dtype=wp.float16, device=device)
    bm, bn, bk = meta
    matmul_kernel(arr(a, device), arr(b, device), c, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=2e-3, atol=2e-2)


ROWS = Tensor(2).tile((1, -1))
ROWS.dtype = ROWS.dtype.squeeze(0)


@arrange.jit
def softmax_kernel(x: ROWS, y: ROWS):
    e = wp.exp(x - wp.tile_max(x)[0])
    y = e / wp.tile_sum(e)[0]  # noqa: F841


def test_row_softmax_and_its_gradient(device):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((6, 24))
    xa, ya = arr(x, device, requires_grad=True), wp.zeros((6, 24), dtype=wp.float64, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        softmax_kernel(xa, ya)
    want = np.exp(x - x.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(ya.numpy(), want, rtol=1e-12)
    w = rng.standard_normal(x.shape)
    tape.backward(grads={ya: arr(w, device)})
    np.testing.assert_allclose(xa.grad.numpy(), want * (w - (w * want).sum(1, keepdims=True)), rtol=1e-10, atol=1e-12)


@arrange.jit
def matmul_same_type(a: a_tiled, b: b_tiled, c: c_tiled):
    accumulator = wp.tile_zeros(c.shape, dtype=c.dtype)
    for k in range(a.shape[0]):
        accumulator += a[k] @ b[k]
    c = accumulator  # noqa: F841


def test_matmul_gradient_finite_differences(device):
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((20, 12)), rng.standard_normal((12, 10))

    def run(a_, b_, **kw):
        c = wp.zeros((20, 10), dtype=wp.float64, device=device, **kw)
        matmul_same_type(a_, b_, c, BLOCK_SIZE_M=8, BLOCK_SIZE_N=8, BLOCK_SIZE_K=4)
        return c

    aa, ba = arr(a, device, requires_grad=True), arr(b, device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        c = run(aa, ba, requires_grad=True)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-12)
    w = rng.standard_normal((20, 10))
    tape.backward(grads={c: arr(w, device)})
    eps = 1e-6
    for grad, x, k in ((aa.grad.numpy(), a, 0), (ba.grad.numpy(), b, 1)):
        for _ in range(4):
            idx = tuple(rng.integers(0, s) for s in x.shape)
            xp, xm = x.copy(), x.copy()
            xp[idx] += eps
            xm[idx] -= eps
            args_p = [arr(xp, device), arr(b, device)] if k == 0 else [arr(a, device), arr(xp, device)]
            args_m = [arr(xm, device), arr(b, device)] if k == 0 else [arr(a, device), arr(xm, device)]
            fd = ((w * run(*args_p).numpy()).sum() - (w * run(*args_m).numpy()).sum()) / (2 * eps)
            np.testing.assert_allclose(grad[idx], fd, rtol=1e-5, atol=1e-7)


def test_outputs_read_in_place_and_numpy_outputs(device):
    @arrange.jit
    def axpy(x: Tensor(1).tile((64,)), z: Tensor(1).tile((64,))):
        z = z + 2.0 * x  # noqa: F841

    x = np.arange(100, dtype=np.float32)
    z = arr(np.ones(100, np.float32), device)
    axpy(arr(x, device), z)
    np.testing.assert_array_equal(z.numpy(), 1 + 2 * x)
    if device == "cpu":
        zn = np.ones(100, np.float32)
        axpy(x, zn)
        np.testing.assert_array_equal(zn, 1 + 2 * x)


def test_plain_symbols_from_shapes():
    n = Symbol("n")

    @arrange.jit
    def scale(x: Tensor(shape=(n,)).tile((32,)), y: Tensor(shape=(n,)).tile((32,))):
        y = x * 3.0  # noqa: F841

    y = wp.zeros(40, dtype=wp.float32, device="cpu")
    scale(arr(np.ones(40, np.float32), "cpu"), y)
    np.testing.assert_array_equal(y.numpy(), np.full(40, 3.0))
    with pytest.raises(BlockSpecError, match="n = 41 here, 40 elsewhere"):
        scale(arr(np.ones(40, np.float32), "cpu"), wp.zeros(41, dtype=wp.float32, device="cpu"))


def test_bad_arrangements_and_calls():
    x = arr(np.ones(64, np.float32), "cpu")

    @arrange.jit
    def grids_differ(x: Tensor(1).tile((16,)), y: Tensor(1).tile((32,))):
        y = x  # noqa: F841

    with pytest.raises(BlockSpecError, match="arranged into grids"):
        grids_differ(x, wp.zeros(64, dtype=wp.float32, device="cpu"))

    @arrange.jit
    def untiled(x: Tensor(1), y: Tensor(1).tile((16,))):
        y = x  # noqa: F841

    with pytest.raises(BlockSpecError, match="arrange it with .tile"):
        untiled(x, wp.zeros(64, dtype=wp.float32, device="cpu"))

    huge = Symbol("HUGE", meta=True, lower_bound=1 << 15, upper_bound=1 << 15)

    @arrange.jit
    def too_big(x: Tensor(1).tile((huge,)), y: Tensor(1).tile((huge,))):
        y = x  # noqa: F841

    with pytest.raises(BlockSpecError, match="HUGE: no candidate"):
        too_big(x, wp.zeros(64, dtype=wp.float32, device="cpu"))
    with pytest.raises(TypeError, match="no meta symbol named"):
        add_kernel(x, x, wp.zeros(64, dtype=wp.float32, device="cpu"), BLOCK=4)
    with pytest.raises(TypeError, match="takes 3 arrays"):
        add_kernel(x, x)
    with pytest.raises(TypeError, match="needs an arranged Tensor"):
        arrange.jit(lambda x: None)

    @arrange.jit
    def index_tile_level(x: a_tiled, y: c_tiled):
        y = x  # noqa: F841

    with pytest.raises(KernelTypeError, match=r"level of tiles: index it \(x\[k\]\)") as info:
        index_tile_level(arr(np.ones((8, 8), np.float32), "cpu"), wp.zeros((8, 8), dtype=wp.float32, device="cpu"),
                         BLOCK_SIZE_M=4, BLOCK_SIZE_N=4, BLOCK_SIZE_K=4)
    assert "test_arrange.py:" in str(info.value)
