"""Swept volumes (Warp's ``wp.geometry.swept_volume_*``): the motion envelope of rigid meshes, each
posed by a list of sampled transforms, as a signed distance field on a dense grid and as the mesh of
its level set.

The field at a point is the least signed distance to any mesh at any of its poses. The motion is
rigid, so instead of moving the geometry the point is moved back into each mesh's rest frame (the
pose's inverse) and one closest-point query against the rest mesh evaluates that pose
(``swept_volume_sdf``, a ``@wp.func`` scripts may call from their own kernels). Only the sampled
poses count: motion between two samples is not bounded.

Everything runs as tilewarp kernels on the meshes' device and is deterministic: the field is one
query per node, and the bounds reduce with atomic min / max, which do not depend on the order.
"""
from __future__ import annotations

import enum
import math
from collections.abc import Sequence

import numpy as np

import tilewarp as wp

from ..language import types as T
from ..runtime.array import array, full
from ..runtime.device import get_device
from .marching_cubes import IsoSurfaceMarchingCubes, _triple
from .mesh import Mesh


class SweptVolumeSignMode(enum.IntEnum):
    """How :func:`swept_volume_sdf` tells the inside of a mesh from its outside. Members are
    integers, so one can be passed straight into a kernel."""

    NORMAL = 0  #: the closest face's normal: fast, for watertight meshes
    WINDING_NUMBER = 1  #: the generalised winding number: robust on open shells; needs
    #: meshes built with ``support_winding_number=True``
    PARITY = 2  #: the parity of ray crossings
    NO_SIGN = 3  #: none: an unsigned distance, positive everywhere


# ---- the kernel API ----------------------------------------------------------------------------------


@wp.func
def _mesh_distance(mesh: wp.uint64, p: wp.vec3, max_dist: wp.float32, sign_mode: wp.int32):
    # the signed distance from p to the mesh, or max_dist when no face lies within max_dist (a query
    # that finds nothing has no sign either)
    d = max_dist
    if sign_mode == 1:
        q = wp.mesh_query_point_sign_winding_number(mesh, p, max_dist)
        if q.result:
            d = q.sign * wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    elif sign_mode == 0:
        q = wp.mesh_query_point_sign_normal(mesh, p, max_dist)
        if q.result:
            d = q.sign * wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    elif sign_mode == 2:
        q = wp.mesh_query_point_sign_parity(mesh, p, max_dist)
        if q.result:
            d = q.sign * wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    else:
        q = wp.mesh_query_point_no_sign(mesh, p, max_dist)
        if q.result:
            d = wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
    return d


@wp.func
def swept_volume_sdf(point: wp.vec3, mesh_ids: wp.array(dtype=wp.uint64), transforms: wp.array2d(dtype=wp.transform),
                     max_dist: wp.float32, sign_mode: wp.int32) -> wp.float32:
    """The swept volume's signed distance at ``point`` (world space): the least, over every mesh
    ``m`` and pose ``s``, of mesh ``m``'s signed distance at ``transforms[m, s]``'s inverse applied
    to ``point``. ``max_dist`` bounds each closest-point search: a point with no face within it
    reads ``+max_dist`` (also deep inside the union), so pass a bound spanning the region of
    interest. ``sign_mode`` is a :class:`SweptVolumeSignMode` value. Not differentiable."""
    best = max_dist
    for m in range(mesh_ids.shape[0]):
        mesh = mesh_ids[m]
        for s in range(transforms.shape[1]):
            local = wp.transform_point(wp.transform_inverse(transforms[m, s]), point)
            best = wp.min(best, _mesh_distance(mesh, local, max_dist, sign_mode))
    return best


# ---- kernels -----------------------------------------------------------------------------------------

_CHUNK = 256


@wp.kernel(enable_backward=False)
def _field(mesh_ids: wp.array(dtype=wp.uint64), transforms: wp.array2d(dtype=wp.transform), origin: wp.vec3,
           spacing: wp.vec3, max_dist: wp.float32, sign_mode: wp.int32, out: wp.array3d(dtype=wp.float32)):
    i, j, k = wp.tid()
    p = origin + wp.cw_mul(spacing, wp.vec3(float(i), float(j), float(k)))
    out[i, j, k] = swept_volume_sdf(p, mesh_ids, transforms, max_dist, sign_mode)


