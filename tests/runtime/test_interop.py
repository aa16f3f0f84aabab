"""Zero-copy interop: DLPack both ways (numpy, torch), ``wp.from_torch``/``wp.to_torch``, and
``__cuda_array_interface__``. CPU tests run everywhere (torch ones skip without torch); CUDA tests
need a GPU (and torch with CUDA for the torch ones)."""
import gc

import numpy as np
import pytest

import tilewarp as wp
from tilewarp.runtime import interop

needs_cuda = pytest.mark.skipif(wp.get_cuda_device_count() == 0, reason="no CUDA device")


@wp.kernel
def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def lift(v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v[i] = v[i] + wp.vec3(0.0, 1.0, 0.0)


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int16, np.float16])
def test_numpy_dlpack_round_trip(dtype):
    rng = np.random.default_rng(1)
    x = (rng.random(37) * 100).astype(dtype)
    a = wp.from_dlpack(x)
    assert a.shape == (37,) and a.device == "cpu" and a.ptr == x.ctypes.data
    back = np.from_dlpack(a)
    np.testing.assert_array_equal(back, x)
    assert back.ctypes.data == x.ctypes.data


def test_from_dlpack_keeps_strides_and_vector_dtype():
    base = np.arange(60, dtype=np.float32).reshape(20, 3)
    v = wp.from_dlpack(base, dtype=wp.vec3)
    assert v.shape == (20,) and v.dtype is wp.vec3
    strided = wp.from_dlpack(np.arange(40, dtype=np.float64)[::4])
    assert strided.strides == (32,)
    np.testing.assert_array_equal(strided.numpy(), np.arange(40, dtype=np.float64)[::4])
    with pytest.raises(RuntimeError, match="cannot be viewed"):
        wp.from_dlpack(np.zeros(6, np.int32), dtype=wp.vec3)


def test_exported_capsules_release_their_array():
    before = len(interop._exported)
    cap = wp.to_dlpack(wp.zeros(8, device="cpu"))
    assert len(interop._exported) == before + 1
    del cap
    gc.collect()
    assert len(interop._exported) == before
    view = np.from_dlpack(wp.ones(8, device="cpu"))  # consumed: lives as long as the numpy view
    assert len(interop._exported) == before + 1
    np.testing.assert_array_equal(view, np.ones(8, np.float32))
    del view
    gc.collect()
    assert len(interop._exported) == before


def test_dlpack_device_and_stream_rules_on_cpu():
    a = wp.zeros(3, device="cpu")
    assert a.__dlpack_device__() == (1, 0)
    with pytest.raises(TypeError, match="stream"):
        a.__dlpack__(stream=5)
    with pytest.raises(AttributeError):
        a.__cuda_array_interface__  # noqa: B018 - Warp: absent on CPU arrays


def test_torch_round_trip_shares_memory():
    torch = _torch()
    rng = np.random.default_rng(2)
    x = torch.from_numpy(rng.random(64).astype(np.float32))
    y = torch.from_numpy(rng.random(64).astype(np.float32))
    y0 = y.clone()
    wx, wy = wp.from_torch(x), wp.from_torch(y)
    assert wx.dtype is wp.float32 and wx.ptr == x.data_ptr()
    wp.launch(axpy, dim=64, inputs=[wx, wy, 3.0], device="cpu")
    torch.testing.assert_close(y, 3.0 * x + y0)
    t = wp.to_torch(wy)
    assert t.data_ptr() == y.data_ptr() and t.dtype == torch.float32


def test_torch_vectors_and_dtypes():
    torch = _torch()
    t = torch.zeros(10, 3)
    v = wp.from_torch(t, dtype=wp.vec3)
    assert v.shape == (10,) and v.dtype is wp.vec3
    wp.launch(lift, dim=10, inputs=[v], device="cpu")
    assert torch.equal(t[:, 1], torch.ones(10))
    back = wp.to_torch(v)
    assert back.shape == (10, 3)
    assert wp.dtype_to_torch(wp.float64) == torch.float64 and wp.dtype_from_torch(torch.int16) is wp.int16
    assert wp.dtype_to_torch(wp.vec3) == torch.float32
    assert wp.device_to_torch("cpu") == "cpu" and wp.device_from_torch("cpu") == "cpu"
    with pytest.raises(TypeError):
        wp.dtype_from_torch(torch.complex64)


def test_torch_gradients_are_wrapped():
    torch = _torch()
    t = torch.ones(5, requires_grad=True)
    a = wp.from_torch(t)
    assert a.requires_grad and a.grad is not None and t.grad is not None
    assert a.grad.ptr == t.grad.data_ptr()
    out = wp.to_torch(wp.zeros(4, device="cpu", requires_grad=True))
    assert out.requires_grad and out.grad is not None


@pytest.mark.cuda
@needs_cuda
def test_cuda_array_interface_and_dlpack_device():
    d = wp.get_device("cuda:0")
    a = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, device=d)
    cai = a.__cuda_array_interface__
    assert cai["data"] == (a.ptr, False) and cai["shape"] == (4, 3) and cai["strides"] == (12, 4)
    assert cai["typestr"] == "<f4" and cai["version"] == 3 and cai["stream"] == d.stream.cuda_stream
    assert a.__dlpack_device__() == (2, 0)
    b = wp.from_dlpack(a)  # our own capsule, on the GPU
    assert b.ptr == a.ptr and b.device == d and b.shape == (4, 3)


@pytest.mark.cuda
@needs_cuda
def test_torch_cuda_zero_copy():
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = torch.arange(1000, dtype=torch.float32, device="cuda:0")
    y = torch.ones(1000, dtype=torch.float32, device="cuda:0")
    wx, wy = wp.from_torch(x), wp.from_torch(y)
    assert wx.device == "cuda:0" and wx.ptr == x.data_ptr()
    wp.launch(axpy, dim=1000, inputs=[wx, wy, 2.0])
    wp.synchronize()
    torch.testing.assert_close(y.cpu(), 2.0 * torch.arange(1000.0) + 1.0)
    t = wp.to_torch(wy)
    assert t.device.type == "cuda" and t.data_ptr() == y.data_ptr()
    via_cai = torch.as_tensor(wy, device="cuda:0")
    assert via_cai.data_ptr() == wy.ptr
    s = wp.stream_from_torch()
    assert s.cuda_stream == torch.cuda.current_stream().cuda_stream
