"""Helpers shared by ``wp.utils``'s modules (launches, device checks, strided views) and its scans:
blocked, reduce-then-scan (block totals, their exclusive scan, then a tile scan of each block plus
its offset)."""
from __future__ import annotations

import math
import operator
from typing import Any

import tilewarp as wp  # initialised before its submodules: the kernels below use wp.tid() ...

from ..language import types as T
from ..runtime.array import array, uninitialized

REDUCE_CHUNK = 256   # elements one thread adds up per reduction level
SCAN_TILE = 1024     # elements one block scans
SCAN_BLOCK = 256     # lanes of a scan block

_FLOATS = (T.float32, T.float64)
_SCANNED = (T.int32, T.int64, T.float32, T.float64)
_Int32s = wp.array(dtype=wp.int32)  # a kernel annotation


def _launch(kernel, dim, inputs, device):
    # record_tape=False: these utilities are not differentiable (nor are Warp's)
    wp.launch(kernel, dim=dim, inputs=inputs, device=device, record_tape=False)


def _same_device(*arrays):
    devices = {a.device for a in arrays if a is not None}
    if len(devices) > 1:
        raise RuntimeError(f"arrays must be on the same device, got {', '.join(sorted(map(str, devices)))}")


def _name(dtype) -> str:
    return T.type_name(dtype)


# ---- strided views ---------------------------------------------------------------------------------


