"""Building a rebuildable volume's topology with kernels, on its own device and inside graph capture.

A rebuildable volume's buffer has node slots for fixed capacities, so its topology can be rebuilt
from points without the host knowing how many nodes they make: the points become tree-order keys
(root tile, then slot in the upper node, slot in the lower node, voxel), a stable sort by the low key
then the high one puts them in the order a breadth-first NanoVDB tree stores its nodes, a scan of
"a new voxel / leaf / lower / upper starts here" numbers every node, and the nodes are written in
place: leaves with their masks, bboxes and values or voxel indices, internal nodes with background
tables, child offsets and masks, bboxes reduced level by level, root tiles, then the counts in the
headers. The node counts, the capacity flags and what is kept (the leading nodes that fit) stay on
the device. The result is the buffer ``vdb_build.build`` writes for the same points, byte for byte
in every node in use.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import tilewarp as wp

from ..language import types as T
from ..runtime import cpu_capture
from ..runtime.array import array, uninitialized, zeros
from ..runtime.replay import Replay, array_key
from ..utils import _scalars
from ..utils.core import array_scan
from ..utils.radix import sort_order
from . import nanovdb as nv
from .vdb_build import Capacity

NO_POINT = wp.constant(wp.uint64(1 << 60))  # the high key of a masked or invalid point: sorts last
HIGH_BITS, LOW_BITS = 61, 36
INVALID = 1 << 4  # Volume.REBUILD_INVALID_INPUT: a point mapped to a non-finite coordinate

# counters kept on the device (an int64 array): the first leaf dropped for a capacity, then what is
# kept, then the flags
M_DROP, M_LEAVES, M_LOWERS, M_UPPERS, M_VOXELS, M_FLAGS = range(6)
_BIG = wp.constant(wp.int64(2 ** 62))


# ---- keys --------------------------------------------------------------------------------------------


@wp.func
def _tree_keys(i: int, x: int, y: int, z: int, voxels: int, hi: wp.array(dtype=wp.uint64),
               lo: wp.array(dtype=wp.uint64)):
    """hi: the upper node's coordinates (20 bits each, offset to sort signed values); lo: the slot in
    the upper node (15 bits), in the lower node (12 bits) and the voxel (9 bits, 0 for tiles)."""
    half = 1 << 19
    h = wp.uint64((x >> 12) + half) << wp.uint64(40)
    h = h | (wp.uint64((y >> 12) + half) << wp.uint64(20)) | wp.uint64((z >> 12) + half)
    nu = (((x & 4095) >> 7) << 10) | (((y & 4095) >> 7) << 5) | ((z & 4095) >> 7)
    nl = (((x & 127) >> 3) << 8) | (((y & 127) >> 3) << 4) | ((z & 127) >> 3)
    v = ((x & 7) << 6) | ((y & 7) << 3) | (z & 7)
    hi[i] = h
    lo[i] = (wp.uint64(nu) << wp.uint64(21)) | (wp.uint64(nl) << wp.uint64(9)) | wp.uint64(v * voxels)



@wp.func
def _masked_out(i: int, mask: wp.array(dtype=wp.int32), masked: int, hi: wp.array(dtype=wp.uint64),
                lo: wp.array(dtype=wp.uint64)):
    """Point i starts as no point (the key of one masked out or invalid); whether the mask drops it."""
    hi[i] = NO_POINT
    lo[i] = wp.uint64(0)
    if masked != 0:
        return mask[i] == 0
    return False


@wp.kernel(enable_backward=False)
def _keys_int(pts: wp.array(dtype=wp.int32), mask: wp.array(dtype=wp.int32), masked: int, voxels: int,
              hi: wp.array(dtype=wp.uint64), lo: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    if _masked_out(i, mask, masked, hi, lo):
        return
    _tree_keys(i, pts[3 * i], pts[3 * i + 1], pts[3 * i + 2], voxels, hi, lo)


@wp.func
def _index_coord(q: float):
    # floor(q + 0.5) kept inside int32, as the host build clips
    return int(wp.clamp(wp.floor(q + 0.5), -2147483648.0, 2147483520.0))


@wp.kernel(enable_backward=False)
def _keys_float(pts: wp.array(dtype=wp.float32), mask: wp.array(dtype=wp.int32), masked: int, voxels: int,
                inv: wp.mat33, t: wp.vec3, meta: wp.array(dtype=wp.int64), hi: wp.array(dtype=wp.uint64),
                lo: wp.array(dtype=wp.uint64)):
    """World-space points through the grid's inverse map."""
    i = wp.tid()
    if _masked_out(i, mask, masked, hi, lo):
        return
    q = inv @ (wp.vec3(pts[3 * i], pts[3 * i + 1], pts[3 * i + 2]) - t)
    if not (wp.isfinite(q[0]) and wp.isfinite(q[1]) and wp.isfinite(q[2])):
        wp.atomic_or(meta, M_FLAGS, wp.int64(INVALID))
        return
    _tree_keys(i, _index_coord(q[0]), _index_coord(q[1]), _index_coord(q[2]), voxels, hi, lo)


