"""Every mangled C++ name, so forward and (later) adjoint code always agree."""
from __future__ import annotations

import hashlib


def value(v) -> str:
    hint = "".join(c if c.isalnum() else "_" for c in v.hint)[:24]
    return f"v{v.id}_{hint}" if hint else f"v{v.id}"


def adjoint(v) -> str:
    return "adj_" + value(v)


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
