"""Bad input to tile code: each a typed error at the user's line (or naming the launch argument),
never a hang or a wrong answer."""
import numpy as np
import pytest

import tilewarp as wp
from conftest import check_located

N = 8


@wp.kernel
def shapes_differ(a: wp.array(dtype=float)):
    x = wp.tile_load(a, shape=8)
    y = wp.tile_load(a, shape=4)
    wp.tile_store(a, x + y)  # <- error


@wp.kernel
def shape_not_constant(a: wp.array(dtype=float), n: int):
    t = wp.tile_zeros(shape=n, dtype=float)  # <- error
    wp.tile_store(a, t)


@wp.kernel
def untile_wrong_shape(a: wp.array(dtype=float)):
    i = wp.tid()
    t = wp.tile_zeros(shape=5, dtype=float)
    a[i] = wp.untile(t)  # <- error


@wp.kernel
def tile_op_in_lane_branch(a: wp.array(dtype=float)):
    i = wp.tid()
    if a[i] > 0.0:
        t = wp.tile_load(a, shape=N)  # <- error
        wp.tile_store(a, t)


@wp.kernel
def matmul_shapes(a: wp.array2d(dtype=float)):
    x = wp.tile_load(a, shape=(4, 3))
    y = wp.tile_load(a, shape=(4, 3))
    wp.tile_store(a, wp.tile_matmul(x, y))  # <- error


@wp.kernel
def store_wrong_dtype(a: wp.array(dtype=wp.float64)):
    t = wp.tile_zeros(shape=4, dtype=float)
    wp.tile_store(a, t)  # <- error


@wp.kernel
def bad_axis(a: wp.array2d(dtype=float), b: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=(2, 2))
    wp.tile_store(b, wp.tile_sum(t, axis=2))  # <- error


@wp.kernel
def bad_storage(a: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=4, storage="global")  # <- error
    wp.tile_store(a, t)


def test_tile_shapes_must_match():
    check_located(shapes_differ, wp.KernelTypeError, "tile shapes must match", inputs=[wp.zeros(8, dtype=float)])


def test_tile_shape_must_be_a_constant():
    check_located(shape_not_constant, wp.KernelTypeError, "compile-time constant",
                  inputs=[wp.zeros(8, dtype=float), 8])


def test_untile_needs_a_block_wide_tile():
    check_located(untile_wrong_shape, wp.KernelTypeError, "block size", inputs=[wp.zeros(8, dtype=float)])


def test_tile_op_inside_control_flow_that_differs_between_lanes():
    check_located(tile_op_in_lane_branch, wp.KernelTypeError, "every lane must reach",
                  inputs=[wp.zeros(8, dtype=float)])


def test_matmul_shapes():
    check_located(matmul_shapes, wp.KernelTypeError, "cannot multiply tiles of shapes (4, 3) and (4, 3)",
                  inputs=[wp.zeros((4, 3), dtype=float)])


def test_store_of_another_dtype():
    check_located(store_wrong_dtype, wp.KernelTypeError, "cannot store a tile of float32",
                  inputs=[wp.zeros(4, dtype=wp.float64)])


def test_reduction_axis_out_of_range():
    check_located(bad_axis, wp.KernelTypeError, "axis 2 is out of range",
                  inputs=[wp.zeros((2, 2), dtype=float), wp.zeros(2, dtype=float)])


def test_storage_must_be_register_or_shared():
    check_located(bad_storage, wp.KernelTypeError, "'register' or 'shared'", inputs=[wp.zeros(4, dtype=float)])


@wp.kernel
def huge(a: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(640, 640), storage="shared")
    wp.tile_store(a, t)


def test_too_much_shared_memory_is_refused_before_launching():
    a = wp.zeros((4, 4), dtype=float)
    with pytest.raises(wp.LaunchError, match=r"kernel '.*huge' needs 1638400 bytes .* limit is 1048576"):
        wp.launch_tiled(huge, dim=[1], inputs=[a], block_dim=32, device="cpu")


@wp.kernel
def small(a: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=4)
    wp.tile_store(a, t * 2.0)


@pytest.mark.parametrize("block_dim", [2000, 1.5])
def test_block_dim_must_be_a_small_int(block_dim):
    a = wp.array(np.ones(4, dtype=np.float32))
    with pytest.raises(wp.LaunchError, match="block_dim must be an int from 1 to 1024"):
        wp.launch_tiled(small, dim=[1], inputs=[a], block_dim=block_dim, device="cpu")
    np.testing.assert_array_equal(a.numpy(), np.ones(4))  # nothing ran


def test_launch_tiled_dim_rank():
    a = wp.zeros(4, dtype=float)
    with pytest.raises(wp.LaunchError, match="1 to 3 dimensions"):
        wp.launch_tiled(small, dim=[1, 1, 1, 1], inputs=[a], block_dim=8, device="cpu")


@wp.kernel
def arange_too_big_for_int32(a: wp.array(dtype=int)):
    wp.tile_store(a, wp.tile_arange(0, 1099511627776, dtype=int))  # <- error


@wp.kernel
def arange_fractional_int(a: wp.array(dtype=int)):
    wp.tile_store(a, wp.tile_arange(0.0, 3.5, dtype=int))  # <- error


@wp.kernel
def arange_overflows_float32(a: wp.array(dtype=float)):
    wp.tile_store(a, wp.tile_arange(0.0, 1.0e300, dtype=float))  # <- error


@wp.kernel
def arange_bool(a: wp.array(dtype=bool)):
    wp.tile_store(a, wp.tile_arange(4, dtype=bool))  # <- error


