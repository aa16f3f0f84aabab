"""A block program's operands as kernel values: ``ref[...]`` reads, ``ref[...] = x`` writes.

A ``BlockRef`` is the block of one array that a program works on: where it starts (one offset
expression per array dimension, over the program indices) and its extent. The lowerer
(``frontend/lower.py``) hands it every use of its name, and each use expands into the tile
operations a hand-written tile kernel would contain:

* reading an input is a ``tile_load`` of the block (or of the part indexed), zero-padded outside
  the array, with squeezed (``None``) dimensions dropped by ``tile_reshape``;
* an output is a tile held for the whole program (its *accumulator*): writes replace or update
  parts of it, reads see it, and the program ends with one ``tile_store`` of it, which skips
  elements outside the array. A sequential grid axis (one no output's index map uses) is a loop
  around the body, so ``o[...] += x`` over it accumulates in registers, like a tile GEMM's K loop.
"""
from __future__ import annotations

import ast
import copy

from ..language import types as T
from ..errors import KernelSyntaxError, KernelTypeError
from ..ir import nodes as ir
from ..frontend.tile_elementwise import accumulate_product

#: the name the generated code reaches tilewarp's builtins through
WP = "_blk_wp"


class BlockRef:
    def __init__(self, name, array, dtype, block, squeezed, offsets, output, acc=None):
        self.name = name  # the kernel function's parameter
        self.array = array  # the generated kernel's array parameter
        self.dtype = dtype
        self.block = tuple(block)  # extent per array dimension (1 where squeezed)
        self.squeezed = tuple(squeezed)
        self.offsets = tuple(offsets)  # ast.expr per array dimension: where the block starts
        self.output = output
        self.acc = acc  # the accumulator's variable (outputs)

    @property
    def shape(self) -> tuple:
        return tuple(b for b, s in zip(self.block, self.squeezed) if not s)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def lead(self) -> int:
        """Leading squeezed dimensions, taken by indexing the array (a view, as ``x[i]``) instead of
        loading extent-1 dimensions and reshaping (one dimension always stays)."""
        n = 0
        while n < len(self.squeezed) - 1 and self.squeezed[n]:
            n += 1
        return n

    @property
    def acc_shape(self) -> tuple:
        """An output's accumulator: the block past the leading squeezed dimensions."""
        return self.block[self.lead:]

    def target(self):
        """The array the tile operations address: the array, or its view at the leading indices."""
        arr = ast.Name(self.array, ast.Load())
        if not self.lead:
            return arr
        index = [copy.deepcopy(o) for o in self.offsets[:self.lead]]
        return ast.Subscript(arr, index[0] if len(index) == 1 else ast.Tuple(index, ast.Load()), ast.Load())

    @property
    def inner_offsets(self) -> list:
        return [copy.deepcopy(o) for o in self.offsets[self.lead:]]

    @property
    def size(self) -> int:
        n = 1
        for b in self.shape:
            n *= b
        return n

    def __repr__(self):  # complete: kernels are cached by it (block_programs/program.py)
        where = ", ".join(ast.unparse(o) for o in self.offsets)
        return (f"Ref({self.name} -> {self.array}: {T.type_name(self.dtype)} block {list(self.block)} squeezed "
                f"{list(self.squeezed)} at ({where}){' out ' + self.acc if self.output else ''})")

    # ---- the lowerer's hooks ------------------------------------------------------------------

    @property
    def _tw_carries(self):
        return (self.acc,) if self.output else ()

    def _tw_subscript(self, lw, node):
        return self.read(lw, parse_index(lw, self, node.slice, node), node)

    def _tw_place(self, lw, node):
        return RefPlace(lw, self, node)

    def _tw_value(self, lw, node):
        raise KernelTypeError(f"'{self.name}' is a reference to a block: read it with {self.name}[...]",
                              lw.src.loc(node))

    def _tw_assign(self, lw, value, node):
        raise KernelTypeError(f"'{self.name}' is a reference to a block: write into it with "
                              f"{self.name}[...] = value", lw.src.loc(node))

    # ---- reads and writes --------------------------------------------------------------------

    def read(self, lw, entries, node):
        """The block's part ``entries`` (``parse_index``): a tile, or a scalar where every
        dimension is indexed by an integer."""
        if self.output:
            return self._read_accumulator(lw, entries, node)
        if self._whole(entries):  # a block read again where nothing moved it: the first read's tile
            key = (self.name, tuple(id(lw.symbols.get(n.id)) for o in self.offsets for n in ast.walk(o)
                                    if isinstance(n, ast.Name)))
            reads = lw.__dict__.setdefault("_blk_reads", {})
            if key in reads and not _written_in_place(lw.fn.body, reads[key]):
                return reads[key]
            value = self._load(lw, entries, node)
            if lw.stmts is lw.fn.body:  # at the top level: it dominates every later read
                reads[key] = value
            return value
        return self._load(lw, entries, node)

    def _load(self, lw, entries, node):
        starts, sizes, dropped = [], [], []
        kept = iter(entries)
        for offset, squeezed in zip(self.offsets[self.lead:], self.squeezed[self.lead:]):
            if squeezed:
                starts.append(copy.deepcopy(offset))
                sizes.append(1)
                dropped.append(True)
                continue
            start, size = next(kept)
            starts.append(_plus(copy.deepcopy(offset), start))
            sizes.append(1 if size is None else size)
            dropped.append(size is None)
        tree = _call("tile_load", [self.target()], shape=_ints(sizes), offset=ast.Tuple(starts, ast.Load()))
        return finish(lw, tree, sizes, dropped, node)

    def _full_rank(self, entries):
        """Entries of the kept dimensions as entries of every array dimension (squeezed: index 0)."""
        kept = iter(entries)
        return [(None, None) if s else next(kept) for s in self.squeezed[self.lead:]]

    def _whole(self, entries) -> bool:
        return all(e == (None, n) for e, n in zip(entries, self.shape))

    def _read_accumulator(self, lw, entries, node):
        """Outputs live in a tile of the block's full rank (squeezed dimensions of extent 1)."""
        acc = lw.symbols[self.acc]
        full = self._full_rank(entries)
        offsets = [lw.const(0, T.int32) if start is None else _index_value(lw, start, node) for start, _ in full]
        sizes = [1 if size is None else size for _, size in full]
        dropped = [size is None for _, size in full]
        if all(dropped):
            return lw.call("tile_extract", [acc, *offsets], node)
        if self._whole(entries):
            return reshape(lw, acc, self.shape, node) if any(self.squeezed[self.lead:]) else acc
        view = lw.call("tile_view", [acc, *offsets], node, ((("o",),) * len(sizes), tuple(sizes)))
        return reshape(lw, view, [n for n, d in zip(sizes, dropped) if not d], node) if any(dropped) else view

    def write(self, lw, entries, value, node):
        if not self.output:
            raise KernelTypeError(f"'{self.name}' is an input: its block can be read, not written",
                                  lw.src.loc(node))
        acc = lw.symbols[self.acc]
        full = self._full_rank(entries)
        offsets = [lw.const(0, T.int32) if start is None else _index_value(lw, start, node) for start, _ in full]
        kept = [size for _, size in entries if size is not None]
        if not T.is_tile(value.type):
            if value.weak:
                value = lw.coerce(value, self.dtype, node, f"an element of '{self.name}'")
            if value.type != self.dtype:
                raise KernelTypeError(f"'{self.name}' holds {T.type_name(self.dtype)}, got a "
                                      f"{T.type_name(value.type)} value", lw.src.loc(node))
            if not kept:  # one element
                lw.call("_tile_element_set", [acc, *offsets, value], node, ("set",), discard=True)
                return
            value = full_tile(lw, kept, value, self.dtype, node)
        if value.type.dtype != self.dtype:
            raise KernelTypeError(f"'{self.name}' holds {T.type_name(self.dtype)}, got a tile of "
                                  f"{T.type_name(value.type.dtype)}: convert it with tile_astype()", lw.src.loc(node))
        if tuple(value.type.shape) != tuple(kept):
            raise KernelTypeError(f"writing a tile of shape {tuple(value.type.shape)} into a part of '{self.name}' "
                                  f"of shape {tuple(kept)}", lw.src.loc(node))
        sizes = [1 if size is None else size for _, size in full]
        if tuple(sizes) != tuple(kept):
            value = reshape(lw, value, sizes, node)
        if self._whole(entries):
            lw.bind(self.acc, value, node)
        else:
            lw.call("tile_assign", [acc, value, *offsets], node, discard=True)


