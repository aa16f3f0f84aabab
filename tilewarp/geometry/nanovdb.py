"""The NanoVDB buffer format, on the host: headers, node layouts, ``.nvdb`` files, validation.

A NanoVDB grid is one flat buffer: a 672-byte grid header (magic, sizes, name, the index-to-world
map, the value type), a 64-byte tree header (byte offsets of the node arrays relative to the tree
header, and their counts), then the nodes breadth first: the root (a table of tiles, each an upper
node or a constant value), upper nodes (32^3 children of 128^3 voxels each), lower nodes (16^3
children of 8^3 voxels each) and leaves (8^3 voxels), and last the optional blind data ("feature
arrays") that the grid header's metadata table describes. Several grids may follow one another.

The byte layout of every node depends only on the grid's value type: its size, alignment and the
size of its statistics (average, deviation). ``layout`` derives the offsets from those with the
format's rules (fields in order, each aligned to its type, tables and nodes aligned to 32 bytes),
so the kernels (``native/geometry/volume.h``), the builder (``vdb_build.py``) and the validator
below agree on one description.
"""
from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

import numpy as np

MAGIC_NUMB = 0x304244566F6E614E  # "NanoVDB0": grids and files (older writers)
MAGIC_GRID = 0x314244566F6E614E  # "NanoVDB1": a grid buffer
MAGIC_FILE = 0x324244566F6E614E  # "NanoVDB2": a file
MAJOR_VERSION = 32
WRITE_VERSION = 32 << 21 | 3 << 10 | 3  # what save_to_nvdb stamps (readers check the major only)

ALIGN = 32
GRID_SIZE = 672
TREE_SIZE = 64
BLIND_SIZE = 288
NAME_SIZE = 256
FILE_HEADER_SIZE = 16
FILE_META_SIZE = 176

FLAG_HAS_BBOX = 1 << 1
FLAG_BREADTH_FIRST = 1 << 5
CLASS_UNKNOWN, CLASS_INDEX = 0, 8

# child masks of internal nodes, after their bbox (24 bytes), flags (8) and value mask
UPPER_CHILD_MASK = 32 + 4096
LOWER_CHILD_MASK = 32 + 512
UPPER_BASE = 32 + 2 * 4096
LOWER_BASE = 32 + 2 * 512
LEAF_BASE = 16 + 64  # bbox min (12), bbox extent and flags (4), value mask (64)
ROOT_BASE = 28  # bbox (24), tile count (4)
ROOT_TILE_BASE = 20  # key (8), child offset (8), state (4)
UPPER_TABLE_COUNT, LOWER_TABLE_COUNT, LEAF_VALUE_COUNT = 32768, 4096, 512

GRID_HEADER = np.dtype({
    "names": ["magic", "checksum", "version", "flags", "grid_index", "grid_count", "grid_size", "name",
              "matf", "invmatf", "vecf", "taperf", "matd", "invmatd", "vecd", "taperd", "world_bbox",
              "voxel_size", "grid_class", "grid_type", "blind_offset", "blind_count", "data0", "data1", "data2"],
    "formats": ["<u8", "<u8", "<u4", "<u4", "<u4", "<u4", "<u8", ("u1", NAME_SIZE), ("<f4", 9), ("<f4", 9),
                ("<f4", 3), "<f4", ("<f8", 9), ("<f8", 9), ("<f8", 3), "<f8", ("<f8", 6), ("<f8", 3), "<u4",
                "<u4", "<i8", "<u4", "<u4", "<u8", "<u8"],
    "offsets": [0, 8, 16, 20, 24, 28, 32, 40, 296, 332, 368, 380, 384, 456, 528, 552, 560, 608, 632, 636, 640,
                648, 652, 656, 664],
    "itemsize": GRID_SIZE})

TREE_HEADER = np.dtype({
    "names": ["leaf_offset", "lower_offset", "upper_offset", "root_offset", "leaf_count", "lower_count",
              "upper_count", "leaf_tiles", "lower_tiles", "upper_tiles", "voxel_count"],
    "formats": ["<u8", "<u8", "<u8", "<u8", "<u4", "<u4", "<u4", "<u4", "<u4", "<u4", "<u8"],
    "offsets": [0, 8, 16, 24, 32, 36, 40, 44, 48, 52, 56],
    "itemsize": TREE_SIZE})

