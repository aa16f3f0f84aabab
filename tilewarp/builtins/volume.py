"""``wp.Volume`` in kernels (Warp's "Volumes" group): sampling (closest / trilinear, with the spatial
gradient), lookups and stores of typed grids, the index-grid forms that read a user array, voxel
counts and the index <-> world transforms.

A volume id (``uint64``) is the address of a NanoVDB grid buffer (``tilewarp/geometry/volume.py``);
the C++ reads it in place (``native/geometry/volume.h``). ``volume_sample``, ``volume_sample_grad``
and ``volume_lookup`` take the value type as an argument (``dtype=wp.vec3``), so their calls, and
those of the other samplers, are lowered here (``_tw_lower_call``, the frontend's protocol for
callables with their own lowering): the type becomes a C++ template argument and a constant
sampling mode is checked while compiling. ``volume_sample_grad*`` write their gradient into a local
variable, as Warp's do: the call returns (value, gradient) and rebinds the variable.

Gradients: trilinear sampling with respect to uvw (second derivatives through the sampled gradient
too), the index forms also to ``voxel_data`` and ``background``, the transforms (their transposed
maps). Lookups, voxel counts and integer samples have none (their inputs are integers or the
grid's constant values). A store drops the gradient of the stored value, so a backward pass through
one raises (``undefined_gradient``) rather than returning a silent zero.
"""
from __future__ import annotations

import ast

from ..errors import KernelTypeError, KernelValueError
from ..language import types as T
from .params import bind
from .registry import REGISTRY, Builtin, arity, fail, names, register

HEADER = "geometry/volume.h"
CLOSEST, LINEAR = 0, 1

#: the value types kernels may read and write (Warp's ``_volume_supported_value_types``)
VALUE_TYPES = (T.int32, T.int64, T.uint32, T.float32, T.float64, T.vec3, T.vec3d, T.vec4, T.vec4d)
_SUFFIX = {T.float16: "h", T.float32: "f", T.float64: "d", T.int8: "b", T.uint8: "ub", T.int16: "s",
           T.uint16: "us", T.int32: "i", T.uint32: "ui", T.int64: "l", T.uint64: "ul"}


def warp_name(t) -> str:
    """A type as Warp's messages spell it (``vec3f``, ``mat43d``)."""
    if T.is_vector(t):
        return f"vec{t._wp_shape_[0]}{_SUFFIX.get(T.scalar_of(t), '')}"
    if T.is_matrix(t):
        r, c = t._wp_shape_
        return f"mat{r}{c}{_SUFFIX.get(T.scalar_of(t), '')}"
    return T.type_name(t)


def _same_type(a, b) -> bool:
    """Structural equality: a vector type built again by ``wp.types.vector`` is the same type."""
    if a is b:
        return True
    return (T.is_vector(a) and T.is_vector(b) and a._wp_shape_ == b._wp_shape_ and T.scalar_of(a) is T.scalar_of(b))


def value_type(dtype):
    """The supported value type equal to ``dtype``, else None."""
    return next((v for v in VALUE_TYPES if _same_type(v, dtype)), None)


def grad_type(dtype):
    """Of a value type: vec3 of its scalar (scalars), N x 3 matrix (N-vectors): one row per component."""
    if T.is_vector(dtype):
        return T.matrix((dtype._wp_shape_[0], 3), T.scalar_of(dtype))
    return T.vector(3, dtype)


def _checked_dtype(dtype):
    t = value_type(dtype)
    if t is None:
        shown = warp_name(dtype) if isinstance(dtype, type) else repr(dtype)
        fail(f"unsupported volume type `{shown}` (one of "
             f"{', '.join(warp_name(v) for v in VALUE_TYPES)})")
    return t


def _id(t):
    if not T.is_int(t):
        fail(f"id must be a volume id (wp.uint64), got {T.type_name(t)}")


def _uvw(t, what="uvw"):
    if t is not T.vec3:
        fail(f"{what} must be a vec3 (float32) in index space, got {T.type_name(t)}")


def _ints(args):
    for name, t in zip(("i", "j", "k"), args):
        if not T.is_int(t):
            fail(f"{name} must be an integer voxel coordinate, got {T.type_name(t)}")


def _mode(t):
    if t is not T.int32:
        fail(f"sampling_mode must be wp.Volume.CLOSEST or wp.Volume.LINEAR (an int), got {T.type_name(t)}")


def _grad(dtype, t):
    expected = grad_type(dtype)
    if not (t is expected or (T.is_matrix(t) and T.is_matrix(expected) and t._wp_shape_ == expected._wp_shape_
                              and T.scalar_of(t) is T.scalar_of(expected))):
        fail(f"Incompatible gradient type, expected {warp_name(expected)}, got {warp_name(t)}")


# ---- type rules -------------------------------------------------------------------------------


@arity(3)
def _sample(args, template):
    _id(args[0]), _uvw(args[1]), _mode(args[2])
    return _checked_dtype(template[0])


@arity(4)
def _sample_grad(args, template):
    dtype = _sample(args[:3], template)
    _grad(dtype, args[3])
    return T.TupleType((dtype, grad_type(dtype)))


