"""Triangle-mesh topology and Delaunay edge flips (Warp's ``wp.geometry.tri_tri_adjacency``,
``find_triangle_neighbor_edge_index`` and ``delaunay_edge_flip``), plus the 2-D predicates they use
(``signed_area``, ``in_circle``: kernel functions, not exported, as in Warp).

Adjacency: the half-edges are bucketed by their lower vertex (a count, a scan and a scatter), and
each half-edge finds its twin in its bucket: the other half-edge with the same upper vertex (the
lowest-numbered one, so the answer does not depend on the order the scatter filled the bucket).

Flipping runs in passes, each flipping a set of edges that share no triangle, in parallel:
1. every interior edge that is not locally Delaunay, and whose flip gives two counter-clockwise
   triangles, *claims* its two triangles with a priority unique to the edge (atomic max, so the
   outcome does not depend on the order); the priority is a bijective hash of the edge's number,
   so that winners are spread over the mesh instead of following its numbering (claims that
   cascade along a row of triangles numbered in order would flip one edge per pass);
2. an edge holding both its claims flips: it rewrites its two triangles and their neighbour rows,
   and marks them as partners;
3. every neighbour entry pointing at a flipped triangle that no longer holds the shared edge is
   redirected to that triangle's partner, which now does (a flip moves each of its four outer edges
   to one of its two triangles).
The edge with the highest priority always wins, so each pass flips at least one edge while any is
left; Lawson's flips terminate, and the result does not depend on thread order.
The host reads one flag per pass. Under a CUDA graph capture the passes are unrolled (``max_passes``
of them), each kernel returning at once after convergence; on the CPU a capture records the whole
operation, run at each replay.
"""
from __future__ import annotations

import math

import numpy as np

import tilewarp as wp

from .. import utils
from ..language import types as T
from ..runtime import cpu_capture
from ..runtime.array import array, empty, full, zeros

# ---- predicates -----------------------------------------------------------------------------------


@wp.func
def signed_area(a: wp.vec2, b: wp.vec2, c: wp.vec2) -> float:
    """The signed area of triangle ``abc``: positive when it winds counter-clockwise."""
    return 0.5 * ((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))


@wp.func
def _in_circle_det(a: wp.vec2, b: wp.vec2, c: wp.vec2, d: wp.vec2) -> float:
    # the lifted 3x3 determinant, relative to d: > 0 when d is inside the circle through a, b, c
    # (counter-clockwise), 0 on it
    u = a - d
    v = b - d
    w = c - d
    return (wp.dot(u, u) * (v[0] * w[1] - v[1] * w[0]) - wp.dot(v, v) * (u[0] * w[1] - u[1] * w[0])
            + wp.dot(w, w) * (u[0] * v[1] - u[1] * v[0]))


@wp.func
def in_circle(a: wp.vec2, b: wp.vec2, c: wp.vec2, d: wp.vec2) -> bool:
    """Whether ``d`` lies strictly inside the circumcircle of the counter-clockwise triangle ``abc``
    (the floating-point determinant, not an exact predicate)."""
    return _in_circle_det(a, b, c, d) > 0.0


# ---- adjacency ------------------------------------------------------------------------------------


@wp.kernel(enable_backward=False)
def _index_range(tri: wp.array2d(dtype=wp.int32), out: wp.array(dtype=wp.int32)):
    # out: [lowest index, highest index]
    t, j = wp.tid()
    wp.atomic_min(out, 0, tri[t, j])
    wp.atomic_max(out, 1, tri[t, j])


@wp.func
def _half_edge(tri: wp.array2d(dtype=wp.int32), t: int, j: int, vertex_count: int):
    # the edge opposite corner j as (lower, upper) vertex; (-1, -1) for an index out of range
    a = tri[t, (j + 1) % 3]
    b = tri[t, (j + 2) % 3]
    out = wp.vec2i(wp.min(a, b), wp.max(a, b))
    if out[0] < 0 or out[1] >= vertex_count:
        out = wp.vec2i(-1, -1)
    return out


@wp.kernel(enable_backward=False)
def _count_half_edges(tri: wp.array2d(dtype=wp.int32), vertex_count: int, counts: wp.array(dtype=wp.int32)):
    t, j = wp.tid()
    e = _half_edge(tri, t, j, vertex_count)
    if e[0] >= 0:
        wp.atomic_add(counts, e[0], 1)


