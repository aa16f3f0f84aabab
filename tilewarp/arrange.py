"""Arrange-then-apply (the NineToothed model) on tilewarp's tiles.

    BLOCK = arrange.Symbol("BLOCK", meta=True)

    @arrange.jit
    def add(x: arrange.Tensor(1).tile((BLOCK,)), y: arrange.Tensor(1).tile((BLOCK,)),
            z: arrange.Tensor(1).tile((BLOCK,))):
        z = x + y

    add(x, y, z)  # z written in place; BLOCK (and the lanes per block) chosen on the first call

A ``Tensor`` describes how an array is cut: ``tile`` splits its outermost level into a grid of
tiles, ``expand`` repeats a level's size-1 dimensions, ``squeeze`` drops them, ``dtype`` is the
level below (assignable). A kernel's parameters are arranged tensors whose outermost level is
the launch grid (the same for all of them); in the body a parameter is the level below: a tile
(read it, assign it: the output tile is stored), or, with more levels, something indexed to reach
one (``a[k]``, ``a.shape[0]``). Parameters the body assigns are outputs, written in place.
"""
from __future__ import annotations

import ast
import inspect
import math
import operator

import numpy as np

from .language import types as T
from .block_programs import tune
from .block_programs.program import BlockSpecError, as_array, kernel_for, launcher, source_text, wrap_body
from .block_programs.refs import BlockRef, parse_index
from .errors import KernelTypeError
from .frontend.control import assigned_names
from .frontend.source import get_source
from .runtime.array import array
from .runtime.device import get_device
from .runtime.launch import launch_tiled
from .runtime.array import clone

__all__ = ["Symbol", "Tensor", "jit", "BlockSpecError"]

#: values tried for a meta symbol without bounds
META_CANDIDATES = (32, 64, 128, 256, 512, 1024)
#: a tile bigger than this (elements), or tiles of a program bigger than this (bytes), is not tried
MAX_TILE_ELEMENTS = 16384
MAX_PROGRAM_BYTES = 160 * 1024


class Size:
    """An integer known when a kernel is called: symbols, array extents, arithmetic on them."""

    def __init__(self, evaluate, text):
        self._evaluate, self.text = evaluate, text

    @staticmethod
    def of(v) -> "Size":
        if isinstance(v, Size):
            return v
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return Size(lambda ctx, v=int(v): v, str(int(v)))
        raise TypeError(f"expected an integer or a Symbol, got {v!r}")

    def evaluate(self, ctx) -> int:
        return self._evaluate(ctx)

    def _op(self, other, fn, symbol, swap=False):
        a, b = (Size.of(other), self) if swap else (self, Size.of(other))
        return Size(lambda ctx: fn(a.evaluate(ctx), b.evaluate(ctx)), f"({a.text} {symbol} {b.text})")

    def __add__(self, o): return self._op(o, operator.add, "+")
    def __radd__(self, o): return self._op(o, operator.add, "+", True)
    def __sub__(self, o): return self._op(o, operator.sub, "-")
    def __rsub__(self, o): return self._op(o, operator.sub, "-", True)
    def __mul__(self, o): return self._op(o, operator.mul, "*")
    def __rmul__(self, o): return self._op(o, operator.mul, "*", True)
    def __floordiv__(self, o): return self._op(o, operator.floordiv, "//")
    def __rfloordiv__(self, o): return self._op(o, operator.floordiv, "//", True)

    def __repr__(self):
        return self.text


class Symbol(Size):
    """A named size. ``meta=True``: a block size the framework picks (timing candidates, powers of
    two within ``lower_bound``/``upper_bound``); else read from the arguments' shapes."""

    def __init__(self, name, meta=False, constexpr=None, lower_bound=None, upper_bound=None):
        self.name, self.meta = str(name), bool(meta)
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        super().__init__(self._value, self.name)

    def _value(self, ctx):
        if self.name not in ctx.symbols:
            raise BlockSpecError(f"symbol {self.name} has no value: it is not a meta symbol and no argument's "
                                 "shape gives it")
        return ctx.symbols[self.name]

    def candidates(self) -> list:
        low, high = self.lower_bound or min(META_CANDIDATES), self.upper_bound or max(META_CANDIDATES)
        values = [2 ** k for k in range(0, 16) if low <= 2 ** k <= high]
        return values or [int(low)]


