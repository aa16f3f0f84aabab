"""What ``wp.Volume``'s allocators and ``rebuild`` take apart: voxel sizes and transforms, background
values (which fix the grid type), point arrays (index or world space, masked), rebuild capacities.
The grid's headers come from the host (``vdb_build`` of an empty topology); its nodes are built by
kernels on the volume's device (``vdb_rebuild``), in a grid of the volume's capacities or of the
node counts its points make. ``load_from_numpy`` fills a grid with the kernels below.
"""
from __future__ import annotations

import math
import operator

import numpy as np

import tilewarp as wp

from ..language import types as T
from ..runtime.array import array
from ..runtime.cuda import CaptureError
from ..runtime.device import get_device
from . import nanovdb as nv
from . import vdb_rebuild
from .vdb_build import Capacity, Topology, build, make_map

#: value types a grid can be allocated with, and their NanoVDB codes
ALLOCATABLE = {T.int32: 4, T.uint32: 10, T.int64: 5, T.float32: 1, T.float64: 2, T.vec3: 6, T.vec3d: 7,
               T.vec4: 17, T.vec4d: 18}
#: Warp's dtype of each NanoVDB value type a kernel type exists for
NVDB_DTYPES = {"float": T.float32, "double": T.float64, "int16": T.int16, "int32": T.int32, "int64": T.int64,
               "Vec3f": T.vec3, "Vec3d": T.vec3d, "Half": T.float16, "uint32": T.uint32, "bool": T.bool_,
               "Vec4f": T.vec4, "Vec4d": T.vec4d, "Vec3u8": T.vector(3, T.uint8),
               "Vec3u16": T.vector(3, T.uint16), "uint8": T.uint8}

REBUILD_LEAF, REBUILD_LOWER, REBUILD_UPPER, REBUILD_VOXEL = 1, 2, 4, 8


def normalize_voxel_size(voxel_size) -> tuple:
    """A scalar or 3 sizes, as 3 positive finite floats (Warp's errors: TypeError, ValueError)."""
    if isinstance(voxel_size, (int, float, np.integer, np.floating)) and not isinstance(voxel_size, bool):
        sizes = (float(voxel_size),) * 3
    elif isinstance(voxel_size, (list, tuple, np.ndarray)) or hasattr(voxel_size, "_wp_shape_"):
        sizes = tuple(float(v) for v in np.asarray(voxel_size, dtype=np.float64).reshape(-1))
        if len(sizes) != 3:
            raise ValueError(f"voxel_size must be a scalar or a 3-element sequence, got length {len(sizes)}")
    else:
        raise TypeError(f"voxel_size must be a number or a sequence of 3 numbers, got {type(voxel_size).__name__}")
    if not all(math.isfinite(v) and v > 0.0 for v in sizes):
        raise ValueError(f"All voxel_size components must be finite and positive, got {sizes}")
    return sizes


def index_map(voxel_size, translation, transform) -> tuple:
    """(3x3 linear part, translation) of the index-to-world map: from ``voxel_size`` or ``transform``."""
    if transform is None:
        if voxel_size is None:
            raise ValueError("Either 'voxel_size' or 'transform' must be provided")
        matrix = np.diag(normalize_voxel_size(voxel_size))
    else:
        if voxel_size is not None:
            raise ValueError("Only one of 'voxel_size' or 'transform' must be provided")
        matrix = np.asarray(transform, dtype=np.float64).reshape(-1)
        if matrix.size != 9:
            raise ValueError(f"transform must be a 3x3 matrix, got {matrix.size} values")
        matrix = matrix.reshape(3, 3)
        if not np.isfinite(matrix).all() or abs(np.linalg.det(matrix)) == 0.0:
            raise ValueError("transform must be a finite, invertible 3x3 matrix")
    t = np.asarray(translation, dtype=np.float64).reshape(-1)
    if t.size != 3:
        raise ValueError(f"translation must have 3 components, got {t.size}")
    return matrix.astype(np.float32), t.astype(np.float32)


