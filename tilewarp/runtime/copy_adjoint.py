"""The adjoint of an array copy (``wp.copy``, ``wp.clone``, ``array.assign(other)``) on a Tape.

``dest[window] = src[window]`` makes ``src`` the only source of those elements of ``dest``, so the
backward pass adds the destination's gradient into the source's gradient (other readers of ``src``
contribute too) and then clears the destination's gradient over the window: whatever wrote
``dest`` there before the copy was overwritten, and must receive no gradient ("final write wins",
as for kernel outputs).

Two cases cannot be tracked that way and fall back to copying the gradient bytes back, with a
warning where the result may be wrong: copies whose source and destination overlap in memory, and
element types without addition (structs, bools).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..language import types as T
from . import tape_state


def window(a, offset: int, count: int):
    """Elements ``offset .. offset+count`` of ``a`` in logical (row-major) order, as a 1-d view."""
    if a.ndim == 1:
        return a[offset:offset + count]
    if not a.is_contiguous:
        raise ValueError("a copy with offsets or a count needs 1-d or contiguous arrays")
    return a.flatten()[offset:offset + count]


def record(dest, src):
    """Record ``dest <- src`` (arrays of one shape, already copied) on the active Tape, if any."""
    tape = tape_state.active
    if tape is None or not dest.requires_grad or dest.grad is None:
        return

    def array_copy():  # the gradients as they are at backward time (a .grad may be replaced meanwhile)
        if dest.grad is not None:
            _backward(dest, src, dest.grad, src.grad if src.requires_grad else None)

    tape.record_func(array_copy, [dest, src])


def _byte_range(a):
    lo, hi = a._extent()
    return a.ptr + lo, a.ptr + hi


def _overlap(a, b) -> bool:
    if a.device != b.device or a.size == 0 or b.size == 0:
        return False
    (a0, a1), (b0, b1) = _byte_range(a), _byte_range(b)
    return a0 < b1 and b0 < a1


def _addable(dtype) -> bool:
    return (T.is_scalar(dtype) or T.is_composite(dtype)) and T.scalar_of(dtype)._kind_ != "bool"


def _retains(a) -> bool:
    """``retain_grad`` of ``a`` or of the array it views."""
    return bool(getattr(a, "retain_grad", False) or getattr(a._owner, "retain_grad", False))


def _backward(dest, src, dest_grad, src_grad):
    if src_grad is None:  # nothing upstream needs it, but the overwritten writers still get nothing
        if not _retains(dest):
            dest_grad.zero_()
        return
    if _overlap(dest, src) or not _addable(dest.dtype):
        why = ("an overlapping copy (source and destination share memory)" if _overlap(dest, src)
               else f"a copy of {T.type_name(dest.dtype)} elements (no addition)")
        if _overlap(dest, src):
            warnings.warn(f"Tape: the adjoint of {why} cannot yet be fully tracked; the destination's gradient "
                          f"is copied back to the source without accumulation", UserWarning, stacklevel=4)
        src_grad._write_host(np.ascontiguousarray(dest_grad.numpy()))
        return
    total = src_grad.numpy() + dest_grad.numpy()
    src_grad._write_host(np.ascontiguousarray(total))
    if not _retains(dest):
        dest_grad.zero_()