@wp.kernel(enable_backward=False)
def _rest_box(points: wp.array(dtype=wp.vec3), chunk: int, slot: int, lower: wp.array(dtype=wp.vec3),
              upper: wp.array(dtype=wp.vec3)):
    # each thread reduces a chunk of the points, then folds it into the mesh's slot
    t = wp.tid()
    lo = points[t * chunk]
    hi = lo
    for p in range(t * chunk + 1, wp.min(points.shape[0], (t + 1) * chunk)):
        lo = wp.min(lo, points[p])
        hi = wp.max(hi, points[p])
    wp.atomic_min(lower, slot, lo)
    wp.atomic_max(upper, slot, hi)


@wp.kernel(enable_backward=False)
def _posed_box(rest_lower: wp.array(dtype=wp.vec3), rest_upper: wp.array(dtype=wp.vec3),
               transforms: wp.array2d(dtype=wp.transform), lower: wp.array(dtype=wp.vec3),
               upper: wp.array(dtype=wp.vec3)):
    # the 8 corners of mesh m's rest box under pose s: a box that holds the posed mesh
    m, s = wp.tid()
    a = rest_lower[m]
    b = rest_upper[m]
    xf = transforms[m, s]
    for c in range(8):
        corner = wp.vec3(wp.where((c & 1) != 0, b[0], a[0]), wp.where((c & 2) != 0, b[1], a[1]),
                         wp.where((c & 4) != 0, b[2], a[2]))
        p = wp.transform_point(xf, corner)
        wp.atomic_min(lower, 0, p)
        wp.atomic_max(upper, 0, p)


# ---- arguments ---------------------------------------------------------------------------------------


def _meshes_device(meshes, device):
    """The device to run on (``device``, else the first mesh's); every mesh must live there."""
    if isinstance(meshes, Mesh) or not isinstance(meshes, Sequence):
        raise TypeError(f"'meshes' must be a sequence of wp.Mesh, got {type(meshes).__name__}")
    if len(meshes) == 0:
        raise ValueError("'meshes' must contain at least one mesh.")
    for i, mesh in enumerate(meshes):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"'meshes[{i}]' must be a wp.Mesh, got {type(mesh).__name__}")
    device = meshes[0].device if device is None else get_device(device)
    for i, mesh in enumerate(meshes):
        if mesh.device != device:
            raise ValueError(f"'meshes[{i}]' lives on {mesh.device}, but the swept volume runs on {device}.")
    return device


def _as_transforms(transforms, n_meshes: int, device) -> array:
    """``transforms`` as a ``(num_meshes, num_samples)`` array of ``wp.transform`` on ``device``: a
    ``wp.array2d(dtype=wp.transform)`` as it is, or anything NumPy reads as ``(M, S, 7)`` floats
    (translation xyz, then quaternion xyzw)."""
    if isinstance(transforms, array):
        if transforms.ndim != 2:
            raise ValueError(f"'transforms' must be a 2D array of shape (num_meshes, num_samples), got ndim "
                             f"{transforms.ndim}.")
        if transforms.dtype is not T.transform:
            raise TypeError(f"'transforms' must have dtype wp.transform, got {T.type_name(transforms.dtype)}.")
        if transforms.device != device:
            raise ValueError(f"'transforms' lives on {transforms.device}, but the swept volume runs on {device}.")
        out = transforms
    else:
        values = np.asarray(transforms, dtype=np.float32)
        if values.ndim != 3 or values.shape[2] != 7:
            raise ValueError("'transforms' must be a wp.array2d(dtype=wp.transform) or an array of shape "
                             f"(num_meshes, num_samples, 7), got shape {values.shape}.")
        if not np.isfinite(values).all():
            raise ValueError("'transforms' must be finite.")
        out = wp.array(np.ascontiguousarray(values), dtype=wp.transform, device=device)
    if out.shape[1] == 0:
        raise ValueError("'transforms' must contain at least one pose sample.")
    if out.shape[0] != n_meshes:
        raise ValueError(f"'transforms' has {out.shape[0]} rows but there are {n_meshes} meshes.")
    return out


def _as_mode(sign_mode) -> SweptVolumeSignMode:
    try:
        return SweptVolumeSignMode(sign_mode)
    except ValueError:
        raise ValueError(f"'sign_mode' must be a SweptVolumeSignMode, got {sign_mode!r}.") from None


def _sign_mode(sign_mode, meshes) -> SweptVolumeSignMode:
    mode = _as_mode(sign_mode)
    if mode == SweptVolumeSignMode.WINDING_NUMBER:
        for i, mesh in enumerate(meshes):
            if not mesh.support_winding_number:
                raise ValueError(f"'meshes[{i}]' was not built with support_winding_number=True, which "
                                 "SweptVolumeSignMode.WINDING_NUMBER (the default) requires. Rebuild it with "
                                 "wp.Mesh(..., support_winding_number=True), or pass another sign_mode.")
    return mode