@wp.kernel(enable_backward=False)
def _gather_keys(src: wp.array(dtype=wp.uint64), order: wp.array(dtype=wp.int32), dst: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    dst[i] = src[order[i]]


# ---- numbering the nodes ---------------------------------------------------------------------------


@wp.kernel(enable_backward=False)
def _starts(hi: wp.array(dtype=wp.uint64), lo: wp.array(dtype=wp.uint64), starts: wp.array(dtype=wp.vec4i)):
    """(voxel, leaf, lower, upper): whether a new one starts at sorted point k."""
    k = wp.tid()
    h = hi[k]
    s = wp.vec4i(0, 0, 0, 0)
    if h < NO_POINT:
        s = wp.vec4i(1, 1, 1, 1)
        if k > 0:
            l = lo[k]
            pl = lo[k - 1]
            up = int(h != hi[k - 1])
            s = wp.vec4i(up | int(l != pl), up | int((l >> wp.uint64(9)) != (pl >> wp.uint64(9))),
                         up | int((l >> wp.uint64(21)) != (pl >> wp.uint64(21))), up)
    starts[k] = s


@wp.func
def _coord(h: wp.uint64, l: wp.uint64, axis: int):
    """The leaf origin's coordinate along ``axis``, from a point's keys."""
    upper = int((h >> wp.uint64(40 - 20 * axis)) & wp.uint64(1048575)) - (1 << 19)
    nu = int((l >> wp.uint64(31 - 5 * axis)) & wp.uint64(31))
    nl = int((l >> wp.uint64(17 - 4 * axis)) & wp.uint64(15))
    return (upper << 12) | (nu << 7) | (nl << 3)


@wp.func
def _root_key(o: wp.vec3i):
    x = wp.uint64(wp.uint32(o[0]) >> wp.uint32(12))
    y = wp.uint64(wp.uint32(o[1]) >> wp.uint32(12))
    return (x << wp.uint64(42)) | (y << wp.uint64(21)) | wp.uint64(wp.uint32(o[2]) >> wp.uint32(12))


@wp.kernel(enable_backward=False)
def _nodes(hi: wp.array(dtype=wp.uint64), lo: wp.array(dtype=wp.uint64), starts: wp.array(dtype=wp.vec4i),
           ids: wp.array(dtype=wp.vec4i), voxels: int, leaves: int, leaf_origin: wp.array(dtype=wp.vec3i),
           parent: wp.array2d(dtype=wp.int32), leaf_masks: wp.array(dtype=wp.uint64),
           upper_keys: wp.array(dtype=wp.uint64)):
    """From the point that starts each node: its parent and slot there (``parent``'s rows: leaves'
    lower node, slot; lower nodes' upper node, slot), root keys, and for the first ``leaves`` leaves
    (what can be kept) the origin and every voxel's bit in the mask."""
    k = wp.tid()
    h = hi[k]
    if h >= NO_POINT:
        return
    l = lo[k]
    s = starts[k]
    n = ids[k]
    leaf = n[1] - 1
    if voxels != 0 and leaf < leaves:
        v = int(l & wp.uint64(511))
        wp.atomic_or(leaf_masks, leaf * 8 + (v >> 6), wp.uint64(1) << wp.uint64(v & 63))
    if s[1] == 1:
        o = wp.vec3i(_coord(h, l, 0), _coord(h, l, 1), _coord(h, l, 2))
        if leaf < leaves:
            leaf_origin[leaf] = o
        parent[0, leaf] = n[2] - 1
        parent[1, leaf] = int((l >> wp.uint64(9)) & wp.uint64(4095))
        if s[3] == 1:
            upper_keys[n[3] - 1] = _root_key(o)
    if s[2] == 1:
        parent[2, n[2] - 1] = n[3] - 1
        parent[3, n[2] - 1] = int(l >> wp.uint64(21))


@wp.func
def _popcount(x: wp.uint64):
    x = x - ((x >> wp.uint64(1)) & wp.uint64(0x5555555555555555))
    x = (x & wp.uint64(0x3333333333333333)) + ((x >> wp.uint64(2)) & wp.uint64(0x3333333333333333))
    x = (x + (x >> wp.uint64(4))) & wp.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * wp.uint64(0x0101010101010101)) >> wp.uint64(56))


