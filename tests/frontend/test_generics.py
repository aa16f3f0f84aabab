"""Generic kernels and functions (``typing.Any``, ``wp.Float``/``wp.Int``/``wp.Scalar``, arrays, vectors and
matrices of them) and ``wp.overload``, differential against Warp on CPU.

A generic kernel is specialised at launch from its arguments (Python int/float are int32/float32, as in
Warp); each distinct set of types has its own IR, symbol and binary. Bad launches are LaunchErrors,
bad ``wp.overload`` calls KernelTypeErrors located at the kernel.
"""
import os
from typing import Any

import numpy as np
import pytest
from conftest import Arr, Val, launch_both, load_both

import tilewarp as wp
from tilewarp import KernelSyntaxError, KernelTypeError, LaunchError

SRC = '''
from __future__ import annotations

from typing import Any

import WP as wp


@wp.kernel
def scale(x: wp.array(dtype=Any), s: Any):
    i = wp.tid()
    x[i] = s * x[i]


@wp.func
def sq_norm(v: wp.types.vector(length=Any, dtype=wp.Float)):
    return wp.dot(v, v)


@wp.func
def total(v: wp.types.vector(length=Any, dtype=wp.Scalar)):
    s = v[0]
    for k in range(1, len(v)):
        s += v[k]
    return s


@wp.func
def diag_sum(m: wp.types.matrix(shape=(Any, Any), dtype=wp.Float)):
    s = m[0, 0]
    for k in range(1, len(m)):
        s += m[k, k]
    return s


@wp.func
def twice(x: Any):
    return x + x


@wp.func
def magnitude(x: wp.Int):
    return wp.abs(x)


@wp.func
def magnitude(x: wp.Float):
    return wp.sqrt(x * x)


@wp.kernel
def reduce_vecs(vs: wp.array(dtype=wp.types.vector(length=Any, dtype=wp.Float)), out: wp.array(dtype=Any)):
    i = wp.tid()
    out[i] = sq_norm(vs[i]) + total(vs[i])


@wp.kernel
def reduce_mats(ms: wp.array(dtype=wp.types.matrix(shape=(Any, Any), dtype=wp.Float)),
                out: wp.array(dtype=wp.Float)):
    i = wp.tid()
    out[i] = diag_sum(ms[i]) + twice(ms[i])[0, 0]


@wp.kernel
def scalars(a: wp.array(dtype=wp.Scalar), b: wp.array(dtype=wp.Scalar)):
    i = wp.tid()
    b[i] = twice(a[i]) + magnitude(a[i])


@wp.kernel
def rows(a: wp.array2d(dtype=Any), out: wp.array(dtype=Any)):
    i, j = wp.tid()
    out[i] += a[i, j]


@wp.overload
def scale(x: wp.array(dtype=wp.int16), s: wp.int16):
    ...


scale_f64 = wp.overload(scale, [wp.array(dtype=wp.float64), wp.float64])
scale_f32 = wp.overload(scale, {"x": wp.array(dtype=float), "s": float})
'''


@pytest.fixture(scope="module")
def mods():
    return load_both(SRC)


SCALE_CASES = [  # (array dtype, numpy dtype, the scalar argument)
    ("float16", np.float16, Val("float16", 3.0)),
    ("float32", np.float32, 3.0),
    ("float64", np.float64, Val("float64", -2.5)),
    ("int32", np.int32, 3),
    ("int64", np.int64, Val("int64", -7)),
    ("uint8", np.uint8, Val("uint8", 3)),
    ("int16", np.int16, Val("int16", 5)),
]


@pytest.mark.parametrize("dtype,np_dtype,s", SCALE_CASES, ids=[c[0] for c in SCALE_CASES])
def test_generic_kernel_specialised_per_argument_types(mods, device, rng, dtype, np_dtype, s):
    data = rng.uniform(1, 40, 50).astype(np_dtype)
    got = launch_both(mods, "scale", 50, [Arr(data, dtype), s], device)
    value = s.value if isinstance(s, Val) else s
    want = (data * np.array(value).astype(np_dtype)).astype(np_dtype)
    np.testing.assert_allclose(got[0], want, rtol=1e-3)


def test_one_specialisation_per_signature(mods, device):
    scale = mods[0].scale
    arrays = [wp.ones(4, dtype=t, device=device) for t in (wp.float32, wp.float64, wp.float32)]
    for a, s in zip(arrays, (2.0, wp.float64(2.0), 4.0)):
        wp.launch(scale, 4, inputs=[a, s], device=device)
    np.testing.assert_array_equal(arrays[2].numpy(), 4.0)
    specs = {k: v for k, v in scale._overloads.items() if v._compiled}
    assert len({spec.symbol for spec in specs.values()}) == len(specs) >= 2
    f32 = scale.get_overload([wp.array(dtype=float), wp.float32])
    assert f32 is mods[0].scale_f32 and f32.ir.params[0].type.dtype is wp.float32
    with pytest.raises(KernelTypeError, match="generic kernel scale"):
        scale.ir  # noqa: B018


