"""wp.optim.Adam / SGD against warp-lang's on the same parameters and gradients (float32, float64,
vec3), and a Tape-driven fit that converges."""
import numpy as np
import pytest

import tilewarp as wp
import tilewarp.optim

warp = pytest.importorskip("warp")
import warp.optim  # noqa: E402

warp.config.quiet = True


def _run(lib, make, dtype, x0, grads):
    p = lib.array(x0, dtype=dtype, device="cpu")
    opt = make(lib)([p])
    for g in grads:
        opt.step([lib.array(g, dtype=dtype, device="cpu")])
    return p.numpy()


@pytest.mark.parametrize("dtype_name", ["float32", "float64", "vec3"])
@pytest.mark.parametrize("which", ["adam", "sgd", "sgd_momentum", "sgd_nesterov"])
def test_steps_match_warp(rng, dtype_name, which):
    makers = {
        "adam": lambda lib: lambda p: lib.optim.Adam(p, lr=0.05, betas=(0.8, 0.95), eps=1e-6),
        "sgd": lambda lib: lambda p: lib.optim.SGD(p, lr=0.1, weight_decay=0.01),
        "sgd_momentum": lambda lib: lambda p: lib.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1),
        "sgd_nesterov": lambda lib: lambda p: lib.optim.SGD(p, lr=0.1, momentum=0.8, nesterov=True),
    }
    shape = (16, 3) if dtype_name == "vec3" else (16,)
    np_type = np.float64 if dtype_name == "float64" else np.float32
    x0 = rng.normal(size=shape).astype(np_type)
    grads = [rng.normal(size=shape).astype(np_type) for _ in range(5)]
    ours = _run(wp, makers[which], getattr(wp, dtype_name), x0, grads)
    tol = {"rtol": 1e-5, "atol": 1e-6} if np_type is np.float32 else {"rtol": 1e-12, "atol": 1e-14}
    np.testing.assert_allclose(ours, _reference(which, x0.astype(np.float64), grads), **tol)
    if dtype_name != "float64":  # Warp 1.19 fails on float64 (Adam refuses it, SGD's kernel mixes precisions)
        theirs = _run(warp, makers[which], getattr(warp, dtype_name), x0, grads)
        np.testing.assert_allclose(ours, theirs, **tol)


def _reference(which, p, grads):
    """The update rules in float64 NumPy (PyTorch's conventions, which Warp follows)."""
    m = v = b = np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = g.astype(np.float64)
        if which == "adam":
            m, v = 0.8 * m + 0.2 * g, 0.95 * v + 0.05 * g * g
            p = p - 0.05 * (m / (1 - 0.8 ** t)) / (np.sqrt(v / (1 - 0.95 ** t)) + 1e-6)
        elif which == "sgd":
            p = p - 0.1 * (g + 0.01 * p)
        else:
            mu, damp = (0.9, 0.1) if which == "sgd_momentum" else (0.8, 0.0)
            b = g if t == 1 else mu * b + (1 - damp) * g
            p = p - 0.1 * (g + mu * b if which == "sgd_nesterov" else b)
    return p


def test_adam_fits_through_a_tape(rng):
    @wp.kernel
    def loss_fn(x: wp.array(dtype=wp.vec3), target: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
        i = wp.tid()
        d = x[i] - target[i]
        wp.atomic_add(loss, 0, wp.dot(d, d))

    target = wp.array(rng.normal(size=(8, 3)).astype(np.float32), dtype=wp.vec3, device="cpu")
    x = wp.zeros(8, dtype=wp.vec3, device="cpu", requires_grad=True)
    opt = wp.optim.Adam([x], lr=0.1)
    losses = []
    for _ in range(150):
        loss = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)
        with wp.Tape() as tape:
            wp.launch(loss_fn, dim=8, inputs=[x, target], outputs=[loss], device="cpu")
        tape.backward(loss)
        opt.step([x.grad])
        tape.zero()
        losses.append(float(loss.numpy()[0]))
    assert losses[-1] < 1e-3 * losses[0]
    np.testing.assert_allclose(x.numpy(), target.numpy(), atol=3e-2)


def test_bad_gradients_are_named():
    p = wp.zeros(4, dtype=float, device="cpu")
    opt = wp.optim.SGD([p])
    with pytest.raises(ValueError, match="one gradient per parameter array"):
        opt.step([])
    with pytest.raises(ValueError, match=r"gradient 0 must be an array of float32 \(4,\)"):
        opt.step([wp.zeros(3, dtype=float, device="cpu")])
