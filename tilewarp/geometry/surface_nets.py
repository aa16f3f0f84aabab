"""Surface nets on a dense grid (Warp's ``wp.geometry.IsoSurfaceNets``): the level set
``field == threshold`` of a 3-D float32 field sampled at grid nodes, as quads or triangles.

The method is the uniform meshing path of OpenVDB's volume-to-mesh tool, which Warp follows: every
cell the surface passes through gets one vertex per *sheet* of the surface inside it (an *edge
group*: the crossed cell edges one sheet cuts), placed at the average of those edges' crossing
points; every crossed grid edge with four cells around it becomes one quad joining those cells'
vertices for the sheet through it. A surface inside the grid is therefore closed and manifold.

The tables are generated here from the cube's geometry (``_build_tables``), not copied:
* the *edge groups* of each of the 256 inside/outside patterns (bit c: corner c is inside, its
  value below the threshold): on every cube face the crossed edges pair up around the face's
  corners; a face whose diagonal corners agree (an *ambiguous* face) joins its two inside corners,
  so its two crossings around each outside corner pair up. Groups are numbered by their lowest edge.
  (OpenVDB's table partitions the edges the same way; where a cell has several sheets it may number
  them in another order, so such a cell can list its vertices in another order than Warp does.)
* the *ambiguous face* of a pattern: the one face that is ambiguous, when exactly one is and at
  most four corners are inside; else 0. Two cells sharing such a face, each with it as their only
  ambiguous face (from the two sides), both complement their pattern, i.e. join the *outside*
  corners across it instead; both sides agree, so the surface stays watertight (OpenVDB's
  correction of cell signs, which Warp applies).

Extraction runs as tilewarp kernels on the field's device, deterministic (scans, no atomics):
1. per cell: its corrected pattern, which of its sheets reach a quad (a sheet whose crossed edges
   all lie on the grid's boundary has no four cells around any of them, and is dropped), how many
   vertices and quads it makes; inclusive scans number both, cell-major (the cell order is C order);
2. per cell: its vertices (the one differentiable step, recorded on the tape, so gradients flow
   from ``verts`` back to ``field``);
3. per cell: the quads around its three edges at its lower corner, as quads or two triangles each.
"""
from __future__ import annotations

from typing import Final, Literal, NamedTuple

import numpy as np

import tilewarp as wp

from ..runtime.array import array, empty, zeros
from .marching_cubes import IsoSurfaceBase, _scan_total, resolve_domain_bounds, validate_field

# ---- the tables ----------------------------------------------------------------------------------


def _corner_offsets() -> tuple:
    """OpenVDB's corner numbering: the y = 0 face's corners around from the origin (x first), then
    the y = 1 face's the same way; corner c is bit c of a pattern."""
    ring = ((0, 0), (1, 0), (1, 1), (0, 1))  # (x, z)
    return tuple((x, y, z) for y in (0, 1) for x, z in ring)


def _edge_corners(corners) -> tuple:
    """The 12 edges as corner pairs, lower coordinate first: the y = 0 ring, the y = 1 ring, then
    the edges along y (corner c to c + 4)."""
    out = []
    for ring in ((0, 1, 2, 3), (4, 5, 6, 7)):
        for a, b in zip(ring, ring[1:] + ring[:1]):
            out.append((a, b) if sum(corners[a]) < sum(corners[b]) else (b, a))
    return tuple(out + [(c, c + 4) for c in range(4)])


#: the cube faces by OpenVDB's face number 1..6 as (axis, side): z = 0, x = 1, z = 1, x = 0, y = 0,
#: y = 1; face f and _OPPOSITE_FACE[f] are the two sides of one face shared by neighbouring cells
_FACES: Final[tuple] = ((2, 0), (0, 1), (2, 1), (0, 0), (1, 0), (1, 1))
_OPPOSITE_FACE: Final[tuple] = (0, 3, 4, 1, 2, 6, 5)