def _posed_bounds(meshes, transforms: array, device) -> tuple:
    """(lower, upper) of every mesh's rest box under every pose, as float64 NumPy vectors."""
    n = len(meshes)
    rest_lower = full(n, wp.vec3(math.inf, math.inf, math.inf), dtype=wp.vec3, device=device)
    rest_upper = full(n, wp.vec3(-math.inf, -math.inf, -math.inf), dtype=wp.vec3, device=device)
    for slot, mesh in enumerate(meshes):
        count = mesh.points.shape[0]
        if count == 0:
            raise ValueError(f"'meshes[{slot}]' has no points.")
        wp.launch(_rest_box, dim=-(-count // _CHUNK), inputs=[mesh.points, _CHUNK, slot, rest_lower, rest_upper],
                  device=device, record_tape=False)
    lower = full(1, wp.vec3(math.inf, math.inf, math.inf), dtype=wp.vec3, device=device)
    upper = full(1, wp.vec3(-math.inf, -math.inf, -math.inf), dtype=wp.vec3, device=device)
    wp.launch(_posed_box, dim=transforms.shape, inputs=[rest_lower, rest_upper, transforms, lower, upper],
              device=device, record_tape=False)
    return lower.numpy()[0].astype(np.float64), upper.numpy()[0].astype(np.float64)


def _finite(value, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"'{name}' must be a number, got {type(value).__name__}") from None
    if not math.isfinite(out):
        raise ValueError(f"'{name}' must be finite, got {out}.")
    return out


def _resolution(resolution) -> tuple:
    try:
        dims = tuple(resolution)
    except TypeError:
        raise TypeError(f"'resolution' must be a sequence of 3 node counts, got {type(resolution).__name__}") from None
    if len(dims) != 3:
        raise ValueError(f"'resolution' must have exactly 3 entries, got {dims}.")
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in dims):
        raise ValueError(f"'resolution' must hold integers, got {dims}.")
    if min(dims) < 2:
        raise ValueError(f"'resolution' must be at least 2 along each axis, got {dims}.")
    return tuple(int(n) for n in dims)


def _grid(meshes, transforms, voxel_size, resolution, lower, upper, extra: float, device) -> tuple:
    """(lower, upper, node counts, max_dist) of the sampling grid. Given corners are used as they
    are, with ``resolution`` nodes. Otherwise the posed bounds grow by ``extra`` plus two cells on
    every side, so the level extracted stays inside the grid: with ``voxel_size`` the extent then
    grows to whole cells about its centre, so the spacing is exactly ``voxel_size``; with
    ``resolution`` a cell is the unpadded extent over the cell count, per axis. ``max_dist`` spans
    the grid and the geometry together, so every node's search reaches the surface."""
    if voxel_size is not None and resolution is not None:
        raise ValueError("Pass either 'voxel_size' or 'resolution', not both.")
    if voxel_size is None and resolution is None:
        raise ValueError("Provide either 'voxel_size' or 'resolution'.")
    if (lower is None) != (upper is None):
        raise ValueError("Pass both 'lower' and 'upper', or neither.")
    if lower is not None and voxel_size is not None:
        raise ValueError("'voxel_size' cannot be combined with explicit domain bounds, since the extent would have "
                         "to grow to fit whole cells. Pass 'resolution' instead.")
    if voxel_size is not None:
        voxel_size = _finite(voxel_size, "voxel_size")
        if voxel_size <= 0.0:
            raise ValueError(f"'voxel_size' must be positive, got {voxel_size}.")
    dims = None if resolution is None else _resolution(resolution)
    tight_lo, tight_hi = _posed_bounds(meshes, transforms, device)
    if lower is not None:
        lo, hi = np.array(_triple(lower, "lower")), np.array(_triple(upper, "upper"))
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()) or (hi <= lo).any():
            raise ValueError(f"'upper' {hi.tolist()} must exceed 'lower' {lo.tolist()} on every axis.")
    elif dims is None:
        span = tight_hi - tight_lo + 2.0 * (extra + 2.0 * voxel_size)
        cells = np.maximum(np.ceil(span / voxel_size - 1e-9), 1.0)
        centre, half = 0.5 * (tight_lo + tight_hi), 0.5 * cells * voxel_size
        lo, hi, dims = centre - half, centre + half, tuple(int(c) + 1 for c in cells)
    else:
        pad = extra + 2.0 * (tight_hi - tight_lo) / (np.array(dims) - 1)
        lo, hi = tight_lo - pad, tight_hi + pad
    reach = float(np.linalg.norm(np.maximum(hi, tight_hi) - np.minimum(lo, tight_lo)))
    max_dist = 1.01 * reach + 1e-3  # strictly beyond any node-to-surface distance
    return wp.vec3(*lo), wp.vec3(*hi), dims, max_dist


