"""Meta-parameters of block programs, chosen by timing a few candidates on the first call.

A choice is remembered per (program, shapes, dtypes, device) in memory and on disk next to the
kernel cache (``<cache>/tuning/<key>.json``), so the next process reuses it without timing.
Pinning: an explicit value (``block_dim=``, a meta symbol's value) is never tuned, and
``TILEWARP_TUNE=0`` (or ``wp.config.block_tuning = False``) turns tuning off everywhere, which
then takes a rule of thumb. Tuning never changes results beyond float reassociation: every
candidate runs the same program on the same blocks, with tile reductions ordered by block size.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time

from .. import config
from ..api.pipeline import log
from ..compile.cache import atomic_write, cache_dir
from ..runtime.block_shape import block_shape
from ..runtime.device import get_device, synchronize_device
from ..runtime.launch import launch_tiled

#: lanes per block tried on each device kind
CANDIDATES = (32, 64, 128, 256)

_memory: dict = {}
_lock = threading.Lock()
#: what tuning did in this process, newest last (tests and the log read it): (key, choice, timings, seconds)
history: list = []


def enabled() -> bool:
    if os.environ.get("TILEWARP_TUNE", "").strip().lower() in ("0", "false", "off", "no"):
        return False
    return bool(getattr(config, "block_tuning", True))


def rule_of_thumb(elements: int) -> int:
    """Lanes for a block of ``elements``: about eight elements per lane, 32 to 256 lanes."""
    lanes = 32
    while lanes < 256 and lanes * 8 < elements:
        lanes *= 2
    return lanes


#: the most output elements a lane may own in a tried block size: past it a register tile spills
#: (an arranged 128 x 128 GEMM on 32 or 64 lanes took 22 s of NVRTC to be far slower)
MOST_PER_LANE = 128


def lane_candidates(elements: int) -> list:
    """The block sizes worth timing for a block whose largest output has ``elements``: no more lanes
    than elements (at least 32), none owning more than MOST_PER_LANE of them (else the largest)."""
    fit = [c for c in CANDIDATES if c <= max(32, elements) and elements <= MOST_PER_LANE * c]
    return fit or [CANDIDATES[-1]]


def device_name(device) -> str:
    return getattr(device, "name", None) or str(device)


def code_identity(kernel, device, blocks: int, block_dim: int) -> str:
    """A digest of the code ``kernel`` compiles to (at ``block_dim``): a choice remembered on disk is
    only reused for the same generated code, not after tilewarp's code generation has changed."""
    compiled = kernel.compiled(device, block_shape(kernel, [blocks, block_dim], block_dim))
    return hashlib.sha256(compiled.source.encode()).hexdigest()[:16]


def tuning_key(identity: str, device) -> str:
    return hashlib.sha256(f"{identity}|{device_name(device)}".encode()).hexdigest()[:32]


def _path(key: str):
    return cache_dir() / "tuning" / f"{key}.json"


def recall(key: str):
    with _lock:
        if key in _memory:
            return _memory[key]
    try:
        data = json.loads(_path(key).read_text())
        choice = data["choice"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    with _lock:
        _memory[key] = choice
    return choice


def remember(key: str, choice, description: str, timings: dict) -> None:
    with _lock:
        _memory[key] = choice
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"choice": choice, "program": description,
                                       "timings_ms": {str(k): v for k, v in timings.items()}}).encode())
    except OSError:  # a read-only cache: remembered for this process only
        pass


def forget_memory() -> None:
    """Drop the in-process choices (tests: the next call reads the disk cache)."""
    with _lock:
        _memory.clear()


def seconds_per_run(run, device, budget: float = 0.002) -> float:
    """Median seconds of ``run()`` over 5 batches of back-to-back runs, each batch about ``budget``
    seconds long (so launch latency does not swamp short kernels), after a first call that compiles
    and warms up."""
    run()
    synchronize_device(device)
    t0 = time.perf_counter()
    run()
    synchronize_device(device)
    batch = max(1, min(100, int(budget / max(time.perf_counter() - t0, 1e-6))))
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(batch):
            run()
        synchronize_device(device)
        samples.append((time.perf_counter() - t0) / batch)
    samples.sort()
    return samples[len(samples) // 2]


def settle(key: str, choice, description: str, timings_ms: dict, spent: float, device, shown: str):
    """A tuning's outcome: remembered (memory and disk), kept in ``history``, logged."""
    remember(key, choice, description, timings_ms)
    history.append((key, choice, timings_ms, spent))
    log(f"tuned {description} on {device_name(device)}: {shown} in {spent:.2f} s")


def choose(key: str, description: str, candidates, run, device):
    """The fastest of ``candidates`` (``run(candidate)`` executes the program once), remembered."""
    t0 = time.perf_counter()
    timings = {}
    for c in candidates:
        timings[c] = round(seconds_per_run(lambda c=c: run(c), device) * 1e3, 4)
    best = min(timings, key=timings.get)
    settle(key, best, description, timings, time.perf_counter() - t0, device,
           f"{best} ({', '.join(f'{c}: {t:.3f} ms' for c, t in timings.items())})")
    return best


def block_dim_for(call, kernel, blocks, inputs, outputs, device, out_operands) -> int:
    """Lanes per block for one launch of a block program: pinned, remembered, or tuned now."""
    if call.block_dim is not None:
        return int(call.block_dim)
    elements = max([_elements(op.block) for op in out_operands] or [1])
    if not enabled():
        return rule_of_thumb(elements)

    device = get_device(device)
    shapes = ";".join(f"{a.dtype.__name__}{tuple(a.shape)}" for a in [*inputs, *outputs])
    identity = f"{kernel.key}|{shapes}|{blocks}|{code_identity(kernel, device, blocks, rule_of_thumb(elements))}"
    key = tuning_key(identity, device)
    choice = recall(key)
    if choice is not None:
        return int(choice)
    candidates = lane_candidates(elements)

    def run(block_dim):
        launch_tiled(kernel, dim=[blocks], inputs=[*inputs, *outputs], block_dim=block_dim, device=device,
                     record_tape=False)

    return int(choose(key, f"{kernel.key} block_dim", candidates, run, device))


def _elements(block) -> int:
    n = 1
    for b in block:
        n *= b
    return n
