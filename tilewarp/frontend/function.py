"""``@wp.func``: a Python function kernels call, lowered once per distinct argument-type tuple (an IR
function the emitter prints beside the kernel), with its overloads; and ``@wp.func_native``.

A compiler object, not a runtime one: a func is never launched, only lowered into the kernels that
call it, so it lives with the frontend (autodiff's custom gradients and the block front-ends read it).
"""
from __future__ import annotations

import ast
import functools
import inspect
import sys
import threading

from ..errors import KernelError, KernelTypeError
from ..language import generics, names
from ..language import types as T
from .lower import Lowerer
from .source import get_source
from .static import resolve_at_declaration


def _annotation_type(fn, name, annotation, loc_source):
    """The kernel type of an annotation, its template when generic (``generics``), None when absent."""
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):  # `from __future__ import annotations`: evaluate where it was written
        src = loc_source()
        try:
            annotation = src.evaluate(ast.parse(annotation, mode="eval").body, {})
        except Exception as e:
            raise KernelTypeError(f"annotation {annotation!r} of parameter '{name}' cannot be evaluated: {e}",
                                  src.loc(src.tree)) from None
    template = generics.template(annotation)
    if template is not None:
        return template
    try:
        return T.value_type(annotation)
    except TypeError as e:
        src = loc_source()
        raise KernelTypeError(f"parameter '{name}' of {fn.__name__}: {e}", src.loc(_annotation_node(src.tree, name))) \
            from None


def _annotation_node(tree, name):
    """The AST of parameter ``name``'s annotation (errors point at it), else the function itself."""
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.arg == name and node.annotation is not None:
            return node.annotation
    return tree


class Function:
    """A ``@wp.func``: compiled once per distinct argument-type tuple, at its first call in a kernel."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._source = resolve_at_declaration(fn)  # None (read at first use) unless it has wp.static()s
        self._params = None
        self._specializations: dict = {}
        self._lock = threading.RLock()
        self.overloads = [self]  # every @wp.func of this name in its scope, resolved by argument types
        self._tag = ""  # tells the symbols of overloads apart
        self.custom_grad = None  # @wp.func_grad of this overload (autodiff/custom.py)
        self.custom_replay = None  # @wp.func_replay of this overload

    def source(self):
        if self._source is None:
            self._source = get_source(self.fn)
        return self._source

    def parameters(self) -> list:
        """``(name, type or template, or None when unannotated, default)`` per parameter."""
        if self._params is None:
            sig = inspect.signature(self.fn)
            self._params = [(p.name, _annotation_type(self.fn, p.name, p.annotation, self.source), p.default)
                            for p in sig.parameters.values()]
        return self._params

    @property
    def is_generic(self) -> bool:
        return any(t is None or generics.is_generic(t) for _, t, _ in self.parameters())

    def _signature_key(self) -> tuple:
        try:
            return tuple(generics.describe(t) for _, t, _ in self.parameters())
        except KernelError:  # not evaluable yet (a forward reference): compare the spelling
            return tuple(repr(p.annotation) for p in inspect.signature(self.fn).parameters.values())

    def _join(self, previous: "Function"):
        """Take over ``previous``'s overloads; one with the same annotations is replaced (as in Warp)."""
        key = self._signature_key()
        overloads = [self if f._signature_key() == key else f for f in previous.overloads]
        if self not in overloads:
            overloads.append(self)
        for k, f in enumerate(overloads):
            f.overloads = overloads
            f._tag = f"#{k}" if k else ""

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
                                        f"{self._tag}{[T.type_name(t) for t in arg_types]}")
                params = dict(zip([p[0] for p in self.parameters()], arg_types))
                result = Lowerer(self.source(), params, is_kernel=False, symbol=symbol).run()
                result.origin = self
            except BaseException:
                del self._specializations[arg_types]
                raise
            self._specializations[arg_types] = result
            return result

    def __call__(self, *args, **kwargs):
        """Called from Python, a func runs as the Python function it is (the overload the values fit)."""
        if len(self.overloads) > 1:
            for f in self.overloads:
                if f._host_fits(args):
                    return f.fn(*args, **kwargs)
        return self.fn(*args, **kwargs)

    def _host_fits(self, args) -> bool:
        params = self.parameters()
        for (_, t, _), value in zip(params, args):
            try:
                inferred = generics.infer(value)
            except TypeError:
                return False
            if t is not None and not generics.matches(t, inferred):
                return False
        return len(args) <= len(params)


_IN_PROGRESS = object()


def func(f=None, **kwargs):
    """Decorate a Python function as a kernel-callable function (``@wp.func``). A second ``@wp.func`` of
    the same name in the same scope adds an overload: calls pick the one the argument types fit."""
    scope = sys._getframe(1).f_locals  # where the decorated name is about to be bound
    if f is None:
        return lambda fn: _overloaded(Function(fn), scope)
    return _overloaded(Function(f), scope)


def _overloaded(new: Function, scope) -> Function:
    previous = scope.get(new.fn.__name__)
    if isinstance(previous, Function) and (previous.fn.__qualname__, previous.fn.__module__) == (
            new.fn.__qualname__, new.fn.__module__):
        new._join(previous)
    return new


class NativeFunction:
    """``@wp.func_native(snippet)``: a function written in C++/CUDA source. Accepted so scripts load;
    calling one in a kernel is a located error (tilewarp compiles only Python kernel code)."""

    def __init__(self, fn, snippet):
        functools.update_wrapper(self, fn)
        self.snippet = snippet

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"wp.func_native function {self.__name__}() runs only inside kernels")


def func_native(snippet, adj_snippet=None, replay_snippet=None):
    return lambda fn: NativeFunction(fn, snippet)
