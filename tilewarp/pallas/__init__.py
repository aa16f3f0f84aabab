"""The Pallas block model on tilewarp's tiles: ``pallas_call``, ``BlockSpec``, grids, refs.

    from tilewarp import pallas as pl

    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    add = pl.pallas_call(add_kernel, out_shape=pl.ShapeDtypeStruct((4096,), wp.float32), grid=(16,),
                         in_specs=[pl.BlockSpec((256,), lambda i: (i,))] * 2,
                         out_specs=pl.BlockSpec((256,), lambda i: (i,)))
    z = add(x, y)

The kernel body is tilewarp kernel code on refs; the call becomes one tile kernel (see
``block_programs/refs.py`` for how refs lower, ``docs/BLOCKS.md`` for the model). Grid axes that an
output's index map uses run in parallel, one tile block each; the others run in order inside
the block, so an output block revisited over them accumulates, deterministically.
"""
from __future__ import annotations

import ast

import numpy as np

from ..language import types as T
from ..block_programs import tune
from ..block_programs.index_expr import IndexMapError, grid_points, trace
from ..block_programs.program import (BlockSpecError, as_array, kernel_for, launcher, source_text, split_parameters,
                                      unwrap, wp_dtype, wrap_body)
from ..block_programs.refs import BlockRef, at, parse_index
from ..errors import KernelSyntaxError, KernelTypeError
from ..frontend.source import get_source
from ..runtime import tape_state
from ..runtime.array import array, uninitialized, zeros
from ..runtime.device import get_device
from ..frontend.tiles import constant

__all__ = ["BlockSpec", "Blocked", "Unblocked", "ShapeDtypeStruct", "pallas_call", "program_id", "num_programs",
           "ds", "dslice", "load", "store", "when", "cdiv", "BlockSpecError", "IndexMapError"]


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for positive integers: the grid size that covers ``a`` with blocks of ``b``."""
    return -(-a // b)


class Blocked:
    """``index_map`` results are block indices, scaled by the block shape (the default)."""

    def __repr__(self):
        return "Blocked()"


class Unblocked:
    """``index_map`` results are element indices; ``padding`` ((low, high) per dimension) pads the
    array virtually, so a block may start before it (those elements read as 0)."""

    def __init__(self, padding=None):
        self.padding = None if padding is None else tuple(tuple(int(x) for x in p) for p in padding)

    def __repr__(self):
        return f"Unblocked({self.padding})"


class BlockSpec:
    """How a grid point selects the block of one operand: ``BlockSpec(block_shape, index_map)``.

    ``block_shape`` None: the whole array; a None entry: extent 1, squeezed out of the ref.
    ``index_map`` None: block (0, 0, ...) for every grid point. The older argument order
    ``BlockSpec(index_map, block_shape)`` is accepted too."""

    def __init__(self, block_shape=None, index_map=None, *, indexing_mode=None, memory_space=None,
                 pipeline_mode=None):
        if callable(block_shape) and not callable(index_map):
            block_shape, index_map = index_map, block_shape
        if block_shape is not None:
            if isinstance(block_shape, int):
                block_shape = (block_shape,)
            block_shape = tuple(None if b is None else int(b) for b in block_shape)
            if any(b is not None and b <= 0 for b in block_shape):
                raise BlockSpecError(f"BlockSpec: block extents must be positive, got {block_shape}")
        self.block_shape = block_shape
        self.index_map = index_map
        self.indexing_mode = indexing_mode if indexing_mode is not None else Blocked()
        if not isinstance(self.indexing_mode, (Blocked, Unblocked)):
            raise BlockSpecError(f"BlockSpec: indexing_mode must be pl.Blocked() or pl.Unblocked(), got "
                                 f"{indexing_mode!r}")

    def __repr__(self):
        return f"BlockSpec({self.block_shape}, {self.index_map}, indexing_mode={self.indexing_mode})"


class ShapeDtypeStruct:
    """An output's shape and dtype (any object with ``shape`` and ``dtype`` works as well)."""

    def __init__(self, shape, dtype):
        self.shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
        self.dtype = dtype

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={T.type_name(self.dtype)})"


# ---- calls inside the kernel body ------------------------------------------------------------------