class RefPlace:
    """``ref[...]`` as an assignment target (``frontend/places.py``)."""

    def __init__(self, lw, ref, node):
        self.lw, self.ref, self.node = lw, ref, node
        self.entries = parse_index(lw, ref, node.slice, node)

    def get(self):
        return self.ref.read(self.lw, self.entries, self.node)

    def set(self, value, stmt):
        self.ref.write(self.lw, self.entries, value, stmt)

    def aug_assign(self, op, node):
        lw, ref = self.lw, self.ref
        whole = all(e == (None, n) for e, n in zip(self.entries, ref.shape))
        product = node.value
        if op == "add" and whole and ref.output and ref.acc_shape == ref.shape and isinstance(product, ast.BinOp) \
                and isinstance(product.op, ast.MatMult):
            # o[...] += a @ b: tile_matmul into the accumulator, in place (as a tile GEMM's K loop)
            if accumulate_product(lw, ast.Name(ref.acc, ast.Store()), product, node):
                return
        current = self.get()
        self.set(lw.call(op, [current, lw.value(node.value)], node), node)


# ---- indices --------------------------------------------------------------------------------


def parse_index(lw, ref, index, node) -> list:
    """``ref[index]`` as one ``(start, size)`` per dimension of the block: ``start`` an AST (None:
    0), ``size`` a constant, None where an integer removes the dimension. ``...``, ``:``,
    constant-extent slices (``k*b:(k+1)*b``), ``pl.ds(start, size)`` and integers are accepted."""
    entries = list(index.elts) if isinstance(index, ast.Tuple) else [index]
    if isinstance(index, (list, tuple)):
        entries = list(index)
    shape = ref.shape
    ellipses = [k for k, e in enumerate(entries) if _is_ellipsis(e)]
    if len(ellipses) > 1:
        raise KernelSyntaxError("an index can hold one '...'", lw.src.loc(node))
    if ellipses:
        k = ellipses[0]
        fill = [ast.Slice(None, None, None)] * (len(shape) - len(entries) + 1)
        entries = entries[:k] + fill + entries[k + 1:]
    if len(entries) > len(shape):
        raise KernelTypeError(f"'{ref.name}' has {len(shape)} dimension(s) (block {list(shape)}), indexed with "
                              f"{len(entries)}", lw.src.loc(node))
    entries += [ast.Slice(None, None, None)] * (len(shape) - len(entries))
    return [_entry(lw, ref, e, extent, node) for e, extent in zip(entries, shape)]


