"""``wp.Bvh``: a bounding volume hierarchy over boxes, and ``Tree``, the build both it and ``wp.Mesh``
use.

Every step runs as tilewarp kernels on the tree's device (the CPU's thread pool, or the GPU), so
one code path serves both: the scene box of the item centres, a 30-bit Morton key per item (under a
32-bit group id for grouped trees), a stable radix sort, then the LBVH hierarchy (each
internal node from the sorted keys alone), leaves of up to ``leaf_size`` items, the compact
depth-first layout the queries walk (one depth-first task on the CPU, a count and a placement pass
on the GPU: the same layout), group roots, and a refit (on the CPU backward sweeps over runs of
whole subtrees, in parallel; on the GPU one bottom-up launch). ``native/geometry/bvh.h`` has the
layout. The ``sah`` (default on the CPU) and ``median`` constructors replace the Morton sort and
LBVH hierarchy with a top-down build (``native/geometry/bvh_sah.h``) writing the same build nodes;
the steps after it are shared. That build runs on the CPU: a GPU tree builds its hierarchy on a host
mirror of its inputs and copies the build nodes back (Warp's behaviour for a CPU constructor on a
GPU tree), then lays the tree out and refits it on the GPU. Results are deterministic: the sort is
stable, ties between equal keys go by position, and a top-down tree does not depend on which thread
built which subtree, so a GPU tree built this way is the CPU's tree node for node.

The tree's id is the address of a descriptor (``BvhDesc``) that a one-thread kernel writes, so
builds and refits stay in stream order with no host round trip (a grouped tree's group count stays
on the device too).
"""
from __future__ import annotations

import enum
import tilewarp as wp

from .. import utils
from ..builtins.bvh import BvhDesc
from ..language import types as T
from ..runtime import cpu_capture, retired
from ..runtime.array import array, copy, empty, uninitialized, zeros
from ..runtime.cuda import CaptureError
from ..runtime.device import get_device

_CHUNK = 256  # items one CPU task folds into the scene box (then one atomic per chunk) ...
_GPU_CHUNK = 16  # ... and one GPU thread: enough threads to hide memory latency; a warp sends one atomic


