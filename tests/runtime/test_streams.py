"""Devices, streams, events, CUDA graphs, pinned memory and async faults (issue "CUDA runtime,
complete and fast"). CPU tests check the API surface and the errors Warp raises without a GPU
(RuntimeError subclasses); ``cuda`` tests run where a GPU is present."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilewarp as wp
from tilewarp.runtime import cuda as twcuda

needs_cuda = pytest.mark.skipif(wp.get_cuda_device_count() == 0, reason="no CUDA device")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@wp.kernel
def add_one(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0


@wp.kernel
def scale_add(a: wp.array(dtype=float), b: wp.array(dtype=float), s: float):
    i = wp.tid()
    b[i] = b[i] * s + a[i]


@wp.kernel
def slow_fill(a: wp.array(dtype=float), value: float, spins: int):
    i = wp.tid()
    x = float(0.0)
    for k in range(spins):  # keeps the GPU busy so a missing wait would show
        x = x * 0.5 + 1.0
    a[i] = value + x * 0.0


# ---- CPU: API surface and errors --------------------------------------------------------------------


def test_api_names_exist():
    for name in ("Stream", "Event", "ScopedStream", "ScopedDevice", "ScopedCapture", "Graph", "get_stream",
                 "set_stream", "synchronize", "synchronize_device", "synchronize_stream", "synchronize_event",
                 "record_event", "wait_event", "wait_stream", "get_event_elapsed_time", "capture_begin",
                 "capture_end", "capture_launch", "get_cuda_devices", "get_device", "set_device",
                 "is_mempool_supported", "is_mempool_enabled", "from_dlpack", "to_dlpack", "from_torch",
                 "to_torch", "CaptureMode"):
        assert hasattr(wp, name), name


def test_cpu_device_properties_match_warp():
    cpu = wp.get_device("cpu")
    assert cpu.is_cpu and not cpu.is_cuda and cpu.ordinal == -1 and cpu.arch == 0 and cpu.sm_count == 0
    assert not cpu.is_uva and not cpu.is_mempool_supported and not cpu.is_capturing
    assert cpu.total_memory > 0 and cpu.free_memory > 0 and isinstance(cpu.name, str)
    assert cpu.context is None and not cpu.has_stream


@pytest.mark.parametrize("make", [
    lambda: wp.Stream("cpu"), lambda: wp.Event("cpu"), lambda: wp.get_stream("cpu"),
    lambda: wp.get_device("cpu").stream])
def test_cuda_only_objects_on_cpu_raise_runtime_error(make):
    with pytest.raises(RuntimeError, match="not a CUDA device|CUDA devices only|not supported"):
        make()


@wp.kernel
def _bump(a: wp.array(dtype=float), by: float):
    i = wp.tid()
    a[i] = a[i] * 2.0 + by


def test_capture_on_cpu_runs_and_replays():
    """Warp 1.19's CPU graphs: the captured work runs as issued and is recorded; each capture_launch
    replays it in order (launches with their arguments, arrays by reference; memsets and copies)."""
    a = wp.zeros(4, dtype=float, device="cpu")
    b = wp.zeros(4, dtype=float, device="cpu")
    with wp.ScopedCapture("cpu") as capture:
        wp.launch(_bump, dim=4, inputs=[a, 1.0], device="cpu")
        wp.copy(b, a)
        wp.launch(_bump, dim=4, inputs=[a, 0.5], device="cpu")
        b.fill_(7.0)
    assert wp.get_device("cpu").is_capturing is False
    np.testing.assert_array_equal(a.numpy(), [2.5] * 4)  # ran once during the capture
    np.testing.assert_array_equal(b.numpy(), [7.0] * 4)
    for expect_a in (12.5, 52.5):  # each replay: a -> 2a + 1 -> 2(2a + 1) + 0.5
        wp.capture_launch(capture.graph)
        np.testing.assert_array_equal(a.numpy(), [expect_a] * 4)
        np.testing.assert_array_equal(b.numpy(), [7.0] * 4)  # the copy, then the fill, replayed in order
    assert capture.graph.node_count == 4


def test_capture_on_cpu_errors():
    with pytest.raises(RuntimeError, match="not active"):
        wp.capture_end("cpu")
    wp.capture_begin("cpu")
    try:
        with pytest.raises(RuntimeError, match="already in progress"):
            wp.capture_begin("cpu")
    finally:
        wp.capture_end("cpu")
    with pytest.raises(ZeroDivisionError):  # a failing block ends the capture; the device records no more
        with wp.ScopedCapture("cpu"):
            1 / 0
    assert not wp.get_device("cpu").is_capturing


def test_synchronize_functions_are_noops_on_cpu():
    wp.synchronize()
    wp.synchronize_device("cpu")
    wp.synchronize_stream("cpu")
    with wp.ScopedStream(None):  # Warp: a None stream makes the block a no-op
        pass


def test_pinned_cpu_arrays_hold_data():
    rng = np.random.default_rng(3)
    src = rng.random(257).astype(np.float32)
    a = wp.array(src, dtype=float, device="cpu", pinned=True)
    z = wp.zeros(257, dtype=float, device="cpu", pinned=True)
    wp.copy(z, a)
    assert a.pinned and z.pinned
    np.testing.assert_array_equal(z.numpy(), src)
    assert not wp.zeros(3, device="cpu").pinned


@pytest.mark.skipif(wp.get_cuda_device_count() > 0, reason="a GPU is present")
def test_cuda_requests_without_gpu_are_device_errors():
    assert wp.get_cuda_devices() == []
    with pytest.raises(wp.DeviceError, match="no CUDA device"):
        wp.Stream("cuda:0")


# ---- CUDA ---------------------------------------------------------------------------------------------


@pytest.mark.cuda
@needs_cuda
def test_cuda_device_properties():
    devices = wp.get_cuda_devices()
    d = devices[0]
    assert d == wp.get_device("cuda:0") and d.is_cuda and not d.is_cpu and d.ordinal == 0
    assert d.arch >= 50 and d.sm_count > 0 and d.total_memory > d.free_memory > 0 and d.name
    assert d.is_uva and d.is_primary and d.has_context and isinstance(d.context, int)
    assert d.pci_bus_id.count(":") == 2 and (d.uuid is None or d.uuid.startswith("GPU-"))
    with wp.ScopedDevice("cuda:0"):
        assert wp.get_device() == d and wp.get_device("cuda") == d


@pytest.mark.cuda
@needs_cuda
def test_streams_order_work_through_events():
    d = wp.get_device("cuda:0")
    s1, s2 = wp.Stream(d), wp.Stream(d, priority=-1)
    assert s1.cuda_stream and s1.is_blocking and s2.priority <= s1.priority
    n = 1 << 16
    a, b = wp.zeros(n, device=d), wp.zeros(n, device=d)
    wp.synchronize_device(d)
    with wp.ScopedStream(s1):
        assert wp.get_stream(d) is s1
        wp.launch(slow_fill, dim=n, inputs=[a, 7.0, 20000])
    assert wp.get_stream(d) is not s1
    s2.wait_stream(s1)
    wp.copy(b, a, stream=s2)
    wp.synchronize_stream(s2)
    np.testing.assert_array_equal(b.numpy(), np.full(n, 7.0, np.float32))
    assert s1.is_complete and s2.is_complete


@pytest.mark.cuda
@needs_cuda
def test_launch_on_explicit_stream_and_events():
    d = wp.get_device("cuda:0")
    s = wp.Stream(d)
    rng = np.random.default_rng(5)
    x = rng.random(4096).astype(np.float32)
    a, b = wp.array(x, dtype=float, device=d), wp.array(x, dtype=float, device=d)
    tmp = wp.zeros(64, device=d)
    s.wait_stream(d.stream)
    start, end = wp.Event(d, enable_timing=True), wp.Event(d, enable_timing=True)
    s.record_event(start)
    wp.launch(scale_add, dim=4096, inputs=[a, b, 2.0], stream=s)
    wp.launch(slow_fill, dim=64, inputs=[tmp, 1.0, 20000], stream=s)
    s.record_event(end)
    ms = wp.get_event_elapsed_time(start, end)
    assert ms > 0.0 and end.is_complete
    with wp.ScopedDevice(d):
        wp.wait_event(end)  # the current stream now follows s
        np.testing.assert_allclose(b.numpy(), x * 2.0 + x, rtol=1e-6)
        ev = wp.record_event()
        wp.synchronize_event(ev)
        assert ev.is_complete
        wp.wait_stream(s)


@pytest.mark.cuda
@needs_cuda
def test_set_stream_switches_launches_and_copies():
    d = wp.get_device("cuda:0")
    old, s = d.stream, wp.Stream(d)
    a = wp.zeros(100, device=d)
    wp.set_stream(s, d, sync=True)
    try:
        assert d.stream is s
        wp.launch(add_one, dim=100, inputs=[a])
        wp.synchronize_stream(d)
        np.testing.assert_array_equal(a.numpy(), np.ones(100, np.float32))
    finally:
        wp.set_stream(old, d, sync=True)
    assert d.stream is old


@pytest.mark.cuda
@needs_cuda
def test_graph_capture_replays_a_sequence_of_launches():
    d = wp.get_device("cuda:0")
    n = 1000
    a = wp.zeros(n, device=d)
    b = wp.array(np.arange(n, dtype=np.float32), dtype=float, device=d)
    with wp.ScopedCapture(d) as capture:
        assert d.is_capturing
        for _ in range(3):
            wp.launch(add_one, dim=n, inputs=[a])
        wp.launch(scale_add, dim=n, inputs=[b, a, 1.0])
    assert not d.is_capturing and capture.graph.node_count == 4
    np.testing.assert_array_equal(a.numpy(), np.zeros(n, np.float32))  # captured, not run
    for _ in range(5):
        wp.capture_launch(capture.graph)
    expect = np.zeros(n, np.float32)
    for _ in range(5):
        expect = expect + 3.0 + np.arange(n, dtype=np.float32)
    np.testing.assert_array_equal(a.numpy(), expect)


@pytest.mark.cuda
@needs_cuda
def test_graphs_relaunch_with_memory_they_allocated_and_die_during_captures():
    """A graph that allocated memory it did not free launches again (the memory keeps its address:
    the array stays valid); a graph dropped while another capture runs is destroyed after that
    capture, which it would otherwise invalidate."""
    d = wp.get_device("cuda:0")
    if not wp.is_mempool_enabled(d):
        pytest.skip("allocations inside a capture need the memory pool")
    with wp.ScopedCapture(d) as capture:
        a = wp.zeros(64, device=d)
        wp.launch(add_one, dim=64, inputs=[a])
    for _ in range(3):
        wp.capture_launch(capture.graph)  # each launch allocates and zeroes again, then adds one
    np.testing.assert_array_equal(a.numpy(), np.ones(64, np.float32))
    b = wp.zeros(64, device=d)
    with wp.ScopedCapture(d) as capture:  # rebinding drops the first graph inside this capture
        wp.launch(add_one, dim=64, inputs=[b])
    wp.capture_launch(capture.graph)
    wp.capture_launch(capture.graph)
    np.testing.assert_array_equal(b.numpy(), np.full(64, 2.0, np.float32))


@pytest.mark.cuda
@needs_cuda
def test_capture_begin_end_with_a_kernel_first_loaded_inside():
    @wp.kernel
    def twice(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = a[i] * 2.0 + 1.0

    d = wp.get_device("cuda:0")
    s = wp.Stream(d)
    a = wp.ones(256, device=d)
    s.wait_stream(d.stream)
    wp.capture_begin(stream=s)
    try:
        wp.launch(twice, dim=256, inputs=[a], stream=s)
    finally:
        graph = wp.capture_end(stream=s)
    wp.capture_launch(graph, stream=s)
    wp.capture_launch(graph, stream=s)
    wp.synchronize_stream(s)
    np.testing.assert_array_equal(a.numpy(), np.full(256, 7.0, np.float32))


@pytest.mark.cuda
@needs_cuda
def test_blocking_calls_inside_capture_raise_and_end_the_capture():
    d = wp.get_device("cuda:0")
    a = wp.zeros(10, device=d)
    with pytest.raises(RuntimeError, match="capture"):
        with wp.ScopedCapture(d):
            wp.launch(add_one, dim=10, inputs=[a])
            a.numpy()
    assert not d.is_capturing
    with pytest.raises(RuntimeError, match="capture"):
        with wp.ScopedCapture(d):
            wp.synchronize()
    wp.launch(add_one, dim=10, inputs=[a])  # the stream works again
    np.testing.assert_array_equal(a.numpy(), np.ones(10, np.float32))


@pytest.mark.cuda
@needs_cuda
def test_pinned_and_cross_device_copies():
    d = wp.get_device("cuda:0")
    rng = np.random.default_rng(9)
    x = rng.random(10_000).astype(np.float32)
    host = wp.array(x, dtype=float, device="cpu", pinned=True)
    assert host.pinned
    dev = host.to(d)
    back = wp.empty(10_000, dtype=float, device="cpu", pinned=True)
    wp.copy(back, dev, stream=d.stream)
    np.testing.assert_array_equal(back.numpy(), x)
    np.testing.assert_array_equal(dev.to("cpu").numpy(), x)


@pytest.mark.cuda
@needs_cuda
def test_out_of_memory_names_the_size():
    with pytest.raises(wp.CudaError, match=r"out of memory allocating 281474976710656 bytes"):
        wp.empty((1 << 24, 1 << 24), dtype=wp.uint8, device="cuda:0")  # each extent below 2**31


@pytest.mark.cuda
@needs_cuda
def test_native_launch_entry_is_used():
    assert twcuda.native_library() is not None
    assert wp.get_device("cuda:0").backend._native is not None


FAULT_SCRIPT = textwrap.dedent("""
    import tilewarp as wp
    wp.config.quiet = True

    @wp.kernel
    def write_far_out_of_bounds(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i * 100000000] = 1.0

    a = wp.zeros(4, device="cuda:0")
    wp.launch(write_far_out_of_bounds, dim=16, inputs=[a])
    try:
        wp.synchronize()
    except RuntimeError as e:
        print("CAUGHT", type(e).__name__, e)
""")


@pytest.mark.cuda
@needs_cuda
def test_async_fault_names_the_kernel(tmp_path):
    # A faulting kernel poisons the CUDA context for good, so it runs in a child process.
    script = tmp_path / "fault.py"
    script.write_text(FAULT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    out = res.stdout + res.stderr
    assert "CAUGHT KernelFaultError" in out and "ILLEGAL_ADDRESS" in out, out
    assert "write_far_out_of_bounds" in out, out