@wp.kernel(enable_backward=False)
def _leaf_counts(ids: wp.array(dtype=wp.vec4i), n: int, voxels: int, leaf_masks: wp.array(dtype=wp.uint64),
                 leaf_voxels: wp.array(dtype=wp.int64)):
    """Each leaf's active voxels (tile leaves: all, their masks filled)."""
    leaf = wp.tid()
    count = 0
    if leaf < ids[n - 1][1]:
        for w in range(8):
            if voxels == 0:
                leaf_masks[leaf * 8 + w] = wp.uint64(0xFFFFFFFFFFFFFFFF)
            count += _popcount(leaf_masks[leaf * 8 + w])
    leaf_voxels[leaf] = wp.int64(count)


@wp.kernel(enable_backward=False)
def _fits(ids: wp.array(dtype=wp.vec4i), n: int, cap: wp.vec3i, max_voxels: wp.int64,
          parent: wp.array2d(dtype=wp.int32), voxel_ends: wp.array(dtype=wp.int64), meta: wp.array(dtype=wp.int64)):
    """The first leaf past a capacity (node numbers grow along the leaves: what fits is a prefix)."""
    leaf = wp.tid()
    if leaf < ids[n - 1][1]:
        lower = parent[0, leaf]
        if leaf >= cap[0] or lower >= cap[1] or parent[2, lower] >= cap[2] or voxel_ends[leaf] > max_voxels:
            wp.atomic_min(meta, M_DROP, wp.int64(leaf))


@wp.kernel(enable_backward=False)
def _counts(ids: wp.array(dtype=wp.vec4i), n: int, cap: wp.vec3i, max_voxels: wp.int64,
            parent: wp.array2d(dtype=wp.int32), voxel_ends: wp.array(dtype=wp.int64), meta: wp.array(dtype=wp.int64),
            status: wp.array(dtype=wp.uint32), has_status: int, w: wp.array(dtype=wp.uint32),
            q: wp.array(dtype=wp.uint64), s: wp.array(dtype=wp.int32)):
    """What was asked for against the capacities (the status flags), what is kept, and the headers'
    counts; the root's bbox starts empty."""
    total = wp.vec4i(0, 0, 0, 0)
    if n > 0:
        total = ids[n - 1]
    flags = meta[M_FLAGS]
    if total[1] > cap[0]:
        flags = flags | wp.int64(1)
    if total[2] > cap[1]:
        flags = flags | wp.int64(2)
    if total[3] > cap[2]:
        flags = flags | wp.int64(4)
    if wp.int64(total[0]) > max_voxels:  # (distinct voxels: only voxel volumes have a voxel capacity)
        flags = flags | wp.int64(8)
    kept = wp.min(wp.min(meta[M_DROP], wp.int64(total[1])), wp.int64(cap[0]))
    lowers = wp.int64(0)
    uppers = wp.int64(0)
    voxels = wp.int64(0)
    if kept > wp.int64(0):
        lowers = wp.int64(parent[0, int(kept) - 1] + 1)
        uppers = wp.int64(parent[2, int(lowers) - 1] + 1)
        voxels = voxel_ends[int(kept) - 1]
    meta[M_LEAVES] = kept
    meta[M_LOWERS] = lowers
    meta[M_UPPERS] = uppers
    meta[M_VOXELS] = voxels
    meta[M_FLAGS] = flags
    if has_status != 0:
        status[0] = wp.uint32(flags)
    # the tree header (grid bytes 672-735): leaf, lower, upper counts, no tiles, active voxels
    w[176] = wp.uint32(kept)
    w[177] = wp.uint32(lowers)
    w[178] = wp.uint32(uppers)
    for t in range(3):
        w[179 + t] = wp.uint32(0)
    q[91] = wp.uint64(voxels)
    for a in range(3):  # the root (byte 736): an empty bbox, then its tile count
        s[184 + a] = 2147483647
        s[187 + a] = -2147483648
    w[190] = wp.uint32(uppers)