class _Dim:
    __slots__ = ("size", "axis", "stride")

    def __init__(self, size, axis, stride):
        self.size, self.axis, self.stride = int(size), axis, int(stride)


class Tensor:
    """An arrangement of an array (lazy: evaluated per call, with the call's shapes and meta values)."""

    def __init__(self, ndim=None, *, shape=None, dtype=None, other=None, name=None, _parent=None, _op=None):
        if _parent is None:
            if shape is not None:
                shape = tuple(shape)
                ndim = len(shape) if ndim is None else ndim
            if not isinstance(ndim, int) or ndim < 1 or (shape is not None and len(shape) != ndim):
                raise TypeError(f"Tensor(ndim): ndim must be a positive int matching shape, got {ndim!r}")
            self._root_ndim, self.root_shape = ndim, shape
        self._parent, self._op, self._root = _parent, _op, (self if _parent is None else _parent._root)
        self.name, self.other = name, other
        self._dtype_override = None

    def _level_ndims(self, override="own") -> list:
        """The number of dimensions of each level, outermost first."""
        override = self._dtype_override if override == "own" else override
        if self._parent is None:
            dims = [self._root_ndim]
        else:
            op, args, parent_override = self._op
            p = self._parent._level_ndims(parent_override)
            dims = {"dtype": lambda: p[1:], "tile": lambda: [p[0]] + p, "expand": lambda: p,
                    "squeeze": lambda: [p[0] - len(args[0])] + p[1:]}[op]()
        if override is not None:
            dims = dims[:1] + override._level_ndims()
        return dims

    # ---- arrangement -------------------------------------------------------------------------

    def _derived(self, op, *args):
        return Tensor(_parent=self, _op=(op, args, self._dtype_override))

    def tile(self, tile_shape, strides=None, dilation=None):
        if strides is not None or dilation is not None:
            raise NotImplementedError("Tensor.tile(): strides and dilation are not supported")
        tile_shape = tuple(tile_shape)
        if len(tile_shape) != self.ndim:
            raise BlockSpecError(f"tile({tile_shape}): {len(tile_shape)} sizes for a level of {self.ndim} dimensions")
        return self._derived("tile", tile_shape)

    def expand(self, shape):
        shape = tuple(shape)
        if len(shape) != self.ndim:
            raise BlockSpecError(f"expand({shape}): {len(shape)} sizes for a level of {self.ndim} dimensions")
        return self._derived("expand", shape)

    def squeeze(self, dim):
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        return self._derived("squeeze", tuple(sorted(d % self.ndim for d in dims)))

    def permute(self, *args, **kwargs):
        raise NotImplementedError("Tensor.permute() is not supported: tiles must be boxes of the array in its order")

    def flatten(self, *args, **kwargs):
        raise NotImplementedError("Tensor.flatten() is not supported")

    @property
    def ndim(self) -> int:
        dims = self._level_ndims()
        if not dims:
            raise BlockSpecError(f"{self!r}: the level below an array's elements is not a tensor")
        return dims[0]

    @property
    def shape(self) -> tuple:
        return tuple(Size(lambda ctx, d=d: ctx.levels(self)[0][d].size, f"{self!r}.shape[{d}]")
                     for d in range(self.ndim))

    @property
    def dtype(self):
        return Tensor(_parent=self, _op=("dtype", (), self._dtype_override))

    @dtype.setter
    def dtype(self, inner):
        if not isinstance(inner, Tensor):
            raise TypeError("Tensor.dtype can be set to an arrangement of the level below (t.dtype.squeeze(0), ...)")
        self._dtype_override = inner

    def __repr__(self):
        return self.name or f"Tensor({self._root._root_ndim})"

    def meta_symbols(self) -> set:
        """The meta symbols this arrangement depends on."""
        found, seen = set(), set()

        def walk(t):
            if t is None or id(t) in seen:
                return
            seen.add(id(t))
            if t._op is not None:
                op, args, override = t._op
                for a in (args[0] if args else ()):
                    if isinstance(a, Symbol) and a.meta:
                        found.add(a)
                walk(override)
            walk(t._parent)
            walk(t._dtype_override)

        walk(self)
        return found


