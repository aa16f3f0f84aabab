"""Per-module compile options: ``wp.set_module_options`` / ``wp.get_module_options`` (Warp's names).

A "module" is the Python module a kernel is defined in (``fn.__module__``), or the kernel alone for
``@wp.kernel(module="unique", module_options={...})``. Options here override ``wp.config`` for
that module's kernels; tilewarp acts on ``mode`` ("debug" / "release"; None defers to
``wp.config.mode``) and keeps the others so code written for Warp runs unchanged.
"""
from __future__ import annotations

import sys

from .. import config
from ..runtime.device import get_device, get_devices
from ..runtime.block_shape import uses_tiles

#: Warp 1.19's module options and defaults (``get_module_options`` returns all of them).
DEFAULTS = {
    "max_unroll": 16, "enable_backward": True, "enable_mathdx_gemm": None, "enable_mathdx_solver": None,
    "enable_mathdx_fft": None, "fast_math": False, "fuse_fp": True, "lineinfo": False, "cuda_output": None,
    "mode": None, "optimization_level": None, "cpu_compiler_flags": None, "block_dim": 256,
    "compile_time_trace": False, "strip_hash": False, "extra_build_options": None, "deterministic": 0,
    "deterministic_max_records": 0, "default_grid_stride": None,
}


class _Options(dict):
    """One module's options: a dict whose every change is announced (``config._notify``), since
    launches remember whether a kernel runs in debug mode."""


def _announcing(name):
    method = getattr(dict, name)

    def changed(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        config._notify("module_options")
        return result

    return changed


for _name in ("__setitem__", "__delitem__", "__ior__", "update", "setdefault", "pop", "popitem", "clear"):
    setattr(_Options, _name, _announcing(_name))

_OPTIONS: dict = {}  # Python module name -> its options dict


def _module_name(module, depth: int) -> str:
    if module is None:
        return sys._getframe(depth + 1).f_globals.get("__name__", "__main__")
    if isinstance(module, str):
        return module
    return module.name if isinstance(module, Module) else module.__name__  # a wp.get_module() or a Python module


def _options_of(name: str) -> dict:
    opts = _OPTIONS.get(name)
    if opts is None:
        opts = _OPTIONS[name] = _Options(DEFAULTS)
    return opts


def set_module_options(options: dict, module=None) -> None:
    """Set options for the calling module (or ``module``: a module object or its name)."""
    _options_of(_module_name(module, 1)).update(options)


def get_module_options(module=None) -> dict:
    """The options of the calling module (or ``module``); changes to the dict take effect."""
    return _options_of(_module_name(module, 1))


def check_kernel_options(fn, module, module_options) -> dict:
    """Validate ``@wp.kernel(module_options=...)`` as Warp does (needs ``module="unique"``)."""
    if module_options is None:
        return {}
    if not isinstance(module_options, dict):
        raise TypeError(f"@wp.kernel for '{fn.__name__}': module_options must be a dict, "
                        f"got {type(module_options).__name__}.")
    if module != "unique":
        raise ValueError(f"@wp.kernel for '{fn.__name__}': module_options requires module=\"unique\". "
                         "Use wp.set_module_options() to set module-level options for a shared module.")
    unknown = sorted(set(module_options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"@wp.kernel for '{fn.__name__}': unknown module_options: "
                         f"{', '.join(repr(k) for k in unknown)}. "
                         f"Valid options are: {', '.join(repr(k) for k in sorted(DEFAULTS))}.")
    return dict(module_options)


def is_debug(kernel) -> bool:
    """Whether ``kernel`` compiles in debug mode now: its own options, then its module's, then config."""
    mode = kernel.module_options.get("mode")
    if mode is None:
        opts = _OPTIONS.get(kernel.module_name)
        mode = opts.get("mode") if opts else None
    return (mode or config.mode) == "debug"


def mathdx_gemm(kernel) -> bool:
    """Whether ``kernel``'s tile_matmuls go through cuBLASDx on CUDA: its own options, then its
    module's, then ``config.enable_mathdx_gemm``."""
    own = kernel.module_options.get("enable_mathdx_gemm")
    if own is None:
        opts = _OPTIONS.get(kernel.module_name)
        own = opts.get("enable_mathdx_gemm") if opts else None
    return bool(config.enable_mathdx_gemm if own is None else own)


def backward_setting(kernel):
    """``enable_backward`` for ``kernel``: False (no backward), True (asked for explicitly: built
    with the forward) or None (the default: built lazily, on the first backward launch)."""
    own = kernel.options.get("enable_backward")
    if own is not None:
        return bool(own)
    value = kernel.module_options.get("enable_backward")
    if value is None:
        opts = _OPTIONS.get(kernel.module_name)
        value = opts.get("enable_backward") if opts else None
    if value is False or getattr(config, "enable_backward", True) is False:
        return False
    return None


def option(kernel, name: str):
    """Option ``name`` for ``kernel``: its own module options, then its module's, then the default."""
    value = kernel.module_options.get(name)
    if value is None:
        opts = _OPTIONS.get(kernel.module_name)
        value = opts.get(name) if opts else None
    return DEFAULTS.get(name) if value is None else value


class Module:
    """Warp's ``wp.get_module(name)``: a module by name, whose ``options`` are its module options
    (kernels made with ``wp.Kernel(func, module=...)`` or defined in that Python module use them)."""

    def __init__(self, name: str):
        self.name = name

    @property
    def options(self) -> dict:
        return _options_of(self.name)

    def __repr__(self):
        return f"Module({self.name!r})"


_MODULES: dict = {}


def get_module(name) -> Module:
    """The module named ``name`` (a Python module's ``__name__``, or any key), created on first use."""
    name = name if isinstance(name, str) else name.__name__
    mod = _MODULES.get(name)
    if mod is None:
        mod = _MODULES[name] = Module(name)
    return mod


def _kernels_of(wanted) -> list:
    """The kernels declared in the Python modules whose name ``wanted(name)`` accepts."""
    from .kernel import _DECLARED

    return [k for (mod, _), ks in list(_DECLARED.items()) if wanted(mod) for k in list(ks)]


def _build(kernels, device) -> int:
    """Compile every non-generic kernel that uses no tiles (a tile kernel's code depends on the block
    size of its launch, so it is built by its first launch) for ``device``; returns how many."""
    if device is None:  # every device, as Warp
        devices = list(get_devices())
    else:
        devices = [get_device(d) for d in (device if isinstance(device, (list, tuple)) else [device])]
    built = 0
    for k in kernels:
        if k.is_generic or uses_tiles(k):
            continue
        for d in devices:
            k.compiled(d)
            built += 1
    return built


def load_module(module=None, device=None, recursive: bool = False) -> int:
    """Warp's ``wp.load_module``: compile the kernels of ``module`` (a Python module, its name, or a
    ``Module``; default the caller's) for ``device`` (one, a list, or None: every device) now,
    instead of at their first launch.
    ``recursive`` includes its submodules. Returns how many kernels were built."""
    name = _module_name(module, 1)
    return _build(_kernels_of(lambda n: n == name or (recursive and n.startswith(name + "."))), device)


def force_load(device=None, modules=None) -> int:
    """Warp's ``wp.force_load``: compile the kernels of ``modules`` (default: every module that
    declared kernels) for ``device``."""
    names = None if modules is None else {_module_name(m, 1) for m in modules}
    return _build(_kernels_of(lambda n: names is None or n in names), device)

