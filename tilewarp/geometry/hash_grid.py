"""``wp.HashGrid``: bucket points into a hashed grid of cubic cells for neighbour queries in kernels.

The build runs as tilewarp kernels on the grid's device (the CPU's thread pool, or the GPU): each
point's bucket (the same C++ function the queries use, ``native/geometry/hash_grid.h``), a stable
radix sort of (bucket[, group]) keys with the point indices (``wp.utils.radix_sort_pairs``), then
the start and end of each bucket's run. On the CPU the sort and the runs are one counting sort
into cells instead (see ``_cpu_count``), for buckets of up to 22 bits. Its result is deterministic:
the sort is stable, so points sharing a bucket keep their input order and queries visit them the
same way every run, whichever way it was built.

The grid id handed to kernels is the address of a one-element array holding the descriptor
(``HashGridDesc``), rewritten by a one-thread kernel after each build, so builds stay in stream
order (and inside graph capture) with no host round trip.
"""
from __future__ import annotations

import functools
import operator
from typing import Any

import tilewarp as wp

from .. import utils
from ..builtins.hash_grid import HashGridDesc
from ..language import types as T
from ..runtime import cpu_capture, retired
from ..runtime.array import array, empty, uninitialized, zeros
from ..runtime.device import get_device
from ..runtime.graph import saveable_capture
from ..runtime.replay import Replay, array_key

MAX_CELLS = (1 << 31) - 1
_VEC = {T.float16: T.vec3h, T.float32: T.vec3, T.float64: T.vec3d}


@wp.kernel(enable_backward=False)
def _bucket_keys(points: wp.array(dtype=Any), inv_width: wp.float64, dx: int, dy: int, dz: int,
                 keys: wp.array(dtype=wp.int32), n: int, clear: int, starts: wp.array(dtype=wp.int32),
                 ends: wp.array(dtype=wp.int32)):
    # the first `clear` keys are still the previous build's, sorted: empty their cells first (the
    # same thread then overwrites the key, so no other reads it), saving a launch of _clear_cells
    i = wp.tid()
    if i < clear:
        c = keys[i]
        starts[c] = 0
        ends[c] = 0
    if i < n:
        keys[i] = wp._hash_grid_cell(points[i], inv_width, dx, dy, dz)


@wp.kernel(enable_backward=False)
def _group_keys(points: wp.array(dtype=Any), groups: wp.array(dtype=wp.int32), inv_width: wp.float64, dx: int,
                dy: int, dz: int, keys: wp.array(dtype=wp.int64)):
    # bucket in the high 32 bits, the group (offset to be non-negative) in the low ones
    i = wp.tid()
    cell = wp.int64(wp._hash_grid_cell(points[i], inv_width, dx, dy, dz))
    keys[i] = cell * wp.int64(4294967296) + wp.int64(groups[i]) + wp.int64(2147483648)


RUN_SPAN = 4  # sorted keys a thread of _runs looks at (one load of its neighbours serves several)


@wp.kernel(enable_backward=False)
def _runs(keys: wp.array(dtype=wp.int32), n: int, starts: wp.array(dtype=wp.int32),
          ends: wp.array(dtype=wp.int32)):
    # keys [first, first + RUN_SPAN): each key that differs from the one before starts its cell's run,
    # each that differs from the one after ends it
    first = wp.tid() * RUN_SPAN
    before = int(-1)
    if first > 0:
        before = keys[first - 1]
    for j in range(RUN_SPAN):
        i = first + j
        if i < n:
            c = keys[i]
            if i == 0 or before != c:
                starts[c] = i
            if i == n - 1 or keys[i + 1] != c:
                ends[c] = i + 1
            before = c


@wp.kernel(enable_backward=False)
def _group_runs(keys: wp.array(dtype=wp.int64), n: int, starts: wp.array(dtype=wp.int32),
                ends: wp.array(dtype=wp.int32)):
    i = wp.tid()
    c = wp.int32(keys[i] >> wp.int64(32))
    if i == 0 or wp.int32(keys[i - 1] >> wp.int64(32)) != c:
        starts[c] = i
    if i == n - 1 or wp.int32(keys[i + 1] >> wp.int64(32)) != c:
        ends[c] = i + 1


