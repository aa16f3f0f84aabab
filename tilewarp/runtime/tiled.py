"""Launching kernels that use tiles: the block shape a launch compiles for, and ``wp.launch_tiled``.

A tile kernel is compiled per block size and per which ``wp.tid()`` components are the same in
every lane of a block (``emit.block.BlockShape``): component k of a launch is uniform when the
launch dimensions after k (folded ones included) hold a whole number of blocks, e.g. the block
index of ``wp.launch_tiled`` (its last dimension is the lanes) or the row of a
``wp.launch(k, (4096, 4096), block_dim=256)``.
"""
from __future__ import annotations

import os
import weakref

from .. import config
from ..errors import LaunchError
from . import tape_state
from .array import array
from .device import get_device


def uses_tiles(kernel, block_dim: int = 0) -> bool:
    """Whether ``kernel`` (a concrete specialisation) is emitted per block (cached on it); ``block_dim``:
    the launch's, for a kernel whose tile shapes type-check only at that block size."""
    flag = kernel.__dict__.get("_tw_tiles")
    if flag is None:
        from ..block.lanes import uses_tiles as ir_uses_tiles

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
    from ..emit.block import BlockShape
    from .launch import launch_bounds

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
    from .. import types as T
    from ..block.lanes import analyse
    from ..ir import nodes as ir

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
    from ..ir import nodes as ir

    return {tuple(s.op.template) for s in ir.walk(fn.body)
            if isinstance(s, ir.Assign) and isinstance(s.op, ir.Call) and s.op.builtin.name == "tid"}


def launch_tiled(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None, stream=None,
                 adjoint=False, record_tape=True, record_cmd=False, max_blocks=0, block_dim=256):
    """Launch ``dim`` blocks of ``block_dim`` lanes: ``wp.tid()`` gives the block's index (and, as a
    last component, the lane), as in Warp, which runs ``launch`` over ``[*dim, block_dim]``."""
    key = launch_key("tiled", dim, block_dim, device, stream, adjoint, record_cmd, max_blocks)
    if key is not None and remembered(kernel, key, inputs, outputs):
        return None
    from .launch import launch

    dims = [dim] if isinstance(dim, int) else list(dim)
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"launch_tiled: dim must have 1 to 3 dimensions, got {dim!r}")
    bd = effective_block_dim(block_dim, get_device(device) if device is not None else _device_of(inputs, outputs))
    full = tuple(dims) + (bd,)
    cmd = launch(kernel, dim=full, inputs=inputs, outputs=outputs, adj_inputs=adj_inputs, adj_outputs=adj_outputs,
                 device=device, stream=stream, adjoint=adjoint, record_tape=record_tape, record_cmd=record_cmd,
                 max_blocks=max_blocks, block_dim=bd)
    if key is not None:  # what launch() remembered for the full dim serves this call's spelling too
        runs = kernel.__dict__.get("_tw_launches")
        run = runs.get(launch_key("launch", full, bd, device)) if runs else None
        if run is not None and len(runs) < 64:
            runs[key] = run
    return cmd  # a replayable Launch with record_cmd=True


# ---- repeated launches of tile kernels -------------------------------------------------------------
# A plain launch (no Tape, stream, adjoint, max_blocks, record_cmd or debug build) of a kernel launched
# the same way before is one argument packing and one submit: what a launch works out per call
# (specialisation, block shape, compiled kernel, bounds, grid) is remembered on the kernel per
# (dim, block_dim, device). A tile launch took 13-22 us of host time on the H100 machines, as long as
# the row-sum kernel itself; SIMT kernels have the native launch path (runtime/native_launch.py).

def launch_key(tag: str, dim, block_dim, device, stream=None, adjoint=False, record_cmd=False, max_blocks=0):
    """The key a launch (``tag``: which entry point) is remembered by; None for one not plain."""
    if stream is not None or adjoint or record_cmd or max_blocks or tape_state.tracking or config.verify_fp:
        return None
    try:
        key = (tag, dim if type(dim) is int else tuple(dim), block_dim, device, config.enable_cpu_blocks)
        hash(key)
    except TypeError:  # a dim or device of unusual objects: not remembered
        return None
    return key


#: kernels holding remembered launches, dropped when a setting changes (wp.config, module options:
#: debug builds, verify_fp, compile options), as native_launch.forget_all drops its launchers
_remembering: weakref.WeakSet = weakref.WeakSet()


def forget_launches(*_) -> None:
    for kernel in list(_remembering):
        kernel.__dict__.pop("_tw_launches", None)
    _remembering.clear()


