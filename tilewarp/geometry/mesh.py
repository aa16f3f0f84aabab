"""``wp.Mesh``: a triangle mesh with a BVH over its faces, for closest-point, ray and box queries in
kernels (``tilewarp/builtins/mesh.py``, ``native/geometry/mesh.h``).

The tree is ``bvh.Tree`` over the faces' boxes, built by kernels on the mesh's device; the mesh's
descriptor (``MeshDesc``) starts with the tree's, so the mesh id is also its tree's id. Input is
checked before anything is built: index arrays of whole triangles, indices within the points, finite
points, devices and dtypes — each refused with an error naming the argument.
"""
from __future__ import annotations

import tilewarp as wp

from ..builtins.mesh import MeshDesc
from ..language import types as T
from ..runtime import cpu_capture, retired
from ..runtime.array import array, uninitialized, zeros
from .bvh import BvhConstructor, Tree, check_groups, check_leaf_size, constructor_of, fold_plan


@wp.kernel(enable_backward=False)
def _inspect(points: wp.array(dtype=wp.vec3), indices: wp.array(dtype=wp.int32), per_thread: int, thread_step: int,
             item_step: int, stats: wp.array(dtype=wp.float64)):
    # stats: indices outside the points, non-finite points, summed edge length. Thread t looks at
    # items t * thread_step + k * item_step, k < per_thread (bvh.fold_plan)
    t = wp.tid()
    bad = int(0)
    nonfinite = int(0)
    total = wp.float64(0.0)
    n = points.shape[0]
    faces = indices.shape[0] // 3
    for k in range(per_thread):
        f = t * thread_step + k * item_step
        if f < faces:
            i = indices[3 * f]
            j = indices[3 * f + 1]
            c = indices[3 * f + 2]
            if i < 0 or i >= n or j < 0 or j >= n or c < 0 or c >= n:
                bad += 1
            else:
                a = points[i]
                b = points[j]
                d = points[c]
                total += wp.float64(wp.length(b - a) + wp.length(d - b) + wp.length(a - d))
        if f < n:
            q = points[f]
            if not (wp.isfinite(q[0]) and wp.isfinite(q[1]) and wp.isfinite(q[2])):
                nonfinite += 1
    bad = wp._lane_sum(bad)
    nonfinite = wp._lane_sum(nonfinite)
    total = wp._lane_sum(total)
    if wp._lane_leader():
        if bad > 0:
            wp.atomic_add(stats, 0, wp.float64(bad))
        if nonfinite > 0:
            wp.atomic_add(stats, 1, wp.float64(nonfinite))
        wp.atomic_add(stats, 2, total)


@wp.kernel(enable_backward=False)
def _winding_refit(mesh: wp.uint64):
    wp._mesh_winding_refit(mesh, wp.tid())


@wp.kernel(enable_backward=False)
def _store(desc: wp.array(dtype=MeshDesc), value: MeshDesc, stats: wp.array(dtype=wp.float64), faces: int):
    # the average edge length comes from the device's validation pass, with no host round trip
    d = value
    d.average_edge = wp.float32(stats[2] / wp.float64(wp.max(3 * faces, 1)))
    desc[0] = d


def _check(points, indices, velocities):
    for name, a in (("points", points), ("indices", indices)):
        if not isinstance(a, array):
            raise TypeError(f"Mesh(): {name} must be a wp.array, got {type(a).__name__}")
    if points.device != indices.device:
        raise RuntimeError("Mesh points and indices must live on the same device")
    if points.dtype is not T.vec3 or not points.is_contiguous or points.ndim != 1:
        raise RuntimeError("Mesh points should be a contiguous array of type wp.vec3")
    if indices.dtype is not T.int32 or not indices.is_contiguous:
        raise RuntimeError("Mesh indices should be a contiguous array of type wp.int32")
    if indices.ndim > 1:
        raise RuntimeError("Mesh indices should be a flattened 1d array of indices")
    if indices.size % 3:
        raise RuntimeError(f"Mesh indices should hold whole triangles (a multiple of 3 entries), got {indices.size}")
    if velocities is not None:
        if not isinstance(velocities, array) or velocities.dtype is not T.vec3 or not velocities.is_contiguous:
            raise RuntimeError("Mesh velocities should be a contiguous array of type wp.vec3")
        if velocities.device != points.device:
            raise RuntimeError("Mesh velocities must live on the same device as the points")
        if velocities.shape != points.shape:
            raise RuntimeError(f"Mesh velocities must have the points' shape {points.shape}, got {velocities.shape}")


