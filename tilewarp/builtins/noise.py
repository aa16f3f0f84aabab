"""Perlin gradient noise, with Warp 1.19's names, signatures and defaults:

* ``noise(state, x)``: x a float, vec2, vec3 or vec4; the noise value (a scalar);
* ``pnoise(state, x, px[, py[, pz[, pt]]])``: the same field wrapped to repeat every ``p*`` cells
  along each axis (one integer period per coordinate), exactly periodic;
* ``curlnoise(state, x, octaves=1, lacunarity=2.0, gain=0.5)``: a divergence-free field, the
  rotated gradient of one potential for a vec2 (a vec2), the curl of three potentials over the
  first three axes for a vec3 or vec4 (a vec3), summed over octaves (``lacunarity ** i`` times the
  position, weight ``gain ** i``).

``state`` (from ``wp.rand_init``) selects the field and is never advanced, so these are plain
functions (not the stateful random builtins). They are differentiable with respect to the position
(analytic adjoints, the Hessian for curlnoise); the state, the periods and the octave parameters
get no gradient, as in Warp. Positions may be float32 or float64 (Warp: float32).

The values come from tilewarp's own random stream, so they differ from Warp's (whose generator
differs by design); the properties hold: zero on the integer lattice, C2 continuity, the range
``|noise| <= sqrt(n) / 2``, exact periods. C++ in ``native/geometry/noise.h``, included only by the
kernels that call these builtins (``Builtin.header``).
"""
from __future__ import annotations

from ..language import types as T
from .registry import Builtin, fail, names, register

_HEADER = "geometry/noise.h"
_FLOATS = (T.float32, T.float64)
_POSITION = "x: a float, vec2, vec3 or vec4 (float32 or float64)"


def _dim(t) -> int:
    """How many coordinates a position of type ``t`` has (0: not a position)."""
    if t in _FLOATS:
        return 1
    if T.is_vector(t) and T.scalar_of(t) in _FLOATS and 2 <= t._length_ <= 4:
        return t._length_
    return 0


def _noise(args, template):
    if len(args) != 2 or not T.is_int(args[0]) or not _dim(args[1]):
        fail(f"expects (state: uint32, {_POSITION}), got ({names(args)})")
    return T.scalar_of(args[1])


def _pnoise(args, template):
    n = _dim(args[1]) if len(args) >= 2 else 0
    if not n or not T.is_int(args[0]) or len(args) != 2 + n or not all(T.is_int(p) for p in args[2:]):
        fail(f"expects (state: uint32, {_POSITION}, then one int period per coordinate), got ({names(args)})")
    return T.scalar_of(args[1])


def _curlnoise(args, template):
    n = _dim(args[1]) if len(args) >= 2 else 0
    rest = args[2:]
    # lacunarity and gain: any number (an int literal is fine), converted to the position's type
    ok = n >= 2 and T.is_int(args[0]) and len(rest) <= 3 and (not rest or T.is_int(rest[0])) and all(
        T.is_float(a) or T.is_int(a) for a in rest[1:])
    if not ok:
        fail("expects (state: uint32, xy: vec2 / xyz: vec3 / xyzt: vec4 (float32 or float64), "
             f"octaves: uint32 = 1, lacunarity: float = 2.0, gain: float = 0.5), got ({names(args)})")
    return T.vector(2 if n == 2 else 3, T.scalar_of(args[1]))


def _entry(name, rule):
    # unify_literals=False: an int literal period or seed stays an integer, a float literal a float32
    return Builtin(name, rule, f"tw::{name}", adjoint=f"tw::adj_{name}", unify_literals=False, header=_HEADER)


register(
    _entry("noise", _noise),
    _entry("pnoise", _pnoise),
    _entry("curlnoise", _curlnoise),
)