def _face_ring(corners, edge_of, axis: int, side: int) -> list:
    """The face's 4 corners in order around it."""
    on_face = [c for c in range(8) if corners[c][axis] == side]
    ring = [on_face[0]]
    while len(ring) < 4:
        ring.append(next(c for c in on_face if c not in ring and frozenset((ring[-1], c)) in edge_of))
    return ring


def _edge_groups(code: int, rings, edges, edge_of) -> list:
    """Per edge, its group number (1..4) in pattern ``code``, 0 where the edge is not crossed."""
    inside = [(code >> c) & 1 for c in range(8)]
    root = list(range(12))

    def find(e):
        while root[e] != e:
            e = root[e]
        return e

    for ring in rings:
        sides = list(zip(ring, ring[1:] + ring[:1]))
        crossed = [edge_of[frozenset(s)] for s in sides if inside[s[0]] != inside[s[1]]]
        if len(crossed) == 2:  # one sheet crosses the face
            root[find(crossed[0])] = find(crossed[1])
        elif len(crossed) == 4:  # ambiguous: each outside corner is cut off by a sheet of its own
            for k, c in enumerate(ring):
                if not inside[c]:
                    root[find(edge_of[frozenset((ring[k - 1], c))])] = find(edge_of[frozenset((c, ring[(k + 1) % 4]))])
    numbers, out = {}, []
    for e, (a, b) in enumerate(edges):
        out.append(numbers.setdefault(find(e), len(numbers) + 1) if inside[a] != inside[b] else 0)
    return out


def _ambiguous_faces(code: int, corners) -> list:
    """Face numbers (1..6) whose two inside corners are diagonal."""
    out = []
    for number, (axis, side) in enumerate(_FACES, 1):
        inside = [c for c in range(8) if corners[c][axis] == side and (code >> c) & 1]
        if len(inside) == 2 and sum(abs(p - q) for p, q in zip(corners[inside[0]], corners[inside[1]])) == 2:
            out.append(number)
    return out


def _build_tables():
    corners = _corner_offsets()
    edges = _edge_corners(corners)
    edge_of = {frozenset(e): k for k, e in enumerate(edges)}
    rings = [_face_ring(corners, edge_of, axis, side) for axis, side in _FACES]
    group_table, ambiguous = [], []
    for code in range(256):
        groups = _edge_groups(code, rings, edges, edge_of)
        group_table += [max(groups)] + groups
        faces = _ambiguous_faces(code, corners)
        ambiguous.append(faces[0] if len(faces) == 1 and bin(code).count("1") <= 4 else 0)
    return corners, edges, tuple(group_table), tuple(ambiguous)


#: corner offsets, edges as corner pairs, per pattern [group count, 12 edge groups], per pattern the
#: ambiguous face number (names as in Warp's module, for scripts that inspect them)
_SN_CORNER_OFFSETS, _SN_EDGE_TO_CORNERS, _SN_EDGE_GROUP_TABLE, _SN_AMBIGUOUS_FACE = _build_tables()

_SN_TOPOLOGIES: Final[tuple] = ("triangle", "quad")


def _quad_rings() -> tuple:
    """For each axis, the 4 cells around a cell's edge along it at its lower corner, in the order the
    quad lists them, as (cell offset, table column of that cell's copy of the edge), and whether the
    quad is reversed when corner 0 is inside (else when it is outside). The orders make faces wind
    counter-clockwise seen from outside, and fix which diagonal splits each quad, as Warp's do."""
    rings = {0: ((0, 0), (-1, 0), (-1, -1), (0, -1)),  # (y, z) offsets around the x edge
             1: ((0, 0), (0, -1), (-1, -1), (-1, 0)),  # (x, z) offsets around the y edge
             2: ((0, 0), (0, -1), (-1, -1), (-1, 0))}  # (x, y) offsets around the z edge
    out = []
    for axis in range(3):
        others = [a for a in range(3) if a != axis]
        entries = []
        for du, dv in rings[axis]:
            offset = [0, 0, 0]
            offset[others[0]], offset[others[1]] = du, dv
            local = tuple(-o for o in offset)  # the edge's lower node, seen from that cell
            edge = next(e for e, (a, b) in enumerate(_SN_EDGE_TO_CORNERS)
                        if _SN_CORNER_OFFSETS[a] == local and _SN_CORNER_OFFSETS[b][axis] == 1)
            entries.append((tuple(offset), edge + 1))
        out.append((tuple(entries), axis == 2))
    return tuple(out)


