"""Building NanoVDB grids on the host (NumPy), and reading their leaves back.

``Topology`` sorts a set of leaves (8^3 voxel blocks, each with a mask of its active voxels) into
the order a breadth-first NanoVDB tree stores them: root tiles by coordinate, then each upper node's lower
nodes by their slot in it, then each lower node's leaves by theirs. ``build`` writes the buffer:
headers, root tiles, internal nodes whose child masks and tables point to the next level, leaves
with their masks and (value grids) background values, or (index grids) their first index and the
packed prefix counts that map a voxel to its rank. A rebuildable grid reserves node slots for given
capacities, so later topologies fit in the same buffer (same size, same id).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import nanovdb as nv

I32_MIN, I32_MAX = -(2 ** 31), 2 ** 31 - 1


class Capacity(NamedTuple):
    """Node slots reserved in a buffer: upper nodes (and root tiles), lower nodes, leaves."""

    upper: int
    lower: int
    leaf: int


class Topology:
    """Leaves in tree order (root tiles by coordinate, then child slots), and their parents.

    ``origins`` (L, 3) int32 leaf origins (multiples of 8, unique), ``masks`` (L, 8) uint64 active
    voxels (bit n of the leaf: x << 6 | y << 3 | z)."""

    def __init__(self, origins: np.ndarray, masks: np.ndarray):
        origins = np.asarray(origins, dtype=np.int32).reshape(-1, 3)
        keys = nv.root_key(origins)
        nu = _slot(origins, 4095, 7, 5)
        nl = _slot(origins, 127, 3, 4)
        upper = origins.astype(np.int64) >> 12  # root tiles in the signed order of their coordinates, as
        order = np.lexsort((nl, nu, upper[:, 2], upper[:, 1], upper[:, 0]))  # NanoVDB's builder has them
        self.origins, self.masks = origins[order], np.asarray(masks, dtype=np.uint64).reshape(-1, 8)[order]
        keys, nu, nl = keys[order], nu[order], nl[order]
        n = len(order)
        new_upper = np.ones(n, bool)
        new_upper[1:] = keys[1:] != keys[:-1]
        new_lower = new_upper.copy()
        new_lower[1:] |= nu[1:] != nu[:-1]
        self.leaf_lower = np.cumsum(new_lower) - 1  # the lower node of each leaf
        self.leaf_slot = nl  # its slot in that lower node
        self.lower_first = np.flatnonzero(new_lower)  # first leaf of each lower node
        self.lower_upper = (np.cumsum(new_upper) - 1)[new_lower]  # the upper node of each lower node
        self.lower_slot = nu[new_lower]
        self.upper_first_lower = np.flatnonzero(np.r_[True, self.lower_upper[1:] != self.lower_upper[:-1]]) \
            if len(self.lower_upper) else np.zeros(0, np.int64)
        self.upper_keys = keys[new_upper]
        bits = np.unpackbits(self.masks.astype("<u8").view(np.uint8).reshape(n, 64), axis=1, bitorder="little")
        self.word_counts = bits.reshape(n, 8, 64).sum(axis=2).astype(np.int64)
        self.bbox_min, self.bbox_max = _leaf_bboxes(bits.reshape(n, 8, 8, 8), self.origins)

    @property
    def counts(self) -> Capacity:
        return Capacity(len(self.upper_keys), len(self.lower_first), len(self.origins))

    @property
    def voxel_count(self) -> int:
        return int(self.word_counts.sum())


def _slot(origins, mask, shift, bits):
    c = (origins.astype(np.int64) & mask) >> shift
    return (c[:, 0] << (2 * bits)) | (c[:, 1] << bits) | c[:, 2]


def _leaf_bboxes(active, origins):
    """Per leaf, the first and last active voxel along each axis (the leaf's bbox of active voxels)."""
    lo, hi = np.zeros_like(origins), np.zeros_like(origins)
    for axis in range(3):
        other = tuple(a for a in (1, 2, 3) if a != axis + 1)
        along = active.any(axis=other)  # (L, 8)
        lo[:, axis] = np.argmax(along, axis=1)
        hi[:, axis] = 7 - np.argmax(along[:, ::-1], axis=1)
    return origins + lo, origins + hi


def make_map(matrix, translation) -> dict:
    """The grid map of an index-to-world transform ``x -> matrix @ ijk + translation``."""
    m32 = np.asarray(matrix, dtype=np.float32).reshape(3, 3)
    t32 = np.asarray(translation, dtype=np.float32).reshape(3)
    md = m32.astype(np.float64)
    inv = np.linalg.inv(md)
    return {"matf": m32.reshape(9), "invmatf": inv.astype(np.float32).reshape(9), "vecf": t32, "taperf": 1.0,
            "matd": md.reshape(9), "invmatd": inv.reshape(9), "vecd": t32.astype(np.float64), "taperd": 1.0}


def build(topo: Topology, code: int, background: bytes, grid_map: dict, capacity: Capacity | None = None,
          head_only: bool = False):
    """A grid buffer of type ``code`` (``nanovdb.TYPES``) holding ``topo``; value leaves are filled
    with ``background`` (the value's bytes), index leaves numbered. ``head_only`` (an empty topology):
    only the headers and the root, which is all such a grid writes, and the size of the whole."""
    L = nv.LAYOUTS[code]
    cap = capacity or topo.counts
    root = nv.GRID_SIZE + nv.TREE_SIZE
    upper0 = root + L.root_size + cap.upper * L.tile_size
    lower0 = upper0 + cap.upper * L.upper_size
    leaf0 = lower0 + cap.lower * L.lower_size
    size = leaf0 + cap.leaf * L.leaf_size
    if head_only and len(topo.origins):
        raise ValueError("head_only builds an empty topology")
    buf = np.zeros(root + L.root_size if head_only else size, np.uint8)
    n_up, n_lo, _ = topo.counts
    value = np.frombuffer(background, np.uint8) if nv.TYPES[code].leaf == "values" else np.zeros(L.value_size, np.uint8)
    _root(buf, topo, L, root, upper0, value)
    lower_bbox = _bbox_reduce(topo.bbox_min, topo.bbox_max, topo.lower_first)
    upper_bbox = _bbox_reduce(*lower_bbox, topo.upper_first_lower)
    _internal(buf, L, (upper0, L.upper_size, L.upper_table, nv.UPPER_CHILD_MASK, 4096), n_up, lower0, L.lower_size,
              topo.lower_upper, topo.lower_slot, upper_bbox, value)
    _internal(buf, L, (lower0, L.lower_size, L.lower_table, nv.LOWER_CHILD_MASK, 512), n_lo, leaf0, L.leaf_size,
              topo.leaf_lower, topo.leaf_slot, lower_bbox, value)
    _leaves(buf, topo, L, code, leaf0, value)
    _headers(buf, topo, code, grid_map, size, (leaf0, lower0, upper0, root))
    return (buf, size) if head_only else buf


def _bbox_reduce(lo, hi, starts):
    if len(lo) == 0:
        return lo, hi
    return np.minimum.reduceat(lo, starts, axis=0), np.maximum.reduceat(hi, starts, axis=0)


def _root(buf, topo, L, root, upper0, value):
    n_up = topo.counts.upper
    lo = topo.bbox_min.min(axis=0) if len(topo.origins) else np.full(3, I32_MAX)
    hi = topo.bbox_max.max(axis=0) if len(topo.origins) else np.full(3, I32_MIN)
    buf[root:root + 24].view("<i4")[:] = np.r_[lo, hi]
    buf[root + 24:root + 28].view("<u4")[0] = n_up
    buf[root + L.root_background:root + L.root_background + L.value_size] = value
    tiles = buf[root + L.root_size:root + L.root_size + n_up * L.tile_size].reshape(n_up, L.tile_size)
    tiles[:, 0:8].view("<u8")[:, 0] = topo.upper_keys
    tiles[:, 8:16].view("<i8")[:, 0] = upper0 + np.arange(n_up, dtype=np.int64) * L.upper_size - root
    tiles[:, L.tile_value:L.tile_value + L.value_size] = value


def _internal(buf, L, level, count, child0, child_size, parents, slots, bbox, value):
    """Upper or lower nodes (``level``: start, size, table and child mask offsets, mask bytes): the
    bboxes of their children, child masks, tables of child offsets and background tiles elsewhere."""
    start, node_size, table, child_mask, mask_bytes = level
    if count == 0:
        return
    nodes = buf[start:start + count * node_size].reshape(count, node_size)
    nodes[:, 0:12].view("<i4")[:] = bbox[0]
    nodes[:, 12:24].view("<i4")[:] = bbox[1]
    entries = nodes[:, table:].reshape(count, -1, L.table_stride)
    entries[:, :, :L.value_size] = value
    parents = np.asarray(parents, dtype=np.int64)
    slots = np.asarray(slots, dtype=np.int64)
    children = np.arange(len(parents), dtype=np.int64)
    entries[:, :, :8].view("<i8")[parents, slots, 0] = child0 + children * child_size - (start + parents * node_size)
    masks = nodes[:, child_mask:child_mask + mask_bytes].view("<u4")
    np.bitwise_or.at(masks, (parents, slots >> 5), np.left_shift(np.uint32(1), (slots & 31).astype(np.uint32)))


def _leaves(buf, topo, L, code, leaf0, value):
    n = len(topo.origins)
    leaves = buf[leaf0:leaf0 + n * L.leaf_size].reshape(n, L.leaf_size)
    if n == 0:
        return
    leaves[:, 0:12].view("<i4")[:] = topo.bbox_min
    dif = (topo.bbox_max - topo.bbox_min).astype(np.uint32)
    flags = np.uint32(nv.FLAG_HAS_BBOX) << np.uint32(24)
    leaves[:, 12:16].view("<u4")[:, 0] = dif[:, 0] | dif[:, 1] << 8 | dif[:, 2] << 16 | flags
    leaves[:, 16:80].view("<u8")[:] = topo.masks
    kind = nv.TYPES[code].leaf
    if kind == "values":
        leaves[:, L.leaf_table:L.leaf_table + 512 * L.value_size].reshape(n, 512, L.value_size)[:] = value
    elif kind in ("index", "index_mask"):
        on = code in nv.ON_INDEX_CODES
        per_leaf = topo.word_counts.sum(axis=1) if on else np.full(n, 512, np.int64)
        first = 1 + np.concatenate([[0], np.cumsum(per_leaf)[:-1]])  # index 0 is the background
        inclusive = np.cumsum(topo.word_counts, axis=1)[:, :7]
        prefix = np.zeros(n, np.uint64)
        for w in range(7):
            prefix |= inclusive[:, w].astype(np.uint64) << np.uint64(9 * w)
        leaves[:, 80:88].view("<u8")[:, 0] = first.astype(np.uint64)
        leaves[:, 88:96].view("<u8")[:, 0] = prefix
        if kind == "index_mask":
            leaves[:, 96:160].view("<u8")[:] = topo.masks
    else:
        raise ValueError(f"cannot build {nv.TYPES[code].name} grids")


def _headers(buf, topo, code, grid_map, size, offsets):
    head = np.zeros((), nv.GRID_HEADER)
    head["magic"], head["checksum"], head["version"] = nv.MAGIC_NUMB, np.uint64(2 ** 64 - 1), nv.WRITE_VERSION
    head["flags"] = nv.FLAG_BREADTH_FIRST | nv.FLAG_HAS_BBOX
    head["grid_index"], head["grid_count"], head["grid_size"] = 0, 1, size
    for field, v in grid_map.items():
        head[field] = v
    m = grid_map["matd"].reshape(3, 3)
    head["voxel_size"] = m @ np.ones(3)
    head["world_bbox"] = _world_bbox(topo, m, grid_map["vecd"])
    index = nv.TYPES[code].name in nv.INDEX_TYPES
    head["grid_class"] = nv.CLASS_INDEX if index else nv.CLASS_UNKNOWN
    head["grid_type"], head["blind_offset"], head["blind_count"] = code, size, 0
    voxels = topo.voxel_count
    head["data1"] = voxels + 1 if index else 0  # index grids: how many values they index (background too)
    buf[:nv.GRID_SIZE] = np.frombuffer(head.tobytes(), np.uint8)
    tree = np.zeros((), nv.TREE_HEADER)
    for field, at in zip(("leaf_offset", "lower_offset", "upper_offset", "root_offset"), offsets):
        tree[field] = at - nv.GRID_SIZE
    tree["upper_count"], tree["lower_count"], tree["leaf_count"] = topo.counts
    tree["voxel_count"] = voxels
    buf[nv.GRID_SIZE:nv.GRID_SIZE + nv.TREE_SIZE] = np.frombuffer(tree.tobytes(), np.uint8)


def _world_bbox(topo, m, t):
    if len(topo.origins) == 0:
        return np.zeros(6)
    lo, hi = topo.bbox_min.min(axis=0).astype(np.float64), topo.bbox_max.max(axis=0).astype(np.float64)
    corners = np.array([[(hi if c >> a & 1 else lo)[a] for a in range(3)] for c in range(8)])
    world = corners @ m.T + t
    return np.r_[world.min(axis=0), world.max(axis=0)]


# ---- reading leaves back ------------------------------------------------------------------------


def leaf_offsets(leaf_region: np.ndarray, code: int, count: int) -> np.ndarray:
    """Byte offsets (within ``leaf_region``, the leaf array) of the first ``count`` leaves."""
    size = nv.LAYOUTS[code].leaf_size
    if size:
        return np.arange(count, dtype=np.int64) * size
    offsets, at = [], 0  # FpN: each leaf's code width is in its flags
    for _ in range(count):
        offsets.append(at)
        log_bits = int(leaf_region[at + 12:at + 16].view("<u4")[0]) >> 29
        at += 96 + 64 * (1 << log_bits)
    return np.array(offsets, dtype=np.int64)


def leaf_origins(leaf_region: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    idx = offsets[:, None] + np.arange(12)
    mins = leaf_region[idx].reshape(-1, 12).copy().view("<i4")
    return mins & np.int32(~7)


def voxel_coords(leaf_region: np.ndarray, offsets: np.ndarray, code: int) -> tuple[np.ndarray, np.ndarray]:
    """Every indexed voxel's coordinate and its 0-based index: index grids' numbering, else leaf by
    leaf, every voxel of each (Warp's numbering of value grids)."""
    origins = leaf_origins(leaf_region, offsets)
    n = np.arange(512)
    local = np.stack([n >> 6, (n >> 3) & 7, n & 7], axis=1).astype(np.int32)
    coords = (origins[:, None, :] + local[None]).reshape(-1, 3)
    kind = nv.TYPES[code].leaf
    if kind not in ("index", "index_mask"):
        return coords, np.arange(len(coords), dtype=np.int64)
    first = leaf_region[offsets[:, None] + np.arange(80, 88)].reshape(-1, 8).copy().view("<u8")[:, 0].astype(np.int64)
    if code not in nv.ON_INDEX_CODES:
        return coords, ((first - 1)[:, None] + n[None]).reshape(-1)
    masks = leaf_region[offsets[:, None] + np.arange(16, 80)].reshape(-1, 64)
    active = np.unpackbits(masks, axis=1, bitorder="little").astype(bool)
    rank = np.cumsum(active, axis=1) - 1
    index = (first - 1)[:, None] + rank
    return coords[active.reshape(-1)], index[active]