@wp.kernel(enable_backward=False)
def _init_meta(meta: wp.array(dtype=wp.int64)):
    for m in range(6):
        meta[m] = wp.int64(0)
    meta[M_DROP] = _BIG


# ---- writing the nodes -----------------------------------------------------------------------------


@wp.func
def _first_last(bits: int):
    """The lowest and highest set bit of an 8-bit row (bits != 0)."""
    first = int(0)
    while (bits >> first) & 1 == 0:
        first += 1
    last = int(7)
    while (bits >> last) & 1 == 0:
        last -= 1
    return wp.vec2i(first, last)


@wp.kernel(enable_backward=False)
def _write_leaves(meta: wp.array(dtype=wp.int64), leaf0: wp.int64, leaf_size: wp.int64, index: int, header_end: int,
                  origin: wp.array(dtype=wp.vec3i), masks: wp.array(dtype=wp.uint64),
                  voxel_ends: wp.array(dtype=wp.int64), w: wp.array(dtype=wp.uint32), q: wp.array(dtype=wp.uint64),
                  s: wp.array(dtype=wp.int32)):
    """A leaf's bbox of active voxels, flags, mask, and (index grids, ``index`` 1: all voxels indexed,
    2: active ones) its first index and packed prefix counts; value leaves' statistics zeroed."""
    leaf = wp.tid()
    if wp.int64(leaf) >= meta[M_LEAVES]:
        return
    at = leaf0 + wp.int64(leaf) * leaf_size
    rows_x = int(0)
    any_x = wp.uint64(0)
    prefix = wp.uint64(0)
    running = int(0)
    for r in range(8):
        m = masks[leaf * 8 + r]
        q[at / wp.int64(8) + wp.int64(2 + r)] = m
        if m != wp.uint64(0):
            rows_x = rows_x | (1 << r)
        any_x = any_x | m
        running += _popcount(m)
        if r < 7:
            prefix = prefix | (wp.uint64(running) << wp.uint64(9 * r))
    rows_y = int(0)
    any_y = int(0)
    for r in range(8):
        byte = int((any_x >> wp.uint64(8 * r)) & wp.uint64(255))
        if byte != 0:
            rows_y = rows_y | (1 << r)
        any_y = any_y | byte
    o = origin[leaf]
    ext = wp.vec3i(0, 0, 0)
    word = at / wp.int64(4)
    rows = wp.vec3i(rows_x, rows_y, any_y)
    for a in range(3):
        fl = _first_last(rows[a])
        s[word + wp.int64(a)] = o[a] + fl[0]
        ext[a] = fl[1] - fl[0]
    w[word + wp.int64(3)] = wp.uint32(ext[0] | (ext[1] << 8) | (ext[2] << 16) | (2 << 24))  # FLAG_HAS_BBOX
    if index != 0:
        first = wp.int64(1 + 512 * leaf)
        if index == 2:
            first = voxel_ends[leaf] - wp.int64(running) + wp.int64(1)
        q[at / wp.int64(8) + wp.int64(10)] = wp.uint64(first)
        q[at / wp.int64(8) + wp.int64(11)] = prefix
    else:
        for b in range(80, header_end, 4):
            w[(at + wp.int64(b)) / wp.int64(4)] = wp.uint32(0)


