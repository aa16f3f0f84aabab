"""Graph capture on the CPU (Warp's ``wp.ScopedCapture`` / ``capture_begin`` on a CPU device).

While a capture is open on the CPU, work runs as it is issued and is also recorded as replayable
operations: kernel launches (their plan and argument values: arrays by reference, so a replay sees
their current contents), memsets, copies, and whole library operations that register themselves as
one (a hash grid build, a BVH refit), whose replay runs them again against their current inputs.
``wp.capture_launch`` replays the operations in order.
"""
from __future__ import annotations

from contextlib import contextmanager

#: the device of each open capture -> (its operations, whether Warp's saveable form was asked for)
recording: dict = {}
_paused = 0


def begin(device, savable: bool) -> list:
    from . import tape_state

    if device in recording:
        raise RuntimeError(f"Graph capture already in progress on {device}")
    ops: list = []
    recording[device] = (ops, savable)
    tape_state.tracking = True  # launches take the general path, which records them
    return ops


def end(device) -> list:
    entry = recording.pop(device, None)
    if entry is None:
        raise RuntimeError(f"Graph capture is not active on {device}")
    return entry[0]


def active(device) -> bool:
    return not _paused and device in recording


def savable(device) -> bool:
    return device in recording and recording[device][1]


def record(device, op) -> None:
    """Append ``op`` (a callable taking no arguments) to the capture open on ``device``, if any."""
    if not _paused:
        entry = recording.get(device)
        if entry is not None:
            entry[0].append(op)


@contextmanager
def operation(device, replay):
    """The work inside is one recorded operation, ``replay``; what it issues is not recorded apart."""
    global _paused
    record(device, replay)
    _paused += 1
    try:
        yield
    finally:
        _paused -= 1


def replay(ops: list) -> None:
    global _paused
    _paused += 1  # a replay inside another capture is not recorded again
    try:
        for op in ops:
            op()
    finally:
        _paused -= 1
