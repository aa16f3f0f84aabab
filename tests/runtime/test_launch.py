"""``wp.launch``: argument checking (errors name the parameter), launch dimensions, recorded
launches, compile failures, and devices. Where Warp behaves the same it is run alongside as the
oracle; where tilewarp is stricter (tid arity) or more helpful (messages) that is said."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import tilewarp as wp
from tilewarp import types as T

try:
    import warp

    warp.config.quiet = True
except ImportError:
    warp = None


@pytest.fixture(scope="module", autouse=True)
def _kernel_caches(tmp_path_factory):
    folder = tmp_path_factory.mktemp("launch-kernels")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wp.config, "kernel_cache_dir", str(folder / "tilewarp"))
        mp.setenv("TILEWARP_CACHE_DIR", str(folder / "tilewarp"))
        mp.setattr(wp.config, "quiet", True)
        if warp is not None:
            mp.setattr(warp.config, "kernel_cache_dir", str(folder / "warp"))
        previous = wp.get_device()
        wp.set_device("cpu")  # these tests are about the CPU unless they name a device
        try:
            yield
        finally:
            wp.set_device(previous)


def has_gpu() -> bool:
    try:
        return wp.get_cuda_device_count() > 0
    except Exception:  # noqa: BLE001
        return False


needs_gpu = pytest.mark.skipif(not has_gpu(), reason="needs a CUDA device")
needs_warp = pytest.mark.skipif(warp is None, reason="warp-lang (the behavioural oracle) is not installed")


# ---- kernels ---------------------------------------------------------------------------------------------


@wp.kernel
def fill_all(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), s: float, n: int):
    i = wp.tid()
    a[i] = s * float(n)
    v[i] = wp.vec3(s, float(n), float(i))


@wp.kernel
def grid(m: wp.array2d(dtype=float)):
    i, j = wp.tid()
    m[i, j] = float(i * 10 + j)


@wp.kernel
def count(c: wp.array(dtype=int)):
    c[0] += 1


@wp.kernel
def flat_index(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] += 1


@wp.kernel
def typed(x: wp.float64, h: wp.float16, u: wp.uint32, b: wp.bool, v: wp.vec3, m: wp.mat22,
          out: wp.array(dtype=wp.float64)):
    out[0] = x
    out[1] = wp.float64(h)
    out[2] = wp.float64(u)
    out[3] = wp.float64(1.0) if b else wp.float64(0.0)
    out[4] = wp.float64(v[2])
    out[5] = wp.float64(m[1, 0])


def fresh():
    return wp.zeros(4, dtype=float), wp.zeros(4, dtype=wp.vec3)


# ---- successful launches ----------------------------------------------------------------------------------


def test_launch_runs_and_inputs_outputs_concatenate():
    a, v = fresh()
    wp.launch(fill_all, dim=4, inputs=[a, v, 2.0, 3])
    assert a.numpy().tolist() == [6.0] * 4
    assert v.numpy()[3].tolist() == [2.0, 3.0, 3.0]
    a2, v2 = fresh()
    wp.launch(fill_all, dim=4, inputs=(a2, v2), outputs=(2.0, 3))
    assert a2.numpy().tolist() == a.numpy().tolist()


def test_scalar_spellings_accepted():
    a, v = fresh()
    for s, n in [(2, 3), (np.float32(2.0), np.int64(3)), (np.float64(2.0), np.int32(3)), (wp.float32(2.0), 3),
                 (2.0, True)]:
        a.zero_()
        wp.launch(fill_all, dim=4, inputs=[a, v, s, n])
        assert a.numpy()[0] == float(s) * int(n)


def test_typed_scalars_vectors_matrices():
    out = wp.zeros(6, dtype=wp.float64)
    wp.launch(typed, dim=1, inputs=[1.0 / 3.0, 0.5, 7, True, wp.vec3(1, 2, 3), wp.mat22(1, 2, 3, 4), out])
    assert out.numpy().tolist() == [1.0 / 3.0, 0.5, 7.0, 1.0, 3.0, 3.0]
    out.zero_()
    wp.launch(typed, dim=1, inputs=[1, 0.5, np.uint32(7), False, (1, 2, 5), [[1, 2], [9, 4]], out])
    assert out.numpy().tolist() == [1.0, 0.5, 7.0, 0.0, 5.0, 9.0]


def test_device_inferred_or_named():
    a, v = fresh()
    wp.launch(fill_all, dim=4, inputs=[a, v, 1.0, 1], device="cpu")
    wp.launch(fill_all, dim=4, inputs=[a, v, 1.0, 2], device=wp.get_device("cpu"))
    assert a.numpy()[0] == 2.0
    with wp.ScopedDevice("cpu"):
        wp.launch(fill_all, dim=4, inputs=[a, v, 1.0, 3])
    assert a.numpy()[0] == 3.0


@pytest.mark.parametrize("dim", [(3, 4), [3, 4], (np.int64(3), np.int32(4))], ids=["tuple", "list", "np-ints"])
def test_2d_dims(dim):
    m = wp.zeros((3, 4), dtype=float)
    wp.launch(grid, dim=dim, inputs=[m])
    np.testing.assert_array_equal(m.numpy(), np.add.outer(np.arange(3) * 10, np.arange(4)).astype(np.float32))


@needs_warp
def test_1d_tid_in_2d_launch_like_warp():
    """A lone ``wp.tid()`` in a 2-d launch: whatever index Warp hands out, tilewarp hands out the same."""
    out = wp.zeros(6, dtype=int)
    wp.launch(flat_index, dim=(2, 3), inputs=[out])

    @warp.kernel
    def w_flat(out: warp.array(dtype=int)):
        i = warp.tid()
        out[i] += 1

    w_out = warp.zeros(6, dtype=int, device="cpu")
    warp.launch(w_flat, dim=(2, 3), inputs=[w_out], device="cpu")
    assert out.numpy().tolist() == w_out.numpy().tolist()


def test_none_for_array_param_is_a_null_array():
    wp.launch(fill_all, dim=0, inputs=[None, None, 1.0, 1])


# ---- argument errors name the parameter -----------------------------------------------------------------


@pytest.mark.parametrize("args", [[], ["a"], ["a", "v", 1.0], ["a", "v", 1.0, 1, 2]], ids=["0", "1", "3", "5"])
def test_wrong_argument_count_lists_names(args):
    a, v = fresh()
    values = [{"a": a, "v": v}.get(x, x) if isinstance(x, str) else x for x in args]
    with pytest.raises(wp.LaunchError) as info:
        wp.launch(fill_all, dim=4, inputs=values)
    msg = str(info.value)
    assert "4" in msg and str(len(args)) in msg
    assert "a, v, s, n" in msg


@needs_warp
def test_wrong_argument_count_warp_also_refuses():
    @warp.kernel
    def w(a: warp.array(dtype=float), s: float):
        pass

    with pytest.raises(Exception, match="argument"):
        warp.launch(w, dim=1, inputs=[warp.zeros(1, device="cpu")], device="cpu")


@pytest.mark.parametrize("s, n, param, got", [("x", 1, "s", "str"), (1.0, 1.5, "n", "float"),
                                              (1.0, "2", "n", "str"), (None, 1, "s", "NoneType"),
                                              (wp.vec3(), 1, "s", "vec3"), (1.0, np.float32(2), "n", "float32"),
                                              ([1.0], 1, "s", "list")])
def test_wrong_scalar_type_names_parameter(s, n, param, got):
    a, v = fresh()
    with pytest.raises(wp.LaunchError) as info:
        wp.launch(fill_all, dim=4, inputs=[a, v, s, n])
    msg = str(info.value)
    assert f"'{param}'" in msg and got in msg
    assert ("float32" if param == "s" else "int32") in msg


@needs_warp
@pytest.mark.parametrize("s, n", [("x", 1), (1.0, 1.5), (1.0, np.float32(2))])
def test_wrong_scalar_type_warp_also_refuses(s, n):
    @warp.kernel
    def w(s: float, n: int):
        pass

    with pytest.raises(Exception, match="param"):
        warp.launch(w, dim=1, inputs=[s, n], device="cpu")


def test_array_dtype_mismatch_names_parameter():
    a, _ = fresh()
    with pytest.raises(wp.LaunchError) as info:
        wp.launch(fill_all, dim=4, inputs=[a, a, 1.0, 1])  # float array for array(dtype=vec3)
    msg = str(info.value)
    assert "'v'" in msg and "vec3" in msg and "float32" in msg
    with pytest.raises(wp.LaunchError, match="'a'.*float32.*float64"):
        wp.launch(fill_all, dim=4, inputs=[wp.zeros(4, dtype=wp.float64), fresh()[1], 1.0, 1])
    with pytest.raises(wp.LaunchError, match="'a'.*int32"):
        wp.launch(fill_all, dim=4, inputs=[wp.zeros(4, dtype=wp.int32), fresh()[1], 1.0, 1])


@needs_warp
def test_array_dtype_mismatch_warp_also_refuses():
    @warp.kernel
    def w(v: warp.array(dtype=warp.vec3)):
        pass

    with pytest.raises(Exception, match="dtype"):
        warp.launch(w, dim=1, inputs=[warp.zeros(3, dtype=float, device="cpu")], device="cpu")


def test_wrong_ndim_names_parameter():
    _, v = fresh()
    with pytest.raises(wp.LaunchError, match="'a'.*2-d"):
        wp.launch(fill_all, dim=4, inputs=[wp.zeros((2, 2), dtype=float), v, 1.0, 1])
    with pytest.raises(wp.LaunchError, match="'m'.*1-d"):
        wp.launch(grid, dim=(2, 2), inputs=[wp.zeros(4, dtype=float)])


@pytest.mark.parametrize("value, got", [([1.0, 2.0], "list"), (3.0, "float"), ("a", "str"),
                                        (np.zeros(4, dtype=np.float32), "ndarray"),
                                        (wp.array(dtype=float), "array")],
                         ids=["list", "float", "str", "ndarray", "annotation"])
def test_non_array_for_array_param(value, got):
    _, v = fresh()
    with pytest.raises(wp.LaunchError) as info:
        wp.launch(fill_all, dim=4, inputs=[value, v, 1.0, 1])
    assert "'a'" in str(info.value) and got in str(info.value)


def test_wrong_composite_value():
    out = wp.zeros(6, dtype=wp.float64)
    with pytest.raises(wp.LaunchError, match="'v'.*vec3.*2 values"):
        wp.launch(typed, dim=1, inputs=[1.0, 0.5, 7, True, (1, 2), wp.mat22(), out])
    with pytest.raises(wp.LaunchError, match="'v'.*vec3"):
        wp.launch(typed, dim=1, inputs=[1.0, 0.5, 7, True, 1.0, wp.mat22(), out])
    with pytest.raises(wp.LaunchError, match="'m'.*mat22"):
        wp.launch(typed, dim=1, inputs=[1.0, 0.5, 7, True, wp.vec3(), wp.vec3(), out])


@needs_gpu
def test_array_on_other_device_names_parameter():
    _, v = fresh()
    on_gpu = wp.zeros(4, dtype=float, device="cuda:0")
    with pytest.raises(wp.LaunchError, match="'a'.*cuda:0.*cpu"):
        wp.launch(fill_all, dim=4, inputs=[on_gpu, v, 1.0, 1], device="cpu")


def test_kernel_called_directly_raises_type_error():
    a, v = fresh()
    with pytest.raises(TypeError, match="wp.launch"):
        fill_all(a, v, 1.0, 1)


def test_launch_of_non_kernel():
    with pytest.raises(wp.LaunchError, match="kernel"):
        wp.launch(lambda: None, dim=1)


def test_adjoint_launch_checks_its_gradient_arrays():
    a, v = fresh()
    with pytest.raises(wp.LaunchError, match="adj_inputs has 5 entries for 4 parameters"):
        wp.launch(fill_all, dim=4, inputs=[a, v, 1.0, 1], adj_inputs=[None] * 5, adjoint=True)


# ---- launch dimensions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [-1, (4, -1), (1, 1, 1, 1, 1), (), 1.5, "4", None, (2.0,)],
                         ids=["negative", "negative-2d", "5d", "empty", "float", "str", "none", "float-in-tuple"])
def test_bad_dim(dim):
    a, v = fresh()
    with pytest.raises(wp.LaunchError, match="dim"):
        wp.launch(fill_all, dim=dim, inputs=[a, v, 1.0, 1])


def test_too_large_dim():
    a, v = fresh()
    with pytest.raises(wp.LaunchError, match="2\\*\\*31"):
        wp.launch(fill_all, dim=2**31, inputs=[a, v, 1.0, 1])


def test_tid_arity_mismatch():
    """``i, j = wp.tid()`` launched over fewer dimensions is refused up front (Warp runs it and
    reads out of bounds)."""
    m = wp.zeros((2, 2), dtype=float)
    with pytest.raises(wp.LaunchError, match="2 indices.*dim has"):
        wp.launch(grid, dim=4, inputs=[m])


def test_tid_folds_trailing_dimensions():
    """More launch dimensions than ``wp.tid()`` unpacks: the trailing ones fold away, as in Warp
    (``wp.launch_tiled`` appends the block's lanes this way)."""
    m = wp.zeros((2, 3), dtype=float)
    wp.launch(grid, dim=(2, 3, 4), inputs=[m])
    want = wp.zeros((2, 3), dtype=float)
    wp.launch(grid, dim=(2, 3), inputs=[want])
    np.testing.assert_array_equal(m.numpy(), want.numpy())


def test_bad_dim_is_not_cached():
    """A refused dim stays refused; a good one keeps working after it (bounds are memoised)."""
    m = wp.zeros((2, 2), dtype=float)
    for _ in range(2):
        with pytest.raises(wp.LaunchError):
            wp.launch(grid, dim=4, inputs=[m])
        wp.launch(grid, dim=(2, 2), inputs=[m])
    assert m.numpy().tolist() == [[0.0, 1.0], [10.0, 11.0]]


@pytest.mark.parametrize("dim", [0, (0,), (0, 5), (5, 0)])
def test_dim_zero_launches_nothing(dim):
    c = wp.zeros(1, dtype=int)
    wp.launch(count, dim=dim, inputs=[c])
    assert c.numpy()[0] == 0
    wp.launch(count, dim=3, inputs=[c])
    assert c.numpy()[0] == 3


def test_many_launch_shapes():
    """More distinct shapes than the bounds memo holds still launch correctly."""
    c = wp.zeros(1, dtype=int)
    total = 0
    for n in range(1, 100):
        wp.launch(count, dim=n, inputs=[c])
        total += n
    assert c.numpy()[0] == total
    wp.launch(count, dim=(3, 3), inputs=[c])
    assert c.numpy()[0] == total + 9


@wp.kernel
def scatter_small(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64), seen: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(out, i % 3, x[i])
    seen[i] = i


@wp.kernel
def scatter_looped(x: wp.array(dtype=wp.float64), out: wp.array(dtype=wp.float64), seen: wp.array(dtype=int)):
    i = wp.tid()
    for _k in range(int(x[i] > 2.0)):  # a loop: not a small body, the entry has no 1-d loop of its own
        seen[i] = -1
    wp.atomic_add(out, i % 3, x[i])
    seen[i] = i


@pytest.mark.parametrize("kernel", [scatter_small, scatter_looped], ids=["small", "looped"])
@pytest.mark.parametrize("dim", [1, 5, 100_003, (317, 211)], ids=["one", "few", "split", "2d"])
def test_small_and_looped_bodies_agree_with_numpy(kernel, dim):
    """A small body's CPU entry runs one-dimensional launches in a loop of its own (the task number
    is the coordinate): every task runs once, combined atomics sum every value, on any split of
    the tasks over the workers, and a 2-d launch of the same kernel takes the rows' loop."""
    n = int(np.prod(dim))
    x = np.random.default_rng(n).random(n) * 4.0
    out, seen = wp.zeros(3, dtype=wp.float64), wp.zeros(n, dtype=int)
    wp.launch(kernel, dim=n, inputs=[wp.array(x, dtype=wp.float64), out, seen])
    want = np.array([x[r::3].sum() for r in range(3)])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    np.testing.assert_array_equal(seen.numpy(), np.arange(n))
    source = kernel.compiled(wp.get_device("cpu")).source
    assert ("TW_KERNEL_ENTRY_SMALL(" in source) == (kernel is scatter_small)


# ---- recorded launches ------------------------------------------------------------------------------------------


def test_record_cmd_returns_replayable_launch():
    c = wp.zeros(1, dtype=int)
    cmd = wp.launch(count, dim=5, inputs=[c], record_cmd=True)
    assert isinstance(cmd, wp.Launch)
    assert c.numpy()[0] == 0  # recording does not run it
    cmd.launch()
    assert c.numpy()[0] == 5
    cmd.launch()
    cmd.launch()
    assert c.numpy()[0] == 15


def test_record_cmd_keeps_its_own_arguments():
    a, v = fresh()
    cmd = wp.launch(fill_all, dim=4, inputs=[a, v, 2.0, 1], record_cmd=True)
    wp.launch(fill_all, dim=2, inputs=[a, v, 5.0, 1])  # a later launch with other arguments
    assert a.numpy().tolist() == [5.0, 5.0, 0.0, 0.0]
    cmd.launch()
    assert a.numpy().tolist() == [2.0] * 4


def test_record_cmd_dim_zero():
    c = wp.zeros(1, dtype=int)
    cmd = wp.launch(count, dim=0, inputs=[c], record_cmd=True)
    cmd.launch()
    assert c.numpy()[0] == 0


@needs_warp
def test_record_cmd_like_warp():
    @warp.kernel
    def w_count(c: warp.array(dtype=int)):
        warp.atomic_add(c, 0, 1)

    c = warp.zeros(1, dtype=int, device="cpu")
    cmd = warp.launch(w_count, dim=5, inputs=[c], device="cpu", record_cmd=True)
    before = int(c.numpy()[0])
    cmd.launch()
    assert before == 0 and int(c.numpy()[0]) == 5


# ---- compile failures --------------------------------------------------------------------------------------------


def test_cpp_compile_failure_raises_compile_error(tmp_path, monkeypatch):
    from tilewarp.builtins.registry import REGISTRY, Builtin

    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "cache"))
    name = "tw_test_no_such_fn"
    bogus = Builtin(name, lambda args, template: T.float32, "tw::no_such_fn")
    REGISTRY[name] = bogus
    try:
        @wp.kernel
        def broken(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = bogus(a[i])

        a = wp.zeros(2, dtype=float)
        with pytest.raises(wp.CompileError) as info:
            wp.launch(broken, dim=2, inputs=[a])
        err = info.value
        msg = str(err)
        assert "no_such_fn" in msg  # the compiler's own message
        assert err.source_path and Path(err.source_path).is_file()
        assert err.source_path in msg
        assert "tw::no_such_fn" in Path(err.source_path).read_text()
        assert "no_such_fn" in err.log
        assert not list((tmp_path / "cache").glob("??/*.json"))  # nothing cached
        with pytest.raises(wp.CompileError):  # not remembered as built: a retry compiles (and fails) again
            wp.launch(broken, dim=2, inputs=[a])
    finally:
        REGISTRY.pop(name, None)
    assert name not in REGISTRY


# ---- devices -----------------------------------------------------------------------------------------------------


def _no_nvidia_driver() -> bool:
    return shutil.which("nvidia-smi") is None and not os.path.exists("/dev/nvidiactl")


@pytest.mark.parametrize("ident", ["tpu", "gpu", "cuda:x", "cuda0", "CPU", ""])
def test_unknown_device_string(ident):
    with pytest.raises(wp.DeviceError, match="unknown device"):
        wp.get_device(ident)


def test_not_a_device():
    with pytest.raises(wp.DeviceError, match="not a device"):
        wp.get_device(3)


@pytest.mark.skipif(has_gpu(), reason="a CUDA device is present")
@pytest.mark.parametrize("ident", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_without_gpu_is_a_clear_error(ident):
    with pytest.raises(wp.DeviceError, match="no CUDA device"):
        wp.get_device(ident)
    with pytest.raises(wp.DeviceError, match="device='cpu'"):
        wp.zeros(3, device=ident)
    a, v = fresh()
    with pytest.raises(wp.DeviceError):
        wp.launch(fill_all, dim=4, inputs=[a, v, 1.0, 1], device=ident)
    with pytest.raises(wp.DeviceError):
        wp.set_device(ident)
    assert str(wp.get_device()) == "cpu"


@needs_gpu
def test_cuda_ordinal_out_of_range():
    with pytest.raises(wp.DeviceError, match="does not exist"):
        wp.get_device(f"cuda:{wp.get_cuda_device_count()}")


@pytest.mark.skipif(not _no_nvidia_driver(), reason="an NVIDIA driver is installed")
def test_no_gpu_here():
    assert wp.get_cuda_device_count() == 0
    assert not wp.is_cuda_available()
    assert wp.get_cuda_devices() == []
    assert [str(d) for d in wp.get_devices()] == ["cpu"]
    assert wp.get_device().is_cpu and str(wp.get_device()) == "cpu"
    assert str(wp.get_preferred_device()) == "cpu"
    assert wp.zeros(1).device == "cpu"


def test_cpu_device_identity():
    d = wp.get_device("cpu")
    assert d is wp.get_device("cpu") and d == "cpu" and d != "cuda:7" and d != "nonsense"
    assert repr(d) == 'Device("cpu")' and d.is_cpu and not d.is_cuda
    with wp.ScopedDevice("cpu") as scoped:
        assert scoped is d and wp.get_device() is d


def test_kernel_objects_take_warps_constructor_arguments():
    """wp.Kernel(func=..., key=..., options={...}) as Warp's test helpers build kernels; kernel.module
    is a module whose options hold the defaults (enable_backward)."""
    def double(a: wp.array(dtype=float)):
        a[wp.tid()] = 2.0 * a[wp.tid()]

    k = wp.Kernel(func=double, key="double_opts", options={"enable_backward": False})
    assert k.options["enable_backward"] is False and k.module.options["enable_backward"] is True
    x = np.random.default_rng(3).random(5).astype(np.float32)
    a = wp.array(x, device="cpu")
    wp.launch(k, dim=5, inputs=[a], device="cpu")
    np.testing.assert_allclose(a.numpy(), 2 * x)
    assert wp.types.type_repr(wp.vec3) == "vec3" and wp.types.type_repr(a) == "array(ndim=1, dtype=float32)"
    with pytest.raises(NotImplementedError, match="code_transformers"):
        wp.Kernel(func=double, code_transformers=[object()])


@wp.func
def _a_func(x: float):
    return x


@pytest.mark.parametrize("what", [None, 3, print, _a_func], ids=["None", "int", "builtin_function", "wp_func"])
@pytest.mark.parametrize("how", ["launch", "tiled", "adjoint", "record_cmd", "tape"])
def test_only_kernels_launch(what, how):
    """Every entry of the one launch path refuses a non-kernel with a LaunchError naming what it got,
    never an AttributeError from inside (issue 31, item 4)."""
    a = wp.zeros(4, dtype=float, device="cpu")
    got = type(what).__name__
    with pytest.raises(wp.LaunchError, match=rf"needs a @wp.kernel, got {got}$"):
        if how == "launch":
            wp.launch(what, dim=4, inputs=[a], device="cpu")
        elif how == "tiled":
            wp.launch_tiled(what, dim=[1], inputs=[a], block_dim=4, device="cpu")
        elif how == "adjoint":
            wp.launch(what, dim=4, inputs=[a], adj_inputs=[a], adjoint=True, device="cpu")
        elif how == "record_cmd":
            wp.launch(what, dim=4, inputs=[a], record_cmd=True, device="cpu")
        else:
            with wp.Tape():
                wp.launch(what, dim=4, inputs=[a], device="cpu")