def _program(lw, node, what):
    program = getattr(lw.src, "program", None)
    if program is None or not hasattr(program, "grid"):
        raise KernelTypeError(f"pl.{what}() is only available in a pallas_call kernel", lw.src.loc(node))
    return program


def _axis_argument(lw, node, what):
    args = list(node.args) + [k.value for k in node.keywords if k.arg == "axis"]
    if len(args) != 1 or any(k.arg != "axis" for k in node.keywords):
        raise KernelSyntaxError(f"pl.{what}(axis) takes one argument", lw.src.loc(node))
    return lw.value(args[0])


class _BodyCall:
    """A function of the kernel body: lowered by the kernel frontend, never run in Python."""

    def __init__(self, name, lower):
        self.__name__ = self.name = name
        self._tw_lower_call = lower

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"pl.{self.name}() can only be used inside a pallas_call kernel")

    def __repr__(self):
        return f"pl.{self.name}"


def _by_axis(lw, axis, values, node):
    """``values[axis]`` for an axis known only at run time: a chain of choices."""
    result = values[-1]
    for k in reversed(range(len(values) - 1)):
        result = lw.call("where", [lw.call("eq", [axis, lw.const(k, axis.type)], node), values[k], result], node)
    return result


def _program_id(lw, node):
    program = _program(lw, node, "program_id")
    axis = _axis_argument(lw, node, "program_id")
    rank = len(program.grid)
    if axis.is_const:
        k = int(axis.const)
        if not 0 <= k < rank:
            raise KernelTypeError(f"pl.program_id({k}): the grid {program.grid} has {rank} axes", lw.src.loc(node))
        return lw.symbols[program.names[k]]
    if rank == 0:
        raise KernelTypeError("pl.program_id(): the grid has no axes", lw.src.loc(node))
    return _by_axis(lw, axis, [lw.symbols[name] for name in program.names], node)


def _num_programs(lw, node):
    program = _program(lw, node, "num_programs")
    axis = _axis_argument(lw, node, "num_programs")
    rank = len(program.grid)
    if axis.is_const:
        if not 0 <= int(axis.const) < rank:
            raise KernelTypeError(f"pl.num_programs({axis.const}): the grid {program.grid} has {rank} axes",
                                  lw.src.loc(node))
        return lw.const(program.grid[int(axis.const)], T.int32)
    if rank == 0:
        raise KernelTypeError("pl.num_programs(): the grid has no axes", lw.src.loc(node))
    return _by_axis(lw, axis, [lw.const(g, T.int32) for g in program.grid], node)


program_id = _BodyCall("program_id", _program_id)
program_id.__doc__ = "``pl.program_id(axis)``: this program's index along grid axis ``axis``."
num_programs = _BodyCall("num_programs", _num_programs)
num_programs.__doc__ = "``pl.num_programs(axis)``: the grid's extent along ``axis``."


class _DSlice(_BodyCall):
    """``pl.ds(start, size)``: ``size`` elements from ``start`` (a run-time integer), in a ref index."""

    _tw_dslice = True

    def __init__(self):
        super().__init__("ds", self._outside)

    @staticmethod
    def _outside(lw, node):
        raise KernelTypeError("pl.ds(start, size) can only be used inside a ref index: ref[pl.ds(i, 8)]",
                              lw.src.loc(node))

    @staticmethod
    def bind_ast(lw, node):
        names = ("start", "size")
        given = dict(zip(names, node.args))
        for k in node.keywords:
            if k.arg not in names or k.arg in given:
                raise KernelSyntaxError(f"pl.ds() got an unexpected argument '{k.arg}'", lw.src.loc(node))
            given[k.arg] = k.value
        if set(given) != set(names):
            raise KernelSyntaxError("pl.ds(start, size) takes a start and a size", lw.src.loc(node))

        size = constant(lw, given["size"])
        return given["start"], int(size) if isinstance(size, (int, np.integer)) else size


ds = dslice = _DSlice()


def _ref_argument(lw, node, what):
    if not node.args:
        raise KernelSyntaxError(f"pl.{what}() needs a ref", lw.src.loc(node))
    ref = lw.visit(node.args[0])
    if not isinstance(ref, BlockRef):
        raise KernelTypeError(f"pl.{what}(): the first argument must be a kernel's ref", lw.src.loc(node))
    return ref


