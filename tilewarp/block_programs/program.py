"""A block program as an ordinary tile kernel: its source, its kernel object, its arguments.

Both block models (``tilewarp.pallas``, ``tilewarp.arrange``) end here: they describe a kernel
function whose body is the user's, wrapped in generated statements (program indices, output
accumulators, sequential loops, final stores), and ``BlockKernel`` puts it through the same
pipeline as any ``@wp.kernel``: one compiler, cached on disk, with adjoints and Tape support.
"""
from __future__ import annotations

import ast
import copy
import functools
import inspect
import threading

import numpy as np

from ..language import types as T
from ..errors import TileWarpError
from ..frontend.source import Source, get_source
from ..api.kernel import _DECLARED, Kernel
from ..runtime.array import array
from ..runtime.interop import from_dlpack
from ..runtime.launch import launch_tiled
from .refs import WP
from ..runtime.interop import dtype_from_torch
from ..language import names


class BlockSpecError(TileWarpError, ValueError):
    """A block description that does not fit the arrays or the grid."""


def unwrap(kernel):
    """The Python function of ``kernel`` and the keyword values bound to it (``functools.partial``)."""
    bound = {}
    while isinstance(kernel, functools.partial):
        if kernel.args:
            raise TypeError("a block kernel given through functools.partial may bind keyword arguments only")
        bound = {**kernel.keywords, **bound}
        kernel = kernel.func
    if not inspect.isfunction(kernel):
        raise TypeError(f"the kernel must be a Python function, got {type(kernel).__name__}")
    return kernel, bound


def split_parameters(fn, bound: dict, n_refs: int, what: str):
    """The names of ``fn``'s ``n_refs`` positional parameters (the refs) and the values of the rest."""
    params = list(inspect.signature(fn).parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in bound]
    if len(positional) != n_refs or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise TypeError(f"{what}: {fn.__name__}() must take {n_refs} positional parameter(s), one per "
                        f"input and output, got ({', '.join(p.name for p in positional)})")
    values = {}
    for p in params:
        if p in positional:
            continue
        if p.name in bound:
            values[p.name] = bound[p.name]
        elif p.default is not p.empty:
            values[p.name] = p.default
        else:
            raise TypeError(f"{what}: parameter '{p.name}' of {fn.__name__}() has no value: bind it with "
                            "functools.partial")
    return [p.name for p in positional], values


class BlockSource(Source):
    """The user's function with a generated body around its own; ``prebound`` names (refs, bound
    keywords, tilewarp itself) are visible to the body before any statement runs."""


def block_source(fn, body: list, param_names: list, prebound: dict, program) -> BlockSource:
    src = get_source(fn)
    node = src.tree
    tree = ast.FunctionDef(name=node.name, args=ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in param_names],
                                                              kwonlyargs=[], kw_defaults=[], defaults=[]),
                           body=body, decorator_list=[], returns=None, type_params=[])
    ast.copy_location(tree, node)
    for n in ast.walk(tree):  # generated statements point at the kernel's def line
        if getattr(n, "lineno", None) is None:
            ast.copy_location(n, node)
    source = BlockSource(**{f: getattr(src, f) for f in ("fn", "file", "first_line", "indent", "lines")},
                         tree=tree, static_values={})
    import tilewarp

    source.prebound = {WP: tilewarp, "_blk_range": _Range, **prebound}
    source.program = program
    return source


class BlockKernel(Kernel):
    """The tile kernel of one block program (parameter types fixed: arrays of the call's dtypes)."""

    def __init__(self, fn, source: BlockSource, param_types: dict, key: str):
        super().__init__(fn, key=key)
        _DECLARED[(fn.__module__, fn.__qualname__)].discard(self)  # not a @wp.kernel of the user's
        self._source = source
        self._templates = dict(param_types)
        self._param_types = dict(param_types)
        self._generic = False

    @property
    def arg_names(self) -> list:
        return list(self._templates)