@wp.kernel(enable_backward=False)
def _scatter_half_edges(tri: wp.array2d(dtype=wp.int32), vertex_count: int, offsets: wp.array(dtype=wp.int32),
                        fill: wp.array(dtype=wp.int32), upper: wp.array(dtype=wp.int32),
                        half_edge: wp.array(dtype=wp.int32)):
    # offsets: the exclusive scan of the counts
    t, j = wp.tid()
    e = _half_edge(tri, t, j, vertex_count)
    if e[0] >= 0:
        slot = offsets[e[0]] + wp.atomic_add(fill, e[0], 1)
        upper[slot] = e[1]
        half_edge[slot] = t * 3 + j


@wp.kernel(enable_backward=False)
def _match_half_edges(tri: wp.array2d(dtype=wp.int32), vertex_count: int, offsets: wp.array(dtype=wp.int32),
                      counts: wp.array(dtype=wp.int32), upper: wp.array(dtype=wp.int32),
                      half_edge: wp.array(dtype=wp.int32), neighbors: wp.array2d(dtype=wp.int32),
                      neighbor_edges: wp.array2d(dtype=wp.int32), with_edges: int):
    t, j = wp.tid()
    e = _half_edge(tri, t, j, vertex_count)
    me = t * 3 + j
    twin = int(-1)
    if e[0] >= 0:
        begin = offsets[e[0]]
        for s in range(begin, begin + counts[e[0]]):
            other = half_edge[s]
            if upper[s] == e[1] and other != me and (twin < 0 or other < twin):
                twin = other
    neighbors[t, j] = wp.where(twin >= 0, twin // 3, -1)
    if with_edges != 0:
        neighbor_edges[t, j] = wp.where(twin >= 0, twin % 3, -1)


def _check_indices(indices, name: str = "indices") -> None:
    if not isinstance(indices, array):
        raise TypeError(f"'{name}' must be a wp.array, got {type(indices).__name__}")
    if indices.dtype is not T.int32:
        raise ValueError(f"'{name}' must have dtype wp.int32, got {T.type_name(indices.dtype)}")
    if indices.ndim != 2 or indices.shape[1] != 3:
        raise ValueError(f"'{name}' must be a (num_tris, 3) array of triangle vertex indices, got shape "
                         f"{indices.shape}")


def _index_bounds(indices: array) -> tuple:
    """(lowest, highest) vertex index of ``indices`` (one host read)."""
    out = wp.array(np.array([2**31 - 1, -1], np.int32), dtype=wp.int32, device=indices.device)
    wp.launch(_index_range, dim=indices.shape, inputs=[indices, out], device=indices.device, record_tape=False)
    lo, hi = (int(x) for x in out.numpy())
    return lo, hi


def tri_tri_adjacency(indices: array, vertex_count: int | None = None, return_neighbor_edge_indices: bool = True):
    """Triangle-triangle adjacency of an edge-manifold mesh (one or two triangles per edge; the
    triangles' orientations need not agree). ``indices``: ``(num_tris, 3)`` int32.
    ``vertex_count``: one more than the highest vertex index; inferred when None (a host read, so
    not under a graph capture). An edge with an index outside ``[0, vertex_count)`` counts as a
    boundary edge (it is never read out of bounds).

    Returns ``triangle_neighbors`` (and, by default, ``neighbor_edge_indices`` with it), both
    ``(num_tris, 3)`` int32: ``triangle_neighbors[t, j]`` is the triangle across the edge opposite
    corner ``j`` of ``t`` (joining corners ``j + 1`` and ``j + 2``, mod 3), -1 on the boundary;
    ``neighbor_edge_indices[t, j]`` is that edge's number in the neighbour."""
    _check_indices(indices)
    device = indices.device
    n_tris = indices.shape[0]
    if vertex_count is None:
        if device.is_capturing:
            raise RuntimeError("`tri_tri_adjacency` requires `vertex_count` to be set for use in graph capture")
        lo, hi = _index_bounds(indices) if n_tris else (0, -1)
        if lo < 0:
            raise ValueError(f"'indices' holds a negative vertex index ({lo})")
        vertex_count = hi + 1
    vertex_count = int(vertex_count)
    if vertex_count < 0:
        raise ValueError(f"'vertex_count' must be non-negative, got {vertex_count}")
    neighbors = empty((n_tris, 3), dtype=wp.int32, device=device)
    edges = empty((n_tris, 3), dtype=wp.int32, device=device) if return_neighbor_edge_indices else neighbors
    if n_tris:
        _adjacency(indices, vertex_count, neighbors, edges, return_neighbor_edge_indices)
    return (neighbors, edges) if return_neighbor_edge_indices else neighbors


def _adjacency(indices: array, vertex_count: int, neighbors: array, edges: array, with_edges: bool) -> None:
    device = indices.device
    counts = zeros(max(vertex_count, 1), dtype=wp.int32, device=device)
    offsets = empty(counts.shape[0], dtype=wp.int32, device=device)
    fill = zeros(counts.shape[0], dtype=wp.int32, device=device)
    upper = empty(indices.shape[0] * 3, dtype=wp.int32, device=device)
    half_edge = empty(indices.shape[0] * 3, dtype=wp.int32, device=device)
    run = {"dim": indices.shape, "device": device, "record_tape": False}
    wp.launch(_count_half_edges, inputs=[indices, vertex_count, counts], **run)
    utils.array_scan(counts, offsets, inclusive=False)
    wp.launch(_scatter_half_edges, inputs=[indices, vertex_count, offsets, fill, upper, half_edge], **run)
    wp.launch(_match_half_edges, inputs=[indices, vertex_count, offsets, counts, upper, half_edge, neighbors, edges,
                                         int(with_edges)], **run)


@wp.func
def find_triangle_neighbor_edge_index(triangle_neighbors: wp.array2d(dtype=wp.int32), triangle: wp.int32,
                                      neighbor: wp.int32) -> wp.int32:
    """The edge ``j`` of ``triangle`` with ``triangle_neighbors[triangle, j] == neighbor``, or -1 when
    the two are not adjacent. Called with the two swapped, it gives the entry
    :func:`tri_tri_adjacency` returns in ``neighbor_edge_indices``, without storing that array."""
    out = wp.int32(-1)
    for j in range(3):
        if out < 0 and triangle_neighbors[triangle, j] == neighbor:
            out = wp.int32(j)
    return out


# ---- edge flips -----------------------------------------------------------------------------------


@wp.func
def _priority(t: int, j: int) -> wp.uint32:
    # a bijective mix (xor-shifts and odd multipliers) of the edge's number + 1: unique per edge,
    # never 0 (the unclaimed mark), and uncorrelated with the mesh's numbering
    x = wp.uint32(t * 3 + j + 1)
    x = x ^ (x >> wp.uint32(16))
    x = x * wp.uint32(0x7FEB352D)
    x = x ^ (x >> wp.uint32(15))
    x = x * wp.uint32(0x846CA68B)
    x = x ^ (x >> wp.uint32(16))
    return x


@wp.func
def _should_flip(tri: wp.array2d(dtype=wp.int32), pos: wp.array(dtype=wp.vec2), ref: wp.array(dtype=wp.vec2),
                 has_ref: int, area_eps: float, ref_eps: float, t: int, j: int, n: int, jn: int):
    # t = (c, a, b) and n = (d, b, a), both counter-clockwise from their corners j and jn; the flip
    # makes (c, a, d) and (c, d, b): it must keep both counter-clockwise (the quad a d b c convex)
    # and bigger than area_eps, and the edge must fail the empty-circle test
    c = tri[t, j]
    a = tri[t, (j + 1) % 3]
    b = tri[t, (j + 2) % 3]
    d = tri[n, jn]
    ok = tri[n, (jn + 1) % 3] == b and tri[n, (jn + 2) % 3] == a and d != c
    if ok:
        pa = pos[a]
        pb = pos[b]
        pc = pos[c]
        pd = pos[d]
        ok = signed_area(pc, pa, pd) > area_eps and signed_area(pc, pd, pb) > area_eps and in_circle(pc, pa, pb, pd)
    if ok and has_ref != 0:
        ok = signed_area(ref[c], ref[a], ref[d]) > ref_eps and signed_area(ref[c], ref[d], ref[b]) > ref_eps
    return ok


@wp.kernel(enable_backward=False)
def _stake_claims(tri: wp.array2d(dtype=wp.int32), nbr: wp.array2d(dtype=wp.int32), pos: wp.array(dtype=wp.vec2),
                  ref: wp.array(dtype=wp.vec2), has_ref: int, area_eps: float, ref_eps: float,
                  claim: wp.array(dtype=wp.uint32), going: wp.array(dtype=wp.int32)):
    t, j = wp.tid()
    if going[0] == 0:
        return
    n = nbr[t, j]
    if n > t:  # each interior edge once, from its lower triangle
        jn = find_triangle_neighbor_edge_index(nbr, n, t)
        if jn >= 0:
            if _should_flip(tri, pos, ref, has_ref, area_eps, ref_eps, t, j, n, jn):
                p = _priority(t, j)
                wp.atomic_max(claim, t, p)
                wp.atomic_max(claim, n, p)


@wp.kernel(enable_backward=False)
def _apply_flips(tri: wp.array2d(dtype=wp.int32), nbr: wp.array2d(dtype=wp.int32), claim: wp.array(dtype=wp.uint32),
                 partner: wp.array(dtype=wp.int32), flips: wp.array(dtype=wp.int32), going: wp.array(dtype=wp.int32)):
    t, j = wp.tid()
    if going[0] == 0:
        return
    p = _priority(t, j)
    if claim[t] != p:  # checked first: only the winner of t may read its rows while they change
        return
    n = nbr[t, j]
    if n <= t or claim[n] != p:
        return
    jn = find_triangle_neighbor_edge_index(nbr, n, t)
    c = tri[t, j]
    a = tri[t, (j + 1) % 3]
    b = tri[t, (j + 2) % 3]
    d = tri[n, jn]
    across_bc = nbr[t, (j + 1) % 3]
    across_ca = nbr[t, (j + 2) % 3]
    across_ad = nbr[n, (jn + 1) % 3]
    across_db = nbr[n, (jn + 2) % 3]
    tri[t, 0] = c
    tri[t, 1] = a
    tri[t, 2] = d
    nbr[t, 0] = across_ad
    nbr[t, 1] = n
    nbr[t, 2] = across_ca
    tri[n, 0] = c
    tri[n, 1] = d
    tri[n, 2] = b
    nbr[n, 0] = across_db
    nbr[n, 1] = across_bc
    nbr[n, 2] = t
    partner[t] = n
    partner[n] = t
    wp.atomic_add(flips, 0, 1)


@wp.func
def _holds(tri: wp.array2d(dtype=wp.int32), q: int, v: int):
    return tri[q, 0] == v or tri[q, 1] == v or tri[q, 2] == v


@wp.kernel(enable_backward=False)
def _relink(tri: wp.array2d(dtype=wp.int32), nbr: wp.array2d(dtype=wp.int32), partner: wp.array(dtype=wp.int32),
            going: wp.array(dtype=wp.int32)):
    # an entry pointing at a flipped triangle that lost the shared edge now points at its partner
    r, k = wp.tid()
    if going[0] == 0:
        return
    q = nbr[r, k]
    if q >= 0:
        m = partner[q]
        if m >= 0:
            if not (_holds(tri, q, tri[r, (k + 1) % 3]) and _holds(tri, q, tri[r, (k + 2) % 3])):
                nbr[r, k] = m


@wp.kernel(enable_backward=False)
def _end_pass(flips: wp.array(dtype=wp.int32), max_passes: int, total: wp.array(dtype=wp.int32),
              passes: wp.array(dtype=wp.int32), going: wp.array(dtype=wp.int32)):
    if going[0] == 0:
        return
    f = flips[0]
    total[0] = total[0] + f
    passes[0] = passes[0] + 1
    going[0] = wp.where(f > 0 and passes[0] < max_passes, 1, 0)
    flips[0] = 0


def _check_positions(positions, name: str) -> None:
    if not isinstance(positions, array):
        raise TypeError(f"'{name}' must be a wp.array, got {type(positions).__name__}")
    if positions.dtype is not T.vec2 or positions.ndim != 1:
        raise ValueError(f"'{name}' must be a 1-D array of wp.vec2, got {T.type_name(positions.dtype)} with shape "
                         f"{positions.shape}")


def _check_epsilon(value, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"'{name}' must be a number, got {type(value).__name__}") from None
    if not math.isfinite(out) or out < 0.0:
        raise ValueError(f"'{name}' must be finite and non-negative, got {out}")
    return out


def _flip_passes(positions, indices, ref, area_eps, ref_eps, max_passes, total, unrolled: bool) -> None:
    """Run the passes, adding the flips to ``total``: the host reads the continue flag after each
    pass, or, ``unrolled``, every pass is issued and returns at once once the flag is clear."""
    device = indices.device
    n_tris = indices.shape[0]
    nbr = empty((n_tris, 3), dtype=wp.int32, device=device)
    _adjacency(indices, positions.shape[0], nbr, nbr, False)
    claim = empty(n_tris, dtype=wp.uint32, device=device)
    partner = empty(n_tris, dtype=wp.int32, device=device)
    flips = zeros(1, dtype=wp.int32, device=device)
    passes = zeros(1, dtype=wp.int32, device=device)
    going = full(1, 1, dtype=wp.int32, device=device)
    has_ref = ref is not None
    ref = ref if has_ref else positions
    run = {"dim": (n_tris, 3), "device": device, "record_tape": False}
    for _ in range(max_passes):
        claim.zero_()
        partner.fill_(-1)
        wp.launch(_stake_claims, inputs=[indices, nbr, positions, ref, int(has_ref), area_eps, ref_eps, claim, going],
                  **run)
        wp.launch(_apply_flips, inputs=[indices, nbr, claim, partner, flips, going], **run)
        wp.launch(_relink, inputs=[indices, nbr, partner, going], **run)
        wp.launch(_end_pass, dim=1, inputs=[flips, max_passes, total, passes, going], device=device,
                  record_tape=False)
        if not unrolled and not int(going.numpy()[0]):
            break


def delaunay_edge_flip(positions: array, indices: array, ref_positions: array | None = None, max_passes: int = 1000,
                       area_epsilon: float = 0.0, ref_area_epsilon: float = 1e-10) -> array:
    """Flip the interior edges of a counter-clockwise 2-D triangulation that are not Delaunay, in
    parallel passes of independent flips, until none is left or ``max_passes`` passes ran.

    ``positions``: ``(vertex_count,)`` ``wp.vec2``, unchanged; ``indices``: ``(num_tris, 3)`` int32,
    rewritten in place. A flip must leave both its triangles with a signed area above
    ``area_epsilon``; with ``ref_positions`` (a reference configuration of the same vertices) also
    above ``ref_area_epsilon`` there. Returns a ``(1,)`` int32 array on ``indices``' device holding
    the number of flips (under a graph capture, read it after replaying the graph). Assumes a
    manifold mesh wound counter-clockwise."""
    _check_positions(positions, "positions")
    _check_indices(indices)
    device = indices.device
    if positions.device != device:
        raise ValueError(f"'positions' lives on {positions.device}, but 'indices' on {device}")
    if ref_positions is not None:
        _check_positions(ref_positions, "ref_positions")
        if ref_positions.device != device or ref_positions.shape != positions.shape:
            raise ValueError(f"'ref_positions' must match 'positions' (shape {positions.shape} on {device}), got "
                             f"shape {ref_positions.shape} on {ref_positions.device}")
    if isinstance(max_passes, bool) or not isinstance(max_passes, (int, np.integer)) or max_passes < 1:
        raise ValueError(f"'max_passes' must be an integer of at least 1, got {max_passes!r}")
    area_eps = _check_epsilon(area_epsilon, "area_epsilon")
    ref_eps = _check_epsilon(ref_area_epsilon, "ref_area_epsilon")
    total = zeros(1, dtype=wp.int32, device=device)
    if indices.shape[0] == 0:
        return total
    args = (positions, indices, ref_positions, area_eps, ref_eps, int(max_passes), total)
    if device.is_cpu and cpu_capture.active(device):
        # a CPU capture records the operation for its replays, as a CUDA graph would, without running it now
        def replay():
            total.zero_()
            _flip_passes(*args, unrolled=False)

        cpu_capture.record(device, replay)
        return total
    if device.is_capturing:
        _flip_passes(*args, unrolled=True)
        return total
    lo, hi = _index_bounds(indices)
    if lo < 0 or hi >= positions.shape[0]:
        raise ValueError(f"'indices' refers to vertices outside [0, {positions.shape[0]}): range [{lo}, {hi}]")
    _flip_passes(*args, unrolled=False)
    return total
