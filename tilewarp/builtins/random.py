"""Random numbers: Warp's rand_init / randi / randu / randf / randn / sample_* / poisson / sample_cdf.

The state is a ``uint32`` the kernel passes by value; a call ``wp.randf(state)`` returns a value
computed from the advanced state and the frontend rebinds ``state`` to ``_rand_next(state)``, so
repeated calls on one local variable draw new values (Warp's in-place semantics) while the IR stays
single-assignment. ``ADVANCE`` names the advancing builtin of each stateful entry.

The algorithms (``native/core/random.h``) use integer hashing and correctly rounded float
operations only, so CPU and CUDA give identical bits. This module mirrors them in numpy, exactly:
that reference is what ``wp.randf(state)`` computes when called from Python (which, as in Warp,
leaves ``state`` unchanged) and what the tests compare kernels with.
"""
from __future__ import annotations

import numpy as np

from ..language import types as T
from .registry import Builtin, fail, names, register

U32 = np.uint32
F32 = np.float32
_G = 0x9E3779B9


# ---- the numpy reference (vectorised over uint32 states) ------------------------------------------


def _wraps(fn):
    """uint32 arithmetic wraps by design: silence numpy's overflow warning for 0-d operands."""

    def quiet(*args, **kwargs):
        with np.errstate(over="ignore"):
            return fn(*args, **kwargs)

    quiet.__name__, quiet.__doc__ = fn.__name__, fn.__doc__
    return quiet


def _u32(x):
    return np.asarray(x, dtype=np.uint64).astype(U32) if not isinstance(x, np.ndarray) else x.astype(U32)


@_wraps
def step(s):
    return _u32(s) * U32(0x915F77F5) + U32(0x6A09E667)


@_wraps
def mix(x):
    x = _u32(x).copy()
    x ^= x >> U32(16)
    x *= U32(0x7FEB352D)
    x ^= x >> U32(15)
    x *= U32(0x846CA68B)
    x ^= x >> U32(16)
    return x


@_wraps
def draw(s, k):
    return mix(_u32(s) + U32((k * _G) & 0xFFFFFFFF))


def unit(x):
    return (_u32(x) >> U32(8)).astype(F32) * F32(2.0**-24)


def unit_open0(x):
    return ((_u32(x) >> U32(8)) + U32(1)).astype(F32) * F32(2.0**-24)