@wp.kernel(enable_backward=False)
def _clear_cells(keys: wp.array(dtype=wp.int32), starts: wp.array(dtype=wp.int32), ends: wp.array(dtype=wp.int32)):
    # the cells the previous build filled, by its sorted keys (every other cell is still empty)
    c = keys[wp.tid()]
    starts[c] = 0
    ends[c] = 0


@wp.kernel(enable_backward=False)
def _clear_group_cells(keys: wp.array(dtype=wp.int64), starts: wp.array(dtype=wp.int32),
                       ends: wp.array(dtype=wp.int32)):
    c = wp.int32(keys[wp.tid()] >> wp.int64(32))
    starts[c] = 0
    ends[c] = 0


@wp.kernel(enable_backward=False)
def _gather_groups(ids: wp.array(dtype=wp.int32), groups: wp.array(dtype=wp.int32),
                   out: wp.array(dtype=wp.int32)):
    i = wp.tid()
    out[i] = groups[ids[i]]


# ---- the CPU build: a counting sort into cells ---------------------------------------------------
# The CPU's pool has a few threads, each of which sorts best with its data in cache. So a build there
# splits each point's bucket into its high and low bits: the points are partitioned stably by the
# high bits (one count and one scatter per chunk of points, as a radix pass), then each partition,
# small enough to stay in cache, is counting-sorted by the low bits, which also gives each bucket's
# run directly (no separate pass over the sorted keys to find where runs start and end). The result
# is the same order as any stable sort by bucket. Keys are computed in the first count (no pass of
# their own).
CPU_DIGIT_BITS = 11  # the most bits either split takes (tables of 2048 counts, 8 KB; hash_grid.h's too)
_CPU_DIGITS = 1 << CPU_DIGIT_BITS


@wp.kernel(enable_backward=False)
def _cpu_count(points: wp.array(dtype=Any), inv_width: wp.float64, dx: int, dy: int, dz: int, n: int, chunk: int,
               chunks: int, low: int, parts: int, keys: wp.array(dtype=wp.int32), hist: wp.array(dtype=wp.int32)):
    # one task per chunk of points: their buckets, and how many of them fall in each partition (a
    # bucket's high bits), as the chunk's column of the partition-major histogram hist[h * chunks + b]
    b = wp.tid()
    counts = wp.zeros(shape=_CPU_DIGITS, dtype=wp.int32)
    for i in range(b * chunk, wp.min(n, (b + 1) * chunk)):
        k = wp._hash_grid_cell(points[i], inv_width, dx, dy, dz)
        keys[i] = k
        h = k >> low
        counts[h] = counts[h] + 1  # not +=, which is an atomic add (a locked one on the CPU)
    for h in range(parts):
        hist[h * chunks + b] = counts[h]


@wp.kernel(enable_backward=False)
def _cpu_scan(hist: wp.array(dtype=wp.int32), size: int):
    # one task: each (partition, chunk)'s first slot (parts * chunks counts, tens of microseconds: not
    # worth the launches of a parallel scan)
    total = int(0)
    for j in range(size):
        c = hist[j]
        hist[j] = total
        total += c


@wp.kernel(enable_backward=False)
def _cpu_partition(keys: wp.array(dtype=wp.int32), ids: wp.array(dtype=wp.int32), hist: wp.array(dtype=wp.int32),
                   n: int, chunk: int, chunks: int, low: int, parts: int):
    # one task per chunk of points (native/geometry/hash_grid.h: hash_grid_partition)
    b = wp.tid()
    wp._hash_grid_partition(keys, ids, hist, n, b * chunk, wp.min(n, (b + 1) * chunk), low, parts, chunks, b)


