"""``wp.zeros(shape, dtype)`` inside kernels: a zero-filled, fixed-size array in the thread's local
memory (Warp's fixed arrays). Its value is an ordinary ``array(dtype, ndim)``, so everything arrays
do works on it; the buffer is declared once per call site at the top of the function
(``Builtin.storage``) and zeroed at each call. C++ in ``native/runtime/local_array.h``.

``local_zeros()`` with ``template = (dtype, shape, site)``; ``site`` numbers the buffer.
"""
from __future__ import annotations

import math

from ..language import types as T
from .registry import Builtin, fail, register
from ..language import names

#: buffers beyond this many elements belong in a global array (local memory spills on GPUs)
MAX_ELEMENTS = 1 << 16


def _local_zeros(args, template):
    dtype, shape, _site = template
    if not (T.is_scalar(dtype) or T.is_composite(dtype) or T.is_struct(dtype)):
        fail(f"dtype must be a scalar, vector, matrix or struct type, got {T.type_name(dtype)}")
    if not 1 <= len(shape) <= 4 or any(n < 1 for n in shape) or math.prod(shape) > MAX_ELEMENTS:
        fail(f"shape must have 1 to 4 positive extents and at most {MAX_ELEMENTS} elements, got {shape}")
    return T.ArrayType(dtype, len(shape))


def _cpp(args, template):
    dtype, shape, site = template
    extents = ", ".join(map(str, shape))
    return f"tw::local_zeros<{dtype._cpp_}, {len(shape)}>({names.local_buffer(site)}, {extents})"


def _storage(template):
    dtype, shape, site = template
    return f"{dtype._cpp_} {names.local_buffer(site)}[{math.prod(shape)}]"


register(
    # no gradient: the backward pass cannot replay stores into it (emit/adjoint.py raises)
    Builtin("local_zeros", _local_zeros, "tw::local_zeros", differentiable=False, unify_literals=False,
            emit=_cpp, storage=_storage),
)
