"""``@wp.kernel``: the Kernel object (lowered at first use, specialised per argument types when generic,
compiled per device through api/pipeline.py) and ``wp.overload``. ``@wp.func`` is frontend/function.py."""
from __future__ import annotations

import ast
import functools
import inspect
import sys
import threading
import weakref

from ..language import generics
from ..language import types as T
from ..language import names
from ..errors import KernelError, KernelSyntaxError, KernelTypeError, LaunchError, TapeError
from ..frontend import Lowerer, get_source
from ..frontend.captures import collect as collect_captures
from ..frontend.function import _annotation_type
from ..frontend.static import resolve_at_declaration
from .module import backward_setting, check_kernel_options, get_module, is_debug
from ..runtime.block_shape import resources


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
        self._tw_plans = None  # launch configuration -> runtime.launch.Plan, made on first use
        self._tw_spellings = None  # a plain launch's spelling -> (its Plan, whether it named the device)
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
        from .module import option

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
        return self._specialize(overload_types(self, arg_types))

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

    def compiled(self, device, block=None, ahead: bool = False):
        """The loaded kernel for ``device`` in the current mode (built through the pipeline on first use);
        ``block`` (an ``emit.block.BlockShape``) for kernels that use tiles. ``ahead``: a backward pass
        is likely (a launch on a Tape, or of arrays that require gradients): on the CPU a first build
        compiles the backward beside the forward (``pipeline.start_backward_build``)."""
        key = (device.alias, "debug") if is_debug(self) else device.alias
        if block is not None:
            key = (key, block)
        entry = self._compiled.get(key)
        if entry is None:
            with self._lock:
                entry = self._compiled.get(key)
                if entry is None:
                    from .pipeline import build, start_backward_build

                    eager = backward_setting(self)
                    if eager is None and ahead and device.kind == "cpu" and not is_debug(self):
                        start_backward_build(self, device, block)
                    entry = self._compiled[key] = build(self, device, block)  # reads the mode again
                    if eager:  # enable_backward=True: build both now, as Warp does
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
        ``dim`` in blocks of ``block_dim`` lanes: see ``runtime/block_shape.py: resources``."""
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


# ---- wp.overload: explicit specialisations of generic kernels ---------------------------------------


def overload_types(kernel, arg_types) -> tuple:
    """The concrete argument types ``wp.overload(kernel, arg_types)`` asks for, checked against the
    kernel's annotations (a dict names some parameters; the others keep their annotations)."""
    src = kernel.source()
    loc = src.loc(src.tree)
    templates = kernel.templates()
    if not kernel.is_generic:
        raise KernelTypeError(f"only generic kernels can be overloaded: {kernel.key} has no generic parameter", loc)
    if isinstance(arg_types, dict):
        unknown = [n for n in arg_types if n not in templates]
        if unknown:
            raise KernelTypeError(f"kernel {kernel.key} has no parameter '{unknown[0]}'", loc)
        given = [arg_types.get(n, t) for n, t in templates.items()]
    elif isinstance(arg_types, (list, tuple)):
        if len(arg_types) != len(templates):
            raise KernelTypeError(f"kernel {kernel.key} takes {len(templates)} argument types, got {len(arg_types)}",
                                  loc)
        given = list(arg_types)
    else:
        raise TypeError("wp.overload() takes the argument types as a list or a dict")
    types = []
    for (name, tmpl), a in zip(templates.items(), given):
        if generics.template(a) is not None:
            raise KernelTypeError(f"argument '{name}' of kernel {kernel.key} cannot be generic, got {generics.describe(a)}", loc)
        try:
            t = T.value_type(a)
        except TypeError as e:
            raise KernelTypeError(f"argument '{name}' of kernel {kernel.key}: {e}", loc) from None
        if not generics.matches(tmpl, t):
            raise KernelTypeError(f"argument '{name}' of kernel {kernel.key} expects {generics.describe(tmpl)}, "
                                  f"got {T.type_name(t)}", loc)
        types.append(t)
    return tuple(types)


def overload(kernel, arg_types=None):
    """``wp.overload(kernel, [types] or {name: type})`` -> the specialised kernel; as a decorator on a stub
    ``def kernel(a: wp.array(dtype=float), ...): ...`` it adds that specialisation and returns the kernel."""
    if isinstance(kernel, Kernel):
        return kernel.add_overload([] if arg_types is None else arg_types)
    if not inspect.isfunction(kernel):
        raise TypeError(f"wp.overload() takes a generic kernel, got {type(kernel).__name__}")
    stub = kernel
    returns = inspect.signature(stub).return_annotation
    if returns not in (inspect.Signature.empty, None, type(None), "None"):
        raise TypeError(f"Return annotations are not allowed on @wp.overload stubs ({stub.__qualname__} returns "
                        f"{returns!r}): kernels return nothing")
    target = sys._getframe(1).f_locals.get(stub.__name__, stub.__globals__.get(stub.__name__))
    if not isinstance(target, Kernel):  # the stub's def rebound the name: the kernel of that function
        found = declared_kernels(stub)
        if len(found) > 1:
            raise RuntimeError(f"Ambiguous kernel lookup for the @wp.overload stub {stub.__qualname__}: "
                               f"{len(found)} kernels ({', '.join(sorted(k.key for k in found))}) were declared "
                               "from functions of that name; call wp.overload(kernel, arg_types) instead")
        target = found[0] if found else None
    if not isinstance(target, Kernel):
        raise TypeError(f"wp.overload: there is no kernel named '{stub.__name__}' to overload")
    src = get_source(stub)
    for stmt in src.tree.body:
        is_doc = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and (
            isinstance(stmt.value.value, str) or stmt.value.value is Ellipsis)
        if not (is_doc or isinstance(stmt, ast.Pass)):
            raise KernelSyntaxError("an overload stub's body is only '...', 'pass' or a docstring", src.loc(stmt))
    types = []
    for p in inspect.signature(stub).parameters.values():
        if p.annotation is inspect.Parameter.empty:
            raise KernelTypeError(f"overload stub parameter '{p.name}' needs a type annotation", src.loc(src.tree))
        types.append(_annotation_type(stub, p.name, p.annotation, lambda: src))
    target.add_overload(types)
    return target
