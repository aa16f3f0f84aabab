"""Gradients of whole kernels (structs, composites, loops, branches, atomics, funcs) in float64 on
random inputs: ``wp.autograd.gradcheck`` (central differences) on every test device, Tape gradients
of arrays held in struct arguments against differences of a seeded sum of the outputs, and the
same kernel text through warp-lang where Warp's gradients are right.
"""
from __future__ import annotations

import numpy as np
import pytest

import tilewarp as tw
from conftest import load_both, need_warp
from grad_kernels_text import TEXT

MODS = load_both(TEXT)
TWM = MODS[0]
N = 8
TOL = dict(eps=1e-6, atol=1e-6, rtol=1e-5)


def _gradcheck(kernel, dim, inputs, outputs, device):
    assert tw.autograd.gradcheck(getattr(TWM, kernel), dim=dim, inputs=inputs, outputs=outputs, device=device,
                                 raise_exception=False, show_summary=False, **TOL)


def _arrays(wp, specs, device, grad=True):
    """``(numpy data, dtype name)`` -> arrays; anything else (ints) passes through."""
    out = []
    for s in specs:
        if isinstance(s, tuple):
            dtype = getattr(wp, s[1])
            out.append(wp.array(s[0], dtype=dtype, device=device, requires_grad=grad and s[1] != "int32"))
        else:
            out.append(s)
    return out


def _zeros(wp, specs, device):
    return [wp.zeros(shape, dtype=getattr(wp, t), device=device, requires_grad=True) for shape, t in specs]


def _tape_grads(mod, kernel, dim, ins, outs, seeds, device="cpu", structs=((), ())):
    """Gradients (numpy) of the float input arrays, then of the arrays ``structs[1]`` held in the
    leading struct arguments ``structs[0]``, from ``mod``'s Tape with ``seeds`` on the outputs."""
    wp = mod.wp
    a_in, a_out = [*structs[0], *_arrays(wp, ins, device)], _zeros(wp, outs, device)
    with wp.Tape() as tape:
        wp.launch(getattr(mod, kernel), dim=dim, inputs=a_in, outputs=a_out, device=device)
    tape.backward(grads={o: wp.array(s, dtype=o.dtype, device=device) for o, s in zip(a_out, seeds)})
    arrays = [a for a in a_in[len(structs[0]):] if isinstance(a, wp.array) and a.requires_grad]
    return [a.grad.numpy() for a in (*arrays, *structs[1])]


def _against_warp(kernel, dim, ins, outs, rng, rtol=1e-10, structs=None):
    """The same seeded backward pass through tilewarp and Warp (both on the CPU) gives the same
    gradients; ``structs(mod)`` builds leading struct arguments and lists the arrays they hold."""
    need_warp(MODS)
    seeds = [rng.normal(size=(shape, *_SHAPES[t])) for shape, t in outs]
    grads = [_tape_grads(mod, kernel, dim, ins, outs, seeds, structs=structs(mod) if structs else ((), ()))
             for mod in MODS]
    assert len(grads[0]) == len(grads[1])
    for k, (got, want) in enumerate(zip(*grads)):
        assert np.abs(want).max() > 0, f"{kernel}: gradient #{k} is zero, nothing compared"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=f"{kernel}: gradient #{k}")


_SHAPES = {"float64": (), "vec3d": (3,), "mat33d": (3, 3), "quatd": (4,), "transformd": (7,),
           "mat22d": (2, 2)}


# ---- structs ------------------------------------------------------------------------------------


def _params(mod, rng, device="cpu"):
    wp = mod.wp
    p = mod.Params()
    p.gain = 1.3
    p.offsets = wp.array(rng.uniform(0.5, 1.5, N), dtype=wp.float64, device=device, requires_grad=True)
    p.spring.k = 0.7
    p.spring.rest = 0.2
    p.spring.dir = wp.vec3d(0.3, -0.4, 0.5)
    return p


