"""The GPU's radix sort (also run on the CPU, one task a block, to test it there): one launch counts
every pass's 8-bit digits, then one launch a pass ("onesweep"): a block of RADIX_GROUP tasks takes
the next chunk of RADIX_GROUP * RADIX_ROUNDS elements, each warp ranks its own 256 of them among
equal digits (lane votes, no block barrier), the block finds where each digit's run goes by
decoupled look-back over the chunks before it (no scan launches between passes), stages the chunk
in digit order in shared memory and writes it out a digit run at a time. The block-level helpers
are native/runtime/lanes.h's."""
from __future__ import annotations

from typing import Any

import tilewarp as wp

from ..language import types as T
from ..runtime.array import array, copy, empty, uninitialized
from .core import _digit, _Int32s, _order_flips

RADIX_BITS_GPU = 8   # bits per pass: lanes.h's tables hold 256 digits (fixed) ...
RADIX_GROUP = 256    # ... whose blocks of this many tasks (at most 256: lanes.h's lane_digit_rank) ...
RADIX_ROUNDS = 8     # ... take chunks of RADIX_GROUP * RADIX_ROUNDS elements (one task, this many, on the CPU)


_Int64s = wp.array(dtype=wp.int64)


@wp.kernel(enable_backward=False)
def _radix_lane_histograms(keys: wp.array(dtype=Any), copy_to: wp.array(dtype=Any), counters: _Int64s, n: int,
                           group: int, passes: int, shift: Any, step: Any, mask: Any, last_mask: Any, sign: Any,
                           flip_pos: Any, flip_neg: Any):
    # every pass's digit counts over the whole array, ahead of the passes, from one read of the keys: a
    # block of `group` tasks tallies a chunk in shared memory, a table a pass (lanes.h), then adds them
    # to counters[passes:], 256 a pass (one atomic per block and digit). An odd number of passes
    # starts from a copy of the keys (copy_to, written here), so that the last pass ends in the keys
    t = wp.tid()
    block = t // group
    base = block * group * RADIX_ROUNDS
    wp._lane_prefetch(keys, base, n)
    for e in range(RADIX_ROUNDS):
        i = base + wp._lane_element(e)
        k = keys[wp.min(i, n - 1)]
        if passes % 2 == 1 and i < n:
            copy_to[i] = k
        s = shift
        for p in range(passes):
            m = mask
            if p == passes - 1:
                m = last_mask
            d = int(-1)
            if i < n:
                d = _digit(k, s, m, sign, flip_pos, flip_neg)
            wp._lane_digit_tally(d, p, e)
            s = s + step
    # GPU: each task adds one digit's counts (256 = group); the CPU's one-task block, every digit.
    # Every task calls _lane_tally_total the same number of times (it waits for the tallies)
    lane = t - block * group
    for dd in range(lane, 256, group):
        for p in range(passes):
            total = wp._lane_tally_total(dd, p)
            if total > 0:
                wp.atomic_add(counters, passes + p * 256 + dd, wp.int64(total))


@wp.kernel(enable_backward=False)
def _radix_lane_sweep(keys: wp.array(dtype=Any), idx: _Int32s, keys_out: wp.array(dtype=Any), idx_out: _Int32s,
                      counters: _Int64s, status: _Int64s, hist: _Int64s, n: int, group: int, digits: int, bits: int,
                      p: int, first_pass: int, uniform: int, shift: Any, mask: Any, sign: Any, flip_pos: Any,
                      flip_neg: Any):
    # one pass: the block takes the next chunk (a ticket), ranks its elements among equal digits, finds
    # each digit's place by look-back over the chunks before it, stages the chunk in digit order and
    # writes it out a digit run at a time (lanes.h). Where the caller expects passes whose digit is the
    # same for every key (`uniform`: keys with unused high bits), the histogram says which; such a pass
    # leaves the order as it is, and each block copies its chunk
    if uniform != 0 and hist[_digit(keys[0], shift, mask, sign, flip_pos, flip_neg)] == wp.int64(n):
        base = (wp.tid() // group) * group * RADIX_ROUNDS
        for e in range(RADIX_ROUNDS):
            i = base + wp._lane_element(e)
            if i < n:
                keys_out[i] = keys[i]
                v = i
                if not first_pass:
                    v = idx[i]
                idx_out[i] = v
        return
    chunk = wp._lane_ticket(counters, p)
    base = chunk * group * RADIX_ROUNDS
    wp._lane_prefetch(keys, base, n)
    if not first_pass:
        wp._lane_prefetch(idx, base, n)
    for e in range(RADIX_ROUNDS):  # a constant: unrolled, so the rounds' loads overlap
        i = base + wp._lane_element(e)
        d = int(-1)
        if i < n:
            d = _digit(keys[i], shift, mask, sign, flip_pos, flip_neg)
        wp._lane_digit_rank(d, e, bits)
    wp._lane_digit_bases(status, hist, chunk, digits)
    for e in range(RADIX_ROUNDS):
        i = base + wp._lane_element(e)
        if i < n:
            k = keys[i]
            v = i
            if not first_pass:
                v = idx[i]
            wp._lane_stage(_digit(k, shift, mask, sign, flip_pos, flip_neg), e, k, v)
    for e in range(RADIX_ROUNDS):
        staged = wp._lane_flush(e, shift)  # (shift: a value of the key type, no load)
        if staged[2] >= 0:
            keys_out[staged[2]] = staged[0]
            idx_out[staged[2]] = staged[1]


def lane_passes(keys: array, begin: int, end: int, kind: str, order: array | None = None,
                uniform: bool = False) -> array:
    """``radix._radix_passes`` by lanes: sort ``keys`` in place by bits [begin, end), return the order
    (written into ``order`` when given). One launch counts every pass's digits, then one launch a pass
    (no scans between); ``uniform``: check for passes whose digit every key shares, and copy there."""
    n, device, utype = keys.size, keys.device, keys.dtype
    group = RADIX_GROUP if not device.is_cpu else 1
    chunks = -(-n // (group * RADIX_ROUNDS))
    bits = RADIX_BITS_GPU
    shifts = range(begin, end, bits)
    passes = len(shifts)
    # tickets, histograms, then each pass's status words: all start at zero (one fill)
    counters = empty(passes * (1 + 256 + 256 * chunks), dtype=T.int64, device=device)
    counters.zero_()
    idx = [uninitialized(n, dtype=T.int32, device=device) for _ in range(2)]
    bufs = [keys, uninitialized(n, dtype=utype, device=device)]
    flips = _order_flips(utype, kind)
    last_digits = 1 << (end - shifts[-1])
    launch = {"dim": chunks * group, "device": device, "block_dim": RADIX_GROUP, "record_tape": False}
    wp.launch(_radix_lane_histograms, inputs=[keys, bufs[1], counters, n, group, passes, utype(begin), utype(bits),
                                              utype(255), utype(last_digits - 1), *flips], **launch)
    for p, shift in enumerate(shifts):
        digits = 1 << min(bits, end - shift)
        src, dst = (passes + p) % 2, (passes + p + 1) % 2  # the last pass writes bufs[0], the keys
        out = order if order is not None and p == passes - 1 else idx[dst]
        status = counters[passes * 257 + p * chunks * 256:][:chunks * 256]
        hist = counters[passes + p * 256:][:256]
        wp.launch(_radix_lane_sweep, inputs=[bufs[src], idx[src], bufs[dst], out, counters, status, hist, n,
                                             group, digits, digits.bit_length() - 1, p, int(p == 0), int(uniform),
                                             utype(shift),
                                             utype(digits - 1), *flips], **launch)
        idx[dst] = out
    return idx[0]