def _keywords(lw, node, names, positional, what):
    given = dict(zip(names, node.args[1:]))
    for k in node.keywords:
        if k.arg not in names or k.arg in given:
            raise KernelSyntaxError(f"pl.{what}() got an unexpected argument '{k.arg}'", lw.src.loc(node))
        given[k.arg] = k.value
    missing = [n for n in names[:positional] if n not in given]
    if missing:
        raise KernelSyntaxError(f"pl.{what}() is missing {', '.join(missing)}", lw.src.loc(node))
    return given


def _index_node(given, node):
    idx = given["idx"]
    return idx if isinstance(idx, ast.Tuple) else ast.Tuple([idx], ast.Load())


def _load(lw, node):
    ref = _ref_argument(lw, node, "load")
    given = _keywords(lw, node, ("idx", "mask", "other"), 1, "load")
    value = ref.read(lw, parse_index(lw, ref, _index_node(given, node), node), node)
    if given.get("mask") is None:
        return value
    mask = lw.value(given["mask"])
    other = lw.value(given["other"]) if given.get("other") is not None else lw.const(0, ref.dtype)
    return lw.call("where", [mask, value, other], node)


def _store(lw, node):
    ref = _ref_argument(lw, node, "store")
    given = _keywords(lw, node, ("idx", "val", "mask"), 2, "store")
    entries = parse_index(lw, ref, _index_node(given, node), node)
    value = lw.value(given["val"])
    if given.get("mask") is not None:
        value = lw.call("where", [lw.value(given["mask"]), value, ref.read(lw, entries, node)], node)
    ref.write(lw, entries, value, node)


load = _BodyCall("load", _load)
load.__doc__ = "``pl.load(ref, idx, mask=None, other=None)``: ``ref[idx]``, ``other`` (default 0) where mask is False."
store = _BodyCall("store", _store)
store.__doc__ = "``pl.store(ref, idx, val, mask=None)``: ``ref[idx] = val`` where ``mask`` is True."


class _When(_BodyCall):
    """``@pl.when(cond)`` on a nested ``def``: its body runs where ``cond`` holds (an ``if``)."""

    def __init__(self):
        super().__init__("when", self._outside)

    @staticmethod
    def _outside(lw, node):
        raise KernelSyntaxError("pl.when(cond) decorates a function defined in the kernel body", lw.src.loc(node))

    @staticmethod
    def _tw_lower_decorated(lw, call, fn_node):
        if len(call.args) != 1 or call.keywords:
            raise KernelSyntaxError("pl.when(cond) takes one condition", lw.src.loc(call))
        known = _decided(lw, call.args[0])  # in a peeled K loop: known for every iteration
        if known is True:
            lw.block(fn_node.body)
        elif known is None:
            lw.visit(at(ast.If(test=call.args[0], body=fn_node.body, orelse=[]), fn_node))