_kernels: dict = {}
_kernels_lock = threading.Lock()


def kernel_for(fn, body: list, params: dict, prebound: dict, program, label: str) -> BlockKernel:
    """The kernel for this generated source (one object per distinct source and types, so a
    program called again, or with other shapes that give the same code, is not lowered again)."""
    tree_key = ast.dump(ast.Module(body=body, type_ignores=[]))
    stable = (fn.__module__, fn.__qualname__, tree_key, tuple((n, T.type_name(t)) for n, t in params.items()),
              tuple(sorted((k, _stable(v)) for k, v in prebound.items())))
    key = (fn, stable)
    with _kernels_lock:
        k = _kernels.get(key)
        if k is None:
            source = block_source(fn, body, list(params), prebound, program)
            # the key names the program across processes (tuning choices on disk are filed under it)
            k = _kernels[key] = BlockKernel(fn, source, params, f"{fn.__qualname__}[{label} "
                                                                 f"{names.digest(repr(stable), n=16)}]")
        return k


def _stable(value) -> str:
    """A description of a bound value that is the same in every process (no object addresses)."""
    if isinstance(value, type):
        return T.type_name(value)
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if name is not None and (callable(value) or inspect.ismodule(value)):
        return f"{getattr(value, '__module__', '')}.{name}"
    return repr(value)


def source_text(kernel: BlockKernel) -> str:
    """The generated tile kernel as Python text (``debug=True`` prints it; docs/BLOCKS.md shows it)."""
    tree = kernel.source().tree
    params = ", ".join(f"{n}: {T.type_name(t)}" for n, t in kernel._templates.items())
    body = "\n".join("    " + line for stmt in tree.body for line in ast.unparse(stmt).splitlines())
    return f"@wp.kernel\ndef {tree.name}({params}):\n{body}\n"


# ---- arguments -----------------------------------------------------------------------------------


def as_array(value, device, what: str):
    """A launch argument as a ``wp.array``: itself, a NumPy array or number (copied to ``device``),
    or an object with ``__dlpack__`` (a view, no copy)."""
    if isinstance(value, array):
        return value
    if hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray):
        return from_dlpack(value)
    if isinstance(value, (bool, int, float)):  # Python numbers as in kernel code: float32, int32
        value = np.asarray(value, dtype=np.bool_ if isinstance(value, bool) else
                           np.int32 if isinstance(value, int) else np.float32)
    if isinstance(value, (np.number, np.bool_)) or (isinstance(value, np.ndarray) and value.ndim == 0):
        value = np.asarray(value).reshape(1)
    if isinstance(value, np.ndarray):
        return array(value, device=device)
    raise TypeError(f"{what}: expected a wp.array, a NumPy array, a number or a DLPack tensor, got "
                    f"{type(value).__name__}")


def wp_dtype(dtype, what: str):
    """A tilewarp scalar type from a tilewarp, NumPy, string or torch dtype."""
    if isinstance(dtype, type) and (T.is_scalar(dtype) or T.is_composite(dtype)):
        return dtype
    if dtype in (float, int, bool):
        return T.value_type(dtype)
    if type(dtype).__module__.startswith("torch"):
        return dtype_from_torch(dtype)
    try:
        return T.dtype_from_numpy(np.dtype(dtype))
    except Exception:  # noqa: BLE001
        raise TypeError(f"{what}: unsupported dtype {dtype!r}") from None


def same_device(arrays, device, what: str):
    for a in arrays:
        if a.device != device:
            raise ValueError(f"{what}: all arrays must be on one device, got {a.device} and {device}")


class _Range:
    """``_blk_range(axis, lo, hi)`` in generated code: while the lowerer passes the statements that
    follow, program index ``axis`` is known to lie in [lo, hi] (``_blk_range(axis)``: no longer)."""

    @staticmethod
    def _tw_lower_call(lw, node):
        axis, *bounds = (a.value for a in node.args)
        ranges = lw.__dict__.setdefault("_blk_ranges", {})
        if bounds:
            ranges[axis] = tuple(bounds)
        else:
            ranges.pop(axis, None)