def background(bg_value) -> tuple:
    """(grid type code, background bytes, value type) of a background value; None: an index grid."""
    if bg_value is None:
        return None
    if isinstance(bg_value, bool):
        t = T.bool_
    elif isinstance(bg_value, int):
        t = T.int32
    elif isinstance(bg_value, float):
        t = T.float32
    elif isinstance(bg_value, np.generic):
        t = T.scalar_type(bg_value.dtype)
    elif isinstance(bg_value, (T.Scalar, T.VectorBase, T.MatrixBase)):
        t = type(bg_value)
    elif hasattr(bg_value, "__len__"):  # a plain sequence is single precision, as in Warp
        t = T.vector(len(bg_value), T.float32)
    else:
        t = type(bg_value)
    code = ALLOCATABLE.get(t)
    if code is None:
        raise TypeError(f"Unsupported bg_value type for volume allocation {T.type_name(t)}. Supported volume types "
                        f"are {', '.join(nv.TYPES[c].name for c in ALLOCATABLE.values())}.")
    raw = bg_value.value if isinstance(bg_value, T.Scalar) else bg_value
    values = np.asarray(raw, dtype=T.scalar_of(t)._np_).reshape(-1)
    return code, values.tobytes(), t


def checked_points(points, name: str) -> array:
    """``points`` if it is a contiguous array of vec3 / vec3i, or (N, 3) float32 / int32."""
    ok = isinstance(points, array) and points.shape is not None and points.is_contiguous
    if ok:
        scalar = T.scalar_of(points.dtype)
        ok = scalar in (T.float32, T.int32) and (
            (points.ndim == 1 and T.is_vector(points.dtype) and points.dtype._wp_shape_ == (3,))
            or (points.ndim == 2 and points.shape[1] == 3 and T.is_scalar(points.dtype)))
    if not ok:
        raise RuntimeError(f"{name} must be contiguous and either a 1D Warp array of vec3f or vec3i or a 2D n-by-3 "
                           "array of int32 or float32.")
    return points


def checked_mask(point_mask, count: int):
    """``point_mask`` (None, or a contiguous 1-d int32 array of at least ``count`` entries)."""
    if point_mask is None:
        return None
    if not (isinstance(point_mask, array) and point_mask.dtype is T.int32 and point_mask.ndim == 1
            and point_mask.is_contiguous):
        raise RuntimeError("point_mask must be a contiguous 1D Warp array with dtype int32")
    if point_mask.shape[0] < count:
        raise RuntimeError(f"point_mask must have at least {count} entries")
    return point_mask


def capacity(value, default: int, name: str) -> int:
    c = default if value is None else value
    try:
        c = operator.index(c) if not isinstance(c, float) else int(c)
    except TypeError as e:
        raise TypeError(f"{name} must be an integer, got {type(c).__name__}") from e
    if c <= 0:
        raise ValueError(f"{name} must be positive, got {c}")
    if c >= 2 ** 32:
        raise ValueError(f"{name} must fit in uint32, got {c}")
    return c


def status_array(status, device):
    if status is None:
        return None
    if not isinstance(status, array) or status.dtype is not T.uint32 or status.size < 1:
        raise RuntimeError("status must be a Warp array with dtype uint32 and at least one element")
    if status.device != device:
        raise RuntimeError(f"status must be on device {device}, got {status.device}")
    return status


def box_tiles(lo, hi) -> np.ndarray:
    """Tile origins (index space) of every leaf meeting the inclusive voxel box [lo, hi]."""
    t0, t1 = np.asarray(lo, np.int64) // 8, np.asarray(hi, np.int64) // 8
    axes = [np.arange(a, b + 1, dtype=np.int64) for a, b in zip(t0, t1)]
    if any(len(a) == 0 for a in axes):
        return np.zeros((0, 3), np.int32)
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    if np.abs(grid * 8).max(initial=0) >= 2 ** 31:
        raise ValueError("the box lies outside the int32 index space")
    return (grid * 8).astype(np.int32)


# ---- load_from_numpy ------------------------------------------------------------------------------


@wp.kernel(enable_backward=False)
def _fill_f(volume: wp.uint64, values: wp.array3d(dtype=wp.float32)):
    i, j, k = wp.tid()
    wp.volume_store_f(volume, i, j, k, values[i, j, k])


@wp.kernel(enable_backward=False)
def _fill_i(volume: wp.uint64, values: wp.array3d(dtype=wp.int32)):
    i, j, k = wp.tid()
    wp.volume_store_i(volume, i, j, k, values[i, j, k])


