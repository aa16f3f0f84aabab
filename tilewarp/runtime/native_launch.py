"""wp.launch's native hot path, shared by the CPU and CUDA backends.

Each backend submits a packed argument block through one C function of the same shape,
``int submit(const void* rec, const char* args)`` (``tw_cpu_submit`` in thread_pool.cpp,
``tw_cuda_submit`` in cuda_launch.cpp), ``rec`` being a launch record per kernel and block size.
``SubmitEntry`` wraps it for one kernel: called from Python with the block as bytes (the general
path), or handed to the CPython extension ``_tw_launch`` (native/runtime/launch_ext.cpp) as a
``Launcher`` that checks and packs the arguments itself, so a repeated ``wp.launch`` costs a few
hundred nanoseconds before the driver instead of ~1.3 us.

The extension is built by ``pip install`` (pyproject's ext-modules, ``compile.host.installed``);
where that could not compile it, on first use (in a background thread) or by ``build_lib.py``,
beside the package like the other native libraries (``compile.host.native_output``); without
Python's headers or a host compiler (or with ``TILEWARP_FAST_LAUNCH=0``) every launch takes the
general path, which gives the same results. A launcher is remembered on the kernel after a launch
through the general path (``remember``); ``forget_all`` drops them when a setting that decides how a
kernel launches changes (``wp.config``, module options).
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import sysconfig
import threading
import weakref

from .. import config
from ..language import types as T
from ..compile import host as native_build  # read at call time: tests stand in for its functions
from ..compile.paths import NATIVE_DIR
from ..frontend.captures import bindings

#: ``launch(kernel, dim, inputs, outputs, device, block_dim) -> bool`` of the loaded extension, or
#: None until it is loaded (or when it cannot be); wp.launch reads it on every call.
fast = None

_SOURCE = NATIVE_DIR / "runtime" / "launch_ext.cpp"
_ext = None
_loader: threading.Thread | None = None  # loads (and if needed builds) the extension, once
_ready = threading.Event()               # set once the loader has finished, loaded or not
_lock = threading.Lock()
_kernels: weakref.WeakSet = weakref.WeakSet()  # kernels holding launchers, for forget_all
_signatures: dict = {}

# Parameter kinds, as numbered in launch_ext.cpp (kArray, kBytes, then the scalars by kind and size).
_ARRAY, _BYTES = 0, 1
_SCALAR_KINDS = {("float", 4): 2, ("float", 8): 3, ("bool", 1): 4,
                 ("int", 1): 5, ("int", 2): 6, ("int", 4): 7, ("int", 8): 8,
                 ("uint", 1): 9, ("uint", 2): 10, ("uint", 4): 11, ("uint", 8): 12}


def signature(dtype, ndim: int, device):
    """One shared tuple per (dtype, ndim, device): an array token and a kernel parameter match when
    their signatures are the same object."""
    key = (dtype, ndim, device)
    return _signatures.setdefault(key, key)


def array_token(a):
    """``(signature, descriptor bytes)`` of array ``a``, cached on it as ``_tw_token`` until its
    descriptor changes (the array drops both together); None for an array with no storage."""
    if a.shape is None or a.device is None:
        return None
    token = a._tw_token = (signature(a.dtype, a.ndim, a.device), bytes(a.__ctype__()))
    return token


def native_params(packer, device):
    """The extension's view of ``packer``'s argument block: (kind, offset, size, signature or class)
    per parameter, or None when a parameter is of a kind only Python packs (structs, indexed arrays,
    16-bit floats)."""
    params = []
    for (fname, _), p in zip(packer.struct._fields_[1:], packer.fn.params):
        field, t = getattr(packer.struct, fname), p.type
        if T.is_array(t) and not isinstance(t, T.IndexedArrayType):
            params.append((_ARRAY, field.offset, field.size, signature(t.dtype, t.ndim, device)))
        elif T.is_composite(t):
            params.append((_BYTES, field.offset, field.size, t))
        elif T.is_scalar(t) and (t._kind_, field.size) in _SCALAR_KINDS and t is not T.float16:
            params.append((_SCALAR_KINDS[t._kind_, field.size], field.offset, field.size, None))
        else:
            return None
    return params


class SubmitEntry:
    """A backend's native submit function for one kernel: ``fn(rec, args) -> error code`` through
    ctypes, the records per block size (``make_rec(block_dim)`` -> address), what to do on an error
    (``failed(err, rec, args, n_tasks, block_dim)``: retry or raise) and, for CUDA, the set of
    kernels launched since the last synchronisation."""

    def __init__(self, fn, handle, make_rec, failed, pending=None):
        self.fn, self.handle, self.make_rec, self.failed, self.pending = fn, handle, make_rec, failed, pending
        self.address = ctypes.cast(fn, ctypes.c_void_p).value
        self.recs: dict = {}

    def rec(self, block_dim: int) -> int:
        rec = self.recs.get(block_dim)
        if rec is None:
            rec = self.recs[block_dim] = self.make_rec(block_dim)
        return rec

    def __call__(self, args: bytes, n_tasks: int, block_dim: int):
        """Submit the packed block ``args`` (``n_tasks`` > 0): wp.launch's general path."""
        rec = self.recs.get(block_dim)
        if rec is None:
            rec = self.rec(block_dim)
        if self.pending is not None:
            self.pending.add(self.handle)
        err = self.fn(rec, args)
        if err:
            self.failed(err, rec, args, n_tasks, block_dim)

    def launcher(self, packer, device):
        """The extension's Launcher for this kernel on ``device``, or None."""
        ext = _ext
        params = native_params(packer, device) if ext is not None else None
        if params is None or ctypes.sizeof(packer.struct) > 4096:
            return None
        return ext.make_launcher(self.address, device, device.alias, params, ctypes.sizeof(packer.struct),
                                 packer.tid_arity, self.rec, self.failed, self.pending, self.handle)


