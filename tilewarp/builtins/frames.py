"""Rotations and frames beyond quat_*/transform_* basics (Warp 1.19's math.py functions): Euler
angles, roll-pitch-yaw, swing-twist, transforms <-> 4x4 matrices with scale, the in-place
``transform_set_*`` and ``velocity_at_point``. C++ in ``native/core/frames.h``.

Warp defines the Euler, twist and velocity functions for float32 only; tilewarp takes any float
type, so float64 code needs no casts.
"""
from __future__ import annotations

import math

import numpy as np

from ..language import types as T
from .registry import Builtin, fail, names, register
from .spatial import _dtype_of, _rotate, _signature


def _euler(first, result):
    """``(first, i, j, k)`` with ``first`` a kind of ``_signature`` and three integer axis indices."""
    head = _signature(first, result=result)

    def rule(args, template):
        if len(args) != 4 or not all(T.is_int(a) for a in args[1:]):
            fail(f"expects ({head.form[1:-1]}, i: int, j: int, k: int), got ({names(args)})")
        return head(args[:1], template)

    return rule


def _entry(name, rule, **kw):
    return Builtin(name, rule, f"tw::{name}", adjoint=f"tw::adj_{name}", host=_HOST.get(name), **kw)


# ---- host evaluation (Warp lets scene setup code call these outside kernels) ---------------------


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def _qmul(a, b):
    v = a[3] * b[:3] + b[3] * a[:3] + np.cross(a[:3], b[:3])
    return np.concatenate([v, [a[3] * b[3] - a[:3] @ b[:3]]])


def _axis_quat(axis, angle):
    q = np.array([0.0, 0.0, 0.0, math.cos(angle / 2)])
    q[axis if axis in (0, 1) else 2] = math.sin(angle / 2)
    return q


def _host_from_euler(e, i, j, k):
    e = _f64(e)
    qi, qj, qk = (_axis_quat(int(a), e[int(a) % 3]) for a in (i, j, k))
    return T.quaternion(_dtype_of(e))(*_qmul(qk, _qmul(qj, qi)))


def _host_to_euler(q, i, j, k):
    """The C++ quat_to_euler (native/core/frames.h) step for step, in float64."""
    x, y, z, w = _f64(q)
    i, j, k = int(i) + 1, int(j) + 1, int(k) + 1
    proper = i == k
    k = 6 - i - j if proper else k
    e = (i - j) * (j - k) * (k - i) / 2
    part = {2: y, 3: z}
    a, b, c, d = w, part.get(i, x), part.get(j, x), part.get(k, x) * e
    if not proper:
        a, b, c, d = a - part.get(j, x), b + part.get(k, x) * e, c + w, d - part.get(i, x)
    t2 = math.acos(min(max(2 * (a * a + b * b) / (a * a + b * b + c * c + d * d) - 1, -1.0), 1.0))
    tp, tm, t1 = math.atan2(b, a), math.atan2(d, c), 0.0
    if abs(t2) < 1e-6:
        t3 = 2 * tp
    elif abs(t2 - math.pi) < 1e-6:
        t3 = 2 * tm
    else:
        t1, t3 = tp - tm, tp + tm
    if not proper:
        t2, t3 = t2 - math.pi / 2, t3 * e
    out = [t1, t2, t3]
    if i == 2:
        out[0], out[1] = t2, t1
    elif i == 3:
        out[0], out[2] = t3, t1
    out[{1: 0, 2: 1}.get(j, 2)] = t2
    out[{1: 0, 2: 1}.get(k, 2)] = t3
    return T.vector(3, _dtype_of(q))(*out)


def _host_to_rpy(q):
    x, y, z, w = _f64(q)
    return T.vector(3, _dtype_of(q))(math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y)),
                                      math.asin(min(max(2 * (w * y - z * x), -1.0), 1.0)),
                                      math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def _host_twist(axis, q):
    axis, q = _f64(axis), _f64(q)
    t = np.concatenate([(q[:3] @ axis) * axis, q[3:]])
    n = np.linalg.norm(t)
    return T.quaternion(_dtype_of(q))(*(t / n if n > 0 else [0, 0, 0, 1]))


def _host_twist_angle(signed):
    def angle(axis, q):
        s = float(_f64(axis) @ _f64(q)[:3])
        return 2 * math.atan2(s if signed else abs(s), float(_f64(q)[3]))

    return angle


