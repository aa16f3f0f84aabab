"""The Pallas documents' programs (seeds 000 and 004), with tilewarp ops in the bodies, and the
outputs those documents print."""
from functools import partial

import numpy as np
import pytest

import tilewarp as wp
from tilewarp import pallas as pl


def arr(a, device):
    return wp.array(np.asarray(a), device=device)


def test_vector_add_whole_array(device):
    def add_kernel(x_ref, y_ref, o_ref):  # x_ref, y_ref and o_ref are (8,)-shaped refs
        x = x_ref[:]
        y = y_ref[:]
        o_ref[:] = x + y

    x, y = np.arange(8, dtype=np.int32), np.arange(8, 16, dtype=np.int32)
    add = pl.pallas_call(add_kernel, out_shape=pl.ShapeDtypeStruct((8,), wp.int32))
    out = add(arr(x, device), arr(y, device))
    assert out.dtype is wp.int32 and str(out.device) == device
    np.testing.assert_array_equal(out.numpy(), x + y)


def test_vector_add_in_blocks_old_blockspec_order(device):
    def add_kernel(x_ref, y_ref, o_ref):  # (2,)-shaped refs
        o_ref[:] = x_ref[:] + y_ref[:]

    x, y = np.arange(8, dtype=np.int32), np.arange(8, 16, dtype=np.int32)
    add = pl.pallas_call(add_kernel, out_shape=pl.ShapeDtypeStruct((8,), np.int32),
                         in_specs=[pl.BlockSpec(lambda i: i, (2,)), pl.BlockSpec(lambda i: i, (2,))],
                         out_specs=pl.BlockSpec(lambda i: i, (2,)), grid=(4,))
    np.testing.assert_array_equal(add(arr(x, device), arr(y, device)).numpy(), [8, 10, 12, 14, 16, 18, 20, 22])


def test_add_vectors_ellipsis(device):
    def add_vectors_kernel(x_ref, y_ref, o_ref):
        x, y = x_ref[...], y_ref[...]
        o_ref[...] = x + y

    x = np.arange(8, dtype=np.int32)
    out = pl.pallas_call(add_vectors_kernel, out_shape=pl.ShapeDtypeStruct(x.shape, x.dtype))(arr(x, device),
                                                                                             arr(x, device))
    np.testing.assert_array_equal(out.numpy(), 2 * x)


def test_iota(device):
    def iota_kernel(o_ref):
        i = pl.program_id(0)
        o_ref[i] = i

    def iota(size, **kw):
        return pl.pallas_call(iota_kernel, out_shape=pl.ShapeDtypeStruct((size,), np.int32), grid=(size,), **kw)()

    np.testing.assert_array_equal(iota(8, interpret=True).numpy(), np.arange(8))
    with wp.ScopedDevice(device):
        np.testing.assert_array_equal(iota(8).numpy(), np.arange(8))


def show_program_ids(x_shape, block_shape, grid, index_map=lambda i, j: (i, j), indexing_mode=pl.Blocked(),
                     **kw):
    def program_ids_kernel(o_ref):  # fill the output block with the digits of the program ids
        axes = 0
        for axis in range(len(grid)):
            axes += pl.program_id(axis) * 10**(len(grid) - 1 - axis)
        o_ref[...] = wp.tile_full(o_ref.shape, axes, dtype=o_ref.dtype)

    res = pl.pallas_call(program_ids_kernel, out_shape=pl.ShapeDtypeStruct(x_shape, dtype=np.int32), grid=grid,
                         in_specs=[], out_specs=pl.BlockSpec(block_shape, index_map, indexing_mode=indexing_mode),
                         **kw)()
    return res.numpy()


SHOW = [  # (arguments, the output printed in the document)
    (dict(x_shape=(8, 6), block_shape=(2, 3), grid=(4, 2)),
     [[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1], [10, 10, 10, 11, 11, 11], [10, 10, 10, 11, 11, 11],
      [20, 20, 20, 21, 21, 21], [20, 20, 20, 21, 21, 21], [30, 30, 30, 31, 31, 31], [30, 30, 30, 31, 31, 31]]),
    (dict(x_shape=(7, 5), block_shape=(2, 3), grid=(4, 2)),  # out of bounds
     [[0, 0, 0, 1, 1], [0, 0, 0, 1, 1], [10, 10, 10, 11, 11], [10, 10, 10, 11, 11], [20, 20, 20, 21, 21],
      [20, 20, 20, 21, 21], [30, 30, 30, 31, 31]]),
    (dict(x_shape=(1, 2), block_shape=(2, 3), grid=(1, 1)), [[0, 0]]),  # the array smaller than a block
    (dict(x_shape=(8, 6), block_shape=(2, 3), grid=(4, 2, 10), index_map=lambda i, j, k: (i, j)),  # sequential k
     [[9, 9, 9, 19, 19, 19], [9, 9, 9, 19, 19, 19], [109, 109, 109, 119, 119, 119], [109, 109, 109, 119, 119, 119],
      [209, 209, 209, 219, 219, 219], [209, 209, 209, 219, 219, 219], [309, 309, 309, 319, 319, 319],
      [309, 309, 309, 319, 319, 319]]),
    (dict(x_shape=(4, 4), block_shape=None, grid=(2, 3), index_map=None), [[12] * 4] * 4),
    (dict(x_shape=(4, 4), block_shape=(4, 4), grid=(2, 3), index_map=None), [[12] * 4] * 4),
    (dict(x_shape=(8, 6), block_shape=(2, 3), grid=(4, 2), index_map=lambda i, j: (2 * i, 3 * j),
          indexing_mode=pl.Unblocked()),
     [[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1], [10, 10, 10, 11, 11, 11], [10, 10, 10, 11, 11, 11],
      [20, 20, 20, 21, 21, 21], [20, 20, 20, 21, 21, 21], [30, 30, 30, 31, 31, 31], [30, 30, 30, 31, 31, 31]]),
    (dict(x_shape=(7, 7), block_shape=(2, 3), grid=(4, 3), index_map=lambda i, j: (2 * i, 3 * j),
          indexing_mode=pl.Unblocked(((1, 0), (2, 0)))),
     [[0, 1, 1, 1, 2, 2, 2], [10, 11, 11, 11, 12, 12, 12], [10, 11, 11, 11, 12, 12, 12], [20, 21, 21, 21, 22, 22, 22],
      [20, 21, 21, 21, 22, 22, 22], [30, 31, 31, 31, 32, 32, 32], [30, 31, 31, 31, 32, 32, 32]]),
]


