"""The reverse pass: straight-line code, branches, dynamic loops, exits, funcs; launch(adjoint=True), Tape."""
import numpy as np
import pytest

import tilewarp as wp
from conftest import load_module

wp.config.quiet = True
f64 = wp.float64


@wp.kernel
def square_sum_loop(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    s = 0.0
    for i in range(n):
        s += x[i] * x[i]
    out[0] = s * s


def test_dynamic_loop_gradient_is_not_zero(device):
    """The issue's example: Warp 1.19 returns zeros here; d(s^2)/dx = 4 s x with s = 30."""
    x = wp.array(np.array([1, 2, 3, 4], dtype=np.float32), requires_grad=True, device=device)
    out = wp.zeros(1, dtype=float, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(square_sum_loop, dim=1, inputs=[x, 4], outputs=[out], device=device)
    tape.backward(out)
    np.testing.assert_allclose(x.grad.numpy(), [120, 240, 360, 480], rtol=1e-6)


@wp.func
def exits(a: f64, n: int):
    p = a
    k = int(0)
    while k < n:
        p = p * a
        if p > f64(50.0):
            return p + f64(1.0)
        k += 1
    for j in range(5):
        if j == 2:
            continue
        if j == 4:
            break
        p = p * f64(0.5) + wp.sin(p)
    return p


@wp.kernel
def call_exits(x: wp.array(dtype=f64), out: wp.array(dtype=f64)):
    i = wp.tid()
    if x[i] < f64(-5.0):
        return
    out[i] = exits(x[i], 3)


def test_while_return_break_continue(device, rng):
    x = wp.array(np.concatenate([rng.uniform(-1.5, 3.5, 12), [-6.0]]), dtype=f64, device=device)
    out = wp.zeros(13, dtype=f64, device=device)
    assert wp.autograd.gradcheck(call_exits, dim=13, inputs=[x], outputs=[out], eps=1e-6, atol=1e-6, rtol=1e-6,
                                 raise_exception=False, device=device, show_summary=False)


@wp.kernel
def nested(x: wp.array(dtype=f64), n: int, m: int, out: wp.array(dtype=f64)):
    i = wp.tid()
    s = x[i]
    for a in range(n):
        t = s * f64(0.3)
        for b in range(m):
            t = wp.cos(t) + s * f64(0.01)
        if t > f64(0.5):
            s = s + t * f64(0.2)
        else:
            s = s - t * f64(0.1)
    wp.atomic_add(out, 0, s * s)


@pytest.mark.parametrize("n, m", [(0, 3), (1, 2), (3, 2), (40, 30), (300, 5), (5000, 1)])
def test_nested_dynamic_loops(n, m, rng):
    """Trip counts below, within and beyond the checkpoint levels (16, 16^2, 16^3 iterations)."""
    x = wp.array(rng.uniform(0.1, 1.0, 3), dtype=f64, device="cpu")
    out = wp.zeros(1, dtype=f64, device="cpu")
    assert wp.autograd.gradcheck(nested, dim=3, inputs=[x, n, m], outputs=[out], eps=1e-6, atol=1e-6, rtol=1e-5,
                                 raise_exception=False, device="cpu", show_summary=False)


@wp.kernel
def carried_while(x: wp.array(dtype=wp.vec3d), out: wp.array(dtype=f64)):
    i = wp.tid()
    v = x[i]
    k = int(0)
    while wp.length(v) < f64(20.0) and k < 50:
        v = v * f64(1.3) + wp.vec3d(f64(0.1), f64(0.0), f64(0.2))
        k += 1
    out[i] = wp.dot(v, v)


def test_while_with_vector_state(device, rng):
    x = wp.array(rng.uniform(0.2, 1.0, (5, 3)), dtype=wp.vec3d, device=device)
    out = wp.zeros(5, dtype=f64, device=device)
    assert wp.autograd.gradcheck(carried_while, dim=5, inputs=[x], outputs=[out], eps=1e-7, atol=1e-5, rtol=1e-6,
                                 raise_exception=False, device=device, show_summary=False)


@wp.kernel
def step(x0: wp.array(dtype=f64), x1: wp.array(dtype=f64)):
    i = wp.tid()
    x1[i] = x0[i] * x0[i] + wp.sin(x0[i])


@wp.kernel
def total(x: wp.array(dtype=f64), loss: wp.array(dtype=f64)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


def _chain(device, values):
    x0 = wp.array(values, dtype=f64, requires_grad=True, device=device)
    x1 = wp.zeros(len(values), dtype=f64, requires_grad=True, device=device)
    loss = wp.zeros(1, dtype=f64, requires_grad=True, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch(step, dim=len(values), inputs=[x0], outputs=[x1], device=device)
        wp.launch(total, dim=len(values), inputs=[x1], outputs=[loss], device=device)
    return tape, x0, x1, loss


def test_tape_backward_zero_reset(device, rng):
    v = rng.uniform(-2, 2, 6)
    tape, x0, x1, loss = _chain(device, v)
    tape.backward(loss)
    want = 2 * (v * v + np.sin(v)) * (2 * v + np.cos(v))
    np.testing.assert_allclose(x0.grad.numpy(), want, rtol=1e-12)
    tape.backward(loss)  # gradients accumulate (x1.grad already holds one seed): 1 + 2 times
    np.testing.assert_allclose(x0.grad.numpy(), 3 * want, rtol=1e-12)
    tape.zero()
    assert not x0.grad.numpy().any() and not x1.grad.numpy().any()
    seed = rng.uniform(-1, 1, 6)
    tape.backward(grads={x1: seed})  # from an intermediate output: only the first launch matters
    np.testing.assert_allclose(x0.grad.numpy(), seed * (2 * v + np.cos(v)) + 0, rtol=1e-12)
    tape.reset()
    assert tape.launches == [] and not x0.grad.numpy().any()


def test_adjoint_launch_takes_given_gradient_arrays(device, rng):
    v = rng.uniform(-2, 2, 5)
    x0 = wp.array(v, dtype=f64, device=device)
    x1 = wp.zeros(5, dtype=f64, device=device)
    gx, g1 = wp.zeros(5, dtype=f64, device=device), wp.array(np.arange(5.0), dtype=f64, device=device)
    wp.launch(step, dim=5, inputs=[x0], outputs=[x1], adj_inputs=[gx], adj_outputs=[g1], adjoint=True,
              device=device)
    np.testing.assert_allclose(gx.numpy(), np.arange(5.0) * (2 * v + np.cos(v)), rtol=1e-12)
    assert not x1.numpy().any()  # the backward launch replays without writing the outputs


def test_tape_errors(rng):
    tape, x0, x1, loss = _chain("cpu", rng.uniform(-1, 1, 3))
    with pytest.raises(wp.TapeError, match="requires_grad"):
        tape.backward(wp.zeros(1, dtype=f64))
    with pytest.raises(wp.TapeError, match="one-element"):
        tape.backward(x1)
    with pytest.raises(wp.TapeError, match="nothing was recorded"):
        wp.Tape().backward(loss)
    with pytest.raises(wp.TapeError, match="already recording"):
        with wp.Tape():
            with wp.Tape():
                pass
    with pytest.raises(wp.LaunchError, match="adj_x1.*shape"):
        wp.launch(step, dim=3, inputs=[x0], outputs=[x1], adj_inputs=[None], adj_outputs=[wp.zeros(2, dtype=f64)],
                  adjoint=True)


@wp.kernel
def scale(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = x[i] * x[i]


def test_overwritten_input_is_an_error(rng):
    """Warp silently differentiates with the new values (NVIDIA/warp#1350); the Tape refuses."""
    x = wp.array(rng.uniform(1, 2, 4), dtype=f64, requires_grad=True)
    y = wp.zeros(4, dtype=f64, requires_grad=True)
    loss = wp.zeros(1, dtype=f64, requires_grad=True)
    for overwrite in (lambda: x.assign(rng.uniform(1, 2, 4)), lambda: x.fill_(3.0), lambda: x.zero_(),
                      lambda: wp.copy(x, wp.clone(y)), lambda: wp.launch(scale, dim=4, inputs=[y], outputs=[x]),
                      lambda: x[1:3].fill_(2.0)):
        tape = wp.Tape()
        with tape:
            wp.launch(scale, dim=4, inputs=[x], outputs=[y])
            wp.launch(total, dim=4, inputs=[y], outputs=[loss])
        overwrite()
        with pytest.raises(wp.TapeError, match=r"argument 'x' of launch #0 \(.*scale\) was overwritten"):
            tape.backward(loss)
    tape = wp.Tape()  # writing an array nobody read afterwards is fine, as is writing after backward
    with tape:
        wp.launch(scale, dim=4, inputs=[x], outputs=[y])
        wp.launch(total, dim=4, inputs=[y], outputs=[loss])
    loss.zero_()
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.numpy() ** 3, rtol=1e-12)
    x.assign(rng.uniform(1, 2, 4))


@wp.kernel
def first_components(v: wp.array(dtype=wp.vec2d), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = v[i][0] * v[i][0]


@wp.kernel
def set_first_component(v: wp.array(dtype=wp.vec2d)):
    v[wp.tid()][0] = f64(2.0)  # a component store writes v too


def test_a_component_store_overwrites_its_array(rng):
    v = wp.array(rng.uniform(1, 2, (4, 2)), dtype=wp.vec2d, requires_grad=True)
    y = wp.zeros(4, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(first_components, dim=4, inputs=[v], outputs=[y])
    wp.launch(set_first_component, dim=4, inputs=[v])
    with pytest.raises(wp.TapeError, match=r"argument 'v' of launch #0 \(.*first_components\) was overwritten"):
        tape.backward(grads={y: wp.array(np.ones(4), dtype=f64)})


_LAZY = """import WP as wp

@wp.kernel(enable_backward=False)
def nograd(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    y[wp.tid()] = x[wp.tid()] * wp.float64(2.0)

@wp.kernel
def lazy(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    y[wp.tid()] = x[wp.tid()] * wp.float64(3.0)

@wp.kernel(enable_backward=True)
def eager(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
    y[wp.tid()] = x[wp.tid()] * wp.float64(4.0)
"""


def test_enable_backward(rng):
    mod = load_module(_LAZY, "tilewarp")
    x = wp.array(rng.uniform(0, 1, 3), dtype=f64, requires_grad=True)
    y = wp.zeros(3, dtype=f64, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(mod.nograd, dim=3, inputs=[x], outputs=[y])
    with pytest.raises(wp.TapeError, match="'.*nograd' was built with enable_backward=False"):
        tape.backward(grads={y: np.ones(3)})
    built = lambda k: any(isinstance(key, tuple) and key[1:] == ("backward",) for key in k._compiled)
    with wp.Tape() as tape:  # default: the forward launch builds no backward, the first backward does
        wp.launch(mod.lazy, dim=3, inputs=[x], outputs=[y])
        wp.launch(mod.eager, dim=3, inputs=[x], outputs=[y])
    assert not built(mod.lazy) and built(mod.eager)
    tape.backward(grads={y: np.ones(3)})
    assert built(mod.lazy)
    np.testing.assert_allclose(x.grad.numpy(), [7.0] * 3)


def test_gradcheck_tape_and_failure_report(rng, capsys):
    tape, x0, x1, loss = _chain("cpu", rng.uniform(-1, 1, 4))
    assert wp.autograd.gradcheck_tape(tape, eps=1e-6, atol=1e-6, rtol=1e-6, raise_exception=False, show_summary=False)
    tape.backward(loss)  # the checks left the tape's arrays (and their versions) as they were
    v = x0.numpy()
    np.testing.assert_allclose(x0.grad.numpy(), 2 * (v * v + np.sin(v)) * (2 * v + np.cos(v)), rtol=1e-12)
    # a wrong adjoint is reported, not accepted: compare against finite differences of another kernel
    x, y = wp.array(v, dtype=f64), wp.zeros(4, dtype=f64)
    fd = wp.autograd.jacobian_fd(scale, 4, [x], [y], eps=1e-6)[(0, 0)]
    ad = wp.autograd.jacobian(step, 4, [x], [y])[(0, 0)]
    assert not np.allclose(fd, ad)
    with pytest.raises(ValueError, match="gradcheck failed"):
        _mismatch(x, y)


def _mismatch(x, y):
    """gradcheck of a kernel whose adjoint is replaced by another's: must fail loudly."""
    original = wp.autograd.jacobian
    try:
        wp.autograd.jacobian = lambda k, *a, **kw: original(step, *a, **kw)
        wp.autograd.gradcheck(scale, 4, [x], [y], eps=1e-6, atol=1e-6, rtol=1e-6, show_summary=False)
    finally:
        wp.autograd.jacobian = original


@wp.kernel
def extremes(v: wp.array(dtype=wp.vec3d), out: wp.array(dtype=f64)):
    i = wp.tid()
    out[i] = wp.min(v[i]) * f64(2.0) + wp.max(v[i])


def test_vector_min_max_reductions(device, rng):
    """wp.min(v) / wp.max(v): a vector's smallest / largest component, and their gradients."""
    a = rng.uniform(-1, 1, (6, 3))
    v = wp.array(a, dtype=wp.vec3d, device=device)
    out = wp.zeros(6, dtype=f64, device=device)
    wp.launch(extremes, dim=6, inputs=[v], outputs=[out], device=device)
    np.testing.assert_allclose(out.numpy(), 2 * a.min(1) + a.max(1))
    assert wp.autograd.gradcheck(extremes, dim=6, inputs=[v], outputs=[out], eps=1e-6, atol=1e-6, rtol=1e-6,
                                 raise_exception=False, show_summary=False, device=device)


@wp.func
def tally(x: f64, calls: wp.array(dtype=int), hist: wp.array(dtype=f64)):
    wp.atomic_add(calls, 0, 1)
    hist[0] = x
    for k in range(2):
        wp.atomic_add(hist, 1, x)
    return x * x


@wp.func
def tally_twice(x: f64, calls: wp.array(dtype=int), hist: wp.array(dtype=f64)):
    return tally(x, calls, hist) + tally(x * f64(2.0), calls, hist)


@wp.kernel
def tallied(x: wp.array(dtype=f64), calls: wp.array(dtype=int), hist: wp.array(dtype=f64),
            out: wp.array(dtype=f64)):
    i = wp.tid()
    s = f64(0.0)
    for r in range(3):
        s += tally_twice(x[i], calls, hist)
    out[i] = s


def test_replay_of_funcs_writes_no_memory(device, rng):
    """Beyond Warp (which re-runs a func's stores and atomics when replaying it): the backward pass
    replays funcs without their memory writes; their gradients still flow."""
    x = wp.array(rng.uniform(-1, 1, 4), dtype=f64, requires_grad=True, device=device)
    calls = wp.zeros(1, dtype=int, device=device)
    hist = wp.zeros(2, dtype=f64, device=device)
    out = wp.zeros(4, dtype=f64, requires_grad=True, device=device)
    with wp.Tape() as tape:
        wp.launch(tallied, dim=4, inputs=[x, calls, hist], outputs=[out], device=device)
    before = hist.numpy().copy()
    tape.backward(grads={out: np.ones(4)})
    assert calls.numpy()[0] == 4 * 3 * 2
    np.testing.assert_array_equal(hist.numpy(), before)
    np.testing.assert_allclose(x.grad.numpy(), 3 * (2 * x.numpy() + 8 * x.numpy()), rtol=1e-12)


@wp.kernel
def own_rows(x: wp.array(dtype=f64), y: wp.array(dtype=f64)):
    i = wp.tid()
    y[i] = wp.sin(x[i]) * x[i]


def test_own_element_gradients_without_atomics(device, rng):
    """x[i] read only at the thread's own index: its gradient is a plain add, unless the launch
    has more dimensions than the kernel's wp.tid() (then threads share i, and atomics are kept)."""
    v = rng.uniform(-2, 2, 5)
    x = wp.array(v, dtype=f64, requires_grad=True, device=device)
    y = wp.zeros(5, dtype=f64, requires_grad=True, device=device)
    d = np.cos(v) * v + np.sin(v)
    for dim, times in ((5, 1), ((5, 3), 3)):
        x.grad.zero_()
        with wp.Tape() as tape:
            wp.launch(own_rows, dim=dim, inputs=[x], outputs=[y], device=device)
        tape.backward(grads={y: np.ones(5)})
        np.testing.assert_allclose(x.grad.numpy(), times * d, rtol=1e-12)
    assert "tw::adj_load_own(" in own_rows.compiled_backward(wp.get_device(device)).source
