"""Authoring: ``@kernel``, ``@func``, ``static`` — the objects users decorate functions with."""
from __future__ import annotations

import ast
import functools
import inspect
import threading
import typing

from . import types as T
from .emit import names
from .errors import KernelTypeError
from .frontend import Lowerer, get_source
from .module_options import check_kernel_options, is_debug


def _annotation_type(fn, name, annotation, loc_source):
    if annotation is inspect.Parameter.empty:
        return None
    if annotation is typing.Any:
        return None
    if isinstance(annotation, str):  # `from __future__ import annotations`: evaluate where it was written
        src = loc_source()
        try:
            annotation = src.evaluate(ast.parse(annotation, mode="eval").body, {})
        except Exception as e:
            raise KernelTypeError(f"annotation {annotation!r} of parameter '{name}' cannot be evaluated: {e}",
                                  src.loc(src.tree)) from None
        if annotation is typing.Any:
            return None
    try:
        return T.value_type(annotation)
    except TypeError as e:
        src = loc_source()
        raise KernelTypeError(f"parameter '{name}' of {fn.__name__}: {e}", src.loc(src.tree)) from None


class Function:
    """A ``@wp.func``: compiled once per distinct argument-type tuple, at its first call in a kernel."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._source = None
        self._specializations: dict = {}
        self._lock = threading.RLock()

    def source(self):
        if self._source is None:
            self._source = get_source(self.fn)
        return self._source

    def parameters(self) -> list:
        """``(name, type or None for Any/unannotated, default)`` per parameter."""
        sig = inspect.signature(self.fn)
        return [(p.name, _annotation_type(self.fn, p.name, p.annotation, self.source), p.default)
                for p in sig.parameters.values()]

    def _tw_specialize(self, arg_types: tuple, loc):
        with self._lock:
            done = self._specializations.get(arg_types)
            if done is _IN_PROGRESS:
                raise KernelTypeError(f"recursive call of {self.fn.__name__}() is not supported", loc)
            if done is not None:
                return done
            self._specializations[arg_types] = _IN_PROGRESS
            try:
                symbol = names.function(self.fn.__name__, f"{self.fn.__module__}.{self.fn.__qualname__}"
                                        f"{[T.type_name(t) for t in arg_types]}")
                params = dict(zip([p[0] for p in self.parameters()], arg_types))
                result = Lowerer(self.source(), params, is_kernel=False, symbol=symbol).run()
            except BaseException:
                del self._specializations[arg_types]
                raise
            self._specializations[arg_types] = result
            return result

    def __call__(self, *args, **kwargs):
        """Called from Python, a func runs as the Python function it is."""
        return self.fn(*args, **kwargs)


_IN_PROGRESS = object()


class Kernel:
    """A ``@wp.kernel``: lowered at first use, compiled once per device (cached on disk)."""

    def __init__(self, fn, enable_backward=None, module=None, key=None, module_options=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.key = key or fn.__qualname__
        self.module = module if isinstance(module, str) else fn.__module__
        self.options = {"enable_backward": enable_backward}
        self.module_options = check_kernel_options(fn, module, module_options)  # module="unique" only
        self._ir = None
        self._compiled: dict = {}
        self._lock = threading.RLock()

    @property
    def symbol(self) -> str:
        return names.function(self.fn.__name__, f"{self.module}.{self.key}")

    @property
    def ir(self):
        """The typed IR (the frontend runs once; its errors name the user's file:line)."""
        with self._lock:
            if self._ir is None:
                source = get_source(self.fn)
                params = {}
                for p in inspect.signature(self.fn).parameters.values():
                    t = _annotation_type(self.fn, p.name, p.annotation, lambda: source)
                    if t is None:
                        raise KernelTypeError(f"kernel parameter '{p.name}' needs a type annotation",
                                              source.loc(source.tree))
                    params[p.name] = t
                self._ir = Lowerer(source, params, is_kernel=True, symbol=self.symbol).run()
            return self._ir

    @property
    def arg_names(self) -> list:
        return list(inspect.signature(self.fn).parameters)

    def compiled(self, device):
        """The loaded kernel for ``device`` in the current mode (built through the pipeline on first use)."""
        key = (device.alias, "debug") if is_debug(self) else device.alias
        entry = self._compiled.get(key)
        if entry is None:
            with self._lock:
                entry = self._compiled.get(key)
                if entry is None:
                    from .pipeline import build

                    entry = self._compiled[key] = build(self, device)  # reads the mode again
        return entry

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel {self.key} must be started with wp.launch(), not called")


def kernel(f=None, *, enable_backward=None, module=None, module_options=None):
    """Decorate a Python function as a kernel (``@wp.kernel`` or ``@wp.kernel(enable_backward=False)``)."""
    if f is None:
        return lambda fn: Kernel(fn, enable_backward=enable_backward, module=module, module_options=module_options)
    return Kernel(f, enable_backward=enable_backward, module=module, module_options=module_options)


def func(f=None, **kwargs):
    """Decorate a Python function as a kernel-callable function (``@wp.func``)."""
    if f is None:
        return lambda fn: Function(fn)
    return Function(f)


def static(expr):
    """Inside kernels: evaluate ``expr`` in Python when the kernel is compiled (Warp's ``wp.static``)."""
    return expr


static.__tw_static__ = True