def _interval(lw, node):
    """(lo, hi) bounding an integer expression of program indices and constants, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value, node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        a, b = _interval(lw, node.left), _interval(lw, node.right)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1]) if isinstance(node.op, ast.Add) else (a[0] - b[1], a[1] - b[0])
    if isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
        f = lw.visit(node.func)
        program, axis = getattr(lw.src, "program", None), node.args[0].value
        if program is None or not isinstance(axis, int) or not 0 <= axis < len(program.grid):
            return None
        if f is num_programs:
            return program.grid[axis], program.grid[axis]
        if f is program_id:
            v = lw.symbols.get(program.names[axis])
            if getattr(v, "is_const", False):
                return v.const, v.const
            return getattr(lw, "_blk_ranges", {}).get(axis)
    return None


def _decided(lw, test):
    """True or False where ``test`` (comparisons of program indices, and/or/not) is the same for
    every iteration being lowered, else None."""
    if isinstance(test, ast.BinOp) and isinstance(test.op, (ast.BitAnd, ast.BitOr)):  # (a == 0) & (b == 1)
        test = ast.BoolOp(ast.And() if isinstance(test.op, ast.BitAnd) else ast.Or(), [test.left, test.right])
    if isinstance(test, ast.BoolOp):
        parts = [_decided(lw, v) for v in test.values]
        if isinstance(test.op, ast.And):
            return False if False in parts else True if all(p is True for p in parts) else None
        return True if True in parts else False if all(p is False for p in parts) else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _decided(lw, test.operand)
        return None if inner is None else not inner
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    a, b = _interval(lw, test.left), _interval(lw, test.comparators[0])
    if a is None or b is None:
        return None
    op = type(test.ops[0]).__name__
    if op in ("Eq", "NotEq"):
        equal = True if a[0] == a[1] == b[0] == b[1] else False if a[1] < b[0] or b[1] < a[0] else None
        return equal if op == "Eq" or equal is None else not equal
    lt = {"Lt": (a[1] < b[0], a[0] >= b[1]), "LtE": (a[1] <= b[0], a[0] > b[1]),
          "Gt": (a[0] > b[1], a[1] <= b[0]), "GtE": (a[0] >= b[1], a[1] < b[0])}.get(op)
    if lt is None:
        return None
    return True if lt[0] else False if lt[1] else None


when = _When()


# ---- pallas_call ---------------------------------------------------------------------------------


class _Program:
    def __init__(self, grid):
        self.grid = grid
        self.names = [f"_blk_pid{k}" for k in range(len(grid))]


class _Operand:
    """One input or output: its array, the block each grid point selects, checked against the grid."""

    def __init__(self, k, array_shape, dtype, spec, program, what):
        spec = spec if spec is not None else BlockSpec()
        shape = spec.block_shape if spec.block_shape is not None else tuple(array_shape)
        if not array_shape:  # a 0-d operand: one element, held in a 1-element array, its ref 0-d
            array_shape, shape = (1,), (None,)
        ndim = len(array_shape)
        if len(shape) != ndim:
            raise BlockSpecError(f"{what}: block shape {shape} has {len(shape)} dimension(s), the array "
                                 f"{tuple(array_shape)} has {ndim}")
        self.squeezed = tuple(b is None for b in shape)
        self.block = tuple(1 if b is None else b for b in shape)
        index_map = spec.index_map if spec.index_map is not None else (lambda *_: (0,) * ndim)
        indices = trace(index_map, len(program.grid), program.names, what)
        if len(indices) != ndim:
            raise BlockSpecError(f"{what}: the index map returns {len(indices)} block index(es) for a "
                                 f"{ndim}-d array")
        mode = spec.indexing_mode
        if isinstance(mode, Unblocked):
            pad = mode.padding or ((0, 0),) * ndim
            if len(pad) != ndim:
                raise BlockSpecError(f"{what}: Unblocked padding needs (low, high) for each of {ndim} dimensions")
            self.starts = [i - low for i, (low, _) in zip(indices, pad)]
        else:
            self.starts = [i * b for i, b in zip(indices, self.block)]
        self.axes = frozenset().union(*(s.axes for s in self.starts)) if self.starts else frozenset()
        self.k, self.array_shape, self.dtype, self.what = k, tuple(array_shape), dtype, what

    def check(self, grid, points):
        """Every grid point's block has an element inside the array (else: a typed error)."""
        for d, (start, b, n) in enumerate(zip(self.starts, self.block, self.array_shape)):
            s = np.broadcast_to(np.asarray(start.evaluate(points)), (len(points[0]) if points else 1,))
            bad = np.nonzero((s >= n) | (s + b <= 0))[0]
            if bad.size:
                at_point = tuple(int(p[bad[0]]) for p in points)
                raise BlockSpecError(f"{self.what}: at grid point {at_point} the block starts at element "
                                     f"{int(s[bad[0]])} of dimension {d} (extent {n}, block {b}): no element of "
                                     "the block is inside the array")

    def covers(self, points) -> bool:
        """Whether the blocks of all grid points together cover the whole array (every element is
        then stored by some program, so the output needs no zero fill)."""
        count = len(points[0]) if points else 1
        starts = [np.broadcast_to(np.asarray(s.evaluate(points)), (count,)) for s in self.starts]
        distinct = []
        for s, b, n in zip(starts, self.block, self.array_shape):
            u = np.unique(s)
            if u[0] > 0 or u[-1] + b < n or (u.size > 1 and (np.diff(u) > b).any()):
                return False
            distinct.append(u.size)
        combos = np.unique(np.stack(starts, axis=1), axis=0).shape[0] if starts else 1
        return combos == int(np.prod(distinct))

    def extent(self, points):
        """The extent that covers every block (for interpret mode's NaN padding)."""
        out = []
        for start, b, n in zip(self.starts, self.block, self.array_shape):
            s = np.asarray(start.evaluate(points))
            out.append(max(n, int(s.max()) + b if s.size else b))
        return tuple(out)