def _mesh_ids(meshes, device) -> array:
    return wp.array(np.array([m.id for m in meshes], dtype=np.uint64), dtype=wp.uint64, device=device)


def swept_volume_bounds(meshes: Sequence[Mesh], transforms, padding: float = 0.0, device=None) -> tuple:
    """``(lower, upper)`` (``wp.vec3``): the world box holding every mesh at every pose (each rest
    box's corners under each pose), widened by ``padding`` on every side. ``transforms``: see
    :func:`swept_volume_field`. Runs on ``device`` (default: the first mesh's)."""
    device = _meshes_device(meshes, device)
    padding = _finite(padding, "padding")
    transforms = _as_transforms(transforms, len(meshes), device)
    lo, hi = _posed_bounds(meshes, transforms, device)
    return wp.vec3(*(lo - padding)), wp.vec3(*(hi + padding))


def _field_on_grid(meshes, transforms, voxel_size, resolution, lower, upper, sign_mode, extra, device):
    device = _meshes_device(meshes, device)
    mode = _sign_mode(sign_mode, meshes)
    transforms = _as_transforms(transforms, len(meshes), device)
    lower, upper, dims, max_dist = _grid(meshes, transforms, voxel_size, resolution, lower, upper, extra, device)
    spacing = wp.vec3(*((upper[a] - lower[a]) / (dims[a] - 1) for a in range(3)))
    field = wp.empty(dims, dtype=wp.float32, device=device)
    wp.launch(_field, dim=dims, inputs=[_mesh_ids(meshes, device), transforms, lower, spacing, float(max_dist),
                                        int(mode)], outputs=[field], device=device, record_tape=False)
    return field, lower, upper


def swept_volume_field(meshes: Sequence[Mesh], transforms, voxel_size: float | None = None, *,
                       resolution: tuple | None = None, lower=None, upper=None,
                       sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER, device=None) -> tuple:
    """``(field, lower, upper)``: the swept volume's signed distance (negative inside; positive
    everywhere with ``NO_SIGN``) at the nodes of a grid, a ``wp.array3d(dtype=wp.float32)``, with
    the world positions of nodes (0, 0, 0) and (nx-1, ny-1, nz-1).

    ``transforms``: per mesh, per sample, the rigid pose taking the rest mesh to the world (unit
    quaternions), a ``wp.array2d(dtype=wp.transform)`` of shape ``(num_meshes, num_samples)`` or an
    array of shape ``(num_meshes, num_samples, 7)`` (xyz, then quaternion xyzw). The grid: either
    ``voxel_size`` (cubic cells; the domain grows to whole cells around the padded swept bounds) or
    ``resolution`` (node counts), and with ``resolution`` optionally the corners ``lower`` and
    ``upper`` (both), used as given. ``WINDING_NUMBER`` (the default) needs meshes built with
    ``support_winding_number=True``. Runs forward only, on ``device`` (default: the first mesh's)."""
    return _field_on_grid(meshes, transforms, voxel_size, resolution, lower, upper, sign_mode, 0.0, device)


def swept_volume_mesh(meshes: Sequence[Mesh], transforms, voxel_size: float | None = None, *,
                      resolution: tuple | None = None, lower=None, upper=None, threshold: float = 0.0,
                      sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER, device=None) -> tuple:
    """``(vertices, indices)``: the ``threshold`` level set of :func:`swept_volume_field` by
    marching cubes, one triangle mesh in world space (``wp.vec3`` vertices, flat ``wp.int32``
    indices). A positive ``threshold`` dilates the envelope, and the default grid grows by it; the
    mesh is sure to enclose every sampled pose when ``threshold > 0.5 * hypot(hx, hy, hz)`` (the
    cell diagonal's half). ``NO_SIGN`` needs a positive ``threshold``. Arguments otherwise as
    :func:`swept_volume_field`."""
    threshold = _finite(threshold, "threshold")
    if _as_mode(sign_mode) == SweptVolumeSignMode.NO_SIGN and threshold <= 0.0:
        raise ValueError(f"'threshold' must be positive when sign_mode is SweptVolumeSignMode.NO_SIGN, got "
                         f"{threshold}. An unsigned field is positive everywhere, so its zero isosurface is empty.")
    field, lower, upper = _field_on_grid(meshes, transforms, voxel_size, resolution, lower, upper, sign_mode,
                                         max(threshold, 0.0), device)
    return IsoSurfaceMarchingCubes.extract(field, threshold, lower=lower, upper=upper)
