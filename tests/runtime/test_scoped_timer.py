"""wp.ScopedTimer: Warp's arguments, output format and nesting (differential against warp-lang)."""
import contextlib
import io
import re
import time

import pytest

import tilewarp as wp


def _nested(lib, sleep_ms):
    out, timings = io.StringIO(), {}
    with contextlib.redirect_stdout(out):
        with lib.ScopedTimer("outer", dict=timings) as outer:
            outer.extra_msg = "(3 steps)"
            time.sleep(sleep_ms / 1000)
            with lib.ScopedTimer("inner", dict=timings):
                with lib.ScopedTimer("innermost", dict=timings):
                    time.sleep(sleep_ms / 1000)
            with lib.ScopedTimer("quiet", print=False, dict=timings):
                pass
    return out.getvalue(), timings, outer.elapsed


def _shape(text):
    return re.sub(r"\d+\.\d\d", "T", text)


def test_output_nesting_and_dict_match_warp():
    warp = pytest.importorskip("warp")
    warp.config.quiet = True
    text, timings, elapsed = _nested(wp, 8)
    warp_text, warp_timings, _ = _nested(warp, 1)
    assert _shape(text) == _shape(warp_text)
    assert sorted(timings) == sorted(warp_timings) and all(len(v) == 1 for v in timings.values())
    assert elapsed >= 16.0 and timings["outer"] == [elapsed]
    assert timings["inner"][0] >= 8.0 and timings["inner"][0] <= elapsed


def test_inactive_and_synchronized_timers():
    with wp.ScopedTimer("off", active=False) as t:
        time.sleep(0.002)
    assert t.elapsed == 0.0
    x = wp.zeros(1000, dtype=float, device="cpu")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), wp.ScopedTimer("sync", synchronize=True) as t:
        x.fill_(2.0)
    assert out.getvalue().startswith("sync took ") and t.elapsed > 0.0