@pytest.mark.parametrize("case", range(len(SHOW)))
def test_show_program_ids(case, device):
    args, expected = SHOW[case]
    np.testing.assert_array_equal(show_program_ids(**args, interpret=True), expected)  # the document's mode
    with wp.ScopedDevice(device):
        np.testing.assert_array_equal(show_program_ids(**args), expected)


def test_squeezed_block_dimension(device):
    def kernel(o_ref):
        assert o_ref.shape == (2,)
        o_ref[...] = wp.tile_full((2,), 10 * pl.program_id(1) + pl.program_id(0), dtype=wp.int32)

    out = pl.pallas_call(kernel, pl.ShapeDtypeStruct((3, 4), dtype=np.int32),
                         out_specs=pl.BlockSpec((None, 2), lambda i, j: (i, j)), grid=(3, 2))
    with wp.ScopedDevice(device):
        np.testing.assert_array_equal(out().numpy(), [[0, 0, 10, 10], [1, 1, 11, 11], [2, 2, 12, 12]])


@wp.func
def relu(x: float):
    return wp.max(x, 0.0)


def matmul_kernel(x_ref, y_ref, o_ref, *, activation, block_k):
    acc = wp.tile_zeros((x_ref.shape[0], y_ref.shape[1]), dtype=wp.float32)
    for k in range(x_ref.shape[1] // block_k):
        x = x_ref[:, k * block_k:(k + 1) * block_k]
        y = y_ref[k * block_k:(k + 1) * block_k, :]
        acc += x @ y
    o_ref[:, :] = activation(acc)


def test_fused_matmul_with_activation(device):
    """The design note's matmul: whole K strips per block, a K loop in the body, an activation."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((96, 64)).astype(np.float32), rng.standard_normal((64, 80)).astype(np.float32)
    bm, bn, bk = 32, 16, 16
    fused = pl.pallas_call(partial(matmul_kernel, block_k=bk, activation=relu),
                           out_shape=pl.ShapeDtypeStruct((x.shape[0], y.shape[1]), np.float32),
                           in_specs=[pl.BlockSpec(lambda i, j: (i, 0), (bm, x.shape[1])),
                                     pl.BlockSpec(lambda i, j: (0, j), (y.shape[0], bn))],
                           out_specs=pl.BlockSpec(lambda i, j: (i, j), (bm, bn)), grid=(3, 5))
    z = fused(arr(x, device), arr(y, device)).numpy()
    np.testing.assert_allclose(z, np.maximum(x.astype(np.float64) @ y, 0), rtol=1e-4, atol=1e-4)


def test_blockspec_matmul_halves(device):
    def kernel(x_ref, y_ref, z_ref):
        z_ref[...] = x_ref[...] @ y_ref[...]

    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((64, 64)).astype(np.float32), rng.standard_normal((64, 64)).astype(np.float32)
    z = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((64, 64), np.float32), grid=(2, 2),
                       in_specs=[pl.BlockSpec(lambda i, j: (i, 0), (32, 64)), pl.BlockSpec(lambda i, j: (0, j), (64, 32))],
                       out_specs=pl.BlockSpec(lambda i, j: (i, j), (32, 32)))(arr(x, device), arr(y, device))
    np.testing.assert_allclose(z.numpy(), x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)


def test_exp_of_program_row(device):
    def f(x_ref, o_ref):
        i = pl.program_id(axis=0)
        o_ref[i] = wp.exp(x_ref[i])

    x = np.random.default_rng(5).standard_normal(6).astype(np.float32)
    out = pl.pallas_call(f, out_shape=pl.ShapeDtypeStruct((6,), np.float32), grid=(6,))(arr(x, device))
    np.testing.assert_allclose(out.numpy(), np.exp(x), rtol=1e-6)


def test_scalar_operands_and_make_kernel():
    """The design note's ``make_kernel``: 0-d refs read with ``pl.load(ref, ())``."""
    def make_kernel(eltwise_kernel):
        def add(x_ref, y_ref, o_ref):
            x = pl.load(x_ref, ())
            y = pl.load(y_ref, ())
            pl.store(o_ref, (), eltwise_kernel(x + y))
        return add

    @wp.func
    def times2(v: float):
        return v * 2.0

    k1 = pl.pallas_call(make_kernel(times2), out_shape=pl.ShapeDtypeStruct((), np.float32), grid=1)
    k2 = pl.pallas_call(make_kernel(wp.exp), out_shape=pl.ShapeDtypeStruct((), np.float32), grid=1)
    assert float(k1(1.0, 1.5).numpy().reshape(-1)[0]) == 5.0
    np.testing.assert_allclose(k2(1.0, 1.0).numpy().reshape(-1)[0], np.exp(2.0), rtol=1e-6)