@wp.func
def _value_word(w: wp.array(dtype=wp.uint32), j: int, value_words: int, background: int):
    """Word ``j`` of a table entry holding the background value (words past the value: 0)."""
    if j < value_words:
        return w[background + j]
    return wp.uint32(0)


@wp.kernel(enable_backward=False)
def _fill_values(meta: wp.array(dtype=wp.int64), which: int, base: wp.int64, node_size: wp.int64, table: int,
                 stride: int, value_words: int, background: int, w: wp.array(dtype=wp.uint32)):
    """Entry ``e`` of node ``nd``'s table (leaves' values, internal nodes' tiles): the background."""
    nd, e = wp.tid()
    if wp.int64(nd) >= meta[which]:
        return
    word = (base + wp.int64(nd) * node_size + wp.int64(table + e * stride)) / wp.int64(4)
    for j in range(stride / 4):
        w[word + wp.int64(j)] = _value_word(w, j, value_words, background)


@wp.kernel(enable_backward=False)
def _clear_nodes(meta: wp.array(dtype=wp.int64), which: int, base: wp.int64, node_size: wp.int64,
                 w: wp.array(dtype=wp.uint32), s: wp.array(dtype=wp.int32)):
    """Word ``j`` of an internal node's header: an empty bbox, then flags, masks, statistics zeroed."""
    nd, j = wp.tid()
    if wp.int64(nd) >= meta[which]:
        return
    word = (base + wp.int64(nd) * node_size) / wp.int64(4) + wp.int64(j)
    if j < 3:
        s[word] = 2147483647
    elif j < 6:
        s[word] = -2147483648
    else:
        w[word] = wp.uint32(0)


@wp.kernel(enable_backward=False)
def _link(meta: wp.array(dtype=wp.int64), which: int, parent: wp.array2d(dtype=wp.int32), row: int,
          child0: wp.int64, child_size: wp.int64, leaves: int, parent0: wp.int64, parent_size: wp.int64,
          table: int, stride: int, child_mask: int, w: wp.array(dtype=wp.uint32), q: wp.array(dtype=wp.uint64),
          s: wp.array(dtype=wp.int32)):
    """A child in its parent: the offset in the parent's table, the bit of its child mask, and the
    child's bbox into the parent's."""
    c = wp.tid()
    if wp.int64(c) >= meta[which]:
        return
    p = parent[row, c]
    slot = parent[row + 1, c]
    at = parent0 + wp.int64(p) * parent_size
    child = child0 + wp.int64(c) * child_size
    q[(at + wp.int64(table + slot * stride)) / wp.int64(8)] = wp.uint64(child - at)
    wp.atomic_or(w, (at + wp.int64(child_mask)) / wp.int64(4) + wp.int64(slot >> 5), wp.uint32(1) << wp.uint32(slot & 31))
    _bbox_into(child, leaves, at, w, s)


@wp.func
def _bbox_into(child: wp.int64, leaves: int, at: wp.int64, w: wp.array(dtype=wp.uint32), s: wp.array(dtype=wp.int32)):
    cw = child / wp.int64(4)
    pw = at / wp.int64(4)
    for a in range(3):
        lo = s[cw + wp.int64(a)]
        hi = int(0)
        if leaves != 0:  # a leaf keeps its extent in bytes of its flags word
            hi = lo + int((w[cw + wp.int64(3)] >> wp.uint32(8 * a)) & wp.uint32(255))
        else:
            hi = s[cw + wp.int64(3 + a)]
        wp.atomic_min(s, pw + wp.int64(a), lo)
        wp.atomic_max(s, pw + wp.int64(3 + a), hi)