BLIND_META = np.dtype({
    "names": ["data_offset", "value_count", "value_size", "semantic", "data_class", "data_type", "name"],
    "formats": ["<i8", "<u8", "<u4", "<u4", "<u4", "<u4", ("u1", NAME_SIZE)],
    "offsets": [0, 8, 16, 20, 24, 28, 32],
    "itemsize": BLIND_SIZE})


class ValueType(NamedTuple):
    name: str  # NanoVDB's spelling (GridInfo.type_str)
    size: int  # bytes of one value (in the root, internal tiles and default leaves)
    align: int
    stats: int  # bytes of the average / deviation fields
    leaf: str  # "values", "mask" (no values), "bits" (bool), "fp" (quantised), "fpn", "index",
    #            "index_mask", "points"


#: the grid types by code (NanoVDB's GridType enum)
TYPES = {
    1: ValueType("float", 4, 4, 4, "values"), 2: ValueType("double", 8, 8, 8, "values"),
    3: ValueType("int16", 2, 2, 4, "values"), 4: ValueType("int32", 4, 4, 4, "values"),
    5: ValueType("int64", 8, 8, 8, "values"), 6: ValueType("Vec3f", 12, 4, 4, "values"),
    7: ValueType("Vec3d", 24, 8, 8, "values"), 8: ValueType("Mask", 1, 1, 1, "mask"),
    9: ValueType("Half", 2, 2, 4, "values"), 10: ValueType("uint32", 4, 4, 4, "values"),
    11: ValueType("bool", 1, 1, 1, "bits"), 12: ValueType("RGBA8", 4, 4, 4, "values"),
    13: ValueType("Float4", 4, 4, 4, "fp"), 14: ValueType("Float8", 4, 4, 4, "fp"),
    15: ValueType("Float16", 4, 4, 4, "fp"), 16: ValueType("FloatN", 4, 4, 4, "fpn"),
    17: ValueType("Vec4f", 16, 4, 4, "values"), 18: ValueType("Vec4d", 32, 8, 8, "values"),
    19: ValueType("Index", 8, 8, 8, "index"), 20: ValueType("OnIndex", 8, 8, 8, "index"),
    21: ValueType("IndexMask", 8, 8, 8, "index_mask"), 22: ValueType("OnIndexMask", 8, 8, 8, "index_mask"),
    23: ValueType("PointIndex", 8, 8, 8, "points"), 24: ValueType("Vec3u8", 3, 1, 4, "values"),
    25: ValueType("Vec3u16", 6, 2, 4, "values"), 26: ValueType("uint8", 1, 1, 4, "values"),
}
CODES = {v.name: k for k, v in TYPES.items()}
INDEX_TYPES = ("Index", "OnIndex", "IndexMask", "OnIndexMask")
ON_INDEX_CODES = (CODES["OnIndex"], CODES["OnIndexMask"])
FP_BITS = {13: 4, 14: 8, 15: 16}


