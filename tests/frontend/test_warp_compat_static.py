"""``wp.static`` as Warp evaluates it (at declaration, once; local variables' lengths and
constants; loops unrolled for a static reading their variable; struct results; Warp's messages),
and Warp's kernel naming / overload forms (``name=``, stubs, generic struct arguments).
"""
import numpy as np
import pytest
from conftest import Arr, launch_both, load_both, need_warp

import tilewarp as wp
from tilewarp.errors import WarpCodegenError

STATIC = """
import WP as wp

OFFSET = 5


@wp.func
def five():
    return wp.static(OFFSET)


@wp.kernel
def static_locals(v: wp.vec3, out: wp.array(dtype=wp.int32)):
    m = wp.mat22()
    n = 3
    out[0] = wp.static(len(v) + len(m) * 10) + wp.static(n * 100)
    s = int(0)
    for i in range(4):
        s += wp.static(i * i)  # the loop is unrolled: each copy sees i as a constant
    out[1] = s
    for j in range(3):
        pass
    out[2] = wp.static(j) + five()  # after the loop, j holds its last value
    q = wp.identity(n=wp.static(len(v)), dtype=float)
    out[3] = int(wp.trace(q))
"""


def test_static_sees_local_lengths_constants_and_unrolled_loops():
    mods = load_both(STATIC)
    got = launch_both(mods, "static_locals", 1, [wp.vec3(), Arr(np.zeros(4, np.int32))])
    np.testing.assert_array_equal(got[0], [3 + 20 + 300, 0 + 1 + 4 + 9, 2 + 5, 3])


def test_static_is_evaluated_once_at_declaration():
    reads = []

    class Box:
        @property
        def value(self):
            reads.append(1)
            return 7.0

    box = Box()

    @wp.kernel(module="unique")
    def k(out: wp.array(dtype=float)):
        out[0] = wp.static(box.value * wp.static(2.0))

    assert len(reads) == 1  # at the decorator, before any launch
    box = None  # noqa: F841 - rebinding the captured name does not change the kernel's value
    out = wp.zeros(1, dtype=float, device="cpu")
    wp.launch(k, dim=1, inputs=[out], device="cpu")
    assert out.numpy()[0] == 14.0 and len(reads) == 1


def test_static_names_later_definitions_at_compile_time():
    """A static reading a name defined after the kernel waits for the compile (no error at the decorator)."""

    @wp.kernel(module="unique")
    def k(out: wp.array(dtype=float)):
        out[0] = wp.static(later * 2.0)

    later = 4.0
    out = wp.zeros(1, dtype=float, device="cpu")
    wp.launch(k, dim=1, inputs=[out], device="cpu")
    assert out.numpy()[0] == 8.0


@wp.struct
class Inner:
    m: wp.mat22
    i: int


@wp.struct
class Outer:
    inner: Inner
    v: wp.vec3


def make_outer():
    o = Outer()
    o.inner = Inner()
    o.inner.m = wp.mat22(1.0, 2.0, 3.0, 4.0)
    o.inner.i = 7
    o.v = wp.vec3(5.0, 6.0, 7.0)
    return o


@wp.kernel
def static_struct(out: wp.array(dtype=Outer)):
    out[0] = wp.static(make_outer())


def test_static_struct_value():
    out = wp.zeros(1, dtype=Outer, device="cpu")
    wp.launch(static_struct, dim=1, inputs=[out], device="cpu")
    rec = out.numpy()[0]
    np.testing.assert_array_equal(rec["inner"]["m"], [[1.0, 2.0], [3.0, 4.0]])
    assert rec["inner"]["i"] == 7
    np.testing.assert_array_equal(rec["v"], [5.0, 6.0, 7.0])


def _raises(fn, pattern, inputs=()):
    with pytest.raises(WarpCodegenError, match=pattern) as info:
        wp.launch(wp.Kernel(fn, module="unique"), dim=1, inputs=list(inputs), device="cpu")
    assert isinstance(info.value, RuntimeError)
    return str(info.value)


def test_static_errors_use_warps_wording():
    def divide():
        wp.static(1.0 / 0.0)

    def runtime_value(i: int):
        wp.static(i * 2)

    def array_value():
        wp.static(wp.zeros(3, device="cpu"))

    def nothing():
        wp.static(print())

    msg = _raises(divide, r"Error evaluating static expression: float division by zero$")
    assert msg.startswith(f"{__file__}:")
    _raises(runtime_value, r"Error evaluating static expression: name 'i' is not defined\. Make sure all "
                           r"variables used in the static expression are constant\.$", [3])
    _raises(array_value, r"Static expression returns an unsupported value: a Warp array cannot be created inside "
                         r"Warp kernels$")
    _raises(nothing, r"Static expression returns an unsupported value: None is returned$")


def test_unrolled_loop_rejects_break():
    def breaks(out: wp.array(dtype=int)):
        for i in range(3):
            out[0] = wp.static(i)
            break

    _raises(breaks, "cannot use 'break' or 'continue'", [wp.zeros(1, dtype=int, device="cpu")])


# ---- kernel names and overloads ----------------------------------------------------------------------

GENERIC_STRUCT = """
import WP as wp
from typing import Any


@wp.struct
class Foo:
    x: float
    y: float


@wp.struct
class Bar:
    x: wp.int32
    y: wp.int32


@wp.kernel
def swap_sum(a: Any, out: wp.array(dtype=float)):
    b = type(a)(a.y, a.x)
    out[0] = float(b.x - b.y) + float(a.x + a.y)
"""


def test_generic_struct_arguments_match_warp():
    mods = load_both(GENERIC_STRUCT)
    need_warp(mods)
    for mod in mods:
        mod.wp.overload(mod.swap_sum, {"a": mod.Foo})
        mod.wp.overload(mod.swap_sum, {"a": mod.Bar})
    outs = []
    for mod in mods:
        foo, bar = mod.Foo(), mod.Bar()
        foo.x, foo.y, bar.x, bar.y = 1.5, 4.0, 7, 2
        o1, o2 = mod.wp.zeros(1, dtype=float, device="cpu"), mod.wp.zeros(1, dtype=float, device="cpu")
        mod.wp.launch(mod.swap_sum, dim=1, inputs=[foo, o1], device="cpu")
        mod.wp.launch(mod.swap_sum, dim=1, inputs=[bar, o2], device="cpu")
        outs.append((o1.numpy()[0], o2.numpy()[0]))
    assert outs[0] == outs[1] == (4.0 - 1.5 + 5.5, 2 - 7 + 9)


def test_kernel_name_and_overload_stub():
    @wp.kernel(name="custom_key", module="unique")
    def named(x: wp.types.Any):
        return

    @wp.overload
    def named(x: float): ...

    assert named.key == "custom_key" and len(named.overloads) == 1
    with pytest.raises(TypeError, match=r"Return annotations are not allowed on @wp\.overload stubs"):
        @wp.overload
        def named(x: wp.float64) -> float: ...
