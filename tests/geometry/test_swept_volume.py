"""Swept volumes (wp.geometry.swept_volume_*): a translating sphere against the analytic capsule, a
rotating one against the analytic swept arc, every sign mode, the grid's sizing rules and bounds
against warp-lang (same domain, same field, same mesh), ``swept_volume_sdf`` from a user kernel,
and bad input (typed errors naming the argument)."""
import numpy as np
import pytest

import conftest
import meshes
import tilewarp as wp
import tilewarp.geometry as geo

MODES = (geo.SweptVolumeSignMode.NORMAL, geo.SweptVolumeSignMode.WINDING_NUMBER, geo.SweptVolumeSignMode.PARITY,
         geo.SweptVolumeSignMode.NO_SIGN)


def icosphere(levels=2, radius=1.0, center=(0.0, 0.0, 0.0)):
    """meshes.icosphere with its triangles flattened, as wp.Mesh takes them."""
    points, faces = meshes.icosphere(levels, radius, center)
    return points, faces.reshape(-1)


def _mesh(lib, points, faces, device, winding=True):
    return lib.Mesh(lib.array(points, dtype=lib.vec3, device=device), lib.array(faces, dtype=lib.int32, device=device),
                    support_winding_number=winding)


def _translations(offsets):
    offsets = np.asarray(offsets, np.float32)
    out = np.zeros((*offsets.shape[:-1], 7), np.float32)
    out[..., :3] = offsets
    out[..., 6] = 1.0
    return out


def _nodes(lower, upper, shape):
    lower, upper = np.array(lower, np.float64), np.array(upper, np.float64)
    axes = [lower[a] + np.arange(shape[a]) * (upper[a] - lower[a]) / (shape[a] - 1) for a in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), -1)


def _capsule(P, a, b, r):
    a, b = np.asarray(a, float), np.asarray(b, float)
    h = np.clip(((P - a) @ (b - a)) / ((b - a) @ (b - a)), 0.0, 1.0)
    return np.linalg.norm(P - a - h[..., None] * (b - a), axis=-1) - r


SWEEP = _translations([[[x, 0.0, 0.0] for x in np.linspace(-1.0, 1.0, 9)]])


@pytest.mark.parametrize("mode", MODES)
def test_translating_sphere_is_a_capsule(device, mode):
    points, faces = icosphere(2, 0.5)
    field, lower, upper = geo.swept_volume_field([_mesh(wp, points, faces, device)], SWEEP, voxel_size=0.1,
                                                 sign_mode=mode, device=device)
    f = field.numpy()
    P = _nodes(lower, upper, f.shape)
    per_pose = np.stack([np.linalg.norm(P - (x, 0.0, 0.0), axis=-1) - 0.5 for x in SWEEP[0, :, 0]])
    if mode == geo.SweptVolumeSignMode.NO_SIGN:  # the distance to the nearest posed surface
        assert f.min() >= 0.0
        np.testing.assert_allclose(f, np.abs(per_pose).min(0), atol=0.02)
        return
    np.testing.assert_allclose(f, per_pose.min(0), atol=0.02)  # the union of the posed spheres
    capsule = _capsule(P, (-1, 0, 0), (1, 0, 0), 0.5)
    band = np.abs(capsule) < 0.3  # the poses are 0.25 apart: between them the union dips by 0.016
    np.testing.assert_allclose(f[band], capsule[band], atol=0.035)


def test_rotating_sphere_sweeps_an_arc(device):
    points, faces = icosphere(2, 0.3, center=(1.0, 0.0, 0.0))
    angles = np.linspace(0.0, np.pi / 2, 7)
    xf = np.zeros((1, len(angles), 7), np.float32)
    xf[0, :, 5], xf[0, :, 6] = np.sin(angles / 2), np.cos(angles / 2)
    field, lower, upper = geo.swept_volume_field([_mesh(wp, points, faces, device)], xf, voxel_size=0.08,
                                                 sign_mode=geo.SweptVolumeSignMode.NORMAL, device=device)
    P = _nodes(lower, upper, field.shape)
    centers = np.stack([np.cos(angles), np.sin(angles), 0 * angles], -1)
    ref = (np.linalg.norm(P[..., None, :] - centers, axis=-1) - 0.3).min(-1)
    band = np.abs(ref) < 0.15
    np.testing.assert_allclose(field.numpy()[band], ref[band], atol=0.02)
    verts, _ = geo.swept_volume_mesh([_mesh(wp, points, faces, device)], xf, voxel_size=0.08,
                                     sign_mode=geo.SweptVolumeSignMode.NORMAL, device=device)
    v = verts.numpy()
    assert v[:, 0].max() > 1.25 and v[:, 1].max() > 1.25 and v[:, 2].max() < 0.31