def wrap_body(fn, refs, grid, names, parallel, sequential, peel=False) -> list:
    """The generated kernel body: program indices, accumulators, the user's body (in loops over the
    sequential axes), the stores of the outputs. ``peel``: the innermost sequential axis's first and
    last iterations get their own copies of the body (``pl.when(program_id(k) == 0)`` is then known
    true there and false in the loop between, which keeps a GEMM's K loop free of branches)."""
    def wp(attr, *args, **kw):
        return ast.Call(ast.Attribute(ast.Name(WP, ast.Load()), attr, ast.Load()), list(args),
                        [ast.keyword(k, v) for k, v in kw.items()])

    def assign(name, value):
        return ast.Assign([ast.Name(name, ast.Store())], value)

    def const(v):
        return ast.Constant(int(v))

    body = []
    if parallel:
        body.append(assign("_blk_p", wp("tid")))
        stride = 1
        for k, axis in enumerate(reversed(parallel)):
            e = ast.Name("_blk_p", ast.Load())
            if stride > 1:
                e = ast.BinOp(e, ast.FloorDiv(), const(stride))
            if k < len(parallel) - 1:
                e = ast.BinOp(e, ast.Mod(), const(grid[axis]))
            body.append(assign(names[axis], e))
            stride *= grid[axis]
    for ref in refs:
        shape = ast.Tuple([const(b) for b in ref.acc_shape], ast.Load())
        if ref.output and getattr(ref, "init_load", False):  # an output the body also reads: its values
            body.append(assign(ref.acc, wp("tile_load", ref.target(), shape=shape,
                                           offset=ast.Tuple(ref.inner_offsets, ast.Load()))))
        elif ref.output:
            body.append(assign(ref.acc, wp("tile_zeros", shape=shape,
                                           dtype=ast.Name(f"_blk_dtype_{ref.name}", ast.Load()))))
    user = list(get_source(fn).tree.body)

    def loop(axis, start, stop, stmts):
        return ast.For(ast.Name(names[axis], ast.Store()), ast.Call(ast.Name("range", ast.Load()),
                                                                    [const(start), const(stop)], []), stmts, [])

    def marker(*args):
        return ast.Expr(ast.Call(ast.Name("_blk_range", ast.Load()), [const(a) for a in args], []))

    inner = user
    if sequential and peel:
        axis, n = sequential[-1], grid[sequential[-1]]
        inner = []
        for k in sorted({0, n - 1}):
            if k == n - 1 and n > 2:
                inner += [marker(axis, 1, n - 2), loop(axis, 1, n - 1, copy.deepcopy(user)), marker(axis)]
            inner += [assign(names[axis], const(k))] + copy.deepcopy(user)
        sequential = sequential[:-1]
    for axis in reversed(sequential):
        inner = [loop(axis, 0, grid[axis], inner)]
    body += inner
    for ref in refs:
        if ref.output:
            body.append(ast.Expr(wp("tile_store", ref.target(), ast.Name(ref.acc, ast.Load()),
                                    offset=ast.Tuple(ref.inner_offsets, ast.Load()))))
    return body


__all__ = ["BlockSpecError", "BlockKernel", "kernel_for", "source_text", "as_array", "wp_dtype", "unwrap",
           "split_parameters", "wrap_body"]


def launcher(kernel, blocks: int, block_dim: int, device):
    """The plan's launch: a plain ``launch_tiled``, so from its second call on a remembered one (one
    packing and one submit: runtime/launch.py) unless a Tape, debug mode or verify_fp asks for more."""
    return lambda values: launch_tiled(kernel, dim=[blocks], inputs=values, block_dim=block_dim, device=device)
