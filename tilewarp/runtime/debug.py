"""Checks around a launch: the debug error slot (bounds, asserts) and ``wp.config.verify_fp``.

A debug build records its first failed check in the module's ``tw_error_state``
(``native/core/target.h``). The host clears it before each launch and reads it after (``dlsym`` of
the loaded ``.so`` on the CPU, ``cuModuleGetGlobal`` and a copy once the stream is synchronised on
CUDA), then raises ``KernelRuntimeError`` naming the kernel, the array, the index and the user's
file:line. The check itself never writes out of bounds, so memory is intact when it raises.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..language import types as T
from ..autodiff.access import param_access
from ..errors import KernelRuntimeError
from ..ir import nodes as ir
from .. import config

ERR_BOUNDS, ERR_ASSERT, ERR_NAN, ERR_INDEXED, ERR_DIVZERO, ERR_NULL, ERR_NOT_SPD = 1, 2, 3, 4, 5, 6, 7


class ErrorState(ctypes.Structure):
    """ctypes twin of ``tw::error_state_t``."""

    _fields_ = [("code", ctypes.c_int32), ("site", ctypes.c_int32), ("arg", ctypes.c_int32),
                ("dim", ctypes.c_int32), ("index", ctypes.c_int64), ("extent", ctypes.c_int64)]


class _HostSlot:
    def __init__(self, module):
        self.state = ErrorState.in_dll(module.lib, "tw_error_state")

    def reset(self):
        ctypes.memset(ctypes.addressof(self.state), 0, ctypes.sizeof(ErrorState))

    def read(self) -> ErrorState:
        return ErrorState.from_buffer_copy(self.state)


class _DeviceSlot:
    def __init__(self, module, device):
        from .cuda import _driver, check

        module.backend.make_current()
        self.backend = device.backend
        self.ptr, size = check(_driver().cuModuleGetGlobal(module.handle, b"tw_error_state"),
                               "cuModuleGetGlobal('tw_error_state')")
        self.ptr = int(self.ptr)
        assert int(size) == ctypes.sizeof(ErrorState), "tw::error_state_t and ErrorState disagree"

    def reset(self):
        self.backend.memset(self.ptr, 0, ctypes.sizeof(ErrorState))  # stream-ordered before the launch

    def read(self) -> ErrorState:
        out = ErrorState()
        self.backend.copy_dtoh(ctypes.addressof(out), self.ptr, ctypes.sizeof(ErrorState))  # synchronises
        return out


class _NoSlot:
    """A module that never references the slot (no checked access, no assert): nothing to read."""

    def reset(self):
        pass

    def read(self) -> ErrorState:
        return ErrorState()


def _slot(module, device):
    try:
        return _HostSlot(module) if device.is_cpu else _DeviceSlot(module, device)
    except (ValueError, AttributeError):  # symbol absent (dropped as unused)
        return _NoSlot()
    except Exception as e:  # CudaError: CUDA_ERROR_NOT_FOUND for an unreferenced global
        if "NOT_FOUND" in str(e):
            return _NoSlot()
        raise


class DebugChecks:
    """One debug build's error slot and the site table that explains it."""

    def __init__(self, kernel: str, fn: ir.Function, sites: list, module, device):
        self.kernel, self.fn, self.sites = kernel, fn, sites
        self.slot = _slot(module, device)

    def before(self):
        self.slot.reset()

    def after(self):
        state = self.slot.read()
        if state.code:
            raise self.error(state)

    def error(self, s: ErrorState) -> KernelRuntimeError:
        site = self.sites[s.site] if 0 <= s.site < len(self.sites) else None
        where = f" (in {site.function}())" if site is not None and site.function != self.fn.name else ""
        head = f"kernel '{self.kernel}'{where}"
        loc = site.loc if site is not None else self.fn.loc
        if s.code == ERR_ASSERT and s.site < 0:
            return KernelRuntimeError(
                f"{head}: a native check failed (a vector or matrix component index out of range?) at line "
                f"{s.index} of a tilewarp header", kind="native", kernel=self.kernel, loc=loc)
        if s.code == ERR_ASSERT:
            return KernelRuntimeError(f"{head}: assertion failed", kind="assert", kernel=self.kernel, loc=loc)
        if s.code == ERR_NOT_SPD:
            calls = [x for x in ir.walk(self.fn.body) if isinstance(x, ir.Assign) and isinstance(x.op, ir.Call)
                     and x.op.builtin.name in ("tile_cholesky", "tile_cholesky_inplace")]
            return KernelRuntimeError(f"{head}: tile_cholesky() met pivot {s.index} of {s.extent} not positive: the "
                                      "matrix is not symmetric positive definite (release builds give NaN)",
                                      kind="not_spd", kernel=self.kernel, loc=calls[0].loc if calls else loc)
        if s.code == ERR_DIVZERO:
            return KernelRuntimeError(f"{head}: integer division or modulo by zero (release builds give 0)",
                                      kind="divzero", kernel=self.kernel, loc=loc)
        array = site.array if site is not None else "an array"
        param = site.param if site is not None else None
        dim = s.dim + (site.dim_offset if site is not None else 0)
        if s.code == ERR_NULL:
            return KernelRuntimeError(f"{head}: {array} is None (a null array); release builds read zeros from it and "
                                      f"skip writes to it", kind="null", kernel=self.kernel, loc=loc, array=param)
        if s.code == ERR_INDEXED:
            msg = (f"{head}: the index array of dimension {dim} of {array} holds {s.index}, outside the data "
                   f"array's dimension {dim} (size {s.extent})")
            kind = "indexed"
        else:
            msg = (f"{head}: index {s.index} is out of bounds for dimension {dim} of {array} (size {s.extent}; "
                   f"valid indices are {-s.extent} to {s.extent - 1})")
            kind = "bounds"
        return KernelRuntimeError(msg, kind=kind, kernel=self.kernel, loc=loc, array=param, index=s.index,
                                  dim=dim, extent=s.extent)