def test_sdf_from_a_user_kernel(device):
    """The kernel API: swept_volume_sdf in a script's own kernel equals the field at the nodes."""

    @wp.kernel
    def probe(points: wp.array(dtype=wp.vec3), ids: wp.array(dtype=wp.uint64),
              xf: wp.array2d(dtype=wp.transform), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = geo.swept_volume_sdf(points[i], ids, xf, 10.0, wp.int32(geo.SweptVolumeSignMode.NORMAL))

    points, faces = icosphere(1, 0.5)
    mesh = _mesh(wp, points, faces, device, winding=False)
    field, lower, upper = geo.swept_volume_field([mesh], SWEEP, resolution=(9, 6, 5),
                                                 sign_mode=geo.SweptVolumeSignMode.NORMAL, device=device)
    nodes = _nodes(lower, upper, field.shape).reshape(-1, 3).astype(np.float32)
    out = wp.zeros(len(nodes), dtype=float, device=device)
    wp.launch(probe, dim=len(nodes), inputs=[wp.array(nodes, dtype=wp.vec3, device=device),
                                              wp.array([mesh.id], dtype=wp.uint64, device=device),
                                              wp.array(SWEEP, dtype=wp.transform, device=device), out],
              device=device)
    np.testing.assert_allclose(out.numpy(), field.numpy().reshape(-1), atol=1e-5)


def test_two_meshes_union_and_bounds(device):
    points, faces = icosphere(1, 0.4)
    meshes = [_mesh(wp, points, faces, device), _mesh(wp, points, faces, device)]
    xf = _translations([[[-1.5, 0.0, 0.0], [-1.5, 0.5, 0.0]], [[1.5, 0.0, 0.0], [1.5, 0.0, -0.5]]])
    lower, upper = geo.swept_volume_bounds(meshes, xf, padding=0.1, device=device)
    lo, hi = points.min(0), points.max(0)
    np.testing.assert_allclose(np.array(lower), [-1.5 + lo[0] - 0.1, lo[1] - 0.1, -0.5 + lo[2] - 0.1], atol=1e-6)
    np.testing.assert_allclose(np.array(upper), [1.5 + hi[0] + 0.1, 0.5 + hi[1] + 0.1, hi[2] + 0.1], atol=1e-6)
    field, lower, upper = geo.swept_volume_field(meshes, wp.array(xf, dtype=wp.transform, device=device),
                                                 resolution=(24, 12, 12), sign_mode=geo.SweptVolumeSignMode.PARITY)
    f = field.numpy()
    P = _nodes(lower, upper, f.shape)
    centers = [(-1.5, 0, 0), (-1.5, 0.5, 0), (1.5, 0, 0), (1.5, 0, -0.5)]
    ref = np.min([np.linalg.norm(P - c, axis=-1) for c in centers], axis=0) - 0.4
    band = np.abs(ref) < 0.2
    np.testing.assert_allclose(f[band], ref[band], atol=0.05)  # a coarse icosphere


def test_mesh_encloses_every_pose_at_the_conservative_threshold(device):
    points, faces = icosphere(1, 0.5)
    voxel = 0.1
    threshold = 0.5 * np.sqrt(3.0) * voxel
    verts, indices = geo.swept_volume_mesh([_mesh(wp, points, faces, device)], SWEEP, voxel_size=voxel,
                                           threshold=threshold, device=device)
    envelope = wp.Mesh(verts, indices, support_winding_number=True)

    @wp.kernel
    def inside(mesh: wp.uint64, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_point_sign_winding_number(mesh, points[i], 100.0)
        out[i] = q.sign

    posed = (points[None] + SWEEP[0, :, None, :3]).reshape(-1, 3)
    out = wp.zeros(len(posed), dtype=float, device=device)
    wp.launch(inside, dim=len(posed), inputs=[envelope.id, wp.array(posed, dtype=wp.vec3, device=device), out],
              device=device)
    assert (out.numpy() < 0).all()


# ---- warp-lang --------------------------------------------------------------------------------------


@pytest.mark.parametrize("sizing", [
    {"voxel_size": 0.13}, {"resolution": (14, 9, 11)},
    {"resolution": (10, 10, 10), "lower": (-2.0, -1.0, -0.7), "upper": (2.0, 1.0, 0.9)}])
def test_matches_warp(device, sizing):
    """The same domain, node counts and field as warp-lang in every sign mode, and the same mesh."""
    W = conftest.warp
    if W is None:
        pytest.skip("warp-lang (the behavioural oracle) is not installed")
    import warp.geometry as wgeo

    points, faces = icosphere(1, 0.5)
    xf = _translations([[[x, 0.3 * x, 0.0] for x in np.linspace(-1.0, 1.0, 5)]])
    mine, theirs = _mesh(wp, points, faces, device), _mesh(W, points, faces, "cpu")
    for mode in MODES:
        got = geo.swept_volume_field([mine], xf, sign_mode=mode, device=device, **sizing)
        want = wgeo.swept_volume_field([theirs], xf, sign_mode=int(mode), **sizing)
        assert got[0].shape == want[0].shape
        np.testing.assert_allclose(np.array(got[1]), np.array(want[1]), atol=1e-5)
        np.testing.assert_allclose(np.array(got[2]), np.array(want[2]), atol=1e-5)
        np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), atol=2e-5)
    threshold = 0.1
    got = geo.swept_volume_mesh([mine], xf, threshold=threshold, device=device, **sizing)
    want = wgeo.swept_volume_mesh([theirs], xf, threshold=threshold, **sizing)
    assert got[0].shape == want[0].shape and got[1].shape == want[1].shape
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), atol=1e-4)
    for pad in (0.0, 0.25):
        got = geo.swept_volume_bounds([mine], xf, padding=pad, device=device)
        want = wgeo.swept_volume_bounds([theirs], xf, padding=pad)
        np.testing.assert_allclose(np.array(got), np.array(want), atol=1e-6)