def _struct_inputs(rng):
    return [(rng.normal(size=(N, 3)), "vec3d"), (rng.uniform(0.5, 2.0, N), "float64")]


def _fd_of_seeded_sum(run, x: tw.array, seeds, eps=1e-6):
    """d/dx of sum(seed * output) by central differences; ``run()`` returns the outputs (numpy)."""
    x0 = x.numpy().copy()
    flat = x0.reshape(-1)
    grad = np.zeros_like(flat)
    for c in range(flat.size):
        sums = []
        for sign in (1.0, -1.0):
            y = flat.copy()
            y[c] += sign * eps
            x.assign(y.reshape(x0.shape))
            sums.append(sum(float(np.sum(s * o)) for s, o in zip(seeds, run())))
        grad[c] = (sums[0] - sums[1]) / (2 * eps)
    x.assign(x0)
    return grad.reshape(x0.shape)


def test_struct_argument_constructed_and_passed_to_funcs(device, rng):
    """A struct argument (float, vector and array fields, a nested struct) feeds a struct built in
    the kernel, which goes through funcs and field writes."""
    p = _params(TWM, rng, device)
    x, k = _arrays(tw, _struct_inputs(rng), device)
    _gradcheck("structs", N, [p, x, k], _zeros(tw, [(N, "vec3d")], device), device)


def test_gradients_reach_arrays_in_struct_arguments(device, rng):
    p = _params(TWM, rng, device)
    x, k = _arrays(tw, _struct_inputs(rng), device)
    out = tw.zeros(N, dtype=tw.vec3d, device=device, requires_grad=True)
    seed = rng.normal(size=(N, 3))

    def run():
        tw.launch(TWM.structs, dim=N, inputs=[p, x, k], outputs=[out], device=device)
        return [out.numpy()]

    want = _fd_of_seeded_sum(run, p.offsets, [seed])
    with tw.Tape() as tape:
        run()
    tape.backward(grads={out: tw.array(seed, dtype=tw.vec3d, device=device)})
    np.testing.assert_allclose(p.offsets.grad.numpy(), want, rtol=1e-6, atol=1e-8)
    assert np.abs(want).min() > 1e-3  # every offset matters: a zero gradient would fail
    tape.zero()  # zero() reaches arrays held in structs too
    assert not p.offsets.grad.numpy().any()


def test_nested_struct_arrays(device, rng):
    h = TWM.Holder()
    h.inner = _params(TWM, rng, device)
    h.weights = tw.array(rng.normal(size=(N, 3)), dtype=tw.vec3d, device=device, requires_grad=True)
    x = tw.array(rng.normal(size=N), dtype=tw.float64, device=device, requires_grad=True)
    out = tw.zeros(N, dtype=tw.float64, device=device, requires_grad=True)
    seed = rng.normal(size=N)

    def run():
        tw.launch(TWM.nested_struct, dim=N, inputs=[h, x], outputs=[out], device=device)
        return [out.numpy()]

    with tw.Tape() as tape:
        run()
    tape.backward(grads={out: tw.array(seed, dtype=tw.float64, device=device)})
    for held in (h.weights, h.inner.offsets, x):
        want = _fd_of_seeded_sum(run, held, [seed])
        np.testing.assert_allclose(held.grad.numpy(), want, rtol=1e-6, atol=1e-8)


def test_struct_reads(device, rng):
    p = _params(TWM, rng, device)
    ins = _arrays(tw, _struct_inputs(rng), device)
    _gradcheck("struct_reads", N, [p, *ins], _zeros(tw, [(N, "vec3d")], device), device)


def _two_arrays(rng):
    return [(rng.uniform(-1, 1, N), "float64"), (rng.uniform(-1, 1, N), "float64")]


def test_struct_holding_an_array_built_in_the_kernel(device, rng):
    """A local struct's array field (set from an argument) carries the gradient to that array."""
    ins = _arrays(tw, _two_arrays(rng), device)
    _gradcheck("local_struct", N, ins, _zeros(tw, [(N, "float64")], device), device)


