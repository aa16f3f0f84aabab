"""``wp.Texture1D`` / ``wp.Texture2D`` / ``wp.Texture3D``: regularly gridded data sampled in kernels
with ``wp.texture_sample`` (filtering, addressing, mip levels), as in Warp.

Warp puts CUDA textures in CUDA arrays read by the texture unit, and CPU textures in host memory
read by a software sampler. Here every texture is a plain buffer on its device (all mip levels, one
after the other) and one software sampler serves the CPU and CUDA (``native/geometry/texture.h``),
so the two backends compute the same values (in double precision). Consequently there is no CUDA
array or texture object to hand to other CUDA code: ``cuda_array``, ``cuda_texture`` and
``cuda_surface`` raise.

Each texture class derives from its kernel descriptor (``tilewarp/builtins/texture.py``), a native
struct, so a texture object *is* the value a kernel receives: it is accepted as a kernel argument,
a ``@wp.struct`` field and an array element, and ``tex.width`` etc. read the descriptor.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from ..builtins.texture import TextureDesc1D, TextureDesc2D, TextureDesc3D
from ..language import types as T
from ..language.structs import StructInstance
from ..runtime.array import array, copy, zeros
from ..runtime.device import get_device


class TextureFilterMode(enum.IntEnum):
    """How a sample combines texels (and mip levels)."""

    CLOSEST = 0  # the texel containing the point
    LINEAR = 1  # linear / bilinear / trilinear interpolation


class TextureAddressMode(enum.IntEnum):
    """What coordinates outside the texture read."""

    WRAP = 0  # repeat the texture
    CLAMP = 1  # repeat the edge texels
    MIRROR = 2  # repeat the texture, every second copy reversed
    BORDER = 3  # zeros


#: the texel scalar types; a texture's format code is the position here (native/geometry/texture.h)
FORMATS = (T.float32, T.float16, T.uint8, T.int8, T.uint16, T.int16, T.uint32, T.int32)
_NUMPY = {t: np.dtype(t._np_) for t in FORMATS}
_MAX_MIP_LEVELS = 16


def _scalar_dtype(dtype):
    if dtype is float:
        return T.float32
    if dtype is int:
        return T.int32
    if dtype in FORMATS:
        return dtype
    raise ValueError(f"Unsupported texture dtype: {getattr(dtype, '__name__', dtype)}. "
                     "Supported: uint8, uint16, uint32, int8, int16, int32, float16, float32")


def _data_shape(data: array, ndim: int) -> tuple:
    """((width, height, depth), channels, scalar dtype) of texture data shaped (depth, height, width
    [, channels]) for 3D (2D and 1D drop the leading axes), or with a vector dtype of the channels."""
    dtype = data.dtype
    scalar = _scalar_dtype(T.scalar_of(dtype) if T.is_vector(dtype) else dtype)
    shape = tuple(data.shape)
    if T.is_vector(dtype):
        channels = dtype._length_
        if len(shape) != ndim:
            raise ValueError(f"{ndim}D texture data with vector dtype must be a {ndim}D wp.array")
    elif len(shape) == ndim:
        channels = 1
    elif len(shape) == ndim + 1:
        channels, shape = shape[-1], shape[:-1]
    else:
        raise ValueError(f"{ndim}D texture data must be a {ndim}D or {ndim + 1}D array")
    size = tuple(reversed(shape)) + (1,) * (3 - ndim)
    return size, int(channels), scalar


def _address_mode(mode, per_axis, axis: int):
    if per_axis is not None:
        mode = per_axis
    elif isinstance(mode, tuple):
        mode = mode[axis] if axis < len(mode) else TextureAddressMode.CLAMP
    elif mode is None:
        mode = TextureAddressMode.CLAMP
    try:
        return TextureAddressMode(mode)
    except (TypeError, ValueError):
        raise ValueError(f"Invalid texture address mode for axis {axis}: {mode}") from None


def _filter_mode(mode, what="filter mode"):
    if mode is None:
        return None
    try:
        return TextureFilterMode(mode)
    except (TypeError, ValueError):
        raise ValueError(f"Invalid texture {what}: {mode}") from None


def mip_shapes(size: tuple, ndim: int, levels: int) -> list:
    """(width, height, depth) of each mip level (each half the last, at least 1); ``levels`` 0: down to
    one texel."""
    if levels < 0:
        raise ValueError("num_mip_levels must be >= 0")
    full = max(size[:ndim]).bit_length()  # floor(log2(largest)) + 1
    if levels == 0:
        levels = full
    elif levels > full:
        raise ValueError(f"num_mip_levels ({levels}) exceeds the maximum for base dimensions {size[:ndim]} ({full})")
    if levels > _MAX_MIP_LEVELS:
        raise ValueError(f"num_mip_levels ({levels}) exceeds the maximum supported mip levels ({_MAX_MIP_LEVELS})")
    out = [tuple(size)]
    for _ in range(levels - 1):
        out.append(tuple(max(1, s // 2) if a < ndim else 1 for a, s in enumerate(out[-1])))
    return out


class Texture:
    """What the three texture classes share (Warp's ``wp.Texture``; not instantiated itself).

    ``data``: a NumPy or Warp array shaped (width[, channels]) in 1D, (height, width[, channels]) in 2D,
    (depth, height, width[, channels]) in 3D, or with a vec2 / vec4 dtype for the channels; texels of
    uint8 / uint16 read as [0, 1], int8 / int16 as [-1, 1], float16 / float32 as they are, int32 / uint32
    as numbers (CLOSEST filtering only). Without data, give the size, ``num_channels`` and ``dtype``."""

    _ndim = 0

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        object.__setattr__(self, "_texels", None)  # so a bare __new__ then __del__ works, as in Warp
        return self

    def __setattr__(self, name, value):
        if name in self._tw_fields_:
            StructInstance.__setattr__(self, name, value)
        else:
            object.__setattr__(self, name, value)

    def __init__(self, data=None, width: int = 0, height: int = 0, depth: int = 0, num_channels: int = 0, dtype=None,
                 filter_mode=None, address_mode=TextureAddressMode.CLAMP, address_mode_u=None, address_mode_v=None,
                 address_mode_w=None, normalized_coords: bool = True, num_mip_levels: int = 1,
                 mip_filter_mode=None, device=None, surface_access: bool = False, cuda_array: int = 0):
        StructInstance.__init__(self)
        ndim = self._ndim
        device = get_device(device)
        if cuda_array:
            raise (ValueError("Texture cuda_array was given, but the device is not a CUDA device") if device.is_cpu
                   else RuntimeError("tilewarp textures are plain device buffers: wrapping a CUDA array is not "
                                     "supported"))
        filter_mode, mip_filter_mode = _filter_mode(filter_mode), _filter_mode(mip_filter_mode, "mip filter mode")
        modes = [_address_mode(address_mode, m, a) if a < ndim else TextureAddressMode.CLAMP
                 for a, m in enumerate((address_mode_u, address_mode_v, address_mode_w))]
        size = [int(width), int(height) if ndim > 1 else 1, int(depth) if ndim > 2 else 1]
        if data is not None:
            data = self._as_array(data)
            data_size, data_channels, data_dtype = _data_shape(data, ndim)
            for a, what in enumerate(("width", "height", "depth")[:ndim]):
                if size[a] == 0:
                    size[a] = data_size[a]
                elif size[a] != data_size[a]:
                    raise ValueError(f"Specified texture {what} does not match data {what}")
            if num_channels == 0:
                num_channels = data_channels
            elif num_channels != data_channels:
                raise ValueError(f"Specified texture channels do not match data channels (expected {num_channels}, "
                                 f"got {data_channels})")
            if dtype is not None and _scalar_dtype(dtype) is not data_dtype:
                raise ValueError("Specified texture dtype does not match data dtype")
            dtype = data_dtype
        for a, what in enumerate(("width", "height", "depth")[:ndim]):
            if size[a] <= 0:
                raise ValueError(f"Texture {what} must be a positive integer")
        if num_channels not in (1, 2, 4):
            raise ValueError("Texture num_channels must be 1, 2, or 4")
        dtype = _scalar_dtype(T.float32 if dtype is None else dtype)
        shapes = mip_shapes(tuple(size), ndim, operator.index(num_mip_levels))
        mipmapped = len(shapes) > 1
        integer = dtype in (T.int32, T.uint32)
        default = TextureFilterMode.CLOSEST if integer else TextureFilterMode.LINEAR
        filter_mode = default if filter_mode is None else filter_mode
        mip_filter_mode = default if mip_filter_mode is None else mip_filter_mode
        if integer and filter_mode != TextureFilterMode.CLOSEST:
            raise ValueError("32-bit integer textures require filter_mode=TextureFilterMode.CLOSEST")
        if integer and mipmapped and mip_filter_mode != TextureFilterMode.CLOSEST:
            raise ValueError("32-bit integer mipmapped textures require mip_filter_mode=TextureFilterMode.CLOSEST")
        if mipmapped and data is None:
            raise ValueError("Mipmapped textures require data to be provided at construction")
        if mipmapped and surface_access:
            raise ValueError("surface_access is not supported for mipmapped textures")
        self.device = device
        self._mip_shapes = shapes
        self._surface_access = bool(surface_access and device.is_cuda)
        texels = sum(int(np.prod(s)) for s in shapes) * num_channels
        self._texels = zeros(texels, dtype=dtype, device=device)  # Warp's texture without data reads zeros
        fields = dict(data=self._texels.ptr, width=size[0], height=size[1], depth=size[2], num_channels=num_channels,
                      format=FORMATS.index(dtype), filter_mode=filter_mode, mip_filter_mode=mip_filter_mode,
                      num_mip_levels=len(shapes), use_normalized_coords=int(bool(normalized_coords)),
                      address_mode_u=modes[0], address_mode_v=modes[1], address_mode_w=modes[2])
        for name, value in fields.items():
            setattr(self, name, value)
        if data is not None:
            if mipmapped:
                self._upload_levels(self._generate_mipmap_chain(data.numpy()))
            else:
                self._copy(self._level0(), self._checked_array(data, "source"))

    def __del__(self):
        object.__setattr__(self, "_texels", None)

    # ---- data ---------------------------------------------------------------------------------

    @staticmethod
    def _as_array(data) -> array:
        if isinstance(data, np.ndarray):
            return array(np.ascontiguousarray(data), device="cpu")
        if not isinstance(data, array):
            raise ValueError("Data must be a Warp array or NumPy array")
        return data

    def _get_shape(self) -> tuple:
        """The shape of an array holding this texture's (level 0) data."""
        shape = tuple(reversed((self.width, self.height, self.depth)[:self._ndim]))
        return shape if self.num_channels == 1 else (*shape, self.num_channels)

    def _level0(self) -> array:
        return self._texels[:int(np.prod(self._get_shape()))].reshape(self._get_shape())

    def _checked_array(self, a: array, what: str) -> array:
        """``a`` viewed as scalars of this texture's shape (it must match its size, channels, dtype)."""
        size, channels, dtype = _data_shape(a, self._ndim)
        if tuple(size) != (self.width, self.height, self.depth):
            raise ValueError(f"Incompatible array shape for copy: texture shape={self._get_shape()}, {what} "
                             f"shape={a.shape}")
        if dtype is not self.dtype or channels != self.num_channels:
            raise ValueError(f"Incompatible array data type for copy: texture dtype={T.type_name(self.dtype)}, "
                             f"{what} dtype={T.type_name(dtype)}, texture channels={self.num_channels}, "
                             f"{what} channels={channels}")
        if not a.is_contiguous:
            raise ValueError(f"{what.capitalize()} array must be contiguous")
        scalars = a.view(dtype) if T.is_vector(a.dtype) else a
        return scalars.reshape(self._get_shape())

    @staticmethod
    def _copy(dst: array, src: array):
        copy(dst, src)

    def _other(self, other: Texture, what: str) -> array:
        me = "destination" if what == "source" else "source"
        if other.width != self.width or other.height != self.height or other.depth != self.depth:
            raise ValueError(f"Incompatible texture shapes for copy: {me} shape={self._get_shape()}, {what} "
                             f"shape={other._get_shape()}")
        if other.dtype is not self.dtype or other.num_channels != self.num_channels:
            raise ValueError(f"Incompatible texture data types for copy: {me} dtype={T.type_name(self.dtype)}, "
                             f"{what} dtype={T.type_name(other.dtype)}, {me} channels={self.num_channels}, "
                             f"{what} channels={other.num_channels}")
        if other.is_mipmapped:
            raise RuntimeError("copy_from / copy_to are not supported for mipmapped textures")
        return other._level0()

    def copy_from(self, src):
        """Replace the texels with ``src``: a Warp array (any device), a NumPy array or a texture of the
        same size, channels and dtype."""
        self._mutable()
        if isinstance(src, Texture):
            self._copy(self._level0(), self._other(src, "source"))
            return
        if isinstance(src, np.ndarray):
            src = array(np.ascontiguousarray(src), device="cpu")
        elif not isinstance(src, array):
            raise ValueError(f"Expected contiguous array or Texture, got {type(src)}")
        self._copy(self._level0(), self._checked_array(src, "source"))

    def copy_to(self, dst):
        """Copy the texels into ``dst``: a Warp array (any device), a NumPy array (written in place) or a
        texture of the same size, channels and dtype."""
        self._mutable()
        if isinstance(dst, Texture):
            self._copy(self._other(dst, "destination"), self._level0())
            return
        if isinstance(dst, np.ndarray):
            if not dst.flags.c_contiguous:
                raise ValueError("Destination array must be contiguous")
            self._checked_array(array(dst, device="cpu"), "destination")  # the checks only
            dst[...] = self._level0().numpy().reshape(dst.shape)
            return
        if not isinstance(dst, array):
            raise ValueError(f"Expected contiguous array or Texture, got {type(dst)}")
        self._copy(self._checked_array(dst, "destination"), self._level0())

    def _mutable(self):
        if self.is_mipmapped:
            raise RuntimeError("copy_from / copy_to are not supported for mipmapped textures; mipmap contents are "
                               "immutable after construction")

    def _generate_mipmap_chain(self, data: np.ndarray) -> list:
        """Every mip level of base-level ``data`` (NumPy, this texture's layout): each level averages
        pairs of the last along each halved axis (the last texel of an odd axis is dropped), in float64
        so that no finite average overflows; integer texels are rounded and clipped back."""
        data = np.ascontiguousarray(data, dtype=_NUMPY[self.dtype])
        levels = [data]
        for prev, size in zip(self._mip_shapes, self._mip_shapes[1:]):
            level = levels[-1].astype(np.float64)
            for a in range(self._ndim):  # array axis of texture axis a: x is the last spatial axis
                axis = self._ndim - 1 - a
                if size[a] != prev[a]:
                    even = np.take(level, np.arange(size[a]) * 2, axis=axis)
                    odd = np.take(level, np.minimum(np.arange(size[a]) * 2 + 1, prev[a] - 1), axis=axis)
                    level = (even + odd) * 0.5
            if np.issubdtype(data.dtype, np.integer):
                info = np.iinfo(data.dtype)
                level = np.clip(np.rint(level), info.min, info.max)
            levels.append(level.astype(data.dtype))
        return levels

    def _upload_levels(self, levels: list):
        flat = np.concatenate([np.ascontiguousarray(level).reshape(-1) for level in levels])
        self._copy(self._texels, array(flat, dtype=self.dtype, device="cpu"))

    # ---- properties (Warp's) ------------------------------------------------------------------

    @property
    def ndim(self) -> int:
        return self._ndim

    @property
    def dtype(self):
        """The texel scalar type."""
        return FORMATS[int(self.format)]

    @property
    def normalized_coords(self) -> bool:
        return bool(self.use_normalized_coords)

    @property
    def is_mipmapped(self) -> bool:
        return self.num_mip_levels > 1

    @property
    def id(self) -> int:
        """The address of the texels on the texture's device (the descriptor's ``data``)."""
        return self.data

    @property
    def cuda_array(self) -> int:
        if not self.device.is_cuda:
            raise RuntimeError("cuda_array is only supported for CUDA textures.")
        if self.is_mipmapped:
            raise RuntimeError("cuda_array is currently limited to non-mipmapped CUDA textures.")
        raise RuntimeError("tilewarp textures are plain device buffers, not CUDA arrays: cuda_array is unavailable")

    @property
    def cuda_texture(self) -> int:
        if not self.device.is_cuda:
            raise RuntimeError("cuda_texture is only supported for CUDA textures. Use id for a device-independent "
                               "handle.")
        raise RuntimeError("tilewarp textures are sampled in software: there is no CUDA texture object (use id)")

    @property
    def cuda_surface(self) -> int:
        if not self.device.is_cuda:
            raise RuntimeError("cuda_surface is only supported for CUDA textures.")
        if not self._surface_access:
            raise RuntimeError("Texture CUDA array was not created with surface load/store support. Create the "
                               "texture with surface_access=True.")
        raise RuntimeError("tilewarp textures are plain device buffers: there is no CUDA surface object")

    def __ctype__(self):
        """The descriptor a kernel receives (a ctypes structure)."""
        if self._texels is None:
            raise RuntimeError("Texture was never initialized.")
        return self._tw_ctype

    # ---- as a kernel value ----------------------------------------------------------------------

    def _tw_check_devices(self, device, what: str):
        mine = self.__dict__.get("device")  # a view (a struct field's copy) knows no device
        if mine is not None and mine != device:
            raise ValueError(f"{'field ' + repr(what.rstrip('.')) + ' is a' if what else 'a'} texture on '{mine}'")

    def _tw_adjoint(self):
        """Textures take no gradient: the backward pass gets a zeroed descriptor."""
        return type(self)._tw_view(type(self)._tw_ctype_())

    def __repr__(self):
        size = "x".join(str(s) for s in (self.width, self.height, self.depth)[:self._ndim])
        return f"{type(self).__name__}({size}, channels={self.num_channels}, dtype={T.type_name(self.dtype)})"


class Texture1D(Texture, TextureDesc1D):
    """A 1D texture (``wp.Texture1D``); kernels take it as ``tex: wp.Texture1D`` and sample it with
    ``wp.texture_sample(tex, u, dtype=float)``."""

    _ndim = 1

    def __init__(self, data=None, width: int = 0, num_channels: int = 0, dtype=None, filter_mode=None,
                 address_mode=TextureAddressMode.CLAMP, address_mode_u=None, normalized_coords: bool = True,
                 num_mip_levels: int = 1, mip_filter_mode=None, device=None, surface_access: bool = False,
                 cuda_array: int = 0):
        super().__init__(data, width, 1, 1, num_channels, dtype, filter_mode, address_mode, address_mode_u, None,
                         None, normalized_coords, num_mip_levels, mip_filter_mode, device, surface_access, cuda_array)


class Texture2D(Texture, TextureDesc2D):
    """A 2D texture (``wp.Texture2D``); ``wp.texture_sample(tex, wp.vec2f(u, v), dtype=...)``."""

    _ndim = 2

    def __init__(self, data=None, width: int = 0, height: int = 0, num_channels: int = 0, dtype=None,
                 filter_mode=None, address_mode=TextureAddressMode.CLAMP, address_mode_u=None, address_mode_v=None,
                 normalized_coords: bool = True, num_mip_levels: int = 1, mip_filter_mode=None, device=None,
                 surface_access: bool = False, cuda_array: int = 0):
        super().__init__(data, width, height, 1, num_channels, dtype, filter_mode, address_mode, address_mode_u,
                         address_mode_v, None, normalized_coords, num_mip_levels, mip_filter_mode, device,
                         surface_access, cuda_array)


class Texture3D(Texture, TextureDesc3D):
    """A 3D texture (``wp.Texture3D``); ``wp.texture_sample(tex, wp.vec3f(u, v, w), dtype=...)``."""

    _ndim = 3