@arity(4)
def _lookup(args, template):
    _id(args[0]), _ints(args[1:])
    return _checked_dtype(template[0])


def _fixed(dtype, rule):
    """A typed form (``volume_sample_f``): the generic rule with the value type fixed."""
    return lambda args, template: rule(args, (dtype,))


@arity(5)
def _store(args, template):
    _id(args[0]), _ints(args[1:4])
    if value_type(args[4]) is None:
        fail(f"value must be one of {', '.join(warp_name(v) for v in VALUE_TYPES)}, got {T.type_name(args[4])}")


def _store_of(dtype):
    @arity(5)
    def rule(args, template):
        if args[4] is not dtype:
            fail(f"value must be a {warp_name(dtype)}, got {T.type_name(args[4])}")
        _store(args, template)

    return rule


def _index_data(args):
    _id(args[0]), _uvw(args[1]), _mode(args[2])
    data, background = args[3], args[4]
    if not (T.is_array(data) and type(data) is T.ArrayType and data.ndim == 1):
        fail(f"voxel_data must be a 1-d wp.array, got {T.type_name(data)}")
    dtype = _checked_dtype(data.dtype)
    if not _same_type(background, data.dtype):
        fail(f"the `voxel_data` array and the `background` value must have the same dtype, got "
             f"({names(args[3:5])})")
    return dtype


@arity(5)
def _sample_index(args, template):
    _index_data(args)
    return args[3].dtype


@arity(6)
def _sample_grad_index(args, template):
    dtype = _index_data(args)
    _grad(dtype, args[5])
    return T.TupleType((args[3].dtype, grad_type(dtype)))


@arity(4)
def _lookup_index(args, template):
    _id(args[0]), _ints(args[1:])
    return T.int32


@arity(1)
def _voxel_count(args, template):
    _id(args[0])
    return T.int32


@arity(2)
def _transform(args, template):
    _id(args[0])
    if args[1] not in (T.vec3, T.vec3d):
        fail(f"expects (id: uint64, point: vec3 or vec3d), got ({names(args)})")
    return args[1]


# ---- C++ ------------------------------------------------------------------------------------------


def _typed(fn, dtype=None):
    """C++ call of ``tw::fn<T>`` with the value type from the call's template (or a fixed one)."""
    return lambda a, t: f"tw::{fn}<{(dtype or t[0])._cpp_}>({', '.join(a)})"


def _typed_adjoint(fn, dtype=None):
    return lambda a, g, r, t: f"tw::adj_{fn}<{(dtype or t[0])._cpp_}>({', '.join([*a, *g, r])})"


def _sampler(name, fn, rule, dtype=None, differentiable=True, updates=()):
    return Builtin(name, rule, f"tw::{fn}", emit=_typed(fn, dtype),
                   adjoint_emit=_typed_adjoint(fn, dtype) if differentiable else None,
                   differentiable=differentiable, unify_literals=False, updates=updates, header=HEADER)


def _plain(name, rule, differentiable, **kw):
    return Builtin(name, rule, f"tw::{name}", adjoint=f"tw::adj_{name}" if differentiable else None,
                   differentiable=differentiable, unify_literals=False, header=HEADER, **kw)


def _lookup_entry(name, dtype=None):
    return Builtin(name, _fixed(dtype, _lookup) if dtype else _lookup, "tw::volume_lookup",
                   emit=_typed("volume_lookup", dtype), differentiable=False, unify_literals=False, header=HEADER)


def _store_entry(name, rule):
    # a store drops the stored value's gradient (the volume has no gradient buffer): no silent zero
    return Builtin(name, rule, "tw::volume_store", differentiable=False, undefined_gradient=True, side_effect=True,
                   unify_literals=False, header=HEADER)


register(
    _sampler("volume_sample", "volume_sample", _sample),
    _sampler("volume_sample_grad", "volume_sample_grad", _sample_grad, updates=(3,)),
    _lookup_entry("volume_lookup"),
    _store_entry("volume_store", _store),
    _sampler("volume_sample_f", "volume_sample", _fixed(T.float32, _sample), T.float32),
    _sampler("volume_sample_v", "volume_sample", _fixed(T.vec3, _sample), T.vec3),
    # integer volumes: nearest voxel only; the call has no sampling_mode (no gradient either)
    Builtin("volume_sample_i", arity(2)(lambda args, t: _sample([*args, T.int32], (T.int32,))), "tw::volume_sample",
            emit=lambda a, t: f"tw::volume_sample<int32_t>({a[0]}, {a[1]}, {CLOSEST})", differentiable=False,
            unify_literals=False, header=HEADER),
    _sampler("volume_sample_grad_f", "volume_sample_grad", _fixed(T.float32, _sample_grad), T.float32, updates=(3,)),
    _lookup_entry("volume_lookup_f", T.float32),
    _lookup_entry("volume_lookup_v", T.vec3),
    _lookup_entry("volume_lookup_i", T.int32),
    _store_entry("volume_store_f", _store_of(T.float32)),
    _store_entry("volume_store_v", _store_of(T.vec3)),
    _store_entry("volume_store_i", _store_of(T.int32)),
    _plain("volume_sample_index", _sample_index, True),
    _plain("volume_sample_grad_index", _sample_grad_index, True, updates=(5,)),
    _plain("volume_lookup_index", _lookup_index, False),
    _plain("volume_voxel_count", _voxel_count, False),
    *[_plain(f"volume_{n}", _transform, True) for n in ("index_to_world", "world_to_index", "index_to_world_dir",
                                                        "world_to_index_dir")],
)


