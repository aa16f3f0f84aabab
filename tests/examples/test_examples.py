"""The examples gallery (examples/*.py): each simulation, run small, passes a physical check; each
renders a USD stage with time samples and a PNG."""
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))  # the examples import their shared example_utils

# sizes small enough for a test: the kernels are the same, so building them is most of the cost
SMALL = {
    "dem_particles": dict(columns=(4, 6, 4), substeps=16),
    "sph_fluid": dict(block=(6, 8, 5), spacing=0.04, box=(0.6, 0.5, 0.3), substeps=6),
    "stable_fluids": dict(resolution=32, pressure_iterations=20, stage_resolution=16, image_resolution=32),
    "wave_2d": dict(resolution=32, stage_resolution=16, image_resolution=32),
    "cloth_sphere": dict(resolution=12, substeps=16),
    "diff_ball": dict(duration=0.7, sim_steps=280, velocity=(1.0, 0.5, 0.0), target=(1.2, 0.45, 0.0),
                      learning_rate=0.2, verbose=False),
    "tile_nbody": dict(num_bodies=256),
    "tile_mlp": dict(resolution=16, iterations_per_frame=2, verbose=False),
    "tile_ropes": dict(ropes=4, substeps=2),
    "tile_poisson": dict(),
    "mesh_collision": dict(columns=(5, 10, 5), substeps=16, resolution=24),
}


def example(name, device, **overrides):
    module = importlib.import_module(name)
    return module.Example(device=device, **{**SMALL[name], **overrides})


def test_dem_contacts_conserve_momentum(device):
    """Pair forces are equal and opposite: in flight, only gravity changes the total momentum."""
    ex = example("dem_particles", device)
    rng = np.random.default_rng(0)
    ex.x.assign(ex.x.numpy() + [0.0, 2.0, 0.0])  # far above the ground
    v0 = rng.normal(0.0, 0.5, (ex.num_particles, 3))
    ex.v.assign(v0)
    for _ in range(4):
        ex.step()
    v = ex.v.numpy().astype(np.float64)
    t = 4 * ex.frame_dt
    gravity_only = v0 + [0.0, -9.81 * t, 0.0]
    assert np.abs(v - gravity_only).max() > 0.1, "no collisions happened"
    drift = np.abs(v.sum(axis=0) - gravity_only.sum(axis=0)).max()
    assert drift < 1e-3 * np.abs(v0).sum(axis=0).max()


def test_dem_pile_settles(device):
    ex = example("dem_particles", device)
    start = ex.x.numpy().copy()  # numpy() of a CPU array is a view: the simulation reuses its memory
    e0 = ex.energy()
    energies = []
    for _ in range(60):
        ex.step()
        energies.append(ex.energy())
    x = ex.x.numpy()
    assert np.all(np.isfinite(x)) and np.all(np.isfinite(ex.v.numpy()))
    assert x[:, 1].min() > 0.5 * ex.radius  # resting on the ground, not through it
    # contacts dissipate: kinetic + gravitational energy never exceeds its start (springs store the rest)
    assert max(energies) <= e0 + 1e-3 * abs(e0)
    assert energies[-1] < 0.95 * e0  # the column fell
    assert x[:, 1].max() < 0.8 * start[:, 1].max()  # the column slumped
    assert np.ptp(x[:, 0]) > np.ptp(start[:, 0]) + ex.radius  # and spread


def test_mesh_collision_rests_in_the_bowl(device):
    """Spheres poured into the mesh bowl end up on it: none below its surface (the signed closest-point
    query pushes tunnelled ones back), all inside its rim, slowed to a crawl."""
    ex = example("mesh_collision", device)
    start = ex.heights_above_bowl().copy()
    for _ in range(70):
        ex.step()
    h, x, v = ex.heights_above_bowl(), ex.x.numpy(), ex.v.numpy()
    assert np.all(np.isfinite(x)) and np.all(np.isfinite(v))
    assert start.min() > 0.3 and h.min() > 0.8 * ex.radius  # fell onto the surface, not through it
    assert np.abs(x[:, [0, 2]]).max() < 1.2  # within the bowl
    assert np.median(np.linalg.norm(v, axis=1)) < 0.3


def test_sph_dam_break(device):
    ex = example("sph_fluid", device)
    e0 = ex.energy()
    x_start = ex.x.numpy().copy()
    for _ in range(40):
        ex.step()
        assert ex.energy() <= e0 * 1.001  # viscosity and walls only take energy away
    x, rho = ex.x.numpy(), ex.density.numpy()
    box = np.array(ex.box)
    assert np.all(np.isfinite(x)) and np.all(x >= 0.0) and np.all(x <= box + 1e-6)
    assert x[:, 0].max() > x_start[:, 0].max() + 0.1  # the water ran along the floor
    assert rho.max() < 1.25 * ex.rest_density  # weakly compressible: no collapse
    assert np.median(rho) > 0.8 * ex.rest_density


