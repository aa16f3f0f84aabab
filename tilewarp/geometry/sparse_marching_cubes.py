"""Sparse marching cubes (Warp's ``wp.geometry.sparse_marching_cubes``, ``lipschitz_octree`` and
``sparse_marching_cubes_from_cells``): the level set of an implicit function, extracted on the cells
near it only, so the cost grows with the surface's area instead of the grid's volume.

``lipschitz_octree`` refines a cell only while the level set may pass through it: a field with
Lipschitz bound L that differs from the threshold by more than L times the half-diagonal at a cell's
centre cannot reach it inside the cell. The field is a *batched* callable (points -> values, one call
per octree level), so evaluation stays on the device when it is a kernel.

The extraction shares the dense path's tables (``marching_cubes.py``) and its determinism (sorts and
scans; where several cells write one flag they write the same value). Corners shared between cells
are merged through a stable sort of packed subscripts (``wp.utils.radix_sort_pairs``): the first
cell listing a corner is its source, so gradients reach a fixed one of the duplicate entries. A
vertex belongs to an edge, named by its lower corner and axis, so neighbouring cells share it.
"""
from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np

import tilewarp as wp

from .. import utils
from ..language import types as T
from ..runtime.array import array, empty, zeros
from ..runtime.device import get_device
from .marching_cubes import _crosses, _edge_point, _scan_total, device_tables, resolve_domain_bounds

# ---- the octree -------------------------------------------------------------------------------------