class Mesh:
    """A triangle mesh (Warp's ``wp.Mesh``): ``points`` (vec3), ``indices`` (int32, three per face),
    optional ``velocities``. Kernels take its :attr:`id`. Assigning :attr:`points` a new array refits
    the tree; after changing the points in place call :meth:`refit`."""

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self.id = None
        return self

    def __init__(self, points: array, indices: array, velocities: array | None = None,
                 support_winding_number: bool = False, bvh_constructor=None, bvh_leaf_size: int | None = None,
                 groups: array | None = None):
        _check(points, indices, velocities)
        self.device = points.device
        faces = indices.size // 3
        check_groups(groups, self.device, faces, "indices / 3")
        self._constructor = constructor_of(bvh_constructor, self.device)
        if self._constructor == BvhConstructor.CUBQL:
            if groups is not None:
                raise RuntimeError("Grouped mesh queries are not supported with bvh_constructor='cubql'")
            if support_winding_number:
                raise RuntimeError("support_winding_number=True is not supported with bvh_constructor='cubql'")
        leaf_size = 4 if bvh_leaf_size is None or (bvh_leaf_size == 0 and self._constructor == BvhConstructor.CUBQL) \
            else check_leaf_size(bvh_leaf_size, "bvh_leaf_size")
        self._points, self._velocities, self.indices, self.groups = points, velocities, indices, groups
        self.support_winding_number = bool(support_winding_number)
        self._stats = self._queue_inspection(points, indices)
        self._bvh = None
        self._desc = uninitialized(1, dtype=MeshDesc, device=self.device)  # the build writes it first
        # per tree node: the dipole, area, centre and radius of its faces (the fast winding number)
        self._winding = uninitialized(max(2 * faces - 1, 1) * 8, dtype=T.float32, device=self.device) \
            if self.support_winding_number and faces else None
        self._tree = Tree(self.device, faces, leaf_size, self._write_tree, groups, triangles=True,
                          constructor=self._constructor)
        self.id = self._desc.ptr
        self._tree.build(self.id, points=points, indices=indices)
        self._check_inspection()  # after the whole build is queued: the GPU does not wait for the host
        self._refit_winding()

    def _refit_winding(self):
        if self._winding is not None:
            self._tree.counters.zero_()
            wp.launch(_winding_refit, dim=max(2 * self._tree.n - 1, 1), inputs=[self.id], device=self.device,
                      record_tape=False)

    def _queue_inspection(self, points, indices):
        """Queue the validation pass: (bad indices, non-finite points, summed edge length) on the device."""
        if points.size == 0 and indices.size:
            raise ValueError(f"Mesh indices: {indices.size // 3} triangle(s) refer to points outside [0, 0)")
        stats = zeros(3, dtype=T.float64, device=self.device)
        threads, steps = fold_plan(max(indices.size // 3, points.size), self.device)
        wp.launch(_inspect, dim=threads, inputs=[points, indices, *steps, stats], device=self.device,
                  record_tape=False)
        return stats

    def _check_inspection(self):
        bad, nonfinite = (int(x) for x in self._stats.numpy()[:2])
        if bad:
            self.id = None
            raise ValueError(f"Mesh indices: {bad} triangle(s) refer to points outside [0, {self._points.size})")
        if nonfinite:
            self.id = None
            raise ValueError(f"Mesh points: {nonfinite} point(s) are not finite (NaN or infinite)")

    def _write_tree(self, bvh_desc):
        self._bvh = bvh_desc
        self._write()

    def _write(self):
        d = MeshDesc()
        d.bvh = self._bvh
        d.velocities = self._velocities.ptr if self._velocities is not None else 0
        grad = self._points.grad if self._points.requires_grad else None
        d.points_grad = grad.ptr if grad is not None else 0
        vgrad = self._velocities.grad if self._velocities is not None and self._velocities.requires_grad else None
        d.velocities_grad = vgrad.ptr if vgrad is not None else 0
        d.num_points, d.num_faces = self._points.size, self.indices.size // 3
        d.winding = int(self.support_winding_number)
        d.winding_data = self._winding.ptr if self._winding is not None else 0
        wp.launch(_store, dim=1, inputs=[self._desc, d, self._stats, d.num_faces], device=self.device,
                  record_tape=False)

    def __del__(self):
        retired.retire(self.id, "wp.Mesh")
        self.id = None

    def refit(self):
        """Recompute the tree's boxes from the current points (same tree shape)."""
        with cpu_capture.operation(self.device, self.refit):
            self._tree.refit(self.id)
            self._refit_winding()

    @property
    def points(self):
        return self._points

    @points.setter
    def points(self, new):
        if not isinstance(new, array) or new.dtype is not T.vec3:
            raise RuntimeError("Mesh points should be an array of type wp.vec3")
        if new.device != self._points.device:
            raise RuntimeError("The new points and the original points must live on the same device, the new "
                               f"points are on {new.device} while the old points are on {self._points.device}.")
        if new.ndim != 1 or new.shape[0] != self._points.shape[0]:
            raise RuntimeError("The new points and the original points must have the same shape, the new points' "
                               f"shape is {new.shape}, while the old points' shape is {self._points.shape}.")
        self._points = new
        self._tree.sources["points"] = new
        self._bvh = self._tree.descriptor()
        self._write()
        self.refit()

    @property
    def velocities(self):
        return self._velocities

    @velocities.setter
    def velocities(self, new):
        if self._velocities is None or new.device != self._velocities.device:
            raise RuntimeError("The new velocities must live on the device of the original velocities")
        if new.ndim != 1 or new.shape[0] != self._velocities.shape[0]:
            raise RuntimeError(f"The new velocities must have the shape {self._velocities.shape}, got {new.shape}")
        self._velocities = new
        self._write()
