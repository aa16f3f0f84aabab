"""Rotations and frames beyond quat_*/transform_* basics (Warp 1.19's math.py functions): Euler
angles, roll-pitch-yaw, swing-twist, transforms <-> 4x4 matrices with scale, the in-place
``transform_set_*`` and ``velocity_at_point``. C++ in ``native/core/frames.h``.

Warp defines the Euler, twist and velocity functions for float32 only; tilewarp takes any float
type, so float64 code needs no casts.
"""
from __future__ import annotations

from .. import types as T
from .registry import Builtin, fail, names, register
from .spatial import _signature


def _euler(first, result):
    """``(first, i, j, k)`` with ``first`` a kind of ``_signature`` and three integer axis indices."""
    head = _signature(first, result=result)

    def rule(args, template):
        if len(args) != 4 or not all(T.is_int(a) for a in args[1:]):
            fail(f"expects ({head.form[1:-1]}, i: int, j: int, k: int), got ({names(args)})")
        return head(args[:1], template)

    return rule


def _entry(name, rule, **kw):
    return Builtin(name, rule, f"tw::{name}", adjoint=f"tw::adj_{name}", **kw)


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