# ---- lowering of the sampling calls ------------------------------------------------------------------


def _positional(lw, name, node) -> list:
    """The call's argument nodes in parameter order (keywords placed by Warp's parameter names)."""
    if any(kw.arg is None for kw in node.keywords):
        raise KernelTypeError(f"{name}() does not take **kwargs", lw.src.loc(node))
    by_name = {kw.arg: kw.value for kw in node.keywords}
    try:
        extra = bind(name, len(node.args), list(by_name))
    except TypeError as e:
        raise KernelTypeError(str(e), lw.src.loc(node)) from None
    return [*node.args, *(by_name[k] if isinstance(k, str) else ast.Constant(k[0]) for k in extra)]


def _type_argument(lw, name, node, arg):
    t = lw.visit(arg)
    t = T.python_scalar_aliases.get(t, t) if isinstance(t, type) else t
    if not (isinstance(t, type) and (T.is_scalar(t) or T.is_composite(t))):
        raise KernelTypeError(f"{name}(): dtype must be a value type (wp.float32, wp.vec3, ...), got "
                              f"{ast.unparse(arg)}", lw.src.loc(arg))
    return t


def _literal_mode(lw, name, mode, dtype, node):
    """A constant sampling_mode is checked now (a run-time one reads zero when out of range)."""
    if not mode.is_const:
        return
    if mode.const not in (CLOSEST, LINEAR):
        raise KernelValueError(f"{name}(): sampling_mode must be wp.Volume.CLOSEST (0) or wp.Volume.LINEAR (1), got "
                               f"{mode.const}", lw.src.loc(node))
    if mode.const == LINEAR and dtype is not None and T.is_int(T.scalar_of(dtype)):
        raise KernelTypeError(f"{name}(): LINEAR sampling interpolates, which integer volumes cannot store: use "
                              "wp.Volume.CLOSEST", lw.src.loc(node))


def _grad_target(lw, name, target):
    """The local variable a sampled gradient is written into (Warp writes through the argument)."""
    symbol = lw.symbols.get(target.id) if isinstance(target, ast.Name) else None
    if getattr(symbol, "type", None) is None or isinstance(symbol, type):
        raise KernelTypeError(f"{name}() writes the gradient into its argument '{ast.unparse(target)}': pass a local "
                              "variable assigned before the call", lw.src.loc(target))
    return target


def _lowering(name, type_at=None, grad_at=None, mode_at=2):
    """The call's own lowering: keywords bound by Warp's parameter names; the value type argument
    (at ``type_at``) becomes the C++ template argument; a constant sampling mode (at ``mode_at``) is
    checked; the local variable at ``grad_at`` (counted without the type) is rebound to the sampled
    gradient, the call's value being its first result."""

    def lower(lw, node):
        args = _positional(lw, name, node)
        dtype = None
        if type_at is not None:
            if len(args) <= type_at:
                raise KernelTypeError(f"{name}() needs its dtype argument (the volume's value type)",
                                      lw.src.loc(node))
            dtype = _type_argument(lw, name, node, args[type_at])
            args = args[:type_at] + args[type_at + 1:]
        target = _grad_target(lw, name, args[grad_at]) if grad_at is not None and grad_at < len(args) else None
        values = [lw.value(a) for a in args]
        if mode_at is not None and len(values) > mode_at:
            data = values[3].type if len(values) > 3 else None  # the index forms: voxel_data's type
            _literal_mode(lw, name, values[mode_at], dtype or (data.dtype if T.is_array(data) else None), node)
        result = lw.call(name, values, node, () if dtype is None else (dtype,))
        if target is None:
            return result
        lw.bind(target.id, lw.tuple_get(result, 1, node), node)
        return lw.tuple_get(result, 0, node)

    return lower


_LOWERINGS = {
    "volume_sample": _lowering("volume_sample", type_at=3),
    "volume_sample_grad": _lowering("volume_sample_grad", type_at=4, grad_at=3),
    "volume_lookup": _lowering("volume_lookup", type_at=4, mode_at=None),
    "volume_sample_f": _lowering("volume_sample_f"),
    "volume_sample_v": _lowering("volume_sample_v"),
    "volume_sample_grad_f": _lowering("volume_sample_grad_f", grad_at=3),
    "volume_sample_index": _lowering("volume_sample_index"),
    "volume_sample_grad_index": _lowering("volume_sample_grad_index", grad_at=5),
}
for _name, _lower in _LOWERINGS.items():
    # the table's entries are frozen; `_tw_lower_call` is the frontend's protocol for a callable that
    # lowers its own calls (its absence from Builtin is why it is set this way)
    object.__setattr__(REGISTRY[_name], "_tw_lower_call", _lower)
