"""Builtins called from plain Python run the kernel implementation on the CPU (differential against
warp-lang, which allows the same calls)."""
import numpy as np
import pytest

import tilewarp as wp

warp = pytest.importorskip("warp")
warp.config.quiet = True

CALLS = [
    ("length", lambda m, r: (m.vec3(*r[:3]),)),
    ("normalize", lambda m, r: (m.vec3(*r[:3]),)),
    ("dot", lambda m, r: (m.vec3(*r[:3]), m.vec3(*r[3:6]))),
    ("cross", lambda m, r: (m.vec3(*r[:3]), m.vec3(*r[3:6]))),
    ("length_sq", lambda m, r: (m.vec2d(*r[:2]),)),
    ("transpose", lambda m, r: (m.mat33(*r[:9]),)),
    ("determinant", lambda m, r: (m.mat22(*r[:4]),)),
    ("inverse", lambda m, r: (m.mat33(*r[:9]) + m.mat33(4.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 4.0),)),
    ("quat_rotate", lambda m, r: (m.normalize(m.quat(*r[:4])) if m is wp else m.normalize(m.quat(*r[:4])),
                                  m.vec3(*r[4:7]))),
    ("outer", lambda m, r: (m.vec3(*r[:3]), m.vec3(*r[3:6]))),
    ("lerp", lambda m, r: (m.vec3(*r[:3]), m.vec3(*r[3:6]), float(r[6]))),
]


@pytest.mark.parametrize("name,make", CALLS, ids=[c[0] for c in CALLS])
def test_python_scope_builtins_match_warp(name, make):
    r = np.random.default_rng(len(name)).uniform(-1, 1, 9).tolist()
    ours, theirs = getattr(wp, name)(*make(wp, r)), getattr(warp, name)(*make(warp, r))
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64),
                               rtol=2e-6, atol=1e-7)
    assert isinstance(ours, float) == isinstance(theirs, float)  # a Python float, or a composite


def test_double_precision_results_are_typed_scalars_as_warp():
    v = wp.vec3d(1.0, 2.0, 3.0)
    d = wp.dot(v, v)
    assert isinstance(d, wp.float64) and d.value == 14.0


def test_memory_builtins_and_bad_types_are_refused():
    with pytest.raises(RuntimeError, match=r"wp.atomic_add\(\) can only be called inside a kernel"):
        wp.atomic_add(1, 2)
    with pytest.raises(TypeError, match=r"wp.cross\(\)"):
        wp.cross(wp.vec2(1.0, 2.0), wp.vec2(3.0, 4.0))


def test_matrix_arithmetic_at_python_scope_matches_warp():
    r = np.random.default_rng(11).uniform(-1, 1, 21).tolist()
    for lib in (wp, warp):
        a, b, v = lib.mat33(*r[:9]), lib.mat33(*r[9:18]), lib.vec3(*r[18:])
        results = [a + b, a - b, a * b, a @ v, a * 2.0, 2.0 * a, -a, a / 4.0]
        if lib is wp:
            ours = results
        else:
            theirs = results
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64), rtol=1e-6,
                                   atol=1e-7)