@wp.kernel
def arange_uncountable(a: wp.array(dtype=wp.float64)):
    wp.tile_store(a, wp.tile_arange(0.0, 1.0, 5.0e-324, dtype=wp.float64))  # <- error


@wp.kernel
def arange_integer_too_wide(a: wp.array(dtype=float)):
    wp.tile_store(a, wp.tile_arange(0, 1180591620717411303424, 18446744073709551616, dtype=float))  # <- error


@pytest.mark.parametrize("kernel, dtype, fragment", [
    (arange_too_big_for_int32, int, "stop=1099511627776 is out of range for int32"),
    (arange_fractional_int, int, "stop=3.5 has a fractional part"),
    (arange_overflows_float32, float, "stop=1e+300 is out of range for float32"),
    (arange_bool, bool, "requires a numeric scalar dtype"),
    (arange_uncountable, wp.float64, "spans more elements than can be counted"),
    (arange_integer_too_wide, float, "stop=1180591620717411303424 is too wide to use as an integer bound"),
])
def test_tile_arange_bounds_are_checked_at_compile_time(kernel, dtype, fragment):
    check_located(kernel, wp.KernelTypeError, fragment, inputs=[wp.zeros(4, dtype=dtype)])


@wp.kernel
def push_float_onto_int_stack(a: wp.array(dtype=int)):
    s = wp.tile_stack(capacity=4, dtype=int)
    wp.tile_stack_push(s, 1.5, True)  # <- error


@wp.kernel
def atomic_add_bools(a: wp.array(dtype=bool)):
    wp.tile_atomic_add(a, wp.tile_load(a, shape=4))  # <- error


@wp.struct
class Pair:
    x: int
    y: float


@wp.kernel
def and_of_structs(a: wp.array(dtype=Pair)):
    t = wp.tile_load(a, shape=4)
    t &= t  # <- error
    wp.tile_store(a, t)


def test_stack_push_of_another_type():
    check_located(push_float_onto_int_stack, wp.KernelTypeError, "float32 does not match", "element type int32",
                  inputs=[wp.zeros(4, dtype=int)])


def test_tile_atomic_add_of_bools():
    check_located(atomic_add_bools, wp.KernelTypeError, "only supports tiles of 32- and 64-bit", "got bool",
                  inputs=[wp.zeros(4, dtype=bool)])


def test_bitwise_update_of_struct_tiles():
    check_located(and_of_structs, wp.KernelTypeError, "bitwise inplace &= is not defined for a Warp struct",
                  inputs=[wp.zeros(4, dtype=Pair)])


@wp.kernel
def squeeze_axis_out_of_bounds(a: wp.array(dtype=float)):
    t = wp.tile_zeros(shape=(1, 4, 1), dtype=float)
    wp.tile_store(a, wp.tile_squeeze(t, axis=(-4,)))  # <- error


@wp.kernel
def broadcast_to_five_dims(a: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=1)
    u = wp.tile_broadcast(t, shape=(1, 1, 1, 1, 1))  # <- error


@pytest.mark.parametrize("kernel, fragment", [
    (squeeze_axis_out_of_bounds, "tile_squeeze() axis -4 is out of bounds for tile with 3 dimensions"),
    (broadcast_to_five_dims, "tile_broadcast() output must have between one and four dimensions, got 5"),
])
def test_constant_out_of_range_is_a_value_error(kernel, fragment):
    check_located(kernel, wp.KernelValueError, fragment, inputs=[wp.zeros(4, dtype=float)])
    assert issubclass(wp.KernelValueError, ValueError) and issubclass(wp.KernelValueError, RuntimeError)


@wp.kernel
def ones_of_structs(a: wp.array(dtype=Pair)):
    wp.tile_store(a, wp.tile_ones(shape=4, dtype=Pair))  # <- error


@wp.kernel
def min_of_structs(a: wp.array(dtype=Pair)):
    wp.tile_store(a, wp.tile_min(wp.tile_load(a, shape=4)))  # <- error


@wp.kernel
def reduce_max_of_structs(a: wp.array(dtype=Pair)):
    wp.tile_store(a, wp.tile_reduce(wp.max, wp.tile_load(a, shape=4)))  # <- error


@pytest.mark.parametrize("kernel, fragment", [
    (ones_of_structs, "tile_ones(): Pair is a Warp struct, which has no value for one"),
    (min_of_structs, "tile_min(): needs a tile of scalars, got Pair (a Warp struct"),
    (reduce_max_of_structs, "tile_reduce(): no overload of max() takes elements of Pair, a Warp struct"),
])
def test_struct_tiles_have_no_one_and_no_order(kernel, fragment):
    check_located(kernel, wp.KernelTypeError, fragment, inputs=[wp.zeros(4, dtype=Pair)])


@wp.func
def early_return(t: wp.tile[float, 4]):
    if t[0] > 0.0:
        return t  # <- error
    return t * 2.0


@wp.kernel
def calls_early_return(a: wp.array(dtype=float)):
    wp.tile_store(a, early_return(wp.tile_load(a, shape=4)))


def test_tile_function_returns_only_at_its_end():
    # tile functions are inlined: a return before the end is refused at that line
    import inspect

    lines, first = inspect.getsourcelines(early_return.fn)
    line = first + next(k for k, text in enumerate(lines) if "# <- error" in text)
    with pytest.raises(wp.KernelSyntaxError, match="a tile function may only return at its end") as info:
        wp.launch_tiled(calls_early_return, dim=[1], inputs=[wp.ones(4, dtype=float)], block_dim=4, device="cpu")
    assert info.value.loc.line == line
