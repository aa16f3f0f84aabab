"""The whole chain in one place: parse -> typecheck -> (adjoint) -> emit -> compile -> load."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from . import config
from .compile import compile_cached
from .compile.options import current
from .emit import emit_module, names
from .emit.sites import SiteTable
from .module_options import is_debug
from .runtime.launch import ArgPacker


@dataclass
class CompiledKernel:
    device: object
    module: object
    handle: object
    packer: ArgPacker
    source: str
    checks: object = None  # runtime.debug.DebugChecks in debug builds: the error slot and its sites
    submit: object = None  # backend.launcher(handle), made by wp.launch on first use: its hot path
    launcher: object = None  # the native path's Launcher (False: none), made on first use
    block: object = None  # emit.block.BlockShape of a kernel that uses tiles (None: a SIMT kernel)
    shared_bytes: int = 0  # the block's planned shared memory (block/storage.py)

    def launch_dims(self, size: int, block_dim: int, max_blocks: int = 0) -> tuple:
        """``(tasks, threads per block)`` to hand the backend: a CUDA tile kernel runs its blocks of
        ``block_dim`` lanes on ``block.threads`` threads (the grid is still one per block); with
        ``max_blocks`` (Warp's launch argument) the CUDA grid has at most that many blocks, whose
        threads stride over the rest."""
        b = self.block
        if b is not None and self.device.kind == "cuda" and b.threads != b.block_dim:
            size, block_dim = -(-size // (b.block_dim // b.threads)), b.threads
        if max_blocks and max_blocks > 0 and self.device.kind == "cuda":
            size = min(size, max_blocks * block_dim)
        return size, block_dim


def log(message: str) -> None:
    if not config.quiet:
        print(f"tilewarp: {message}", flush=True)


def build(kernel, device, block=None) -> CompiledKernel:
    # frontend: parse + typecheck (errors name the user's file:line); tile kernels per block size
    fn = kernel.ir if block is None else kernel.ir_for(block.block_dim)
    # the backward (reverse pass over the IR) is a separate module, built lazily: build_backward
    debug = is_debug(kernel)  # wp.config.mode, or the kernel's module options
    sites = SiteTable() if debug else None
    source = emit_module(fn, sites, block)  # emit: one C++ body for both targets
    if os.environ.get("TILEWARP_DUMP"):
        from .ir.printer import dump

        log(f"IR of {kernel.key}:\n{dump(fn)}")
    options = dataclasses.replace(current(device.kind, device.arch), debug=debug)
    path = compile_cached(source, kernel.key, options, log)  # compile (content-hashed disk cache)
    module = device.backend.load_module(path)  # load
    smem = shared_bytes(source)
    handle = module.function(names.kernel_entry(fn.symbol), kernel.key, smem)  # refuses too much shared memory
    checks = None
    if debug:
        from .runtime.debug import DebugChecks

        checks = DebugChecks(kernel.key, fn, sites.sites, module, device)
    return CompiledKernel(device, module, handle, ArgPacker(fn), source, checks, block=block, shared_bytes=smem)


def build_backward(kernel, device, block=None) -> CompiledKernel:
    """The backward kernel: replay + reverse pass over the IR (autodiff/, emit/adjoint.py)."""
    from .emit.adjoint import backward_signature, emit_backward_module

    fn = kernel.ir if block is None else kernel.ir_for(block.block_dim)
    backward = backward_signature(fn)
    source = emit_backward_module(fn, backward, block)  # raises AutodiffError where no gradient exists
    options = dataclasses.replace(current(device.kind, device.arch), debug=False)
    path = compile_cached(source, kernel.key + ".backward", options, log)
    module = device.backend.load_module(path)
    smem = shared_bytes(source)
    handle = module.function(names.kernel_entry(backward.symbol), kernel.key + " (backward)", smem)
    return CompiledKernel(device, module, handle, ArgPacker(backward), source, block=block, shared_bytes=smem)


def shared_bytes(source: str) -> int:
    """The block's planned shared memory, as the emitter wrote it at the end of a tile kernel's source."""
    mark = "// tilewarp: shared memory "
    k = source.rfind(mark)
    return int(source[k + len(mark):].split()[0]) if k >= 0 else 0