def _random_modes(n, rng, k_max=3):
    """A smooth random field on the (n + 1) x (n + 1) grid of cell corners, zero on the walls."""
    x = np.arange(n + 1)[:, None] / n
    y = np.arange(n + 1)[None, :] / n
    f = np.zeros((n + 1, n + 1))
    for kx in range(1, k_max + 1):
        for ky in range(1, k_max + 1):
            f += rng.normal() / (kx * kx + ky * ky) * np.sin(np.pi * kx * x) * np.sin(np.pi * ky * y)
    return f


def _curl(psi, dx):
    """Face velocities of the stream function psi (at cell corners): divergence-free, and none
    through the walls."""
    return np.diff(psi, axis=1) / dx, -np.diff(psi, axis=0) / dx


def _gradient(phi, dx):
    """Face values of the gradient of phi (at cell centres), zero on the walls' faces."""
    n = phi.shape[0]
    gx, gy = np.zeros((n + 1, n)), np.zeros((n, n + 1))
    gx[1:-1] = np.diff(phi, axis=0) / dx
    gy[:, 1:-1] = np.diff(phi, axis=1) / dx
    return gx, gy


def _divergence_np(ux, uy, dx):
    return (np.diff(ux.astype(np.float64), axis=0) + np.diff(uy.astype(np.float64), axis=1)) / dx


def test_stable_fluids_projection_removes_divergence(device):
    """u = curl(psi) + grad(phi): projecting must remove grad(phi), and only it."""
    ex = example("stable_fluids", device, pressure_iterations=3000)
    rng = np.random.default_rng(1)
    free = _curl(_random_modes(ex.n, rng), ex.dx)
    grad = _gradient(_random_modes(ex.n, rng)[1:, 1:] * 0.01, ex.dx)
    ex.ux.assign(free[0] + grad[0])
    ex.uy.assign(free[1] + grad[1])
    before = _divergence_np(ex.ux.numpy(), ex.uy.numpy(), ex.dx)
    np.testing.assert_allclose(ex.divergence().numpy(), before, rtol=1e-4, atol=1e-4 * np.abs(before).max())
    ex.make_incompressible()
    after = _divergence_np(ex.ux.numpy(), ex.uy.numpy(), ex.dx)
    assert np.linalg.norm(after) < 1e-3 * np.linalg.norm(before)
    scale = np.abs(free[0]).max()
    np.testing.assert_allclose(ex.ux.numpy(), free[0], atol=1e-3 * scale)
    np.testing.assert_allclose(ex.uy.numpy(), free[1], atol=1e-3 * scale)


def test_stable_fluids_dye_is_carried_not_created(device):
    ex = example("stable_fluids", device)
    ex.jets = []  # no sources: the dye present is all there is
    ux, uy = _curl(_random_modes(ex.n, np.random.default_rng(2)), ex.dx)
    scale = 0.5 / np.abs(ux).max()  # half a box width per second at most
    ex.ux.assign(ux * scale)
    ex.uy.assign(uy * scale)
    x, y = np.meshgrid((np.arange(ex.n) + 0.5) / ex.n, (np.arange(ex.n) + 0.5) / ex.n, indexing="ij")
    blob = np.exp(-((x - 0.5) ** 2 + (y - 0.5) ** 2) / 0.02)[..., None] * [1.0, 0.5, 0.2]
    ex.dye.assign(blob)
    for _ in range(20):
        ex.step()
    dye = ex.dye.numpy()
    assert np.abs(dye - blob).max() > 0.05  # it moved
    np.testing.assert_allclose(dye.sum(axis=(0, 1)), blob.sum(axis=(0, 1)), rtol=0.05)
    # interpolation never overshoots: no new extremes
    assert dye.min() >= -1e-6 and np.all(dye.max(axis=(0, 1)) <= blob.max(axis=(0, 1)) + 1e-5)
    assert np.abs(ex.divergence().numpy()).max() < 1e-2 * np.abs(ex.ux.numpy()).max() / ex.dx


def _bump(ex):
    x, z = np.meshgrid(np.arange(ex.n) * ex.dx, np.arange(ex.n) * ex.dx, indexing="ij")
    return 0.1 * np.exp(-((x - 0.4 * ex.size) ** 2 + (z - 0.6 * ex.size) ** 2) / 0.1)


def test_wave_conserves_volume_and_energy(device):
    ex = example("wave_2d", device, drops=False, source=False, damping=0.0)
    h0 = _bump(ex)
    ex.h.assign(h0)
    ex.h_prev.assign(h0)  # at rest
    v0, e0 = ex.volume(), ex.energy()
    for _ in range(60):
        ex.step()
    h = ex.h.numpy()
    assert np.abs(h - h0).max() > 0.02  # waves travelled
    assert np.abs(h).max() < 0.1  # and spread out, no blow-up
    assert ex.volume() == pytest.approx(v0, rel=1e-4)
    assert ex.energy() == pytest.approx(e0, rel=0.02)


