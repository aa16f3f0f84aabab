"""pallas_call semantics beyond the documents' examples: edges, masks, outputs, inputs, gradients, errors."""
import numpy as np
import pytest

import tilewarp as wp
from tilewarp import pallas as pl
from tilewarp.errors import KernelSyntaxError, KernelTypeError


def arr(a, device, **kw):
    return wp.array(np.asarray(a), device=device, **kw)


def block_sums(x, bm, bn, **kw):
    """Per-block sums of ``x`` (padding included) as a (cdiv(m, bm), cdiv(n, bn)) array."""
    def kernel(x_ref, o_ref):
        o_ref[...] = wp.tile_sum(x_ref[...])[0]

    m, n = x.shape
    grid = (pl.cdiv(m, bm), pl.cdiv(n, bn))
    return pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct(grid, x.dtype), grid=grid,
                          in_specs=[pl.BlockSpec((bm, bn), lambda i, j: (i, j))],
                          out_specs=pl.BlockSpec((None, None), lambda i, j: (i, j)), **kw)(x)


@pytest.mark.parametrize("shape,block", [((13, 7), (4, 4)), ((5, 33), (2, 16)), ((16, 16), (16, 16)),
                                         ((1, 9), (8, 8))])
def test_edge_blocks_pad_with_zero_and_skip_stores(shape, block, device):
    rng = np.random.default_rng(sum(shape))
    x, y = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + y_ref[...]

    grid = (pl.cdiv(shape[0], block[0]), pl.cdiv(shape[1], block[1]))
    spec = pl.BlockSpec(block, lambda i, j: (i, j))
    out = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct(shape, np.float32), grid=grid, in_specs=[spec, spec],
                         out_specs=spec)(arr(x, device), arr(y, device))
    np.testing.assert_allclose(out.numpy(), 2 * x + y, rtol=1e-6)
    sums = block_sums(arr(x, device), *block).numpy()
    bm, bn = block
    want = [[x[i:i + bm, j:j + bn].astype(np.float64).sum() for j in range(0, shape[1], bn)]
            for i in range(0, shape[0], bm)]
    np.testing.assert_allclose(sums, want, rtol=1e-5, atol=1e-5)


def test_outputs_outside_every_block_stay_zero(device):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0

    x = np.arange(16, dtype=np.float32)
    spec = pl.BlockSpec((4,), lambda i: (i,))
    out = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((16,), np.float32), grid=(2,), in_specs=[spec],
                         out_specs=spec)(arr(x, device)).numpy()
    np.testing.assert_array_equal(out, np.concatenate([x[:8] + 1, np.zeros(8)]))


def test_interpret_mode_pads_with_nan():
    x = np.random.default_rng(1).standard_normal((10, 6)).astype(np.float32)
    sums = block_sums(arr(x, "cpu"), 4, 4, interpret=True).numpy()
    assert np.isfinite(sums[:2, 0]).all() and np.isnan(sums[2, :]).all() and np.isnan(sums[:, 1]).all()
    np.testing.assert_allclose(sums[0, 0], x[:4, :4].sum(), rtol=1e-5)


def test_multiple_outputs_and_row_reductions(device):
    x = np.random.default_rng(2).standard_normal((37, 16)).astype(np.float32)

    def kernel(x_ref, sum_ref, max_ref):
        t = x_ref[...]
        sum_ref[...] = wp.tile_sum(t, axis=1)
        max_ref[...] = wp.tile_max(t, axis=1)

    spec_in = pl.BlockSpec((8, 16), lambda i: (i, 0))
    spec_out = pl.BlockSpec((8,), lambda i: (i,))
    s, m = pl.pallas_call(kernel, out_shape=(pl.ShapeDtypeStruct((37,), np.float32),
                                             pl.ShapeDtypeStruct((37,), np.float32)),
                          grid=(5,), in_specs=[spec_in], out_specs=[spec_out, spec_out])(arr(x, device))
    np.testing.assert_allclose(s.numpy(), x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m.numpy(), x.max(1))


