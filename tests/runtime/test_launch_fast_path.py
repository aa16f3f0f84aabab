"""wp.launch's hot path (issue 4): arguments packed as bytes must equal the ctypes struct byte for
byte for every parameter kind, cached array descriptors must follow the array, and the CUDA entry
(one launch record per block size, context checked in C) must launch what it is given."""

import ctypes
import threading

import numpy as np
import pytest

import tilewarp as wp


@wp.struct
class Params:
    scale: float
    data: wp.array(dtype=float)


@wp.kernel
def many(a: wp.array(dtype=float), b: wp.array2d(dtype=wp.vec3), h: wp.float16, f: float, d: wp.float64,
         i8: wp.int8, u16: wp.uint16, i: int, u64: wp.uint64, flag: bool, v: wp.vec3, m: wp.mat22,
         s: Params, ix: wp.indexedarray(dtype=float), out: wp.array(dtype=float)):
    t = wp.tid()
    x = a[t] * f + float(d) + float(i8) + float(u16) + float(i) + float(h)
    out[t] = x + v[0] + m[1, 1] + s.scale + ix[t]
    if flag:
        out[t] = out[t] + float(u64 % wp.uint64(7))


@wp.kernel
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s


@wp.kernel
def ids(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = i + 1


def _many_args(device):
    n = 4
    a = wp.array(np.arange(n, dtype=np.float32), device=device)
    b = wp.zeros((2, 3), dtype=wp.vec3, device=device)
    p = Params()
    p.scale, p.data = 0.5, a
    ix = wp.indexedarray(a, [wp.array(np.array([3, 2, 1, 0], dtype=np.int32), device=device)])
    out = wp.zeros(n, dtype=float, device=device)
    values = [a, b, 1.5, 2.0, 3.0, -3, 65535, -(2**31), 2**64 - 1, True, wp.vec3(1.0, 2.0, 3.0),
              wp.mat22(1.0, 2.0, 3.0, 4.0), p, ix, out]
    return values, out


def test_bytes_equal_ctypes_struct(device):
    dev = wp.get_device(device)
    values, _ = _many_args(dev)
    packer = many.compiled(dev).packer
    for dim in (4, (2, 2), (1, 2, 3, 4)):
        size, bounds = packer.bounds_bytes(dim)
        expected = bytes(packer.pack(values, dev, packer.bounds(dim)))
        assert packer.pack_bytes(values, dev, bounds) == expected
        assert size == packer.bounds(dim).size
    # None for an array, numpy scalars, a Python list for a vector: the converters' other branches
    values[0], values[3], values[10] = None, np.float32(0.25), [4.0, 5.0, 6.0]
    _, bounds = packer.bounds_bytes(4)
    assert packer.pack_bytes(values, dev, bounds) == bytes(packer.pack(values, dev, packer.bounds(4)))


def test_launch_computes(device):
    values, out = _many_args(device)
    wp.launch(many, dim=4, inputs=values[:-1], outputs=[out], device=device)
    a = np.arange(4, dtype=np.float32)
    expected = a * 2.0 + 3.0 - 3.0 + 65535.0 - 2.0**31 + 1.5  # a * f + d + i8 + u16 + i + h
    expected += 1.0 + 4.0 + 0.5 + a[::-1] + float((2**64 - 1) % 7)  # v[0], m[1, 1], s.scale, ix, flag
    np.testing.assert_allclose(out.numpy(), expected.astype(np.float32), rtol=1e-6)


def test_float32_beyond_range_is_inf_as_with_ctypes(device):
    a = wp.array(np.ones(3, dtype=np.float32), device=device)
    wp.launch(scale, dim=3, inputs=[a, 1e39], device=device)  # struct.pack refuses: ctypes path
    assert np.isinf(a.numpy()).all()


def test_cached_descriptor_follows_the_array(device):
    dev = wp.get_device(device)
    a = wp.zeros(3, dtype=float, device=dev)
    packer = scale.compiled(dev).packer
    _, bounds = packer.bounds_bytes(3)
    before = packer.pack_bytes([a, 1.0], dev, bounds)
    a.requires_grad = True  # a new descriptor (grad pointer): the cached bytes must not be reused
    after = packer.pack_bytes([a, 1.0], dev, bounds)
    assert after != before
    assert after == bytes(packer.pack([a, 1.0], dev, packer.bounds(3)))


def test_errors_still_name_the_parameter(device):
    a = wp.zeros(3, dtype=float, device=device)
    with pytest.raises(wp.LaunchError, match="argument 'a'"):
        wp.launch(scale, dim=3, inputs=[wp.zeros(3, dtype=int, device=device), 1.0], device=device)
    with pytest.raises(wp.LaunchError, match="argument 's'"):
        wp.launch(scale, dim=3, inputs=[a, "x"], device=device)
    with pytest.raises(wp.LaunchError, match="takes 2 argument"):
        wp.launch(scale, dim=3, inputs=[a], device=device)
    with pytest.raises(wp.LaunchError, match="dim must be"):
        wp.launch(scale, dim=[3, -1], inputs=[a, 1.0], device=device)


def test_block_sizes_alternate(device):
    """One launch record per block size (CUDA): alternating sizes each cover every task."""
    out = wp.zeros(1000, dtype=int, device=device)
    for bd in (256, 64, 256, 1024, 32, 64):
        out.zero_()
        wp.launch(ids, dim=1000, inputs=[out], block_dim=bd, device=device)
        np.testing.assert_array_equal(out.numpy(), np.arange(1, 1001), err_msg=f"block_dim={bd}")
    dev = wp.get_device(device)
    if dev.is_cuda:
        from tilewarp.runtime.cuda import LaunchRec

        assert dev.backend._submit is not None, "the native entry (tw_cuda_submit) is not in use"

        sizes = {LaunchRec.from_address(a).block_dim for a in map(ctypes.addressof, dev.backend._recs)}
        assert {32, 64, 256, 1024} <= sizes
    if dev.is_cuda:  # the native entry divides by it
        with pytest.raises(wp.LaunchError, match="block_dim"):
            wp.launch(ids, dim=10, inputs=[out], block_dim=0, device=device)


def test_launch_from_a_new_thread(device):
    """A fresh thread has no CUDA context current: the native entry refuses, Python sets it, retries."""
    a = wp.array(np.ones(8, dtype=np.float32), device=device)
    wp.launch(scale, dim=8, inputs=[a, 2.0], device=device)
    errors = []

    def work():
        try:
            wp.launch(scale, dim=8, inputs=[a, 3.0], device=device)
            wp.synchronize()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors, errors
    np.testing.assert_array_equal(a.numpy(), np.full(8, 6.0, dtype=np.float32))


def test_record_cmd_and_stream_launches_still_work(device):
    a = wp.array(np.ones(4, dtype=np.float32), device=device)
    cmd = wp.launch(scale, dim=4, inputs=[a, 2.0], device=device, record_cmd=True)
    cmd.launch()
    cmd.launch()
    if wp.get_device(device).is_cuda:
        s = wp.Stream(device)
        wp.launch(scale, dim=4, inputs=[a, 0.5], stream=s)
        s.synchronize()
        expected = 2.0
    else:
        expected = 4.0
    np.testing.assert_array_equal(a.numpy(), np.full(4, expected, dtype=np.float32))