# ---- wp.config.verify_fp ---------------------------------------------------------------------------


def written_params(fn: ir.Function) -> set:
    """Indices of ``fn``'s array parameters it may write (stores, atomics, tile stores, through views
    and calls)."""
    return {k for k in param_access(fn)[1] if T.is_array(fn.params[k].type)}


def _float_arrays(fn: ir.Function, values, written: set):
    """``(index, data)`` for each non-empty float array among the parameters ``written``."""
    for k in sorted(written):
        if k >= len(values) or not T.is_float(T.scalar_of(fn.params[k].type.dtype)):
            continue
        value = values[k]
        if value is None or getattr(value, "size", 0) == 0:
            continue
        yield k, np.asarray(value.numpy())


def nonfinite_before(fn: ir.Function, values, written: set) -> dict:
    """Where the arrays the kernel may write already hold NaNs or infinities, before the launch
    (parameter index -> mask); the launch is blamed only for the others."""
    found = {}
    for k, data in _float_arrays(fn, values, written):
        bad = ~np.isfinite(data)
        if bad.any():
            found[k] = bad
    return found


def check_finite(kernel: str, fn: ir.Function, values, written: set, before: dict | None = None) -> None:
    """Raise if a float array the kernel may write holds a NaN or an infinity that was not there
    before the launch (``before``, from ``nonfinite_before``)."""
    before = before or {}
    for k, data in _float_arrays(fn, values, written):
        bad = ~np.isfinite(data)
        old = before.get(k)
        if old is not None:
            old = old & bad  # still there after the launch
            bad &= ~old
        if bad.any():
            value = values[k]
            where = np.argwhere(bad)[0]
            index = tuple(int(i) for i in where[: len(value.shape)])
            what = "nan" if np.isnan(data[tuple(where)]) else "inf"
            note = (f"; {int(old.sum())} non-finite value(s) already there before the launch are not counted"
                    if old is not None and old.any() else "")
            raise KernelRuntimeError(
                f"kernel '{kernel}' left a non-finite value ({what}) in array '{fn.param_names[k]}' at index "
                f"{index} (wp.config.verify_fp){note}", kind="nonfinite", kernel=kernel, loc=fn.loc,
                array=fn.param_names[k], index=index)


def checked_launch(compiled, args, size: int, block_dim: int, values) -> None:
    """Launch with the debug error slot cleared before and read after, then ``verify_fp``'s check
    of the values the launch wrote (NaNs already in the arrays are not the kernel's doing)."""
    checks, fn, before = compiled.checks, compiled.packer.fn, None
    if config.verify_fp:
        written = getattr(compiled, "_written", None)
        if written is None:
            written = compiled._written = written_params(fn)
        before = nonfinite_before(fn, values, written)
    if checks is not None:
        checks.before()
    compiled.device.backend.launch(compiled.handle, ctypes.addressof(args), *compiled.launch_dims(size, block_dim))
    if checks is not None:
        checks.after()
    if before is not None:
        check_finite(fn.name, fn, values, written, before)
