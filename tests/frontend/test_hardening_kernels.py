"""Kernel code that used to crash the process or give a silent wrong value (issue 15): integer
division by zero, None passed for an array, out-of-range integer literals, globals rebound after a
kernel was built, array annotations of more than 4 dimensions."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tilewarp as wp
from tests.conftest import check_located
from tilewarp.runtime import native_launch


def run_child(tmp_path, body: str) -> subprocess.CompletedProcess:
    """Run ``body`` (after ``import tilewarp as wp``) in a child process: where the parent used to
    die with a signal, the child reports instead."""
    script = tmp_path / "child.py"
    script.write_text("import numpy as np\nimport tilewarp as wp\nwp.config.quiet = True\n" + textwrap.dedent(body))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)


# ---- integer division and modulo by zero ------------------------------------------------------------

DIVISION = """
@wp.kernel
def divide(a: wp.array(dtype=DT), b: wp.array(dtype=DT), q: wp.array(dtype=DT), r: wp.array(dtype=DT),
           f: wp.array(dtype=DT)):
    i = wp.tid()
    q[i] = a[i] / b[i]
    r[i] = a[i] % b[i]
    f[i] = a[i] // b[i]

rng = np.random.default_rng(7)
a = rng.integers(-1000, 1000, 64).astype(NP)
b = rng.integers(-5, 6, 64).astype(NP)
b[:8] = 0
b[8:12] = -1
a[8] = np.iinfo(NP).min
arrays = [wp.array(x, dtype=DT, device="cpu") for x in (a, b)] + [wp.zeros(64, dtype=DT, device="cpu") for _ in range(3)]
wp.launch(divide, dim=64, inputs=arrays, device="cpu")
np.save(OUT, np.stack([x.numpy() for x in arrays]))
"""


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_division_by_zero_is_defined_in_release_builds(tmp_path, dtype):
    out = tmp_path / "out.npy"
    body = DIVISION.replace("DT", f"wp.{dtype}").replace("NP", f"np.{dtype}").replace("OUT", repr(str(out)))
    child = run_child(tmp_path, body)
    assert child.returncode == 0, child.stderr[-3000:]  # was SIGFPE
    a, b, q, r, f = np.load(out).astype(object)  # exact Python integers
    for k in range(64):
        if b[k] == 0:
            want = (0, 0, 0)
        elif b[k] == -1:  # MIN / -1 wraps to MIN, as two's complement negation
            neg = -a[k] if -a[k] <= np.iinfo(dtype).max else a[k]
            want = (neg, 0, neg)
        else:
            trunc = abs(a[k]) // abs(b[k]) * (1 if (a[k] < 0) == (b[k] < 0) else -1)
            want = (trunc, a[k] - trunc * b[k], a[k] // b[k])
        assert (q[k], r[k], f[k]) == want, (a[k], b[k])


def test_integer_division_by_zero_raises_at_the_line_in_debug_builds():
    @wp.kernel(module="unique", module_options={"mode": "debug"})
    def divide(a: wp.array(dtype=int), b: wp.array(dtype=int), c: wp.array(dtype=int)):
        i = wp.tid()
        c[i] = a[i] % b[i]  # <- error

    b = np.random.default_rng(3).integers(1, 9, 8).astype(np.int32)
    b[5] = 0
    arrays = [wp.array(np.arange(8, dtype=np.int32), device="cpu"), wp.array(b, device="cpu"),
              wp.zeros(8, dtype=int, device="cpu")]
    with pytest.raises(wp.KernelRuntimeError) as info:
        wp.launch(divide, dim=8, inputs=arrays, device="cpu")
    assert "division or modulo by zero" in str(info.value) and info.value.kind == "divzero"
    assert info.value.loc.line == divide.fn.__code__.co_firstlineno + 3


# ---- None for an array --------------------------------------------------------------------------------

NULL_ARRAYS = """
@wp.kernel
def use(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array2d(dtype=float)):
    i = wp.tid()
    x[i] = y[i] + 1.0
    wp.atomic_add(x, i, 2.0)
    row = z[i]
    row[0] = 3.0
    y[i] = y[i] + z[i, 1] + row[1] + x[i]