_QUAD_RINGS = _quad_rings()


class Tables(NamedTuple):
    """The tables as arrays on one device."""

    groups: array  # int32[256 * 13]: _SN_EDGE_GROUP_TABLE
    ambiguous: array  # int32[256]
    corners: array  # vec3i[8]
    edges: array  # vec4i[12]: per edge, its lower corner's offset and the axis it runs along
    face_step: array  # vec3i[7]: per face number, the offset of the cell across it
    opposite: array  # int32[7]
    quad_cells: array  # vec4i[12]: axis * 4 + k: the k-th cell's offset around the axis's edge, its column
    quad_flip: array  # int32[3]: 1 where the axis's quad is reversed when corner 0 is inside


_tables: dict = {}


def device_tables(device) -> Tables:
    """The tables on ``device``, made once per device."""
    key = str(device)
    if key not in _tables:
        def ints(values, dtype=wp.int32):
            return wp.array(np.asarray(values, np.int32), dtype=dtype, device=device)

        edges = []
        for a, b in _SN_EDGE_TO_CORNERS:
            axis = next(k for k in range(3) if _SN_CORNER_OFFSETS[a][k] != _SN_CORNER_OFFSETS[b][k])
            edges.append((*_SN_CORNER_OFFSETS[a], axis))
        steps = [(0, 0, 0)]
        for axis, side in _FACES:
            step = [0, 0, 0]
            step[axis] = 1 if side else -1
            steps.append(tuple(step))
        quad_cells = [(*offset, column) for ring, _ in _QUAD_RINGS for offset, column in ring]
        _tables[key] = Tables(ints(_SN_EDGE_GROUP_TABLE), ints(_SN_AMBIGUOUS_FACE),
                              ints(_SN_CORNER_OFFSETS, wp.vec3i), ints(edges, wp.vec4i), ints(steps, wp.vec3i),
                              ints(_OPPOSITE_FACE), ints(quad_cells, wp.vec4i),
                              ints([int(flip) for _, flip in _QUAD_RINGS]))
    return _tables[key]


# ---- kernels -----------------------------------------------------------------------------------------

# a cell's flags: its corrected pattern (bits 0-7), corner 0 inside (bit 8), its x / y / z edges at
# corner 0 crossed (bits 9-11), which of its groups make a vertex (bits 12-15); 0 for a cell the
# surface misses
_INSIDE: Final[int] = 1 << 8
_KEPT_SHIFT: Final[int] = 12


@wp.func
def _pattern(field: wp.array3d(dtype=wp.float32), i: int, j: int, k: int, threshold: float,
             corners: wp.array(dtype=wp.vec3i)):
    code = int(0)
    for c in range(8):
        o = corners[c]
        if field[i + o[0], j + o[1], k + o[2]] < threshold:
            code = code | (1 << c)
    return code


@wp.func
def _bits(mask: int):
    n = int(0)
    for b in range(4):
        n += (mask >> b) & 1
    return n


@wp.func
def _interior(i: int, j: int, k: int, e: wp.vec4i, shape: wp.vec3i):
    # a grid edge has four cells around it iff its node lies off the grid's boundary on both axes
    # across it (it runs along e[3])
    node = wp.vec3i(i + e[0], j + e[1], k + e[2])
    inner = True
    for a in range(3):
        if a != e[3]:
            if node[a] < 1 or node[a] > shape[a] - 2:
                inner = False
    return inner


