"""Every name in generated C++ (mangling), so the builtin table's C++ rules, the emitter, the
compile step and the runtime's symbol lookups always agree; and the printing context the builtin
table's rules read (which lanes and tid components the block being printed has), set by the emitter."""
from __future__ import annotations

import contextlib
import hashlib
import re
import threading

#: the line of a generated module that uses cuBLASDx (emit/cpp.py writes it; compile/ reads it and
#: adds nvrtc.mathdx_options)
MATHDX_MARK = "// tilewarp: cuBLASDx"

_lanes = threading.local()  # ids of the per-lane values while a lane section is printed


def raw(v) -> str:
    hint = "".join(c if c.isalnum() else "_" for c in v.hint)[:24]
    return f"v{v.id}_{hint}" if hint else f"v{v.id}"


#: a printed value's name (raw: ``v<id>`` or ``v<id>_<hint>``), as a whole word: ``adj_v1`` does not match
#: (the generated code is scanned for the values a line names: emit/replay_needs.py, emit/block.py)
RAW_NAME = re.compile(r"\bv\d+\w*")


def value(v) -> str:
    """The C++ name of ``v``; inside a lane section a per-lane value is this lane's entry."""
    name = raw(v)
    varying = getattr(_lanes, "ids", None)
    return f"TW_L({name})" if varying and id(v) in varying else name


def adjoint(v) -> str:
    name = "adj_" + raw(v)
    varying = getattr(_lanes, "ids", None)
    return f"TW_L({name})" if varying and id(v) in varying else name


def lane_tids() -> frozenset:
    """``(k, n)`` of the tid components the block being printed computes as first lane + lane index."""
    return getattr(_lanes, "tids", frozenset())


def block_tids() -> frozenset:
    """``(k, n)`` of the tid components the block being printed reads from its block index."""
    return getattr(_lanes, "block_tids", frozenset())


@contextlib.contextmanager
def block_kernel(block):
    """While a block kernel is printed (``emit.block.BlockShape``, or None): its lane-offset tid
    components and those its prologue computes from the block index."""
    saved = getattr(_lanes, "tids", frozenset()), getattr(_lanes, "block_tids", frozenset()), launch_ndim()
    _lanes.tids = block.lane_tids if block is not None else frozenset()
    _lanes.block_tids = block.block_tids if block is not None else frozenset()
    _lanes.ndim = block.ndim if block is not None else 0
    try:
        yield
    finally:
        _lanes.tids, _lanes.block_tids, _lanes.ndim = saved


def launch_ndim() -> int:
    """The launch dimensions the block kernel being printed is compiled for (0: any)."""
    return getattr(_lanes, "ndim", 0)


@contextlib.contextmanager
def lane_section(varying_ids):
    """Names printed meanwhile refer to one lane's entry of the per-lane values (tiling/lanes.py)."""
    saved = getattr(_lanes, "ids", None)
    _lanes.ids = varying_ids
    try:
        yield
    finally:
        _lanes.ids = saved


def local_buffer(site: int) -> str:
    """The buffer behind the ``wp.zeros`` local array of call site ``site``."""
    return f"local{site}"


def adjoint_function(symbol: str) -> str:
    return f"adj_{symbol}"


def field(param_name: str) -> str:
    return "p_" + param_name


def digest(*parts: str, n: int = 8) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:n]


def function(py_name: str, key: str) -> str:
    return f"{py_name}_{digest(key)}"


def kernel_entry(symbol: str, direction: str = "forward") -> str:
    return f"{symbol}_{direction}"


def args_struct(symbol: str) -> str:
    return f"{symbol}_args"


def body(symbol: str) -> str:
    return f"{symbol}_body"