y0 = np.random.default_rng(5).random(8).astype(np.float32)
y = wp.array(y0, device="cpu")
wp.launch(use, dim=8, inputs=[None, y, None], device="cpu")
assert np.array_equal(y.numpy(), y0), y.numpy()  # a null array reads as zeros, writes are skipped
print("survived")
"""


def test_none_for_an_array_reads_zeros_and_skips_writes(tmp_path):
    child = run_child(tmp_path, NULL_ARRAYS)
    assert child.returncode == 0 and "survived" in child.stdout, child.stderr[-3000:]  # was SIGSEGV


def test_none_for_an_array_raises_at_the_access_in_debug_builds():
    @wp.kernel(module="unique", module_options={"mode": "debug"})
    def write(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 1.0
        x[i] = y[i]  # <- error

    with pytest.raises(wp.KernelRuntimeError) as info:
        wp.launch(write, dim=4, inputs=[None, wp.zeros(4, dtype=float, device="cpu")], device="cpu")
    assert "array 'x' is None" in str(info.value) and info.value.kind == "null"
    assert info.value.loc.line == write.fn.__code__.co_firstlineno + 4


# ---- integer literals out of range -------------------------------------------------------------------


def test_integer_literal_out_of_range_is_an_error_at_its_line():
    @wp.kernel
    def store(x: wp.array(dtype=int)):
        x[0] = 3000000000  # <- error

    check_located(store, wp.KernelTypeError, "integer literal 3000000000 does not fit int32",
                  inputs=[wp.zeros(1, dtype=int, device="cpu")])


def test_integer_literal_out_of_range_of_an_unsigned_operand():
    @wp.kernel
    def mask(x: wp.array(dtype=wp.uint8)):
        x[0] = x[0] & 256  # <- error

    check_located(mask, wp.KernelTypeError, "integer literal 256 does not fit uint8",
                  inputs=[wp.zeros(1, dtype=wp.uint8, device="cpu")])


def test_wide_literals_fit_wide_types_and_constructors_wrap():
    @wp.kernel
    def wide(y: wp.array(dtype=wp.int64), u: wp.array(dtype=wp.uint32), z: wp.array(dtype=wp.uint64),
             s: wp.array(dtype=wp.int8)):
        y[0] = 3000000000
        y[1] = y[2] * 3000000000
        y[3] = wp.int64(-9223372036854775808)
        u[0] = wp.uint32(-1)
        z[0] = wp.uint64(18446744073709551615)
        s[0] = wp.int8(200)

    k = int(np.random.default_rng(2).integers(2, 100))
    y = wp.array(np.array([0, 0, k, 0], dtype=np.int64), device="cpu")
    u, z, s = (wp.zeros(1, dtype=t, device="cpu") for t in (wp.uint32, wp.uint64, wp.int8))
    wp.launch(wide, dim=1, inputs=[y, u, z, s], device="cpu")
    assert y.numpy().tolist() == [3000000000, k * 3000000000, k, -2**63]
    assert (u.numpy()[0], z.numpy()[0], s.numpy()[0]) == (2**32 - 1, 2**64 - 1, 200 - 256)


# ---- globals rebound after the kernel was built --------------------------------------------------------

SCALE = 2.0


def test_a_rebound_global_warns_once_naming_the_value_in_use():
    global SCALE

    @wp.kernel
    def scaled(x: wp.array(dtype=float)):
        x[wp.tid()] = SCALE

    SCALE = float(np.random.default_rng(4).integers(2, 9))
    first = SCALE
    x = wp.zeros(3, dtype=float, device="cpu")
    native = native_launch.extension() is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning while the value is unchanged
        wp.launch(scaled, dim=3, inputs=[x], device="cpu")
        wp.launch(scaled, dim=3, inputs=[x], device="cpu")
    assert bool(scaled._tw_fast) == native  # such kernels keep the native launch path
    SCALE = first + 1.0
    with pytest.warns(RuntimeWarning, match=f"SCALE = {first!r}.*now {SCALE!r}.*still uses {first!r}") as w:
        wp.launch(scaled, dim=3, inputs=[x], device="cpu")
    assert w[0].filename == __file__  # the user's launching line, not tilewarp's
    assert np.all(x.numpy() == first)  # the value compiled in, as Warp
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per name
        wp.launch(scaled, dim=3, inputs=[x], device="cpu")


def test_a_closure_vector_changed_in_place_warns():
    offset = wp.vec3(1.0, 2.0, 3.0)

    @wp.kernel
    def shift(x: wp.array(dtype=wp.vec3)):
        x[wp.tid()] = offset

    x = wp.zeros(2, dtype=wp.vec3, device="cpu")
    native_launch.extension()
    wp.launch(shift, dim=2, inputs=[x], device="cpu")
    wp.launch(shift, dim=2, inputs=[x], device="cpu")  # native from here on, where the extension exists
    offset[1] = 5.0
    with pytest.warns(RuntimeWarning, match="offset"):
        wp.launch(shift, dim=2, inputs=[x], device="cpu")
    assert np.all(x.numpy() == [1.0, 2.0, 3.0])


# ---- array annotations ------------------------------------------------------------------------------


def test_five_dimensional_array_annotation_is_an_error_at_the_annotation():
    @wp.kernel
    def five(x: wp.array(dtype=float, ndim=5)):
        x[0, 0, 0, 0, 0] = 1.0

    with pytest.raises(wp.KernelTypeError) as info:
        wp.launch(five, dim=1, inputs=[None], device="cpu")
    msg = str(info.value)
    assert "arrays have 1 to 4 dimensions, got ndim=5" in msg and "parameter 'x'" in msg
    assert f"{__file__}:{five.fn.__code__.co_firstlineno + 1}:" in msg and "ndim=5" in msg.split("\n")[1]