def fma(a, b, c):
    """float32 a * b + c rounded once (as the hardware fma): exact product and TwoSum in float64, then
    a nudge where the float64 sum sits exactly halfway between two floats but is not exact."""
    a, b, c = (np.asarray(v, F32).astype(np.float64) for v in (a, b, c))
    p = a * b
    s = p + c
    with np.errstate(invalid="ignore"):  # inf operands: err is nan, s already right
        bb = s - p
        err = (p - (s - bb)) + (c - bb)
    halfway = (s.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)
    s = np.where(halfway & (err != 0), np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    return s.astype(F32)


def log(x):
    x = np.asarray(x, F32)
    b = x.view(U32)
    e = (b >> U32(23)).astype(np.int32) - 127
    m = ((b & U32(0x7FFFFF)) | U32(0x3F800000)).view(F32)
    big = m > F32(1.41421356)
    m = np.where(big, m * F32(0.5), m)
    e = e + big
    f = m - F32(1)
    s = f / (F32(2) + f)
    z = s * s
    p = fma(z, F32(0.11111111), F32(0.14285714))
    p = fma(z, p, F32(0.2))
    p = fma(z, p, F32(0.33333334))
    s2 = s + s
    return fma(e.astype(F32), F32(0.69314718), fma(s2 * z, p, s2))


def sincos_turn(k):
    """``(sin, cos)`` of ``2 pi k / 2^24`` for 24-bit integers ``k``."""
    k = _u32(k).astype(np.int64)
    q = (k + (1 << 21)) >> 22
    x = (k - (q << 22)).astype(F32) * F32(3.7450702e-7)
    z = x * x
    ps = fma(z, F32(2.7557319e-6), F32(-1.9841270e-4))
    ps = fma(z, ps, F32(8.3333333e-3))
    ps = fma(z, ps, F32(-0.16666667))
    sn = fma(x * z, ps, x)
    pc = fma(z, F32(-2.7557319e-7), F32(2.4801587e-5))
    for coef in (-1.3888889e-3, 4.1666667e-2, -0.5, 1.0):
        pc = fma(z, pc, F32(coef))
    cs = pc
    q = q & 3
    s = np.select([q == 0, q == 1, q == 2], [sn, cs, -sn], -cs)
    c = np.select([q == 0, q == 1, q == 2], [cs, -sn, -cs], sn)
    return s.astype(F32), c.astype(F32)


@_wraps
def seed_bits(seed, signed=True):
    """A seed's 32 bits: its low word, xor the mixed high word beyond sign extension (64-bit seeds)."""
    v = np.asarray(seed).astype(np.int64 if signed else np.uint64).astype(np.uint64)
    lo = (v & np.uint64(0xFFFFFFFF)).astype(U32)
    hi = (v >> np.uint64(32)).astype(U32)
    if signed:
        hi ^= (lo.view(np.int32) >> 31).view(U32)
    return lo ^ mix(hi)


@_wraps
def rand_init(seed, offset=0, signed=(True, True)):
    return mix(mix(seed_bits(seed, signed[0])) ^ mix(seed_bits(offset, signed[1]) + U32(_G)))


@_wraps
def randu(state, low=None, high=None):
    x = draw(step(state), 0)
    if low is None:
        return x
    low, high = _u32(np.asarray(low, np.int64) & 0xFFFFFFFF), _u32(np.asarray(high, np.int64) & 0xFFFFFFFF)
    r = (high - low).astype(np.uint64)
    return low + ((x.astype(np.uint64) * r) >> np.uint64(32)).astype(U32)


def randi(state, low=None, high=None):
    return randu(state, low, high).view(np.int32)


def randf(state, low=None, high=None):
    u = unit(randu(state))
    if low is None:
        return u
    return fma(F32(high) - F32(low), u, F32(low))


def randn(state):
    s = step(state)
    r = np.sqrt(F32(-2) * log(unit_open0(draw(s, 0))))
    return r * sincos_turn(draw(s, 1) >> U32(8))[1]


def sample_unit_square(state):
    s = step(state)
    return np.stack([unit(draw(s, 0)) - F32(0.5), unit(draw(s, 1)) - F32(0.5)], -1)


def sample_unit_cube(state):
    s = step(state)
    return np.stack([unit(draw(s, k)) - F32(0.5) for k in range(3)], -1)


def sample_unit_ring(state):
    sn, cs = sincos_turn(draw(step(state), 0) >> U32(8))
    return np.stack([cs, sn], -1)


def sample_unit_disk(state):
    s = step(state)
    r = np.sqrt(unit(draw(s, 0)))
    sn, cs = sincos_turn(draw(s, 1) >> U32(8))
    return np.stack([r * cs, r * sn], -1)


def _on_sphere(s, z):
    rxy = np.sqrt(fma(-z, z, F32(1)))
    sn, cs = sincos_turn(draw(s, 1) >> U32(8))
    return np.stack([rxy * cs, rxy * sn, z], -1)


def sample_unit_sphere_surface(state):
    s = step(state)
    return _on_sphere(s, fma(F32(-2), unit(draw(s, 0)), F32(1)))


def sample_unit_hemisphere_surface(state):
    s = step(state)
    return _on_sphere(s, F32(1) - unit(draw(s, 0)))


def _in_ball(s, upper):
    out = np.zeros(s.shape + (3,), F32)
    todo = np.ones(s.shape, bool)
    for j in range(64):
        x = fma(F32(2), unit(draw(s, 3 * j)), F32(-1))
        y = fma(F32(2), unit(draw(s, 3 * j + 1)), F32(-1))
        u = unit(draw(s, 3 * j + 2))
        z = u if upper else fma(F32(2), u, F32(-1))
        hit = todo & (fma(x, x, fma(y, y, z * z)) < F32(1))
        out[hit] = np.stack([x, y, z], -1)[hit]
        todo &= ~hit
        if not todo.any():
            break
    return out


def sample_unit_sphere(state):
    return _in_ball(step(state), False)


def sample_unit_hemisphere(state):
    return _in_ball(step(state), True)


def sample_triangle(state):
    s = step(state)
    a = np.sqrt(unit(draw(s, 0)))
    return np.stack([F32(1) - a, a * (F32(1) - unit(draw(s, 1)))], -1)


def sample_cdf(state, cdf):
    return np.searchsorted(np.asarray(cdf, F32), randf(state), side="left").astype(np.int32)


def poisson(state, lam):
    s = step(state)
    lam = np.asarray(lam, F32) + np.zeros(s.shape, F32)
    out = np.zeros(s.shape, np.uint64)
    small, large = (lam > 0) & (lam < 10), lam >= 10
    out[small] = _poisson_small(s[small], lam[small])
    out[large] = _poisson_ptrs(s[large], lam[large])
    return out.astype(U32)


def _poisson_small(s, lam):
    t, out, todo = np.zeros(s.shape, F32), np.full(s.shape, 1024, np.uint64), np.ones(s.shape, bool)
    for k in range(1024):
        t = t - log(unit_open0(draw(s, k)))
        hit = todo & (t > lam)
        out[hit], todo = k, todo & ~hit
        if not todo.any():
            break
    return out


_STIRLING = np.array([0.0, 8.106146680e-02, 4.134069596e-02, 2.767792568e-02, 2.079067210e-02,
                      1.664469119e-02, 1.387612882e-02, 1.189670995e-02, 1.041126526e-02, 9.255462183e-03,
                      8.330563433e-03, 7.573675488e-03, 6.942840107e-03, 6.408994188e-03, 5.951370113e-03,
                      5.554733552e-03], F32)


def _stirling_error(k):
    inv = F32(1) / k
    inv2 = inv * inv
    tail = inv * fma(inv2, fma(inv2, F32(7.9365079e-4), F32(-2.7777778e-3)), F32(8.3333333e-2))
    return np.where(k < 16, _STIRLING[np.minimum(k, 15).astype(np.int64)], tail)


def _deviance(k, lam):
    d, t = k - lam, k + lam
    v = d / t
    v2 = v * v
    q = fma(v2, fma(v2, fma(v2, F32(0.11111111), F32(0.14285714)), F32(0.2)), F32(0.33333334))
    near = fma((F32(2) * k) * (v * v2), q, d * v)
    with np.errstate(divide="ignore", invalid="ignore"):
        far = fma(k, log(np.maximum(k / lam, F32(1e-30))), lam - k)
    return np.where(d * d < F32(0.01) * (t * t), near, far)


def _poisson_ptrs(s, lam):
    slam, loglam = np.sqrt(lam), log(lam)
    b = fma(F32(2.53), slam, F32(0.931))
    a = fma(F32(0.02483), b, F32(-0.059))
    inv_alpha = F32(1.1239) + F32(1.1328) / (b - F32(3.4))
    vr = F32(0.9277) - F32(3.6224) / (b - F32(2))
    out, todo = np.floor(lam).astype(np.uint64), np.ones(s.shape, bool)
    for j in range(256):
        u = unit(draw(s, 2 * j)) - F32(0.5)
        v = unit_open0(draw(s, 2 * j + 1))
        us = F32(0.5) - np.abs(u)
        with np.errstate(divide="ignore"):  # us == 0: kf is -inf, rejected below
            kf = np.floor(fma(fma(F32(2), a / us, b), u, lam + F32(0.43)))
        quick = (us >= F32(0.07)) & (v <= vr)
        skip = (kf < 0) | ((us < F32(0.013)) & (v > us))
        k1 = np.maximum(kf, F32(1))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lhs = log(v * inv_alpha) - log(a / (us * us) + b)
            rhs = -(_deviance(k1, lam) + _stirling_error(k1) + F32(0.5) * log(F32(6.2831853) * k1))
        rhs = np.where(kf < 1, -lam, rhs)
        hit = todo & (quick | (~skip & (lhs <= rhs)))
        k = np.nan_to_num(kf[hit].astype(np.float64), nan=0.0)
        out[hit] = np.clip(k, 0, 4294967295.0).astype(np.uint64)
        todo &= ~hit
        if not todo.any():
            break
    return out


# ---- type rules and the table --------------------------------------------------------------------

_STATE = (T.uint32,)
#: parameter types by argument count (literals are converted to these by the frontend)
PARAMS = {
    "randi": {1: _STATE, 3: (T.uint32, T.int32, T.int32)},
    "randu": {1: _STATE, 3: (T.uint32, T.uint32, T.uint32)},
    "randf": {1: _STATE, 3: (T.uint32, T.float32, T.float32)},
    "randn": {1: _STATE},
    "poisson": {2: (T.uint32, T.float32)},
    **{f"sample_{n}": {1: _STATE} for n in ("unit_square", "unit_cube", "unit_ring", "unit_disk", "triangle",
                                            "unit_sphere", "unit_sphere_surface", "unit_hemisphere",
                                            "unit_hemisphere_surface")},
}
_RESULTS = {"randi": T.int32, "randu": T.uint32, "randf": T.float32, "randn": T.float32, "poisson": T.uint32,
            "sample_unit_square": T.vec2, "sample_unit_ring": T.vec2, "sample_unit_disk": T.vec2,
            "sample_triangle": T.vec2, "sample_unit_cube": T.vec3, "sample_unit_sphere": T.vec3,
            "sample_unit_sphere_surface": T.vec3, "sample_unit_hemisphere": T.vec3,
            "sample_unit_hemisphere_surface": T.vec3}
#: stateful builtin -> the builtin giving the advanced state (same arguments)
ADVANCE = {**{name: "_rand_next" for name in PARAMS}, "poisson": "_poisson_next", "sample_cdf": "_rand_next"}


def _signature(name):
    overloads = PARAMS[name]

    def rule(args, template):
        want = overloads.get(len(args))
        if want is None or tuple(args) != want:
            options = " or ".join(f"({names(w)})" for w in overloads.values())
            fail(f"expects {options}, got ({names(args)})")
        return _RESULTS[name]

    return rule


def _rand_init(args, template):
    if len(args) not in (1, 2) or not all(T.is_int(a) for a in args):
        fail(f"expects an integer seed and optionally an integer offset, got ({names(args)})")
    return T.uint32


def _sample_cdf(args, template):
    if len(args) != 2 or args[0] is not T.uint32 or not (T.is_array(args[1]) and args[1].dtype is T.float32
                                                           and args[1].ndim == 1):
        fail(f"expects (uint32, array(dtype=float32)), got ({names(args)})")
    return T.int32


def _advance(args, template):
    return T.uint32


def _host(fn, wrap):
    """Python-scope call: the same algorithm on one state, which (as in Warp) is not modified."""

    def call(state, *rest):
        return wrap(fn(np.array([int(state)], np.uint64).astype(U32), *[np.float32(float(r)) if isinstance(
            r, float) else int(r) for r in rest])[0])

    return call


def _host_init(seed, offset=0):
    return T.uint32(int(rand_init(np.array([int(seed)]), np.array([int(offset)]))[0]))


_HOST = {"randi": (randi, int), "randu": (randu, int), "randf": (randf, float), "randn": (randn, float),
         "poisson": (poisson, int)}


def _entry(name):
    fn, wrap = _HOST.get(name, (globals()[name], lambda v: _RESULTS[name](*v.tolist())))
    return Builtin(name, _signature(name), f"tw::{name}", differentiable=False, unify_literals=False,
                   host=_host(fn, wrap))


register(
    Builtin("rand_init", _rand_init, "tw::rand_init", differentiable=False, host=_host_init),
    *(_entry(name) for name in PARAMS),
    Builtin("sample_cdf", _sample_cdf, "tw::sample_cdf", differentiable=False, unify_literals=False),
    # the advanced state, given the stateful call's own arguments (only the state, and poisson's lam, matter)
    Builtin("_rand_next", _advance, "tw::rand_next", differentiable=False, unify_literals=False,
            emit=lambda a, t: f"tw::rand_next({a[0]})"),
    Builtin("_poisson_next", _advance, "tw::poisson_next", differentiable=False, unify_literals=False),
)
