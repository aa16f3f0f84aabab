"""What differs between the CUDA and host builds of one emitted source: nothing in the text.

The emitted C++ is identical for both targets; ``native/core/target.h`` maps the ``TW_*`` macros
by ``TW_CUDA``. A dialect only says which toolchain builds it and with which defines.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    name: str  # "cpu" | "cuda"
    suffix: str  # source file suffix
    defines: tuple = ()


CPU = Dialect("cpu", ".cpp")
CUDA = Dialect("cuda", ".cu", (("TW_CUDA", "1"),))
DIALECTS = {"cpu": CPU, "cuda": CUDA}