@wp.kernel(enable_backward=False)
def _cpu_cells(keys: wp.array(dtype=wp.int32), ids: wp.array(dtype=wp.int32), hist: wp.array(dtype=wp.int32),
               starts: wp.array(dtype=wp.int32), ends: wp.array(dtype=wp.int32), n: int, low: int, parts: int,
               chunks: int, tasks: int):
    # one task per 1 / tasks of the points (not of the partitions, which crowd where the points are):
    # the partitions that start there (native/geometry/hash_grid.h: hash_grid_sort_cells)
    t = wp.tid()
    lo = wp.int32(wp.int64(t) * wp.int64(n) // wp.int64(tasks))
    hi = wp.int32(wp.int64(t + 1) * wp.int64(n) // wp.int64(tasks))
    wp._hash_grid_sort_cells(keys, ids, hist, starts, ends, n, lo, hi, low, parts, chunks)


@wp.kernel(enable_backward=False)
def _store(desc: wp.array(dtype=HashGridDesc), value: HashGridDesc):
    desc[0] = value


class HashGrid:
    """A hashed grid of ``dim_x * dim_y * dim_z`` buckets over all of space (Warp's ``wp.HashGrid``):
    cells are cubes of the width given to :meth:`build`; a cell at (x, y, z) lands in bucket
    (x mod dim_x, y mod dim_y, z mod dim_z). Kernels take its :attr:`id` (a ``wp.uint64``) and query
    it with ``wp.hash_grid_query`` / ``wp.hash_grid_query_next``."""

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self.id = None  # until __init__ has buffers (a bare __new__ then __del__ must work, as in Warp)
        return self

    def __init__(self, dim_x, dim_y, dim_z, device=None, dtype=None):
        dtype = T.float32 if dtype is None else dtype
        if dtype not in _VEC:
            raise TypeError(f"Unsupported dtype {dtype} for HashGrid. Supported types: float16, float32, float64")
        try:
            dims = tuple(operator.index(d) for d in (dim_x, dim_y, dim_z))
        except TypeError as e:
            raise TypeError("HashGrid dimensions must be integers") from e
        if min(dims) <= 0:
            raise RuntimeError("Hash grid dimensions must be positive")
        cells = dims[0] * dims[1] * dims[2]
        if cells > MAX_CELLS:
            raise RuntimeError(f"Hash grid cell count exceeds supported limit: {dims[0]} * {dims[1]} * {dims[2]} "
                               f"= {cells} > {MAX_CELLS}")
        self.device = get_device(device)
        self.dtype = dtype
        self._dims = dims
        self._cells = cells
        self._capacity = 0
        self._grouped_capacity = 0
        self._starts = self._ends = None
        self._hist = None  # the CPU build's histogram (_cpu_build)
        # the last build's point count and grouping, whose sorted keys name the cells to clear; None:
        # not known (a build that failed midway, or one in a CUDA graph, whose replays the host
        # does not follow), so the next build clears every cell
        self._filled = (0, False)
        self.reserved = False
        self.groups = None
        self.points = None
        self._desc = zeros(1, dtype=HashGridDesc, device=self.device)
        self._written = None  # the fields _write last wrote into _desc (None: unknown)
        self._replay = Replay()  # repeated builds of the same arrays: one graph launch (CUDA)
        self.id = self._desc.ptr
        self._write(num_points=-1)

    def __del__(self):
        # the buffers are arrays, freed with this object: a launch given the old id is refused
        retired.retire(self.id, "wp.HashGrid")
        self.id = None

    @property
    def dim_x(self):
        return self._dims[0]

    @property
    def dim_y(self):
        return self._dims[1]

    @property
    def dim_z(self):
        return self._dims[2]

    # ---- buffers -------------------------------------------------------------------------------

    def reserve(self, num_points, with_groups=False):
        """Allocate for builds of up to ``num_points`` points (with groups too if ``with_groups``), so
        later builds of that size allocate nothing (as before a graph capture)."""
        if cpu_capture.active(self.device):
            raise NotImplementedError("HashGrid.reserve() cannot be called during CPU graph capture; reserve "
                                      "before capture")
        n = operator.index(num_points)
        if n < 0:
            raise ValueError(f"num_points must be non-negative, got {n}")
        self._ensure(n, with_groups)
        if not self.reserved:
            self._write(num_points=0)
        self.reserved = True

    def _ensure(self, n: int, grouped: bool):
        if self._starts is None:
            # zeroed once; after that each build clears only the cells the one before it filled
            self._starts = zeros(self._cells, dtype=T.int32, device=self.device)
            self._ends = zeros(self._cells, dtype=T.int32, device=self.device)
        if n > self._capacity:
            # sorts take 2n elements (Warp's convention for radix_sort_pairs)
            self._keys = uninitialized(2 * n, dtype=T.int32, device=self.device)  # each build writes them
            self._ids = uninitialized(2 * n, dtype=T.int32, device=self.device)
            self._capacity = n
        if grouped and n > self._grouped_capacity:
            self._keys64 = uninitialized(2 * n, dtype=T.int64, device=self.device)
            self._sorted_groups = uninitialized(n, dtype=T.int32, device=self.device)
            self._grouped_capacity = n

    # ---- the build -----------------------------------------------------------------------------

    def build(self, points: array, radius, groups: array | None = None):
        """Bucket ``points`` (an array of vec3h / vec3 / vec3d, as the grid's dtype) into cells of width
        ``radius``; with ``groups`` (int32, one per point) queries may ask for one group's points."""
        if saveable_capture(self.device):
            raise NotImplementedError("HashGrid.build() cannot be used in a saveable graph capture because HashGrid "
                                      "serialization is not yet supported; use apic=False or build outside capture")
        with cpu_capture.operation(self.device, functools.partial(self.build, points, radius, groups)):
            self._replay.run(self.device, self._replay_key(points, radius, groups),
                             lambda: self._build(points, radius, groups))
        self.points, self.groups = points, groups  # (a replayed build does not run _build)

    def _replay_key(self, points, radius, groups):
        """What a build reads from the host (``Replay``): None where it is not a plain repeat."""
        try:
            r = float(radius)
        except (TypeError, ValueError):
            return None
        if not isinstance(points, array) or not (groups is None or isinstance(groups, array)):
            return None
        return (array_key(points), array_key(groups), r, self._capacity, self._grouped_capacity,
                self._starts is not None)

    def _build(self, points, radius, groups):
        points, groups, width = self._checked(points, radius, groups)
        n = points.size
        dims = list(self._dims)
        bits = max(1, (self._cells - 1).bit_length())
        # (the partitions sit at offset n of 2n-long buffers, indexed in int32)
        cpu_sort = groups is None and self.device.is_cpu and bits <= 2 * CPU_DIGIT_BITS and n < 1 << 30
        clear = 0
        filled = self._filled
        if n and groups is None and not cpu_sort and filled is not None and not filled[1] and \
                n <= self._capacity and not self.device.is_capturing:
            clear, self._filled = filled[0], None  # the key pass clears the previous build's cells
        else:
            self._clear()
        self._ensure(n, groups is not None)
        if n:
            if cpu_sort:
                self._cpu_build(points, n, width, bits)
            elif groups is None:
                keys, ids = self._keys, self._ids
                wp.launch(_bucket_keys, dim=max(n, clear), inputs=[points, 1.0 / width, *dims, keys, n, clear,
                                                                   self._starts, self._ends],
                          device=self.device, record_tape=False)
                utils.sort_order(keys[:n].view(T.uint32), ids[:n], 0, bits)
                wp.launch(_runs, dim=-(-n // RUN_SPAN), inputs=[keys, n, self._starts, self._ends],
                          device=self.device, record_tape=False)
            else:
                keys, ids = self._keys64, self._ids
                wp.launch(_group_keys, dim=n, inputs=[points, groups, 1.0 / width, *dims, keys],
                          device=self.device, record_tape=False)
                utils.sort_order(keys[:n].view(T.uint64), ids[:n], 0, 32 + bits)
                wp.launch(_group_runs, dim=n, inputs=[keys, n, self._starts, self._ends], device=self.device,
                          record_tape=False)
                wp.launch(_gather_groups, dim=n, inputs=[ids, groups, self._sorted_groups], device=self.device,
                          record_tape=False)
        self.points, self.groups = points, groups
        self._filled = None if self.device.is_capturing else (n, groups is not None)
        self._write(num_points=n, width=width, grouped=groups is not None)
        self.reserved = True

    def _cpu_build(self, points, n: int, width: float, bits: int):
        """The CPU's build (see _cpu_count): buckets of ``bits`` bits, split into partitions by their
        high half and cells within a partition by the low one."""
        low = bits // 2
        parts = ((self._cells - 1) >> low) + 1
        chunk, chunks = utils.radix.cpu_chunks(n, self.device)  # tasks as the CPU's radix sort cuts them
        if self._hist is None or self._hist.size < parts * chunks:
            self._hist = uninitialized(parts * chunks, dtype=T.int32, device=self.device)  # each build writes it
        keys, ids, hist, dev = self._keys, self._ids, self._hist, self.device
        wp.launch(_cpu_count, dim=chunks, inputs=[points, 1.0 / width, *self._dims, n, chunk, chunks, low, parts, keys,
                                                  hist], device=dev, record_tape=False)
        wp.launch(_cpu_scan, dim=1, inputs=[hist, parts * chunks], device=dev, record_tape=False)
        wp.launch(_cpu_partition, dim=chunks, inputs=[keys, ids, hist, n, chunk, chunks, low, parts], device=dev,
                  record_tape=False)
        wp.launch(_cpu_cells, dim=chunks, inputs=[keys, ids, hist, self._starts, self._ends, n, low, parts, chunks,
                                                  chunks], device=dev, record_tape=False)

    def _clear(self):
        """Empty the cells the previous build filled (its sorted keys are still in the key buffers):
        a point count's worth of writes instead of clearing all dim_x * dim_y * dim_z cells."""
        filled, self._filled = self._filled, None
        if self._starts is None:
            return
        if filled is None or self.device.is_capturing:
            self._starts.zero_()
            self._ends.zero_()
        elif filled[0]:
            n, grouped = filled
            kernel, keys = (_clear_group_cells, self._keys64) if grouped else (_clear_cells, self._keys)
            wp.launch(kernel, dim=n, inputs=[keys, self._starts, self._ends], device=self.device, record_tape=False)

    def _checked(self, points, radius, groups):
        vec = _VEC[self.dtype]
        if not isinstance(points, array):
            raise TypeError(f"HashGrid.build(): points must be a wp.array of {vec.__name__}, "
                            f"got {type(points).__name__}")
        if points.dtype is not vec:
            raise TypeError(f"Hash grid points should have type {vec.__name__}, got {T.type_name(points.dtype)}")
        width = float(radius)
        if not width > 0.0:  # NaN too
            raise ValueError(f"Hash grid cell width must be positive, got {radius}")
        if points.device != self.device:
            raise RuntimeError(f"points must live on the same device as this HashGrid ({self.device}), "
                               f"got {points.device}")
        if points.ndim > 1:
            points = points.contiguous().flatten()
        if groups is not None:
            if not isinstance(groups, array) or groups.dtype is not T.int32:
                raise RuntimeError("groups should be an array of type wp.int32")
            if groups.device != self.device:
                raise RuntimeError(f"groups must live on the same device as this HashGrid ({self.device}), "
                                   f"got {groups.device}")
            if groups.size != points.size:
                raise RuntimeError(f"groups must have the same length as points ({points.size}), got {groups.size}")
            if groups.ndim > 1:
                groups = groups.contiguous().flatten()
        return points, groups, width

    def _write(self, num_points: int, width: float = 1.0, grouped: bool = False):
        d = HashGridDesc()
        if self._capacity:
            d.point_ids = self._ids.ptr
        if self._starts is not None:
            d.cell_starts, d.cell_ends = self._starts.ptr, self._ends.ptr
        if grouped:
            d.groups = self._sorted_groups.ptr
        d.cell_width = width
        d.dim_x, d.dim_y, d.dim_z = self._dims
        d.num_points = num_points
        # the same descriptor as the last one written is not written again (every build of one size,
        # say); a graph capture writes it, and its replays write behind the host's back, so after one
        # the next build writes again
        fields = (d.point_ids, d.cell_starts, d.groups, width, num_points)
        capturing = self.device.is_capturing or cpu_capture.active(self.device)
        if fields == self._written and not capturing:
            return
        self._written = None if capturing else fields
        wp.launch(_store, dim=1, inputs=[self._desc, d], device=self.device, record_tape=False)
