"""The CUDA code tilewarp emits keeps array traffic on global-memory instructions (no GPU needed).

Indexing the by-value kernel parameter with a runtime value makes NVCC copy it to local memory;
every array pointer then becomes generic and loads lose ``ld.global`` (measured on an H100: the
issue's integrate kernel ran at half bandwidth). These checks read NVRTC's PTX to keep it that way.
"""
import importlib.util

import pytest
from cuda.bindings import nvrtc

from tilewarp.compile.cache import NATIVE_DIR
from tilewarp.emit import emit_module

KERNELS = '''
import tilewarp as wp


@wp.kernel
def lone_tid(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt


@wp.kernel
def two_d(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i, j = wp.tid()
    b[i, j] = a[i, j] * 2.0


@wp.kernel
def four_d(a: wp.array4d(dtype=float)):
    i, j, k, l = wp.tid()
    a[i, j, k, l] = a[i, j, k, l] + 1.0
'''


def _ptx(source: str) -> str:
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"k.cu", 0, [], [])
    opts = [b"--std=c++17", b"--gpu-architecture=compute_90", b"-DTW_CUDA=1", f"-I{NATIVE_DIR}".encode()]
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
        err, n = nvrtc.nvrtcGetPTXSize(prog)
        buf = b" " * n
        nvrtc.nvrtcGetPTX(prog, buf)
        return buf.decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("k") / "codegen_kernels.py"
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("codegen_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name,loads,stores", [("lone_tid", 6, 3), ("two_d", 1, 1), ("four_d", 1, 1)])
def test_array_access_stays_global(kernels, name, loads, stores):
    ptx = _ptx(emit_module(getattr(kernels, name).ir))
    assert ".local" not in ptx, "the kernel parameter spilled to local memory"
    assert ptx.count("ld.global") >= loads and ptx.count("st.global") >= stores
