"""Tape host-side API: scope markers and visualize(), struct gradients, reset/zero, copy adjoints
(``wp.copy``, ``wp.clone``, ``assign``), ``retain_grad`` and the creation functions' keywords."""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as wp


@wp.kernel
def scale2(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(out, 0, x[i])


@wp.kernel
def total2d(x: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(out, 0, x[i, j])


@wp.struct
class Pair:
    a: wp.array(dtype=float)
    b: wp.array(dtype=float)


@wp.kernel
def pair_product(p: Pair, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = p.a[i] * p.b[i]


def test_scope_markers():
    tape = wp.Tape()
    tape.record_scope_begin("outer", {"k": 1})
    tape.record_scope_begin("empty")
    tape.record_scope_end()  # nothing recorded inside: dropped
    tape.launches.append("launch")
    tape.record_scope_end()
    assert tape.scopes == [(0, "outer", {"k": 1}), (1, None, None)]
    tape.record_scope_begin("kept")
    tape.record_scope_end(remove_scope_if_empty=False)
    assert tape.scopes[-2:] == [(1, "kept", {}), (1, None, None)]
    with pytest.raises(wp.TapeError, match="scope not present"):
        tape.record_scope_end()
    tape.reset()
    assert tape.scopes == [] and tape.launches == []


def test_visualize_collapses_repeats_and_draws_scopes(tmp_path):
    x = wp.array(np.ones(4, np.float32), requires_grad=True)
    y = wp.zeros(4, requires_grad=True)
    out = wp.zeros(n=1, requires_grad=True)
    tape = wp.Tape()
    with tape:
        tape.record_scope_begin("sum loop")
        for _ in range(5):
            wp.launch(total, dim=4, inputs=[x], outputs=[out])
        tape.record_scope_end()
        wp.launch(scale2, dim=4, inputs=[x], outputs=[y])
    dot = tape.visualize(filename=str(tmp_path / "tape.dot"), array_labels={out: "loss"})
    assert "repeated 5x" in dot and "sum loop" in dot and dot.count("total") == 1 and "scale2" in dot
    assert 'label="loss"' in dot and "array: dtype=float32" in dot
    assert (tmp_path / "tape.dot").read_text() == dot
    assert tape.visualize(simplify_graph=False).count("total") == 5


def test_struct_gradients_and_reset():
    p = Pair()
    p.a = wp.array([1.0, 2.0], dtype=float, requires_grad=True)
    p.b = wp.array([3.0, 4.0], dtype=float, requires_grad=True)
    z = wp.zeros(2, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(pair_product, dim=2, inputs=[p], outputs=[z])
    tape.backward(grads={z: wp.ones(2)})
    np.testing.assert_array_equal(tape.gradients[p].a.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(tape.gradients[p].b.numpy(), [1.0, 2.0])
    tape.reset()  # the entries stay, zeroed
    np.testing.assert_array_equal(tape.gradients[p].a.numpy(), [0.0, 0.0])
    assert not tape.launches


def _loss_grad(build, x_values):
    """x.grad of loss = sum(build(x)) with the analytic answer checked by the caller."""
    x = wp.array(np.asarray(x_values, np.float32), requires_grad=True)
    loss = wp.zeros(1, requires_grad=True)
    tape = wp.Tape()
    with tape:
        build(x, loss)
    tape.backward(loss)
    return x


def test_copy_adjoints_accumulate_into_the_source():
    def through_clone_and_kernel(x, loss):
        c = wp.clone(x)
        d = wp.zeros_like(x)
        wp.launch(scale2, dim=4, inputs=[x], outputs=[d])
        wp.launch(total, dim=4, inputs=[d], outputs=[loss])
        wp.launch(total, dim=4, inputs=[c], outputs=[loss])

    np.testing.assert_array_equal(_loss_grad(through_clone_and_kernel, [1, 2, 3, 4]).grad.numpy(), [3, 3, 3, 3])

    def through_assign(x, loss):
        dst = wp.zeros_like(x)
        dst.assign(x)
        wp.launch(total, dim=4, inputs=[dst], outputs=[loss])

    np.testing.assert_array_equal(_loss_grad(through_assign, [1, 2, 3, 4]).grad.numpy(), [1, 1, 1, 1])

    def window(x, loss):
        w = wp.zeros(2, requires_grad=True)
        wp.copy(w, x, dest_offset=0, src_offset=1, count=2)
        wp.launch(total, dim=2, inputs=[w], outputs=[loss])

    np.testing.assert_array_equal(_loss_grad(window, [1, 2, 3, 4]).grad.numpy(), [0, 1, 1, 0])


def test_copy_adjoint_consumes_the_overwritten_destination():
    x = wp.array(np.ones(4, np.float32), requires_grad=True)
    s = wp.array(np.full(4, 5.0, np.float32), requires_grad=True)
    y = wp.zeros_like(x)
    loss = wp.zeros(1, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(scale2, dim=4, inputs=[x], outputs=[y])  # overwritten next: no gradient may reach x
        wp.copy(y, s, dest_offset=1, count=2)
        wp.launch(total, dim=4, inputs=[y], outputs=[loss])
    tape.backward(loss)
    np.testing.assert_array_equal(s.grad.numpy(), [1, 1, 0, 0])
    np.testing.assert_array_equal(x.grad.numpy(), [2, 0, 0, 2])


def test_copy_adjoint_strided_destination():
    base = wp.array(np.ones((3, 4), np.float32), requires_grad=True)
    src = wp.array(np.ones(3, np.float32), requires_grad=True)
    loss = wp.zeros(1, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.copy(base[:, 2], src)
        wp.launch(total2d, dim=(3, 4), inputs=[base], outputs=[loss])
    tape.backward(loss)
    expected = np.ones((3, 4))
    expected[:, 2] = 0.0
    np.testing.assert_array_equal(src.grad.numpy(), np.ones(3))
    np.testing.assert_array_equal(base.grad.numpy(), expected)


def test_overlapping_copy_warns_and_copies_the_gradient_back():
    y = wp.array(np.arange(1.0, 5.0, dtype=np.float32), requires_grad=True)
    loss = wp.zeros(1, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.copy(y, y, dest_offset=1, src_offset=0, count=3)
        wp.launch(total, dim=4, inputs=[y], outputs=[loss])
    with pytest.warns(UserWarning, match="overlapping copy"):
        tape.backward(loss)
    np.testing.assert_array_equal(y.grad.numpy(), np.ones(4))


def test_retain_grad_and_creation_keywords():
    assert wp.zeros(n=3).shape == (3,) and wp.ones(n=2, dtype=wp.vec3).shape == (2,)
    with pytest.raises(TypeError, match="unexpected keyword argument 'lenght'"):
        wp.zeros(lenght=3)
    with pytest.raises(ValueError, match="requires_grad"):
        wp.zeros(3, retain_grad=True)
    a = wp.zeros(3, requires_grad=True, retain_grad=True)
    assert a.retain_grad
    a.requires_grad = False
    assert not a.retain_grad
    with pytest.raises(ValueError, match="requires_grad"):
        a.retain_grad = True
    b = wp.zeros_like(wp.zeros(2, requires_grad=True), retain_grad=True)
    assert b.retain_grad and b.requires_grad


def test_retained_destination_is_not_consumed():
    x = wp.array(np.ones(4, np.float32), requires_grad=True)
    s = wp.array(np.ones(4, np.float32), requires_grad=True)
    y = wp.zeros(4, requires_grad=True, retain_grad=True)
    loss = wp.zeros(1, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.copy(y, s)
        wp.launch(total, dim=4, inputs=[y], outputs=[loss])
    tape.backward(loss)
    np.testing.assert_array_equal(s.grad.numpy(), np.ones(4))
    np.testing.assert_array_equal(y.grad.numpy(), np.ones(4))
