"""The GPU's radix sort passes (also run on the CPU, one task a block, to test them there): a chunk
of RADIX_GROUP * RADIX_ROUNDS elements is taken by a block of RADIX_GROUP tasks in RADIX_ROUNDS
rounds, each element ranked among the chunk's equal digits so far (``wp._lane_digit_rank``: lane
votes per warp, the warps' counts and the chunk's running counts in shared memory, no atomics), over
8-bit digits; native/runtime/lanes.h has the block-level helpers."""
from __future__ import annotations

from typing import Any

import tilewarp as wp

from ..language import types as T
from ..runtime.array import array, copy, uninitialized
from .core import _digit, _Int32s, _order_flips, _rows, _scan_rows

RADIX_BITS_GPU = 8   # bits per pass (256 counts per block of elements) ...
RADIX_GROUP = 256    # ... whose blocks of this many tasks (at most 256: lanes.h's lane_digit_rank) ...
RADIX_ROUNDS = 8     # ... take chunks of RADIX_GROUP * RADIX_ROUNDS elements (one task, this many, on the CPU)


@wp.kernel(enable_backward=False)
def _radix_lane_count(keys: wp.array(dtype=Any), hist: _Int32s, n: int, group: int, chunks: int, digits: int,
                      shift: Any, mask: Any, sign: Any, flip_pos: Any, flip_neg: Any):
    # GPU: a block of `group` tasks counts a chunk of group * RADIX_ROUNDS elements (lanes.h), then
    # writes its column of the digit-major histogram, every digit. Padding tasks (past n) take part
    # without a digit
    t = wp.tid()
    chunk = t // group
    lane = t - chunk * group
    first = chunk * group * RADIX_ROUNDS + lane
    for e in range(RADIX_ROUNDS):  # a constant: unrolled, so the rounds' loads overlap
        i = first + e * group
        k = keys[wp.min(i, n - 1)]
        d = int(-1)
        if i < n:
            d = _digit(k, shift, mask, sign, flip_pos, flip_neg)
        wp._lane_digit_count(d, e)
    # GPU: each task writes one digit's count (digits <= group); the CPU's one-task block, every digit.
    # Every task calls _lane_digit_total the same number of times (it waits for the block's counts)
    for dd in range(lane, wp.max(digits, group), group):
        total = wp._lane_digit_total(dd)
        if dd < digits:
            hist[dd * chunks + chunk] = total


@wp.kernel(enable_backward=False)
def _radix_lane_scatter(keys: wp.array(dtype=Any), idx: _Int32s, keys_out: wp.array(dtype=Any), idx_out: _Int32s,
                        slots: _Int32s, n: int, group: int, chunks: int, digits: int, first_pass: int,
                        shift: Any, mask: Any, sign: Any, flip_pos: Any, flip_neg: Any):
    # GPU: the chunk's elements are ranked among its equal digits and staged in digit order (lanes.h),
    # then written out in that order, each digit's run to its (digit, chunk) slot
    t = wp.tid()
    chunk = t // group
    lane = t - chunk * group
    first = chunk * group * RADIX_ROUNDS + lane
    wp._lane_digit_starts(slots, chunk, chunks, digits, n)
    for e in range(RADIX_ROUNDS):
        i = first + e * group
        at = wp.min(i, n - 1)
        k = keys[at]
        d = int(-1)
        if i < n:
            d = _digit(k, shift, mask, sign, flip_pos, flip_neg)
        r = wp._lane_digit_rank(d, e)
        v = at
        if not first_pass:
            v = idx[at]
        wp._lane_stage(d, r, k, v)
    for e in range(RADIX_ROUNDS):
        staged = wp._lane_flush(e, keys[0])
        if staged[2] >= 0:
            keys_out[staged[2]] = staged[0]
            idx_out[staged[2]] = staged[1]


def lane_passes(keys: array, begin: int, end: int, kind: str) -> array:
    """``radix._radix_passes`` by lanes: sort ``keys`` in place by bits [begin, end), return the order."""
    n, device, utype = keys.size, keys.device, keys.dtype
    group = RADIX_GROUP if not device.is_cpu else 1
    chunks = -(-n // (group * RADIX_ROUNDS))
    tasks = chunks * group
    bits = RADIX_BITS_GPU
    # scratch every pass writes before reading (each count kernel writes its digits' whole histogram
    # rows, and a pass scans only those): no zero fill
    hist = uninitialized((1 << bits) * chunks, dtype=T.int32, device=device)
    idx = [uninitialized(n, dtype=T.int32, device=device) for _ in range(2)]
    bufs = [keys, uninitialized(n, dtype=utype, device=device)]
    flips = _order_flips(utype, kind)
    shifts = range(begin, end, bits)
    launch = {"dim": tasks, "device": device, "block_dim": RADIX_GROUP, "record_tape": False}
    for p, shift in enumerate(shifts):
        digits = 1 << min(bits, end - shift)
        digit = [utype(shift), utype(digits - 1), *flips]
        src, dst = p % 2, 1 - p % 2
        wp.launch(_radix_lane_count, inputs=[bufs[src], hist, n, group, chunks, digits, *digit], **launch)
        rows = _rows(hist[:digits * chunks])
        _scan_rows(rows, rows, False)
        wp.launch(_radix_lane_scatter, inputs=[bufs[src], idx[src], bufs[dst], idx[dst], hist, n, group, chunks,
                                               digits, int(p == 0), *digit], **launch)
    if len(shifts) % 2:
        copy(keys, bufs[1])
    return idx[len(shifts) % 2]
