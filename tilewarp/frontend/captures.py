"""Plain Python values a kernel reads from its module's globals or its closure (``SCALE = 2.0``).

They are compiled in as constants when the kernel is first built, as Warp does. Rebinding one
afterwards does not change the kernel, so instead of a silently stale value the next launch warns
once per name, saying which value the kernel still uses: the native launch path compares the
bindings (``bindings``: an identity test per value, a byte compare for vectors) and hands a launch
whose values moved to the Python path, which compares the values (``check``) and warns.
"""
from __future__ import annotations

import builtins

from ..language import types as T
from ..errors import warn_user

_MISSING = object()


def capture_key(value):
    """A comparable snapshot of a value a kernel compiles in, or None for things that are not values
    (modules, functions, types, arrays: those are looked up, not baked in)."""
    if isinstance(value, (builtins.bool, builtins.int, builtins.float)):
        return (type(value), value)
    if isinstance(value, T.Scalar):
        return (type(value), value.value)
    if T.is_composite(type(value)):  # vectors and matrices are mutable in place: copy the components
        return (type(value), tuple(value.numpy().reshape(-1).tolist()))
    return None


def lookup(fn, name: str):
    """What ``name`` means to ``fn`` now: its closure cell, else its module global, else a builtin."""
    code = fn.__code__
    if name in code.co_freevars and fn.__closure__:
        try:
            return fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:  # a cell not yet filled
            return _MISSING
    if name in fn.__globals__:
        return fn.__globals__[name]
    return getattr(builtins, name, _MISSING)


def collect(kernel_ir) -> tuple:
    """Every ``(python function, name, snapshot)`` the kernel and the functions it calls compiled in."""
    seen, out, stack, done = set(), [], [kernel_ir], set()
    while stack:
        fn = stack.pop()
        if id(fn) in done:
            continue
        done.add(id(fn))
        for entry in fn.captures:
            if (id(entry[0]), entry[1]) not in seen:
                seen.add((id(entry[0]), entry[1]))
                out.append(entry)
        stack.extend(fn.callees)
    return tuple(out)


def bindings(kernel) -> tuple | None:
    """What the native launch path compares before each launch (native/runtime/launch_ext.cpp):
    per value compiled in, where it is bound, its name, the object bound now and, for vectors and
    matrices (changed in place), their bytes now; None when the kernel compiled none in."""
    out = []
    for fn, name, _ in kernel._tw_captures:
        code = fn.__code__
        if name in code.co_freevars and fn.__closure__:
            where, key = fn.__closure__[code.co_freevars.index(name)], None
            value = where.cell_contents
        else:
            where, key = fn.__globals__, name
            value = where.get(name, _MISSING)
        out += [where, key, value, bytes(value) if T.is_composite(type(value)) else None]
    return tuple(out) or None


def check(kernel) -> None:
    """Warn (once per name) about captured values rebound since the kernel was built."""
    for fn, name, key in kernel._tw_captures:
        now = lookup(fn, name)
        now_key = capture_key(now)
        if now_key == key or (kernel.key, id(fn), name) in _warned:
            continue
        _warned.add((kernel.key, id(fn), name))
        warn_user(f"kernel '{kernel.key}' compiled in {name} = {key[1]!r} at its first launch; {name} is now "
                  f"{now!r} but the kernel still uses {key[1]!r} (as in Warp). Pass it as a kernel argument to "
                  f"change it between launches, or keep wp.constant values fixed", RuntimeWarning)


_warned: set = set()