@wp.func
def _corrected(field: wp.array3d(dtype=wp.float32), i: int, j: int, k: int, threshold: float, code: int,
               tab_ambiguous: wp.array(dtype=wp.int32), face_step: wp.array(dtype=wp.vec3i),
               opposite: wp.array(dtype=wp.int32), corners: wp.array(dtype=wp.vec3i)):
    face = tab_ambiguous[code]
    out = code
    if face != 0:
        s = face_step[face]
        ni, nj, nk = i + s[0], j + s[1], k + s[2]
        if ni >= 0 and nj >= 0 and nk >= 0 and ni < field.shape[0] - 1 and nj < field.shape[1] - 1 \
                and nk < field.shape[2] - 1:
            if tab_ambiguous[_pattern(field, ni, nj, nk, threshold, corners)] == opposite[face]:
                out = 255 - code
    return out


@wp.kernel(enable_backward=False)
def _classify(field: wp.array3d(dtype=wp.float32), threshold: float, groups: wp.array(dtype=wp.int32),
              ambiguous: wp.array(dtype=wp.int32), corners: wp.array(dtype=wp.vec3i),
              edges: wp.array(dtype=wp.vec4i), face_step: wp.array(dtype=wp.vec3i),
              opposite: wp.array(dtype=wp.int32), flags: wp.array3d(dtype=wp.int32),
              point_counts: wp.array(dtype=wp.int32), quad_counts: wp.array(dtype=wp.int32)):
    i, j, k = wp.tid()
    c = (i * flags.shape[1] + j) * flags.shape[2] + k
    flags[i, j, k] = 0
    point_counts[c] = 0
    quad_counts[c] = 0
    code = _pattern(field, i, j, k, threshold, corners)
    if code == 0 or code == 255:
        return
    shape = wp.vec3i(field.shape[0], field.shape[1], field.shape[2])
    signs = _corrected(field, i, j, k, threshold, code, ambiguous, face_step, opposite, corners)
    kept = int(0)
    for e in range(12):
        g = groups[signs * 13 + 1 + e]
        if g != 0:
            if _interior(i, j, k, edges[e], shape):
                kept = kept | (1 << (g - 1))
    inside = code & 1
    # the edges at corner 0 along x, y, z are the edges to corners 1, 4, 3
    x_cut = int(inside != ((code >> 1) & 1))
    y_cut = int(inside != ((code >> 4) & 1))
    z_cut = int(inside != ((code >> 3) & 1))
    flags[i, j, k] = signs | (inside << 8) | (x_cut << 9) | (y_cut << 10) | (z_cut << 11) | (kept << 12)
    point_counts[c] = _bits(kept)
    quads = int(0)
    if x_cut != 0 and j > 0 and k > 0:
        quads += 1
    if y_cut != 0 and i > 0 and k > 0:
        quads += 1
    if z_cut != 0 and i > 0 and j > 0:
        quads += 1
    quad_counts[c] = quads


@wp.func
def _group_point(field: wp.array3d(dtype=wp.float32), i: int, j: int, k: int, threshold: float, signs: int,
                 g: int, groups: wp.array(dtype=wp.int32), edges: wp.array(dtype=wp.vec4i)):
    # the mean of the group's crossing points, in the cell's index space
    acc = wp.vec3(0.0, 0.0, 0.0)
    n = float(0.0)
    for e in range(12):
        if groups[signs * 13 + 1 + e] == g:
            d = edges[e]
            a = wp.vec3i(i + d[0], j + d[1], k + d[2])
            b = wp.vec3i(a[0] + int(d[3] == 0), a[1] + int(d[3] == 1), a[2] + int(d[3] == 2))
            f0 = field[a[0], a[1], a[2]]
            f1 = field[b[0], b[1], b[2]]
            t = (threshold - f0) / (f1 - f0)
            acc = acc + wp.vec3(float(d[0]), float(d[1]), float(d[2])) + t * wp.vec3(b - a)
            n = n + 1.0
    return acc / n


