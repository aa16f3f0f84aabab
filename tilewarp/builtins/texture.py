"""Textures in kernels: ``wp.texture_sample`` and the descriptor types that ``wp.Texture1D`` /
``wp.Texture2D`` / ``wp.Texture3D`` (tilewarp/geometry/texture.py) derive from.

A texture reaches a kernel by value, as a descriptor struct (the texel buffer's address, its size,
channels, texel format and sampling modes), so it may be a kernel argument, a ``@wp.struct`` field or
an array element, as in Warp; the kernel reads ``tex.width`` ... as struct fields. The descriptors
are ordinary ``@wp.struct`` types, emitted into each kernel's source (not native structs defined by
``native/geometry/texture.h``): a user struct holding a texture then compiles in kernels that never
sample it, and the sampler's templates read any descriptor's members.

``texture_sample(tex, coords..., dtype=R, lod=-1.0)`` takes the result type as a keyword (Warp's
``dtype``: ``float``, ``wp.vec2f`` or ``wp.vec4f``), which no other builtin does: the entry binds its
own call (``_tw_lower_call``, the protocol the frontend asks every callable for), turning ``dtype``
into the call's template and filling in ``lod``. Its adjoint reaches the coordinates and the LOD.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..errors import KernelTypeError
from ..language import types as T
from ..language.structs import struct
from .registry import Builtin, fail, names, register

HEADER = "geometry/texture.h"


def _descriptor(name: str):
    """A descriptor type (its members as native/geometry/texture.h reads them)."""

    class Descriptor:
        data: T.uint64
        width: T.int32
        height: T.int32
        depth: T.int32
        num_channels: T.int32
        format: T.int32
        filter_mode: T.int32
        mip_filter_mode: T.int32
        num_mip_levels: T.int32
        use_normalized_coords: T.int32
        address_mode_u: T.int32
        address_mode_v: T.int32
        address_mode_w: T.int32

    Descriptor.__qualname__ = Descriptor.__name__ = name
    return struct(Descriptor)


TextureDesc1D = _descriptor("TextureDesc1D")
TextureDesc2D = _descriptor("TextureDesc2D")
TextureDesc3D = _descriptor("TextureDesc3D")

_DIMS = {TextureDesc1D: 1, TextureDesc2D: 2, TextureDesc3D: 3}
_RESULTS = (T.float32, T.vec2f, T.vec4f)


def texture_dims(t) -> int:
    """1, 2 or 3 for a texture type (``wp.Texture2D`` or its descriptor), else 0."""
    if isinstance(t, type):
        for base, n in _DIMS.items():
            if issubclass(t, base):
                return n
    return 0


def _sample_rule(args, template):
    result, _ = template
    n = texture_dims(args[0]) if args else 0
    if not n:
        fail(f"the first argument must be a wp.Texture1D, wp.Texture2D or wp.Texture3D, got ({names(args)})")
    coords = args[1:-1]
    vector = T.vector(n, T.float32) if n > 1 else None
    if not (len(coords) == n and all(c is T.float32 for c in coords)) and tuple(coords) != (vector,):
        want = "u: float" if n == 1 else f"a vec{n}f or {n} floats"
        fail(f"a {n}D texture takes {want} as coordinates, got ({names(coords)})")
    if args[-1] is not T.float32:
        fail(f"lod must be a float, got {T.type_name(args[-1])}")
    if result not in _RESULTS:
        fail(f"unsupported texture type `{T.type_name(result)}`. Supported types: float, vec2f, vec4f")
    return result


def _emit(args, template):
    return f"tw::texture_sample<{template[0]._cpp_}, {template[1]}>({', '.join(args)})"


def _adjoint_emit(args, adj_args, adj_ret, template):
    return f"tw::adj_texture_sample<{template[0]._cpp_}, {template[1]}>({', '.join([*args, *adj_args, adj_ret])})"


@dataclass(frozen=True, eq=False)
class _Sample(Builtin):
    """``texture_sample``: binds ``dtype`` (a type, the template) and ``lod`` itself."""

    def _tw_lower_call(self, lw, node: ast.Call):
        loc = lw.src.loc(node)
        keywords = {}
        for kw in node.keywords:
            if kw.arg not in ("dtype", "lod"):
                raise KernelTypeError(f"texture_sample() got an unexpected keyword argument '{kw.arg}'", loc)
            keywords[kw.arg] = kw.value
        values = [lw.visit(a) for a in node.args]
        lod = None
        given = [k for k, v in enumerate(values) if isinstance(v, type)]  # dtype by position: (tex, uv, dtype, lod)
        if given and "dtype" not in keywords:
            result = values.pop(given[0])
            if given[0] < len(values):
                if "lod" in keywords or given[0] != len(values) - 1:
                    raise KernelTypeError("texture_sample() takes (tex, coordinates..., dtype, lod)", loc)
                lod = values.pop()
        elif "dtype" in keywords:
            result = lw.visit(keywords["dtype"])
        else:
            raise KernelTypeError("texture_sample() needs dtype=float, wp.vec2f or wp.vec4f (the sampled type)", loc)
        result = T.python_scalar_aliases.get(result, result) if isinstance(result, type) else result
        args = [lw.materialize(v, node) if isinstance(v, type) or not hasattr(v, "is_const") else v for v in values]
        n = texture_dims(args[0].type) if args else 0
        coords = 1 if len(args) > 1 and T.is_vector(args[1].type) else n
        if lod is not None:
            args.append(lod if hasattr(lod, "is_const") else lw.materialize(lod, node))
        elif "lod" in keywords:
            args.append(lw.value(keywords["lod"]))
        elif len(args) == 1 + coords:
            args.append(lw.const(-1.0, T.float32))
        args = [_as_float32(lw, a, node) if k else a for k, a in enumerate(args)]
        return lw.call(self.name, args, node, (result, n))  # (result type, texture dimensions)


def _as_float32(lw, v, node):
    """Literals and other float / int scalars become float32 (Warp's parameters are float)."""
    t = v.type
    if t is T.float32 or not T.is_scalar(t) or t._kind_ not in ("float", "int", "uint"):
        return v
    if v.is_const:
        return lw.const(float(v.const), T.float32)
    return lw.call("construct", [v], node, (T.float32,))


register(_Sample("texture_sample", _sample_rule, "tw::texture_sample", unify_literals=False, emit=_emit,
                 adjoint_emit=_adjoint_emit, header=HEADER))
