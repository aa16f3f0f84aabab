"""Frozen compile options: hashable, so they go straight into the cache key."""
from __future__ import annotations

from dataclasses import dataclass
from .. import config


@dataclass(frozen=True)
class Options:
    target: str  # "cpu" | "cuda"
    arch: int = 0  # sm_XX for CUDA; 0 on CPU (the host's identity goes in the key instead)
    debug: bool = False
    fast_math: bool = False
    block_dim: int = 256

    def key(self) -> str:
        return repr(self)


def current(target: str, arch: int = 0, block_dim: int = 256) -> Options:
    """Options from ``wp.config`` as they are now."""
    return Options(target, arch, config.mode == "debug", bool(config.fast_math), block_dim)
