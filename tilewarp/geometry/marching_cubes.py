"""Marching cubes on a dense grid (Warp's ``wp.geometry.IsoSurfaceMarchingCubes``, formerly
``wp.MarchingCubes``): a triangle mesh of the level set ``field == threshold`` of a 3-D float32 field
sampled at grid nodes.

The case tables are generated here from the cube's geometry (``_build_tables``), not copied: for each
of the 256 inside/outside corner patterns, every cube face contributes directed segments between its
crossed edges, the segments chain into closed loops, and each loop becomes a triangle fan. A face
whose diagonal corners agree (the ambiguous face) always joins its two *inside* corners; both
cells sharing a face see the same corner values and apply the same rule, so the segments on a shared
face agree and the mesh is watertight. Segments are directed so that triangles wind counter-clockwise
seen from the outside (the side where the field is >= threshold), Warp's convention for an SDF. A
fan's diagonals never lie in a cube face, so every mesh edge borders exactly two triangles.

Extraction runs as tilewarp kernels on the field's device, deterministic (scans, no atomics):
1. per grid edge (node x 3 axes): crossed or not; an inclusive scan numbers the vertices, so a vertex
   is shared by every cell around its edge and the vertex order is the edge order (node-major);
2. per crossed edge: the interpolated vertex (the one differentiable step, recorded on the tape, so
   gradients flow from ``verts`` back to ``field``);
3. per cell: its case and triangle count; a scan gives each cell its triangles' offset;
4. per cell: the triangles, through the edges' vertex numbers.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Final, NamedTuple

import numpy as np

import tilewarp as wp

from .. import utils
from ..errors import warn_user
from ..language import types as T
from ..runtime.array import array, empty
from ..runtime.device import get_device

# ---- the case tables ---------------------------------------------------------------------------------


def _corner_offsets() -> tuple:
    """Corner c of a cell at (x, y, z) + offset: the bottom (z = 0) face counter-clockwise from the
    origin, then the top face the same way; corner c is bit c of a case code (Warp's numbering)."""
    ring = ((0, 0), (1, 0), (1, 1), (0, 1))
    return tuple((x, y, z) for z in (0, 1) for x, y in ring)


def _edge_corners(corners) -> tuple:
    """The 12 edges as corner pairs, lower coordinate first: the bottom ring, the top ring, the
    verticals (corner c to c + 4)."""
    out = []
    for ring in ((0, 1, 2, 3), (4, 5, 6, 7)):
        for a, b in zip(ring, ring[1:] + ring[:1]):
            out.append((a, b) if sum(corners[a]) < sum(corners[b]) else (b, a))
    return tuple(out + [(c, c + 4) for c in range(4)])


def _faces(corners) -> list:
    """Each cube face's 4 corners, counter-clockwise seen from outside the cube."""
    faces = []
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        for side in (0, 1):
            ring = [c for c in range(8) if corners[c][axis] == side]
            ring.sort(key=lambda c: math.atan2(corners[c][v] - 0.5, corners[c][u] - 0.5))  # ccw about +axis
            faces.append(ring if side == 1 else ring[::-1])
    return faces


def _case_loops(code: int, faces, edge_of) -> list:
    """The surface loops of case ``code`` (bit c set: corner c is inside, field < threshold) as lists
    of edge numbers. Walking a face counter-clockwise (seen from outside), a crossing from an outside
    to an inside corner starts a segment that ends at the previous inside-to-outside crossing: the
    segment cuts off the outside corners between them (so an ambiguous face keeps its outside corners
    apart and joins its inside ones, as Warp's meshes do), and its direction makes the loop
    counter-clockwise about the outward surface normal."""
    inside = [(code >> c) & 1 for c in range(8)]
    succ = {}
    for ring in faces:
        crossings = [(edge_of[frozenset((a, b))], inside[b])
                     for a, b in zip(ring, ring[1:] + ring[:1]) if inside[a] != inside[b]]
        for k, (edge, enters) in enumerate(crossings):
            if enters:
                succ[edge] = crossings[k - 1][0]
    loops, seen = [], set()
    for start in sorted(succ):
        if start in seen:
            continue
        loop = [start]
        while succ[loop[-1]] != start:
            loop.append(succ[loop[-1]])
        seen.update(loop)
        loops.append(loop)
    return loops


def _fan(loop: list, face_edges: list) -> list:
    """Triangles of a loop: a fan from the first vertex none of whose diagonals lies in a cube face.
    Such a diagonal joins the two segments of an ambiguous face; the neighbouring cell could draw the
    same diagonal, and the edge would then border four triangles. Every loop of every case has such
    an apex (checked here, at import)."""
    n = len(loop)
    for p in range(n):
        apex = loop[p]
        others = [loop[(p + k) % n] for k in range(2, n - 1)]  # the diagonals' far ends
        if not any(apex in f and e in f for f in face_edges for e in others):
            return [(apex, loop[(p + k) % n], loop[(p + k + 1) % n]) for k in range(1, n - 1)]
    raise AssertionError(f"no fan apex for the marching cubes loop {loop}")


def _build_tables():
    corners = _corner_offsets()
    edges = _edge_corners(corners)
    edge_of = {frozenset(e): k for k, e in enumerate(edges)}
    faces = _faces(corners)
    face_edges = [{edge_of[frozenset(p)] for p in zip(ring, ring[1:] + ring[:1])} for ring in faces]
    ranges, tris = [0], []
    for code in range(256):
        for loop in _case_loops(code, faces, edge_of):
            for tri in _fan(loop, face_edges):  # a loop of n edges is n - 2 triangles
                tris += tri
        ranges.append(len(tris))
    return corners, edges, tuple(ranges), tuple(tris)


MC_CUBE_CORNER_OFFSETS, MC_EDGE_TO_CORNERS, MC_CASE_TO_TRI_RANGE, MC_TRI_LOCAL_INDICES = _build_tables()


def _edge_geometry(corners, edges) -> tuple:
    """Per edge: (dx, dy, dz) of its lower corner, the axis it runs along, and that corner's number."""
    out = []
    for a, b in edges:
        axis = next(k for k in range(3) if corners[a][k] != corners[b][k])
        out.append((*corners[a], axis, a))
    return tuple(out)


_EDGE_GEOMETRY = _edge_geometry(MC_CUBE_CORNER_OFFSETS, MC_EDGE_TO_CORNERS)


class Tables(NamedTuple):
    """The case tables as arrays on one device."""

    ranges: array  # int32[257]: case c's triangle corners are tri_edges[ranges[c]:ranges[c + 1]]
    tri_edges: array  # int32[3 * 820]: each triangle's corners as edge numbers
    corners: array  # vec3i[8]: corner offsets
    geometry: array  # vec4i[12]: per edge, its lower corner's offset and its axis
    owners: array  # int32[12]: per edge, its lower corner's number


_tables: dict = {}


def device_tables(device) -> Tables:
    """The tables on ``device``, made once per device."""
    key = str(device)
    if key not in _tables:
        def ints(values, dtype=wp.int32):
            return wp.array(np.asarray(values, np.int32), dtype=dtype, device=device)

        _tables[key] = Tables(ints(MC_CASE_TO_TRI_RANGE), ints(MC_TRI_LOCAL_INDICES),
                              ints(MC_CUBE_CORNER_OFFSETS, wp.vec3i), ints([g[:4] for g in _EDGE_GEOMETRY], wp.vec4i),
                              ints([g[4] for g in _EDGE_GEOMETRY]))
    return _tables[key]


# ---- kernels -------------------------------------------------------------------------------------------


@wp.func
def _crosses(a: float, b: float, threshold: float):
    return (a < threshold) != (b < threshold)


@wp.func
def _edge_point(p0: wp.vec3, f0: float, p1: wp.vec3, f1: float, threshold: float):
    t = (threshold - f0) / (f1 - f0)
    return p0 + t * (p1 - p0)


@wp.kernel(enable_backward=False)
def _mark_edges(field: wp.array3d(dtype=wp.float32), threshold: float, crossed: wp.array(dtype=wp.int32)):
    i, j, k = wp.tid()
    nx, ny, nz = field.shape[0], field.shape[1], field.shape[2]
    e = ((i * ny + j) * nz + k) * 3
    f = field[i, j, k]
    crossed[e] = 0
    crossed[e + 1] = 0
    crossed[e + 2] = 0
    if i + 1 < nx:
        if _crosses(f, field[i + 1, j, k], threshold):
            crossed[e] = 1
    if j + 1 < ny:
        if _crosses(f, field[i, j + 1, k], threshold):
            crossed[e + 1] = 1
    if k + 1 < nz:
        if _crosses(f, field[i, j, k + 1], threshold):
            crossed[e + 2] = 1


@wp.kernel
def _edge_vertices(field: wp.array3d(dtype=wp.float32), threshold: float, lower: wp.vec3, delta: wp.vec3,
                   numbers: wp.array(dtype=wp.int32), verts: wp.array(dtype=wp.vec3)):
    # numbers: the inclusive scan of the crossed flags, so a crossed edge's vertex is numbers[e] - 1
    i, j, k = wp.tid()
    nx, ny, nz = field.shape[0], field.shape[1], field.shape[2]
    e = ((i * ny + j) * nz + k) * 3
    f = field[i, j, k]
    p = lower + wp.cw_mul(delta, wp.vec3(float(i), float(j), float(k)))
    if i + 1 < nx:
        g = field[i + 1, j, k]
        if _crosses(f, g, threshold):
            verts[numbers[e] - 1] = _edge_point(p, f, p + wp.vec3(delta[0], 0.0, 0.0), g, threshold)
    if j + 1 < ny:
        g = field[i, j + 1, k]
        if _crosses(f, g, threshold):
            verts[numbers[e + 1] - 1] = _edge_point(p, f, p + wp.vec3(0.0, delta[1], 0.0), g, threshold)
    if k + 1 < nz:
        g = field[i, j, k + 1]
        if _crosses(f, g, threshold):
            verts[numbers[e + 2] - 1] = _edge_point(p, f, p + wp.vec3(0.0, 0.0, delta[2]), g, threshold)


@wp.func
def _dense_case(field: wp.array3d(dtype=wp.float32), i: int, j: int, k: int, threshold: float,
                corners: wp.array(dtype=wp.vec3i)):
    code = int(0)
    for c in range(8):
        o = corners[c]
        if field[i + o[0], j + o[1], k + o[2]] < threshold:
            code = code | (1 << c)
    return code


@wp.kernel(enable_backward=False)
def _count_triangles(field: wp.array3d(dtype=wp.float32), threshold: float, ranges: wp.array(dtype=wp.int32),
                     corners: wp.array(dtype=wp.vec3i), counts: wp.array(dtype=wp.int32)):
    i, j, k = wp.tid()
    ny, nz = field.shape[1] - 1, field.shape[2] - 1
    code = _dense_case(field, i, j, k, threshold, corners)
    counts[(i * ny + j) * nz + k] = (ranges[code + 1] - ranges[code]) // 3


@wp.kernel(enable_backward=False)
def _emit_triangles(field: wp.array3d(dtype=wp.float32), threshold: float, ranges: wp.array(dtype=wp.int32),
                    tri_edges: wp.array(dtype=wp.int32), corners: wp.array(dtype=wp.vec3i),
                    geometry: wp.array(dtype=wp.vec4i), offsets: wp.array(dtype=wp.int32),
                    numbers: wp.array(dtype=wp.int32), indices: wp.array(dtype=wp.int32)):
    # offsets: the inclusive scan of the cells' triangle counts
    i, j, k = wp.tid()
    ny, nz = field.shape[1], field.shape[2]
    code = _dense_case(field, i, j, k, threshold, corners)
    begin = ranges[code]
    n = ranges[code + 1] - begin
    first = offsets[(i * (ny - 1) + j) * (nz - 1) + k] * 3 - n
    for t in range(n):
        g = geometry[tri_edges[begin + t]]
        e = (((i + g[0]) * ny + j + g[1]) * nz + k + g[2]) * 3 + g[3]
        indices[first + t] = numbers[e] - 1


# ---- extraction ----------------------------------------------------------------------------------------


def validate_field(field) -> None:
    """A 3-D float32 ``wp.array`` with at least two nodes per axis (Warp's errors and wording)."""
    if not isinstance(field, array):
        raise TypeError(f"Expected a wp.array for 'field', but got {type(field).__name__}.")
    if len(field.shape) != 3:
        raise ValueError(f"Expected a 3D array for 'field', but got an array with shape {field.shape}.")
    if any(n < 2 for n in field.shape):
        raise ValueError(f"Expected 'field' to have at least 2 nodes on each axis, but got an array with shape "
                         f"{field.shape}.")
    if field.dtype is not T.float32:
        raise TypeError(f"Expected a dtype of wp.float32 for 'field', but got {T.type_name(field.dtype)}.")


def resolve_domain_bounds(shape, lower, upper):
    """(lower corner, cell size per axis) for a grid of ``shape`` nodes: the node (i, j, k) sits at
    ``lower + (i, j, k) * delta``; by default node indices are the coordinates."""
    cells = [n - 1 for n in shape[:3]]
    lower = wp.vec3(0.0, 0.0, 0.0) if lower is None else wp.vec3(*_triple(lower, "lower"))
    upper = wp.vec3(*(float(c) for c in cells)) if upper is None else wp.vec3(*_triple(upper, "upper"))
    delta = wp.vec3(*((upper[a] - lower[a]) / cells[a] for a in range(3)))
    return lower, delta


def _triple(value, what):
    try:
        out = [float(x) for x in value]
    except TypeError:
        raise TypeError(f"'{what}' must be a vec3 or a sequence of 3 numbers, got {type(value).__name__}") from None
    if len(out) != 3:
        raise ValueError(f"'{what}' must have 3 components, got {len(out)}")
    return out


def _scan_total(counts: array) -> tuple:
    """(inclusive scan of ``counts``, its total), one host read."""
    scan = empty(counts.shape, dtype=T.int32, device=counts.device)
    utils.array_scan(counts, scan, inclusive=True)
    return scan, int(scan[-1:].numpy()[0]) if counts.size else 0


def extract_dense(field: array, threshold: float, lower, upper) -> tuple:
    """(verts, indices) of the ``threshold`` level set of ``field`` (validated by the caller)."""
    device = field.device
    lower, delta = resolve_domain_bounds(field.shape, lower, upper)
    threshold = float(np.float32(threshold))
    tab = device_tables(device)
    nodes = tuple(field.shape)
    crossed = empty(nodes[0] * nodes[1] * nodes[2] * 3, dtype=T.int32, device=device)
    wp.launch(_mark_edges, dim=nodes, inputs=[field, threshold, crossed], device=device, record_tape=False)
    numbers, n_verts = _scan_total(crossed)
    verts = wp.zeros(n_verts, dtype=wp.vec3, device=device, requires_grad=field.requires_grad)
    if n_verts:
        # recorded: the tape carries gradients from verts back to field
        wp.launch(_edge_vertices, dim=nodes, inputs=[field, threshold, lower, delta, numbers], outputs=[verts],
                  device=device)
    cells = tuple(n - 1 for n in nodes)
    counts = empty(cells[0] * cells[1] * cells[2], dtype=T.int32, device=device)
    wp.launch(_count_triangles, dim=cells, inputs=[field, threshold, tab.ranges, tab.corners, counts],
              device=device, record_tape=False)
    offsets, n_tris = _scan_total(counts)
    indices = empty(3 * n_tris, dtype=T.int32, device=device)
    if n_tris:
        wp.launch(_emit_triangles, dim=cells, inputs=[field, threshold, tab.ranges, tab.tri_edges, tab.corners,
                                                      tab.geometry, offsets, numbers, indices],
                  device=device, record_tape=False)
    return verts, indices


# ---- the classes -------------------------------------------------------------------------------------


class IsoSurfaceBase(ABC):
    """Isosurface extraction from a dense 3-D float32 field sampled at grid nodes (Warp's
    ``wp.geometry.IsoSurfaceBase``): construct with the grid's node counts, call :meth:`surface`
    for each field of that size and read :attr:`verts` / :attr:`indices`, or call :meth:`extract`
    once without state. Faces wind counter-clockwise seen from outside (field >= threshold)."""

    def __init__(self, nx: int, ny: int, nz: int, *, lower=None, upper=None):
        self.nx, self.ny, self.nz = nx, ny, nz
        self.lower = lower
        self.upper = upper
        self.verts = None
        self.indices = None

    def resize(self, nx: int, ny: int, nz: int) -> None:
        """New node counts, used by the next :meth:`surface`."""
        self.nx, self.ny, self.nz = nx, ny, nz

    def _check_field_shape(self, field) -> None:
        validate_field(field)
        if tuple(field.shape) != (self.nx, self.ny, self.nz):
            raise ValueError(f"Field shape {tuple(field.shape)} does not match context grid dimensions "
                             f"{(self.nx, self.ny, self.nz)}.")

    @abstractmethod
    def surface(self, field, threshold: float) -> None:
        """Extract the ``threshold`` level set of ``field`` into :attr:`verts` and :attr:`indices`."""

    @classmethod
    @abstractmethod
    def extract(cls, field, threshold: float = 0.0, *, lower=None, upper=None) -> tuple:
        """``(verts, indices)`` of the ``threshold`` level set of ``field``, without state."""


class _Unset:
    def __repr__(self):
        return "None"


_UNSET = _Unset()


def _deprecated(message: str) -> None:
    warn_user(message, DeprecationWarning)


class IsoSurfaceMarchingCubes(IsoSurfaceBase):
    """Marching cubes over a grid of ``nx * ny * nz`` nodes (Warp's
    ``wp.geometry.IsoSurfaceMarchingCubes``; ``wp.MarchingCubes`` is the same class). ``lower`` and
    ``upper`` place the nodes (0, 0, 0) and (nx-1, ny-1, nz-1); by default node indices are the
    coordinates. Gradients flow from :attr:`verts` back to the field on a ``wp.Tape``.

    ``max_verts``, ``max_tris`` and ``device`` are the older ``wp.MarchingCubes`` arguments: the sizes
    are ignored (outputs are sized by each extraction); with ``device``, fields must live there."""

    CUBE_CORNER_OFFSETS: Final[tuple] = MC_CUBE_CORNER_OFFSETS
    EDGE_TO_CORNERS: Final[tuple] = MC_EDGE_TO_CORNERS
    CASE_TO_TRI_RANGE: Final[tuple] = MC_CASE_TO_TRI_RANGE
    TRI_LOCAL_INDICES: Final[tuple] = MC_TRI_LOCAL_INDICES

    def __init__(self, nx: int, ny: int, nz: int, lower=None, upper=None, *, max_verts=None, max_tris=None,
                 device=None, domain_bounds_lower_corner=_UNSET, domain_bounds_upper_corner=_UNSET):
        lower = self._legacy_bound(lower, domain_bounds_lower_corner, "lower", "domain_bounds_lower_corner")
        upper = self._legacy_bound(upper, domain_bounds_upper_corner, "upper", "domain_bounds_upper_corner")
        super().__init__(nx, ny, nz, lower=lower, upper=upper)
        self.max_verts, self.max_tris = max_verts, max_tris
        self.device = None if device is None else get_device(device)

    @staticmethod
    def _legacy_bound(value, legacy, name, legacy_name):
        if legacy is _UNSET:
            return value
        if value is not None and legacy is not None:
            raise TypeError(f"Cannot specify both `{name}` and `{legacy_name}`.")
        _deprecated(f"IsoSurfaceMarchingCubes() argument `{legacy_name}` is deprecated and will be removed in a "
                    f"future version of Warp. Use `{name}` instead.")
        return value if legacy is None else legacy

    @property
    def domain_bounds_lower_corner(self):
        _deprecated("IsoSurfaceMarchingCubes.domain_bounds_lower_corner is deprecated. Use `lower` instead.")
        return self.lower

    @domain_bounds_lower_corner.setter
    def domain_bounds_lower_corner(self, value):
        _deprecated("IsoSurfaceMarchingCubes.domain_bounds_lower_corner is deprecated. Use `lower` instead.")
        self.lower = value

    @property
    def domain_bounds_upper_corner(self):
        _deprecated("IsoSurfaceMarchingCubes.domain_bounds_upper_corner is deprecated. Use `upper` instead.")
        return self.upper

    @domain_bounds_upper_corner.setter
    def domain_bounds_upper_corner(self, value):
        _deprecated("IsoSurfaceMarchingCubes.domain_bounds_upper_corner is deprecated. Use `upper` instead.")
        self.upper = value

    def surface(self, field, threshold: float) -> None:
        """Extract the ``threshold`` level set of ``field`` (shape ``(nx, ny, nz)``, float32) into
        :attr:`verts` (vec3) and :attr:`indices` (int32, three per triangle)."""
        self._check_field_shape(field)
        if self.device is not None and field.device != self.device:
            raise ValueError(f"'field' must live on this MarchingCubes' device ({self.device}), got {field.device}")
        self.verts, self.indices = self.extract(field, threshold, lower=self.lower, upper=self.upper)

    @classmethod
    def extract(cls, field, threshold: float = 0.0, *, lower=None, upper=None) -> tuple:
        """``(verts, indices)``: the ``threshold`` level set of ``field`` (a 3-D float32 array) as a
        vec3 array and a flat int32 array of triangle corners, computed on ``field``'s device."""
        validate_field(field)
        return extract_dense(field, threshold, lower, upper)

    @staticmethod
    def extract_surface_marching_cubes(field, threshold: float = 0.0, domain_bounds_lower_corner=None,
                                       domain_bounds_upper_corner=None) -> tuple:
        """Deprecated spelling of :meth:`extract`."""
        _deprecated("IsoSurfaceMarchingCubes.extract_surface_marching_cubes() is deprecated and will be removed "
                    "in a future version of Warp. Use IsoSurfaceMarchingCubes.extract() instead.")
        return IsoSurfaceMarchingCubes.extract(field, threshold, lower=domain_bounds_lower_corner,
                                               upper=domain_bounds_upper_corner)


#: Warp's older name: the same class, so isinstance agrees both ways
MarchingCubes = IsoSurfaceMarchingCubes
