"""tile_arange's length and values: bounds rounded once to the output type, the count from the
quotient in that type, checked against NumPy with sentinels past each range."""
import numpy as np

import tilewarp as wp

BIG_START = wp.constant(wp.int64(2**54))
BIG_STOP = wp.constant(wp.int64(2**54 + 3 * 2**30 - 1))  # float64 would round it twice
BIG_STEP = wp.constant(wp.int64(2**31))
WIDTH = 10


@wp.kernel
def ranges(out: wp.array2d(dtype=float), iout: wp.array2d(dtype=int)):
    wp.tile_store(out[0], wp.tile_arange(0.0, 0.3, 0.1, dtype=float))
    wp.tile_store(out[1], wp.tile_arange(0.0, 2.0, 0.3, dtype=float))
    wp.tile_store(out[2], wp.tile_arange(0.3, dtype=float))
    wp.tile_store(out[3], wp.tile_arange(-3.0e38, 3.0e38, 3.0e38, dtype=float))
    wp.tile_store(out[4], wp.tile_arange(BIG_START, BIG_STOP, BIG_STEP, dtype=float))
    wp.tile_store(iout[0], wp.tile_arange(10, 0, -3, dtype=int))
    wp.tile_store(iout[1], wp.tile_arange(0, 9, 3, dtype=int))


def test_tile_arange_counts_and_values(device):
    rng = np.random.default_rng(7)
    sentinel = rng.uniform(-9, -5)
    out = wp.array(np.full((5, WIDTH), sentinel, dtype=np.float32), device=device)
    iout = wp.array(np.full((2, WIDTH), -1, dtype=np.int32), device=device)
    wp.launch_tiled(ranges, dim=[1], inputs=[out, iout], block_dim=16, device=device)
    f32 = np.float32
    expected = [np.arange(0, 3, dtype=f32) * f32(0.1), np.arange(7, dtype=f32) * f32(0.3), np.zeros(1, f32),
                np.array([-3.0e38, 0.0], f32), np.array([2.0**54], f32)]
    for row, want in zip(out.numpy(), expected):
        np.testing.assert_allclose(row[:len(want)], want, rtol=1e-6, atol=1e-30)
        np.testing.assert_array_equal(row[len(want):], f32(sentinel))  # no element past the range
    for row, want in zip(iout.numpy(), [np.arange(10, 0, -3), np.arange(0, 9, 3)]):
        np.testing.assert_array_equal(row[:len(want)], want)
        np.testing.assert_array_equal(row[len(want):], -1)