def _out_descriptions(out_shape):
    single = not isinstance(out_shape, (tuple, list))
    described = [out_shape] if single else list(out_shape)
    out = []
    for k, d in enumerate(described):
        if not (hasattr(d, "shape") and hasattr(d, "dtype")):
            raise TypeError(f"out_shape[{k}]: expected an object with .shape and .dtype (pl.ShapeDtypeStruct), "
                            f"got {type(d).__name__}")
        out.append((tuple(int(s) for s in d.shape), wp_dtype(d.dtype, f"out_shape[{k}]")))
    return single, out


def _specs(specs, n, what):
    if specs is None:
        return [None] * n
    if isinstance(specs, BlockSpec):
        specs = [specs]
    specs = list(specs)
    if len(specs) != n:
        raise BlockSpecError(f"{what}: {len(specs)} spec(s) for {n} operand(s)")
    return specs


class PallasCall:
    def __init__(self, kernel, out_shape, grid, in_specs, out_specs, interpret, name, debug, block_dim):
        self.fn, self.bound = unwrap(kernel)
        self.single, self.outs = _out_descriptions(out_shape)
        grid = () if grid is None else (grid,) if isinstance(grid, int) else tuple(grid)
        if any(not isinstance(g, (int, np.integer)) or g <= 0 for g in grid):
            raise BlockSpecError(f"grid: expected positive integers, got {grid}")
        self.grid = tuple(int(g) for g in grid)
        self.in_specs, self.out_specs = in_specs, out_specs
        self.interpret, self.name, self.debug, self.block_dim = interpret, name, debug, block_dim
        self.out_spec_list = _specs(out_specs, len(self.outs), "out_specs")
        self._plans: dict = {}

    def __call__(self, *args):
        # arrays and DLPack tensors keep their device; NumPy data and numbers follow the first of them
        args = [as_array(a, None, f"input {k}") if _has_device(a) else a for k, a in enumerate(args)]
        given = [a for a in args if isinstance(a, array)]
        device = get_device("cpu") if self.interpret else given[0].device if given else get_device(None)
        inputs = [as_array(a, device, f"input {k}") for k, a in enumerate(args)]
        for k, a in enumerate(inputs):
            if a.device != device and not self.interpret:
                raise ValueError(f"pallas_call: input {k} is on {a.device}, input 0 on {device}: move them to one "
                                 "device")
        # a call like an earlier one (devices, dtypes, shapes) reuses its plan: only the launch is left
        key = (str(device), tuple((T.type_name(a.dtype), tuple(a.shape), _is_scalar(v)) for v, a in zip(args, inputs)))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(args, inputs)
        return self._launch(plan, inputs, device)

    def _plan(self, args, inputs) -> dict:
        program = _Program(self.grid)
        in_specs = _specs(self.in_specs, len(inputs), "in_specs")
        operands = [_Operand(k, () if _is_scalar(v) else a.shape, a.dtype, s, program,
                             f"in_specs[{k}]" if self.in_specs is not None else f"input {k}")
                    for k, (v, a, s) in enumerate(zip(args, inputs, in_specs))]
        operands += [_Operand(k, shape, dtype, s, program,
                              f"out_specs[{k}]" if self.out_specs is not None else f"output {k}")
                     for k, ((shape, dtype), s) in enumerate(zip(self.outs, self.out_spec_list))]
        points = grid_points(self.grid)
        for op in operands:
            op.check(self.grid, points)
        n_in = len(inputs)
        parallel = sorted(frozenset().union(*(op.axes for op in operands[n_in:])))
        kernel = self._kernel(operands, n_in, program, parallel)
        if self.debug:
            print(source_text(kernel))
        blocks = int(np.prod([self.grid[a] for a in parallel])) if parallel else 1
        covered = [op.covers(points) for op in operands[n_in:]]
        return {"kernel": kernel, "operands": operands, "points": points, "blocks": blocks, "covered": covered}

    def _kernel(self, operands, n_in, program, parallel):
        names, values = split_parameters(self.fn, self.bound, len(operands), "pallas_call")
        params, prebound = {}, dict(values)
        refs = []
        for op, name in zip(operands, names):
            output = op.k if operands.index(op) >= n_in else None
            arr = f"_blk_{name}"
            params[arr] = T.ArrayType(op.dtype, len(op.array_shape))
            ref = BlockRef(name, arr, op.dtype, op.block, op.squeezed, [s.tree for s in op.starts],
                           output is not None, acc=f"_blk_acc_{name}" if output is not None else None)
            prebound[name] = ref
            prebound[f"_blk_dtype_{name}"] = op.dtype
            refs.append(ref)
        sequential = [a for a in range(len(self.grid)) if a not in parallel]
        tree = get_source(self.fn).tree
        peel = any(isinstance(n, ast.FunctionDef) and n.decorator_list and n is not tree
                   for n in ast.walk(tree))  # pl.when blocks: see wrap_body
        body = wrap_body(self.fn, refs, self.grid, program.names, parallel, sequential, peel)
        return kernel_for(self.fn, body, params, prebound, program, "pallas")

    def _launch(self, plan, inputs, device):
        kernel, operands, blocks = plan["kernel"], plan["operands"], plan["blocks"]
        grad = any(getattr(a, "requires_grad", False) for a in inputs)
        run_inputs, run_device = inputs, device
        if self.interpret:
            if tape_state.active is not None and grad:
                raise RuntimeError("pallas_call(interpret=True) pads inputs through host copies, which a Tape "
                                   "cannot differentiate: record the call without interpret=True")
            run_device = "cpu"
            run_inputs = [_nan_padded(a, op.extent(plan["points"])) for a, op in zip(inputs, operands)]
        outs = [(uninitialized if covered else zeros)(shape or (1,), dtype=dtype, device=run_device,
                                                      requires_grad=grad)
                for (shape, dtype), covered in zip(self.outs, plan["covered"])]
        run = plan.get("run")
        if run is None or plan["device"] != str(run_device):
            block_dim = tune.block_dim_for(self, kernel, blocks, run_inputs, outs, run_device, operands[len(inputs):])
            run = plan["run"] = launcher(kernel, blocks, block_dim, get_device(run_device))
            plan["device"] = str(run_device)
        run([*run_inputs, *outs])
        if self.interpret and str(device) != "cpu":
            outs = [array(o.numpy(), dtype=o.dtype, device=device) for o in outs]
        return outs[0] if self.single else tuple(outs)


