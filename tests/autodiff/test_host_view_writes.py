"""Writes through zero-copy host views of a CPU array (x.numpy(), np.asarray(x), DLPack) after a
recorded launch read it: Tape.backward raises instead of returning a wrong gradient (issue 15)."""
import numpy as np
import pytest

import tilewarp as wp


@wp.kernel
def sum_of_squares(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, x[i] * x[i])


def _recorded(n=32):
    x0 = np.random.default_rng(n).random(n).astype(np.float32) + 0.5
    x = wp.array(x0, requires_grad=True, device="cpu")
    loss = wp.zeros(1, dtype=float, requires_grad=True, device="cpu")
    return x, loss, x0


def _write_after(x, how, kept):
    if how == "numpy":
        x.numpy()[3] = 7.0
    elif how == "asarray":
        np.asarray(x)[0] += 1.0
    elif how == "kept view":
        kept[5] = -2.0
    elif how == "dlpack":  # another array sharing x's memory through DLPack: its writes are its own
        wp.from_dlpack(x).fill_(0.25)


@pytest.mark.parametrize("how", ["numpy", "asarray", "kept view", "dlpack"])
def test_a_write_through_a_host_view_after_the_launch_is_caught(how):
    x, loss, _ = _recorded()
    kept = x.numpy() if how == "kept view" else None  # a view taken before the recording
    tape = wp.Tape()
    with tape:
        wp.launch(sum_of_squares, dim=len(x), inputs=[x], outputs=[loss], device="cpu")
    _write_after(x, how, kept)
    with pytest.raises(wp.TapeError, match="argument 'x' of launch #0 .* through a host view"):
        tape.backward(loss)


def test_views_that_only_read_leave_the_gradient_alone():
    x, loss, x0 = _recorded()
    kept = x.numpy()  # alive for the whole test, never written
    tape = wp.Tape()
    with tape:
        wp.launch(sum_of_squares, dim=len(x), inputs=[x], outputs=[loss], device="cpu")
    assert np.allclose(x.numpy(), x0) and np.allclose(kept, x0)  # reading is fine
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 2 * x0.astype(np.float64), rtol=1e-6)


def test_a_write_before_the_launch_is_not_an_error():
    x, loss, x0 = _recorded()
    x.numpy()[:] = x0 * 2  # the launch reads the new values: its gradient is right
    tape = wp.Tape()
    with tape:
        wp.launch(sum_of_squares, dim=len(x), inputs=[x], outputs=[loss], device="cpu")
    tape.backward(loss)
    np.testing.assert_allclose(x.grad.numpy(), 4 * x0.astype(np.float64), rtol=1e-6)


def test_views_of_the_same_memory_count():
    x, loss, _ = _recorded()
    tape = wp.Tape()
    with tape:
        wp.launch(sum_of_squares, dim=len(x), inputs=[x], outputs=[loss], device="cpu")
    x[8:].numpy()[2] = 3.0  # a view of x's memory, written through numpy
    with pytest.raises(wp.TapeError, match="through a host view"):
        tape.backward(loss)


def test_tape_gradients_map_arrays_to_their_gradients_after_backward():
    x, loss, x0 = _recorded()
    tape = wp.Tape()
    with tape:
        wp.launch(sum_of_squares, dim=len(x), inputs=[x], outputs=[loss], device="cpu")
    tape.backward(loss)
    assert tape.gradients[x] is x.grad  # Warp's tape.gradients, keyed by array
    np.testing.assert_allclose(tape.gradients[x].numpy(), 2 * x0.astype(np.float64), rtol=1e-6)