@wp.kernel(enable_backward=False)
def _cell_centers(cells: wp.array(dtype=wp.vec3i), origin: wp.vec3, width: wp.vec3, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    c = cells[i]
    out[i] = origin + wp.cw_mul(width, wp.vec3(float(c[0]) + 0.5, float(c[1]) + 0.5, float(c[2]) + 0.5))


@wp.kernel(enable_backward=False)
def _near_level_set(values: wp.array(dtype=wp.float32), threshold: float, band: float,
                    keep: wp.array(dtype=wp.int32)):
    i = wp.tid()
    keep[i] = 0
    if wp.abs(values[i] - threshold) <= band:
        keep[i] = 1


@wp.kernel(enable_backward=False)
def _children(cells: wp.array(dtype=wp.vec3i), keep: wp.array(dtype=wp.int32), slots: wp.array(dtype=wp.int32),
              out: wp.array(dtype=wp.vec3i)):
    # slots: the inclusive scan of keep; a kept cell's 8 children go to 8 * (slot - 1) ...
    i = wp.tid()
    if keep[i] != 0:
        base = 8 * (slots[i] - 1)
        c = cells[i] * 2
        for k in range(8):
            out[base + k] = c + wp.vec3i((k >> 2) & 1, (k >> 1) & 1, k & 1)


@wp.kernel(enable_backward=False)
def _compact(cells: wp.array(dtype=wp.vec3i), keep: wp.array(dtype=wp.int32), slots: wp.array(dtype=wp.int32),
             out: wp.array(dtype=wp.vec3i)):
    i = wp.tid()
    if keep[i] != 0:
        out[slots[i] - 1] = cells[i]


@wp.kernel(enable_backward=False)
def _inside_grid(cells: wp.array(dtype=wp.vec3i), limit: wp.vec3i, keep: wp.array(dtype=wp.int32)):
    i = wp.tid()
    c = cells[i]
    keep[i] = 0
    if c[0] < limit[0] and c[1] < limit[1] and c[2] < limit[2]:
        keep[i] = 1


def _select(cells: array, keep: array) -> tuple:
    """(the kept cells, how many); one host read."""
    slots, n = _scan_total(keep)
    out = empty(n, dtype=T.vec3i, device=cells.device)
    if n:
        wp.launch(_compact, dim=cells.shape[0], inputs=[cells, keep, slots, out], device=cells.device,
                  record_tape=False)
    return out, n


def _build_octree(evaluate, origin, root_width, max_depth: int, threshold: float, bound: float, device):
    """The leaves at ``max_depth`` (vec3i subscripts) whose centre is within ``bound`` times the
    half-diagonal of the level set, refining only such cells from the root down; None if none."""
    cells = zeros(1, dtype=T.vec3i, device=device)
    for depth in range(max_depth + 1):
        width = [float(w) / (1 << depth) for w in root_width]
        n = cells.shape[0]
        centers = empty(n, dtype=T.vec3, device=device)
        wp.launch(_cell_centers, dim=n, inputs=[cells, origin, wp.vec3(*width), centers], device=device,
                  record_tape=False)
        values = evaluate(centers)
        band = bound * 0.5 * float(np.sqrt(sum(w * w for w in width)))
        keep = empty(n, dtype=T.int32, device=device)
        wp.launch(_near_level_set, dim=n, inputs=[values, float(threshold), band, keep], device=device,
                  record_tape=False)
        if depth == max_depth:
            cells, kept = _select(cells, keep)
            return cells if kept else None
        slots, kept = _scan_total(keep)
        if not kept:
            return None
        children = empty(8 * kept, dtype=T.vec3i, device=device)
        wp.launch(_children, dim=n, inputs=[cells, keep, slots, children], device=device, record_tape=False)
        cells = children


def _is_warp_function(field) -> bool:
    """A ``@wp.func`` or ``@wp.kernel``: single-point code, not the batched callable asked for."""
    return getattr(field, "_tw_specialize", None) is not None or type(field).__name__ in ("Function", "Kernel")


def _make_evaluator(field, device) -> Callable:
    if not callable(field) or _is_warp_function(field):
        raise TypeError("field must be a batched callable, evaluate(points: wp.array[wp.vec3]) -> "
                        f"wp.array[wp.float32] (wrap a single-point @wp.func in a kernel), got {field!r}")

    def evaluate(points: array) -> array:
        values = field(points)
        if not isinstance(values, array):
            values = wp.array(np.asarray(values, dtype=np.float32).reshape(-1), dtype=T.float32, device=device)
        if values.dtype is not T.float32:
            raise TypeError(f"field must return float32 values, got {T.type_name(values.dtype)}")
        if values.size != points.shape[0]:
            raise ValueError(f"field returned {values.size} values for {points.shape[0]} points")
        if values.device != device:
            values = values.to(device)
        if values.ndim != 1:
            values = values.contiguous().flatten()
        return values

    return evaluate


def lipschitz_octree(field: Callable, origin, root_width: float, max_depth: int, threshold: float = 0.0,
                     lipschitz_bound: float = 1.0, device=None) -> tuple:
    """``(cells, cell_width)``: the cells of the ``2**max_depth`` grid over the cube ``[origin, origin +
    root_width]`` that the ``threshold`` level set of ``field`` (a batched callable, points -> float32
    values, with Lipschitz bound ``lipschitz_bound``) may cross, as vec3i minimum-corner subscripts
    (empty if none), and their width. Not differentiable (a discrete search, kept off the tape)."""
    max_depth = operator.index(max_depth)
    if max_depth < 0:
        raise ValueError(f"max_depth must be non-negative, got {max_depth}.")
    if not root_width > 0.0:
        raise ValueError(f"root_width must be positive, got {root_width}.")
    if not lipschitz_bound >= 0.0:
        raise ValueError(f"lipschitz_bound must be non-negative, got {lipschitz_bound}.")
    device = get_device(device)
    evaluate = _make_evaluator(field, device)
    root_width = float(root_width)
    cells = _build_octree(evaluate, wp.vec3(*origin), (root_width,) * 3, max_depth, float(threshold),
                          float(lipschitz_bound), device)
    cell_width = root_width / float(1 << max_depth)
    return (empty(0, dtype=T.vec3i, device=device) if cells is None else cells), cell_width


# ---- shared corners -------------------------------------------------------------------------------


@wp.kernel(enable_backward=False)
def _subscript_bounds(cells: wp.array(dtype=wp.vec3i), bounds: wp.array(dtype=wp.int32)):
    # atomic min / max: the result does not depend on the order
    i = wp.tid()
    c = cells[i]
    for a in range(3):
        wp.atomic_min(bounds, a, c[a])
        wp.atomic_max(bounds, a + 3, c[a])


@wp.kernel(enable_backward=False)
def _corner_codes(cells: wp.array(dtype=wp.vec3i), corners: wp.array(dtype=wp.vec3i), low: wp.vec3i,
                  stride: wp.int64, codes: wp.array(dtype=wp.int64), ids: wp.array(dtype=wp.int32)):
    i, k = wp.tid()
    s = cells[i] + corners[k] - low
    codes[8 * i + k] = (wp.int64(s[0]) * stride + wp.int64(s[1])) * stride + wp.int64(s[2])
    ids[8 * i + k] = 8 * i + k


@wp.kernel(enable_backward=False)
def _first_of_run(codes: wp.array(dtype=wp.int64), first: wp.array(dtype=wp.int32)):
    p = wp.tid()
    first[p] = 0
    if p == 0:
        first[p] = 1
    elif codes[p] != codes[p - 1]:
        first[p] = 1


@wp.kernel(enable_backward=False)
def _unique_corners(codes: wp.array(dtype=wp.int64), ids: wp.array(dtype=wp.int32),
                    first: wp.array(dtype=wp.int32), numbers: wp.array(dtype=wp.int32), stride: wp.int64,
                    base: wp.vec3, width: wp.vec3, cell_corners: wp.array(dtype=wp.int32),
                    source: wp.array(dtype=wp.int32), positions: wp.array(dtype=wp.vec3)):
    # numbers: the inclusive scan of first, so sorted position p holds unique corner numbers[p] - 1
    p = wp.tid()
    u = numbers[p] - 1
    cell_corners[ids[p]] = u
    if first[p] != 0:
        source[u] = ids[p]
        c = codes[p]
        z = c % stride
        y = (c // stride) % stride
        x = c // (stride * stride)
        positions[u] = base + wp.cw_mul(width, wp.vec3(float(x), float(y), float(z)))


def _dedupe_corners(cells: array, low, stride: int, base, width, device) -> tuple:
    """(cell corner -> unique corner (int32[8 * N]), unique corner -> first (cell, corner) listing it,
    unique corner positions, unique count) for cells packed as ``stride``-based codes from ``low``."""
    n = cells.shape[0]
    tab = device_tables(device)
    codes = empty(16 * n, dtype=T.int64, device=device)  # radix_sort_pairs wants 2x the count
    ids = empty(16 * n, dtype=T.int32, device=device)
    wp.launch(_corner_codes, dim=(n, 8), inputs=[cells, tab.corners, wp.vec3i(*low), stride, codes, ids],
              device=device, record_tape=False)
    utils.radix_sort_pairs(codes, ids, 8 * n, 0, max(1, (stride ** 3 - 1).bit_length()))
    first = empty(8 * n, dtype=T.int32, device=device)
    wp.launch(_first_of_run, dim=8 * n, inputs=[codes, first], device=device, record_tape=False)
    numbers, n_unique = _scan_total(first)
    cell_corners = empty(8 * n, dtype=T.int32, device=device)
    source = empty(n_unique, dtype=T.int32, device=device)
    positions = empty(n_unique, dtype=T.vec3, device=device)
    wp.launch(_unique_corners, dim=8 * n, inputs=[codes, ids, first, numbers, stride, base, width, cell_corners,
                                                  source, positions], device=device, record_tape=False)
    return cell_corners, source, positions, n_unique


@wp.kernel
def _gather(source: wp.array(dtype=wp.int32), values: wp.array(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    u = wp.tid()
    out[u] = values[source[u]]


# ---- extraction -----------------------------------------------------------------------------------


@wp.kernel(enable_backward=False)
def _mark_cell_edges(cell_corners: wp.array(dtype=wp.int32), values: wp.array(dtype=wp.float32), threshold: float,
                     edges: wp.array(dtype=wp.vec2i), geometry: wp.array(dtype=wp.vec4i),
                     crossed: wp.array(dtype=wp.int32), upper: wp.array(dtype=wp.int32)):
    # every cell sharing an edge writes the same flag and upper corner, so the races are benign
    i, e = wp.tid()
    ab = edges[e]
    a = cell_corners[8 * i + ab[0]]
    b = cell_corners[8 * i + ab[1]]
    if _crosses(values[a], values[b], threshold):
        slot = 3 * a + geometry[e][3]
        crossed[slot] = 1
        upper[slot] = b


@wp.kernel
def _sparse_vertices(crossed: wp.array(dtype=wp.int32), upper: wp.array(dtype=wp.int32),
                     numbers: wp.array(dtype=wp.int32), positions: wp.array(dtype=wp.vec3),
                     values: wp.array(dtype=wp.float32), threshold: float, verts: wp.array(dtype=wp.vec3)):
    s = wp.tid()
    if crossed[s] != 0:
        a = s // 3
        b = upper[s]
        verts[numbers[s] - 1] = _edge_point(positions[a], values[a], positions[b], values[b], threshold)


@wp.func
def _sparse_case(cell_corners: wp.array(dtype=wp.int32), values: wp.array(dtype=wp.float32), i: int,
                 threshold: float):
    code = int(0)
    for c in range(8):
        if values[cell_corners[8 * i + c]] < threshold:
            code = code | (1 << c)
    return code


@wp.kernel(enable_backward=False)
def _count_sparse(cell_corners: wp.array(dtype=wp.int32), values: wp.array(dtype=wp.float32), threshold: float,
                  ranges: wp.array(dtype=wp.int32), counts: wp.array(dtype=wp.int32)):
    i = wp.tid()
    code = _sparse_case(cell_corners, values, i, threshold)
    counts[i] = (ranges[code + 1] - ranges[code]) // 3


@wp.kernel(enable_backward=False)
def _emit_sparse(cell_corners: wp.array(dtype=wp.int32), values: wp.array(dtype=wp.float32), threshold: float,
                 ranges: wp.array(dtype=wp.int32), tri_edges: wp.array(dtype=wp.int32),
                 geometry: wp.array(dtype=wp.vec4i), owners: wp.array(dtype=wp.int32),
                 offsets: wp.array(dtype=wp.int32), numbers: wp.array(dtype=wp.int32),
                 indices: wp.array(dtype=wp.int32)):
    i = wp.tid()
    code = _sparse_case(cell_corners, values, i, threshold)
    begin = ranges[code]
    n = ranges[code + 1] - begin
    first = offsets[i] * 3 - n
    for t in range(n):
        e = tri_edges[begin + t]
        a = cell_corners[8 * i + owners[e]]
        indices[first + t] = numbers[3 * a + geometry[e][3]] - 1


def _empty_mesh(device) -> tuple:
    return empty(0, dtype=T.vec3, device=device), empty(0, dtype=T.int32, device=device)


_edge_pairs: dict = {}


def _edges(device) -> array:
    from .marching_cubes import MC_EDGE_TO_CORNERS

    key = str(device)
    if key not in _edge_pairs:
        _edge_pairs[key] = wp.array(np.asarray(MC_EDGE_TO_CORNERS, np.int32), dtype=T.vec2i, device=device)
    return _edge_pairs[key]


def _extract(cell_corners: array, positions: array, values: array, threshold: float, device) -> tuple:
    """(verts, indices) of cells given as unique-corner numbers, with the corners' positions and values."""
    n_cells, n_unique = cell_corners.shape[0] // 8, positions.shape[0]
    tab = device_tables(device)
    crossed = zeros(3 * n_unique, dtype=T.int32, device=device)
    upper = zeros(3 * n_unique, dtype=T.int32, device=device)
    wp.launch(_mark_cell_edges, dim=(n_cells, 12), inputs=[cell_corners, values, threshold, _edges(device),
                                                            tab.geometry, crossed, upper], device=device,
              record_tape=False)
    numbers, n_verts = _scan_total(crossed)
    verts = zeros(n_verts, dtype=T.vec3, device=device, requires_grad=values.requires_grad)
    if n_verts:  # recorded: gradients flow from verts to the corner values
        wp.launch(_sparse_vertices, dim=3 * n_unique, inputs=[crossed, upper, numbers, positions, values, threshold],
                  outputs=[verts], device=device)
    counts = empty(n_cells, dtype=T.int32, device=device)
    wp.launch(_count_sparse, dim=n_cells, inputs=[cell_corners, values, threshold, tab.ranges, counts],
              device=device, record_tape=False)
    offsets, n_tris = _scan_total(counts)
    indices = empty(3 * n_tris, dtype=T.int32, device=device)
    if n_tris:
        wp.launch(_emit_sparse, dim=n_cells, inputs=[cell_corners, values, threshold, tab.ranges, tab.tri_edges,
                                                     tab.geometry, tab.owners, offsets, numbers, indices],
                  device=device, record_tape=False)
    return verts, indices


@wp.kernel(enable_backward=False)
def _rows_to_cells(rows: wp.array2d(dtype=wp.int32), out: wp.array(dtype=wp.vec3i)):
    i = wp.tid()
    out[i] = wp.vec3i(rows[i, 0], rows[i, 1], rows[i, 2])


def _as_cells(cells, device) -> array:
    """``cells`` (vec3i array, (N, 3) int32 array, or array-like) as a vec3i array on ``device``."""
    if isinstance(cells, array):
        if cells.device != device:
            cells = cells.to(device)
        if cells.dtype is T.vec3i and cells.ndim == 1:
            return cells
        if cells.dtype is T.int32 and cells.ndim == 2 and cells.shape[1] == 3:
            out = empty(cells.shape[0], dtype=T.vec3i, device=device)
            wp.launch(_rows_to_cells, dim=cells.shape[0], inputs=[cells, out], device=device, record_tape=False)
            return out
        raise ValueError(f"cells must be an array of vec3i or an (N, 3) int32 array, got {T.type_name(cells.dtype)} "
                         f"of shape {cells.shape}")
    rows = np.asarray(cells)
    if rows.size == 0:
        rows = rows.reshape(0, 3)
    if rows.ndim != 2 or rows.shape[1] != 3 or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError(f"cells must be (N, 3) integer subscripts, got an array of shape {rows.shape} "
                         f"and dtype {rows.dtype}")
    return wp.array(np.ascontiguousarray(rows, dtype=np.int32), dtype=T.vec3i, device=device)


def _as_corner_values(corner_values, n_cells: int, device) -> array:
    if isinstance(corner_values, array):
        values = corner_values if corner_values.device == device else corner_values.to(device)
    else:
        values = wp.array(np.ascontiguousarray(corner_values, dtype=np.float32).reshape(-1), dtype=T.float32,
                          device=device)
    if values.dtype is not T.float32:
        raise ValueError(f"corner_values must be float32, got {T.type_name(values.dtype)}.")
    if values.size != 8 * n_cells:
        raise ValueError(f"corner_values must have {8 * n_cells} entries for {n_cells} cells, got {values.size}.")
    if not values.is_contiguous:
        values = wp.clone(values)  # recorded, so a strided view of a differentiable array keeps its gradient
    return values.reshape((values.size,)) if values.ndim != 1 else values


def sparse_marching_cubes_from_cells(cells, corner_values, origin=(0.0, 0.0, 0.0), cell_width: float = 1.0,
                                     threshold: float = 0.0, device=None) -> tuple:
    """``(verts, indices)``: marching cubes on the listed cells only. ``cells``: N unique (i, j, k)
    minimum-corner subscripts (vec3i array, (N, 3) int32 array or array-like; cell (i, j, k) spans
    ``origin + cell_width * [(i, j, k), (i+1, j+1, k+1)]``); ``corner_values``: (N, 8) field values
    at each cell's corners in ``CUBE_CORNER_OFFSETS`` order (shared corners should agree). Vertices
    are shared between neighbouring cells; gradients flow from ``verts`` back to ``corner_values``."""
    device = get_device(device)
    if not float(cell_width) > 0.0:
        raise ValueError(f"cell_width must be positive, got {cell_width}.")
    cells = _as_cells(cells, device)
    n = cells.shape[0]
    values = _as_corner_values(corner_values, n, device)
    if n == 0:
        return _empty_mesh(device)
    bounds = wp.array(np.array([2**31 - 1] * 3 + [-2**31] * 3, np.int32), dtype=T.int32, device=device)
    wp.launch(_subscript_bounds, dim=n, inputs=[cells, bounds], device=device, record_tape=False)
    b = bounds.numpy().astype(np.int64)
    low, high = b[:3], b[3:]
    stride = int((high - low).max()) + 2  # room for the far corner
    if stride ** 3 >= 2 ** 63:
        raise ValueError(f"the cells' subscript range ({low.tolist()} to {high.tolist()}) is too large to pack "
                         "into 64-bit corner codes")
    width = float(cell_width)
    # the offset goes into the origin in double precision: float32 subscripts near 2**24 would collide
    base = wp.vec3(*(float(o) + width * float(lo) for o, lo in zip(origin, low)))
    cell_corners, source, positions, n_unique = _dedupe_corners(cells, low.tolist(), stride, base,
                                                                wp.vec3(width, width, width), device)
    unique = empty(n_unique, dtype=T.float32, device=device, requires_grad=values.requires_grad)
    wp.launch(_gather, dim=n_unique, inputs=[source, values], outputs=[unique], device=device)
    return _extract(cell_corners, positions, unique, float(threshold), device)


def sparse_marching_cubes(field: Callable, nx: int, ny: int, nz: int, *, lower=None, upper=None,
                          threshold: float = 0.0, lipschitz_bound: float = 1.0, device=None,
                          return_stats: bool = False):
    """``(verts, indices)`` (and a stats dict with ``return_stats``): the ``threshold`` level set of
    ``field`` (a batched callable, points -> float32 values, Lipschitz bound ``lipschitz_bound``) on
    the grid of ``nx * ny * nz`` nodes over ``[lower, upper]`` (as ``IsoSurfaceMarchingCubes.extract``,
    which gives the same surface), evaluating the field only near the level set."""
    if nx < 2 or ny < 2 or nz < 2:
        raise ValueError(f"nx, ny, nz must each be at least 2, got ({nx}, {ny}, {nz}).")
    if not lipschitz_bound >= 0.0:
        raise ValueError(f"lipschitz_bound must be non-negative, got {lipschitz_bound}.")
    device = get_device(device)
    evaluate = _make_evaluator(field, device)
    lower, delta = resolve_domain_bounds((nx, ny, nz), lower, upper)
    ncells = (nx - 1, ny - 1, nz - 1)
    max_depth = (max(ncells) - 1).bit_length()
    resolution = 1 << max_depth
    stats = {"leaf_cells": 0, "unique_corners": 0, "field_evaluations": 0, "resolution": resolution,
             "requested_ncells": ncells, "culled_cells": 0}
    evaluations = [0]

    def counting(points):
        evaluations[0] += points.shape[0]
        return evaluate(points)

    def finish(mesh):
        stats["field_evaluations"] = evaluations[0]
        return (*mesh, stats) if return_stats else mesh

    root = [float(delta[a]) * resolution for a in range(3)]
    cells = _build_octree(counting, lower, root, max_depth, float(threshold), float(lipschitz_bound), device)
    if cells is None:
        return finish(_empty_mesh(device))
    if ncells != (resolution,) * 3:  # the octree pads each axis to the resolution: drop what lies beyond
        keep = empty(cells.shape[0], dtype=T.int32, device=device)
        wp.launch(_inside_grid, dim=cells.shape[0], inputs=[cells, wp.vec3i(*ncells), keep], device=device,
                  record_tape=False)
        before = cells.shape[0]
        cells, kept = _select(cells, keep)
        stats["culled_cells"] = before - kept
    if cells.shape[0] == 0:
        return finish(_empty_mesh(device))
    stats["leaf_cells"] = cells.shape[0]
    cell_corners, _, positions, n_unique = _dedupe_corners(cells, (0, 0, 0), resolution + 1, lower, delta, device)
    stats["unique_corners"] = n_unique
    values = counting(positions)
    return finish(_extract(cell_corners, positions, values, float(threshold), device))