def test_wave_damping_and_sources(device):
    ex = example("wave_2d", device, damping=2.0)
    ex.h.assign(_bump(ex))
    ex.h_prev.assign(_bump(ex))
    e0 = ex.energy()
    ex.source = ex.drops = False
    for _ in range(30):
        ex.step()
    assert ex.energy() < 0.7 * e0
    ex.source = ex.drops = True
    for _ in range(60):
        ex.step()
    assert np.all(np.isfinite(ex.h.numpy())) and np.abs(ex.h.numpy()).max() > 0.01  # the sources make waves


def test_cloth_drapes_without_penetrating(device):
    ex = example("cloth_sphere", device)
    center, radius = np.array(ex.sphere_center), ex.sphere_radius
    touched = False
    for _ in range(60):
        ex.step()
        x = ex.x.numpy()
        dist = np.linalg.norm(x - center, axis=-1)
        assert dist.min() >= radius  # never inside the ball
        touched |= dist.min() < radius + 2.0 * ex.thickness
    x = ex.x.numpy()
    assert touched and np.all(np.isfinite(x)) and x[..., 1].min() >= 0.0
    strain = [np.linalg.norm(np.diff(x, axis=k), axis=-1) / ex.spacing for k in (0, 1)]
    assert 0.9 < min(s.min() for s in strain) and max(s.max() for s in strain) < 1.15  # springs hold
    top = center[1] + radius + ex.thickness
    assert top - 0.02 < x[..., 1].max() < top + 0.02  # it rests on top of the ball
    corners = x[[0, 0, -1, -1], [0, -1, 0, -1]]
    assert corners[:, 1].max() < center[1] + 0.5 * radius  # they hang down its sides


def test_diff_ball_gradient_and_descent(device):
    ex = example("diff_ball", device)
    velocity = np.array([1.0, 0.5, 0.0])
    loss, grad = ex.gradient()
    ys = np.array([ex.x[t].numpy()[0, 1] for t in range(len(ex.x))])
    assert ys.min() < ex.radius  # the throw bounces, so the gradient goes through the contact
    eps = 1e-2
    fd = [(ex.compute_loss(velocity + eps * e) - ex.compute_loss(velocity - eps * e)) / (2 * eps)
          for e in np.eye(3)[:2]]
    np.testing.assert_allclose(grad[:2], fd, rtol=0.05, atol=0.02 * np.linalg.norm(fd))
    ex.v[0].assign(velocity[None])
    for _ in range(8):
        ex.step()
    losses = ex.losses
    assert losses[0] == pytest.approx(loss, rel=1e-5)
    assert all(b < a for a, b in zip(losses, losses[1:])) and losses[-1] < 0.2 * losses[0]


def test_tile_nbody_matches_float64(device):
    ex = example("tile_nbody", device)
    ex.compute_accelerations()
    x = ex.x.numpy().astype(np.float64)
    d = x[None, :, :] - x[:, None, :]
    r2 = np.sum(d * d, axis=-1) + ex.softening**2
    want = ex.mass * np.sum(d / r2[..., None] ** 1.5, axis=1)
    got = ex.a.numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
    assert np.abs(got.sum(axis=0)).max() < 1e-4 * np.abs(got).sum(axis=0).max()  # action = reaction
    e0 = ex.energy()
    for _ in range(20):
        ex.step()
    assert ex.energy() == pytest.approx(e0, rel=2e-3)


def test_tile_mlp_matches_numpy_and_learns(device):
    ex = example("tile_mlp", device)
    w0, b0, w1, b1, w2, b2 = [p.numpy().astype(np.float64) for p in ex.params]
    loss = ex.train_step()
    grads = [p.grad.numpy() for p in ex.params]  # at the weights above: Adam changed only the weights
    # the same network, loss and gradients in float64 NumPy
    f, t = ex.features.numpy().astype(np.float64), ex.target_rgb
    z0 = w0 @ f + b0
    h0 = np.maximum(z0, 0.0)
    z1 = w1 @ h0 + b1
    h1 = np.maximum(z1, 0.0)
    y = w2 @ h1 + b2
    assert loss == pytest.approx(np.mean((y - t) ** 2), rel=1e-4)
    dy = 2.0 * (y - t) / y.size
    dz1 = (w2.T @ dy) * (z1 > 0)
    dz0 = (w1.T @ dz1) * (z0 > 0)
    want = [dz0 @ f.T, dz0.sum(1, keepdims=True), dz1 @ h0.T, dz1.sum(1, keepdims=True), dy @ h1.T,
            dy.sum(1, keepdims=True)]
    for g, w in zip(grads, want):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * np.abs(w).max())
    losses = [ex.train_step() for _ in range(40)]
    assert np.isfinite(losses).all() and losses[-1] < 0.5 * losses[0]