def _written_in_place(body, value) -> bool:
    """Whether a statement changes ``value`` in place (t[i] = x, tile_assign, an in-place FFT, ...)."""
    return any(isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.side_effect
               and s.op.args and s.op.args[0] is value for s in ir.walk(body))


def _is_ellipsis(e) -> bool:
    return isinstance(e, ast.Constant) and e.value is Ellipsis


def _entry(lw, ref, e, extent, node):
    if isinstance(e, ast.Call):
        f = _resolve(lw, e.func)
        if getattr(f, "_tw_dslice", False):  # pl.ds(start, size)
            start, size = f.bind_ast(lw, e)
            return start, _positive(lw, size, extent, e)
        if f is slice:
            parts = list(e.args) + [None] * (3 - len(e.args))
            e = ast.Slice(None, parts[0], None) if len(e.args) == 1 else ast.Slice(*parts[:3])
    if isinstance(e, ast.Slice):
        if e.step is not None and _constant(lw, e.step) != 1:
            raise KernelTypeError("ref slices take no step", lw.src.loc(node))
        if e.lower is None and e.upper is None:
            return None, extent
        lower = e.lower if e.lower is not None else ast.Constant(0)
        upper = e.upper if e.upper is not None else ast.Constant(extent)
        size = _extent_of(lw, lower, upper, node)
        start = None if _constant(lw, lower) == 0 else lower
        return start, _positive(lw, size, extent, e)
    c = _constant(lw, e)
    if isinstance(c, int) and not isinstance(c, bool):
        if not -extent <= c < extent:
            raise KernelTypeError(f"index {c} is outside '{ref.name}' (extent {extent})", lw.src.loc(node))
        return ast.Constant(c % extent), None
    return e, None


def _positive(lw, size, extent, node):
    if not isinstance(size, int) or size <= 0:
        raise KernelTypeError(f"a part of a block needs a positive constant size, got {size!r}", lw.src.loc(node))
    return size


def _resolve(lw, func_node):
    try:
        return lw.visit(func_node)
    except Exception:  # noqa: BLE001 - not something we recognise: lowered as an index later
        return None