def _up(n: int, a: int) -> int:
    return -(-n // a) * a


def _stats_end(start: int, v: ValueType) -> int:
    """Where min, max (values), average and deviation (statistics) end when they start at ``start``."""
    end = _up(start, v.align) + 2 * v.size
    return _up(end, v.stats) + 2 * v.stats


class Layout(NamedTuple):
    code: int
    value_size: int
    root_background: int
    root_size: int
    tile_value: int
    tile_size: int
    table_stride: int  # bytes per child slot of an internal node (a child offset or a tile value)
    upper_table: int
    upper_size: int
    lower_table: int
    lower_size: int
    leaf_table: int
    leaf_size: int  # 0 for FpN, whose leaves have a size of their own each


def layout(code: int) -> Layout:
    """The byte layout of the nodes of a grid of type ``code`` (a key of ``TYPES``)."""
    v = TYPES[code]
    background = _up(ROOT_BASE, v.align)
    root_size = _up(_stats_end(background + v.size, v), ALIGN)
    tile_value = _up(ROOT_TILE_BASE, v.align)
    tile_size = _up(tile_value + v.size, ALIGN)
    stride = _up(max(8, v.size), 8)  # a union of a value and an int64 child offset
    upper_table = _up(_stats_end(UPPER_BASE, v), ALIGN)
    lower_table = _up(_stats_end(LOWER_BASE, v), ALIGN)
    if v.leaf == "values":
        leaf_table = _up(_stats_end(LEAF_BASE, v), ALIGN)
        leaf_size = _up(leaf_table + LEAF_VALUE_COUNT * v.size, ALIGN)
    elif v.leaf in ("mask", "bits"):  # no per-voxel values beyond the mask (bool: a second mask)
        leaf_table, leaf_size = 96, 96 if v.leaf == "mask" else 160
    elif v.leaf in ("fp", "fpn"):  # minimum, quantum (floats), four 16-bit statistics, then the codes
        leaf_table = 96
        leaf_size = leaf_table + LEAF_VALUE_COUNT * FP_BITS[code] // 8 if v.leaf == "fp" else 0
    elif v.leaf == "points":  # first point offset and point count (u64), then 16-bit ends per voxel
        leaf_table, leaf_size = 96, 96 + 2 * LEAF_VALUE_COUNT
    else:  # index leaves: first index and packed prefix counts (u64 each), masks: a value mask more
        leaf_table, leaf_size = LEAF_BASE, 96 if v.leaf == "index" else 160
    return Layout(code, v.size, background, root_size, tile_value, tile_size, stride, upper_table,
                  upper_table + UPPER_TABLE_COUNT * stride, lower_table, lower_table + LOWER_TABLE_COUNT * stride,
                  leaf_table, leaf_size)


LAYOUTS = {code: layout(code) for code in TYPES}


def root_key(ijk: np.ndarray) -> np.ndarray:
    """The root table key of the upper node holding each voxel: 21 bits per axis (x high, z low) of
    the coordinate's two's complement shifted right by 12."""
    u = ijk.astype(np.int64).astype(np.uint32).astype(np.uint64) >> np.uint64(12)
    return (u[..., 0] << np.uint64(42)) | (u[..., 1] << np.uint64(21)) | u[..., 2]


# ---- headers ------------------------------------------------------------------------------------


def grid_header(buf, offset: int = 0) -> np.void:
    return np.frombuffer(buf, dtype=GRID_HEADER, count=1, offset=offset)[0]


def tree_header(buf, offset: int = 0) -> np.void:
    return np.frombuffer(buf, dtype=TREE_HEADER, count=1, offset=offset + GRID_SIZE)[0]


def c_string(raw) -> str | None:
    """A fixed-size name field up to its terminator; None when it has none."""
    raw = bytes(raw)
    end = raw.find(b"\0")
    return None if end < 0 else raw[:end].decode("ascii", errors="replace")


def type_name(code: int) -> str:
    return TYPES[code].name if code in TYPES else ("?" if code == 0 else "End")


def header_problem(head: np.void, available: int) -> str | None:
    """Why the grid header (already read from a buffer of ``available`` bytes) cannot describe a
    usable grid, or None. Bounds the grid size and the blind metadata table before anything is
    read through them."""
    if int(head["magic"]) not in (MAGIC_NUMB, MAGIC_GRID):
        return "no NanoVDB grid signature"
    size = int(head["grid_size"])
    if size < GRID_SIZE + TREE_SIZE or size > available:
        return f"its grid size {size} is not within [{GRID_SIZE + TREE_SIZE}, {available}] bytes"
    if c_string(head["name"]) is None:
        return "its grid name is not terminated"
    offset, count = int(head["blind_offset"]), int(head["blind_count"])
    if offset < 0 or offset > size:
        return f"its feature metadata offset {offset} is outside the grid"
    if count > (size - offset) // BLIND_SIZE:
        return f"its {count} feature metadata entries do not fit in the grid"
    return None


def resolve(base: int, relative: int, size: int) -> int | None:
    """``base + relative`` when it lies within [0, size] (no wrap-around), else None."""
    if base > size:
        return None
    at = base + relative
    return at if 0 <= at <= size else None


def blind_problem(metas: np.ndarray, meta_offset: int, grid_size: int) -> str | None:
    """Why the feature metadata entries (a ``BLIND_META`` array read at ``meta_offset``) are unusable."""
    for i, m in enumerate(metas):
        if c_string(m["name"]) is None:
            return f"feature {i} has an unterminated name"
        entry = meta_offset + i * BLIND_SIZE
        start = resolve(entry, int(m["data_offset"]), grid_size)
        count, size = int(m["value_count"]), int(m["value_size"])
        if start is None or (size and count > (grid_size - start) // size):
            return f"feature {i}'s data does not lie within the grid"
    return None


# ---- files --------------------------------------------------------------------------------------


def read_file(data) -> bytes:
    """The grid buffers of a ``.nvdb`` file (all grids, back to back, decompressed)."""
    data = memoryview(bytes(data))
    if len(data) < FILE_HEADER_SIZE:
        raise RuntimeError("NanoVDB signature not found: the data is shorter than a file header")
    magic, version, count, codec = struct.unpack_from("<QIHH", data, 0)
    if magic not in (MAGIC_NUMB, MAGIC_FILE):
        raise RuntimeError("NanoVDB signature not found")
    if version >> 21 != MAJOR_VERSION:
        raise RuntimeError(f"Unsupported NanoVDB version {version >> 21} (this reader knows {MAJOR_VERSION})")
    at, sizes = FILE_HEADER_SIZE, []
    for _ in range(count):
        if at + FILE_META_SIZE > len(data):
            raise RuntimeError("Truncated NanoVDB file: grid metadata past its end")
        sizes.append(struct.unpack_from("<Q", data, at + 8)[0])
        at += FILE_META_SIZE + struct.unpack_from("<I", data, at + 136)[0]
    grids = []
    for size in sizes:
        if codec == 0:
            chunk, at = data[at:at + size], at + size
        else:  # each compressed grid is preceded by its compressed size
            if at + 8 > len(data):
                raise RuntimeError("Truncated NanoVDB file: a compressed grid past its end")
            n = struct.unpack_from("<Q", data, at)[0]
            chunk, at = _decompress(codec, data[at + 8:at + 8 + n]), at + 8 + n
        if len(chunk) != size and codec == 0:
            raise RuntimeError("Truncated NanoVDB file: grid data past its end")
        grids.append(bytes(chunk))
    out = b"".join(grids)
    if len(out) < 8 or struct.unpack_from("<Q", out, 0)[0] not in (MAGIC_NUMB, MAGIC_GRID):
        raise RuntimeError("NanoVDB signature not found on grid!")
    return out


def _decompress(codec: int, chunk) -> bytes:
    if codec == 1:
        return zlib.decompress(chunk)
    if codec == 2:
        return _blosc().decompress(bytes(chunk))
    raise RuntimeError(f"Unsupported codec code: {codec}")


def _blosc():
    try:
        import blosc
    except ImportError as e:
        raise RuntimeError(f"NanoVDB data is compressed with blosc, but the blosc module could not be imported: "
                           f"{e}") from e
    return blosc


CODECS = {"none": 0, "zip": 1, "blosc": 2}


def write_file(path, grids: list, codec: str) -> None:
    """Write grid buffers (``np.uint8`` arrays, one per grid) as a ``.nvdb`` file."""
    if codec not in CODECS:
        raise RuntimeError(f"Unsupported codec requested: {codec!r} (one of {sorted(CODECS)})")
    code = CODECS[codec]
    payloads = [g.tobytes() if code == 0 else zlib.compress(g.tobytes()) if code == 1
                else _blosc().compress(g.tobytes()) for g in grids]
    with open(path, "wb") as f:
        f.write(struct.pack("<QIHH", MAGIC_NUMB, WRITE_VERSION, len(grids), code))
        for g, payload in zip(grids, payloads):
            name = (c_string(grid_header(g)["name"]) or "").encode("ascii")
            f.write(_file_meta(g, len(payload), len(name) + 1, code))
            f.write(name + b"\0")
        for payload in payloads:
            if code:
                f.write(struct.pack("<Q", len(payload)))
            f.write(payload)


def _file_meta(grid: np.ndarray, file_size: int, name_size: int, codec: int) -> bytes:
    head, tree = grid_header(grid), tree_header(grid)
    meta = bytearray(FILE_META_SIZE)
    struct.pack_into("<QQQQII", meta, 0, int(head["grid_size"]), file_size, 0, int(tree["voxel_count"]),
                     int(head["grid_type"]), int(head["grid_class"]))
    struct.pack_into("<6d", meta, 40, *head["world_bbox"])
    root = GRID_SIZE + int(tree["root_offset"])
    if root + 24 <= len(grid):
        meta[88:112] = grid[root:root + 24].tobytes()  # the index bbox: the root's
    struct.pack_into("<3d", meta, 112, *head["voxel_size"])
    struct.pack_into("<I4I3IHHI", meta, 136, name_size, int(tree["leaf_count"]), int(tree["lower_count"]),
                     int(tree["upper_count"]), 1, int(tree["leaf_tiles"]), int(tree["lower_tiles"]),
                     int(tree["upper_tiles"]), codec, 0, WRITE_VERSION)
    return bytes(meta)


# ---- validation of loaded files -------------------------------------------------------------------


class _Level(NamedTuple):
    """A node array: [begin, end) in the grid, fixed stride (0: FpN leaves, at ``starts``)."""

    begin: int
    end: int
    count: int
    stride: int
    starts: np.ndarray | None = None

    def holds(self, at: np.ndarray) -> np.ndarray:
        """Whether each byte offset is the start of one of the level's nodes."""
        if self.count == 0:
            return np.zeros(at.shape, bool)
        if self.starts is not None:
            return np.isin(at, self.starts)
        return (at >= self.begin) & (at < self.end) & ((at - self.begin) % self.stride == 0)


def _node_begin(relative: int, grid_size: int) -> int | None:
    """A node array's start from its tree-relative offset: after the tree header, aligned, in the grid."""
    if relative < TREE_SIZE or relative > grid_size - GRID_SIZE or relative % ALIGN:
        return None
    return GRID_SIZE + relative


def _level(relative: int, count: int, stride: int, grid_size: int) -> _Level | None:
    if count == 0:
        return _Level(0, 0, 0, stride)
    begin = _node_begin(relative, grid_size)
    if begin is None or count > (grid_size - begin) // stride:
        return None
    return _Level(begin, begin + count * stride, count, stride)


def _fpn_leaves(grid: np.ndarray, relative: int, count: int, grid_size: int) -> _Level | None:
    """FpN leaves: a 96-byte header, then 512 codes of the leaf's own width (1 to 16 bits)."""
    if count == 0:
        return _Level(0, 0, 0, 0, np.zeros(0, np.int64))
    begin = _node_begin(relative, grid_size)
    if begin is None or count > (grid_size - begin) // (96 + 64):
        return None
    starts, at = np.empty(count, np.int64), begin
    for n in range(count):
        if at + 96 > grid_size:
            return None
        log_bits = int(grid[at + 12:at + 16].view("<u4")[0]) >> 29
        size = 96 + 64 * (1 << log_bits)
        if log_bits > 4 or at + size > grid_size:
            return None
        starts[n], at = at, at + size
    return _Level(begin, at, count, 0, starts)


def _children_ok(grid: np.ndarray, parents: _Level, mask_at: int, table_at: int, slots: int, stride: int,
                 children: _Level) -> bool:
    """Every child-mask bit of every parent node points (by a relative int64 in its table slot) at the
    start of a node of ``children``."""
    if parents.count == 0:
        return True
    nodes = grid[parents.begin:parents.end].reshape(parents.count, parents.stride)
    bits = np.unpackbits(nodes[:, mask_at:mask_at + slots // 8], axis=1, bitorder="little").astype(bool)
    node, slot = np.nonzero(bits)
    if len(node) == 0:
        return True
    at = table_at + slot * stride
    raw = nodes[node[:, None], at[:, None] + np.arange(8)].reshape(-1, 8).copy().view("<i8")[:, 0]
    target = parents.begin + node.astype(np.int64) * parents.stride + raw
    inside = (target >= 0) & (target <= len(grid)) & (raw > np.iinfo(np.int64).min // 2)
    return bool(inside.all() and children.holds(target).all())


def tree_problem(grid: np.ndarray, head: np.void) -> str | None:
    """Why the tree of the (breadth-first) grid ``grid`` is unsafe to walk, or None: node arrays
    within the grid, in order, not overlapping each other or the feature data, and every child
    reference landing on the start of a node of the next level."""
    code, size = int(head["grid_type"]), int(head["grid_size"])
    if code not in TYPES:
        return f"unknown grid type {code}"
    L, tree = LAYOUTS[code], tree_header(grid)
    root = _level(int(tree["root_offset"]), 1, L.root_size, size)
    upper = _level(int(tree["upper_offset"]), int(tree["upper_count"]), L.upper_size, size)
    lower = _level(int(tree["lower_offset"]), int(tree["lower_count"]), L.lower_size, size)
    leaf = (_fpn_leaves(grid, int(tree["leaf_offset"]), int(tree["leaf_count"]), size) if TYPES[code].leaf == "fpn"
            else _level(int(tree["leaf_offset"]), int(tree["leaf_count"]), L.leaf_size, size))
    if None in (root, upper, lower, leaf):
        return "a node array lies outside the grid"
    tiles = int(grid[root.begin + 24:root.begin + 28].view("<u4")[0])
    if tiles > (size - root.end) // L.tile_size:
        return "the root's tile table runs past the grid"
    occupied = root.end + tiles * L.tile_size
    for level in (upper, lower, leaf):  # breadth first, in order, without overlaps (empty levels skipped)
        if level.count:
            if level.begin < occupied:
                return "node arrays overlap"
            occupied = level.end
    blind_offset, blind_count = int(head["blind_offset"]), int(head["blind_count"])
    if occupied > (size if blind_offset == 0 and blind_count == 0 else blind_offset):
        return "the tree runs into the feature data"
    table = grid[root.end:root.end + tiles * L.tile_size].reshape(tiles, L.tile_size)
    child = table[:, 8:16].copy().view("<i8")[:, 0] if tiles else np.zeros(0, np.int64)
    child = child[child != 0]
    if not upper.holds(root.begin + child).all():
        return "a root tile points outside the upper nodes"
    if not _children_ok(grid, upper, UPPER_CHILD_MASK, L.upper_table, UPPER_TABLE_COUNT, L.table_stride, lower):
        return "an upper node points outside the lower nodes"
    if not _children_ok(grid, lower, LOWER_CHILD_MASK, L.lower_table, LOWER_TABLE_COUNT, L.table_stride, leaf):
        return "a lower node points outside the leaves"
    return None


def _grid_status(grid: np.ndarray) -> tuple:
    """(status, grid size) of the grid at the start of ``grid``: "ok", "unsupported" or a problem."""
    if len(grid) < GRID_SIZE + TREE_SIZE:
        return "the data ends inside a grid header", 0
    head = grid_header(grid)
    problem = header_problem(head, len(grid))
    if problem is None and int(head["grid_size"]) % ALIGN:
        problem = f"its grid size {int(head['grid_size'])} is not a multiple of {ALIGN}"
    if problem is None and int(head["grid_type"]) not in TYPES:
        problem = f"unknown grid type {int(head['grid_type'])}"
    if problem is not None:
        return problem, 0
    size = int(head["grid_size"])
    offset, count = int(head["blind_offset"]), int(head["blind_count"])
    problem = blind_problem(np.frombuffer(grid, BLIND_META, count, offset) if count else np.zeros(0, BLIND_META),
                            offset, size)
    if problem is not None:
        return problem, size
    if not int(head["flags"]) & FLAG_BREADTH_FIRST:
        return "unsupported", size
    return tree_problem(grid[:size], head) or "ok", size


def validate(data: np.ndarray) -> str:
    """Check every grid of a buffer of back-to-back grids: "ok", "unsupported" (a grid is not
    breadth first) or what is wrong (the first invalid grid wins over an unsupported one)."""
    at, status = 0, "ok"
    if len(data) == 0:
        return "no grid"
    while at < len(data):
        result, size = _grid_status(data[at:])
        if result not in ("ok", "unsupported"):
            return f"grid at byte {at}: {result}"
        if result == "unsupported":
            status = "unsupported"
        at += size
    return status
