"""The whole chain in one place: parse -> typecheck -> (adjoint) -> emit -> compile -> load."""
from __future__ import annotations

import dataclasses
import functools
import os
import threading
from dataclasses import dataclass

from .. import config
from ..compile import compile_ahead, load_cached
from ..compile.options import current
from ..emit import emit_module
from ..language import names
from ..emit.sites import SiteTable
from .module import is_debug, mathdx_gemm
from ..runtime.packing import ArgPacker
from ..emit.adjoint import backward_signature, emit_backward_module
from ..ir.printer import dump
from ..runtime.debug import DebugChecks


#: bytes between the shared memory slots of packed tile blocks (TW_PACK_SLOT, native/tile/block.h)
PACK_SLOT_ALIGN = 128


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
    shared_bytes: int = 0  # the block's planned shared memory (tiling/storage.py)
    # CUDA tile kernels: the blocks the device holds at once, the largest grid, whose CUDA blocks
    # run the launch's blocks in turn (the device starts blocks at a limited rate, and a CUDA
    # block combines its blocks' atomics: tiling/combine.py); 0: one CUDA block per launch block
    resident: int = 0
    pack: int = 1  # tile blocks a CUDA block runs side by side (emit/block.py pack_factor)

    def launch_dims(self, size: int, block_dim: int, max_blocks: int = 0) -> tuple:
        """``(tasks, threads per block)`` to hand the backend: a CUDA tile kernel runs its blocks of
        ``block_dim`` lanes on ``block.threads`` threads, on at most as many CUDA blocks as the device
        holds at once, striding over the rest; with
        ``max_blocks`` (Warp's launch argument) the CUDA grid has at most that many blocks, whose
        threads stride over the rest."""
        b = self.block
        if b is not None and self.device.kind == "cuda" and b.threads != b.block_dim:
            size, block_dim = -(-size // (b.block_dim // b.threads)), b.threads * self.pack
        if self.resident:
            size = min(size, self.resident * block_dim)
        if max_blocks and max_blocks > 0 and self.device.kind == "cuda":
            size = min(size, max_blocks * block_dim)
        return size, block_dim


def log(message: str) -> None:
    if not config.quiet:
        print(f"tilewarp: {message}", flush=True)


def log_load(device, name: str, built: bool, seconds: float) -> None:
    """A module's load, in Warp's words ("Module ... load on device ... took ... ms (compiled)"), which
    scripts and test harnesses written for Warp recognise (Warp's own output checks let such lines pass)."""
    if not config.quiet:
        print(f"Module {name} load on device '{device}' took {seconds * 1e3:.2f} ms  "
              f"({'compiled' if built else 'cached'})", flush=True)


def build(kernel, device, block=None) -> CompiledKernel:
    # frontend: parse + typecheck (errors name the user's file:line); tile kernels per block size
    fn = kernel.ir if block is None else kernel.ir_for(block.block_dim)
    # the backward (reverse pass over the IR) is a separate module, built lazily: build_backward
    debug = is_debug(kernel)  # wp.config.mode, or the kernel's module options
    sites = SiteTable() if debug else None
    # the device's shared memory bounds how far a GEMM's loads may run ahead (tiling/prefetch.py)
    limit = device.backend.max_shared_memory_per_block_optin if device.kind == "cuda" else 0
    source = emit_module(fn, sites, block, mathdx_gemm(kernel), limit)  # emit: one C++ body for both targets
    if os.environ.get("TILEWARP_DUMP"):
        log(f"IR of {kernel.key}:\n{dump(fn)}")
    options = dataclasses.replace(current(device.kind, device.arch), debug=debug)
    # compile (content-hashed disk cache) and load
    module = load_cached(source, kernel.key, options, device.backend.load_module,
                         functools.partial(log_load, device.alias))
    smem, pack = source_mark(source, "shared memory"), max(1, source_mark(source, "tile blocks per CUDA block"))
    # a CUDA block of packed tile blocks holds a slot of their planned memory each (TW_PACK_SLOT)
    launch_smem = smem if pack == 1 else pack * (-(-smem // PACK_SLOT_ALIGN) * PACK_SLOT_ALIGN)
    handle = module.function(names.kernel_entry(fn.symbol), kernel.key, launch_smem)  # refuses too much shared memory
    checks = None
    if debug:
        checks = DebugChecks(kernel.key, fn, sites.sites, module, device)
    resident = 0
    if device.kind == "cuda" and block is not None:
        waves = _waves(source, pack)
        threads = block.threads * pack
        resident = max(1, int(device.backend.resident_blocks(handle, threads) * waves)) if waves > 0 else 0
    return CompiledKernel(device, module, handle, ArgPacker(fn), source, checks, block=block, shared_bytes=smem,
                          resident=resident, pack=pack)


def _waves(source: str, pack: int) -> float:
    """A CUDA tile kernel's grid, in the blocks the device holds at once: half of them for a kernel
    that combines atomics (the fewer CUDA blocks, the fewer atomics; the seed's sum of squares on
    an H100: 0.0484 ms on half, 0.0496 on all), one CUDA block per PACK tile blocks for packed
    kernels (emit/block.py pack_factor; the row sum 0.0242 ms against 0.0249 on 4 waves), else 4
    times, which measured best for the copy (benchmarks/RESULTS.md). $TILEWARP_GRID_WAVES
    overrides it, for measurements; 0: one CUDA block per block of the launch."""
    waves = os.environ.get("TILEWARP_GRID_WAVES")
    if waves is not None:
        return float(waves)
    if source_mark(source, "combined atomics"):
        return 0.5
    return 0 if pack > 1 else 4


def build_backward(kernel, device, block=None) -> CompiledKernel:
    """The backward kernel: replay + reverse pass over the IR (autodiff/, emit/adjoint.py)."""
    fn = kernel.ir if block is None else kernel.ir_for(block.block_dim)
    backward = backward_signature(fn)
    source = emit_backward_module(fn, backward, block)  # raises AutodiffError where no gradient exists
    options = dataclasses.replace(current(device.kind, device.arch), debug=False)
    module = load_cached(source, kernel.key + ".backward", options, device.backend.load_module,
                         functools.partial(log_load, device.alias))
    smem = source_mark(source, "shared memory")
    handle = module.function(names.kernel_entry(backward.symbol), kernel.key + " (backward)", smem)
    return CompiledKernel(device, module, handle, ArgPacker(backward), source, block=block, shared_bytes=smem)


#: backward compiles running ahead at once: a core is left for the caller's own builds (a program's
#: first frame on a Tape may build many kernels; the rest queue)
_AHEAD_SLOTS = threading.BoundedSemaphore(
    max(1, (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 2) - 1))


def start_backward_build(kernel, device, block=None):
    """Compile ``kernel``'s backward in a second host-compiler process beside its forward's (CPU; the
    caller: a first launch recorded on a Tape, so a backward pass is likely). The source is emitted
    here, on the caller's thread; a daemon thread waits for the compile and stores the binary in the
    cache, where ``build_backward`` finds it (it takes the entry's build lock, so a backward asked
    for sooner waits for this compile instead of starting another). Nothing is reported from here: a
    kernel without a backward, or a failed compile, says so when its backward is asked for."""
    fn = kernel.ir if block is None else kernel.ir_for(block.block_dim)
    try:
        source = emit_backward_module(fn, backward_signature(fn), block)
    except Exception:  # noqa: BLE001 - not differentiable: the lazy build raises it with its context
        return None
    options = dataclasses.replace(current(device.kind, device.arch), debug=False)

    def compile_when_a_core_is_free():
        with _AHEAD_SLOTS:
            compile_ahead(source, kernel.key + ".backward", options)

    thread = threading.Thread(target=compile_when_a_core_is_free, name=f"tilewarp backward build {kernel.key}",
                              daemon=True)
    thread.start()
    return thread


def source_mark(source: str, what: str) -> int:
    """A number the emitter wrote at the end of a tile kernel's source (``// tilewarp: <what> N``):
    the block's planned shared memory, how many atomics it combines."""
    mark = f"// tilewarp: {what} "
    k = source.rfind(mark)
    return int(source[k + len(mark):].split()[0]) if k >= 0 else 0
