"""NVRTC compilation and the CUDA backend. Most tests need no GPU; ``cuda``-marked ones are skipped
without one."""
import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tilewarp.compile import nvrtc
from tilewarp.errors import CompileError, CudaError, DeviceError
from tilewarp.runtime import cuda

# Self-contained on purpose: no tilewarp.h, so this tests the toolchain alone.
DOUBLE_SRC = r"""
struct DoubleArgs { long long n; unsigned long long ptr; };
extern "C" __global__ void double_index(DoubleArgs a) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride)
        ((int*)a.ptr)[i] = 2 * (int)i;
}
"""


class DoubleArgs(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("ptr", ctypes.c_uint64)]


def test_version_and_include_dirs():
    major, minor = nvrtc.nvrtc_version()
    assert major >= 13
    dirs = nvrtc.include_dirs()
    assert dirs == [str(nvrtc.NATIVE_DIR)] and nvrtc.NATIVE_DIR.name == "native"
    extra = nvrtc.include_dirs(extra=True)
    assert extra[0] == dirs[0] and any(d.endswith(os.path.join("cu13", "include")) for d in extra)


def test_compile_cubin_elf(tmp_path):
    cubin = nvrtc.compile_cubin(DOUBLE_SRC, "double_index", 90, defines={"FOO": 1}, source_dir=str(tmp_path))
    assert cubin[:4] == b"\x7fELF"
    assert (tmp_path / "double_index.cu").read_text() == DOUBLE_SRC
    dbg = nvrtc.compile_cubin(DOUBLE_SRC, "double_dbg", 90, defines={}, debug=True, fast_math=True,
                              source_dir=str(tmp_path))
    assert dbg[:4] == b"\x7fELF"


def test_defines_reach_the_source(tmp_path):
    src = 'extern "C" __global__ void k(int* p) { *p = TW_TEST_VALUE + TW_CUDA; }\n'
    assert nvrtc.compile_cubin(src, "defs", 80, defines={"TW_TEST_VALUE": 7}, source_dir=str(tmp_path))[:4] == b"\x7fELF"
    with pytest.raises(CompileError):  # without the define the name is undeclared
        nvrtc.compile_cubin(src, "nodefs", 80, defines={}, source_dir=str(tmp_path))


def test_syntax_error_raises_compile_error(tmp_path):
    src = 'extern "C" __global__ void broken(int* p) {\n    int x = ;\n}\n'
    with pytest.raises(CompileError) as info:
        nvrtc.compile_cubin(src, "broken", 90, defines={}, source_dir=str(tmp_path))
    err = info.value
    path = str(tmp_path / "broken.cu")
    assert err.source_path == path and os.path.exists(path)
    assert "expected an expression" in err.log
    text = str(err)
    assert path in text and "expected an expression" in text


@pytest.mark.skipif(not (nvrtc.NATIVE_DIR / "tilewarp.h").exists(), reason="native/tilewarp.h not written yet")
def test_native_header_compiles(tmp_path):
    src = '#include "tilewarp.h"\nextern "C" __global__ void empty_kernel() {}\n'
    assert nvrtc.compile_cubin(src, "hdr", 90, defines={}, source_dir=str(tmp_path))[:4] == b"\x7fELF"


def test_device_count_never_raises():
    n = cuda.device_count()
    assert isinstance(n, int) and n >= 0
    assert cuda.device_count() == n  # cached


@pytest.mark.skipif(cuda.device_count() > 0, reason="a GPU is present")
def test_backend_without_gpu_raises_clearly():
    with pytest.raises((DeviceError, CudaError), match="CUDA"):
        cuda.CudaBackend(0)


needs_cuda = pytest.mark.skipif(cuda.device_count() == 0, reason="no CUDA device")


@pytest.fixture(scope="module")
def backend():
    return cuda.CudaBackend(0)


@pytest.mark.cuda
@needs_cuda
def test_launch_writes_two_i(backend, tmp_path):
    cubin = nvrtc.compile_cubin(DOUBLE_SRC, "double_index", backend.arch, defines={}, source_dir=str(tmp_path))
    fn = backend.load_module(cubin).function("double_index")
    n = 100_003
    ptr = backend.alloc(n * 4)
    try:
        backend.memset(ptr, 0xFF, n * 4)
        args = DoubleArgs(n, ptr)
        backend.launch(fn, ctypes.addressof(args), n)
        backend.launch(fn, ctypes.addressof(args), 0)  # no-op
        out = np.empty(n, dtype=np.int32)
        backend.copy_dtoh(out.ctypes.data, ptr, n * 4)
        np.testing.assert_array_equal(out, 2 * np.arange(n, dtype=np.int32))
        # htod + dtod round trip
        src = np.arange(n, dtype=np.int32)[::-1].copy()
        ptr2 = backend.alloc(n * 4)
        backend.copy_htod(ptr2, src.ctypes.data, n * 4)
        backend.copy_dtod(ptr, ptr2, n * 4)
        backend.free(ptr2)
        backend.copy_dtoh(out.ctypes.data, ptr, n * 4)
        np.testing.assert_array_equal(out, src)
        backend.synchronize()
    finally:
        backend.free(ptr)
    assert backend.arch >= 50 and backend.sm_count > 0 and backend.total_memory > 0 and backend.name


@pytest.mark.cuda
@needs_cuda
def test_out_of_memory_is_cuda_error(backend):
    with pytest.raises(CudaError, match="out of memory allocating"):
        backend.alloc(1 << 50)


@pytest.mark.cuda
@needs_cuda
def test_illegal_address_surfaces_at_synchronize(tmp_path):
    # A faulting kernel poisons the whole context, so run it in a child process.
    script = textwrap.dedent(f"""
        import ctypes
        from tilewarp.compile import nvrtc
        from tilewarp.runtime import cuda
        from tilewarp.errors import CudaError
        src = {DOUBLE_SRC!r}
        class A(ctypes.Structure):
            _fields_ = [("n", ctypes.c_int64), ("ptr", ctypes.c_uint64)]
        b = cuda.CudaBackend(0)
        fn = b.load_module(nvrtc.compile_cubin(src, "bad", b.arch, defines={{}}, source_dir={str(tmp_path)!r})).function("double_index")
        a = A(1000, 0x10)
        b.launch(fn, ctypes.addressof(a), 1000)
        try:
            b.synchronize()
        except CudaError as e:
            print("CAUGHT", e)
    """)
    root = str(nvrtc.NATIVE_DIR.parent)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert "CAUGHT" in res.stdout and "ILLEGAL_ADDRESS" in res.stdout, res.stdout + res.stderr
