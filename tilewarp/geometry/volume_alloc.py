"""What ``wp.Volume``'s allocators and ``rebuild`` take apart: voxel sizes and transforms, background
values (which fix the grid type), point arrays (index or world space, masked), rebuild capacities,
and the topology (leaves with their active voxels) the points ask for. Grids are built on the host
(``vdb_build``) and uploaded; ``load_from_numpy`` fills one with the kernels below.
"""
from __future__ import annotations

import math
import operator

import numpy as np

import tilewarp as wp

from ..language import types as T
from ..runtime.array import array
from ..runtime.device import get_device
from . import nanovdb as nv
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
FULL_MASK = np.uint64(2 ** 64 - 1)


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


def points_of(points, name: str) -> np.ndarray:
    """The (N, 3) host copy of a point array: vec3 / vec3i, or (N, 3) float32 / int32."""
    ok = isinstance(points, array) and points.shape is not None and points.is_contiguous
    if ok:
        scalar = T.scalar_of(points.dtype)
        ok = scalar in (T.float32, T.int32) and (
            (points.ndim == 1 and T.is_vector(points.dtype) and points.dtype._wp_shape_ == (3,))
            or (points.ndim == 2 and points.shape[1] == 3 and T.is_scalar(points.dtype)))
    if not ok:
        raise RuntimeError(f"{name} must be contiguous and either a 1D Warp array of vec3f or vec3i or a 2D n-by-3 "
                           "array of int32 or float32.")
    return np.asarray(points.numpy()).reshape(-1, 3)


def point_mask_of(point_mask, count: int):
    if point_mask is None:
        return None
    if not (isinstance(point_mask, array) and point_mask.dtype is T.int32 and point_mask.ndim == 1
            and point_mask.is_contiguous):
        raise RuntimeError("point_mask must be a contiguous 1D Warp array with dtype int32")
    if point_mask.shape[0] < count:
        raise RuntimeError(f"point_mask must have at least {count} entries")
    return point_mask.numpy()[:count] != 0


def voxels_of(points: np.ndarray, mask, grid_map: dict) -> np.ndarray:
    """Index-space voxels of points: integers as they are, floats through the inverse map, rounded."""
    if mask is not None:
        points = points[mask]
    if points.dtype.kind == "f":
        inv, t = grid_map["invmatf"].reshape(3, 3), grid_map["vecf"]
        ijk = np.floor((points.astype(np.float32) - t) @ inv.T + np.float32(0.5))
        if not np.isfinite(ijk).all():
            raise RuntimeError("points map to non-finite index-space coordinates")
        return np.clip(ijk, -2 ** 31, 2 ** 31 - 1).astype(np.int32)
    return points.astype(np.int32)


def tile_topology(ijk: np.ndarray) -> Topology:
    """Every leaf holding one of the voxels, with all its voxels active."""
    origins = np.unique(ijk & np.int32(~7), axis=0)
    return Topology(origins, np.full((len(origins), 8), FULL_MASK))


def voxel_topology(ijk: np.ndarray) -> Topology:
    """The leaves of the voxels, with exactly those voxels active."""
    ijk = np.unique(ijk.reshape(-1, 3), axis=0)
    origins, leaf = np.unique(ijk & np.int32(~7), axis=0, return_inverse=True)
    local = (ijk & 7).astype(np.int64)
    n = local[:, 0] << 6 | local[:, 1] << 3 | local[:, 2]
    masks = np.zeros((len(origins), 8), np.uint64)
    np.bitwise_or.at(masks, (leaf.reshape(-1), n >> 6), np.left_shift(np.uint64(1), (n & 63).astype(np.uint64)))
    return Topology(origins, masks)


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


