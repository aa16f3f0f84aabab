"""CPU backend without the frontend: hand-written C++ entries compiled by compile/host.py, launched
through the native thread pool."""
import ctypes
import multiprocessing as mp
import os
import threading

import numpy as np
import pytest

from tilewarp.compile import host
from tilewarp.errors import CompileError
from tilewarp.runtime.cpu import CpuBackend, runtime_library

KERNELS = r"""
#include <cstdint>
struct out_args { void* out; };
#define ENTRY(name) extern "C" void name(const void* p, int64_t begin, int64_t end)
ENTRY(times_two) {  // out[i] = i*2 over a double array
    double* out = (double*)((const out_args*)p)->out;
    for (int64_t i = begin; i < end; ++i) out[i] = double(i) * 2.0;
}
ENTRY(record_chunk) {  // out[i] = first task of the chunk that ran i
    int64_t* out = (int64_t*)((const out_args*)p)->out;
    for (int64_t i = begin; i < end; ++i) out[i] = begin;
}
ENTRY(add_one) {
    int32_t* out = (int32_t*)((const out_args*)p)->out;
    for (int64_t i = begin; i < end; ++i) out[i] += 1;
}
"""


class OutArgs(ctypes.Structure):
    _fields_ = [("out", ctypes.c_void_p)]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    so = tmp_path_factory.mktemp("cpu") / "kernels.so"
    host.compile_shared(KERNELS, so)
    return so


@pytest.fixture(scope="module")
def backend():
    return CpuBackend()


@pytest.fixture
def two_threads(backend):
    """Force a pool of 2 threads so the parallel path runs even on a 1-core machine."""
    backend.set_num_threads(2)
    yield
    backend.set_num_threads(0)


def launch(backend, module, name, arr, n, block_dim=1):
    args = OutArgs(arr.ctypes.data)
    backend.launch(module.function(name), ctypes.addressof(args), n, block_dim)


def test_times_two_million(backend, kernels, two_threads):
    mod = backend.load_module(kernels)
    n = 1_000_000
    out = np.full(n, -1.0)
    launch(backend, mod, "times_two", out, n)
    np.testing.assert_array_equal(out, np.arange(n) * 2.0)


@pytest.mark.parametrize("block_dim", [1, 256])
def test_chunks_deterministic(backend, kernels, two_threads, block_dim):
    mod = backend.load_module(kernels)
    n = 100_003
    bounds = backend.partition(n, block_dim)
    assert bounds[0] == 0 and bounds[-1] == n and len(bounds) == 3  # 2 threads -> 2 chunks
    assert all(b % block_dim == 0 for b in bounds[:-1])
    expect = np.empty(n, np.int64)
    for b, e in zip(bounds[:-1], bounds[1:]):
        expect[b:e] = b
    for _ in range(20):
        out = np.full(n, -1, np.int64)
        launch(backend, mod, "record_chunk", out, n, block_dim)
        np.testing.assert_array_equal(out, expect)


def test_small_launches_inline(backend, kernels, two_threads):
    mod = backend.load_module(kernels)
    out = np.full(8, -1, np.int64)
    launch(backend, mod, "record_chunk", out, 0)
    assert (out == -1).all()
    launch(backend, mod, "record_chunk", out, 1)
    assert out[0] == 0 and (out[1:] == -1).all()
    assert backend.partition(0) == [0] and backend.partition(1) == [0, 1]


def test_n0_n1_times_two(backend, kernels):
    mod = backend.load_module(kernels)
    out = np.full(4, -1.0)
    launch(backend, mod, "times_two", out, 0)
    assert (out == -1).all()
    launch(backend, mod, "times_two", out, 1)
    assert out.tolist() == [0.0, -1.0, -1.0, -1.0]