# ---- bad input --------------------------------------------------------------------------------------


def test_bad_input(device):
    points, faces = icosphere(1, 0.5)
    mesh = _mesh(wp, points, faces, device)
    xf = _translations([[[0.0, 0.0, 0.0]]])
    field = geo.swept_volume_field
    with pytest.raises(ValueError, match="meshes"):
        field([], xf, voxel_size=0.1)
    with pytest.raises(TypeError, match="meshes"):
        field(mesh, xf, voxel_size=0.1)
    with pytest.raises(TypeError, match=r"meshes\[1\]"):
        field([mesh, "mesh"], _translations([[[0, 0, 0]], [[0, 0, 0]]]), voxel_size=0.1)
    with pytest.raises(ValueError, match="voxel_size"):
        field([mesh], xf)
    with pytest.raises(ValueError, match="voxel_size"):
        field([mesh], xf, voxel_size=-0.1)
    with pytest.raises(ValueError, match="voxel_size"):
        field([mesh], xf, voxel_size=float("nan"))
    with pytest.raises(ValueError, match="not both"):
        field([mesh], xf, voxel_size=0.1, resolution=(4, 4, 4))
    with pytest.raises(ValueError, match="resolution"):
        field([mesh], xf, resolution=(4, 4))
    with pytest.raises(ValueError, match="resolution"):
        field([mesh], xf, resolution=(4, 1, 4))
    with pytest.raises(ValueError, match="resolution"):
        field([mesh], xf, resolution=(4.5, 4, 4))
    with pytest.raises(ValueError, match="both 'lower' and 'upper'"):
        field([mesh], xf, resolution=(4, 4, 4), lower=(0, 0, 0))
    with pytest.raises(ValueError, match="voxel_size"):
        field([mesh], xf, voxel_size=0.1, lower=(-1, -1, -1), upper=(1, 1, 1))
    with pytest.raises(ValueError, match="upper"):
        field([mesh], xf, resolution=(4, 4, 4), lower=(1, 1, 1), upper=(-1, -1, -1))
    with pytest.raises(ValueError, match="transforms"):
        field([mesh], np.zeros((1, 1, 6), np.float32), voxel_size=0.1)
    with pytest.raises(ValueError, match="transforms"):
        field([mesh], np.zeros((1, 0, 7), np.float32), voxel_size=0.1)
    with pytest.raises(ValueError, match="transforms"):
        field([mesh], _translations([[[0, 0, 0]], [[0, 0, 0]]]), voxel_size=0.1)
    with pytest.raises(ValueError, match="transforms"):
        field([mesh], wp.zeros((1, 1, 7), dtype=wp.float32, device=device), voxel_size=0.1)
    with pytest.raises(TypeError, match="transforms"):
        field([mesh], wp.zeros((1, 1), dtype=wp.vec3, device=device), voxel_size=0.1)
    with pytest.raises(ValueError, match="sign_mode"):
        field([mesh], xf, voxel_size=0.1, sign_mode=7)
    with pytest.raises(ValueError, match="sign_mode"):
        geo.swept_volume_mesh([mesh], xf, voxel_size=0.1, threshold=0.1, sign_mode=-1)
    with pytest.raises(ValueError, match="support_winding_number"):
        field([_mesh(wp, points, faces, device, winding=False)], xf, voxel_size=0.1)
    with pytest.raises(ValueError, match="threshold"):
        geo.swept_volume_mesh([mesh], xf, voxel_size=0.1, sign_mode=geo.SweptVolumeSignMode.NO_SIGN)
    with pytest.raises(ValueError, match="transforms"):
        geo.swept_volume_bounds([mesh], _translations([[[0, 0, 0]], [[0, 0, 0]]]))


def test_arguments_on_another_device():
    if not wp.get_cuda_device_count():
        pytest.skip("needs a CUDA device besides the CPU")
    points, faces = icosphere(1, 0.5)
    mesh = _mesh(wp, points, faces, "cpu")
    xf = _translations([[[0.0, 0.0, 0.0]]])
    with pytest.raises(ValueError, match=r"meshes\[0\]"):
        geo.swept_volume_field([mesh], xf, voxel_size=0.1, device="cuda:0")
    with pytest.raises(ValueError, match="transforms"):
        geo.swept_volume_field([mesh], wp.array(xf, dtype=wp.transform, device="cuda:0"), voxel_size=0.1)
