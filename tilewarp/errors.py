"""The error hierarchy. Kernel-code errors point at the user's file:line:col with the source line."""
from __future__ import annotations


class TileWarpError(Exception):
    """Base class of every error tilewarp raises on purpose."""


class KernelError(TileWarpError, RuntimeError):
    """An error located in the user's kernel/function source (a RuntimeError, and its type errors a
    TypeError, as Warp's code generation errors are, so scripts' ``except`` clauses still match).

    The message reads ``file.py:LINE:COL:``, the offending source line with a caret under the
    column, then the message on its own last line (as a Python traceback ends), so the user sees
    where, not which compiler stage, and ``assertRaisesRegex(..., "text$")`` patterns written
    against Warp's errors still match the end.
    """

    def __init__(self, message: str, loc=None):
        self.bare_message = message
        self.loc = loc
        super().__init__(format_located(message, loc))


class KernelSyntaxError(KernelError):
    """Python syntax the kernel language does not support."""


class KernelTypeError(KernelError, TypeError):
    """A type mismatch, an unknown name or a wrong builtin call inside kernel code."""


class KernelNameError(KernelTypeError, KeyError):
    """A name kernel code uses that nothing defines (also a KeyError, as Warp's undefined-symbol error)."""

    __str__ = Exception.__str__  # KeyError's would quote the whole message


class KernelValueError(KernelError, ValueError):
    """A constant argument of the right type but outside the values it may take (an axis, a rank),
    a ValueError as in Warp."""


class AutodiffError(KernelError):
    """Kernel code whose gradient cannot be computed correctly (raised instead of a silent zero)."""


class LaunchError(TileWarpError):
    """A launch with wrong arguments (count, type, dtype, device, shape)."""


class KernelRuntimeError(TileWarpError):
    """A check failed while a kernel ran (debug mode or ``wp.config.verify_fp``), raised after the
    launch. ``kind`` is ``"bounds"``, ``"indexed"``, ``"assert"``, ``"native"``, ``"nonfinite"`` or ``"not_spd"``;
    ``kernel``, ``array`` (the parameter name), ``index``, ``dim`` and ``extent`` say what failed,
    and ``loc`` where in the user's source (the message starts with its ``file:line:col``)."""

    def __init__(self, message: str, *, kind: str, kernel: str, loc=None, array=None, index=None, dim=None,
                 extent=None):
        self.bare_message = message
        self.kind, self.kernel, self.loc, self.array = kind, kernel, loc, array
        self.index, self.dim, self.extent = index, dim, extent
        super().__init__(format_located(message, loc))


class ModuleLoadError(TileWarpError, OSError):
    """dlopen refused a kernel library (not a shared library, truncated, wrong architecture). An
    OSError, as ctypes raises, so the kernel cache treats a cached library that fails so as damaged."""


class CompileError(TileWarpError):
    """The C++ compiler or NVRTC rejected generated code; carries the log and the source path."""

    def __init__(self, message: str, log: str = "", source_path: str | None = None):
        self.log = log
        self.source_path = source_path
        text = message
        if source_path:
            text += f"\ngenerated source: {source_path}"
        if log:
            text += "\n" + log.rstrip()
        super().__init__(text)


class DeviceError(TileWarpError):
    """A device that does not exist, or no CUDA driver/GPU when one was asked for."""


class CudaError(TileWarpError):
    """A CUDA driver call failed; the message names the call and the CUDA error."""


class TapeError(TileWarpError, RuntimeError):
    """Misuse of the Tape, or gradients that cannot be trusted (a RuntimeError, as Warp raises)."""


def format_located(message: str, loc) -> str:
    if loc is None:
        return message
    head = f"{loc.file}:{loc.line}:{loc.col + 1}:"
    if not loc.text:
        return f"{head} {message}"
    caret = " " * loc.col + "^"
    return f"{head}\n    {loc.text}\n    {caret}\n{message}"


def warn_user(message: str, category=RuntimeWarning) -> None:
    """``warnings.warn`` attributed to the first frame outside the tilewarp package: the user's line
    that led here (a fixed ``stacklevel`` would point into tilewarp whenever the call depth varies)."""
    import os
    import sys
    import warnings

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    module = frame.f_globals.get("__name__", "<string>")
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno, module, registry)


# Warp's names for code-generation errors (export them from the package as ``wp.WarpCodegenError``
# etc.): every located kernel error is a RuntimeError, as Warp's are, and the typed ones keep their
# Python base (TypeError, ValueError), so ``except wp.WarpCodegenError`` catches all of them.
WarpCodegenError = KernelError
WarpCodegenTypeError = KernelTypeError
WarpCodegenValueError = KernelValueError