def _rope_substep_float64(ex, x, v):
    """One projective-dynamics substep of every rope in float64 NumPy: the example's algorithm."""
    from tile_ropes import ITERATIONS, rope_matrices

    a = rope_matrices(ex.stiffness_values, ex.mass_term, ex.pin, ex.n)
    y = x + ex.h * v + ex.h**2 * np.array([0.0, -9.81, 0.0])
    q = y.copy()
    for _ in range(int(getattr(ITERATIONS, "value", ITERATIONS))):
        d = np.diff(q, axis=1)
        p = ex.rest * d / np.linalg.norm(d, axis=-1, keepdims=True) * ex.stiffness_values[:, None, None]
        rhs = ex.mass_term * y
        rhs[:, 1:] += p
        rhs[:, :-1] -= p
        rhs[:, 0] += ex.pin * ex.anchors
        q = np.linalg.solve(a, rhs)
    return q, (q - x) * (0.998 / ex.h)


def test_tile_ropes_match_float64_and_hang(device):
    """A substep against the same projective dynamics in float64 (per-block Cholesky + solves); then
    the ropes stay pinned, the stiff ones keep their length and all swing down."""
    ex = example("tile_ropes", device, substeps=1)
    rng = np.random.default_rng(1)
    ex.v.assign(rng.normal(0.0, 0.5, ex.v.shape))
    x0, v0 = ex.x.numpy().astype(np.float64), ex.v.numpy().astype(np.float64)
    ex.step()
    want_x, want_v = _rope_substep_float64(ex, x0, v0)
    np.testing.assert_allclose(ex.x.numpy(), want_x, atol=2e-4)
    np.testing.assert_allclose(ex.v.numpy(), want_v, atol=2e-4 / ex.h)
    for _ in range(30):
        ex.step()
    x = ex.x.numpy()
    assert np.all(np.isfinite(x))
    np.testing.assert_allclose(x[:, 0], ex.anchors, atol=1e-3)
    stretch = ex.stretch()
    assert abs(stretch[-1] - 1.0) < 0.05 and stretch[-1] < stretch[0]  # the stiffest rope stretches least
    assert (x[:, -1, 1] < -0.5).all()  # every free end fell


def test_tile_poisson_matches_numpy_fft(device):
    """The potential against numpy's 2-d FFT of the same charge density; and it solves the equation:
    the spectral Laplacian of phi is minus the density's fluctuation."""
    ex = example("tile_poisson", device)
    for _ in range(3):
        ex.step()
    rho = ex.rho.numpy()[..., 0].astype(np.float64)
    phi = ex.phi.numpy().astype(np.float64)
    n = ex.n
    from tile_poisson import green_function

    want = np.real(np.fft.ifft2(np.fft.fft2(rho) * green_function(n) * n * n))
    np.testing.assert_allclose(phi, want, atol=1e-5 * np.abs(want).max())
    k = 2.0 * np.pi * np.fft.fftfreq(n, d=1.0 / n)
    lap = np.real(np.fft.ifft2(-(k[:, None] ** 2 + k[None, :] ** 2) * np.fft.fft2(phi)))
    np.testing.assert_allclose(lap, -(rho - rho.mean()), atol=1e-4 * np.abs(rho).max())
    assert np.abs(rho).max() > 0.5  # the charges were deposited


@pytest.mark.parametrize("name", sorted(SMALL))
def test_render_writes_usd_and_png(name, tmp_path):
    pxr = pytest.importorskip("pxr")
    Image = pytest.importorskip("PIL.Image")
    stage_path, image_path = tmp_path / f"{name}.usd", tmp_path / f"{name}.png"
    ex = example(name, "cpu", stage_path=str(stage_path), image_path=str(image_path), image_size=(160, 120))
    for _ in range(2):
        ex.step()
        ex.render()
    assert sorted(map(Path, ex.save())) == sorted([stage_path, image_path])

    stage = pxr.Usd.Stage.Open(str(stage_path))
    prims = [p for p in stage.Traverse() if str(p.GetPath()).startswith("/root/")]
    sampled = {str(p.GetPath()) for p in prims for a in p.GetAttributes() if a.GetNumTimeSamples() >= 2}
    assert sampled, f"no animated prims in {[str(p.GetPath()) for p in prims]}"
    assert stage.GetEndTimeCode() > stage.GetStartTimeCode()
    with Image.open(image_path) as image:
        assert image.size == (160, 120)
        counts = sorted(count for count, _ in image.getcolors(maxcolors=160 * 120))
        assert len(counts) >= 3 and counts[-1] < 0.99 * 160 * 120  # something was drawn