def _has_device(value) -> bool:
    return isinstance(value, array) or (hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray))


def _is_scalar(value) -> bool:
    """A number or a 0-d array: a 0-d ref in the kernel."""
    return isinstance(value, (int, float, bool, np.number, np.bool_)) or getattr(value, "shape", None) == ()


def _nan_padded(a, extent):
    """``a`` copied into a NaN-filled array of ``extent`` (interpret mode: reads past the end are NaN)."""
    values = a.numpy().reshape(a.shape if a.ndim else (1,))
    if tuple(extent) == values.shape or not np.issubdtype(values.dtype, np.floating):
        return array(values, dtype=a.dtype, device="cpu")
    padded = np.full(extent, np.nan, dtype=values.dtype)
    padded[tuple(slice(0, n) for n in values.shape)] = values
    return array(padded, dtype=a.dtype, device="cpu")


def pallas_call(kernel, out_shape, *, grid=(), in_specs=None, out_specs=None, interpret=False, name=None,
                debug=False, block_dim=None, compiler_params=None, input_output_aliases=None, cost_estimate=None):
    """A function running ``kernel`` over ``grid`` with operands cut into blocks by the specs.

    Beyond Pallas: ``block_dim`` pins the lanes per block (else tuned on the first call per shapes,
    dtypes and device: ``block_programs/tune.py``); ``debug=True`` prints the generated tile kernel;
    ``interpret=True`` runs on the CPU with reads past an array's end NaN (else 0)."""
    if input_output_aliases:
        raise NotImplementedError("pallas_call: input_output_aliases is not supported")
    if compiler_params and block_dim is None:
        block_dim = dict(compiler_params).get("block_dim")
    return PallasCall(kernel, out_shape, grid, in_specs, out_specs, interpret, name, debug, block_dim)

