"""``wp.indexedarray``: a ``wp.array`` seen through per-dimension int32 index arrays (Warp's API).

Element ``[i, j]`` of ``indexedarray(data, [idx0, None])`` is ``data[idx0[i], j]``. Kernels get a
``tw::indexedarray_t<T, D>`` (the data array's descriptor, one index pointer per dimension, the
shape); the host side gathers / scatters through numpy. Without data it is an annotation.
"""
from __future__ import annotations

import numpy as np

from ..language import types as T
from .array import array
from .device import get_device
from ..errors import LaunchError

MAX_DIMS = 4  # Warp keeps one (possibly None) index array per possible dimension


def _check_index_array(indices, device):
    if not isinstance(indices, array):
        raise ValueError(f"Indices must be a Warp array, got {type(indices)}")
    if indices.ndim != 1:
        raise ValueError(f"Index array must be one-dimensional, got {indices.ndim}")
    if indices.dtype is not T.int32:
        raise ValueError(f"Index array must use int32, got dtype {T.type_name(indices.dtype)}")
    if indices.device != device:
        raise ValueError(f"Index array device ({indices.device}) does not match data array device ({device})")


class indexedarray:
    """Indexed access to a subset of the elements of a ``wp.array`` (Warp's ``wp.indexedarray``)."""

    is_contiguous = False

    def __init__(self, data: array | None = None, indices=None, dtype=None, ndim: int | None = None):
        self.data = data
        self.indices = [None] * MAX_DIMS
        if dtype is not None:
            dtype = T.value_type(dtype)
        if data is None:  # an annotation: wp.indexedarray(dtype=float, ndim=2)
            self.dtype, self.ndim, self.device = dtype, ndim or 1, None
            self.shape = (0,) * self.ndim
            self.size = 0
            return
        if not isinstance(data, array) or data.shape is None:
            raise ValueError("Indexed array data must be a Warp array")
        if dtype is not None and dtype != data.dtype:
            raise ValueError(f"Requested dtype ({T.type_name(dtype)}) does not match dtype of data array "
                             f"({T.type_name(data.dtype)})")
        if ndim is not None and ndim != data.ndim:
            raise ValueError(f"Requested dimensionality ({ndim}) does not match dimensionality of data array "
                             f"({data.ndim})")
        self.dtype, self.ndim, self.device = data.dtype, data.ndim, data.device
        shape = list(data.shape)
        if isinstance(indices, array):
            indices = [indices]
        elif indices is not None and not isinstance(indices, (list, tuple)):
            raise ValueError("Indices must be a single Warp array or a list of Warp arrays")
        if indices is not None and len(indices) > self.ndim:
            raise ValueError(f"Number of indices provided ({len(indices)}) exceeds number of dimensions "
                             f"({self.ndim})")
        for d, idx in enumerate(indices or ()):
            if idx is not None:
                _check_index_array(idx, data.device)
                self.indices[d] = idx
                shape[d] = len(idx)
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape))

    def __class_getitem__(cls, params):
        """``wp.indexedarray[float]``, ``wp.indexedarray[float, 2]``: an annotation, as in Warp 1.19."""
        from .array import subscript_params

        dtype, ndim = subscript_params("indexedarray", params)
        return cls(dtype=dtype, ndim=ndim)

    # ---- kernel side -------------------------------------------------------------------------

    def __tw_annotation__(self):
        return T.IndexedArrayType(T.value_type(self.dtype if self.dtype is not None else T.float32), self.ndim)

    def __ctype__(self):
        """The ``tw::indexedarray_t`` descriptor (rebuilt each time: the parts are mutable)."""
        d = T.indexed_descriptor(self.ndim)()
        d.arr = self.data.__ctype__()
        d.indices[:] = [idx.ptr if idx is not None else 0 for idx in self.indices[: self.ndim]]
        d.shape[:] = self.shape
        return d

    # ---- host side ---------------------------------------------------------------------------

    def _selector(self):
        """numpy advanced index picking this array's elements out of ``data``'s."""
        axes = [idx.numpy().astype(np.intp) if idx is not None else np.arange(n)
                for idx, n in zip(self.indices, self.data.shape)]
        return np.ix_(*axes)

    def numpy(self) -> np.ndarray:
        """A contiguous numpy copy of the indexed elements."""
        return np.ascontiguousarray(self.data.numpy()[self._selector()])

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a.astype(dtype) if dtype is not None else a

    def list(self):
        return self.contiguous().list()

    def contiguous(self) -> array:
        return array(self.numpy(), dtype=self.dtype, device=self.device)

    def to(self, device):
        device = get_device(device)
        return self if device == self.device else array(self.numpy(), dtype=self.dtype, device=device)

    def _scatter(self, values):
        if self.size == 0:
            return
        if self.data.device.is_cpu:  # numpy() of a CPU array shares its memory
            self.data.numpy()[self._selector()] = values
            return
        full = self.data.numpy()
        full[self._selector()] = values
        self.data.assign(full)

    def assign(self, src):
        """Write ``src`` (an array, numpy data or a list) into the indexed elements."""
        values = src.numpy() if hasattr(src, "numpy") else np.asarray(src)
        full = self.shape + getattr(self.dtype, "_wp_shape_", ())
        self._scatter(np.broadcast_to(T.to_storage(T.scalar_of(self.dtype), values), full))

    def fill_(self, value):
        v = value.numpy() if hasattr(value, "numpy") else value
        full = self.shape + getattr(self.dtype, "_wp_shape_", ())
        self._scatter(np.broadcast_to(T.to_storage(T.scalar_of(self.dtype), v), full))

    def zero_(self):
        self.fill_(0)

    def __len__(self):
        return self.shape[0]

    def __str__(self):
        if self.device is None:
            return f"indexedarray{T.type_name(self.dtype) if self.dtype is not None else ''}"
        return str(self.numpy())

    def __repr__(self):
        if self.device is None:
            return f"indexedarray(dtype={T.type_name(self.dtype)}, ndim={self.ndim})"
        return f"indexedarray({self.numpy()!r}, dtype={T.type_name(self.dtype)}, device='{self.device}')"


def _annotation(ndim):
    def make(*args, **kwargs):
        kwargs["ndim"] = ndim
        return indexedarray(*args, **kwargs)

    make.__name__ = f"indexedarray{ndim}d"
    make.__doc__ = f"Create or annotate a {ndim}-dimensional ``wp.indexedarray``."
    return make


indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d = (_annotation(n) for n in (1, 2, 3, 4))


def converter(t: T.IndexedArrayType, name: str):
    """The launch packer's (value, device) -> ``tw::indexedarray_t`` for parameter ``name``."""
    def conv_indexed(value, device):
        if value is None:
            return T.indexed_descriptor(t.ndim)()
        if not isinstance(value, indexedarray) or value.data is None or value.dtype != t.dtype \
                or value.ndim != t.ndim:
            got = (f"{value.ndim}-d indexedarray of {T.type_name(value.dtype)}" if isinstance(value, indexedarray)
                   else f"{value.ndim}-d array of {T.type_name(value.dtype)}" if isinstance(value, array)
                   else type(value).__name__)
            raise LaunchError(f"argument '{name}' expects {T.type_name(t)}, got {got}")
        if value.device != device:
            raise LaunchError(f"argument '{name}' is on device '{value.device}' but the launch is on '{device}'")
        return value.__ctype__()

    return conv_indexed
