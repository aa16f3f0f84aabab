"""Authoring: ``@kernel``, ``@func``, ``static`` — the objects users decorate functions with."""
from __future__ import annotations

import ast
import functools
import inspect
import sys
import threading
import weakref

from . import generics
from . import types as T
from .emit import names
from .errors import KernelError, KernelTypeError, LaunchError, TapeError
from .frontend import Lowerer, get_source
from .frontend.captures import collect as collect_captures
from .frontend.static import resolve_at_declaration
from .module_options import backward_setting, check_kernel_options, get_module, is_debug


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


class Kernel:
    """A ``@wp.kernel``: lowered at first use, compiled once per device (cached on disk)."""

    def __init__(self, fn=None, enable_backward=None, module=None, key=None, module_options=None, func=None,
                 options=None, code_transformers=None, source=None):
        fn = fn if fn is not None else func  # wp.Kernel(func=f, key=..., module=wp.get_module(...)), as Warp
        if fn is None:
            raise TypeError("wp.Kernel() needs the kernel's Python function (func=...)")
        if code_transformers or source is not None:
            raise NotImplementedError("wp.Kernel(): code_transformers= and source= are not supported")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.key = key or fn.__qualname__
        module = getattr(module, "name", module)  # a Module from wp.get_module
        self.module_name = module if isinstance(module, str) else fn.__module__
        self.module = get_module(self.module_name)  # Warp's kernel.module: a Module with its options
        self.options = {**(options or {})}  # Warp's per-kernel options (enable_backward, ...)
        if enable_backward is not None or "enable_backward" not in self.options:
            self.options["enable_backward"] = enable_backward
        self.module_options = check_kernel_options(fn, module, module_options)  # module="unique" only
        self._ir = None
        self._ir_by_block: dict = {}  # block_dim -> IR, for kernels whose IR depends on it (tiles)
        self._compiled: dict = {}
        self._lock = threading.RLock()
        self._source = resolve_at_declaration(fn)  # None (read at first use) unless it has wp.static()s
        self._templates = None  # parameter name -> annotated type or template
        self._generic = None  # unknown until the first launch; launch() reads it on every call
        self._param_types = None  # a specialisation's concrete types (None: the annotations)
        self._signature = ""  # a specialisation's argument types, part of its symbol
        self._overloads: dict = {}  # concrete argument types -> specialisation
        self._by_key: dict = {None: None}  # generics.fast_key of launch arguments -> specialisation
        self._generic_at = None  # positions of the generic parameters
        self._tw_fast: list = []  # native launchers, one per device (runtime/native_launch.py)
        self._tw_captures: tuple = ()  # plain values compiled in (frontend/captures.py), set by lowering
        _DECLARED.setdefault((fn.__module__, fn.__qualname__), weakref.WeakSet()).add(self)

    @property
    def overloads(self) -> dict:
        """The specialisations made so far (``wp.overload`` or launches), by argument types."""
        return dict(self._overloads)

    @property
    def symbol(self) -> str:
        return names.function(self.fn.__name__, f"{self.module_name}.{self.key}{self._signature}")

    def source(self):
        if self._source is None:
            self._source = get_source(self.fn)
        return self._source

    def templates(self) -> dict:
        """Parameter name -> its annotated type, or its template when generic (parsed once)."""
        if self._templates is None:
            source = self.source()
            params = {}
            for p in inspect.signature(self.fn).parameters.values():
                t = _annotation_type(self.fn, p.name, p.annotation, lambda: source)
                if t is None:
                    raise KernelTypeError(f"kernel parameter '{p.name}' needs a type annotation",
                                          source.loc(source.tree))
                params[p.name] = t
            self._templates = params
        return self._templates

    @property
    def is_generic(self) -> bool:
        if self._generic is None:
            self._generic = self._param_types is None and any(map(generics.is_generic, self.templates().values()))
        return self._generic

    @property
    def ir(self):
        """The typed IR (the frontend runs once; its errors name the user's file:line)."""
        with self._lock:
            if self._ir is None:
                if self.is_generic:
                    raise KernelTypeError(f"generic kernel {self.key} has one IR per argument types: launch it or "
                                          "use wp.overload()", self.source().loc(self.source().tree))
                self._ir = self._lower(self.default_block_dim)
                self._tw_captures = collect_captures(self._ir)
            return self._ir

    def _lower(self, block_dim: int):
        return Lowerer(self.source(), self._param_types or self.templates(), is_kernel=True, symbol=self.symbol,
                       block_dim=block_dim).run()

    @property
    def default_block_dim(self) -> int:
        """The module's ``block_dim`` option (256), the block size ``kernel.ir`` is lowered for."""
        from .module_options import option

        return int(option(self, "block_dim") or 256)

    def ir_for(self, block_dim: int):
        """The IR for blocks of ``block_dim`` lanes: ``ir`` itself unless it depends on the block size."""
        fn = None
        if not self.__dict__.get("_tw_default_fails"):
            try:
                fn = self.ir
            except KernelError:  # e.g. a tile(x) of 32 lanes fed to a 32 x 32 solve: fine at block_dim 32 only
                if block_dim == self.default_block_dim:
                    raise
                self._tw_default_fails = True  # (not lowered again at every launch)
        if fn is not None and (not fn.block_dependent or block_dim == self.default_block_dim):
            return fn
        with self._lock:
            fn = self._ir_by_block.get(block_dim)
            if fn is None:
                fn = self._ir_by_block[block_dim] = self._lower(block_dim)
            return fn

    # ---- generic kernels: one specialisation per distinct argument types --------------------------

    def specialization_for(self, values) -> "Kernel":
        """The kernel ``wp.launch`` runs for ``values``: itself, or the specialisation for their types."""
        if not self.is_generic:
            return self
        if self._generic_at is None:
            self._generic_at = tuple(k for k, t in enumerate(self.templates().values()) if generics.is_generic(t))
        # per launch: a key from the arguments' classes (and arrays' dtype/ndim), when those fix the types
        key = generics.fast_key(values, self._generic_at) if len(values) == len(self._templates) else None
        spec = self._by_key.get(key)
        if spec is None:
            spec = self._specialize(self._argument_types(values))
            if key is not None:
                self._by_key[key] = spec
        return spec

    def _argument_types(self, values) -> tuple:
        templates = self.templates()
        if len(values) != len(templates):
            raise LaunchError(f"kernel takes {len(templates)} argument(s) ({', '.join(templates)}), got {len(values)}")
        types = []
        for (name, tmpl), value in zip(templates.items(), values):
            if generics.is_generic(tmpl):
                try:
                    t = generics.infer(value)
                except TypeError as e:
                    raise LaunchError(f"argument '{name}' of generic kernel {self.key}: {e}") from None
                if not generics.matches(tmpl, t):
                    raise LaunchError(f"argument '{name}' expects {generics.describe(tmpl)}, got {T.type_name(t)}")
                tmpl = t
            types.append(tmpl)
        return tuple(types)

    def add_overload(self, arg_types) -> "Kernel":
        """The specialisation for ``arg_types`` (a list, or a dict by parameter name), as ``wp.overload``."""
        return self._specialize(generics.overload_types(self, arg_types))

    def get_overload(self, arg_types):
        return self._overloads.get(tuple(T.value_type(t) for t in arg_types))

    def _specialize(self, types: tuple) -> "Kernel":
        spec = self._overloads.get(types)
        if spec is None:
            with self._lock:
                spec = self._overloads.get(types)
                if spec is None:
                    spec = Kernel(self.fn, self.options["enable_backward"], self.module_name, self.key)
                    _DECLARED[(self.fn.__module__, self.fn.__qualname__)].discard(spec)
                    spec.module_options = self.module_options
                    spec._source, spec._templates, spec._generic = self._source, self._templates, False
                    spec._param_types = dict(zip(self.templates(), types))
                    spec._signature = f"[{', '.join(map(T.type_name, types))}]"
                    self._overloads[types] = spec
        return spec

    @property
    def arg_names(self) -> list:
        return list(inspect.signature(self.fn).parameters)

    def compiled(self, device, block=None):
        """The loaded kernel for ``device`` in the current mode (built through the pipeline on first use);
        ``block`` (an ``emit.block.BlockShape``) for kernels that use tiles."""
        key = (device.alias, "debug") if is_debug(self) else device.alias
        if block is not None:
            key = (key, block)
        entry = self._compiled.get(key)
        if entry is None:
            with self._lock:
                entry = self._compiled.get(key)
                if entry is None:
                    from .pipeline import build

                    entry = self._compiled[key] = build(self, device, block)  # reads the mode again
                    if backward_setting(self):  # enable_backward=True: build both now, as Warp does
                        self.compiled_backward(device, block)
        return entry

    def compiled_backward(self, device, block=None):
        """The loaded backward kernel for ``device``, built on first use (a Tape's backward)."""
        key = (device.alias, "backward") if block is None else (device.alias, "backward", block)
        entry = self._compiled.get(key)
        if entry is None:
            if backward_setting(self) is False:
                raise TapeError(f"kernel '{self.key}' was built with enable_backward=False, so it has no "
                                "backward pass; drop that option to differentiate through it")
            with self._lock:
                entry = self._compiled.get(key)
                if entry is None:
                    from .pipeline import build_backward

                    entry = self._compiled[key] = build_backward(self, device, block)
        return entry

    def resources(self, dim, block_dim: int = 256, device=None, backward: bool = False) -> dict:
        """Shared memory (and, on CUDA, registers and spills) of one block of this kernel launched over
        ``dim`` in blocks of ``block_dim`` lanes: see ``runtime/tiled.py: resources``."""
        from .runtime.tiled import resources

        return resources(self, dim, block_dim, device, backward)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kernel {self.key} must be started with wp.launch(), not called")


def kernel(f=None, *, enable_backward=None, module=None, module_options=None, launch_bounds=None, grid_stride=None,
           name=None):
    """Decorate a Python function as a kernel (``@wp.kernel`` or ``@wp.kernel(enable_backward=False)``).
    ``name`` is the kernel's key (default: the function's qualified name). ``launch_bounds`` and
    ``grid_stride`` (Warp's CUDA tuning hints) are accepted; tilewarp's CUDA entries always stride
    over the grid, and tile kernels declare their block size as launch bounds."""
    if f is None:
        return lambda fn: Kernel(fn, enable_backward=enable_backward, module=module, module_options=module_options,
                                 key=name)
    return Kernel(f, enable_backward=enable_backward, module=module, module_options=module_options, key=name)


#: kernels by (module, qualified name) of their function, so a ``@wp.overload`` stub finds its kernel
#: when the stub's own definition has rebound the name
_DECLARED: dict = {}


def declared_kernels(fn) -> list:
    return list(_DECLARED.get((fn.__module__, fn.__qualname__), ()))


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


def static(expr):
    """Inside kernels: evaluate ``expr`` in Python when the kernel is compiled (Warp's ``wp.static``)."""
    return expr


static.__tw_static__ = True