def remember(kernel, compiled) -> None:
    """After a general-path launch of ``kernel`` (not generic, no debug checks): keep the compiled
    kernel's launcher on the kernel, so the next launch on that device goes through the extension."""
    launcher = compiled.launcher
    if launcher is None:
        if extension(wait=False) is None and not _ready.is_set():
            return  # being built in the background: ask again at the next launch
        entry = compiled.submit
        launcher = compiled.launcher = (entry.launcher(compiled.packer, compiled.device)
                                        if isinstance(entry, SubmitEntry) else None) or False
    if launcher is False:
        return
    if kernel._tw_captures:  # values compiled in: the extension checks they are still bound, else falls back

        launcher.watched = bindings(kernel)
    if launcher in kernel._tw_fast:
        return
    with _lock:
        kernel._tw_fast[:] = [x for x in kernel._tw_fast if x.device is not launcher.device] + [launcher]
        _kernels.add(kernel)


def forget_all(*_) -> None:
    """Drop every remembered launcher: the next launch of each kernel decides again in Python."""
    with _lock:
        for k in list(_kernels):
            k._tw_fast.clear()
        _kernels.clear()


def publish_defaults(default_device, cuda_device) -> None:
    """Tell the extension what ``device=None`` (with no array arguments) and ``device="cuda"`` mean
    now (None: let Python decide)."""
    if _ext is not None:
        _ext.set_defaults(default_device, cuda_device)


def extension(wait: bool = True):
    """The loaded extension module, or None. It is loaded once per process; when it must be built
    first (once per machine and cache: ~1 s of host compiler), ``wait=False`` starts the build in the
    background and returns None until it is done, so no launch waits for it."""
    global _loader
    if not _ready.is_set():
        with _lock:
            if _loader is None:
                path = _library()
                # not a daemon: a process that ends sooner waits for the build rather than killing it
                _loader = threading.Thread(target=_install, args=(path,), name="tilewarp-native-launch")
                if path is None or os.path.isfile(path[0]):
                    _install(path)  # nothing to build: load it now
                else:
                    _log("wp.launch's native path was not built at install; building it in the background")
                    _loader.start()
        if wait:
            _ready.wait()
    return _ext


def _library():
    """(where the extension is or will be built, Python's include folder), or None where it cannot be
    built."""
    if os.environ.get("TILEWARP_FAST_LAUNCH", "1") == "0":
        return None

    built = native_build.installed("_tw_launch", _SOURCE)  # by pip install: needs no headers or compiler now
    if built is not None:
        return str(built), None
    include = sysconfig.get_paths().get("include")
    if not include or not os.path.isfile(os.path.join(include, "Python.h")):
        return None
    try:
        return str(native_build.native_output(_SOURCE, "_tw_launch", key_extra=_key_extra(include))), include
    except Exception:  # noqa: BLE001 - no host compiler: the general path still works
        return None


def _install(library) -> None:
    """Build (if needed) and load the extension, then switch wp.launch's hot path on."""
    global _ext, fast
    try:
        ext = _load(*library) if library is not None else None
        if ext is None and os.environ.get("TILEWARP_FAST_LAUNCH", "1") != "0":
            _log("wp.launch's native path is unavailable (no Python headers or host compiler); launches take "
                 "the Python path (~1 us more each)")
        if ext is not None:
            from . import retired
            from .array import array
            from .device import publish_defaults as publish

            ext.configure(array, array_token, retired.ids)
            _ext = ext
            publish()
            fast = ext.launch
    finally:
        _ready.set()


def _log(message: str) -> None:
    if not config.quiet:
        print(f"tilewarp: {message}", file=sys.stderr, flush=True)


def _key_extra(include: str) -> str:
    return f"{sys.version}|{include}"  # an extension is built for one interpreter


def _load(path: str, include: str):
    try:
        if not os.path.isfile(path):
            path = native_build.build_native(_SOURCE, "_tw_launch", key_extra=_key_extra(include),
                                             include_dirs=[include])
        spec = importlib.util.spec_from_file_location("_tw_launch", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except Exception:  # noqa: BLE001 - the compiler fails: the general path still works
        return None


config._listeners.append(forget_all)