class _Context:
    """One call's values: the arrays' shapes by root tensor, symbol values, evaluated levels."""

    def __init__(self, roots: dict, symbols: dict):
        self.roots, self.symbols, self._levels = roots, symbols, {}

    def levels(self, t: Tensor, override="own"):
        key = (id(t), id(override) if override != "own" else "own")
        if key not in self._levels:
            self._levels[key] = self._evaluate(t, t._dtype_override if override == "own" else override)
        return self._levels[key]

    def _evaluate(self, t, override):
        if t._parent is None:
            if t not in self.roots:
                raise BlockSpecError(f"{t!r} is not the arrangement of any of the kernel's parameters")
            shape = self.roots[t]
            levels = [[_Dim(n, a, 1) for a, n in enumerate(shape)]]
        else:
            op, args, parent_override = t._op
            parent = self.levels(t._parent, parent_override)
            levels = _apply(op, args, parent, self, repr(t._parent))
        if override is not None:
            inner = self.levels(override)
            levels = levels[:1] + inner
        return levels


def _apply(op, args, levels, ctx, what):
    if op == "dtype":
        if len(levels) < 2:
            raise BlockSpecError(f"{what}.dtype: the level below the elements is not a tensor (tile it first)")
        return levels[1:]
    outer = levels[0]
    if op == "tile":
        out, inner = [], []
        for d, (dim, b) in enumerate(zip(outer, args[0])):
            b = dim.size if (isinstance(b, int) and b == -1) else Size.of(b).evaluate(ctx)
            if b <= 0:
                raise BlockSpecError(f"{what}.tile(): tile size {b} in dimension {d}")
            if dim.stride == 0:
                raise BlockSpecError(f"{what}.tile(): dimension {d} is expanded; tile before expanding")
            out.append(_Dim(-(-dim.size // b), dim.axis, dim.stride * b))
            inner.append(_Dim(b, dim.axis, dim.stride))
        return [out, inner] + levels[1:]
    if op == "expand":
        out = []
        for d, (dim, n) in enumerate(zip(outer, args[0])):
            n = dim.size if (isinstance(n, int) and n == -1) else Size.of(n).evaluate(ctx)
            if n != dim.size and dim.size != 1:
                raise BlockSpecError(f"{what}.expand(): dimension {d} has size {dim.size}; only size-1 dimensions "
                                     f"expand (to {n})")
            out.append(dim if n == dim.size else _Dim(n, dim.axis, 0))
        return [out] + levels[1:]
    if op == "squeeze":
        for d in args[0]:
            if outer[d].size != 1:
                raise BlockSpecError(f"{what}.squeeze({d}): dimension {d} has size {outer[d].size}, not 1")
        return [[dim for d, dim in enumerate(outer) if d not in args[0]]] + levels[1:]
    raise AssertionError(op)


# ---- the kernel's operands ----------------------------------------------------------------------


class ArrangedRef(BlockRef):
    """A parameter in the body: its innermost tile, reached through ``middle`` levels if any."""

    def __init__(self, *args, middle=(), init_load=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.middle, self.init_load = list(middle), init_load

    @property
    def shape(self):
        return tuple(d.size for d in self.middle[0]) if self.middle else super().shape

    def _everything(self):
        return [(None, n) for n in BlockRef.shape.fget(self)]

    def _tw_value(self, lw, node):
        if self.middle:
            raise KernelTypeError(f"'{self.name}' is a level of tiles: index it ({self.name}[k]) to get a tile",
                                  lw.src.loc(node))
        return self.read(lw, self._everything(), node)

    def _tw_assign(self, lw, value, node):
        if not self.output or self.middle:
            raise KernelTypeError(f"'{self.name}' cannot be assigned: only a kernel's output tiles can",
                                  lw.src.loc(node))
        self.write(lw, self._everything(), value, node)

    def _tw_subscript(self, lw, node):
        if not self.middle:
            return self.read(lw, parse_index(lw, self, node.slice, node), node)
        level = self.middle[0]
        entries = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(entries) != len(level):
            raise KernelTypeError(f"'{self.name}' has {len(level)} dimension(s) here, indexed with {len(entries)}",
                                  lw.src.loc(node))
        offsets = [o for o in self.offsets]
        for e, dim in zip(entries, level):
            if dim.stride:
                offsets[dim.axis] = ast.BinOp(offsets[dim.axis], ast.Add(),
                                              ast.BinOp(e, ast.Mult(), ast.Constant(dim.stride)))
        child = ArrangedRef(self.name, self.array, self.dtype, self.block, self.squeezed, offsets, False,
                            middle=self.middle[1:])
        return child if child.middle else child.read(lw, child._everything(), node)


def _operand(name, levels, dtype, pids, output, init_load):
    """The ref of a parameter arranged as ``levels`` (the outermost one: the grid)."""
    grid_level, *middle, tile = levels
    ndim = max([d.axis for lv in levels for d in lv] + [-1]) + 1
    block, squeezed = [1] * ndim, [True] * ndim
    for d in tile:
        if d.stride != 1 or not squeezed[d.axis]:
            raise BlockSpecError(f"parameter '{name}': its tiles must be boxes of the array (no expanded or "
                                 "repeated dimension in the innermost level)")
        block[d.axis], squeezed[d.axis] = d.size, False
    offsets = [ast.Constant(0) for _ in range(ndim)]
    for d, pid in zip(grid_level, pids):
        if d.stride:
            offsets[d.axis] = ast.BinOp(offsets[d.axis], ast.Add(),
                                        ast.BinOp(ast.Name(pid, ast.Load()), ast.Mult(), ast.Constant(d.stride)))
    if output and middle:
        raise BlockSpecError(f"parameter '{name}': an output must be arranged as a grid of tiles (one level below "
                             "the grid)")
    return ArrangedRef(name, f"_blk_{name}", dtype, block, squeezed, offsets, output,
                       acc=f"_blk_acc_{name}" if output else None, middle=middle, init_load=init_load)


class ArrangedKernel:
    def __init__(self, fn, meta=None, block_dim=None):
        self.fn, self.meta, self.block_dim = fn, dict(meta or {}), block_dim
        sig = inspect.signature(fn)
        self.params = {}
        for p in sig.parameters.values():
            if isinstance(p.annotation, str):  # `from __future__ import annotations`: evaluated where written
                try:
                    p = p.replace(annotation=get_source(fn).evaluate(ast.parse(p.annotation, mode="eval").body, {}))
                except Exception:  # noqa: BLE001 - reported below as a missing arrangement
                    pass
            if not isinstance(p.annotation, Tensor):
                raise TypeError(f"arrange.jit: parameter '{p.name}' of {fn.__name__}() needs an arranged Tensor as "
                                "its annotation")
            self.params[p.name] = p.annotation
        tree = get_source(fn).tree
        written = assigned_names(tree.body)
        metadata = {id(n.value) for n in ast.walk(tree)
                    if isinstance(n, ast.Attribute) and n.attr in ("shape", "dtype", "ndim")}
        read = {n.id for n in ast.walk(tree)  # values read (c.shape is no read of c's tile)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in metadata}
        self.outputs = [n for n in self.params if n in written]
        self.reads = read
        if not self.outputs:
            raise TypeError(f"arrange.jit: {fn.__name__}() assigns none of its parameters, so it has no output")
        self.metas = sorted(set().union(*(t.meta_symbols() for t in self.params.values())), key=lambda s: s.name)
        self.debug = False
        self._plans: dict = {}

    def __call__(self, *args, **meta):
        if len(args) != len(self.params):
            raise TypeError(f"{self.fn.__name__}() takes {len(self.params)} arrays, got {len(args)}")
        # arrays and DLPack tensors keep their device; NumPy arrays follow the first of them
        viewed = [as_array(a, None, f"argument '{n}'") if isinstance(a, array) or (
            hasattr(a, "__dlpack__") and not isinstance(a, np.ndarray)) else a for a, n in zip(args, self.params)]
        given = [a for a in viewed if isinstance(a, array)]
        device = given[0].device if given else get_device(None)
        arrays = [as_array(a, device, f"argument '{n}'") for a, n in zip(viewed, self.params)]
        pinned = {**self.meta, **meta}
        unknown = set(pinned) - {s.name for s in self.metas} - {"block_dim"}
        if unknown:
            raise TypeError(f"{self.fn.__name__}(): no meta symbol named {sorted(unknown)}")
        key = (str(device), tuple((T.type_name(a.dtype), tuple(a.shape)) for a in arrays), tuple(sorted(pinned.items())),
               tune.enabled())
        plan = self._plans.get(key)  # a call like an earlier one: only the launch is left
        if plan is None:
            config = self._config(arrays, device, pinned)
            kernel, blocks = self._build(arrays, config)
            if self.debug:
                print(source_text(kernel))
            plan = self._plans[key] = launcher(kernel, blocks, config["block_dim"], get_device(device))
        plan(arrays)
        for a, arr in zip(args, arrays):  # NumPy outputs: the results copied back
            if isinstance(a, np.ndarray) and arr is not a:
                a[...] = arr.numpy().reshape(a.shape)
        return None

    # ---- arrangement per call --------------------------------------------------------------------

    def _context(self, arrays, config):
        roots, symbols = {}, dict(config)
        for (name, t), a in zip(self.params.items(), arrays):
            root = t._root
            if root in roots and roots[root] != tuple(a.shape):
                raise BlockSpecError(f"argument '{name}' has shape {tuple(a.shape)}, another argument arranged from "
                                     f"the same Tensor has {roots[root]}")
            if root._root_ndim != a.ndim:
                raise BlockSpecError(f"argument '{name}' is {a.ndim}-d, its arrangement starts from "
                                     f"Tensor({root._root_ndim})")
            roots[root] = tuple(a.shape)
            for s, n in zip(root.root_shape or (), a.shape):
                if isinstance(s, Symbol):
                    if symbols.get(s.name, n) != n:
                        raise BlockSpecError(f"argument '{name}': {s.name} = {n} here, {symbols[s.name]} elsewhere")
                    symbols[s.name] = n
                elif isinstance(s, int) and s != n:
                    raise BlockSpecError(f"argument '{name}' has shape {tuple(a.shape)}, the arrangement needs "
                                         f"{root.root_shape}")
        return _Context(roots, symbols)

    def _levels(self, arrays, config):
        ctx = self._context(arrays, config)
        levels = {name: ctx.levels(t) for name, t in self.params.items()}
        grid = None
        for name, lv in levels.items():
            if len(lv) < 2:
                raise BlockSpecError(f"parameter '{name}': arrange it with .tile(...) (it has no tiles)")
            sizes = tuple(d.size for d in lv[0])
            if grid is None:
                grid, first = sizes, name
            elif sizes != grid:
                raise BlockSpecError(f"parameters '{first}' and '{name}' are arranged into grids {grid} and {sizes}: "
                                     "expand or tile them to one grid")
        return levels, grid

    def _build(self, arrays, config):
        levels, grid = self._levels(arrays, config)
        pids = [f"_blk_pid{k}" for k in range(len(grid))]
        refs, params, prebound = [], {}, {}
        for (name, lv), a in zip(levels.items(), arrays):
            output = name in self.outputs
            ref = _operand(name, lv, a.dtype, pids, output, output and name in self.reads)
            params[ref.array] = T.ArrayType(a.dtype, a.ndim)
            prebound[name], prebound[f"_blk_dtype_{name}"] = ref, a.dtype
            refs.append(ref)
        body = wrap_body(self.fn, refs, grid, pids, list(range(len(grid))), [])
        label = ",".join(f"{k}={v}" for k, v in sorted(config.items()) if k != "block_dim")
        kernel = kernel_for(self.fn, body, params, prebound, None, f"arrange {label}")
        return kernel, math.prod(grid)

    # ---- meta-parameters ---------------------------------------------------------------------------

    def _fits(self, arrays, config) -> bool:
        try:
            levels, _ = self._levels(arrays, config)
        except BlockSpecError:
            return False
        total = 0
        for lv, a in zip(levels.values(), arrays):
            tile = lv[-1]
            n = math.prod(d.size for d in tile)
            extent_ok = all(d.size < 2 * a.shape[d.axis] or d.size <= 32 for d in tile)
            if n > MAX_TILE_ELEMENTS or not extent_ok:
                return False
            total += n * np.dtype(T.numpy_dtype(a.dtype)).itemsize
        return total <= MAX_PROGRAM_BYTES

    def _default(self, arrays, pinned):
        config = {s.name: pinned.get(s.name, 64 if 64 in s.candidates() else s.candidates()[0]) for s in self.metas}
        for s in self.metas:  # shrink until it fits
            while s.name not in pinned and not self._fits(arrays, config) and config[s.name] > min(s.candidates()):
                config[s.name] //= 2
        return config

    def _config(self, arrays, device, pinned):
        config = self._default(arrays, pinned)
        if not self._fits(arrays, config):
            self._levels(arrays, config)  # an arrangement error, if that is what it is
            raise BlockSpecError(f"{', '.join(sorted(config))}: no candidate value fits (tiles of at most "
                                 f"{MAX_TILE_ELEMENTS} elements, {MAX_PROGRAM_BYTES // 1024} KB per program, not "
                                 f"twice an array's extent); got {config}")
        free = [s for s in self.metas if s.name not in pinned]
        bd_pinned = pinned.get("block_dim", self.block_dim)
        if not tune.enabled() or (not free and bd_pinned is not None):
            config["block_dim"] = bd_pinned or tune.rule_of_thumb(self._largest_output(arrays, config))
            return config
        shapes = ";".join(f"{T.type_name(a.dtype)}{tuple(a.shape)}" for a in arrays)
        kernel, blocks = self._build(arrays, config)
        code = tune.code_identity(kernel, device, blocks, bd_pinned or tune.rule_of_thumb(
            self._largest_output(arrays, config)))
        key = tune.tuning_key(f"{self.fn.__module__}.{self.fn.__qualname__}|{shapes}|{sorted(pinned.items())}|"
                              f"{ast.dump(get_source(self.fn).tree)}|{code}", device)
        remembered = tune.recall(key)
        if remembered is not None:
            return dict(remembered)
        return self._tune(arrays, device, pinned, config, free, bd_pinned, key)

    def _largest_output(self, arrays, config):
        levels, _ = self._levels(arrays, config)
        return max(math.prod(d.size for d in levels[n][-1]) for n in self.outputs)

    def _tune(self, arrays, device, pinned, config, free, bd_pinned, key):
        """Coordinate descent: each free symbol over its candidates (the others held), then the lanes."""
        import time

        scratch = [clone(a) if n in self.outputs else a for n, a in zip(self.params, arrays)]
        timings, t0 = {}, time.perf_counter()

        def measure(cfg):
            k = tuple(sorted(cfg.items()))
            if k not in timings:
                kernel, blocks = self._build(arrays, cfg)
                run = lambda: launch_tiled(kernel, dim=[blocks], inputs=scratch, block_dim=cfg["block_dim"],  # noqa
                                           device=device, record_tape=False)
                timings[k] = tune.seconds_per_run(run, device)
            return timings[k]

        config["block_dim"] = bd_pinned or tune.rule_of_thumb(self._largest_output(arrays, config))
        for s in free:
            options = [dict(config, **{s.name: v}) for v in s.candidates()]
            options = [c for c in options if self._fits(arrays, c)] or [config]
            config = min(options, key=measure)
        if bd_pinned is None:
            largest = self._largest_output(arrays, config)
            options = [dict(config, block_dim=b) for b in tune.lane_candidates(largest)]
            config = min(options, key=measure)
        ms = {", ".join(f"{k}={v}" for k, v in c): round(t * 1e3, 4) for c, t in timings.items()}
        tune.settle(key, dict(config), self.fn.__qualname__, ms, time.perf_counter() - t0, device,
                    f"{', '.join(f'{k}={v}' for k, v in config.items())} ({len(timings)} candidates)")
        return dict(config)


def jit(fn=None, *, meta=None, block_dim=None, debug=False):
    """Make an arranged kernel from ``fn`` (its parameters annotated with arranged Tensors).

    ``meta`` pins meta symbols by name, ``block_dim`` the lanes per block; the rest are tuned on the
    first call per shapes, dtypes and device (``block_programs/tune.py``). ``debug=True`` prints the tile
    kernel each call generates."""
    def make(f):
        k = ArrangedKernel(f, meta, block_dim)
        k.debug = debug
        return k

    return make(fn) if fn is not None else make