@pytest.mark.parametrize("n", [1, 5])
def test_struct_holding_an_array_carried_by_a_loop(n, device, rng):
    """Its float field's adjoint is cleared between iterations (the gradient array is kept)."""
    ins = _arrays(tw, [*_two_arrays(rng), n], device)
    _gradcheck("struct_loop", N, ins, _zeros(tw, [(N, "float64")], device), device)


def _particles(mod, data, device="cpu", requires_grad=True):
    """An array of ``Particle`` from rows ``(x0, x1, x2, m)``; ``n`` is the row index."""
    items = []
    for k, row in enumerate(data):
        p = mod.Particle()
        p.x, p.m, p.n = mod.wp.vec3d(*row[:3]), float(row[3]), k
        items.append(p)
    return mod.wp.array(items, dtype=mod.Particle, device=device, requires_grad=requires_grad)


def _particle_rows(records) -> np.ndarray:
    return np.concatenate([records["x"], records["m"][:, None]], axis=1)


def test_arrays_of_structs(device, rng):
    """Reads scatter into a struct gradient array field by field (two threads read each element),
    a struct stored into an array gathers its gradient."""
    data = rng.uniform(0.5, 1.5, (N, 4))
    ps = _particles(TWM, data, device)
    out = tw.zeros(N, dtype=tw.float64, device=device, requires_grad=True)
    moved = tw.zeros(N, dtype=TWM.Particle, device=device, requires_grad=True)
    seeds = rng.normal(size=N), rng.normal(size=(N, 4))
    grad_moved = moved.grad.numpy()
    grad_moved["x"], grad_moved["m"] = seeds[1][:, :3], seeds[1][:, 3]
    with tw.Tape() as tape:
        tw.launch(TWM.struct_array, dim=N, inputs=[ps], outputs=[out, moved], device=device)
    moved.grad.assign(grad_moved)
    tape.backward(grads={out: tw.array(seeds[0], dtype=tw.float64, device=device)})
    got = _particle_rows(ps.grad.numpy())

    def run():
        tw.launch(TWM.struct_array, dim=N, inputs=[_particles(TWM, rows.numpy().reshape(N, 4), device)],
                  outputs=[out, moved], device=device)
        return [out.numpy(), _particle_rows(moved.numpy())]

    rows = tw.array(data.reshape(-1), dtype=tw.float64)  # the perturbed copy run() reads
    want = _fd_of_seeded_sum(run, rows, seeds).reshape(N, 4)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    if MODS[1] is not None:  # Warp agrees
        wp = MODS[1].wp
        ps_w = _particles(MODS[1], data)
        out_w = wp.zeros(N, dtype=wp.float64, requires_grad=True)
        moved_w = wp.zeros(N, dtype=MODS[1].Particle, requires_grad=True)
        with wp.Tape() as tape:
            wp.launch(MODS[1].struct_array, dim=N, inputs=[ps_w], outputs=[out_w, moved_w])
        moved_w.grad.assign(grad_moved)
        tape.backward(grads={out_w: wp.array(seeds[0], dtype=wp.float64)})
        np.testing.assert_allclose(got, _particle_rows(ps_w.grad.numpy()), rtol=1e-10)


