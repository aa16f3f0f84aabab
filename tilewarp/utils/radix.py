"""LSD radix sorts (``radix_sort_pairs`` and the library's own ``sort_order``). On the CPU, per digit a
histogram per chunk of elements, an exclusive scan of the digit-major histogram (so each (digit,
chunk) gets its first slot), then a stable scatter; the chunks are few and large: one task counts and
scatters each in order, over 11-bit digits. The GPU's passes, which rank a chunk's elements across a
block of lanes and place them by look-back, are in ``radix_lanes``."""
from __future__ import annotations

import operator
from typing import Any

import tilewarp as wp

from ..language import types as T
from ..runtime.array import array, clone, copy, uninitialized
from . import radix_lanes
from .core import _digit, _Int32s, _launch, _name, _order_flips, _rows, _same_device, _scan_rows

RADIX_BITS_CPU = 11  # bits per radix sort pass on the CPU (a histogram of 2048 counts per chunk)
_CPU_DIGITS = 1 << RADIX_BITS_CPU  # the CPU kernels' local digit tables
RADIX_CHUNKS_PER_THREAD = 4  # CPU: chunks (tasks) per pool thread
RADIX_MIN_CHUNK = 4096       # CPU: elements a chunk holds at least


def cpu_chunks(n: int, device) -> tuple:
    """(chunk, chunks): ``n`` elements cut into chunks of one task each, RADIX_CHUNKS_PER_THREAD a pool
    thread, of at least RADIX_MIN_CHUNK elements (the CPU sorts' and the hash grid's split)."""
    threads = device.backend.num_threads if device.is_cpu else 1
    chunk = max(RADIX_MIN_CHUNK, -(-n // (RADIX_CHUNKS_PER_THREAD * threads)))
    return chunk, -(-n // chunk)


@wp.kernel(enable_backward=False)
def _radix_count(keys: wp.array(dtype=Any), hist: _Int32s, n: int, chunk: int, chunks: int, shift: Any, mask: Any,
                 sign: Any, flip_pos: Any, flip_neg: Any):
    # CPU: one task per chunk counts its digits in a local table (one cache-friendly 8 KB run), then
    # writes its column of the digit-major histogram hist[d * chunks + b]
    b = wp.tid()
    counts = wp.zeros(shape=_CPU_DIGITS, dtype=wp.int32)
    for i in range(b * chunk, wp.min(n, (b + 1) * chunk)):
        d = _digit(keys[i], shift, mask, sign, flip_pos, flip_neg)
        counts[d] = counts[d] + 1
    for d in range(wp.int32(mask) + 1):
        hist[d * chunks + b] = counts[d]


@wp.kernel(enable_backward=False)
def _radix_scatter(keys: wp.array(dtype=Any), idx: _Int32s, keys_out: wp.array(dtype=Any), idx_out: _Int32s,
                   slots: _Int32s, n: int, chunk: int, chunks: int, first: int, shift: Any, mask: Any, sign: Any,
                   flip_pos: Any, flip_neg: Any):
    # CPU: one task per chunk, in order: equal digits keep their order (stability); the task's slot
    # counters are its own, copied into a local table, so no atomics and no strided counter traffic
    b = wp.tid()
    next_slot = wp.zeros(shape=_CPU_DIGITS, dtype=wp.int32)
    for d in range(wp.int32(mask) + 1):
        next_slot[d] = slots[d * chunks + b]
    for i in range(b * chunk, wp.min(n, (b + 1) * chunk)):
        k = keys[i]
        d = _digit(k, shift, mask, sign, flip_pos, flip_neg)
        p = next_slot[d]
        next_slot[d] = p + 1
        keys_out[p] = k
        if first:
            idx_out[p] = i
        else:
            idx_out[p] = idx[i]


@wp.kernel(enable_backward=False)
def _gather(src: wp.array(dtype=Any), idx: _Int32s, dst: wp.array(dtype=Any)):
    i = wp.tid()
    dst[i] = src[idx[i]]


def _radix_passes(keys: array, begin: int, end: int, kind: str, lanes: bool | None = None,
                  order: array | None = None, uniform: bool = False) -> array:
    """Sort the contiguous uint32/uint64 bit patterns ``keys`` in place (as keys of ``kind``) by bits
    [begin, end); return the permutation applied (int32: sorted position -> original index), written
    into ``order`` when given. ``lanes``: rank by warp lanes (the GPU's way; the default there,
    ``radix_lanes``) rather than by chunk tasks; ``uniform``: see ``sort_order``."""
    n, device, utype = keys.size, keys.device, keys.dtype
    if (not device.is_cpu if lanes is None else lanes):
        return radix_lanes.lane_passes(keys, begin, end, kind, order, uniform)
    chunk, chunks = cpu_chunks(n, device)
    # scratch every pass writes before reading (each count kernel writes its digits' whole histogram
    # rows, and a pass scans only those): no zero fill
    hist = uninitialized(_CPU_DIGITS * chunks, dtype=T.int32, device=device)
    idx = [uninitialized(n, dtype=T.int32, device=device) for _ in range(2)]
    bufs = [keys, uninitialized(n, dtype=utype, device=device)]
    flips = _order_flips(utype, kind)
    shifts = range(begin, end, RADIX_BITS_CPU)
    for p, shift in enumerate(shifts):
        digits = 1 << min(RADIX_BITS_CPU, end - shift)
        digit = [utype(shift), utype(digits - 1), *flips]
        src, dst = p % 2, 1 - p % 2
        _launch(_radix_count, chunks, [bufs[src], hist, n, chunk, chunks, *digit], device)
        rows = _rows(hist[:digits * chunks])
        _scan_rows(rows, rows, False)
        if order is not None and p == len(shifts) - 1:
            idx[dst] = order
        inputs = [bufs[src], idx[src], bufs[dst], idx[dst], hist, n, chunk, chunks, int(p == 0), *digit]
        _launch(_radix_scatter, chunks, inputs, device)
    if len(shifts) % 2:
        copy(keys, bufs[1])
    return idx[len(shifts) % 2]


def _permute(a: array, idx: array):
    """a[:] = a[idx] (a contiguous array of 4- or 8-byte elements, through a copy)."""
    bits = a.view(T.uint32 if T.type_size(a.dtype) == 4 else T.uint64)
    _launch(_gather, a.size, [clone(bits), idx, bits], a.device)


_KEY_KINDS = {T.int32: (T.uint32, "int"), T.uint32: (T.uint32, "uint"), T.float32: (T.uint32, "float"),
              T.int64: (T.uint64, "int"), T.uint64: (T.uint64, "uint"), T.float64: (T.uint64, "float")}


def radix_sort_pairs(keys: array, values: array, count: int, begin_bit: int = 0,
                     end_bit: int | None = None) -> None:
    """Sort the first ``count`` (key, value) pairs by key, stably. Keys: int32, uint32, float32, int64,
    uint64 or float64 (floats in IEEE order: -0 before +0, NaNs by sign at the ends); values: any
    4- or 8-byte type. Both arrays must hold ``2 * count`` elements, as in Warp (whose second half is
    scratch there; here it is left alone). ``[begin_bit, end_bit)``: the key bits sorted on."""
    count = operator.index(count)
    if keys.size < 2 * count or values.size < 2 * count:
        raise RuntimeError("Keys and values array storage must be large enough to contain 2*count elements")
    if count == 0:
        return
    _same_device(keys, values)
    for what, a in (("keys", keys), ("values", values)):
        if not a.is_contiguous:
            raise RuntimeError(f"radix_sort_pairs() requires a contiguous {what} array")
    if keys.dtype not in _KEY_KINDS or T.is_struct(values.dtype) or T.type_size(values.dtype) not in (4, 8):
        raise RuntimeError(f"Unsupported keys and values data types: {_name(keys.dtype)}, "
                           f"{_name(values.dtype)}")
    utype, kind = _KEY_KINDS[keys.dtype]
    bits = 8 * T.type_size(utype)
    end = bits if end_bit is None else end_bit
    if not 0 <= begin_bit <= end <= bits:
        raise RuntimeError(f"Invalid radix sort bit range [{begin_bit}, {end}) for {bits}-bit keys")
    if count < 2 or begin_bit == end:
        return
    idx = _radix_passes(keys.flatten()[:count].view(utype), begin_bit, end, kind)
    _permute(values.flatten()[:count], idx)


def sort_order(keys: array, order: array, begin_bit: int, end_bit: int, uniform: bool = False) -> None:
    """The library's own sorts (trees, hash grids): sort the contiguous unsigned ``keys`` in place by
    bits [begin_bit, end_bit), stably, and write where each sorted key came from into ``order``
    (int32, as long as keys), which radix_sort_pairs of (keys, arange) gives, with no gather.
    ``uniform``: the keys may leave digits unused (the GPU's passes then check for a digit every key
    shares, and copy instead of sorting there)."""
    utype, kind = _KEY_KINDS[keys.dtype]
    if keys.size < 2:
        order.fill_(0)
        return
    _radix_passes(keys.view(utype), begin_bit, end_bit, kind, order=order, uniform=uniform)