config._listeners.append(forget_launches)


def remembered(kernel, key, inputs, outputs) -> bool:
    """Whether the launch remembered under ``key`` ran (False: take the general path)."""
    runs = kernel.__dict__.get("_tw_launches")
    run = runs.get(key) if runs is not None else None
    return run is not None and run(inputs, outputs)


def remember(kernel, key, dim, block_dim: int, device, named_device):
    """After a general launch of a plain (not generic) kernel: remember it under ``key``."""
    if getattr(kernel, "_generic", None) is False:
        runs = kernel.__dict__.setdefault("_tw_launches", {})
        run = _prepared(kernel, dim, block_dim, device, named_device) if len(runs) < 64 else None
        if run is not None:
            runs[key] = run
            _remembering.add(kernel)


def _prepared(kernel, dim, block_dim: int, device, named_device):
    """``run(inputs, outputs) -> bool``: the launch of ``kernel`` over ``dim`` (lanes included) with
    the compiled kernel, bounds and grid worked out now; False (nothing launched) when the launch
    must take the general path instead: a Tape in use or ``wp.config.verify_fp`` (which record and
    check), or, where the launch named no device (``named_device`` None), arrays on another device.
    None for a debug build, which checks every launch (switching debug mode on forgets every
    remembered launch: forget_launches)."""
    from .launch import _compiled_for, check_captures

    compiled, lanes = _compiled_for(kernel, device, dim, block_dim, backward=False)
    if compiled.checks is not None:  # a debug build: every launch checks (the general path)
        return None
    packer = compiled.packer
    size, bounds = packer.bounds_bytes(dim)
    if compiled.submit is None:
        compiled.submit = device.backend.launcher(compiled.handle)
    submit, (tasks, threads) = compiled.submit, compiled.launch_dims(size, lanes, 0)
    launch = device.backend.launch

    def run(inputs, outputs=()):
        if tape_state.tracking or config.verify_fp:  # (debug mode: forget_launches dropped this)
            return False
        values = [*inputs, *outputs] if outputs else inputs if type(inputs) is list else list(inputs)
        if named_device is None and _device_of(values, ()) is not device:
            return False
        if kernel._tw_captures:
            check_captures(kernel)
        args = packer.pack_bytes(values, device, bounds)
        if tasks == size:
            submit(args, tasks, threads)
        elif tasks:
            launch(compiled.handle, args, tasks, threads)
        return True

    return run


def prepared_launch_tiled(kernel, blocks: int, block_dim: int, device):
    """``run(arrays)``: ``launch_tiled(kernel, dim=[blocks], inputs=arrays, block_dim=block_dim)``
    (block programs call theirs every time): from the third call on a remembered launch, one
    argument packing and one submit, unless a Tape, debug mode or ``verify_fp`` asks for more."""
    def run(values):
        launch_tiled(kernel, dim=[blocks], inputs=values, block_dim=block_dim, device=device)

    return run


def _device_of(inputs, outputs):
    for v in (*inputs, *outputs) if outputs else inputs:
        if isinstance(v, array) and v.device is not None:
            return v.device
    return get_device(None)


def resources(kernel, dim, block_dim: int = 256, device=None, backward: bool = False) -> dict:
    """What one block of ``kernel`` launched over ``dim`` in blocks of ``block_dim`` needs on
    ``device`` (compiling it if needed): ``shared_bytes`` (the tiles' planned shared memory, in
    bytes), and on CUDA ``static_shared_bytes``, ``registers`` and ``local_bytes`` (spills) from the
    CUBIN, and ``threads`` per block. (``wp.launch`` refuses, before launching, a block whose shared
    memory exceeds the device's limit.)"""
    from .device import get_device

    device = get_device(device)
    block = block_shape(kernel, dim, effective_block_dim(block_dim, device)) if uses_tiles(kernel) else None
    get = kernel.compiled_backward if backward else kernel.compiled
    compiled = get(device, block) if block is not None else get(device)
    out = {"shared_bytes": compiled.shared_bytes,
           "threads": block.threads if block is not None and device.kind == "cuda" else (1 if block else block_dim)}
    if device.kind == "cuda":
        from cuda.bindings import driver

        fn = device.backend._cufn[compiled.handle]
        attr = driver.CUfunction_attribute
        get_attr = lambda a: int(driver.cuFuncGetAttribute(a, fn)[1])  # noqa: E731
        out.update(static_shared_bytes=get_attr(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
                   registers=get_attr(attr.CU_FUNC_ATTRIBUTE_NUM_REGS),
                   local_bytes=get_attr(attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES))
    return out