@wp.kernel(enable_backward=False)
def _fill_v(volume: wp.uint64, values: wp.array3d(dtype=wp.vec3)):
    i, j, k = wp.tid()
    wp.volume_store_v(volume, i, j, k, values[i, j, k])


def fill_dense(volume, data: np.ndarray, bg_value, device) -> None:
    """Store a dense block (padded to whole leaves with the background) at index (0, 0, 0) onwards."""
    shape = tuple(-(-s // 8) * 8 for s in data.shape[:3])
    if hasattr(bg_value, "__len__"):
        padded = np.empty((*shape, 3), np.float32)
        padded[...] = np.asarray(bg_value, np.float32)
        padded[:data.shape[0], :data.shape[1], :data.shape[2]] = data
        kernel, values = _fill_v, array(padded, dtype=T.vec3, device=device)
    else:
        numpy_type, kernel = (np.int32, _fill_i) if isinstance(bg_value, int) else (np.float32, _fill_f)
        padded = np.full(shape, bg_value, numpy_type)
        padded[:data.shape[0], :data.shape[1], :data.shape[2]] = data
        values = array(padded, dtype=T.scalar_type(numpy_type), device=device)
    wp.launch(kernel, dim=shape, inputs=[volume.id, values], device=device, record_tape=False)


# ---- the allocators (methods of wp.Volume) --------------------------------------------------------


def allocate(cls, min, max, voxel_size, bg_value=0.0, translation=(0.0, 0.0, 0.0), points_in_world_space=False,
             device=None):
    """A volume with every leaf (8^3 tile) meeting the inclusive box [min, max] (index space, or world
    space when ``points_in_world_space``); ``bg_value`` sets the value type (None: an index grid)."""
    sizes = normalize_voxel_size(voxel_size)
    lo, hi = (np.asarray(v, dtype=np.float64).reshape(-1) for v in (min, max))
    if lo.size != 3 or hi.size != 3:
        raise ValueError(f"min and max must have 3 components, got {lo.size} and {hi.size}")
    if points_in_world_space:  # voxel indices of the corners, as Warp rounds them (single precision)
        t, vs = np.asarray(translation, np.float32).reshape(3), np.asarray(sizes, np.float32)
        lo, hi = (np.around((v.astype(np.float32) - t) / vs) for v in (lo, hi))
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ValueError("min and max must be finite")
    tiles = box_tiles(lo.astype(np.int64), hi.astype(np.int64))
    return cls.allocate_by_tiles(array(tiles, dtype=T.int32, device="cpu"), sizes, bg_value, translation,
                                 device=device)


def allocate_by_tiles(cls, tile_points, voxel_size=None, bg_value=0.0, translation=(0.0, 0.0, 0.0), device=None,
                      transform=None, rebuildable=False, max_tiles=None, max_lower_nodes=None, max_upper_nodes=None,
                      status=None, point_mask=None):
    """A volume whose leaves (8^3 tiles, every voxel active) are those holding ``tile_points``: int32
    points are index-space voxels, float32 ones world-space positions. ``bg_value`` sets the value type
    and background (None: an index grid). A capacity argument or ``rebuildable`` reserves node slots
    for ``rebuild``; ``status`` receives its REBUILD_* flags, ``point_mask`` drops points where 0."""
    device = get_device(device)
    points = checked_points(tile_points, "tile_points")
    grid_map = make_map(*index_map(voxel_size, translation, transform))
    value = background(bg_value)
    cap = None
    if rebuildable or any(c is not None for c in (max_tiles, max_lower_nodes, max_upper_nodes)):
        leaf = capacity(max_tiles, len(points), "max_tiles")
        lower = capacity(max_lower_nodes, leaf, "max_lower_nodes")
        cap = Capacity(capacity(max_upper_nodes, lower, "max_upper_nodes"), lower, leaf)
        status = status_array(status, device)
    mask = checked_mask(point_mask, len(points))
    volume = cls(None)
    code, bg = (nv.CODES["Index"], b"") if value is None else value[:2]
    volume._alloc = {"kind": "tiles", "code": code, "background": bg, "map": grid_map, "capacity": cap,
                     "voxels": None}
    _make(volume, points, mask, status, device, "Volume.allocate_by_tiles")
    if cap:
        volume._rebuild_info = cls.RebuildInfo("tiles", cap.leaf * 512, cap.leaf, cap.lower, cap.upper)
    return volume


def allocate_by_voxels(cls, voxel_points, voxel_size=None, translation=(0.0, 0.0, 0.0), device=None, transform=None,
                       rebuildable=False, max_active_voxels=None, max_leaf_nodes=None, max_lower_nodes=None,
                       max_upper_nodes=None, status=None, point_mask=None):
    """An index volume (OnIndex) whose active voxels are those of ``voxel_points`` (int32: index
    space, float32: world space); each active voxel indexes one element of user arrays. Capacities,
    ``status`` and ``point_mask`` as for ``allocate_by_tiles``."""
    device = get_device(device)
    points = checked_points(voxel_points, "voxel_points")
    grid_map = make_map(*index_map(voxel_size, translation, transform))
    cap, voxels = None, None
    if rebuildable or any(c is not None for c in (max_active_voxels, max_leaf_nodes, max_lower_nodes,
                                                  max_upper_nodes)):
        voxels = capacity(max_active_voxels, len(points), "max_active_voxels")
        leaf = capacity(max_leaf_nodes, voxels, "max_leaf_nodes")
        lower = capacity(max_lower_nodes, leaf, "max_lower_nodes")
        cap = Capacity(capacity(max_upper_nodes, lower, "max_upper_nodes"), lower, leaf)
        status = status_array(status, device)
    mask = checked_mask(point_mask, len(points))
    volume = cls(None)
    volume._alloc = {"kind": "voxels", "code": nv.CODES["OnIndex"], "background": b"", "map": grid_map,
                     "capacity": cap, "voxels": voxels}
    _make(volume, points, mask, status, device, "Volume.allocate_by_voxels")
    if cap:
        volume._rebuild_info = cls.RebuildInfo("voxels", voxels, cap.leaf, cap.lower, cap.upper)
    return volume


def rebuild(self, points, status=None, point_mask=None):
    """Rebuild the topology in place from ``points`` (tile points for ``allocate_by_tiles`` volumes,
    voxel points for ``allocate_by_voxels`` ones), keeping the value type, background, map and
    capacities; values are reset to the background. Returns ``status`` (REBUILD_* flags: what did not
    fit; the leading nodes that do are kept). Runs on the volume's device, inside a graph capture too."""
    kind = self._rebuild_info.kind
    if kind is None:
        raise RuntimeError("Volume is not rebuildable: allocate it with rebuildable=True or capacities")
    points = checked_points(points, "tile_points" if kind == "tiles" else "voxel_points")
    status = status_array(status, self.device)
    mask = checked_mask(point_mask, len(points))
    vdb_rebuild.rebuild(self, _on(points, self.device), _on(mask, self.device), status)
    return status


def _on(a, device):
    """``a`` on ``device`` (a copy when it is elsewhere)."""
    return a if a is None or a.device == device else wp.clone(a, device=device)


def _make(volume, points, mask, status, device, what: str) -> None:
    """Build the volume's grid with kernels on ``device`` (``vdb_rebuild``): rebuildable volumes in a
    grid of their capacities, exact ones in a grid of the node counts their points make (read back
    first, so not inside a CUDA graph capture)."""
    a = volume._alloc
    cap = a["capacity"]
    if cap is None and device.is_cuda and device.is_capturing:
        raise CaptureError(f"{what} reads the node count back from {device} to size the grid, which a CUDA graph "
                           "capture does not allow: pass rebuildable=True (or capacities) to allocate it inside "
                           "a capture")
    points, mask = _on(points, device), _on(mask, device)
    numbering = None
    if cap is None:
        numbering, cap = vdb_rebuild.number(points, mask, a, device)
    empty = Topology(np.zeros((0, 3), np.int32), np.zeros((0, 8), np.uint64))
    head, size = build(empty, a["code"], a["background"], a["map"], cap, head_only=True)
    volume._install_empty(head, size, device)
    vdb_rebuild.write_head(volume, head)
    if numbering is None:
        vdb_rebuild.rebuild(volume, points, mask, status)
        return
    vdb_rebuild.write(volume, numbering, cap, None)
    volume._tree["upper_count"], volume._tree["lower_count"], volume._tree["leaf_count"] = cap  # as written
    volume._tree["voxel_count"] = numbering.voxels
