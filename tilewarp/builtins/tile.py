"""Tile builtins: one entry per operation (Warp's names), with its type rule and C++.

Every entry that produces a tile is written *into* its destination: the C++ call takes the
destination first (``tw::tile_load(dst, a, i, j)``), since a shared tile is a view of block memory
that an assignment must not alias. Compile-time arguments (shapes, dtypes, axes, the element
function of ``tile_map``) are in the call's template; the frontend (``frontend/tiles.py``) binds
Warp's keyword arguments to them. ``SHARED_ARGS`` / ``SHARED_RESULT`` say which operands need
shared storage (any lane reads any element), for ``tiling/storage.py``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..language import types as T
from .registry import Builtin, fail, names, register

#: tile entries whose operands are read at elements other than those a lane owns
SHARED_ARGS: dict = {}
#: tile entries whose result must be shared (read by every lane afterwards)
SHARED_RESULT: set = set()
#: entries a lane runs for itself (element reads and writes of a shared tile)
ELEMENT: set = set()
#: entries whose listed arguments may differ between lanes (tile(x) gathers them)
VARYING_ARGS: dict = {}


def tile_type(dtype, shape) -> T.TileType:
    shape = tuple(int(d) for d in shape)
    if not 1 <= len(shape) <= 4 or any(d <= 0 for d in shape):
        fail(f"a tile shape needs 1 to 4 positive extents, got {shape}")
    if not (T.is_scalar(dtype) or T.is_composite(dtype) or T.is_struct(dtype)):
        fail(f"tiles hold scalars, vectors, matrices or structs, not {T.type_name(dtype)}")
    return T.TileType(dtype, shape)


def _tile(t, what="argument"):
    if not T.is_tile(t):
        fail(f"{what} must be a tile, got {T.type_name(t)}")
    return t


@dataclass(frozen=True)
class ElementOp:
    """What ``tile_map`` / ``tile_reduce`` apply per element: a builtin (with its template) or a
    ``@wp.func`` specialised for the element types (``func``: its IR)."""

    builtin: object = None
    template: tuple = ()
    func: object = None
    result: object = None

    @property
    def name(self) -> str:
        return self.builtin.name if self.builtin is not None else self.func.name

    def cpp(self, args: list) -> str:
        if self.func is not None:
            return f"{self.func.symbol}({', '.join(args)})"
        b = self.builtin
        return b.emit(args, self.template) if b.emit is not None else f"{b.cpp}({', '.join(args)})"

    @property
    def differentiable(self) -> bool:
        return self.func is not None or self.builtin.differentiable

    def adjoint(self, args: list, grads: list, adj_ret: str) -> str:
        if self.func is not None:
            return f"adj_{self.func.symbol}({', '.join(args + grads + [adj_ret])})"
        b = self.builtin
        if b.adjoint_emit is not None:
            return b.adjoint_emit(args, grads, adj_ret, self.template)
        return f"{b.adjoint}({', '.join(args + grads + [adj_ret])})"


#: the lambda header of a per-element body: (r, e) is the element's register slot and index
_ELEMENT_LAMBDA = "[&](int r, int e)"


def _elems(args: list) -> list:
    return [f"tw::elem({a}, r, e)" for a in args]


# ---- construction ---------------------------------------------------------------------------------


def _construct(args, template):
    shape, dtype = template[0], template[1]
    t = tile_type(dtype, shape)
    for a in args:  # tile_full's value
        if not (T.is_scalar(a) or a == dtype):
            fail(f"the fill value must be a {T.type_name(dtype)}, got {T.type_name(a)}")
    return t


def _construct_ones(args, template):
    if T.is_struct(template[1]):
        fail(f"{T.type_name(template[1])} is a Warp struct, which has no value for one (use tile_full)")
    return _construct(args, template)


def _tile_from_value(args, template):
    (x,), (preserve, block_dim) = args, template[:2]
    if T.is_tile(x) or T.is_array(x) or not (T.is_scalar(x) or T.is_composite(x) or T.is_struct(x)):
        fail(f"takes a scalar, vector, matrix or struct value, got {T.type_name(x)}")
    if preserve or T.is_scalar(x) or T.is_struct(x):
        return T.TileType(x, (block_dim,))
    return T.TileType(T.scalar_of(x), (*x._wp_shape_, block_dim))


def _tile_cpp(a, template):
    dst, x = a
    split = not template[0] and template[2]
    return f"tw::tile_from{'_split' if split else ''}({dst}, {x}, tw_active)"  # lanes past the launch give 0


def _adj_tile(a, adj, adj_ret, template):
    split = not template[0] and template[2]
    return f"tw::adj_tile_from{'_split' if split else ''}({adj[1]}, {adj_ret}, tw_active)"


def _arange_cpp(a, template):
    """Bounds as one C++ type: 64-bit integers for integer tiles, doubles for float ones."""
    kind = "int64_t" if isinstance(template[3], int) else "double"
    return f"tw::tile_arange({a[0]}, ({kind}){template[3]!r}, ({kind}){template[4]!r})"


def _untile(args, template):
    (t,), block_dim = args, template[0]
    _tile(t)
    if t.shape[-1] != block_dim:
        fail(f"untile() needs a tile whose last dimension is the block size {block_dim}, got shape {t.shape}")
    if len(t.shape) == 1:
        return t.dtype
    if not T.is_scalar(t.dtype) or len(t.shape) > 3:
        fail(f"cannot untile a {T.type_name(t)}")
    if len(t.shape) == 2:
        return T.vector(t.shape[0], t.dtype)
    return T.matrix(t.shape[:2], t.dtype)


def _untile_cpp(a, template):
    split = len(template) > 1 and template[1]
    return f"tw::untile{'_split' if split else ''}({a[0]}, {a[1]})"


def _adj_untile(a, adj, adj_ret, template):
    split = len(template) > 1 and template[1]
    return f"tw::adj_untile{'_split' if split else ''}({adj[1]}, {adj_ret})"


def _gather(args, template):
    t, idx = args
    (axis,) = template
    _tile(t)
    if not T.is_tile(idx) or len(idx.shape) != 1 or not T.is_int(idx.dtype):
        fail(f"indexing along an axis needs a 1-d integer index tile, got {T.type_name(idx)}")
    shape = list(t.shape)
    shape[axis] = idx.shape[0]
    return T.TileType(t.dtype, tuple(shape))


# ---- element-wise --------------------------------------------------------------------------------


def _map(args, template):
    (op,) = template
    tiles = [a for a in args if T.is_tile(a)]
    if not tiles:
        fail("needs at least one tile argument")
    shape = tiles[0].shape
    for t in tiles[1:]:
        if t.shape != shape:
            fail(f"tile shapes must match, got {tiles[0].shape} and {t.shape}")
    if not (T.is_scalar(op.result) or T.is_composite(op.result) or T.is_struct(op.result)):
        fail(f"{op.name} must return a scalar, vector, matrix or struct per element, got {T.type_name(op.result)}")
    return T.TileType(op.result, shape)


def _map_cpp(a, template):
    (op,) = template
    return f"tw::tile_fill_with({a[0]}, {_ELEMENT_LAMBDA} {{ return {op.cpp(_elems(a[1:]))}; }})"


def _adj_map(a, adj, adj_ret, template):
    """Per element: the element op's adjoint into scratch adjoints, then into the arguments' adjoints
    (a tile's element, or a non-tile argument's share)."""
    (op,) = template
    dst, args = a[0], a[1:]
    if not op.differentiable:
        return "(void)0"
    grads = [f"g{k}" for k in range(len(args))]
    decls = " ".join(f"auto g{k} = tw::adj_zero_like(tw::elem({x}, r, e));" for k, x in enumerate(args))
    body = op.adjoint(_elems(args), grads, f"tw::elem({adj_ret}, r, e)")
    scatter = " ".join(f"tw::adj_elem({g}, r, e, g{k});" for k, g in enumerate(adj[1:])
                       if g is not None and g != "tw::adj_discard")
    return (f"tw::tile_for<tw::tile_size<decltype({dst})>(), tw_threads>({_ELEMENT_LAMBDA} {{ {decls} {body}; "
            f"{scatter} }})")


# ---- reductions -------------------------------------------------------------------------------


def _reduce_rule(result_dtype=None, scalars_only=False):
    def rule(args, template):
        (t,), axis = args, template[-1]
        _tile(t)
        if scalars_only and not T.is_scalar(t.dtype):
            fail(f"needs a tile of scalars, got {T.type_name(t.dtype)}"
                 + (" (a Warp struct, which has no order)" if T.is_struct(t.dtype) else ""))
        dtype = result_dtype or t.dtype
        if axis is None:
            return T.TileType(dtype, (1,))
        if not 0 <= axis < len(t.shape):
            fail(f"axis {axis} is out of range for a {len(t.shape)}-d tile")
        shape = t.shape[:axis] + t.shape[axis + 1:]
        return T.TileType(dtype, shape or (1,))

    return rule


def _reduce_cpp(op_struct):
    def emit(a, template):
        axis = template[-1]
        if axis is None:
            return f"tw::tile_reduce({a[0]}, {a[1]}, {op_struct})"
        return f"tw::tile_reduce_axis<{axis}>({a[0]}, {a[1]}, {op_struct})"

    return emit


def _adj_sum(a, adj, adj_ret, template):
    axis = template[-1]
    if axis is None:
        return f"tw::adj_tile_sum({adj[1]}, {adj_ret})"
    return f"tw::adj_tile_sum_axis<{axis}>({adj[1]}, {adj_ret})"


def _adj_select(a, adj, adj_ret, template):
    if template[-1] is not None:
        return f"tw::adj_tile_select_axis<{template[-1]}>({a[1]}, {a[0]}, {adj[1]}, {adj_ret})"
    return f"tw::adj_tile_select({a[1]}, {a[0]}, {adj[1]}, {adj_ret})"


def _adj_prod(a, adj, adj_ret, template):
    if template[-1] is None:
        return f"tw::adj_tile_prod({a[1]}, {adj[1]}, {adj_ret})"
    return f"tw::adj_tile_prod_axis<{template[-1]}>({a[1]}, {adj[1]}, {adj_ret})"


def _arg_cpp(which):
    def emit(a, template):
        return f"tw::tile_{which}({a[0]}, {a[1]})"

    return emit


def _user_reduce(args, template):
    op, axis = template
    (t,) = args
    _tile(t)
    if op.result != t.dtype:
        fail(f"{op.name} must return the tile element type {T.type_name(t.dtype)}, got {T.type_name(op.result)}")
    return _reduce_rule()(args, (axis,))


def _user_reduce_cpp(a, template):
    op, axis = template
    t = op.result._cpp_  # typed: NVRTC 13.0 takes generic lambdas in device code for host functions
    fn = f"[&](const {t}& x, const {t}& y) {{ return {op.cpp(['x', 'y'])}; }}"
    if axis is None:
        return f"tw::tile_reduce({a[0]}, {a[1]}, {fn})"
    return f"tw::tile_reduce_axis<{axis}>({a[0]}, {a[1]}, {fn})"


_SCAN_OPS = {"tile_scan_inclusive": ("true", "tw::op_add()"), "tile_scan_exclusive": ("false", "tw::op_add()"),
             "tile_scan_max_inclusive": ("true", "tw::op_max()"), "tile_scan_min_inclusive": ("true", "tw::op_min()")}


def _scan(args, template):
    (t,) = args
    _tile(t)
    if not T.is_scalar(t.dtype) or t.dtype is T.bool_:
        fail(f"scans need a tile of numbers, got {T.type_name(t.dtype)}")
    return t


def _scan_cpp(name):
    inclusive, op = _SCAN_OPS[name]
    return lambda a, template: f"tw::tile_scan<{inclusive}>({a[0]}, {a[1]}, {op})"


def _adj_scan(name):
    inclusive = _SCAN_OPS[name][0]
    return lambda a, adj, adj_ret, template: f"tw::adj_tile_scan_sum<{inclusive}>({adj[1]}, {adj_ret})"


def _sort(args, template):
    keys, values = args
    _tile(keys, "keys")
    _tile(values, "values")
    if keys.shape != values.shape:
        fail(f"keys and values must have one shape, got {keys.shape} and {values.shape}")
    if keys.dtype not in (T.float32, T.int32, T.uint32, T.int64, T.uint64, T.float64):
        fail(f"keys must be float32, float64, int32, uint32, int64 or uint64, got {T.type_name(keys.dtype)}")
    return None


# ---- shape --------------------------------------------------------------------------------------


def _broadcast(args, template):
    (t,), (shape,) = args, template
    _tile(t)
    if len(shape) < len(t.shape):
        fail(f"cannot broadcast a {len(t.shape)}-d tile to {len(shape)} dimensions")
    for s, d in zip(t.shape[::-1], shape[::-1]):
        if s != d and s != 1:
            fail(f"cannot broadcast shape {t.shape} to {tuple(shape)}")
    return tile_type(t.dtype, shape)


def _transpose(args, template):
    (t,) = args
    _tile(t)
    if len(t.shape) != 2:
        fail(f"transposes 2-d tiles, got shape {t.shape}")
    return T.TileType(t.dtype, t.shape[::-1])


def _reshape(args, template):
    (t,), (shape,) = args, template
    _tile(t)
    shape = list(shape)
    if shape.count(-1) > 1:
        fail("at most one extent can be -1")
    if -1 in shape:
        known = 1
        for d in shape:
            known *= d if d != -1 else 1
        if known == 0 or t.size % known:
            fail(f"cannot reshape a tile of shape {t.shape} to {tuple(shape)}")
        shape[shape.index(-1)] = t.size // known
    result = tile_type(t.dtype, shape)
    if result.size != t.size:
        fail(f"cannot reshape a tile of shape {t.shape} ({t.size} elements) to {tuple(shape)}")
    return result


def _astype(args, template):
    (t,), (dtype,) = args, template
    _tile(t)
    if not T.is_scalar(t.dtype) or not T.is_scalar(dtype):
        fail(f"converts tiles of scalars, got {T.type_name(t.dtype)} to {T.type_name(dtype)}")
    return T.TileType(dtype, t.shape)


def _astype_cpp(a, template):
    return f"tw::tile_copy({a[0]}, {a[1]})"


def _adj_astype(a, adj, adj_ret, template):
    return f"tw::adj_tile_copy({adj[1]}, {adj_ret})"


def _view(args, template):
    """A view: ``template = (spec, shape)`` where ``spec`` gives, per leading dimension of the source,
    an index argument that removes the dimension (``("i",)``) or starts a box along it (``("o",)``),
    or a constant slice ``("s", start, step)``; index arguments are consumed in order."""
    t, *indices = args
    spec, shape = template
    _tile(t)
    if any(not T.is_int(i) for i in indices):
        fail(f"indices must be integers, got ({names(indices)})")
    if len(spec) > len(t.shape) or sum(1 for x in spec if x[0] in "io") != len(indices):
        fail(f"a {len(t.shape)}-d tile indexed with {len(spec)} entries")
    return tile_type(t.dtype, shape)


def _view_cpp(a, template):
    dst, src, *indices = a
    spec, _ = template
    it = iter(indices)
    at = [next(it) if x[0] in "io" else str(x[1]) for x in spec]
    origin = f"tw::tile_position({src}{''.join(', ' + p for p in at)})" if at else "0"
    return f"tw::tile_alias({dst}, {src}, {origin})"


def _assign(args, template):
    dst, src, *offsets = args
    _tile(dst, "dst")
    if not T.is_tile(src):
        fail(f"assigning into a tile (region) requires a tile of matching shape, got {T.type_name(src)}")
    if len(src.shape) != len(dst.shape):
        fail(f"src and dst must have as many dimensions, got {src.shape} and {dst.shape}")
    if any(s > d for s, d in zip(src.shape, dst.shape)):  # could never fit: every write would leave dst
        fail(f"a tile of shape {src.shape} does not fit in one of shape {dst.shape}")
    if any(not T.is_int(o) for o in offsets) or len(offsets) != len(dst.shape):
        fail(f"takes one integer offset per dimension ({len(dst.shape)}), got ({names(offsets)})")
    if not (T.is_scalar(dst.dtype) and T.is_scalar(src.dtype)) and dst.dtype != src.dtype:
        fail(f"cannot assign a tile of {T.type_name(src.dtype)} into one of {T.type_name(dst.dtype)}")
    return None


# ---- element access ---------------------------------------------------------------------------------


def _extract(args, template):
    t, *idx = args
    _tile(t)
    if len(idx) != len(t.shape) or any(not T.is_int(i) for i in idx):
        fail(f"a {len(t.shape)}-d tile takes {len(t.shape)} integer indices, got ({names(idx)})")
    return t.dtype


def _extract_cpp(a, template):
    t, *idx = a
    return f"tw::tile_get({t}, tw::tile_index<typename tw::decay_t<decltype({t})>::shape>({', '.join(idx)}))"


def _adj_extract(a, adj, adj_ret, template):
    t, *idx = a
    return f"tw::adj_tile_get({adj[0]}, tw::tile_index<typename tw::decay_t<decltype({t})>::shape>({', '.join(idx)}), {adj_ret})"


def _element_write(args, template):
    t, *idx, x = args
    dtype = _extract((t, *idx), template)
    if x != dtype:
        fail(f"cannot write a {T.type_name(x)} into a tile of {T.type_name(dtype)}")
    (op,) = template
    if op in ("and", "or", "xor") and T.scalar_of(dtype)._kind_ not in ("int", "uint"):
        fail(f"bitwise updates need integer tiles, got {T.type_name(dtype)}")
    return None


def _element_write_cpp(a, template):
    t, *idx, x = a
    place = f"tw::tile_ref({t}, tw::tile_index<typename tw::decay_t<decltype({t})>::shape>({', '.join(idx)}))"
    (op,) = template
    if op == "set":
        return f"{place} = {x}"
    return f"tw::atomic_{op}(&{place}, {x})"


def _adj_element_write(a, adj, adj_ret, template):
    t, *idx, x = a
    (op,) = template
    where = f"tw::tile_index<typename tw::decay_t<decltype({t})>::shape>({', '.join(idx)})"
    if op == "set":  # the overwritten element's old value gets no gradient
        return f"{adj[-1]} = tw::add({adj[-1]}, tw::tile_take({adj[0]}, {where}))"
    sign = "sub" if op == "sub" else "add"
    return f"{adj[-1]} = tw::{sign}({adj[-1]}, tw::tile_get({adj[0]}, {where}))"


# ---- matmul (tensor cores on CUDA where native/tile/mma.h applies, else portable) ----------------------------------------------------


def _matmul(args, template):
    a, b, *rest = args
    c = rest[:1] if template[2] else []
    _tile(a, "a")
    _tile(b, "b")
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        fail(f"cannot multiply tiles of shapes {a.shape} and {b.shape}")
    floats = (T.float16, T.float32, T.float64)
    if a.dtype not in (*floats, T.bfloat16) or b.dtype not in (*floats, T.bfloat16):  # as Warp: each its own
        fail(f"multiplies float16/bfloat16/float32/float64 tiles, got {T.type_name(a.dtype)} and "
             f"{T.type_name(b.dtype)}")
    out = T.TileType(a.dtype, (a.shape[0], b.shape[1]))  # the returning form: a's dtype
    if not c and a.dtype is T.bfloat16:
        fail("tile_matmul(a, b) sums in a's dtype, which may not be bfloat16: pass a float32 out tile")
    if c:  # the accumulating form sums in out's dtype (float32 for float16 operands on tensor cores)
        if not (isinstance(c[0], T.TileType) and c[0].shape == out.shape and c[0].dtype in floats):
            fail(f"out must be a float16/32/64 tile of shape {out.shape}, got {T.type_name(c[0])}")
        return c[0]
    return out


def _scales(a, template) -> tuple:
    """C++ of alpha and beta (double: constants are folded, run-time values are the trailing arguments,
    ``k``: their positions) and the position of out, or None."""
    alpha, beta, has_out = template
    k = 3 + has_out  # the destination comes first in ``a``
    scales, where = [], []
    for v in (alpha, beta):
        if v is None:
            scales.append(f"(double)({a[k]})")
            where.append(k)
            k += 1
        else:
            scales.append(repr(float(v)))
            where.append(None)
    return scales, where, (3 if has_out else None)


def _matmul_cpp(a, template):
    (alpha, beta), _, out = _scales(a, template)
    if out is None:  # beta 0: the destination's old contents are never read
        return f"tw::tile_matmul({a[0]}, {a[1]}, {a[2]}, {a[0]}, {alpha}, 0.0)"
    return f"tw::tile_matmul({a[0]}, {a[1]}, {a[2]}, {a[3]}, {alpha}, {beta})"


def _adj_matmul(a, adj, adj_ret, template):
    # a[0] is the destination: the operands are a[1:], their adjoints adj[1:]
    (alpha, beta), where, out = _scales(a, template)
    c, adj_c = (a[out], adj[out]) if out is not None else (a[1], adj[1])
    lines = [f"tw::adj_tile_matmul({a[1]}, {a[2]}, {adj[1]}, {adj[2]}, {adj_c}, {alpha}, "
             f"{beta if out is not None else '0.0'}, {adj_ret})"]
    kept = [k is not None and adj[k] not in (None, "tw::adj_discard") for k in where]
    if kept[0]:  # d alpha: the product's elements, weighted by the output's adjoint
        lines.append(f"tw::adj_tile_matmul_alpha({adj[where[0]]}, {a[1]}, {a[2]}, {adj_ret})")
    if kept[1]:  # d beta: the old destination's elements, likewise
        lines.append(f"tw::adj_tile_matmul_beta({adj[where[1]]}, {c}, {adj_ret})")
    return "; ".join(lines)


# ---- the table ----------------------------------------------------------------------------------------


def _into(cpp):
    return lambda a, template: f"{cpp}({', '.join(a)})"


def _composed(args, template):
    fail("is lowered by the frontend (frontend/tiles.py) into tile_map and tile_sum")


def _through_alias(a, adj, adj_ret, template):
    """Views: the view's adjoint *is* part of its source's adjoint (emit/block_adjoint.py aliases it
    in the replay), so gradients reach the source with nothing to move."""
    return "(void)0"


class _TileEntry(Builtin):
    """``wp.tile``: the builtin ``tile(x)``, and ``wp.tile[dtype, *shape]`` as a type annotation."""

    def __getitem__(self, key):
        dtype, *shape = key if isinstance(key, tuple) else (key,)
        return T.TileType(T.value_type(dtype), tuple(int(getattr(d, "value", d)) for d in shape))


def _entries():
    E = []
    add = E.append
    add(_TileEntry("tile", _tile_from_value, "tw::tile_from", emit=_tile_cpp, adjoint_emit=_adj_tile,
                   unify_literals=False))
    add(Builtin("untile", _untile, "tw::untile", emit=_untile_cpp, adjoint_emit=_adj_untile))
    for name in ("tile_zeros", "tile_ones", "tile_empty"):
        rule = _construct_ones if name == "tile_ones" else _construct
        add(Builtin(name, rule, "tw::tile_full", differentiable=False,
                    emit=(lambda n: lambda a, t: f"tw::tile_full({a[0]}, 1)" if n == "tile_ones"
                          else f"tw::tile_zero({a[0]})")(name)))
    add(Builtin("tile_full", _construct, "tw::tile_full", emit=_into("tw::tile_full"),
                adjoint_emit=lambda a, adj, r, t: f"tw::adj_tile_full({adj[1]}, {r})", unify_literals=False))
    add(Builtin("tile_arange", _construct, "tw::tile_arange", differentiable=False,
                emit=_arange_cpp))
    add(Builtin("tile_from_thread", _from_thread, "tw::tile_from_lane", differentiable=False, unify_literals=False,
                emit=_into("tw::tile_from_lane")))
    add(Builtin("_tile_gather", _gather, "tw::tile_gather",
                emit=lambda a, t: f"tw::tile_gather<{t[0]}>({', '.join(a)})",
                adjoint_emit=lambda a, adj, r, t: f"tw::adj_tile_gather<{t[0]}>({adj[1]}, {a[2]}, {r})"))
    add(Builtin("tile_map", _map, "tw::tile_map", emit=_map_cpp, adjoint_emit=_adj_map, unify_literals=False))
    add(Builtin("tile_sum", _reduce_rule(), "tw::tile_sum", emit=_reduce_cpp("tw::op_add()"), adjoint_emit=_adj_sum))
    add(Builtin("tile_min", _reduce_rule(scalars_only=True), "tw::tile_min", emit=_reduce_cpp("tw::op_min()"),
                adjoint_emit=_adj_select))
    add(Builtin("tile_max", _reduce_rule(scalars_only=True), "tw::tile_max", emit=_reduce_cpp("tw::op_max()"),
                adjoint_emit=_adj_select))
    add(Builtin("_tile_prod", _reduce_rule(scalars_only=True), "tw::tile_reduce", emit=_reduce_cpp("tw::op_mul()"),
                adjoint_emit=_adj_prod))
    add(Builtin("tile_argmin", _reduce_rule(T.int32, True), "tw::tile_argmin", differentiable=False,
                emit=_arg_cpp("argmin")))
    add(Builtin("tile_argmax", _reduce_rule(T.int32, True), "tw::tile_argmax", differentiable=False,
                emit=_arg_cpp("argmax")))
    add(Builtin("tile_reduce", _user_reduce, "tw::tile_reduce", emit=_user_reduce_cpp, differentiable=False,
                undefined_gradient=True))
    for name in _SCAN_OPS:
        summing = "max" not in name and "min" not in name
        add(Builtin(name, _scan, "tw::tile_scan", emit=_scan_cpp(name), differentiable=summing,
                    adjoint_emit=_adj_scan(name) if summing else None, undefined_gradient=not summing))
    add(Builtin("tile_sort", _sort, "tw::tile_sort", side_effect=True, differentiable=False,
                undefined_gradient=True, emit=_into("tw::tile_sort")))
    add(Builtin("tile_broadcast", _broadcast, "tw::tile_broadcast", emit=_into("tw::tile_broadcast"),
                adjoint_emit=lambda a, adj, r, t: f"tw::adj_tile_broadcast({adj[1]}, {r})"))
    add(Builtin("tile_transpose", _transpose, "tw::tile_alias", emit=lambda a, t: f"tw::tile_alias({a[0]}, {a[1]}, 0)",
                adjoint_emit=_through_alias))
    for name in ("tile_reshape", "tile_squeeze"):
        add(Builtin(name, _reshape, "tw::tile_copy", emit=_into("tw::tile_copy"),
                    adjoint_emit=lambda a, adj, r, t: f"tw::adj_tile_copy({adj[1]}, {r})"))
    add(Builtin("tile_astype", _astype, "tw::tile_copy", emit=_astype_cpp, adjoint_emit=_adj_astype))
    add(Builtin("tile_view", _view, "tw::tile_alias", emit=_view_cpp, adjoint_emit=_through_alias))
    add(Builtin("tile_assign", _assign, "tw::tile_assign_at", side_effect=True, emit=_into("tw::tile_assign_at"),
                adjoint_emit=lambda a, adj, r, t: f"tw::adj_tile_assign_at({adj[0]}, {adj[1]}, {', '.join(a[2:])})"))
    add(Builtin("tile_extract", _extract, "tw::tile_get", emit=_extract_cpp, adjoint_emit=_adj_extract))
    for op in ("set", "add", "sub", "and", "or", "xor"):
        add(Builtin(f"_tile_element_{op}", _element_write, "tw::tile_ref", side_effect=True,
                    differentiable=op in ("set", "add", "sub"), emit=_element_write_cpp,
                    adjoint_emit=_adj_element_write if op in ("set", "add", "sub") else None))
    add(Builtin("tile_matmul", _matmul, "tw::tile_matmul", emit=_matmul_cpp, adjoint_emit=_adj_matmul))
    add(Builtin("block_dim", lambda args, template: T.int32, "tw::block_dim", differentiable=False))
    add(Builtin("tile_print", lambda args, template: _tile(args[0]) and None, "tw::tile_print", side_effect=True,
                differentiable=False))
    for name in ("tile_dot", "tile_axpy", "tile_scatter_add", "tile_scatter_masked"):
        add(Builtin(name, _composed, "", adjoint_emit=_through_alias))  # composed by the frontend: their
        # gradients are their parts' (tile_map / tile_sum, element updates under the lane's condition)
    return E + memory_entries() + linalg_entries()


from .tile_linalg import (IN_PLACE, RESULTS as _LINALG_RESULTS, SHARED as _LINALG_SHARED, linalg_entries)  # noqa: E402
from .tile_memory import _from_thread, memory_entries  # noqa: E402 (they use the helpers above)

ENTRIES = _entries()
register(*ENTRIES)

#: builtins whose result is written into the destination (C++ takes it first)
INTO = {b.name for b in ENTRIES if b.name not in ("tile_extract", "tile_store", "tile_sort", "block_dim",
                                                  "tile_assign", "tile_store_indexed", "tile_dot", "tile_axpy",
                                                  "tile_scatter_add", "tile_scatter_masked",
                                                  "tile_stack_push", "tile_stack_pop", "tile_stack_count",
                                                  "tile_stack_clear", "tile_print", *IN_PLACE)
        and not b.name.startswith("_tile_element_")}
#: views: shared tiles over part of another's memory (the adjoint of a view is the same view of the
#: source's adjoint, so a view needs no adjoint of its own)
VIEWS = {"tile_view", "tile_transpose"}
#: entries that change a tile in place: replayed by the backward pass (unlike stores to arrays)
MUTATES = {"tile_assign", "tile_sort", "tile_stack_push", "tile_stack_pop", "tile_stack_clear", *IN_PLACE,
           *(f"_tile_element_{op}" for op in ("set", "add", "sub", "and", "or", "xor"))}
#: where the requested storage ("register" / "shared") sits in an entry's template
STORAGE_REQUEST = {"tile_zeros": 2, "tile_ones": 2, "tile_empty": 2, "tile_full": 2, "tile_arange": 2, "tile_load": 1,
                   "tile_load_indexed": 1, "tile_from_thread": 2}
SHARED_ARGS.update({"_tile_prod": (0,), "_tile_gather": (0, 1), "tile_load_indexed": (1,), "tile_store_indexed": (1,), "tile_atomic_add_indexed": (1,),
                    "tile_sort": (0, 1), "tile_broadcast": (0,), "tile_transpose": (0,), "tile_view": (0,),
                    "tile_assign": (0,),
                    "tile_extract": (0,), "tile_matmul": (0, 1, 2), **{n: (0,) for n in _SCAN_OPS},
                    **{f"_tile_element_{op}": (0,) for op in ("set", "add", "sub", "and", "or", "xor")}})
SHARED_ARGS.update(_LINALG_SHARED)
SHARED_RESULT.update({"tile_matmul", "tile_view", "tile_transpose", "tile_stack", *_SCAN_OPS, *_LINALG_RESULTS})
ELEMENT.update({"tile_extract", "tile_stack_push", "tile_stack_pop", "tile_stack_count",
                *(f"_tile_element_{op}" for op in ("set", "add", "sub", "and", "or", "xor"))})
VARYING_ARGS.update({"tile": (0,), "tile_from_thread": (0,)})
#: axis reductions read whole rows: their operand is shared
AXIS_SHARED = {"tile_sum", "tile_min", "tile_max", "tile_reduce", "_tile_prod"}
