"""Kernel-side construction and attributes of vectors, matrices, quaternions and transforms.

* Warp's generic constructors ``wp.vector(*args, length=, dtype=)``, ``wp.matrix(*args, shape=,
  dtype=)``, ``wp.quaternion(*args, dtype=)``, ``wp.transformation(*args, dtype=)``.
* Keyword forms of the typed constructors: ``wp.quat(x=, y=, z=, w=)``, ``wp.quat(ijk=, real=)``,
  ``wp.transform(p=, q=)``, ``wp.spatial_vector(w=, v=)``.
* Builtins with compile-time arguments: ``wp.identity(n, dtype)``, ``wp.quat_identity(dtype)``,
  ``wp.transform_identity(dtype)`` (other builtins' keywords: ``builtins/params.py``).
* Attributes: ``q.x`` .. ``q.w`` on quaternions, ``t.p`` / ``t.q`` on transforms (read and assign).
"""
from __future__ import annotations

import ast

from ..language import types as T
from ..builtins import Builtin
from ..builtins.spatial import TRANSFORM_PARTS
from ..builtins.vector import component_builtin
from ..errors import KernelSyntaxError, KernelTypeError

#: keyword names of each constructor form, by kind of type
_KEYWORD_FORMS = {
    "quat": (("x", "y", "z", "w"), ("ijk", "real")),
    "transform": (("p", "q"),),
    "spatial": (("w", "v"), ("wx", "wy", "wz", "vx", "vy", "vz")),
}


def composite_call(lw, func, node):
    """Lower ``node`` when ``func`` is one of the calls above, else return None."""
    generic = {T.vector: _generic_vector, T.matrix: _generic_matrix, T.quaternion: _generic_float,
               T.transformation: _generic_float}
    for f, handler in generic.items():
        if func is f:
            return handler(lw, func, node)
    if T.is_composite(func) and node.keywords:
        values = [lw.value(a) for a in _keyword_args(lw, node, _forms(func), T.type_name(func))]
        return construct(lw, func, values, node)
    if isinstance(func, Builtin):
        if func.name == "identity":
            n, dtype = _static_args(lw, node, ("n", "dtype"), (None, T.float32), "identity")
            return lw.call("identity", [], node, (n, _scalar_type(lw, dtype, node)))
        if func.name in ("quat_identity", "transform_identity"):
            (dtype,) = _static_args(lw, node, ("dtype",), (T.float32,), func.name)
            return lw.call(func.name, [], node, (_scalar_type(lw, dtype, node),))
    return None


def construct(lw, t, values, node):
    """``t(*values)``: literal values are literals of ``t``'s scalar type (``wp.quatd(v, 1.0)``)."""
    s = T.scalar_of(t)
    args = [lw.cast_const(v.const, s) if v.is_const and T.is_scalar(v.type) else v for v in values]
    return lw.call("construct", args, node, (t,))


def _forms(t):
    if T.is_quaternion(t):
        return _KEYWORD_FORMS["quat"]
    if T.is_transformation(t):
        return _KEYWORD_FORMS["transform"]
    if T.is_vector(t) and t._length_ == 6:
        return _KEYWORD_FORMS["spatial"]
    return ()


def _keyword_args(lw, node, forms, what) -> list:
    """The argument nodes in parameter order, for the first form whose names fit the keywords."""
    given = {kw.arg for kw in node.keywords}
    if None in given:
        raise KernelSyntaxError(f"{what}() does not take **kwargs", lw.src.loc(node))
    for names in forms:
        if given <= set(names[len(node.args):]):
            by_name = {kw.arg: kw.value for kw in node.keywords}
            args = list(node.args)
            for name in names[len(node.args):]:
                if name not in by_name:
                    break
                args.append(by_name.pop(name))
            if not by_name:  # every keyword used, none after a gap
                return args
    accepted = " or ".join(f"({', '.join(f)})" for f in forms) or "no keywords"
    raise KernelTypeError(f"{what}() got unexpected keyword arguments {sorted(given)}; it takes {accepted}",
                          lw.src.loc(node))


