"""wp.Volume: NanoVDB assets sampled and looked up against warp-lang on the same files; trilinear
values and gradients against NumPy references and central differences (second derivatives through
the sampled gradient too); index grids reading user arrays and their adjoints; the index <-> world
transforms of a rotated map; allocations, stores and rebuilds, and our grids checked by warp-lang's
own loader; files, aliases, feature arrays; bad input."""
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tilewarp as wp
from conftest import load_both, need_warp
from tilewarp.geometry import nanovdb as nv
from tilewarp.geometry import vdb_build as vb
from tilewarp.runtime.cuda import CaptureError

try:
    import warp

    ASSETS = Path(warp.__file__).parent / "tests" / "assets"
except ImportError:
    warp, ASSETS = None, None

THIS_FILE = os.path.abspath(__file__)
mat43d = wp.types.matrix(shape=(4, 3), dtype=wp.float64)
mat34f = wp.types.matrix(shape=(3, 4), dtype=wp.float32)
needs_assets = pytest.mark.skipif(ASSETS is None or not (ASSETS / "test_grid.nvdb").exists(),
                                  reason="the NanoVDB assets come with warp-lang's tests")


def _asset(name):
    return (ASSETS / name).read_bytes()


KERNELS = """
import WP as wp

@wp.kernel
def sample_float(vol: wp.uint64, pts: wp.array(dtype=wp.vec3), ijk: wp.array(dtype=wp.vec3i),
                 out: wp.array2d(dtype=float), grads: wp.array2d(dtype=wp.vec3), xform: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    p = pts[i]
    c = ijk[i]
    out[i, 0] = wp.volume_sample_f(vol, p, wp.Volume.LINEAR)
    out[i, 1] = wp.volume_sample(vol, p, wp.Volume.CLOSEST, dtype=float)
    out[i, 2] = wp.volume_lookup_f(vol, c[0], c[1], c[2])
    out[i, 3] = wp.volume_lookup(vol, c[0], c[1], c[2], dtype=wp.float32)
    g = wp.vec3()
    out[i, 4] = wp.volume_sample_grad_f(vol, p, wp.Volume.LINEAR, g)
    grads[i, 0] = g
    h = wp.vec3(1.0, 2.0, 3.0)
    out[i, 5] = wp.volume_sample_grad(vol, p, wp.Volume.CLOSEST, h, dtype=wp.float32)
    grads[i, 1] = h
    out[i, 6] = float(wp.volume_lookup_index(vol, c[0], c[1], c[2]))
    out[i, 7] = float(wp.volume_voxel_count(vol))
    xform[i, 0] = wp.volume_index_to_world(vol, p)
    xform[i, 1] = wp.volume_world_to_index(vol, p)
    xform[i, 2] = wp.volume_index_to_world_dir(vol, p)
    xform[i, 3] = wp.volume_world_to_index_dir(vol, p)

@wp.kernel
def sample_vec(vol: wp.uint64, pts: wp.array(dtype=wp.vec3), ijk: wp.array(dtype=wp.vec3i),
               out: wp.array2d(dtype=wp.vec3), grads: wp.array(dtype=wp.mat33)):
    i = wp.tid()
    p = pts[i]
    c = ijk[i]
    out[i, 0] = wp.volume_sample_v(vol, p, wp.Volume.LINEAR)
    out[i, 1] = wp.volume_sample(vol, p, wp.Volume.CLOSEST, dtype=wp.vec3)
    out[i, 2] = wp.volume_lookup_v(vol, c[0], c[1], c[2])
    out[i, 3] = wp.volume_lookup(vol, c[0], c[1], c[2], dtype=wp.vec3)
    g = wp.mat33()
    out[i, 4] = wp.volume_sample_grad(vol, p, wp.Volume.LINEAR, g, dtype=wp.vec3)
    grads[i] = g

@wp.kernel
def sample_int(vol: wp.uint64, pts: wp.array(dtype=wp.vec3), ijk: wp.array(dtype=wp.vec3i),
               out: wp.array2d(dtype=int)):
    i = wp.tid()
    c = ijk[i]
    out[i, 0] = wp.volume_sample_i(vol, pts[i])
    out[i, 1] = wp.volume_sample(vol, pts[i], wp.Volume.CLOSEST, dtype=wp.int32)
    out[i, 2] = wp.volume_lookup_i(vol, c[0], c[1], c[2])
    out[i, 3] = wp.volume_lookup(vol, c[0], c[1], c[2], dtype=int)

@wp.kernel
def sample_index(vol: wp.uint64, pts: wp.array(dtype=wp.vec3), ijk: wp.array(dtype=wp.vec3i),
                 data: wp.array(dtype=float), bg: float, out: wp.array2d(dtype=float), grads: wp.array(dtype=wp.vec3),
                 index: wp.array(dtype=int)):
    i = wp.tid()
    p = pts[i]
    c = ijk[i]
    out[i, 0] = wp.volume_sample_index(vol, p, wp.Volume.LINEAR, data, bg)
    g = wp.vec3()
    out[i, 1] = wp.volume_sample_grad_index(vol, p, wp.Volume.LINEAR, data, bg, g)
    grads[i] = g
    out[i, 2] = wp.volume_sample_index(vol, p, wp.Volume.CLOSEST, data, bg)
    out[i, 3] = float(wp.volume_voxel_count(vol))
    index[i] = wp.volume_lookup_index(vol, c[0], c[1], c[2])

"""


def _points(rng, n, low, high):
    pts = rng.uniform(low, high, (n, 3)).astype(np.float32)
    pts[:4] = [[0.5, -0.5, 2.5], [-1.5, 3.0, -2.0], [7.5, 7.5, -8.5], [40.0, -40.0, 3.0]]  # ties, and far out
    return pts


def _both(name, kernel, n, make_args):
    """Run ``kernel`` of the shared text in tilewarp and warp-lang on the asset ``name``; both results."""
    mods = load_both(KERNELS)
    need_warp(mods)
    results = []
    for mod in mods:
        w = mod.wp
        w.init()
        vol = w.Volume.load_from_nvdb(_asset(name), device="cpu")
        args = make_args(w, vol)
        w.launch(getattr(mod, kernel), dim=n, inputs=args, device="cpu")
        results.append([a.numpy() for a in args if isinstance(a, w.array)])
    return results