def test_python_threads_launch_concurrently(backend, kernels, two_threads):
    mod = backend.load_module(kernels)
    n = 50_000
    outs = [np.zeros(n, np.int32) for _ in range(4)]

    def worker(out):
        for _ in range(50):
            launch(backend, mod, "add_one", out, n)

    threads = [threading.Thread(target=worker, args=(o,)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in outs:
        assert (o == 50).all()


def _fork_child(kernels, q):
    try:
        be = CpuBackend()
        mod = be.load_module(kernels)
        out = np.zeros(200_000, np.int32)
        launch(be, mod, "add_one", out, out.size)
        q.put(bool((out == 1).all()))
    except BaseException as e:  # report instead of hanging the parent
        q.put(repr(e))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork of a multi-threaded process
def test_pool_survives_fork(backend, kernels, two_threads):
    mod = backend.load_module(kernels)
    out = np.zeros(200_000, np.int32)
    launch(backend, mod, "add_one", out, out.size)  # pool threads exist now
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_fork_child, args=(kernels, q))
    p.start()
    p.join(timeout=60)
    if p.is_alive():
        p.kill()
        pytest.fail("launch in a forked child deadlocked")
    assert q.get(timeout=5) is True
    launch(backend, mod, "add_one", out, out.size)  # parent pool still works
    assert (out == 2).all()


def test_compile_error(tmp_path):
    bad = 'extern "C" void k(const void*, long b, long e) { undeclared_thing(b); }\n'
    with pytest.raises(CompileError) as info:
        host.compile_shared(bad, tmp_path / "bad.so")
    cpp = str(tmp_path / "bad.cpp")
    msg = str(info.value)
    assert cpp in msg and "undeclared_thing" in msg and "error" in msg
    assert info.value.source_path == cpp and os.path.isfile(cpp)
    assert "undeclared_thing" in info.value.log
    assert not (tmp_path / "bad.so").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.cpp"]  # no temp files left behind


def _compile_same(out, barrier, q):
    try:
        barrier.wait(timeout=30)
        host.compile_shared(KERNELS, out)
        q.put("ok")
    except BaseException as e:
        q.put(repr(e))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_concurrent_compile_same_output(tmp_path, backend):
    out = tmp_path / "same.so"
    ctx = mp.get_context("fork")
    barrier, q = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_compile_same, args=(out, barrier, q)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [q.get(timeout=5) for _ in procs] == ["ok", "ok"]
    assert all(p.exitcode == 0 for p in procs)
    mod = backend.load_module(out)
    arr = np.zeros(10)
    launch(backend, mod, "times_two", arr, 10)
    assert arr[9] == 18.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.cpp", "same.so"]


def test_pch_used_and_fallback(tmp_path, monkeypatch):
    if not host._identity(host.compiler())[1]:
        pytest.skip("PCH is only used with g++")
    native = tmp_path / "native"
    native.mkdir()
    (native / "tilewarp.h").write_text("#pragma once\ninline int tw_seven() { return 7; }\n")
    monkeypatch.setattr(host, "NATIVE_DIR", native)
    src = '#include "tilewarp.h"\nextern "C" int seven() { return tw_seven(); }\n'
    host.compile_shared(src, tmp_path / "a.so", pch_dir=tmp_path / "pch")
    assert len(list((tmp_path / "pch").rglob("tilewarp.h.gch"))) == 1
    assert ctypes.CDLL(str(tmp_path / "a.so")).seven() == 7
    # a header that does not compile: no PCH, and the compile still works for a source not using it
    (native / "tilewarp.h").write_text("#error broken\n")
    host.compile_shared('extern "C" int one() { return 1; }\n', tmp_path / "b.so", pch_dir=tmp_path / "pch")
    assert ctypes.CDLL(str(tmp_path / "b.so")).one() == 1


def test_memory_ops(backend):
    n = 1000
    a, b = backend.alloc(n), backend.alloc(n)
    assert a % 64 == 0 and b % 64 == 0 and backend.alloc(0) != 0
    backend.memset(a, 7, n)
    host_buf = np.zeros(n, np.uint8)
    backend.copy_dtod(b, a, n)
    backend.copy_dtoh(host_buf.ctypes.data, b, n)
    assert (host_buf == 7).all()
    host_buf[:] = np.arange(n) % 251
    backend.copy_htod(a, host_buf.ctypes.data, n)
    check = np.zeros(n, np.uint8)
    backend.copy_dtoh(check.ctypes.data, a, n)
    np.testing.assert_array_equal(check, host_buf)
    backend.free(a)
    backend.free(b)
    backend.free(0)
    with pytest.raises(Exception):
        backend.free(a)
    backend.synchronize()


def test_missing_symbol(backend, kernels):
    with pytest.raises(Exception, match="no_such_kernel"):
        backend.load_module(kernels).function("no_such_kernel")


def test_runtime_build_is_cached(tmp_path):
    p1 = host.build_runtime(tmp_path)
    mtime = os.stat(p1).st_mtime_ns
    assert host.build_runtime(tmp_path) == p1 and os.stat(p1).st_mtime_ns == mtime
    assert os.path.basename(p1).startswith("libtilewarp_cpu-")
    lib = ctypes.CDLL(p1)
    assert lib.tw_cpu_num_threads() >= 1


def test_num_threads(backend):
    assert backend.num_threads >= 1
    backend.set_num_threads(3)
    assert backend.num_threads == 3 and runtime_library().tw_cpu_num_threads() == 3
    backend.set_num_threads(0)
    assert backend.num_threads >= 1


def test_target_identity_stable():
    assert host.target_identity() == host.target_identity()
    assert isinstance(host.target_identity(), str) and len(host.target_identity()) > 16