def _host_compose(p, q, s):
    m = np.eye(4)
    m[:3, :3] = np.stack([_rotate(_f64(q), e) for e in np.eye(3)], 1) * _f64(s)
    m[:3, 3] = _f64(p)
    return T.matrix((4, 4), _dtype_of(p, q, s))(*m.reshape(-1))


def _host_decompose(m):
    m, dt = _f64(m).reshape(4, 4), _dtype_of(m)
    s = np.linalg.norm(m[:3, :3], axis=0)
    r = m[:3, :3] / np.where(s != 0, s, 1)
    q = _host_quat_from_matrix(r)
    return T.vector(3, dt)(*m[:3, 3]), T.quaternion(dt)(*q), T.vector(3, dt)(*s)


def _host_quat_from_matrix(m):
    """Shepperd's method as tw::quat_from_matrix: the branch's pivot component positive, normalised."""
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr >= 0:
        h = math.sqrt(tr + 1)
        f = 0.5 / h
        q = [(m[2, 1] - m[1, 2]) * f, (m[0, 2] - m[2, 0]) * f, (m[1, 0] - m[0, 1]) * f, 0.5 * h]
    else:
        p = 0 if m[0, 0] >= m[1, 1] and m[0, 0] >= m[2, 2] else 1 if m[1, 1] >= m[2, 2] else 2
        a, b = (p + 1) % 3, (p + 2) % 3
        h = math.sqrt(m[p, p] - m[a, a] - m[b, b] + 1)
        f = 0.5 / h
        q = [0.0] * 4
        q[p], q[3] = 0.5 * h, (m[b, a] - m[a, b]) * f
        q[a], q[b] = (m[p, a] + m[a, p]) * f, (m[b, p] + m[p, b]) * f
    q = np.asarray(q)
    return q / np.linalg.norm(q)


def _host_from_matrix(m):
    dt, m64 = _dtype_of(m), _f64(m).reshape(4, 4)
    return T.transformation(dt)(*m64[:3, 3], *_host_quat_from_matrix(m64[:3, :3]))


_HOST = {
    "quat_from_euler": _host_from_euler, "quat_to_euler": _host_to_euler, "quat_to_rpy": _host_to_rpy,
    "quat_twist": _host_twist, "quat_twist_angle": _host_twist_angle(False),
    "quat_twist_angle_signed": _host_twist_angle(True),
    "velocity_at_point": lambda qd, r: T.vector(3, _dtype_of(qd))(
        *(_f64(qd)[3:] + np.cross(_f64(qd)[:3], _f64(r)))),
    "transform_from_matrix": _host_from_matrix, "transform_compose": _host_compose,
    "transform_decompose": _host_decompose,
}


_vec3 = lambda s: T.vector(3, s)  # noqa: E731
_decomposed = lambda s: T.TupleType((_vec3(s), T.quaternion(s), _vec3(s)))  # noqa: E731

register(
    # the axis indices are ints: literals keep their own type
    _entry("quat_from_euler", _euler("v3", T.quaternion), unify_literals=False),
    _entry("quat_to_euler", _euler("q", _vec3), unify_literals=False),
    _entry("quat_to_rpy", _signature("q", result=_vec3)),
    _entry("quat_twist", _signature("v3", "q", result=T.quaternion)),
    _entry("quat_twist_angle", _signature("v3", "q", result=lambda s: s)),
    _entry("quat_twist_angle_signed", _signature("v3", "q", result=lambda s: s)),
    _entry("velocity_at_point", _signature("v6", "v3", result=_vec3)),
    _entry("transform_from_matrix", _signature("m44", result=T.transformation)),
    _entry("transform_compose", _signature("v3", "q", "v3", result=lambda s: T.matrix((4, 4), s))),
    _entry("transform_decompose", _signature("m44", result=_decomposed)),
    # in place, as Warp: wp.transform_set_translation(xform, p) is xform.p = p
    Builtin("transform_set_translation", _signature("t", "v3", result=T.transformation),
            "tw::transform_with_translation", adjoint="tw::adj_transform_with_translation", in_place=True),
    Builtin("transform_set_rotation", _signature("t", "q", result=T.transformation),
            "tw::transform_with_rotation", adjoint="tw::adj_transform_with_rotation", in_place=True),
)
