"""Quaternion, rigid-transform and spatial-vector builtins (Warp 1.19 names and semantics).

C++ in ``native/core/quat.h``, ``transform.h`` and ``spatial.h``. Quaternions are ``(x, y, z, w)``;
transforms are ``p`` (vec3) then ``q`` (quat); spatial vectors are 6-vectors ``(w, v)``.
"""
from __future__ import annotations

import numpy as np

from ..language import types as T
from .registry import Builtin, BuiltinTypeError, fail, names, register


#: argument kinds of ``_signature``: name -> (type for scalar type s, how messages spell it)
_KINDS = {"s": (lambda s: s, "float"), "v3": (lambda s: T.vector(3, s), "vec3"),
          "v6": (lambda s: T.vector(6, s), "spatial_vector"), "q": (T.quaternion, "quat"),
          "t": (T.transformation, "transform"), "m33": (lambda s: T.matrix((3, 3), s), "mat33"),
          "m44": (lambda s: T.matrix((4, 4), s), "mat44")}


def _signature(*parts, result):
    """A rule for fixed argument kinds (``_KINDS``) over one float scalar type ``s``; ``result``
    maps ``s`` to the result type."""
    form = f"({', '.join(_KINDS[p][1] for p in parts)})"

    def rule(args, template):
        s = T.scalar_of(args[0]) if args else None
        if len(args) != len(parts) or not T.is_float(s) or tuple(args) != tuple(_KINDS[p][0](s) for p in parts):
            fail(f"expects {form} of one float type, got ({names(args)})")
        return result(s)

    rule.form = form
    return rule


def _first_matching(*rules):
    """Overloads: the first rule that accepts the arguments."""

    def rule(args, template):
        for r in rules:
            try:
                return r(args, template)
            except BuiltinTypeError:
                pass
        fail(f"expects {' or '.join(r.form for r in rules)} of one float type, got ({names(args)})")

    return rule


def _identity(make):
    def rule(args, template):
        if args:
            fail(f"takes only a dtype, got ({names(args)})")
        dtype = template[0] if template else T.float32
        if not T.is_float(dtype):
            fail(f"dtype must be a float type, got {T.type_name(dtype)}")
        return make(dtype)

    return rule


def _identity_cpp(name):
    return lambda a, t: f"tw::{name}<{(t[0] if t else T.float32)._cpp_}>()"


def _entry(name, rule, differentiable=True, outputs=0):
    return Builtin(name, rule, f"tw::{name}", adjoint=f"tw::adj_{name}" if differentiable else None,
                   differentiable=differentiable, host=_HOST.get(name), outputs=outputs)


# ---- host evaluation (scene setup code calls these outside kernels, as Warp allows) -------------


def _dtype_of(*xs):
    for x in xs:
        if T.is_composite(type(x)):
            return T.scalar_of(type(x))
    return T.float32


def _rotate(q, x, sign=1):
    v, w = q[:3], q[3]
    return x * (2 * w * w - 1) + sign * np.cross(v, x) * 2 * w + v * np.dot(v, x) * 2


def _parts(t):
    t = np.asarray(t, dtype=np.float64).reshape(7)
    return t[:3], t[3:]


def _host_axis_angle(axis, angle):
    a = np.asarray(axis, dtype=np.float64).reshape(3)
    return T.quaternion(_dtype_of(axis))(*(a * np.sin(angle * 0.5)), np.cos(angle * 0.5))


def _host_rpy(roll, pitch, yaw):
    cr, sr, cp, sp = np.cos(roll / 2), np.sin(roll / 2), np.cos(pitch / 2), np.sin(pitch / 2)
    cy, sy = np.cos(yaw / 2), np.sin(yaw / 2)
    return T.quaternion(_dtype_of(roll))(sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy,
                                          cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy)


def _host_rotate(sign):
    def f(q, x):
        r = _rotate(np.asarray(q, dtype=np.float64), np.asarray(x, dtype=np.float64), sign)
        return T.vector(3, _dtype_of(q, x))(*r)

    return f


def _host_xform(fn):
    def f(t, x):
        p, q = _parts(t)
        return T.vector(3, _dtype_of(t, x))(*fn(p, q, np.asarray(x, dtype=np.float64)))

    return f


def _host_inverse(t):
    p, q = _parts(t)
    qi = q * [-1, -1, -1, 1]
    return T.transformation(_dtype_of(t))(-_rotate(qi, p), qi)