@needs_assets
@pytest.mark.parametrize("asset", ["test_grid.nvdb", "torus.nvdb"])
def test_float_grid_matches_warp(asset, rng):
    """Trilinear and closest samples, the sampled gradient, lookups, indices, the voxel count and the
    four transforms agree with warp-lang (the torus' map is a rotation: not symmetric)."""
    span = 12.0 if asset == "test_grid.nvdb" else 30.0
    pts = _points(rng, 300, -span, span)
    ijk = np.floor(pts).astype(np.int32)

    def args(w, vol):
        return [vol.id, w.array(pts, dtype=w.vec3), w.array(ijk, dtype=w.vec3i), w.zeros((300, 8), dtype=float),
                w.zeros((300, 2), dtype=w.vec3), w.zeros((300, 4), dtype=w.vec3)]

    (ours, theirs) = _both(asset, "sample_float", 300, args)
    for k, (a, b) in enumerate(zip(ours[2:], theirs[2:])):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-5, err_msg=f"output {k}")
    np.testing.assert_array_equal(ours[2][:, 5], ours[2][:, 1])  # sample_grad's value under CLOSEST
    assert not ours[3][:, 1].any()  # and its gradient: zero


@needs_assets
def test_vec_and_int_grids_match_warp(rng):
    pts = _points(rng, 200, -12.0, 12.0)
    ijk = np.floor(pts).astype(np.int32)
    (ours, theirs) = _both("test_vec_grid.nvdb", "sample_vec", 200, lambda w, vol: [
        vol.id, w.array(pts, dtype=w.vec3), w.array(ijk, dtype=w.vec3i), w.zeros((200, 5), dtype=w.vec3),
        w.zeros(200, dtype=w.mat33)])
    for k, (a, b) in enumerate(zip(ours[2:], theirs[2:])):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=5e-5, err_msg=f"output {k}")
    (ours, theirs) = _both("test_int32_grid.nvdb", "sample_int", 200, lambda w, vol: [
        vol.id, w.array(pts, dtype=w.vec3), w.array(ijk, dtype=w.vec3i), w.zeros((200, 4), dtype=int)])
    np.testing.assert_array_equal(ours[2], theirs[2])
    nearest = np.sign(pts) * np.floor(np.abs(pts) + 0.5)  # half away from zero
    inside = (np.abs(nearest) <= 10).all(axis=1)
    np.testing.assert_array_equal(ours[2][inside, 0], nearest[inside].astype(np.int64).prod(axis=1))


@needs_assets
def test_index_grid_matches_warp(rng):
    """An OnIndex grid (two grids in the file, the first one used) reads a user array."""
    voxels = wp.Volume.load_from_nvdb(_asset("test_index_grid.nvdb")).get_voxels().numpy()
    pts = (voxels[rng.integers(0, len(voxels), 200)] + rng.uniform(-1.5, 1.5, (200, 3))).astype(np.float32)
    pts[:10] *= 3.0
    ijk = np.round(pts).astype(np.int32)
    data = rng.uniform(-1.0, 1.0, 100000).astype(np.float32)

    def args(w, vol):
        n = vol.get_voxel_count()
        return [vol.id, w.array(pts, dtype=w.vec3), w.array(ijk, dtype=w.vec3i), w.array(data[:n], dtype=float),
                -3.0, w.zeros((200, 4), dtype=float), w.zeros(200, dtype=w.vec3), w.zeros(200, dtype=int)]

    (ours, theirs) = _both("test_index_grid.nvdb", "sample_index", 200, args)
    for k, (a, b) in enumerate(zip(ours[1:], theirs[1:])):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6, err_msg=f"output {k}")
    assert (ours[-1] >= 0).any() and (ours[-1] == -1).any()


@needs_assets
def test_introspection_matches_warp():
    """Tiles, voxels (in index order), counts, sizes, grid info, next grids and feature arrays."""
    for name in ("test_grid.nvdb", "test_vec_grid.nvdb", "test_index_grid.nvdb", "torus.nvdb"):
        ours = wp.Volume.load_from_nvdb(_asset(name), device="cpu")
        theirs = warp.Volume.load_from_nvdb(_asset(name), device="cpu")
        while ours is not None:
            assert ours.get_voxel_count() == theirs.get_voxel_count()
            assert ours.get_tile_count() == theirs.get_tile_count()
            assert ours.get_voxel_size() == theirs.get_voxel_size()
            np.testing.assert_array_equal(ours.get_tiles().numpy(), theirs.get_tiles().numpy())
            np.testing.assert_array_equal(ours.get_voxels().numpy(), theirs.get_voxels().numpy())
            a, b = ours.get_grid_info(), theirs.get_grid_info()
            assert (a.name, a.size_in_bytes, a.grid_index, a.grid_count, a.type_str) == \
                   (b.name, b.size_in_bytes, b.grid_index, b.grid_count, b.type_str)
            np.testing.assert_array_equal(np.array(a.transform_matrix), np.array(b.transform_matrix))
            assert ours.is_index == theirs.is_index
            assert ours.get_feature_array_count() == theirs.get_feature_array_count()
            for k in range(ours.get_feature_array_count()):
                fa, fb = ours.get_feature_array_info(k), theirs.get_feature_array_info(k)
                assert (fa.name, fa.value_size, fa.value_count, fa.type_str) == \
                       (fb.name, fb.value_size, fb.value_count, fb.type_str)
                np.testing.assert_array_equal(ours.feature_array(k).numpy(), theirs.feature_array(k).numpy())
            ours, theirs = ours.load_next_grid(), theirs.load_next_grid()
        assert theirs is None


# ---- NumPy references: trilinear values and derivatives -------------------------------------------


def _trilinear(lookup, uvw):
    """Value, gradient and mixed second derivatives of the trilinear interpolant of ``lookup(ijk)``."""
    base = np.floor(uvw)
    f = uvw - base
    value, grad, hess = 0.0, np.zeros(3), np.zeros((3, 3))
    for c in range(8):
        o = np.array([c >> 2 & 1, c >> 1 & 1, c & 1])
        w = np.where(o, f, 1.0 - f)
        s = np.where(o, 1.0, -1.0)
        v = lookup(base.astype(np.int64) + o)
        value += v * w.prod()
        for a in range(3):
            grad[a] += v * s[a] * np.prod(np.delete(w, a))
            for b in range(3):
                if a != b:
                    hess[a, b] += v * s[a] * s[b] * w[3 - a - b]
    return value, grad, hess


@wp.kernel
def loss_value_and_grad(vol: wp.uint64, pts: wp.array(dtype=wp.vec3), weights: wp.vec3, out: wp.array(dtype=float)):
    i = wp.tid()
    g = wp.vec3()
    v = wp.volume_sample_grad(vol, pts[i], wp.Volume.LINEAR, g, dtype=float)
    out[i] = v + wp.dot(weights, g)