def _static(lw, expr, what):
    from .static import StaticLocal, static_locals

    try:
        value = lw.src.evaluate(expr, static_locals(lw))
        if isinstance(value, StaticLocal):
            raise NameError(f"'{ast.unparse(expr)}' is a kernel variable, known only when the kernel runs")
        return value
    except Exception as e:
        raise KernelTypeError(f"'{what}' must be a compile-time constant ({type(e).__name__}: {e})",
                              lw.src.loc(expr)) from None


def _static_args(lw, node, params, defaults, what) -> list:
    """Compile-time arguments given by position or keyword (``identity(3, float)``, ``identity(n=3)``)."""
    if len(node.args) > len(params):
        raise KernelTypeError(f"{what}() takes at most {len(params)} arguments, got {len(node.args)}",
                              lw.src.loc(node))
    values = dict(zip(params, node.args))
    for kw in node.keywords:
        if kw.arg not in params or kw.arg in values:
            raise KernelTypeError(f"{what}() got an unexpected or repeated argument '{kw.arg}'", lw.src.loc(node))
        values[kw.arg] = kw.value
    return [_static(lw, values[p], p) if p in values else d for p, d in zip(params, defaults)]


def _scalar_type(lw, dtype, node):
    try:
        return T.scalar_type(dtype)
    except TypeError as e:
        raise KernelTypeError(f"dtype: {e}", lw.src.loc(node)) from None


def _split_static(lw, node, names, what):
    """The call's keywords, all compile-time constants named in ``names`` (others are errors)."""
    static = {}
    for kw in node.keywords:
        if kw.arg not in names:
            raise KernelTypeError(f"{what}() got an unexpected keyword argument '{kw.arg}'", lw.src.loc(node))
        static[kw.arg] = _static(lw, kw.value, kw.arg)
    return static


def _infer_dtype(lw, values, static, node, noun="vector"):
    """``dtype=`` if given, else the values' one scalar type: literals count as float32, int32 or bool,
    and values of different types are an error (as in Warp: ``wp.vector(1.0, 2)``)."""
    if static.get("dtype") is not None:
        return _scalar_type(lw, static["dtype"], node)
    kinds = {T.scalar_of(v.type) if T.is_scalar(v.type) or T.is_composite(v.type) else v.type for v in values}
    if len(kinds) > 1:
        raise KernelTypeError(f"all values given when constructing a {noun} must have the same type",
                              lw.src.loc(node))
    return kinds.pop() if kinds else T.float32


def _generic_vector(lw, func, node):
    """``wp.vector(1.0, 2.0)``, ``wp.vector(x, length=4)`` (fill), ``wp.vector(length=3, dtype=float)``,
    ``wp.vector(v, dtype=wp.float16)`` (a converted copy of a vector, its length by default)."""
    static = _split_static(lw, node, ("length", "dtype"), "vector")
    values = [lw.value(a) for a in node.args]
    length = static.get("length")
    if length is None and len(values) == 1 and T.is_vector(values[0].type):
        length = values[0].type._length_
    length = length or len(values)
    if not values and not length:
        raise KernelTypeError("the `length` argument must be specified when zero-initializing a vector",
                              lw.src.loc(node))
    if not isinstance(length, int) or length < 1:
        raise KernelTypeError("wp.vector() needs components or a constant length=", lw.src.loc(node))
    return construct(lw, T.vector(length, _infer_dtype(lw, values, static, node)), values, node)