@wp.kernel
def _points(field: wp.array3d(dtype=wp.float32), threshold: float, groups: wp.array(dtype=wp.int32),
            edges: wp.array(dtype=wp.vec4i), flags: wp.array3d(dtype=wp.int32), offsets: wp.array(dtype=wp.int32),
            lower: wp.vec3, delta: wp.vec3, verts: wp.array(dtype=wp.vec3)):
    # offsets: the inclusive scan of the cells' vertex counts
    i, j, k = wp.tid()
    f = flags[i, j, k]
    kept = (f >> 12) & 15
    if kept != 0:
        signs = f & 255
        slot = offsets[(i * flags.shape[1] + j) * flags.shape[2] + k] - _bits(kept)
        cell = wp.vec3(float(i), float(j), float(k))
        for g in range(1, 5):
            if (kept >> (g - 1)) & 1 != 0:
                p = cell + _group_point(field, i, j, k, threshold, signs, g, groups, edges)
                verts[slot] = lower + wp.cw_mul(delta, p)
                slot += 1


@wp.func
def _vertex(flags: wp.array3d(dtype=wp.int32), offsets: wp.array(dtype=wp.int32), groups: wp.array(dtype=wp.int32),
            i: int, j: int, k: int, column: int):
    # the output number of the vertex that cell (i, j, k) makes for the group of its edge `column`
    f = flags[i, j, k]
    kept = (f >> 12) & 15
    g = groups[(f & 255) * 13 + column]
    first = offsets[(i * flags.shape[1] + j) * flags.shape[2] + k] - _bits(kept)
    return first + _bits(kept & ((1 << (g - 1)) - 1))


@wp.kernel(enable_backward=False)
def _faces(flags: wp.array3d(dtype=wp.int32), groups: wp.array(dtype=wp.int32), offsets: wp.array(dtype=wp.int32),
           quad_offsets: wp.array(dtype=wp.int32), quad_cells: wp.array(dtype=wp.vec4i),
           quad_flip: wp.array(dtype=wp.int32), quads: int, indices: wp.array(dtype=wp.int32)):
    # quad_offsets: the inclusive scan of the cells' quad counts; quads: 1 for quads, 0 for triangles
    i, j, k = wp.tid()
    f = flags[i, j, k]
    if f == 0:
        return
    c = (i * flags.shape[1] + j) * flags.shape[2] + k
    q = quad_offsets[c]
    n = q - (quad_offsets[c - 1] if c > 0 else 0)
    q = q - n
    inside = (f >> 8) & 1
    cell = wp.vec3i(i, j, k)
    for axis in range(3):
        if (f >> (9 + axis)) & 1 != 0 and cell[(axis + 1) % 3] > 0 and cell[(axis + 2) % 3] > 0:
            v = wp.vec4i(0, 0, 0, 0)
            for r in range(4):
                e = quad_cells[axis * 4 + r]
                v[r] = _vertex(flags, offsets, groups, i + e[0], j + e[1], k + e[2], e[3])
            if inside == quad_flip[axis]:
                v = wp.vec4i(v[3], v[2], v[1], v[0])
            if quads != 0:
                for r in range(4):
                    indices[4 * q + r] = v[r]
            else:
                indices[6 * q + 0] = v[0]
                indices[6 * q + 1] = v[1]
                indices[6 * q + 2] = v[2]
                indices[6 * q + 3] = v[0]
                indices[6 * q + 4] = v[2]
                indices[6 * q + 5] = v[3]
            q += 1


# ---- extraction ----------------------------------------------------------------------------------------