def _merge(dims):
    """The ``(extent, stride)`` walking ``dims`` (a list of them, outermost first) as one strided run,
    or None when their strides don't allow it."""
    dims = [(e, s) for e, s in dims if e != 1]
    if any(e == 0 for e, _ in dims):
        return 0, 0
    for (_, s0), (e1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * e1:
            return None
    return math.prod(e for e, _ in dims), (dims[-1][1] if dims else 0)


def _scalar4d(a: array, axis):
    """``a`` as a 4-d array of its scalar type, ``(outer, axis, inner, component)`` (``axis=None``: the
    whole array is the middle dimension), or None when the dimensions around the axis can't merge."""
    dims = list(zip(a.shape, a.strides))
    groups = ([], dims, []) if axis is None else (dims[:axis], [dims[axis]], dims[axis + 1:])
    merged = [_merge(g) for g in groups]
    if None in merged:
        return None
    scalar = T.scalar_of(a.dtype)
    shape = [e for e, _ in merged] + [math.prod(getattr(a.dtype, "_wp_shape_", ()))]
    strides = [s for _, s in merged] + [T.type_size(scalar)]
    return a._view(shape, strides, dtype=scalar)


def _flat(a: array, what: str) -> array:
    """A 1-d view of ``a`` (any stride when 1-d; contiguous otherwise, as flattening needs)."""
    if a.ndim == 1:
        return a
    if not a.is_contiguous:
        raise RuntimeError(f"{what} array must be contiguous or one-dimensional")
    return a.flatten()


def _rows(a: array) -> array:
    """A 1-d array as a 2-d array of its scalar type, one row per vector component."""
    scalar = T.scalar_of(a.dtype)
    k = math.prod(getattr(a.dtype, "_wp_shape_", ()))
    return a._view((k, a.shape[0]), (T.type_size(scalar), a.strides[0]), dtype=scalar)


def _count(count, n: int, what: str) -> int:
    """A count of elements to process: all when None, none when negative; past the end is an error
    (Warp reads out of bounds there)."""
    if count is None:
        return n
    count = max(operator.index(count), 0)
    if count > n:
        raise RuntimeError(f"{what} ({count}) exceeds the number of elements ({n})")
    return count


# ---- scans -----------------------------------------------------------------------------------------


@wp.kernel(enable_backward=False)
def _block_totals(x: wp.array2d(dtype=Any), totals: wp.array2d(dtype=Any)):
    c, b, _lane = wp.tid()
    t = wp.tile_load(x[c], shape=SCAN_TILE, offset=b * SCAN_TILE)
    wp.tile_store(totals[c], wp.tile_sum(t), offset=b)


@wp.kernel(enable_backward=False)
def _scan_blocks(x: wp.array2d(dtype=Any), y: wp.array2d(dtype=Any), offsets: wp.array2d(dtype=Any),
                 inclusive: int, offset: int):
    c, b, _lane = wp.tid()
    t = wp.tile_load(x[c], shape=SCAN_TILE, offset=b * SCAN_TILE)
    if inclusive:
        s = wp.tile_scan_inclusive(t)
    else:
        s = wp.tile_scan_exclusive(t)
    if offset:
        s = s + offsets[c, b]
    wp.tile_store(y[c], s, offset=b * SCAN_TILE)


def _scan_rows(x: array, y: array, inclusive: bool):
    """Scan each row of the 2-d array ``x`` into ``y`` (which may be ``x``), reduce-then-scan: the
    blocks' totals, their exclusive scan (recursively), then a tile scan of each block plus its
    offset (one pass writing ``y``, no separate pass adding offsets). A row of one block has no
    offsets to add (nor any scratch to allocate)."""
    rows, n = x.shape
    if rows * n == 0:
        return
    blocks = -(-n // SCAN_TILE)
    tiled = {"block_dim": SCAN_BLOCK, "device": x.device, "record_tape": False}
    offsets = x  # unread when there is one block
    if blocks > 1:
        offsets = uninitialized((rows, blocks), dtype=x.dtype, device=x.device)  # _block_totals writes it all
        wp.launch_tiled(_block_totals, dim=[rows, blocks], inputs=[x, offsets], **tiled)
        _scan_rows(offsets, offsets, False)
    wp.launch_tiled(_scan_blocks, dim=[rows, blocks], inputs=[x, y, offsets, int(inclusive), int(blocks > 1)],
                    **tiled)


def array_scan(in_array: array, out_array: array, inclusive: bool = True) -> None:
    """Prefix sums of ``in_array`` (int32, int64, float32, float64 scalars or vectors: component-wise,
    in row-major order) into ``out_array`` (same dtype and size; may be ``in_array``)."""
    _same_device(in_array, out_array)
    if in_array.size != out_array.size:
        raise RuntimeError(f"In and out array storage sizes do not match "
                           f"({in_array.size} vs {out_array.size})")
    if in_array.dtype is not out_array.dtype:
        raise RuntimeError(f"In and out array data types do not match "
                           f"({_name(in_array.dtype)} vs {_name(out_array.dtype)})")
    dtype = in_array.dtype
    if T.scalar_of(dtype) not in _SCANNED or not (T.is_scalar(dtype) or T.is_vector(dtype)):
        raise RuntimeError(f"Unsupported data type: {_name(dtype)}")
    x, y = _flat(in_array, "Input"), _flat(out_array, "Output")
    if x.size:
        _scan_rows(_rows(x), _rows(y), inclusive)


# ---- sort keys ---------------------------------------------------------------------------------------


@wp.func
def _ordered(k: Any, sign: Any, flip_pos: Any, flip_neg: Any):
    # the key's bits made unsigned-ordered: flip the sign bit of ints, and of floats all bits when negative
    if (k & sign) == sign:
        return k ^ flip_neg
    return k ^ flip_pos


@wp.func
def _digit(k: Any, shift: Any, mask: Any, sign: Any, flip_pos: Any, flip_neg: Any):
    return wp.int32((_ordered(k, sign, flip_pos, flip_neg) >> shift) & mask)


def _order_flips(utype, kind: str):
    """(sign, flip_pos, flip_neg) of ``_ordered`` for keys of ``kind`` stored as ``utype`` bits."""
    bits = 8 * T.type_size(utype)
    sign, ones = 1 << (bits - 1), (1 << bits) - 1
    flips = {"uint": (0, 0), "int": (sign, sign), "float": (sign, ones)}[kind]
    return [utype(sign), utype(flips[0]), utype(flips[1])]
