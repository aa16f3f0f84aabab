"""The block shape a launch of a kernel that uses tiles compiles for (runtime/launch.py asks for it).

A tile kernel is compiled per block size and per which ``wp.tid()`` components are the same in
every lane of a block (``emit.block.BlockShape``): component k of a launch is uniform when the
launch dimensions after k (folded ones included) hold a whole number of blocks, e.g. the block
index of ``wp.launch_tiled`` (its last dimension is the lanes) or the row of a
``wp.launch(k, (4096, 4096), block_dim=256)``.
"""
from __future__ import annotations

import os

from .. import config
from ..emit.block import BlockShape
from ..errors import LaunchError
from ..ir import nodes as ir
from ..language import types as T
from ..tiling.lanes import analyse
from ..tiling.lanes import uses_tiles as ir_uses_tiles
from .device import get_device
from .packing import launch_bounds


def uses_tiles(kernel, block_dim: int = 0) -> bool:
    """Whether ``kernel`` (a concrete specialisation) is emitted per block (cached on it); ``block_dim``:
    the launch's, for a kernel whose tile shapes type-check only at that block size."""
    flag = kernel.__dict__.get("_tw_tiles")
    if flag is None:
        flag = kernel._tw_tiles = ir_uses_tiles(kernel.ir_for(block_dim) if block_dim else kernel.ir)
    return flag


def effective_block_dim(block_dim, device) -> int:
    if block_dim is None or block_dim <= 0:
        block_dim = 256
    if device.kind == "cpu" and not config.enable_cpu_blocks:
        return 1  # Warp's CPU default: one lane per block
    if not isinstance(block_dim, int) or block_dim > 1024:
        raise LaunchError(f"block_dim must be an int from 1 to 1024, got {block_dim!r}")
    return block_dim


def block_shape(kernel, dim, block_dim: int):
    """The ``BlockShape`` a launch of ``kernel`` over ``dim`` in blocks of ``block_dim`` compiles for."""
    memo = kernel.__dict__.setdefault("_tw_block_shapes", {})
    key = (tuple(dim) if isinstance(dim, list) else dim, block_dim)  # a list dim finds its memo entry too
    shape = memo.get(key)
    if shape is None:
        b = launch_bounds(dim, 0)
        dims = list(b.shape[:b.ndim])
        fn = kernel.ir_for(block_dim)
        tids = _tid_calls(fn)
        uniform, lane = set(), set()
        for k, n in tids:
            tail = 1
            for d in dims[k + 1:]:
                tail *= d
            if tail % block_dim == 0:
                uniform.add((k, n))
            elif tail == 1 and dims[k] % block_dim == 0:  # the innermost dimension, whole blocks wide
                lane.add((k, n))
        blocks = -(-b.size // block_dim) if block_dim else 0
        shape = BlockShape(block_dim, frozenset(uniform), cuda_threads(fn, block_dim, uniform, blocks),
                           frozenset(lane), rows=len(dims) >= 2 and dims[-1] == block_dim, ndim=len(dims))
        if len(memo) < 64:
            memo[key] = shape
    return shape


#: the most elements of one register tile, and 4-byte words of per-lane values, a thread holds
#: when a block runs on fewer threads than it has lanes
ELEMENTS_PER_THREAD = 8
LANE_WORDS_PER_THREAD = 64


#: a launch of fewer blocks keeps one CUDA thread per lane: its blocks alone do not fill the device
#: (an H100 holds 132 SMs x 32 blocks), so fewer threads would only mean less parallel work (the
#: tile N-body example, 64 blocks of 64 lanes, ran at half Warp's speed on one warp per block)
MANY_BLOCKS = 1024


def cuda_threads(fn, block_dim: int, uniform: set, blocks: int = MANY_BLOCKS) -> int:
    """CUDA threads per block, for a kernel that reads memory in a launch of at least MANY_BLOCKS
    blocks: halved from one per lane while each
    thread would hold at most 8 elements of the largest tile and 8 lanes (64 words of per-lane
    values), down to one warp. A thread then has several loads in flight, and a one-warp block
    reduces without barriers. Measured on an H100 (benchmarks/RESULTS.md): the tile sum of squares
    on one warp per 256 lanes (8 lanes a thread) ran 2.4x faster than on 128 threads, the row sum
    on one warp per 64 lanes 1.3x faster; the copy (32 x 128 tiles) keeps one thread per lane
    ($TILEWARP_LANES_PER_THREAD overrides the count)."""
    reads = any(isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name in ("load", "tile_load")
                for s in ir.walk(fn.body))
    threads = block_dim
    if reads and block_dim % 32 == 0 and blocks >= MANY_BLOCKS:
        biggest = max([v.type.size for v in fn.values if T.is_tile(v.type)], default=0)
        varying = analyse(fn, frozenset(uniform)).varying
        words = sum(-(-T.type_size(v.type) // 4) for v in fn.values if id(v) in varying)
        while threads % 64 == 0:
            lanes = block_dim // (threads // 2)
            if lanes > 8 or biggest > ELEMENTS_PER_THREAD * (threads // 2) or words * lanes > LANE_WORDS_PER_THREAD:
                break
            threads //= 2
    lanes = int(os.environ.get("TILEWARP_LANES_PER_THREAD", block_dim // threads) or 1)
    while lanes > 1 and block_dim % lanes:
        lanes -= 1
    return block_dim // max(lanes, 1)


def _tid_calls(fn) -> set:
    return {tuple(s.op.template) for s in ir.walk(fn.body)
            if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tid"}


def resources(kernel, dim, block_dim: int = 256, device=None, backward: bool = False) -> dict:
    """What one block of ``kernel`` launched over ``dim`` in blocks of ``block_dim`` needs on
    ``device`` (compiling it if needed): ``shared_bytes`` (the tiles' planned shared memory, in
    bytes), and on CUDA ``static_shared_bytes``, ``registers`` and ``local_bytes`` (spills) from the
    CUBIN, and ``threads`` per block. (``wp.launch`` refuses, before launching, a block whose shared
    memory exceeds the device's limit.)"""
    device = get_device(device)
    block = block_shape(kernel, dim, effective_block_dim(block_dim, device)) if uses_tiles(kernel) else None
    get = kernel.compiled_backward if backward else kernel.compiled
    compiled = get(device, block) if block is not None else get(device)
    out = {"shared_bytes": compiled.shared_bytes,
           "threads": block.threads if block is not None and device.kind == "cuda" else (1 if block else block_dim)}
    if device.kind == "cuda":
        from cuda.bindings import driver  # only where a GPU is

        fn = device.backend._cufn[compiled.handle]
        attr = driver.CUfunction_attribute
        get_attr = lambda a: int(driver.cuFuncGetAttribute(a, fn)[1])  # noqa: E731
        out.update(static_shared_bytes=get_attr(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
                   registers=get_attr(attr.CU_FUNC_ATTRIBUTE_NUM_REGS),
                   local_bytes=get_attr(attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES))
    return out