def test_struct_adjoint_value_and_explicit_adjoint_launch(device, rng):
    """``_tw_adjoint``: gradient arrays in place of arrays (None without one), zeros elsewhere;
    an adjoint struct given to ``launch(adjoint=True)`` receives the gradients instead."""
    p = _params(TWM, rng, device)
    adj = p._tw_adjoint()
    assert adj.offsets is p.offsets.grad and adj.gain == 0.0 and adj.spring.k == 0.0
    assert np.array_equal(np.asarray(adj.spring.dir), np.zeros(3))
    h = TWM.Holder()
    h.inner = p
    h.weights = tw.array(rng.normal(size=(N, 3)), dtype=tw.vec3d, device=device)  # no gradient
    adj_h = h._tw_adjoint()
    assert adj_h.weights is None and adj_h.inner.offsets is h.inner.offsets.grad

    x, k = _arrays(tw, _struct_inputs(rng), device)
    out = tw.zeros(N, dtype=tw.vec3d, device=device)
    tw.launch(TWM.structs, dim=N, inputs=[p, x, k], outputs=[out], device=device)
    mine = TWM.Params()
    mine.offsets = tw.zeros(N, dtype=tw.float64, device=device)
    seed = tw.array(rng.normal(size=(N, 3)), dtype=tw.vec3d, device=device)
    tw.launch(TWM.structs, dim=N, inputs=[p, x, k], outputs=[out], adj_inputs=[mine, None, None],
              adj_outputs=[seed], adjoint=True, device=device)
    assert not p.offsets.grad.numpy().any()  # the given adjoint struct took the gradient
    tw.launch(TWM.structs, dim=N, inputs=[p, x, k], outputs=[out], adj_inputs=[None, None, None],
              adj_outputs=[seed], adjoint=True, device=device)  # none given: the arrays' own .grad
    np.testing.assert_allclose(mine.offsets.numpy(), p.offsets.grad.numpy(), rtol=1e-12)
    assert np.abs(mine.offsets.numpy()).min() > 1e-6


def test_struct_kernels_against_warp(rng):
    """``struct_reads`` only: Warp's gradients through field writes (``s.k = ...`` in ``structs``)
    are wrong (its own gradcheck fails there)."""
    def structs(mod):
        p = _params(mod, np.random.default_rng(7))
        return [p], [p.offsets]

    _against_warp("struct_reads", N, _struct_inputs(rng), [(N, "vec3d")], rng, structs=structs)
    _against_warp("local_struct", N, _two_arrays(rng), [(N, "float64")], rng)

    def holder(mod):
        h = mod.Holder()
        h.inner = _params(mod, np.random.default_rng(8))
        h.weights = mod.wp.array(np.random.default_rng(9).normal(size=(N, 3)), dtype=mod.wp.vec3d,
                                 requires_grad=True)
        return [h], [h.weights, h.inner.offsets]

    ins = [(rng.normal(size=N), "float64")]
    _against_warp("nested_struct", N, ins, [(N, "float64")], rng, structs=holder)


# ---- composites, loops, branches ------------------------------------------------------------------


def _unit_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True) * rng.uniform(0.7, 1.5, (n, 1))


def _composite_inputs(rng):
    t = np.concatenate([rng.normal(size=(N, 3)), _unit_quats(rng, N)], axis=1)
    return [(rng.normal(size=(N, 3)), "vec3d"), (rng.normal(size=(N, 3, 3)), "mat33d"),
            (_unit_quats(rng, N), "quatd"), (t, "transformd")]


_COMPOSITE_OUT = [(N, "vec3d"), (N, "mat33d"), (N, "quatd"), (N, "float64")]


def test_vectors_matrices_quats_transforms(device, rng):
    ins = _arrays(tw, _composite_inputs(rng), device)
    _gradcheck("composites", N, ins, _zeros(tw, _COMPOSITE_OUT, device), device)


def test_composites_against_warp(rng):
    _against_warp("composites", N, _composite_inputs(rng), _COMPOSITE_OUT, rng, rtol=1e-9)


@pytest.mark.parametrize("n", [0, 1, 4, N])
def test_static_dynamic_nested_and_while_loops(n, device, rng):
    """A static loop, a dynamic loop around a triangular inner loop (trip count k), and a while
    loop whose trip count depends on the data, all carrying float state."""
    x = tw.array(rng.uniform(0.2, 1.0, N), dtype=tw.float64, device=device)
    _gradcheck("loops", N, [x, n], _zeros(tw, [(N, "float64")], device), device)


def _static_loop_inputs(rng):
    return [(rng.uniform(-1, 1, N), "float64"), (rng.uniform(-1, 1, 4), "float64")]


