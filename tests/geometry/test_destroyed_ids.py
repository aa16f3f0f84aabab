"""A destroyed Mesh / Bvh / HashGrid / Volume id passed to a launch is refused with a LaunchError naming
the argument (every launch: the first, through the Python path, and repeats, through the native one);
a new object's id, even at a reused address, launches as usual."""
import gc

import numpy as np
import pytest

import tilewarp as wp
from tilewarp.errors import LaunchError
from tilewarp.runtime import native_launch


@wp.kernel
def probe_mesh(mesh: wp.uint64, out: wp.array(dtype=float)):
    q = wp.mesh_query_point_no_sign(mesh, wp.vec3(0.2, 0.2, 1.0), 10.0)
    out[0] = q.u + q.v


@wp.kernel
def probe_bvh(bvh: wp.uint64, out: wp.array(dtype=float)):
    q = wp.bvh_query_aabb(bvh, wp.vec3(-1.0), wp.vec3(2.0))
    i = int(0)
    n = float(0.0)
    while wp.bvh_query_next(q, i):
        n += 1.0
    out[0] = n


@wp.kernel
def probe_grid(grid: wp.uint64, out: wp.array(dtype=float)):
    n = float(0.0)
    for _j in wp.hash_grid_query(grid, wp.vec3(0.0), 1.0):
        n += 1.0
    out[0] = n


def _mesh(device):
    pts = wp.array(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32), dtype=wp.vec3, device=device)
    return wp.Mesh(pts, wp.array([0, 1, 2], dtype=wp.int32, device=device))


def _bvh(device):
    lo = wp.array(np.zeros((4, 3), np.float32), dtype=wp.vec3, device=device)
    return wp.Bvh(lo, wp.array(np.ones((4, 3), np.float32), dtype=wp.vec3, device=device))


def _grid(device):
    grid = wp.HashGrid(8, 8, 8, device=device)
    grid.build(wp.array(np.random.default_rng(0).random((50, 3)).astype(np.float32), dtype=wp.vec3, device=device), 0.5)
    return grid


@pytest.mark.parametrize("make,kernel,name", [(_mesh, probe_mesh, "mesh"), (_bvh, probe_bvh, "bvh"),
                                              (_grid, probe_grid, "grid")])
def test_destroyed_id_is_refused(device, make, kernel, name):
    native_launch.extension(wait=True)  # repeat launches take the native path, where it can be built
    out = wp.zeros(1, dtype=float, device=device)
    obj = make(device)
    kind = type(obj).__name__
    stale = obj.id
    wp.launch(kernel, dim=1, inputs=[stale, out], device=device)  # alive: fine (and the native path learns it)
    wp.launch(kernel, dim=1, inputs=[stale, out], device=device)
    del obj
    gc.collect()
    for _ in range(2):  # the first refusal and a repeat
        with pytest.raises(LaunchError, match=rf"argument '{name}' is the id of a wp\.{kind} that has been destroyed"):
            wp.launch(kernel, dim=1, inputs=[stale, out], device=device)
    fresh = make(device)  # may land at the same address: then it is an id again
    wp.launch(kernel, dim=1, inputs=[fresh.id, out], device=device)
    wp.synchronize_device(device)
    assert out.numpy()[0] >= 0.0


def test_a_plain_number_is_not_refused(device):
    @wp.kernel
    def take(x: wp.uint64, out: wp.array(dtype=wp.uint64)):
        out[0] = x

    out = wp.zeros(1, dtype=wp.uint64, device=device)
    mesh = _mesh(device)
    stale = mesh.id
    del mesh
    gc.collect()
    wp.launch(take, dim=1, inputs=[stale + 8, out], device=device)  # a neighbour of a retired id: a number
    assert int(out.numpy()[0]) == stale + 8