def test_masks_dynamic_slices_and_num_programs(device):
    x = np.random.default_rng(3).standard_normal(40).astype(np.float32)

    def kernel(x_ref, o_ref):
        idx = wp.tile_arange(8, dtype=int)
        first = pl.load(x_ref, (pl.ds(0, 8),), mask=idx < 5, other=-1.0)  # idx >= 5 read as -1
        pl.store(o_ref, (pl.ds(0, 8),), first * 2.0, mask=idx > 1)  # elements 0 and 1 keep 0
        i = pl.program_id(0)
        half = x_ref[pl.ds(i % 2, 4)]  # a run-time start inside the block
        o_ref[pl.ds(8, 4)] = half + wp.float32(pl.num_programs(0))
        o_ref[15] = wp.float32(pl.program_id(i - i))  # an axis known only at run time

    out = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((48,), np.float32), grid=(3,),
                         in_specs=[pl.BlockSpec((16,), lambda i: (i,))],
                         out_specs=pl.BlockSpec((16,), lambda i: (i,)))(arr(x, device)).numpy().reshape(3, 16)
    xb = np.concatenate([x, np.zeros(8)]).reshape(3, 16)
    for i in range(3):
        want = np.zeros(16)
        first = np.where(np.arange(8) < 5, xb[i, :8], -1.0) * 2
        want[2:8] = first[2:]
        want[8:12] = xb[i, i % 2:i % 2 + 4] + 3
        want[15] = i
        np.testing.assert_allclose(out[i], want, rtol=1e-6)


def test_sequential_axis_accumulates_deterministically(device):
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((70, 64)).astype(np.float32), rng.standard_normal((64, 50)).astype(np.float32)

    def kernel(x_ref, y_ref, z_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            z_ref[...] = wp.tile_zeros(z_ref.shape, dtype=z_ref.dtype)

        z_ref[...] += x_ref[...] @ y_ref[...]

    f = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((70, 50), np.float32), grid=(5, 4, 8),
                       in_specs=[pl.BlockSpec((16, 8), lambda i, j, k: (i, k)),
                                 pl.BlockSpec((8, 16), lambda i, j, k: (k, j))],
                       out_specs=pl.BlockSpec((16, 16), lambda i, j, k: (i, j)))
    a, b = f(arr(x, device), arr(y, device)).numpy(), f(arr(x, device), arr(y, device)).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("nk", [1, 2, 3, 5])
def test_first_and_last_iterations_of_a_sequential_axis(nk, device):
    """pl.when on the K axis's first and last programs (the body is lowered three times: the first
    iteration, the loop between, the last), and a plain `if` on it too."""
    rng = np.random.default_rng(nk)
    x, y = rng.standard_normal((16, 4 * nk)).astype(np.float32), rng.standard_normal((4 * nk, 8)).astype(np.float32)

    def kernel(x_ref, y_ref, z_ref, count_ref):
        k = pl.program_id(1)

        @pl.when(k == 0)
        def _():
            z_ref[...] = wp.tile_full(z_ref.shape, 1.0, dtype=wp.float32)
            count_ref[0] = 0

        z_ref[...] += x_ref[...] @ y_ref[...]
        if k > 0:
            count_ref[0] = count_ref[0] + 1

        @pl.when((k == pl.num_programs(1) - 1) & (k >= 0))
        def _():
            z_ref[...] = wp.max(z_ref[...], 0.0)

    z, count = pl.pallas_call(kernel, out_shape=(pl.ShapeDtypeStruct((16, 8), np.float32),
                                                 pl.ShapeDtypeStruct((1,), np.int32)), grid=(2, nk),
                              in_specs=[pl.BlockSpec((8, 4), lambda i, k: (i, k)), pl.BlockSpec((4, 8), lambda i, k: (k, 0))],
                              out_specs=[pl.BlockSpec((8, 8), lambda i, k: (i, 0)), pl.BlockSpec((1,), lambda i, k: (0,))]
                              )(arr(x, device), arr(y, device))
    np.testing.assert_allclose(z.numpy(), np.maximum(1 + x.astype(np.float64) @ y, 0), rtol=1e-4, atol=1e-4)
    assert count.numpy()[0] == nk - 1