def fold_plan(items: int, device) -> tuple:
    """``(threads, [per_thread, thread_step, item_step])`` for a kernel folding ``items`` items, then
    one atomic per warp: thread t takes items t * thread_step + k * item_step, k < per_thread, a run
    of its own on the CPU, a stride through all of them on the GPU (neighbouring threads read
    neighbouring items)."""
    chunk = _CHUNK if device.is_cpu else _GPU_CHUNK
    threads = max(-(-items // chunk), 1)
    return threads, [chunk, *([chunk, 1] if device.is_cpu else [1, threads])]


_BIG = 3.0e38


class BvhConstructor(enum.IntEnum):
    """Warp's names for the build algorithms. ``SAH`` (the default on the CPU) builds top down with a
    binned surface area heuristic and ``MEDIAN`` splits each run at its median by count along its
    widest axis (``native/geometry/bvh_sah.h``: CPU code, one task per thread, sharing the nodes still
    to split); ``LBVH`` (the default on CUDA) is the parallel Morton-code build. As in Warp, ``SAH`` or
    ``MEDIAN`` on a CUDA tree copies the inputs to the CPU, builds the hierarchy there and copies it
    to the GPU, which lays it out and refits it: slower to build than the LBVH, faster to query, the
    same tree as on the CPU. It reads back, so it cannot run inside a CUDA graph capture
    (``CaptureError``: use ``LBVH`` there). ``CUBQL`` builds the LBVH everywhere. The choice is kept
    for ``rebuild``."""

    SAH = 0
    MEDIAN = 1
    LBVH = 2
    CUBQL = -1

    @classmethod
    def from_str(cls, value):
        if isinstance(value, cls):
            return value
        try:
            return cls[str(value).upper()]
        except KeyError:
            raise ValueError(f"Unknown BVH constructor '{value}', expected one of: "
                             f"{', '.join(m.name.lower() for m in cls)}") from None


def constructor_of(value, device) -> BvhConstructor:
    if value is None:
        return BvhConstructor.SAH if device.is_cpu else BvhConstructor.LBVH
    return BvhConstructor.from_str(value)


@wp.func
def _grown(lo: wp.vec3, hi: wp.vec3, c: wp.vec3):
    # [lo, hi] grown to hold c; a NaN or infinite centre is left out of the scene box
    if wp.isfinite(c[0]) and wp.isfinite(c[1]) and wp.isfinite(c[2]):
        return wp.min(lo, c), wp.max(hi, c)
    return lo, hi


@wp.kernel(enable_backward=False)
def _empty_box(box: wp.array(dtype=wp.vec3)):
    # a kernel, not a host copy: a copy from pageable host memory waits for the stream to drain
    box[0] = wp.vec3(_BIG)
    box[1] = wp.vec3(-_BIG)


@wp.kernel(enable_backward=False)
def _scene_box(tree: wp.uint64, n: int, per_thread: int, thread_step: int, item_step: int,
               box: wp.array(dtype=wp.vec3)):
    # thread t folds items t * thread_step + k * item_step, k < per_thread (fold_plan)
    t = wp.tid()
    lo = wp.vec3(_BIG)
    hi = wp.vec3(-_BIG)
    for k in range(per_thread):
        i = t * thread_step + k * item_step
        if i < n:
            lo, hi = _grown(lo, hi, 0.5 * (wp._bvh_item_lower(tree, i) + wp._bvh_item_upper(tree, i)))
    lo = wp._lane_min(lo)
    hi = wp._lane_max(hi)
    if wp._lane_leader():
        wp.atomic_min(box, 0, lo)
        wp.atomic_max(box, 1, hi)


@wp.kernel(enable_backward=False)
def _keys(tree: wp.uint64, box: wp.array(dtype=wp.vec3), groups: wp.array(dtype=wp.int32), grouped: wp.bool,
          keys: wp.array(dtype=wp.uint64)):
    i = wp.tid()
    g = wp.int32(0)
    if grouped:
        g = groups[i]
    keys[i] = wp._bvh_item_key(tree, i, box[0], box[1], g, grouped)


@wp.kernel(enable_backward=False)
def _sah_prims(tree: wp.uint64, n: int, chunk: int, sorted: wp.bool, box: wp.array(dtype=wp.vec3)):
    # the build's copy of the boxes, and the bounds of their finite (doubled) centres
    t = wp.tid()
    lo = wp.vec3(_BIG)
    hi = wp.vec3(-_BIG)
    for k in range(t * chunk, wp.min(n, (t + 1) * chunk)):
        lo, hi = _grown(lo, hi, wp._bvh_sah_prim(tree, k, sorted))
    wp.atomic_min(box, 0, lo)
    wp.atomic_max(box, 1, hi)


@wp.kernel(enable_backward=False)
def _sah_start(tree: wp.uint64, box: wp.array(dtype=wp.vec3), median: wp.bool, grouped: wp.bool):
    wp._bvh_build_sah(tree, box[0], box[1], median, grouped)


@wp.kernel(enable_backward=False)
def _sah_tasks(tree: wp.uint64, median: wp.bool, grouped: wp.bool):
    wp._bvh_build_sah_tasks(tree, median, grouped)


@wp.kernel(enable_backward=False)
def _internal(tree: wp.uint64):
    wp._bvh_build_internal(tree, wp.tid())


@wp.kernel(enable_backward=False)
def _leaves(tree: wp.uint64):
    wp._bvh_build_leaf(tree, wp.tid())


@wp.kernel(enable_backward=False)
def _collapse(tree: wp.uint64, grouped: wp.bool):
    wp._bvh_collapse(tree, wp.tid(), grouped)


@wp.kernel(enable_backward=False)
def _layout_serial(tree: wp.uint64):
    wp._bvh_layout_serial(tree)


@wp.kernel(enable_backward=False)
def _layout_count(tree: wp.uint64):
    wp._bvh_layout_count(tree, wp.tid())


@wp.kernel(enable_backward=False)
def _layout_place(tree: wp.uint64):
    wp._bvh_layout_place(tree, wp.tid())


@wp.kernel(enable_backward=False)
def _refit(tree: wp.uint64):
    wp._bvh_refit(tree, wp.tid())


@wp.kernel(enable_backward=False)
def _refit_runs(tree: wp.uint64, begins: wp.array(dtype=wp.int32), ends: wp.array(dtype=wp.int32)):
    t = wp.tid()
    wp._bvh_refit_sweep(tree, begins[t], ends[t])


@wp.kernel(enable_backward=False)
def _refit_gaps(tree: wp.uint64, begins: wp.array(dtype=wp.int32), ends: wp.array(dtype=wp.int32), n: int):
    # one task, the runs in order (the last nodes first): what the parallel runs left, above them
    for g in range(n):
        wp._bvh_refit_sweep(tree, begins[g], ends[g])


@wp.func
def _group_of(keys: wp.array(dtype=wp.uint64), i: int):
    return wp.int32(wp.int64(keys[i] >> wp.uint64(30)) - wp.int64(2147483648))


@wp.kernel(enable_backward=False)
def _group_heads(keys: wp.array(dtype=wp.uint64), heads: wp.array(dtype=wp.int32)):
    i = wp.tid()
    head = 1
    if i > 0:
        if _group_of(keys, i) == _group_of(keys, i - 1):
            head = 0
    heads[i] = head


@wp.kernel(enable_backward=False)
def _group_runs(keys: wp.array(dtype=wp.uint64), n: int, heads: wp.array(dtype=wp.int32),
                ids: wp.array(dtype=wp.int32), firsts: wp.array(dtype=wp.int32), lasts: wp.array(dtype=wp.int32)):
    i = wp.tid()
    g = heads[i] - 1  # inclusive scan of the head flags: this position's group number
    first = True
    if i > 0:
        first = g != heads[i - 1] - 1
    if first:
        ids[g] = _group_of(keys, i)
        firsts[g] = i
    last = True
    if i < n - 1:
        last = g != heads[i + 1] - 1
    if last:
        lasts[g] = i


@wp.kernel(enable_backward=False)
def _group_roots(tree: wp.uint64, firsts: wp.array(dtype=wp.int32), lasts: wp.array(dtype=wp.int32),
                 heads: wp.array(dtype=wp.int32), n: int):
    # one task per item, as many working as there are groups (heads[n - 1], counted on the device)
    g = wp.tid()
    if g < heads[n - 1]:
        wp._bvh_group_root(tree, g, firsts[g], lasts[g])


@wp.kernel(enable_backward=False)
def _store(desc: wp.array(dtype=BvhDesc), value: BvhDesc):
    desc[0] = value


def _launch(kernel, n, inputs, device):
    if n > 0:
        wp.launch(kernel, dim=n, inputs=inputs, device=device, record_tape=False)


def _launch_spread(kernel, n, inputs, device):
    """A launch of a few long tasks, one per thread from the start (the CPU runtime runs a launch of
    few tasks inline until it has timed that kernel as heavy)."""
    backend = device.backend
    saved = backend.min_parallel_tasks
    backend.min_parallel_tasks = 1
    try:
        _launch(kernel, n, inputs, device)
    finally:
        backend.min_parallel_tasks = saved


#: A CPU refit splits trees of more nodes than this into runs of whole subtrees, this many per thread
_SWEEP_SPLIT = 1 << 14
_RUNS_PER_THREAD = 4
#: A CPU SAH / median build of at least this many items runs one task per thread; the list of nodes
#: they share has room for _SAH_TASKS (SAH_TASKS in bvh_sah.h)
_SAH_PARALLEL = 1 << 14
_SAH_TASKS = 64


class Tree:
    """The buffers and build of one tree over ``n`` items: boxes (``lowers``/``uppers`` arrays) or
    triangles (``points`` and ``indices``). ``write(desc)`` stores the descriptor where the owner's
    id points (a BVH's own one, or the head of a mesh's). ``constructor`` (a ``BvhConstructor``,
    changeable between builds) picks the build; see ``BvhConstructor``. A top-down constructor on a
    GPU tree builds the hierarchy on a host mirror (``_hierarchy_from_host``); every step after the
    hierarchy (leaves, layout, group roots, refits) runs on the tree's device whichever built it."""

    def __init__(self, device, n: int, leaf_size: int, write, groups=None, triangles: bool = False,
                 constructor=BvhConstructor.LBVH):
        self.device, self.n, self.leaf_size, self.write = device, n, leaf_size, write
        self.groups, self.constructor = groups, constructor
        nodes = max(2 * n - 1, 1)
        # the build writes every buffer before reading it: no zero fill on allocation. The layout's
        # nodes start 32 bytes into the buffer, so each children pair (1, 2), (3, 4), ... fills one
        # 64-byte line (allocations are 64-byte aligned).
        self.nodes = uninitialized((nodes + 1) * 8, dtype=T.int32, device=device)
        self.parents = uninitialized(nodes, dtype=T.int32, device=device)
        self.ends = uninitialized(nodes, dtype=T.int32, device=device)
        self.count = uninitialized(1, dtype=T.int32, device=device)
        self.links = uninitialized(2 * nodes, dtype=T.int32, device=device)
        self.build_parents = uninitialized(nodes, dtype=T.int32, device=device)
        self.ranges = uninitialized(2 * nodes, dtype=T.int32, device=device)
        # the GPU lays the tree out in parallel passes, the CPU in one depth-first task (the same
        # layout; tests set this on the CPU to check the parallel passes there)
        self.parallel_layout = not device.is_cpu
        # a GPU tree builds a top-down constructor's hierarchy on a host mirror (tests set this on the
        # CPU to run that path there, copies included)
        self.host_hierarchy = not device.is_cpu
        self.sizes = None  # the parallel layout's counts: allocated by the first build that uses it
        self.keep_rows = False  # a host mirror's build nodes go to a GPU tree whole (see _lean)
        self.remap = uninitialized(nodes, dtype=T.int32, device=device)
        self.counters = uninitialized(nodes, dtype=T.int32, device=device)
        self.items = uninitialized(max(2 * n, 1), dtype=T.int32, device=device)
        self.keys = uninitialized(max(2 * n, 1), dtype=T.uint64, device=device)
        self.tris = uninitialized(max(3 * n, 1), dtype=T.int32, device=device) if triangles else None
        self.box = empty(2, dtype=T.vec3, device=device)
        # the top-down build's shared list of nodes to split (sah_queue_t: 4 ints, then 12 per node)
        self.tasks = uninitialized(4 + 12 * _SAH_TASKS, dtype=T.int32, device=device) if device.is_cpu else None
        self.group_ids = self.group_roots = self.group_heads = None
        self.sources = {}
        self._plan = None

    def descriptor(self) -> BvhDesc:
        d = BvhDesc()
        d.nodes, d.parents, d.ends, d.count = self.nodes.ptr + 32, self.parents.ptr, self.ends.ptr, self.count.ptr
        # a lean build leaves these out (0): nothing after it reads them, and not writing them saves
        # the first touch of their pages, which costs more than the writes on a fresh tree
        full = not self._lean()
        d.links = self.links.ptr
        d.build_parents, d.ranges = (self.build_parents.ptr, self.ranges.ptr) if full else (0, 0)
        d.sizes = self.sizes.ptr if self.sizes is not None else 0
        d.remap = self.remap.ptr if full else 0
        d.counters, d.items, d.keys = self.counters.ptr, self.items.ptr, self.keys.ptr
        d.tris = self.tris.ptr if self.tris is not None else 0
        # a top-down build permutes its copy of the boxes in the layout's node buffer, before the
        # layout writes it (bvh_prim_t is 32 bytes a item, the buffer 64 bytes a item)
        d.prims = self.nodes.ptr if self.tasks is not None else 0
        d.tasks = self.tasks.ptr if self.tasks is not None else 0
        for name, a in self.sources.items():
            setattr(d, name, a.ptr if a is not None else 0)
        if self.group_heads is not None:
            d.group_ids, d.group_roots = self.group_ids.ptr, self.group_roots.ptr
            d.group_count = self.group_heads.ptr + 4 * (self.n - 1)
        d.num_items, d.num_nodes = self.n, max(2 * self.n - 1, 1) if self.n else 0
        d.num_groups, d.leaf_size = 0, self.leaf_size  # the group count is on the device (group_count)
        points = self.sources.get("points")  # a mesh's only: a host mirror has no tris, yet clamps indices
        d.num_points = points.size if points is not None else 0
        return d

    def _lean(self) -> bool:
        """Whether the build skips what only the parallel layout, group roots and a GPU tree's copy of
        the hierarchy read: the build nodes' parents and ranges, the leaf rows of items in leaf runs
        (the top-down build writes the ones the serial layout reads) and the layout's remap."""
        return (self.device.is_cpu and not self.parallel_layout and not self.host_hierarchy
                and self.groups is None and not self.keep_rows
                and self.constructor in (BvhConstructor.SAH, BvhConstructor.MEDIAN))

    def build(self, tree_id: int, **sources):
        """(Re)build from ``sources`` (``lowers``/``uppers`` or ``points``/``indices`` arrays)."""
        n, dev = self.n, self.device
        top_down = self.constructor in (BvhConstructor.SAH, BvhConstructor.MEDIAN)
        on_host = top_down and (self.host_hierarchy or not dev.is_cpu)  # the GPU has no top-down build of its own
        if on_host and n and not dev.is_cpu and dev.is_capturing:
            # refused before anything is queued: the mirror reads the inputs back, which a capture cannot
            raise CaptureError(
                f"BVH constructor '{self.constructor.name.lower()}' builds on the CPU from the inputs read back "
                f"from {dev}, which a CUDA graph capture does not allow: use constructor 'lbvh' for a tree built "
                "inside a capture, or build the tree outside the capture")
        self.sources = sources
        if self.parallel_layout and self.sizes is None:
            self.sizes = uninitialized(max(2 * n - 1, 1), dtype=T.int32, device=dev)
        self.write(self.descriptor())
        if n == 0:
            return
        grouped = self.groups is not None
        if on_host:
            self._hierarchy_from_host(grouped)
        else:
            self._hierarchy(tree_id, grouped, top_down)
        # the leaves' build nodes, and a mesh's triangles in sorted order, from the sorted items
        if not self._lean() or self.tris is not None:
            _launch(_leaves, n, [tree_id], dev)
        if not top_down and self.leaf_size > 1:  # a top-down build stops at leaf runs itself
            _launch(_collapse, n - 1, [tree_id, grouped], dev)
        nodes = 2 * n - 1
        if not self.parallel_layout:
            _launch(_layout_serial, 1, [tree_id], dev)
        else:
            self.counters.zero_()
            _launch(_layout_count, nodes, [tree_id], dev)
            _launch(_layout_place, nodes, [tree_id], dev)
        self._plan = None
        if grouped:
            self._group_roots(tree_id)
        self.refit(tree_id)

    def _hierarchy(self, tree_id, grouped, top_down):
        """The build nodes (``links``, ``build_parents``, ``ranges``; the leaves' rows come from
        ``_leaves`` after) and the sorted ``items`` (and ``keys``): the CPU's top-down build, or the LBVH."""
        n, dev = self.n, self.device
        if grouped or not top_down:  # a top-down build of groups starts from the items sorted by group
            self._sort(tree_id, grouped)
        if top_down:
            self._build_top_down(tree_id, grouped)
        else:
            self.build_parents.fill_(-1)
            _launch(_internal, n - 1, [tree_id], dev)

    def _hierarchy_from_host(self, grouped):
        """``_hierarchy`` of a top-down constructor for a GPU tree, as Warp does it: the inputs copied
        to a host mirror of this tree, the CPU's build there, and what that build wrote and the steps
        after it read copied into this tree: the build nodes (``links``, ``build_parents``, ``ranges``:
        whole, though the leaves' rows are written by ``_leaves`` next, here), the sorted ``items``,
        and a grouped tree's ``keys``, whose group bits the group roots read. The box copy the build
        permutes and its list of nodes to split stay on the host: nothing after the build reads them.
        The mirror is made per build, so no host copy of the tree outlives it."""
        cpu = get_device("cpu")
        host = {}
        for name, a in self.sources.items():
            host[name] = None if a is None else uninitialized(a.shape, dtype=a.dtype, device=cpu)
            if a is not None:
                copy(host[name], a)  # from a GPU: waits for the work that wrote the inputs
        groups = None
        if grouped:
            groups = uninitialized(self.n, dtype=T.int32, device=cpu)
            copy(groups, self.groups)
        desc = zeros(1, dtype=BvhDesc, device=cpu)

        def write(d):
            _launch(_store, 1, [desc, d], cpu)

        mirror = Tree(cpu, self.n, self.leaf_size, write, groups, constructor=self.constructor)
        mirror.sources, mirror.keep_rows = host, True
        write(mirror.descriptor())
        mirror._hierarchy(desc.ptr, grouped, top_down=True)
        # the library's array copies: this constructor is slow by choice, and its readback has already
        # drained the stream
        for name in ("links", "build_parents", "ranges"):
            copy(getattr(self, name), getattr(mirror, name))
        copy(self.items, mirror.items, count=self.n)
        if grouped:
            copy(self.keys, mirror.keys, count=self.n)

    def _sort(self, tree_id, grouped):
        """Items in the order of their keys: the Morton code of their centre in the scene box,
        under the group."""
        n, dev = self.n, self.device
        _launch(_empty_box, 1, [self.box], dev)
        threads, steps = fold_plan(n, dev)
        _launch(_scene_box, threads, [tree_id, n, *steps, self.box], dev)
        groups = self.groups if grouped else self.items  # any int32 array: unread
        _launch(_keys, n, [tree_id, self.box, groups, grouped, self.keys], dev)
        utils.sort_order(self.keys[:n], self.items[:n], 0, 62 if grouped else 30)

    def _build_top_down(self, tree_id, grouped):
        """The CPU's SAH or median build (bvh_sah.h): the boxes' copy and their centres' bounds, the
        root on the list of nodes to split, then one task per thread taking nodes from that list
        (splitting big ones, building small ones whole)."""
        n, dev = self.n, self.device
        median = self.constructor == BvhConstructor.MEDIAN
        _launch(_empty_box, 1, [self.box], dev)
        _launch(_sah_prims, -(-n // _CHUNK), [tree_id, n, _CHUNK, grouped, self.box], dev)
        _launch(_sah_start, 1, [tree_id, self.box, median, grouped], dev)
        threads = dev.backend.num_threads
        if n >= _SAH_PARALLEL and threads > 1:
            _launch_spread(_sah_tasks, threads, [tree_id, median, grouped], dev)
        else:
            _launch(_sah_tasks, 1, [tree_id, median, grouped], dev)

    def _group_roots(self, tree_id):
        """Each group's root. Nothing is read back (so a rebuild can be captured in a CUDA graph): the
        group count stays on the device (the inclusive scan's last head flag, which the descriptor
        points to), and the per-group buffers hold as many groups as there are items."""
        n, dev = self.n, self.device
        if self.group_heads is None:
            self.group_heads = uninitialized(n, dtype=T.int32, device=dev)
            self.group_ids = uninitialized(n, dtype=T.int32, device=dev)
            self.group_roots = uninitialized(n, dtype=T.int32, device=dev)
        heads = self.group_heads
        _launch(_group_heads, n, [self.keys, heads], dev)
        utils.array_scan(heads, heads, inclusive=True)
        firsts = uninitialized(n, dtype=T.int32, device=dev)
        lasts = uninitialized(n, dtype=T.int32, device=dev)
        _launch(_group_runs, n, [self.keys, n, heads, self.group_ids, firsts, lasts], dev)
        self.write(self.descriptor())
        _launch(_group_roots, n, [tree_id, firsts, lasts, heads, n], dev)

    @property
    def num_groups(self) -> int:
        """How many groups the last build found (read from the device: for tests and tools)."""
        if self.group_heads is None or not self.n:
            return 0
        return int(self.group_heads[self.n - 1:self.n].numpy()[0])

    def layout(self):
        """(lower, left, upper, right) of the nodes the queries walk (NumPy; for tests and tools)."""
        count = int(self.count.numpy()[0]) if self.n else 0
        raw = self.nodes.numpy()[8:].reshape(-1, 8)[:count]
        return raw[:, [0, 1, 2]].view("f4"), raw[:, 3], raw[:, [4, 5, 6]].view("f4"), raw[:, 7]

    def _runs(self):
        """The CPU refit's plan: runs of whole subtrees to sweep in parallel, then the gaps between
        them (the nodes above), last first. Made from the layout once per build."""
        if self._plan is None:
            count = int(self.count.numpy()[0])
            runs = []
            if count > _SWEEP_SPLIT:
                # views of host memory, read at a few hundred nodes (layout() would copy every column)
                left = self.nodes.numpy()[8:].reshape(-1, 8)[:, 3]
                ends = self.ends.numpy()
                want = _RUNS_PER_THREAD * self.device.backend.num_threads
                roots = [0]
                while len(roots) < want:  # split the biggest subtree until there are enough
                    inner = [r for r in roots if left[r] >= 0]
                    if not inner:
                        break
                    big = max(inner, key=lambda r: ends[r] - left[r])
                    roots.remove(big)
                    roots += [int(left[big]), int(left[big]) + 1]
                runs = sorted((int(left[r]), int(ends[r])) for r in roots if left[r] >= 0)
            gaps, at = [], count
            for b, e in reversed(runs):
                if e < at:
                    gaps.append((e, at))
                at = b
            if at > 0:
                gaps.append((0, at))

            def columns(pairs):
                return [array([p[k] for p in pairs] or [0], dtype=T.int32, device=self.device) for k in (0, 1)]

            self._plan = (len(runs), columns(runs), len(gaps), columns(gaps))
        return self._plan

    def refit(self, tree_id: int):
        if self.n == 0:
            return
        if self.device.is_cpu:
            runs, (rb, re), gaps, (gb, ge) = self._runs()
            _launch(_refit_runs, runs, [tree_id, rb, re], self.device)
            _launch(_refit_gaps, 1, [tree_id, gb, ge, gaps], self.device)
        else:
            self.counters.zero_()
            _launch(_refit, max(2 * self.n - 1, 1), [tree_id], self.device)


def _check_bounds(lowers, uppers):
    if not isinstance(lowers, array) or not isinstance(uppers, array):
        raise TypeError("Bvh() takes lowers and uppers as wp.array of wp.vec3")
    if len(lowers) != len(uppers):
        raise RuntimeError("The same number of lower and upper bounds must be provided")
    if lowers.device != uppers.device:
        raise RuntimeError("Lower and upper bounds must live on the same device")
    for name, a in (("lowers", lowers), ("uppers", uppers)):
        if a.dtype is not T.vec3 or not a.is_contiguous or a.ndim != 1:
            raise RuntimeError(f"{name} should be a contiguous array of type wp.vec3")


def check_groups(groups, device, count: int, what: str):
    if groups is None:
        return
    if not isinstance(groups, array) or groups.dtype is not T.int32 or not groups.is_contiguous:
        raise RuntimeError("groups should be a contiguous array of type wp.int32")
    if groups.device != device:
        raise RuntimeError(f"groups must live on the same device as {what}")
    if len(groups) != count:
        raise RuntimeError(f"groups must have the same length as {what}")


def check_leaf_size(leaf_size, name="leaf_size"):
    if int(leaf_size) < 1:
        raise ValueError(f"{name} must be greater than or equal to 1, current value: {leaf_size}")
    return int(leaf_size)


class Bvh:
    """A bounding volume hierarchy over boxes (Warp's ``wp.Bvh``): kernels take its :attr:`id` and
    query it with ``wp.bvh_query_aabb`` / ``_ray`` / ``_sphere`` / ``_capsule`` and ``wp.bvh_query_next``,
    which yield indices into ``lowers``/``uppers``. After changing the boxes call :meth:`refit`."""

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self.id = None
        return self

    def __init__(self, lowers: array, uppers: array, constructor=None, groups: array | None = None,
                 leaf_size: int = 1):
        _check_bounds(lowers, uppers)
        self.device = lowers.device
        check_groups(groups, self.device, len(lowers), "lowers/uppers")
        self._constructor = constructor_of(constructor, self.device)
        if self._constructor == BvhConstructor.CUBQL and groups is not None:
            raise RuntimeError("Grouped BVHs are not supported with constructor='cubql'")
        self.lowers, self.uppers, self.groups = lowers, uppers, groups
        self._desc = zeros(1, dtype=BvhDesc, device=self.device)
        self._tree = Tree(self.device, len(lowers), check_leaf_size(leaf_size), self._write, groups,
                          constructor=self._constructor)
        self.id = self._desc.ptr
        self._tree.build(self.id, lowers=lowers, uppers=uppers)

    def _write(self, desc):
        wp.launch(_store, dim=1, inputs=[self._desc, desc], device=self.device, record_tape=False)

    def __del__(self):
        retired.retire(self.id, "wp.Bvh")
        self.id = None

    def refit(self):
        """Recompute every node's box from the current ``lowers``/``uppers`` (same tree shape)."""
        with cpu_capture.operation(self.device, self.refit):
            self._tree.refit(self.id)

    def rebuild(self, constructor=None):
        """Build the tree again from the current ``lowers``/``uppers``, reusing its buffers."""
        if constructor is not None:
            self._constructor = constructor_of(constructor, self.device)
            self._tree.constructor = self._constructor
        with cpu_capture.operation(self.device, self.rebuild):
            self._tree.build(self.id, lowers=self.lowers, uppers=self.uppers)

    # read-only views of the tree, for tests and tools
    def _nodes(self):
        return self._tree.layout()