@wp.kernel(enable_backward=False)
def _root_tiles(meta: wp.array(dtype=wp.int64), keys: wp.array(dtype=wp.uint64), root: wp.int64, tiles: wp.int64,
                tile_size: int, tile_value: int, value_words: int, background: int, upper0: wp.int64, upper_size: wp.int64,
                w: wp.array(dtype=wp.uint32), q: wp.array(dtype=wp.uint64), s: wp.array(dtype=wp.int32)):
    """Root tile ``u``: its key, its upper node's offset, a zero state and the background; the upper
    node's bbox into the root's."""
    u = wp.tid()
    if wp.int64(u) >= meta[M_UPPERS]:
        return
    at = tiles + wp.int64(u * tile_size)
    node = upper0 + wp.int64(u) * upper_size
    q[at / wp.int64(8)] = keys[u]
    q[at / wp.int64(8) + wp.int64(1)] = wp.uint64(node - root)
    for j in range(4, tile_size / 4):
        k = j - tile_value / 4
        value = wp.uint32(0)
        if k >= 0:
            value = _value_word(w, k, value_words, background)
        w[at / wp.int64(4) + wp.int64(j)] = value
    _bbox_into(node, 0, root, w, s)


@wp.kernel(enable_backward=False)
def _world_bbox(meta: wp.array(dtype=wp.int64), index: int, s: wp.array(dtype=wp.int32),
                d: wp.array(dtype=wp.float64), q: wp.array(dtype=wp.uint64)):
    """The grid header's world bbox (the root bbox's corners through matd, vecd) and, for index
    grids, how many values they index (the background too)."""
    for a in range(6):
        d[70 + a] = wp.float64(0.0)
    if meta[M_LEAVES] > wp.int64(0):
        for a in range(3):
            d[70 + a] = wp.float64(1.0e308)
            d[73 + a] = wp.float64(-1.0e308)
        for c in range(8):
            p = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
            for a in range(3):
                p[a] = wp.float64(s[184 + a + 3 * ((c >> a) & 1)])
            for j in range(3):
                x = p[0] * d[48 + 3 * j] + p[1] * d[49 + 3 * j] + p[2] * d[50 + 3 * j] + d[66 + j]
                d[70 + j] = wp.min(d[70 + j], x)
                d[73 + j] = wp.max(d[73 + j], x)
    q[82] = wp.uint64(0)
    if index != 0:
        q[82] = wp.uint64(meta[M_VOXELS] + wp.int64(1))


HEAD_WORDS = 128
_Head = wp.types.vector(length=HEAD_WORDS, dtype=wp.uint64)


@wp.kernel(enable_backward=False)
def _write_head(q: wp.array(dtype=wp.uint64), words: _Head, count: int):
    i = wp.tid()
    if i < count:
        q[i] = words[i]


# ---- the build ---------------------------------------------------------------------------------------


def write_head(volume, head: np.ndarray) -> None:
    """The grid's first bytes (headers and root: what no rebuild moves) from the host. They travel as
    a kernel argument: graph captures replay it, and need no page-locked staging, which a CUDA
    capture cannot allocate."""
    words = np.zeros(HEAD_WORDS, np.uint64)
    raw = np.frombuffer(np.ascontiguousarray(head, np.uint8).tobytes(), np.uint64)
    if raw.size > HEAD_WORDS:
        raise ValueError(f"a grid head of {head.size} bytes does not fit {8 * HEAD_WORDS}")
    words[:raw.size] = raw
    _launch(_write_head, HEAD_WORDS, [_view(volume, T.uint64), _Head.from_buffer_copy(words), raw.size], volume.device)