class _DLPackOnly:
    """An object offering its memory only through the DLPack protocol (as torch or CuPy do)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_inputs_are_views():
    x = np.arange(32, dtype=np.float32)

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0

    f = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((32,), np.float32), grid=(4,),
                       in_specs=[pl.BlockSpec((8,), lambda i: (i,))], out_specs=pl.BlockSpec((8,), lambda i: (i,)))
    src = _DLPackOnly(x)
    np.testing.assert_array_equal(f(src).numpy(), x + 1)
    x[:] = 5.0  # no copy was taken: the next call sees the new values
    np.testing.assert_array_equal(f(src).numpy(), np.full(32, 6.0))


def test_torch_tensors_in_and_numpy(device):
    torch = pytest.importorskip("torch")
    dev = "cuda" if device.startswith("cuda") else "cpu"
    t = torch.arange(16, dtype=torch.float32, device=dev)

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * y_ref[...]

    out = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((16,), np.float32))(t, t)
    assert str(out.device) == device
    np.testing.assert_array_equal(out.numpy(), np.arange(16) ** 2)


def softmax_call(shape, block_rows):
    n = shape[1]

    def kernel(x_ref, o_ref):
        x = x_ref[...]
        m = wp.tile_broadcast(wp.tile_reshape(wp.tile_max(x, axis=1), (block_rows, 1)), (block_rows, n))
        e = wp.exp(x - m)
        s = wp.tile_broadcast(wp.tile_reshape(wp.tile_sum(e, axis=1), (block_rows, 1)), (block_rows, n))
        o_ref[...] = e / s

    spec = pl.BlockSpec((block_rows, n), lambda i: (i, 0))
    return pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct(shape, np.float64),
                          grid=(pl.cdiv(shape[0], block_rows),), in_specs=[spec], out_specs=spec)


def fd_check(f, inputs, device, coords=6, eps=1e-6):
    """The Tape gradient of sum(w * f(inputs)) against central differences at random coordinates."""
    rng = np.random.default_rng(7)
    arrays = [arr(x, device, requires_grad=True) for x in inputs]
    tape = wp.Tape()
    with tape:
        out = f(*arrays)
    w = rng.standard_normal(out.shape)
    tape.backward(grads={out: arr(w, device)})
    for k, x in enumerate(inputs):
        grad = arrays[k].grad.numpy()
        for _ in range(coords):
            idx = tuple(rng.integers(0, s) for s in x.shape)
            plus, minus = [x.copy() for x in inputs], [x.copy() for x in inputs]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            fp = (w * f(*[arr(v, device) for v in plus]).numpy()).sum()
            fm = (w * f(*[arr(v, device) for v in minus]).numpy()).sum()
            np.testing.assert_allclose(grad[idx], (fp - fm) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_softmax_gradient(device):
    x = np.random.default_rng(8).standard_normal((10, 16))
    f = softmax_call(x.shape, 4)
    y = f(arr(x, device)).numpy()
    want = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, want / want.sum(1, keepdims=True), rtol=1e-12)
    fd_check(f, [x], device)


def test_matmul_gradient_over_a_sequential_axis(device):
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((20, 16)), rng.standard_normal((16, 12))

    def kernel(x_ref, y_ref, z_ref):
        z_ref[...] += x_ref[...] @ y_ref[...]

    f = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((20, 12), np.float64), grid=(3, 2, 4),
                       in_specs=[pl.BlockSpec((8, 4), lambda i, j, k: (i, k)),
                                 pl.BlockSpec((4, 8), lambda i, j, k: (k, j))],
                       out_specs=pl.BlockSpec((8, 8), lambda i, j, k: (i, j)))
    np.testing.assert_allclose(f(arr(x, device), arr(y, device)).numpy(), x @ y, rtol=1e-12)
    fd_check(f, [x, y], device)


def test_debug_prints_the_tile_kernel(capsys):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((8,), np.float32), debug=True)(np.zeros(8, np.float32))
    text = capsys.readouterr().out
    assert "@wp.kernel" in text and "tile_store(_blk_o_ref, _blk_acc_o_ref" in text


# ---- bad input ----------------------------------------------------------------------------------


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def test_bad_specs_name_the_argument():
    x = np.zeros((8, 8), np.float32)
    out = pl.ShapeDtypeStruct((8, 8), np.float32)
    cases = [
        (dict(in_specs=[pl.BlockSpec((4, 4), lambda i: (i, 0))], grid=(2, 2)), pl.IndexMapError, "in_specs[0]"),
        (dict(in_specs=[pl.BlockSpec((4, 4), lambda i, j: (i,))], grid=(2, 2)), pl.BlockSpecError,
         "returns 1 block index(es) for a 2-d array"),
        (dict(in_specs=[pl.BlockSpec((4,), lambda i, j: (i,))], grid=(2, 2)), pl.BlockSpecError,
         "block shape (4,) has 1 dimension(s)"),
        (dict(in_specs=[pl.BlockSpec((4, 4), lambda i, j: (i + 2, j))], grid=(2, 2)), pl.BlockSpecError,
         "no element of the block is inside the array"),
        (dict(in_specs=[pl.BlockSpec((4, 4), lambda i, j: (min(i, 1), j))], grid=(2, 2)), pl.IndexMapError,
         "+ - * // %"),
        (dict(in_specs=[None, None], grid=(2,)), pl.BlockSpecError, "2 spec(s) for 1 operand(s)"),
        (dict(grid=(2, -1)), pl.BlockSpecError, "grid"),
    ]
    for kw, error, text in cases:
        with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                           .replace("]", r"\]").replace("+", r"\+").replace("*", r"\*")):
            pl.pallas_call(_copy, out_shape=out, **kw)(x)


def test_bad_kernels_name_the_line():
    x = np.zeros(8, np.float32)
    out = pl.ShapeDtypeStruct((8,), np.float32)

    def writes_input(x_ref, o_ref):
        x_ref[...] = o_ref[...]

    def ref_as_value(x_ref, o_ref):
        o_ref[...] = x_ref + 1.0

    def wrong_dtype(x_ref, o_ref):
        o_ref[...] = wp.tile_astype(x_ref[...], wp.float64)

    def wrong_shape(x_ref, o_ref):
        o_ref[...] = x_ref[pl.ds(0, 4)]

    def nested_def(x_ref, o_ref):
        def helper():
            pass
        o_ref[...] = x_ref[...]

    def bad_axis(x_ref, o_ref):
        o_ref[...] = x_ref[...] + wp.float32(pl.program_id(3))

    cases = [(writes_input, KernelTypeError, "is an input"), (ref_as_value, KernelTypeError, r"read it with x_ref\[...\]"),
             (wrong_dtype, KernelTypeError, "holds float32, got a tile of float64"),
             (wrong_shape, KernelTypeError, r"shape \(4,\) into a part of 'o_ref' of shape \(8,\)"),
             (nested_def, KernelSyntaxError, "functions cannot be defined"),
             (bad_axis, KernelTypeError, "has 1 axes")]
    for fn, error, text in cases:
        with pytest.raises(error, match=text) as info:
            pl.pallas_call(fn, out_shape=out, grid=(1,))(x)
        assert "test_pallas.py:" in str(info.value)
    with pytest.raises(TypeError, match="must take 2 positional parameter"):
        pl.pallas_call(lambda x_ref: None, out_shape=out)(x)
    with pytest.raises(RuntimeError, match="only be used inside a pallas_call kernel"):
        pl.program_id(0)


def test_outputs_need_grad_only_when_inputs_do():
    x = np.ones(8, np.float32)
    f = pl.pallas_call(_copy, out_shape=pl.ShapeDtypeStruct((8,), np.float32))
    assert not f(arr(x, "cpu")).requires_grad
    assert f(arr(x, "cpu", requires_grad=True)).requires_grad