def _generic_matrix(lw, func, node):
    """``wp.matrix(*values, shape=(r, c), dtype=)``: zero, fill, every component, or a converted
    copy of a matrix (its shape by default)."""
    static = _split_static(lw, node, ("shape", "dtype"), "matrix")
    values = [lw.value(a) for a in node.args]
    shape = static.get("shape")
    if shape is None and len(values) == 1 and T.is_matrix(values[0].type):
        shape = tuple(values[0].type._wp_shape_)
    if shape is None and not values:
        raise KernelTypeError("the `shape` argument must be specified when zero-initializing a matrix",
                              lw.src.loc(node))
    if not (isinstance(shape, tuple) and len(shape) == 2 and all(isinstance(n, int) and n > 0 for n in shape)):
        raise KernelTypeError("wp.matrix() needs a constant shape=(rows, cols)", lw.src.loc(node))
    return construct(lw, T.matrix(shape, _infer_dtype(lw, values, static, node, "matrix")), values, node)


def _generic_float(lw, func, node):
    """``wp.quaternion(...)`` / ``wp.transformation(...)`` with an optional ``dtype=``."""
    dtype_kw = [kw for kw in node.keywords if kw.arg == "dtype"]
    rest = ast.copy_location(ast.Call(func=node.func, args=node.args,
                                      keywords=[kw for kw in node.keywords if kw.arg != "dtype"]), node)
    values = [lw.value(a) for a in _keyword_args(lw, rest, _forms(func(T.float32)), func.__name__)]
    static = {"dtype": _static(lw, dtype_kw[0].value, "dtype")} if dtype_kw else {}
    try:
        t = func(_infer_dtype(lw, values, static, node))
    except TypeError as e:  # an integer dtype
        raise KernelTypeError(f"{func.__name__}(): {e}", lw.src.loc(node)) from None
    return construct(lw, t, values, node)


# ---- attributes -------------------------------------------------------------------------------


def component_attribute(t, attr):
    """The component index ``attr`` names on a vector or quaternion type (``.x`` .. ``.w``), else None."""
    if (T.is_vector(t) or T.is_quaternion(t)) and len(attr) == 1 and 0 <= "xyzw".find(attr) < t._length_:
        return "xyzw".index(attr)
    return None


def read_attribute(lw, base, node):
    """``v.x`` / ``q.w`` / ``t.p`` / ``t.q`` of a composite value, else None."""
    t = base.type
    k = component_attribute(t, node.attr)
    if k is not None:
        return lw.call("extract", [base, lw.const(k, T.int32)], node)
    if T.is_transformation(t) and node.attr in TRANSFORM_PARTS:
        return lw.call(TRANSFORM_PARTS[node.attr][0], [base], node)
    return None


def attribute_place(lw, node, parent, t):
    """The assignable place ``parent.attr`` on a vector, quaternion or transform, else None."""
    from .places import _Component, _Place

    class _Part(_Place):
        """``t.p`` / ``t.q``: writing rebuilds the transform around the new part."""

        def __init__(self, get_name, set_name):
            super().__init__(lw, node)
            self.get_name, self.set_name = get_name, set_name

        def read(self):
            return lw.call(self.get_name, [parent.get()], node)

        def set(self, value, stmt):
            from .places import Element

            t = parent.get().type
            n = 3 if node.attr == "p" else 4
            if isinstance(parent, Element) and getattr(value.type, "_wp_shape_", None) == (n,) \
                    and T.scalar_of(value.type) == T.scalar_of(t):
                # an array element's p or q, written component by component in place (its gradient
                # is those components', not the whole element's once per write)
                first = 0 if node.attr == "p" else 3
                extract = component_builtin("extract", value.type, 1)
                for k in range(value.type._wp_shape_[0]):
                    part = lw.call(extract, [value, lw.const(k, T.int32)], stmt)
                    lw.call("store_component", [parent.arr, *parent.indices, lw.const(first + k, T.int32), part],
                            stmt, (parent.arr.type.ndim, 1))
                return
            parent.set(lw.call(self.set_name, [parent.get(), value], stmt), stmt)

    k = component_attribute(t, node.attr)
    if k is not None:
        return _Component(lw, node, parent, [lw.const(k, T.int32)])
    if T.is_transformation(t) and node.attr in TRANSFORM_PARTS:
        return _Part(*TRANSFORM_PARTS[node.attr])
    return None
