"""Writes through zero-copy host views of CPU arrays, seen by the Tape.

``x.numpy()`` (and ``np.asarray(x)``, DLPack) of a CPU array shares its memory, so a write through
it bypasses the version counter that launches, ``assign`` and ``fill_`` bump. The Tape still
catches such a write to an array a recorded launch read: while a host view is alive, the array's
bytes are checksummed (CRC-32) when the read is recorded, or when a view appears after the
recording, and ``Tape.backward`` compares. Arrays never viewed this way cost nothing; a view that is
dropped at once (``print(x.numpy())``) stops counting when it goes away.
"""
from __future__ import annotations

import ctypes
import weakref
import zlib


def _memory(a):
    return a._owner if a._owner is not None else a


def checksum(a) -> int:
    lo, hi = a._extent()
    if hi == lo:
        return 0
    return zlib.crc32((ctypes.c_char * (hi - lo)).from_address(a.ptr + lo))


class ReadRecord:
    """An array a recorded launch read: its version then, and its checksum where a host view could
    have written it since (None: no view was alive)."""

    __slots__ = ("array", "version", "crc", "__weakref__")

    def __init__(self, array, version):
        self.array, self.version, self.crc = array, version, None

    def written_through_view(self, now: dict) -> bool:
        """``now``: id(array) -> its checksum now, shared by the checks of one backward pass."""
        if self.crc is None:
            return False
        key = id(self.array)
        if key not in now:
            now[key] = checksum(self.array)
        return now[key] != self.crc


def record_read(a) -> ReadRecord:
    r = ReadRecord(a, a.version)
    if a.device is not None and a.device.is_cpu:
        m = _memory(a)
        if getattr(m, "host_views", 0):
            r.crc = checksum(a)
        else:  # checksummed if a view appears while the memory is unchanged (view_opened)
            pending = getattr(m, "pending_reads", None)
            if pending is None:
                pending = m.pending_reads = weakref.WeakSet()  # records go with their Tape
            pending.add(r)
    return r


def view_opened(a, permanent=False) -> None:
    """A zero-copy host view of ``a`` exists from now on (until ``view_closed``, unless ``permanent``:
    a DLPack consumer's lifetime is not ours to see)."""
    m = _memory(a)
    m.host_views = getattr(m, "host_views", 0) + (1 << 30 if permanent else 1)
    for r in list(getattr(m, "pending_reads", None) or ()):
        if r.crc is None and r.array.version == r.version:
            r.crc = checksum(r.array)  # unchanged since the recording: the same bytes it read
    m.pending_reads = None


def view_closed(a) -> None:
    m = _memory(a)
    m.host_views = max(getattr(m, "host_views", 0) - 1, 0)