@wp.kernel
def loss_in_loop(vol: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    # the gradient variable is rebound in a loop (a loop-carried value)
    i = wp.tid()
    g = wp.vec3()
    acc = float(0.0)
    for k in range(3):
        acc += wp.volume_sample_grad_f(vol, pts[i] + wp.vec3(0.1 * float(k), 0.0, 0.0), wp.Volume.LINEAR, g)
        acc += 0.5 * g[1]
    out[i] = acc


def _cell_points(rng, n, low, high):
    """Points away from integer planes, where the interpolant is smooth."""
    return (rng.integers(low, high, (n, 3)) + rng.uniform(0.2, 0.8, (n, 3))).astype(np.float32)


def _float_volume(device, rng):
    """A float grid over [-16, 16)^3 holding random values."""
    tiles = np.array([[i, j, k] for i in (-16, -8, 0, 8) for j in (-16, -8, 0, 8) for k in (-16, -8, 0, 8)], np.int32)
    vol = wp.Volume.allocate_by_tiles(wp.array(tiles, dtype=wp.int32, device=device), voxel_size=0.5,
                                      bg_value=0.25, device=device)
    ijk = vol.get_voxels().numpy()
    values = rng.uniform(-2.0, 2.0, len(ijk)).astype(np.float32)
    wp.launch(store_values, dim=len(ijk), inputs=[vol.id, wp.array(ijk, dtype=wp.vec3i, device=device),
                                                   wp.array(values, dtype=float, device=device)], device=device)
    table = {tuple(c): v for c, v in zip(ijk.tolist(), values.tolist())}
    return vol, lambda c: table.get(tuple(int(x) for x in c), 0.25)


@wp.kernel
def store_values(vol: wp.uint64, ijk: wp.array(dtype=wp.vec3i), values: wp.array(dtype=float)):
    i = wp.tid()
    c = ijk[i]
    wp.volume_store(vol, c[0], c[1], c[2], values[i])


def test_trilinear_gradients_against_numpy(device, rng):
    """The value, the sampled gradient, and the tape's gradient of value + w . gradient (which needs
    the mixed second derivatives) match a float64 trilinear reference; the loop-carried form too."""
    vol, lookup = _float_volume(device, rng)
    pts = _cell_points(rng, 64, -17, 16)
    weights = np.array([0.3, -0.7, 0.2])
    x = wp.array(pts, dtype=wp.vec3, device=device, requires_grad=True)
    out = wp.zeros(len(pts), dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(loss_value_and_grad, dim=len(pts), inputs=[vol.id, x, wp.vec3(*weights), out], device=device)
    tape.backward(grads={out: wp.ones(len(pts), dtype=float, device=device)})
    refs = [_trilinear(lookup, p.astype(np.float64)) for p in pts]
    np.testing.assert_allclose(out.numpy(), [v + weights @ g for v, g, _ in refs], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), [g + h @ weights for _, g, h in refs], rtol=1e-4, atol=1e-4)

    x2 = wp.array(pts, dtype=wp.vec3, device=device, requires_grad=True)
    out2 = wp.zeros(len(pts), dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(loss_in_loop, dim=len(pts), inputs=[vol.id, x2, out2], device=device)
    tape.backward(grads={out2: wp.ones(len(pts), dtype=float, device=device)})
    want_v, want_g = np.zeros(len(pts)), np.zeros((len(pts), 3))
    for k in range(3):
        for n, p in enumerate(pts):
            v, g, h = _trilinear(lookup, p.astype(np.float64) + [np.float32(0.1) * k, 0.0, 0.0])
            want_v[n] += v + 0.5 * g[1]
            want_g[n] += g + 0.5 * h[1]
    np.testing.assert_allclose(out2.numpy(), want_v, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(x2.grad.numpy(), want_g, rtol=1e-4, atol=1e-3)


# ---- index grids: values from arrays, and their adjoints -------------------------------------------


@wp.kernel
def index_loss(vol: wp.uint64, pts: wp.array(dtype=wp.vec3), data: wp.array(dtype=wp.vec4d),
               bg: wp.array(dtype=wp.vec4d), out: wp.array(dtype=wp.float64)):
    i = wp.tid()
    g = mat43d()
    v = wp.volume_sample_grad_index(vol, pts[i], wp.Volume.LINEAR, data, bg[0], g)
    out[i] = v[0] - 2.0 * v[3] + g[1, 0] + 0.5 * g[2, 2]


def test_index_grid_adjoints_against_finite_differences(device, rng):
    """vec4d voxel data through an OnIndex grid: the gradients to uvw, to every used element of the
    data and to the background equal central differences (the loss is linear in the data)."""
    voxels = rng.integers(-12, 12, (900, 3)).astype(np.int32)
    vol = wp.Volume.allocate_by_voxels(wp.array(voxels, dtype=wp.int32, device=device), voxel_size=1.0,
                                       device=device)
    assert vol.is_index and vol.get_voxel_count() == len(np.unique(voxels, axis=0))
    data_np = rng.uniform(-1.0, 1.0, (vol.get_voxel_count(), 4))
    pts = _cell_points(rng, 40, -13, 12)

    def run(points, data, bg, grad=False):
        x = wp.array(points, dtype=wp.vec3, device=device, requires_grad=grad)
        d = wp.array(data, dtype=wp.vec4d, device=device, requires_grad=grad)
        b = wp.array([bg], dtype=wp.vec4d, device=device, requires_grad=grad)
        out = wp.zeros(len(points), dtype=wp.float64, device=device, requires_grad=grad)
        tape = wp.Tape()
        with tape:
            wp.launch(index_loss, dim=len(points), inputs=[vol.id, x, d, b, out], device=device)
        if grad:
            tape.backward(grads={out: wp.ones(len(points), dtype=wp.float64, device=device)})
            return out.numpy(), x.grad.numpy(), d.grad.numpy(), b.grad.numpy()[0]
        return out.numpy()

    bg = np.array([0.5, -1.0, 2.0, 0.25])
    base, gx, gd, gb = run(pts, data_np, bg, grad=True)
    eps = 1e-2
    for a in range(3):
        step = np.zeros(3, np.float32)
        step[a] = eps
        fd = (run(pts + step, data_np, bg) - run(pts - step, data_np, bg)) / (2 * eps)
        np.testing.assert_allclose(gx[:, a], fd, rtol=1e-3, atol=2e-3)
    used = np.flatnonzero(np.abs(gd).sum(axis=1))
    for e in rng.choice(used, 5, replace=False):
        for c in range(4):
            bumped = data_np.copy()
            bumped[e, c] += 1.0
            np.testing.assert_allclose(gd[e, c], (run(pts, bumped, bg) - base).sum(), rtol=1e-9, atol=1e-9)
    for c in range(4):
        bumped = bg.copy()
        bumped[c] += 1.0
        np.testing.assert_allclose(gb[c], (run(pts, data_np, bumped) - base).sum(), rtol=1e-9, atol=1e-9)


# ---- transforms -------------------------------------------------------------------------------------


@wp.kernel
def transform_loss(vol: wp.uint64, pts: wp.array(dtype=wp.vec3), w: wp.vec3, out: wp.array(dtype=float)):
    i = wp.tid()
    p = pts[i]
    out[i] = (wp.dot(w, wp.volume_index_to_world(vol, p)) + 2.0 * wp.dot(w, wp.volume_world_to_index(vol, p))
              - wp.dot(w, wp.volume_index_to_world_dir(vol, p)) + 0.5 * wp.dot(w, wp.volume_world_to_index_dir(vol, p)))


def test_transforms_and_their_gradients(device, rng):
    """A rotated, scaled, translated map: the transforms against NumPy, their gradients (transposed
    maps; Warp 1.19 applies the untransposed ones) against the analytic ones."""
    m = np.array([[0.0, -0.5, 0.0], [0.25, 0.0, 0.0], [0.0, 0.0, 2.0]])
    t = np.array([1.0, -2.0, 3.5])
    vol = wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0]], dtype=wp.int32, device=device), transform=m,
                                       translation=t, device=device)
    np.testing.assert_allclose(vol.get_voxel_size(), m @ np.ones(3))
    pts = rng.uniform(-5, 5, (32, 3)).astype(np.float32)
    out = wp.zeros((32, 4), dtype=wp.vec3d, device=device)
    wp.launch(transforms_double_tw, dim=32, inputs=[vol.id, wp.array(pts, dtype=wp.vec3d, device=device), out],
              device=device)
    inv = np.linalg.inv(m)
    p = pts.astype(np.float64)
    for k, want in enumerate((p @ m.T + t, (p - t) @ inv.T, p @ m.T, p @ inv.T)):
        np.testing.assert_allclose(out.numpy()[:, k], want, rtol=1e-6, atol=1e-6)
    w = np.array([0.3, -1.0, 2.0])
    x = wp.array(pts, dtype=wp.vec3, device=device, requires_grad=True)
    loss = wp.zeros(32, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(transform_loss, dim=32, inputs=[vol.id, x, wp.vec3(*w), loss], device=device)
    tape.backward(grads={loss: wp.ones(32, dtype=float, device=device)})
    want = m.T @ w + 2.0 * inv.T @ w - m.T @ w + 0.5 * inv.T @ w
    np.testing.assert_allclose(x.grad.numpy(), np.tile(want, (32, 1)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(loss.numpy(), p @ (m.T @ w) + w @ t + 2.0 * (p - t) @ (inv.T @ w) - p @ (m.T @ w)
                               + 0.5 * p @ (inv.T @ w), rtol=1e-5, atol=1e-4)


@wp.kernel
def transforms_double_tw(vol: wp.uint64, pts: wp.array(dtype=wp.vec3d), out: wp.array2d(dtype=wp.vec3d)):
    i = wp.tid()
    out[i, 0] = wp.volume_index_to_world(vol, pts[i])
    out[i, 1] = wp.volume_world_to_index(vol, pts[i])
    out[i, 2] = wp.volume_index_to_world_dir(vol, pts[i])
    out[i, 3] = wp.volume_world_to_index_dir(vol, pts[i])


# ---- allocation, stores, rebuilds ------------------------------------------------------------------


@wp.kernel
def store_lookup(vol: wp.uint64, ijk: wp.array(dtype=wp.vec3i), values: wp.array(dtype=Any),
                 out: wp.array(dtype=Any)):
    i = wp.tid()
    c = ijk[i]
    wp.volume_store(vol, c[0], c[1], c[2], values[i])
    out[i] = wp.volume_lookup(vol, c[0], c[1], c[2], dtype=values.dtype)


@pytest.mark.parametrize("bg, dtype", [(wp.float64(-7.5), wp.float64), ((1.0, -2.0, 3.0, 4.0), wp.vec4),
                                       (wp.int64(-3), wp.int64)])
def test_allocate_store_lookup_round_trip(device, rng, bg, dtype, tmp_path):
    """Stores land in allocated leaves (negative coordinates too) and read back; stores outside any
    leaf are dropped and read the background; warp-lang loads our grid (its loader checks every node
    reference) and reads the same values."""
    tiles = rng.integers(-600, 600, (40, 3)).astype(np.int32)
    vol = wp.Volume.allocate_by_tiles(wp.array(tiles, dtype=wp.int32, device=device), voxel_size=0.25,
                                      bg_value=bg, translation=(1.0, 2.0, 3.0), device=device)
    assert vol.dtype is dtype and not vol.is_index
    want_tiles = np.unique(tiles & ~7, axis=0)
    np.testing.assert_array_equal(np.unique(vol.get_tiles().numpy(), axis=0), want_tiles)
    assert vol.get_voxel_count() == 512 * len(want_tiles)
    inside = (want_tiles[rng.integers(0, len(want_tiles), 200)] + rng.integers(0, 8, (200, 3))).astype(np.int32)
    ijk = np.r_[np.unique(inside, axis=0), [[5000, 5000, 5000], [-5000, 0, 0]]].astype(np.int32)
    shape = (len(ijk), *getattr(dtype, "_wp_shape_", ()))
    values = rng.integers(-100, 100, shape).astype(T_NP[dtype])
    out = wp.zeros(len(ijk), dtype=dtype, device=device)
    wp.launch(store_lookup, dim=len(ijk), inputs=[vol.id, wp.array(ijk, dtype=wp.vec3i, device=device),
                                                   wp.array(values, dtype=dtype, device=device), out], device=device)
    got = out.numpy()
    np.testing.assert_array_equal(got[:-2], values[:-2])
    np.testing.assert_array_equal(got[-2:], np.broadcast_to(np.asarray(bg.value if hasattr(bg, "value") else bg,
                                                                       T_NP[dtype]), got[-2:].shape))
    if warp is not None:
        path = str(tmp_path / "ours.nvdb")
        vol.save_to_nvdb(path, codec="zip")
        theirs = warp.Volume.load_from_nvdb(open(path, "rb").read(), device="cpu")
        np.testing.assert_array_equal(theirs.array().numpy(), vol.array().numpy())
        assert theirs.get_grid_info().type_str == vol.get_grid_info().type_str


T_NP = {wp.float64: np.float64, wp.vec4: np.float32, wp.int64: np.int64}


def test_allocate_by_voxels_world_space(device, rng):
    """World-space points round to their voxels; each voxel's index is its position in get_voxels()."""
    pts = rng.uniform(-3.0, 3.0, (500, 3)).astype(np.float32)
    vol = wp.Volume.allocate_by_voxels(wp.array(pts, dtype=wp.vec3, device=device), voxel_size=(0.25, 0.5, 0.125),
                                       translation=(0.5, 0.0, -1.0), device=device)
    want = np.unique(np.floor((pts - np.float32([0.5, 0.0, -1.0])) / np.float32([0.25, 0.5, 0.125]) + 0.5)
                     .astype(np.int32), axis=0)
    voxels = vol.get_voxels().numpy()
    np.testing.assert_array_equal(np.unique(voxels, axis=0), want)
    assert vol.get_voxel_count() == len(want) == vol.get_active_stats().voxel_count
    index = wp.zeros(len(voxels), dtype=int, device=device)
    wp.launch(lookup_indices, dim=len(voxels), inputs=[vol.id, wp.array(voxels, dtype=wp.vec3i, device=device),
                                                        index], device=device)
    np.testing.assert_array_equal(index.numpy(), np.arange(len(voxels)))
    if warp is not None:  # warp-lang numbers the same voxels the same way
        theirs = warp.Volume.allocate_by_voxels(warp.array(pts, dtype=warp.vec3, device="cpu"),
                                                voxel_size=(0.25, 0.5, 0.125), translation=(0.5, 0.0, -1.0),
                                                device="cpu")
        np.testing.assert_array_equal(theirs.get_voxels().numpy(), voxels)


@wp.kernel
def lookup_indices(vol: wp.uint64, ijk: wp.array(dtype=wp.vec3i), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.volume_lookup_index(vol, ijk[i][0], ijk[i][1], ijk[i][2])


def test_rebuild_in_place(device):
    """A rebuildable volume keeps its id and size, reports what overflows its capacities and keeps
    the leading nodes that fit; masked points are ignored."""
    status = wp.zeros(1, dtype=wp.uint32, device=device)
    tiles = wp.array([[0, 0, 0]], dtype=wp.int32, device=device)
    vol = wp.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=2.5, device=device, max_tiles=3,
                                      status=status)
    ident, size = vol.id, vol.get_grid_info().size_in_bytes
    assert vol.get_rebuild_info() == wp.Volume.RebuildInfo("tiles", 3 * 512, 3, 3, 3)
    more = wp.array([[8, 0, 0], [-8, 0, 0], [0, 9000, 0], [0, 16, 0]], dtype=wp.int32, device=device)
    vol.rebuild(more, status=status, point_mask=wp.array([1, 1, 1, 0], dtype=wp.int32, device=device))
    assert vol.id == ident and vol.get_grid_info().size_in_bytes == size
    assert status.numpy()[0] == wp.Volume.REBUILD_SUCCESS
    assert vol.get_active_stats() == wp.Volume.ActiveStats(3 * 512, 3, 3, 3)
    got = wp.full((3, 3), -1, dtype=wp.int32, device=device)
    vol.get_tiles(out=got)
    np.testing.assert_array_equal(np.unique(got.numpy(), axis=0), [[-8, 0, 0], [0, 9000, 0], [8, 0, 0]])
    vol.rebuild(wp.array([[0, 0, 0], [8, 0, 0], [16, 0, 0], [24, 0, 0]], dtype=wp.int32, device=device),
                status=status)
    assert status.numpy()[0] & wp.Volume.REBUILD_LEAF_CAPACITY_EXCEEDED
    assert vol.get_active_stats().leaf_node_count == 3
    out = wp.zeros(1, dtype=float, device=device)
    wp.launch(lookup_one, dim=1, inputs=[vol.id, wp.vec3i(16, 7, 7), out], device=device)
    assert out.numpy()[0] == 2.5  # rebuilt leaves hold the background


def _topology(kind, ijk):
    """The NumPy builder's topology of voxels: their leaves, with all voxels (tiles) or theirs active."""
    ijk = np.unique(ijk.reshape(-1, 3), axis=0)
    origins, leaf = np.unique(ijk & np.int32(~7), axis=0, return_inverse=True)
    if kind == "tiles":
        return vb.Topology(origins, np.full((len(origins), 8), np.uint64(2 ** 64 - 1)))
    local = (ijk & 7).astype(np.int64)
    bit = local[:, 0] << 6 | local[:, 1] << 3 | local[:, 2]
    masks = np.zeros((len(origins), 8), np.uint64)
    np.bitwise_or.at(masks, (leaf.reshape(-1), bit >> 6), np.left_shift(np.uint64(1), (bit & 63).astype(np.uint64)))
    return vb.Topology(origins, masks)


def _host_build(vol, ijk, mask):
    """What the NumPy builder writes for ``vol``'s rebuild from index-space ``ijk``: the grid of the
    leading nodes that fit the capacities, and the REBUILD_* flags of what did not."""
    a = vol._alloc
    ijk = ijk if mask is None else ijk[mask != 0]
    topo = _topology(a["kind"], ijk)
    cap, most = a["capacity"], a["voxels"]
    n, voxels = topo.counts, topo.word_counts.sum(axis=1)
    flags = (n.leaf > cap.leaf) | (n.lower > cap.lower) << 1 | (n.upper > cap.upper) << 2
    flags |= (most is not None and voxels.sum() > most) << 3
    keep = (np.arange(n.leaf) < cap.leaf) & (topo.leaf_lower < cap.lower)
    keep &= topo.lower_upper[topo.leaf_lower] < cap.upper if n.leaf else keep
    keep &= np.cumsum(voxels) <= (2 ** 62 if most is None else most)
    k = n.leaf if keep.all() else int(np.argmin(keep))
    return vb.build(vb.Topology(topo.origins[:k], topo.masks[:k]), a["code"], a["background"], a["map"], cap), flags


def _check_exact(kind, ijk, bg, device):
    pts = wp.array(ijk, dtype=wp.int32, device=device)
    vol = (wp.Volume.allocate_by_tiles(pts, 0.5, bg_value=bg, device=device) if kind == "tiles"
           else wp.Volume.allocate_by_voxels(pts, 0.5, device=device))
    a = vol._alloc
    want = vb.build(_topology(kind, ijk), a["code"], a["background"], a["map"])
    np.testing.assert_array_equal(vol.array().numpy(), want)
    assert vol.get_voxel_count() == (nv.tree_header(want)["voxel_count"] if kind == "voxels" else 512 * len(
        np.unique(ijk & ~7, axis=0)))


def _in_use(vol, grid):
    """The bytes of ``grid`` a reader uses: headers, root tiles and nodes up to the tree's counts."""
    L, cap, tree = nv.LAYOUTS[vol._alloc["code"]], vol._alloc["capacity"], nv.tree_header(grid)
    root = nv.GRID_SIZE + nv.TREE_SIZE
    spans = [(0, root + L.root_size, 1), (root + L.root_size, L.tile_size, int(tree["upper_count"]))]
    start = root + L.root_size + cap.upper * L.tile_size
    for size, count, used in ((L.upper_size, cap.upper, "upper_count"), (L.lower_size, cap.lower, "lower_count"),
                              (L.leaf_size, cap.leaf, "leaf_count")):
        spans.append((start, size, int(tree[used])))
        start += size * count
    mask = np.zeros(grid.size, bool)
    for at, size, count in spans:
        mask[at:at + size * count] = True
    return mask


@pytest.mark.parametrize("kind", ["tiles", "voxels"])
def test_rebuild_on_the_device_writes_the_host_build(device, rng, kind):
    """Rebuildable volumes are built by kernels on their device: every byte a reader uses equals what
    the NumPy builder writes for the same points cut to the capacities, with the same status flags.
    Random points (index and world space, duplicates, masked), value and index grids, capacities
    that fit and that overflow, each rebuild over the previous one."""
    backgrounds = [1.5, 7, wp.vec3(1, 2, 3), wp.float64(2.5), None, wp.vec4d(1, 2, 3, 4)]
    status = wp.zeros(1, dtype=wp.uint32, device=device)
    for trial in range(6):
        tight = trial % 2 == 0
        caps = [int(c) for c in rng.integers(1, 9, 4)] if tight else [4000, 400, 60, 30]
        first = wp.array(rng.integers(-50, 50, (5, 3)).astype(np.int32), dtype=wp.int32, device=device)
        if kind == "tiles":
            vol = wp.Volume.allocate_by_tiles(first, 0.5, bg_value=backgrounds[trial], device=device, status=status,
                                              max_tiles=caps[1], max_lower_nodes=caps[2], max_upper_nodes=caps[3])
        else:
            vol = wp.Volume.allocate_by_voxels(first, 0.5, device=device, status=status, max_active_voxels=caps[0],
                                               max_leaf_nodes=caps[1], max_lower_nodes=caps[2], max_upper_nodes=caps[3])
        for again in range(2):
            n = int(rng.integers(0, 50))
            spread = [20, 300, 9000][(trial + again) % 3]
            ijk = rng.integers(-spread, spread, (n, 3)).astype(np.int32)
            ijk[n // 2:] = ijk[:n - n // 2]  # duplicates
            mask = (rng.random(n) < 0.7).astype(np.int32) if again else None
            wp_mask = None if mask is None else wp.array(mask, dtype=wp.int32, device=device)
            if trial % 3 == 1:  # world space: points near voxel centres of a 0.5 grid
                world = ijk.astype(np.float32) * 0.5 + rng.uniform(-0.2, 0.2, ijk.shape).astype(np.float32)
                vol.rebuild(wp.array(world, dtype=wp.vec3, device=device), status=status, point_mask=wp_mask)
            else:
                vol.rebuild(wp.array(ijk, dtype=wp.int32, device=device), status=status, point_mask=wp_mask)
            want, flags = _host_build(vol, ijk, mask)
            if mask is None:  # an exact grid of the same points: the whole buffer, sized by them
                _check_exact(kind, ijk, backgrounds[trial], device)
            got = vol.array().numpy()
            used = _in_use(vol, want)
            assert got.size == want.size
            np.testing.assert_array_equal(got[used], want[used], err_msg=f"trial {trial}.{again}")
            assert int(status.numpy()[0]) == flags
            tree = nv.tree_header(want)
            assert vol.get_active_stats()[1:] == (tree["leaf_count"], tree["lower_count"], tree["upper_count"])


def test_allocate_and_rebuild_inside_a_capture(device):
    """A rebuildable allocation and a rebuild captured in a graph run again at each replay, reading
    the points' contents then; an exact allocation inside a CUDA capture is refused by name."""
    if device.startswith("cuda") and not wp.is_mempool_enabled(device):
        pytest.skip("allocations inside a CUDA capture need the memory pool")
    pts = wp.array([[0, 0, 0], [8, 0, 0]], dtype=wp.int32, device=device)
    status = wp.zeros(1, dtype=wp.uint32, device=device)
    with wp.ScopedCapture(device=device) as capture:
        vol = wp.Volume.allocate_by_tiles(pts, voxel_size=1.0, bg_value=2.0, device=device, max_tiles=4,
                                          max_lower_nodes=4, max_upper_nodes=4, status=status)
    for layout, leaves in (([[0, 0, 0], [8, 0, 0]], 2), ([[16, 0, 0], [16, 0, 0]], 1), ([[0, 0, 0], [0, 0, 4096]], 2)):
        pts.assign(np.array(layout, np.int32))
        wp.capture_launch(capture.graph)
        tiles = vol.get_tiles().numpy()[:leaves]
        np.testing.assert_array_equal(np.unique(tiles, axis=0), np.unique(np.array(layout) & ~7, axis=0))
        assert vol.get_active_stats().leaf_node_count == leaves and status.numpy()[0] == 0
    pts.assign(np.array([[0, 0, 0], [0, 0, 9000]], np.int32))
    with wp.ScopedCapture(device=device) as again:
        vol.rebuild(pts, status=status)
    wp.capture_launch(again.graph)
    assert vol.get_active_stats().upper_node_count == 2
    if device.startswith("cuda"):
        with pytest.raises(CaptureError, match="allocate_by_voxels.*rebuildable=True"):
            with wp.ScopedCapture(device=device):
                wp.Volume.allocate_by_voxels(pts, voxel_size=1.0, device=device)


def test_repeated_rebuilds_of_the_same_arrays(device, rng):
    """The same points array rebuilt every frame with new contents (on CUDA the third rebuild on is
    one replayed graph): each grid is what the NumPy builder writes, the status each frame's."""
    status = wp.zeros(1, dtype=wp.uint32, device=device)
    pts = wp.zeros((40, 3), dtype=wp.int32, device=device)
    vol = wp.Volume.allocate_by_voxels(pts, 1.0, device=device, max_active_voxels=30, max_leaf_nodes=20,
                                       max_lower_nodes=6, max_upper_nodes=3, status=status)
    for frame in range(6):
        ijk = rng.integers(-[100, 5000][frame % 2], 100, (40, 3)).astype(np.int32)
        pts.assign(ijk)
        vol.rebuild(pts, status=status)
        want, flags = _host_build(vol, ijk, None)
        used = _in_use(vol, want)
        np.testing.assert_array_equal(vol.array().numpy()[used], want[used], err_msg=f"frame {frame}")
        assert int(status.numpy()[0]) == flags
    if device.startswith("cuda") and wp.is_mempool_enabled(device):
        assert vol._replay.graphs >= 1


@wp.kernel
def lookup_one(vol: wp.uint64, c: wp.vec3i, out: wp.array(dtype=float)):
    out[0] = wp.volume_lookup_f(vol, c[0], c[1], c[2])


def test_load_from_numpy_samples_the_dense_field(device, rng):
    """A dense block sampled in world space equals the NumPy trilinear interpolation of the block."""
    dense = rng.uniform(-1, 1, (11, 9, 10)).astype(np.float32)
    lo, size = np.array([-1.0, 0.5, 2.0]), 0.2
    vol = wp.Volume.load_from_numpy(dense, lo, size, bg_value=0.0, device=device)
    idx = rng.uniform(0.0, [9.99, 7.99, 8.99], (50, 3))
    world = (lo + idx * size).astype(np.float32)
    out = wp.zeros(50, dtype=float, device=device)
    wp.launch(sample_world, dim=50, inputs=[vol.id, wp.array(world, dtype=wp.vec3, device=device), out],
              device=device)

    def lookup(c):
        return float(dense[tuple(c)]) if (c >= 0).all() and (c < dense.shape).all() else 0.0

    uvw = (world.astype(np.float64) - lo) / size
    np.testing.assert_allclose(out.numpy(), [_trilinear(lookup, u)[0] for u in uvw], rtol=1e-4, atol=1e-4)


@wp.kernel
def sample_world(vol: wp.uint64, xyz: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.volume_sample(vol, wp.volume_world_to_index(vol, xyz[i]), wp.Volume.LINEAR, dtype=float)


# ---- files and addresses ---------------------------------------------------------------------------


@needs_assets
def test_file_round_trip_and_aliases(tmp_path):
    vol = wp.Volume.load_from_nvdb(_asset("test_index_grid.nvdb"), device="cpu")
    for codec in ("none", "zip"):
        path = str(tmp_path / f"grid_{codec}.nvdb")
        assert vol.save_to_nvdb(path, codec=codec) == path
        again = wp.Volume.load_from_nvdb(open(path, "rb"), device="cpu")
        np.testing.assert_array_equal(again.array().numpy(), vol.array().numpy())
    second = vol.load_next_grid()
    assert second.get_grid_info().grid_index == 1 and second.load_next_grid() is None
    with pytest.raises(RuntimeError, match="aliased"):
        second.save_to_nvdb(str(tmp_path / "x.nvdb"))
    with pytest.raises(RuntimeError, match="codec"):
        vol.save_to_nvdb(str(tmp_path / "x.nvdb"), codec="lz4")
    with pytest.raises(RuntimeError, match="already"):
        wp.Volume.load_from_address(vol.id)
    memory = wp.array(vol.array().numpy(), dtype=wp.uint8)  # a grid in memory no Volume owns
    alias = wp.Volume.load_from_address(memory.ptr, device="cpu")  # the grid's own size
    with pytest.raises(RuntimeError, match="already"):
        wp.Volume.load_from_address(memory.ptr)
    assert alias.get_grid_info().size_in_bytes == vol.get_grid_info().size_in_bytes
    assert alias.get_voxel_count() == vol.get_voxel_count()
    features = vol.feature_array(0, dtype=wp.uint64).numpy()
    np.testing.assert_array_equal(features[:4], [3, vol.get_voxel_count(), 2, 3])  # fVDB's ndim and shape


# ---- bad input -------------------------------------------------------------------------------------


def _grid_bytes():
    vol = wp.Volume.allocate_by_voxels(wp.array([[0, 0, 0], [9, 300, -5]], dtype=wp.int32), voxel_size=1.0)
    return vol.array().numpy().copy()


def _file(grid):
    meta = bytearray(176)
    struct.pack_into("<QQ", meta, 0, len(grid), len(grid))
    struct.pack_into("<I", meta, 136, 1)
    return struct.pack("<QIHH", 0x304244566F6E614E, 32 << 21, 1, 0) + bytes(meta) + b"\0" + bytes(grid)


def test_bad_files_and_buffers():
    grid = _grid_bytes()
    wp.Volume.load_from_nvdb(_file(grid))  # the unmodified grid loads
    with pytest.raises(RuntimeError, match="signature"):
        wp.Volume.load_from_nvdb(b"not a nanovdb file at all")
    with pytest.raises(RuntimeError, match="Unsupported NanoVDB version"):
        wp.Volume.load_from_nvdb(struct.pack("<QIHH", 0x304244566F6E614E, 31 << 21, 1, 0))
    with pytest.raises(RuntimeError, match="Truncated"):
        wp.Volume.load_from_nvdb(_file(grid)[:-100])
    tree = 672
    leaf_offset = struct.unpack_from("<Q", grid, tree)[0]
    bad = grid.copy()
    struct.pack_into("<Q", bad, tree, leaf_offset + 8)  # leaves off their alignment
    with pytest.raises(RuntimeError, match="Invalid NanoVDB grid structure"):
        wp.Volume.load_from_nvdb(_file(bad))
    bad = grid.copy()
    root = tree + struct.unpack_from("<Q", grid, tree + 24)[0]
    struct.pack_into("<q", bad, root + 96 + 8, 24)  # the first root tile (after 96 bytes) points inside the root
    with pytest.raises(RuntimeError, match="root tile"):
        wp.Volume.load_from_nvdb(_file(bad))
    with pytest.raises(RuntimeError, match="root tile"):  # a buffer gets the same checks
        wp.Volume(wp.array(bad, dtype=wp.uint8))
    with pytest.raises(TypeError, match="wp.array of uint8"):
        wp.Volume(grid)
    with pytest.raises(RuntimeError, match="cannot hold"):
        wp.Volume(wp.array(grid[:100], dtype=wp.uint8))
    bad = grid.copy()
    bad[40:296] = ord("A")  # an unterminated name
    with pytest.raises(RuntimeError, match="name"):
        wp.Volume(wp.array(bad, dtype=wp.uint8))
    with pytest.raises(RuntimeError, match="pointer"):
        wp.Volume.load_from_address(0)


def test_bad_allocation_arguments():
    pts = wp.array([[0, 0, 0]], dtype=wp.int32)
    with pytest.raises(ValueError, match="positive"):
        wp.Volume.allocate_by_tiles(pts, voxel_size=-1.0)
    with pytest.raises(ValueError, match="3-element"):
        wp.Volume.allocate([0, 0, 0], [8, 8, 8], voxel_size=(1.0, 2.0))
    with pytest.raises(TypeError, match="voxel_size"):
        wp.Volume.allocate_by_tiles(pts, voxel_size="1")
    with pytest.raises(ValueError, match="Only one"):
        wp.Volume.allocate_by_tiles(pts, voxel_size=1.0, transform=np.eye(3))
    with pytest.raises(TypeError, match="Unsupported bg_value"):
        wp.Volume.allocate_by_tiles(pts, voxel_size=1.0, bg_value=wp.vec2(1.0, 2.0))
    with pytest.raises(RuntimeError, match="tile_points"):
        wp.Volume.allocate_by_tiles(wp.array([[0.0, 0.0]], dtype=wp.float32), voxel_size=1.0)
    with pytest.raises(RuntimeError, match="voxel_points"):
        wp.Volume.allocate_by_voxels(wp.array([1, 2, 3], dtype=wp.int64), voxel_size=1.0)
    with pytest.raises(ValueError, match="max_tiles"):
        wp.Volume.allocate_by_tiles(pts, voxel_size=1.0, max_tiles=0)
    with pytest.raises(RuntimeError, match="status"):
        wp.Volume.allocate_by_tiles(pts, voxel_size=1.0, rebuildable=True, status=wp.zeros(1, dtype=int))
    with pytest.raises(RuntimeError, match="point_mask"):
        wp.Volume.allocate_by_voxels(pts, voxel_size=1.0, point_mask=wp.zeros(1, dtype=float))
    with pytest.raises(RuntimeError, match="not rebuildable"):
        wp.Volume.allocate_by_voxels(pts, voxel_size=1.0).rebuild(pts)
    vol = wp.Volume.allocate_by_voxels(pts, voxel_size=1.0)
    with pytest.raises(RuntimeError, match="rows"):
        vol.get_voxels(out=wp.zeros((0, 3), dtype=wp.int32))
    with pytest.raises(RuntimeError, match="vec3i"):
        vol.get_tiles(out=wp.zeros((4, 3), dtype=wp.float32))
    with pytest.raises(RuntimeError, match="Invalid feature array"):
        vol.get_feature_array_info(0)


@wp.kernel
def k_bad_dtype(vol: wp.uint64, out: wp.array(dtype=float)):
    out[0] = wp.volume_lookup(vol, 0, 0, 0, dtype=wp.vec2)[0]  # <- error


@wp.kernel
def k_bad_mode(vol: wp.uint64, out: wp.array(dtype=float)):
    out[0] = wp.volume_sample_f(vol, wp.vec3(0.0), 2)  # <- error


@wp.kernel
def k_linear_int(vol: wp.uint64, out: wp.array(dtype=int)):
    out[0] = wp.volume_sample(vol, wp.vec3(0.0), wp.Volume.LINEAR, dtype=wp.int32)  # <- error


@wp.kernel
def k_transposed_grad(vol: wp.uint64, out: wp.array(dtype=wp.vec4)):
    g = mat34f()
    out[0] = wp.volume_sample_grad(vol, wp.vec3(0.0), wp.Volume.LINEAR, g, dtype=wp.vec4)  # <- error


@wp.kernel
def k_background_type(vol: wp.uint64, data: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    out[0] = wp.volume_sample_index(vol, wp.vec3(0.0), wp.Volume.LINEAR, data, 1.0)  # <- error


@wp.kernel
def k_grad_into_element(vol: wp.uint64, out: wp.array(dtype=wp.vec3)):
    wp.volume_sample_grad(vol, wp.vec3(0.0), wp.Volume.LINEAR, out[0], dtype=float)  # <- error


@wp.kernel
def k_uvw_double(vol: wp.uint64, out: wp.array(dtype=float)):
    out[0] = wp.volume_sample_f(vol, wp.vec3d(0.0), wp.Volume.LINEAR)  # <- error


@pytest.mark.parametrize("kernel, cls, fragment", [
    (k_bad_dtype, wp.KernelTypeError, "unsupported volume type `vec2f`"),
    (k_bad_mode, wp.KernelValueError, "sampling_mode"),
    (k_linear_int, wp.KernelTypeError, "CLOSEST"),
    (k_transposed_grad, wp.KernelTypeError, "Incompatible gradient type, expected mat43f, got mat34f"),
    (k_background_type, wp.KernelTypeError, "same dtype"),
    (k_grad_into_element, wp.KernelTypeError, "local variable"),
    (k_uvw_double, wp.KernelTypeError, "vec3 (float32)"),
])
def test_kernel_errors_name_the_line(kernel, cls, fragment):
    import inspect

    lines, first = inspect.getsourcelines(kernel)
    line = first + next(k for k, text in enumerate(lines) if "# <- error" in text)
    out = wp.zeros(1, dtype=int if kernel is k_linear_int else float)
    inputs = [wp.uint64(0), out]
    if kernel in (k_transposed_grad, k_grad_into_element, k_background_type):
        vec = {k_transposed_grad: wp.vec4, k_grad_into_element: wp.vec3, k_background_type: wp.vec3}[kernel]
        inputs = [wp.uint64(0), wp.zeros(1, dtype=vec)] + ([wp.zeros(1, dtype=vec)] if kernel is k_background_type
                                                           else [])
    with pytest.raises(cls) as info:
        wp.launch(kernel, dim=1, inputs=inputs, device="cpu")
    msg = str(info.value)
    assert f"{THIS_FILE}:{line}:" in msg and fragment in msg, msg


@wp.kernel
def store_float(vol: wp.uint64, x: wp.array(dtype=float)):
    wp.volume_store(vol, 0, 0, 0, x[0] * 2.0)


def test_store_gradient_is_refused_not_zero():
    """The stored value's gradient would be lost: the backward pass raises instead of returning 0."""
    vol = wp.Volume.allocate_by_tiles(wp.array([[0, 0, 0]], dtype=wp.int32), voxel_size=1.0, bg_value=0.0)
    x = wp.ones(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(store_float, dim=1, inputs=[vol.id, x])
    with pytest.raises(wp.AutodiffError, match="volume_store"):
        tape.backward(grads={x: wp.ones(1, dtype=float)})


@wp.kernel
def lookup_as_int(vol: wp.uint64, out: wp.array(dtype=int)):
    out[0] = wp.volume_lookup_i(vol, 0, 0, 0)


def test_type_mismatch_reads_zero_and_debug_reports_it(monkeypatch):
    """Reading a float grid as int32 gives 0 (Warp's behaviour); a debug build reports the mismatch."""
    vol = wp.Volume.allocate_by_tiles(wp.array([[0, 0, 0]], dtype=wp.int32), voxel_size=1.0, bg_value=4.0)
    out = wp.full(1, 7, dtype=int)
    wp.launch(lookup_as_int, dim=1, inputs=[vol.id, out])
    assert out.numpy()[0] == 0
    monkeypatch.setattr(wp.config, "mode", "debug")
    with pytest.raises(wp.KernelRuntimeError):
        wp.launch(lookup_as_int, dim=1, inputs=[vol.id, out])
        wp.synchronize()
