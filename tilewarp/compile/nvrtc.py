"""NVRTC: CUDA C++ source -> CUBIN for one exact sm_XX.

We ship CUBIN, never PTX: the GPUs we target run a CUDA 13.0 driver that rejects PTX from a newer
NVRTC (UNSUPPORTED_PTX_VERSION), while SASS from any 13.x NVRTC loads there. NVRTC never touches
the driver, so this module works on machines with no GPU.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

from ..errors import CompileError

from .cache import atomic_write
from .paths import NATIVE_DIR


@functools.lru_cache(maxsize=None)
def _nvrtc():
    from cuda.bindings import nvrtc
    return nvrtc


def _err_text(nv, res) -> str:
    try:
        _, s = nv.nvrtcGetErrorString(res)
        return s.decode() if isinstance(s, bytes) else str(s)
    except Exception:  # noqa: BLE001 - a failing error-string call must not hide the real error
        return str(res)


def _ok(nv, res, what: str):
    if res != nv.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"NVRTC {what} failed: {_err_text(nv, res)}")


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> tuple[int, int]:
    nv = _nvrtc()
    res, major, minor = nv.nvrtcVersion()
    _ok(nv, res, "nvrtcVersion")
    return (int(major), int(minor))


@functools.lru_cache(maxsize=None)
def _wheel_include_dirs() -> tuple[str, ...]:
    # Build the paths from the nvidia.cu13 wheel itself: cuda.pathfinder may silently fall back to
    # a system toolkit with different (older) headers.
    try:
        import nvidia.cu13 as cu13
    except ImportError:
        return ()
    out = []
    for base in cu13.__path__:
        inc = Path(base) / "include"
        if inc.is_dir():
            out.append(str(inc))
            if (inc / "cccl").is_dir():
                out.append(str(inc / "cccl"))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def mathdx_options() -> tuple[str, ...]:
    """NVRTC options of a module that uses cuBLASDx (native/tile/dx.h): the MathDx headers (and the
    CUTLASS they ship), the CUDA wheels' headers, functions device-side by default (MathDx's
    headers do not mark them)."""
    try:
        import nvidia.mathdx as mathdx
    except ImportError as e:
        raise CompileError("enable_mathdx_gemm needs the nvidia-mathdx package (pip install nvidia-mathdx)") from e
    root = Path(list(mathdx.__path__)[0])
    return ("--device-as-default-execution-space", f"-I{root / 'include'}",
            f"-I{root / 'external' / 'cutlass' / 'include'}", *(f"-I{d}" for d in _wheel_include_dirs()))


def include_dirs(extra: bool = False) -> list[str]:
    """native/ first; CUDA wheel headers only on request (CCCL headers cost seconds to compile)."""
    dirs = [str(NATIVE_DIR)]
    if extra:
        dirs.extend(_wheel_include_dirs())
    return dirs


def arch_name(arch: int) -> str:
    """NVRTC's name for compute capability ``arch``: Hopper builds for sm_90a, whose wgmma the tile
    GEMM uses (a CUBIN is for one exact architecture anyway, so nothing is lost)."""
    return f"sm_{int(arch)}a" if int(arch) == 90 else f"sm_{int(arch)}"


def _options(arch: int, defines: dict, debug: bool, fast_math: bool, extra_options, extra_includes):
    opts = ["--std=c++17", f"--gpu-architecture={arch_name(arch)}", "-DTW_CUDA=1"]
    opts += [f"-I{d}" for d in include_dirs(extra=extra_includes)]
    if debug:
        opts += ["-G", "-lineinfo", "-DTW_DEBUG=1"]
    if fast_math:
        opts.append("--use_fast_math")
    for k, v in (defines or {}).items():
        opts.append(f"-D{k}" if v is None or v is True else f"-D{k}={v}")
    opts.extend(extra_options)
    return opts


def compile_cubin(
    source: str,
    name: str,
    arch: int,
    *,
    defines: dict | None = None,
    debug: bool = False,
    fast_math: bool = False,
    extra_options=(),
    source_dir: str,
    extra_includes: bool = False,
) -> bytes:
    """Compile ``source`` to a CUBIN for ``sm_<arch>``; the source is kept at ``<source_dir>/<name>.cu``.

    Thread-safe: every call owns its nvrtcProgram. Raises CompileError with the NVRTC log and the
    path of the kept source on failure.
    """
    nv = _nvrtc()
    os.makedirs(source_dir, exist_ok=True)
    src_path = os.path.join(source_dir, f"{name}.cu")
    # Write via a temp file + rename so concurrent compiles of the same kernel never see half a file
    # (named after its writer, so a killed build's leftover is swept: cache.sweep_stale).
    atomic_write(Path(src_path), source.encode("utf-8"))

    opts = [o.encode() for o in _options(arch, defines, debug, fast_math, extra_options, extra_includes)]
    # The program name is what NVRTC prints in diagnostics; the full path makes them clickable.
    res, prog = nv.nvrtcCreateProgram(source.encode(), src_path.encode(), 0, [], [])
    _ok(nv, res, "nvrtcCreateProgram")
    try:
        (res,) = nv.nvrtcCompileProgram(prog, len(opts), opts)
        if res != nv.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(
                f"NVRTC failed to compile kernel module '{name}' for sm_{arch} ({_err_text(nv, res)})",
                log=_program_log(nv, prog),
                source_path=src_path,
            )
        res, size = nv.nvrtcGetCUBINSize(prog)
        _ok(nv, res, "nvrtcGetCUBINSize")
        buf = bytearray(size)
        (res,) = nv.nvrtcGetCUBIN(prog, buf)
        _ok(nv, res, "nvrtcGetCUBIN")
        return bytes(buf)
    finally:
        nv.nvrtcDestroyProgram(prog)


def _program_log(nv, prog) -> str:
    res, size = nv.nvrtcGetProgramLogSize(prog)
    if res != nv.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buf = bytearray(size)
    nv.nvrtcGetProgramLog(prog, buf)
    return bytes(buf).rstrip(b"\0").decode("utf-8", errors="replace")