def _view(volume, dtype) -> array:
    a = array(ptr=volume.id, dtype=dtype, shape=volume._size // T.type_size(dtype), device=volume.device)
    a.deleter = None  # the volume owns the memory
    return a


class Numbering(NamedTuple):
    """Points in tree order with their nodes numbered (device arrays; ``n`` points)."""

    n: int
    ids: array  # per sorted point: 1 + the number of its voxel, leaf, lower and upper node
    nodes: dict  # per node: leaf origins, masks and voxel counts (a running sum), parents, root keys
    meta: array  # the counters (M_*)
    voxels: int | None  # active voxels, when the node counts were read back (an exact grid)


def rebuild(volume, points: array, mask: array | None, status: array | None) -> None:
    """Rebuild ``volume``'s topology from ``points`` (checked: tile or voxel points, on its device)
    with kernels on its device, cut to its capacities; ``status`` receives the REBUILD_* flags.
    Inside a CPU graph capture the whole rebuild is one recorded operation."""
    def run():
        cap = volume._alloc["capacity"]
        write(volume, number(points, mask, volume._alloc, volume.device, cap)[0], cap, status)

    device = volume.device
    if device.is_cpu and cpu_capture.active(device):
        with cpu_capture.operation(device, run):
            run()
    else:  # a rebuild from the same arrays as the one before is one graph launch (Replay)
        key = (array_key(points), array_key(mask), array_key(status))
        volume.__dict__.setdefault("_replay", Replay()).run(device, key, run)


def _launch(kernel, dim, inputs, device):
    wp.launch(kernel, dim=dim, inputs=inputs, device=device, record_tape=False)


def number(points: array, mask: array | None, alloc: dict, device, cap: Capacity | None = None) -> tuple:
    """The tree-order keys of the points (index space; float points through the map of ``alloc``),
    sorted, and the nodes they make, numbered: ``(Numbering, cap)``. Leaves past ``cap`` (what the
    grid has room for) keep no mask; ``cap`` None: room for them all (an exact grid), the node
    counts read back."""
    voxels = int(alloc["kind"] == "voxels")
    n = points.shape[0]
    hi, lo = (uninitialized(max(n, 1), dtype=T.uint64, device=device) for _ in range(2))
    meta = uninitialized(6, dtype=T.int64, device=device)
    _launch(_init_meta, 1, [meta], device)
    pts, masked = _scalars(points), int(mask is not None)  # (checked contiguous)
    if T.scalar_of(points.dtype) is T.float32:
        inv = T.mat33(*alloc["map"]["invmatf"].tolist())
        _launch(_keys_float, n, [pts, mask, masked, voxels, inv, T.vec3(*alloc["map"]["vecf"].tolist()), meta, hi,
                                 lo], device)
    else:
        _launch(_keys_int, n, [pts, mask, masked, voxels, hi, lo], device)
    if n > 1:
        hi, lo = _tree_order(hi, lo, n, device)
    starts, ids = (uninitialized(max(n, 1), dtype=T.vec4i, device=device) for _ in range(2))
    _launch(_starts, n, [hi, lo, starts], device)
    array_scan(starts, ids, inclusive=True)
    active = None
    if cap is None:  # how many upper, lower and leaf nodes and voxels the points make
        last = ids[n - 1:].numpy()[0] if n else np.zeros(4, np.int32)
        cap = Capacity(int(last[3]), int(last[2]), int(last[1]))
        active = int(last[0]) if voxels else 512 * cap.leaf
    nodes = _number_nodes(hi, lo, starts, ids, n, voxels, min(n, cap.leaf), device)
    return Numbering(n, ids, nodes, meta, active), cap


def write(volume, numbering: Numbering, cap: Capacity, status: array | None) -> None:
    """Write the numbered nodes that fit ``cap`` (and the volume's voxel capacity) into its grid."""
    _limit(volume, numbering, cap, status)
    _write(volume, numbering, cap)


def _tree_order(hi, lo, n, device):
    """The keys in tree order: sorted stably by the low key, then by the high one."""
    order = uninitialized(n, dtype=T.int32, device=device)
    sort_order(lo, order, 0, LOW_BITS, uniform=True)  # (points rarely span every upper or lower slot)
    hi_sorted = uninitialized(n, dtype=T.uint64, device=device)
    _launch(_gather_keys, n, [hi, order, hi_sorted], device)
    sort_order(hi_sorted, order, 0, HIGH_BITS, uniform=True)  # (nor many upper nodes)
    lo_sorted = uninitialized(n, dtype=T.uint64, device=device)
    _launch(_gather_keys, n, [lo, order, lo_sorted], device)
    return hi_sorted, lo_sorted


def _number_nodes(hi, lo, starts, ids, n, voxels, leaves, device) -> dict:
    m, room = max(n, 1), max(leaves, 1)
    nodes = {"origin": uninitialized(room, dtype=T.vec3i, device=device),
             "parent": uninitialized((4, m), dtype=T.int32, device=device),
             "masks": zeros(8 * room, dtype=T.uint64, device=device),
             "keys": uninitialized(m, dtype=T.uint64, device=device),
             "voxels": uninitialized(room, dtype=T.int64, device=device)}
    _launch(_nodes, n, [hi, lo, starts, ids, voxels, leaves, nodes["origin"], nodes["parent"], nodes["masks"],
                        nodes["keys"]], device)
    _launch(_leaf_counts, leaves, [ids, n, voxels, nodes["masks"], nodes["voxels"]], device)
    array_scan(nodes["voxels"][:leaves], nodes["voxels"][:leaves], inclusive=True)
    return nodes


def _limit(volume, numbering, cap, status):
    """What fits the capacities, the status flags and the headers' counts."""
    n, ids, nodes, meta, _ = numbering
    most = volume._alloc["voxels"]
    args = [ids, n, wp.vec3i(cap.leaf, cap.lower, cap.upper), 2 ** 62 if most is None else most, nodes["parent"],
            nodes["voxels"], meta]
    _launch(_fits, min(n, cap.leaf), args, volume.device)
    _launch(_counts, 1, args + [status, int(status is not None), _view(volume, T.uint32),
                                _view(volume, T.uint64), _view(volume, T.int32)], volume.device)


def _write(volume, numbering, cap):
    n, _, nodes, meta, _ = numbering
    a, device = volume._alloc, volume.device
    L = nv.LAYOUTS[a["code"]]
    w, q, s = _view(volume, T.uint32), _view(volume, T.uint64), _view(volume, T.int32)
    root = nv.GRID_SIZE + nv.TREE_SIZE
    upper0 = root + L.root_size + cap.upper * L.tile_size
    lower0 = upper0 + cap.upper * L.upper_size
    leaf0 = lower0 + cap.lower * L.lower_size
    kind = nv.TYPES[a["code"]].leaf
    index = 0 if kind == "values" else 2 if a["code"] in nv.ON_INDEX_CODES else 1
    value_words, background = L.value_size // 4, (root + L.root_background) // 4
    leaves, lowers, uppers = (min(n, c) for c in (cap.leaf, cap.lower, cap.upper))
    header_end = L.leaf_table if index == 0 else 96
    _launch(_write_leaves, leaves, [meta, leaf0, L.leaf_size, index, header_end, nodes["origin"], nodes["masks"],
                                    nodes["voxels"], w, q, s], device)
    if index == 0:
        _launch(_fill_values, (leaves, 512), [meta, M_LEAVES, leaf0, L.leaf_size, L.leaf_table, L.value_size,
                                              value_words, background, w], device)
    levels = ((M_LOWERS, lowers, lower0, L.lower_size, L.lower_table, nv.LOWER_CHILD_MASK, 4096, leaf0,
               L.leaf_size, 0), (M_UPPERS, uppers, upper0, L.upper_size, L.upper_table, nv.UPPER_CHILD_MASK, 32768,
                                 lower0, L.lower_size, 2))
    for which, count, base, size, table, mask, slots, child0, child_size, row in levels:
        _launch(_clear_nodes, (count, table // 4), [meta, which, base, size, w, s], device)
        _launch(_fill_values, (count, slots), [meta, which, base, size, table, L.table_stride, value_words,
                                               background, w], device)
        child = M_LEAVES if row == 0 else M_LOWERS
        _launch(_link, min(n, cap.leaf if row == 0 else cap.lower),
                [meta, child, nodes["parent"], row, child0, child_size, int(row == 0), base, size, table,
                 L.table_stride, mask, w, q, s], device)
    _launch(_root_tiles, uppers, [meta, nodes["keys"], root, root + L.root_size, L.tile_size, L.tile_value,
                                  value_words, background, upper0, L.upper_size, w, q, s], device)
    _launch(_world_bbox, 1, [meta, index, s, _view(volume, T.float64), q], device)