def test_explicit_overloads(mods, device, rng):
    data = rng.uniform(1, 9, 20)
    tw, ref = mods
    for mod in mods:
        if mod is None:
            continue
        assert mod.wp.overload is not None and mod.scale_f64 is not mod.scale
    a = tw.wp.array(data, dtype=tw.wp.float64, device=device)
    tw.wp.launch(tw.scale_f64, 20, inputs=[a, 2.0], device=device)  # a Python float fills a float64 parameter
    np.testing.assert_allclose(a.numpy(), data * 2.0)
    i16 = rng.integers(-100, 100, 20).astype(np.int16)
    launch_both(mods, "scale", 20, [Arr(i16, "int16"), Val("int16", 3)], device)
    with pytest.raises(LaunchError, match="float64"):
        wp.launch(tw.scale_f64, 20, inputs=[wp.zeros(20, dtype=float, device=device), 2.0], device=device)


@pytest.mark.parametrize("vec,np_dtype,out", [("vec3", np.float32, "float32"), ("vec2d", np.float64, "float64"),
                                              ("vec4", np.float32, "float32")])
def test_generic_vector_functions(mods, device, rng, vec, np_dtype, out):
    n = int(vec[3])
    vs = rng.uniform(-2, 2, (30, n)).astype(np_dtype)
    got = launch_both(mods, "reduce_vecs", 30, [Arr(vs, vec), Arr(np.zeros(30, np_dtype), out)], device)
    np.testing.assert_allclose(got[1], (vs.astype(np.float64) ** 2).sum(1) + vs.sum(1), rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize("mat,np_dtype,shape", [("mat33", np.float32, (3, 3)), ("mat22d", np.float64, (2, 2))])
def test_generic_matrix_functions(mods, device, rng, mat, np_dtype, shape):
    ms = rng.uniform(-2, 2, (30, *shape)).astype(np_dtype)
    got = launch_both(mods, "reduce_mats", 30, [Arr(ms, mat), Arr(np.zeros(30, np_dtype), str(np_dtype.__name__))],
                      device)
    np.testing.assert_allclose(got[1], np.trace(ms, axis1=1, axis2=2) + 2 * ms[:, 0, 0], rtol=1e-5)


@pytest.mark.parametrize("dtype,np_dtype", [("int32", np.int32), ("float64", np.float64), ("int8", np.int8)])
def test_generic_overload_sets(mods, device, rng, dtype, np_dtype):
    """``magnitude`` has a wp.Int and a wp.Float overload: each argument type picks its own."""
    a = rng.uniform(-40, 40, 25).astype(np_dtype)
    got = launch_both(mods, "scalars", 25, [Arr(a, dtype), Arr(np.zeros(25, np_dtype), dtype)], device)
    np.testing.assert_allclose(got[1], (2 * a + np.abs(a)).astype(np_dtype), rtol=1e-12)


def test_generic_2d_arrays(mods, device, rng):
    a = rng.integers(-9, 9, (6, 5)).astype(np.int64)
    got = launch_both(mods, "rows", (6, 5), [Arr(a, "int64"), Arr(np.zeros(6, np.int64), "int64")], device)
    np.testing.assert_array_equal(got[1], a.sum(1))


# ---- bad input --------------------------------------------------------------------------------------

THIS_FILE = os.path.abspath(__file__)


@wp.kernel
def k_any(x: wp.array(dtype=wp.Float), s: wp.Float, n: int):
    i = wp.tid()
    x[i] = s * x[i]


@wp.kernel
def k_plain(x: wp.array(dtype=float)):
    x[0] = 1.0


@wp.kernel
def k_mixed(x: wp.array(dtype=Any), s: Any):
    i = wp.tid()
    x[i] = x[i] * s  # <- error


@pytest.mark.parametrize("inputs,fragment", [
    ([None, 1.0, 1], "cannot infer a kernel type from None"),
    ([wp.zeros(2, dtype=int), 1.0, 1], "expects array(dtype=Float, ndim=1), got array(dtype=int32, ndim=1)"),
    ([wp.zeros(2), 1, 1], "expects Float, got int32"),
    ([wp.zeros(2), "x", 1], "cannot infer a kernel type from str"),
    ([wp.zeros(2), 1.0], "takes 3 argument(s)"),
])
def test_generic_launch_errors(inputs, fragment):
    with pytest.raises(LaunchError) as info:
        wp.launch(k_any, 2, inputs=inputs, device="cpu")
    assert fragment in str(info.value)


def test_type_error_inside_a_specialisation_names_the_line():
    """float64 array times a Python float (float32), as in Warp: an error at the user's line."""
    with pytest.raises(KernelTypeError) as info:
        wp.launch(k_mixed, 2, inputs=[wp.zeros(2, dtype=wp.float64), 2.0], device="cpu")
    lines = open(THIS_FILE).read().splitlines()
    line = next(k + 1 for k, t in enumerate(lines) if "x[i] * s  # <- error" in t)
    assert f"{THIS_FILE}:{line}:" in str(info.value)


def _def_line(kernel):
    import inspect

    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(k for k, t in enumerate(lines) if t.lstrip().startswith("def "))


@pytest.mark.parametrize("kernel,arg_types,fragment", [
    (k_plain, [wp.array(dtype=float)], "only generic kernels can be overloaded"),
    (k_any, [wp.array(dtype=float)], "takes 3 argument types, got 1"),
    (k_any, [wp.array(dtype=float), wp.Float, int], "argument 's' of kernel k_any cannot be generic"),
    (k_any, [wp.array(dtype=int), float, int], "expects array(dtype=Float, ndim=1), got array(dtype=int32"),
    (k_any, {"t": float}, "has no parameter 't'"),
    (k_any, {"s": float}, "argument 'x' of kernel k_any cannot be generic"),
])
def test_overload_errors(kernel, arg_types, fragment):
    with pytest.raises(KernelTypeError) as info:
        wp.overload(kernel, arg_types)
    assert fragment in str(info.value)
    assert f"{THIS_FILE}:{_def_line(kernel)}:" in str(info.value)


def test_overload_decorator_errors():
    with pytest.raises(KernelSyntaxError, match="only '...', 'pass' or a docstring"):
        @wp.overload
        def k_any(x: wp.array(dtype=float), s: float, n: int):
            x[0] = s

    with pytest.raises(TypeError, match="no kernel named 'nothing_here'"):
        @wp.overload
        def nothing_here(x: wp.array(dtype=float)):
            ...

    with pytest.raises(TypeError, match="takes a generic kernel"):
        wp.overload(42, [])


def test_overload_returns_a_launchable_specialisation():
    k = wp.overload(k_any, [wp.array(dtype=wp.float16), wp.float16, int])
    assert k.key == "k_any" and k is wp.overload(k_any, [wp.array(dtype=wp.float16), wp.float16, int])
    x = wp.full(3, 2.0, dtype=wp.float16, device="cpu")
    wp.launch(k, 3, inputs=[x, 1.5, 0], device="cpu")
    np.testing.assert_array_equal(x.numpy(), np.float16(3.0))


@wp.func
def only_floats(x: wp.Float):
    return x


@wp.kernel
def k_generic_func_mismatch():
    y = only_floats(3)  # <- error


def test_generic_function_argument_mismatch():
    with pytest.raises(KernelTypeError) as info:
        wp.launch(k_generic_func_mismatch, 1, inputs=[], device="cpu")
    assert "argument 'x' of only_floats() expects Float, got int32" in str(info.value)
    lines = open(THIS_FILE).read().splitlines()
    line = next(k + 1 for k, t in enumerate(lines) if "only_floats(3)  # <- error" in t)
    assert f"{THIS_FILE}:{line}:" in str(info.value)



def test_dtype_of_an_array_and_type_of_a_value_construct_in_generic_kernels():
    """``arr.dtype(0)`` and ``type(x)(0)`` in kernel code, as Warp allows (typed zeros for generic
    accumulators)."""
    from typing import Any

    import tilewarp as wp

    @wp.kernel
    def total(x: wp.array(dtype=Any), out: wp.array(dtype=Any)):
        acc = x.dtype(0)
        for i in range(x.shape[0]):
            acc += x[i]
        zero = type(acc)(0)
        out[0] = acc + zero

    rng = np.random.default_rng(9)
    for dtype, np_type in ((wp.float64, np.float64), (wp.vec3, np.float32), (wp.int32, np.int32)):
        data = rng.integers(-50, 50, (7, 3) if dtype is wp.vec3 else 7).astype(np_type)
        x = wp.array(data, dtype=dtype, device="cpu")
        out = wp.zeros(1, dtype=dtype, device="cpu")
        wp.launch(total, dim=1, inputs=[x, out], device="cpu")
        np.testing.assert_array_equal(out.numpy()[0], data.sum(0))