def _validate_topology(topology) -> None:
    if topology not in _SN_TOPOLOGIES:
        raise ValueError(f"Expected 'topology' to be one of {', '.join(repr(t) for t in _SN_TOPOLOGIES)}, "
                         f"but got {topology!r}.")


def extract_nets(field: array, threshold: float, lower, upper, topology: str) -> tuple:
    """(verts, indices) of the ``threshold`` level set of ``field`` (validated by the caller)."""
    device = field.device
    lower, delta = resolve_domain_bounds(field.shape, lower, upper)
    threshold = float(np.float32(threshold))
    tab = device_tables(device)
    cells = tuple(n - 1 for n in field.shape)
    n_cells = cells[0] * cells[1] * cells[2]
    flags = empty(cells, dtype=wp.int32, device=device)
    point_counts = empty(n_cells, dtype=wp.int32, device=device)
    quad_counts = empty(n_cells, dtype=wp.int32, device=device)
    wp.launch(_classify, dim=cells, inputs=[field, threshold, tab.groups, tab.ambiguous, tab.corners, tab.edges,
                                            tab.face_step, tab.opposite, flags, point_counts, quad_counts],
              device=device, record_tape=False)
    offsets, n_points = _scan_total(point_counts)
    quad_offsets, n_quads = _scan_total(quad_counts)
    verts = zeros(n_points, dtype=wp.vec3, device=device, requires_grad=field.requires_grad)
    quads = topology == "quad"
    indices = empty((4 if quads else 6) * n_quads, dtype=wp.int32, device=device)
    if n_points:
        # recorded: the tape carries gradients from verts back to field
        wp.launch(_points, dim=cells, inputs=[field, threshold, tab.groups, tab.edges, flags, offsets, lower, delta],
                  outputs=[verts], device=device)
    if n_quads:
        wp.launch(_faces, dim=cells, inputs=[flags, tab.groups, offsets, quad_offsets, tab.quad_cells, tab.quad_flip,
                                             int(quads), indices], device=device, record_tape=False)
    return verts, indices


class IsoSurfaceNets(IsoSurfaceBase):
    """Surface nets over a grid of ``nx * ny * nz`` nodes (Warp's ``wp.geometry.IsoSurfaceNets``):
    one vertex per sheet of the surface in each cell it crosses, at the mean of the sheet's edge
    crossings, and one quad per crossed grid edge with four cells around it. ``lower`` and ``upper``
    place the nodes (0, 0, 0) and (nx-1, ny-1, nz-1); by default node indices are the coordinates.
    ``topology`` selects the faces: ``"triangle"`` (each quad split along its first diagonal) or
    ``"quad"``. Faces wind counter-clockwise seen from outside (field >= threshold). Gradients flow
    from :attr:`verts` back to the field on a ``wp.Tape``."""

    def __init__(self, nx: int, ny: int, nz: int, *, lower=None, upper=None,
                 topology: Literal["triangle", "quad"] = "triangle"):
        _validate_topology(topology)
        super().__init__(nx, ny, nz, lower=lower, upper=upper)
        self.topology = topology

    def surface(self, field, threshold: float) -> None:
        """Extract the ``threshold`` level set of ``field`` (shape ``(nx, ny, nz)``, float32) into
        :attr:`verts` (vec3) and :attr:`indices` (int32, three per triangle or four per quad)."""
        self._check_field_shape(field)
        self.verts, self.indices = self.extract(field, threshold, lower=self.lower, upper=self.upper,
                                                topology=self.topology)

    @classmethod
    def extract(cls, field, threshold: float = 0.0, *, lower=None, upper=None,
                topology: Literal["triangle", "quad"] = "triangle") -> tuple:
        """``(verts, indices)``: the ``threshold`` level set of ``field`` (a 3-D float32 array) as a
        vec3 array and a flat int32 array of face corners (three per triangle, four per quad),
        computed on ``field``'s device."""
        validate_field(field)
        _validate_topology(topology)
        return extract_nets(field, threshold, lower, upper, topology)