def overflow_flags(topo: Topology, cap: Capacity, voxel_capacity: int | None) -> int:
    n = topo.counts
    flags = (REBUILD_LEAF if n.leaf > cap.leaf else 0) | (REBUILD_LOWER if n.lower > cap.lower else 0)
    flags |= REBUILD_UPPER if n.upper > cap.upper else 0
    if voxel_capacity is not None and topo.voxel_count > voxel_capacity:
        flags |= REBUILD_VOXEL
    return flags


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
    points = points_of(tile_points, "tile_points")
    grid_map = make_map(*index_map(voxel_size, translation, transform))
    value = background(bg_value)
    cap = None
    if rebuildable or any(c is not None for c in (max_tiles, max_lower_nodes, max_upper_nodes)):
        leaf = capacity(max_tiles, len(points), "max_tiles")
        lower = capacity(max_lower_nodes, leaf, "max_lower_nodes")
        cap = Capacity(capacity(max_upper_nodes, lower, "max_upper_nodes"), lower, leaf)
        status = status_array(status, device)
    mask = point_mask_of(point_mask, len(points))
    volume = cls(None)
    code, bg = (nv.CODES["Index"], b"") if value is None else value[:2]
    volume._alloc = {"kind": "tiles", "code": code, "background": bg, "map": grid_map, "capacity": cap,
                     "voxels": None}
    _build_into(volume, tile_topology(voxels_of(points, mask, grid_map)), status if cap else None, device)
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
    points = points_of(voxel_points, "voxel_points")
    grid_map = make_map(*index_map(voxel_size, translation, transform))
    cap, voxels = None, None
    if rebuildable or any(c is not None for c in (max_active_voxels, max_leaf_nodes, max_lower_nodes,
                                                  max_upper_nodes)):
        voxels = capacity(max_active_voxels, len(points), "max_active_voxels")
        leaf = capacity(max_leaf_nodes, voxels, "max_leaf_nodes")
        lower = capacity(max_lower_nodes, leaf, "max_lower_nodes")
        cap = Capacity(capacity(max_upper_nodes, lower, "max_upper_nodes"), lower, leaf)
        status = status_array(status, device)
    mask = point_mask_of(point_mask, len(points))
    volume = cls(None)
    volume._alloc = {"kind": "voxels", "code": nv.CODES["OnIndex"], "background": b"", "map": grid_map,
                     "capacity": cap, "voxels": voxels}
    _build_into(volume, voxel_topology(voxels_of(points, mask, grid_map)), status if cap else None, device)
    if cap:
        volume._rebuild_info = cls.RebuildInfo("voxels", voxels, cap.leaf, cap.lower, cap.upper)
    return volume


def rebuild(self, points, status=None, point_mask=None):
    """Rebuild the topology in place from ``points`` (tile points for ``allocate_by_tiles`` volumes,
    voxel points for ``allocate_by_voxels`` ones), keeping the value type, background, map and
    capacities; values are reset to the background. Returns ``status`` (REBUILD_* flags: what did not
    fit; the leading nodes that do are kept)."""
    kind = self._rebuild_info.kind
    if kind is None:
        raise RuntimeError("Volume is not rebuildable: allocate it with rebuildable=True or capacities")
    pts = points_of(points, "tile_points" if kind == "tiles" else "voxel_points")
    status = status_array(status, self.device)
    ijk = voxels_of(pts, point_mask_of(point_mask, len(pts)), self._alloc["map"])
    _build_into(self, tile_topology(ijk) if kind == "tiles" else voxel_topology(ijk), status, self.device)
    return status


def _build_into(volume, topo, status, device) -> None:
    """Build the volume's grid for ``topo`` (cut to its capacities) and install it, or write it over
    the current one (rebuilds)."""
    a = volume._alloc
    flags = 0
    if a["capacity"] is not None:
        flags = overflow_flags(topo, a["capacity"], a["voxels"])
        if flags:
            topo = topo.truncated(a["capacity"], a["voxels"])
    grid = build(topo, a["code"], a["background"], a["map"], a["capacity"])
    if volume.id:
        volume._replace(grid)
    else:
        volume._install(grid, device)
    if status is not None:
        status[0:1].assign(np.array([flags], np.uint32))