def _constant(lw, e):
    """The compile-time integer ``e`` is, or None."""
    if isinstance(e, ast.Constant):
        return e.value
    if any(isinstance(n, ast.Call) for n in ast.walk(e)):
        return None
    saved = lw.stmts, list(lw.fn.values)
    lw.stmts = []
    try:
        v = lw.visit(e)
    except Exception:  # noqa: BLE001
        v = None
    finally:
        lw.stmts, lw.fn.values[:] = saved[0], saved[1]
    if isinstance(v, ir.Value):
        return v.const if v.is_const else None
    return v if isinstance(v, int) else None


def _extent_of(lw, lower, upper, node):
    """``upper - lower`` of a slice when it is the same for any value of the run-time names in it
    (``k*b:(k+1)*b`` has extent b): tried with several values, in Python."""
    diff = ast.Expression(ast.BinOp(copy.deepcopy(upper), ast.Sub(), copy.deepcopy(lower)))
    ast.fix_missing_locations(diff)
    names = {n.id for n in ast.walk(diff) if isinstance(n, ast.Name)}
    fixed, free = {}, []
    for name in names:
        v = lw.symbols.get(name) if name in lw.symbols else lw.src.lookup(name)
        if isinstance(v, ir.Value):
            if v.is_const:
                fixed[name] = v.const
            else:
                free.append(name)
        else:
            fixed[name] = v
    code = compile(diff, "<slice>", "eval")
    results = set()
    for trial in (0, 1, 2, 7, 13, 100):
        try:
            results.add(eval(code, {"__builtins__": {}}, {**fixed, **{n: trial * (k + 1) for k, n in enumerate(free)}}))
        except Exception:  # noqa: BLE001
            results.add(None)
    if len(results) != 1 or not isinstance(next(iter(results)), int):
        raise KernelTypeError("a slice of a ref needs an extent known when the kernel compiles (a:b with b - a "
                              "constant, or pl.ds(start, size))", lw.src.loc(node))
    return results.pop()


def _index_value(lw, tree, node):
    v = lw.value(at(copy.deepcopy(tree), node))
    if v.weak:
        v = lw.const(v.const, T.int32)
    if not T.is_int(v.type):
        raise KernelTypeError(f"block indices must be integers, got {T.type_name(v.type)}", lw.src.loc(node))
    return v


# ---- generated code ----------------------------------------------------------------------------


def _call(name, args, **keywords):
    func = ast.Attribute(ast.Name(WP, ast.Load()), name, ast.Load())
    return ast.Call(func, list(args), [ast.keyword(k, v) for k, v in keywords.items()])


def _ints(values):
    return ast.Tuple([ast.Constant(int(v)) for v in values], ast.Load())


def _plus(a, b):
    return a if b is None else ast.BinOp(a, ast.Add(), copy.deepcopy(b))


def at(tree, node):
    """``tree`` located at ``node`` (errors inside generated code point at the user's line)."""
    for n in ast.walk(tree):
        for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if getattr(n, attr, None) is None and hasattr(node, attr):
                setattr(n, attr, getattr(node, attr))
    return tree


def finish(lw, tree, sizes, dropped, node):
    """Lower a full-rank tile expression; dimensions ``dropped`` (integer-indexed or squeezed) are
    removed, and a tile with none left is its one element."""
    t = lw.value(at(tree, node))
    if all(dropped):
        zeros = [lw.const(0, T.int32)] * len(sizes)
        return lw.call("tile_extract", [t, *zeros], node)
    if any(dropped):
        return reshape(lw, t, [n for n, d in zip(sizes, dropped) if not d], node)
    return t


def reshape(lw, t, shape, node):
    return lw.value(at(_call("tile_reshape", [temporary(lw, t)], shape=_ints(shape)), node))


def full_tile(lw, shape, value, dtype, node):
    tree = _call("tile_full", [], shape=_ints(shape), value=temporary(lw, value), dtype=temporary(lw, dtype))
    return lw.value(at(tree, node))


def temporary(lw, value, hint="tmp") -> ast.Name:
    """A name for an already lowered value, to use it in generated code."""
    lw._blk_temps = getattr(lw, "_blk_temps", 0) + 1
    name = f"_blk_{hint}{lw._blk_temps}"
    lw.symbols[name] = value
    return ast.Name(name, ast.Load())