_HOST = {
    "quat_identity": lambda dtype=T.float32: T.quaternion(dtype)(0, 0, 0, 1),
    "transform_identity": lambda dtype=T.float32: T.transformation(dtype)(),
    "quat_from_axis_angle": _host_axis_angle,
    "quat_rpy": _host_rpy,
    "quat_inverse": lambda q: type(q)(*(np.asarray(q) * [-1, -1, -1, 1])),
    "quat_rotate": _host_rotate(1),
    "quat_rotate_inv": _host_rotate(-1),
    "transform_point": _host_xform(lambda p, q, x: _rotate(q, x) + p),
    "transform_vector": _host_xform(lambda p, q, x: _rotate(q, x)),
    "transform_multiply": lambda a, b: a * b,
    "transform_inverse": _host_inverse,
    "transform_get_translation": lambda t: t.p,
    "transform_get_rotation": lambda t: t.q,
}


_vec3 = lambda s: T.vector(3, s)  # noqa: E731
_quat = T.quaternion
_xform = T.transformation

register(
    # quaternions
    Builtin("quat_identity", _identity(_quat), "tw::quat_identity", differentiable=False,
            unify_literals=False, emit=_identity_cpp("quat_identity"), host=_HOST["quat_identity"]),
    _entry("quat_from_axis_angle", _signature("v3", "s", result=_quat)),
    # also Warp's output-argument form: wp.quat_to_axis_angle(q, axis, angle)
    _entry("quat_to_axis_angle", _signature("q", result=lambda s: T.TupleType((_vec3(s), s))), outputs=2),
    _entry("quat_rotate", _signature("q", "v3", result=_vec3)),
    _entry("quat_rotate_inv", _signature("q", "v3", result=_vec3)),
    _entry("quat_inverse", _signature("q", result=_quat)),
    _entry("quat_to_matrix", _signature("q", result=lambda s: T.matrix((3, 3), s))),
    _entry("quat_from_matrix", _first_matching(_signature("m33", result=_quat), _signature("m44", result=_quat))),
    _entry("quat_slerp", _signature("q", "q", "s", result=_quat)),
    _entry("quat_rpy", _signature("s", "s", "s", result=_quat)),
    # transforms
    Builtin("transform_identity", _identity(_xform), "tw::transform_identity", differentiable=False,
            unify_literals=False, emit=_identity_cpp("transform_identity"), host=_HOST["transform_identity"]),
    _entry("transform_point", _first_matching(_signature("t", "v3", result=_vec3),
                                              _signature("m44", "v3", result=_vec3))),
    _entry("transform_vector", _first_matching(_signature("t", "v3", result=_vec3),
                                               _signature("m44", "v3", result=_vec3))),
    _entry("transform_multiply", _signature("t", "t", result=_xform)),
    _entry("transform_inverse", _signature("t", result=_xform)),
    _entry("transform_get_translation", _signature("t", result=_vec3)),
    _entry("transform_get_rotation", _signature("t", result=_quat)),
    _entry("transform_to_matrix", _signature("t", result=lambda s: T.matrix((4, 4), s))),
    _entry("transform_twist", _signature("t", "v6", result=lambda s: T.vector(6, s))),
    _entry("transform_wrench", _signature("t", "v6", result=lambda s: T.vector(6, s))),
    # t.p = x / t.q = x (frontend): the transform with one part replaced
    Builtin("_with_translation", _signature("t", "v3", result=_xform), "tw::transform_with_translation",
            adjoint="tw::adj_transform_with_translation"),
    Builtin("_with_rotation", _signature("t", "q", result=_xform), "tw::transform_with_rotation",
            adjoint="tw::adj_transform_with_rotation"),
    # spatial vectors (angular w on top, linear v at the bottom)
    _entry("spatial_dot", _signature("v6", "v6", result=lambda s: s)),
    _entry("spatial_cross", _signature("v6", "v6", result=lambda s: T.vector(6, s))),
    _entry("spatial_cross_dual", _signature("v6", "v6", result=lambda s: T.vector(6, s))),
    _entry("spatial_top", _signature("v6", result=_vec3)),
    _entry("spatial_bottom", _signature("v6", result=_vec3)),
    _entry("spatial_adjoint", _signature("m33", "m33", result=lambda s: T.matrix((6, 6), s))),
)

#: ``t.p`` / ``t.q`` on transforms: attribute -> (read builtin, write builtin)
TRANSFORM_PARTS = {"p": ("transform_get_translation", "_with_translation"),
                   "q": ("transform_get_rotation", "_with_rotation")}