def test_static_nested_loops(device, rng):
    ins = _arrays(tw, _static_loop_inputs(rng), device)
    _gradcheck("static_loops", N, ins, _zeros(tw, [(N, "float64")], device), device)


def test_static_loops_against_warp(rng):
    """Warp unrolls constant ranges, so carried values are right there (dynamic loops carrying a
    value are not: Warp 1.19 gives zeros, see test_core.py)."""
    _against_warp("static_loops", N, _static_loop_inputs(rng), [(N, "float64")], rng)


def _branch_inputs(rng, n=32):
    x, y = rng.uniform(-1.5, 1.5, n), rng.uniform(-1.5, 1.5, n)
    c = np.where(x > y, x * y + np.where(x > 0.5, np.sin(x), 0.0), y - x * x)
    taken = [(x > y) & (x > 0.5), (x > y) & (x <= 0.5), x <= y, c < -0.5, (c >= -0.5) & (y > 0),
             (c >= -0.5) & (y <= 0) & (x > 0), (c >= -0.5) & (x <= 0)]
    assert all(t.any() for t in taken), "the inputs miss a branch"
    return [(x, "float64"), (y, "float64")]


def test_branches_and_early_return(device, rng):
    ins = _arrays(tw, _branch_inputs(rng), device)
    _gradcheck("branches", 32, ins, _zeros(tw, [(32, "float64")], device), device)


def test_branches_against_warp(rng):
    _against_warp("branches", 32, _branch_inputs(rng), [(32, "float64")], rng)


# ---- atomics --------------------------------------------------------------------------------------


def _atomic_inputs(rng, n=24, bins=3):
    """Many threads per output element (contention); values distinct, so min/max have one winner."""
    idx = np.arange(n) % bins
    rng.shuffle(idx)
    return [(rng.uniform(-1, 1, n), "float64"), (rng.uniform(-1, 1, (n, 3)), "vec3d"), (idx, "int32")]


_ATOMIC_OUT = [(3, "float64"), (3, "vec3d"), (3, "float64"), (3, "float64")]


def test_atomics_with_contention(device, rng):
    ins = _arrays(tw, _atomic_inputs(rng), device)
    _gradcheck("atomics", 24, ins, _zeros(tw, _ATOMIC_OUT, device), device)


def test_atomics_against_warp(rng):
    _against_warp("atomics", 24, _atomic_inputs(rng), _ATOMIC_OUT, rng)


def test_vector_and_matrix_atomic_min_max(device, rng):
    """Componentwise: each component's winner gets that component's gradient (Warp 1.19 compares
    whole vectors, so its gradient is zero unless one thread wins every component)."""
    idx = np.arange(24) % 3
    ins = _arrays(tw, [(rng.uniform(-1, 1, (24, 3)), "vec3d"), (rng.uniform(-1, 1, (24, 2, 2)), "mat22d"),
                       (idx, "int32")], device)
    _gradcheck("vector_minmax", 24, ins, _zeros(tw, [(3, "vec3d"), (3, "mat22d")], device), device)


# ---- funcs --------------------------------------------------------------------------------------


def _func_inputs(rng):
    return [(rng.uniform(-1, 1, (N, 5)), "float64"), (rng.uniform(-1, 1, 5), "float64"),
            (rng.uniform(-1.5, 1.5, (N, 3)), "vec3d")]


def test_funcs_nested_tuples_arrays_views(device, rng):
    """Nested calls, two return values, array arguments (a row view A[i] of a 2-d array, with a
    dynamic loop over it), an early return inside a func."""
    ins = _arrays(tw, _func_inputs(rng), device)
    _gradcheck("funcs", N, ins, _zeros(tw, [(N, "float64"), (N, "vec3d")], device), device)


def test_funcs_against_warp(rng):
    _against_warp("funcs", N, _func_inputs(rng), [(N, "float64"), (N, "vec3d")], rng)
