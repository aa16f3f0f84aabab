"""Checking gradients: Jacobians from the backward kernel and from finite differences (``wp.autograd``)."""
from __future__ import annotations

import numpy as np

from .language import types as T
from .runtime.array import array, zeros_like
from .runtime.launch import launch
from .api.tape import _Launch


def _float_arrays(values) -> list:
    return [k for k, v in enumerate(values) if isinstance(v, array) and T.is_float(T.scalar_of(_elem(v.dtype)))]


def _elem(t):
    return t if (T.is_scalar(t) or T.is_composite(t)) else T.int32  # structs: not checked


def _flat(a: array) -> np.ndarray:
    return np.array(a.numpy(), dtype=np.float64).reshape(-1)  # a copy: CPU arrays share memory


def _set_flat(a: array, flat: np.ndarray):
    a.assign(flat.reshape(a.numpy().shape).astype(a.numpy().dtype))


def _pairs(inputs, outputs, input_output_mask):
    ins, outs = _float_arrays(inputs), _float_arrays(outputs)
    pairs = [(i, o) for i in ins for o in outs]
    if input_output_mask:
        wanted = set()
        for i, o in input_output_mask:
            i = i if isinstance(i, int) else _position(inputs, i)
            o = o if isinstance(o, int) else _position(outputs, o)
            wanted.add((i, o))
        pairs = [p for p in pairs if p in wanted]
    return pairs


def _position(values, key):
    for k, v in enumerate(values):
        if v is key:
            return k
    raise ValueError("input_output_mask names an array that is not among the inputs/outputs")


def _forward(kernel, dim, inputs, outputs, device, block_dim):
    for o in outputs:
        if isinstance(o, array):
            o.zero_()
    launch(kernel, dim, inputs, outputs, device=device, block_dim=block_dim, record_tape=False)


def jacobian(kernel, dim, inputs, outputs, input_output_mask=None, device=None, max_blocks=0, block_dim=256,
             max_outputs_per_var=-1, plot_jacobians=False):
    """``{(input index, output index): J}`` from the backward kernel, one launch per output scalar;
    ``J[r, c]`` is d output[r] / d input[c] over the arrays' flattened scalar components."""
    inputs, outputs = list(inputs), list(outputs)
    _forward(kernel, dim, inputs, outputs, device, block_dim)
    result = {}
    grads_in = [zeros_like(v, requires_grad=False) if isinstance(v, array) else None for v in inputs]
    grads_out = [zeros_like(v, requires_grad=False) if isinstance(v, array) else None for v in outputs]
    for i, o in _pairs(inputs, outputs, input_output_mask):
        n_out = _flat(outputs[o]).size if max_outputs_per_var < 0 else min(max_outputs_per_var, _flat(outputs[o]).size)
        J = np.zeros((n_out, _flat(inputs[i]).size))
        for r in range(n_out):
            for g in (*grads_in, *grads_out):
                if g is not None:
                    g.zero_()
            seed = np.zeros(_flat(outputs[o]).size)
            seed[r] = 1.0
            _set_flat(grads_out[o], seed)
            launch(kernel, dim, inputs, outputs, grads_in, grads_out, device, adjoint=True, block_dim=block_dim)
            J[r] = _flat(grads_in[i])
        result[(i, o)] = J
    return result


def jacobian_fd(kernel, dim, inputs, outputs, input_output_mask=None, device=None, max_blocks=0, block_dim=256,
                max_inputs_per_var=-1, eps=1e-4, plot_jacobians=False):
    """The same Jacobians by central finite differences (two forward launches per input scalar)."""
    inputs, outputs = list(inputs), list(outputs)
    result = {}
    for i, o in _pairs(inputs, outputs, input_output_mask):
        x0 = _flat(inputs[i])
        n_in = x0.size if max_inputs_per_var < 0 else min(max_inputs_per_var, x0.size)
        J = np.zeros((_flat(outputs[o]).size, x0.size))
        for c in range(n_in):
            cols = []
            for sign in (1.0, -1.0):
                x = x0.copy()
                x[c] += sign * eps
                _set_flat(inputs[i], x)
                _forward(kernel, dim, inputs, outputs, device, block_dim)
                cols.append(_flat(outputs[o]))
            J[:, c] = (cols[0] - cols[1]) / (2.0 * eps)
        _set_flat(inputs[i], x0)
        result[(i, o)] = J
    _forward(kernel, dim, inputs, outputs, device, block_dim)  # leave the outputs as the inputs give them
    return result


def gradcheck(function, dim=None, inputs=None, outputs=None, *, eps=1e-4, atol=1e-3, rtol=1e-2,
              raise_exception=True, input_output_mask=None, device=None, max_blocks=0, block_dim=256,
              max_inputs_per_var=-1, max_outputs_per_var=-1, plot_relative_error=False,
              plot_absolute_error=False, show_summary=True) -> bool:
    """Compare the backward kernel's Jacobians with central differences: True when every entry
    satisfies ``|J_ad - J_fd| <= atol + rtol * |J_fd|``."""
    inputs, outputs = list(inputs or ()), list(outputs or ())
    fd = jacobian_fd(function, dim, inputs, outputs, input_output_mask, device, max_blocks, block_dim,
                     max_inputs_per_var, eps)
    ad = jacobian(function, dim, inputs, outputs, input_output_mask, device, max_blocks, block_dim,
                  max_outputs_per_var)
    ok, report = True, []
    names = getattr(function, "arg_names", None) or []
    for (i, o), J in ad.items():
        J_fd = fd[(i, o)][: J.shape[0]]
        if max_inputs_per_var >= 0:
            J, J_fd = J[:, :max_inputs_per_var], J_fd[:, :max_inputs_per_var]
        err = np.abs(J - J_fd)
        bad = err > atol + rtol * np.abs(J_fd)
        label = f"{_name(names, i)} -> {_name(names, len(inputs) + o)}"
        report.append(f"{label}: max abs error {err.max(initial=0.0):.3g}, {int(bad.sum())} of {bad.size} entries off")
        ok = ok and not bad.any()
    if show_summary:
        print("gradcheck " + ("passed" if ok else "FAILED") + "\n  " + "\n  ".join(report))
    if not ok and raise_exception:
        raise ValueError("gradcheck failed:\n  " + "\n  ".join(report))
    return ok


def gradcheck_tape(tape, *, eps=1e-4, atol=1e-3, rtol=1e-2, raise_exception=True, input_output_masks=None,
                   blacklist_kernels=None, whitelist_kernels=None, max_inputs_per_var=-1, max_outputs_per_var=-1,
                   plot_relative_error=False, plot_absolute_error=False, show_summary=True) -> bool:
    """``gradcheck`` on every launch recorded on ``tape`` (each with the arguments it was recorded
    with); the arrays end as they were, versions included, so ``tape.backward`` still works."""
    ok = True
    for entry in tape.launches:
        if not isinstance(entry, _Launch):
            continue
        name = entry.kernel.key
        if (blacklist_kernels and name in blacklist_kernels) or (whitelist_kernels and name not in whitelist_kernels):
            continue
        mask = (input_output_masks or {}).get(name)
        arrays = [v for v in (*entry.inputs, *entry.outputs) if isinstance(v, array)]
        saved = [(a, np.array(a.numpy()), a.version) for a in arrays]
        try:
            ok = gradcheck(entry.kernel, entry.dim, entry.inputs, entry.outputs, eps=eps, atol=atol, rtol=rtol,
                           raise_exception=raise_exception, input_output_mask=mask, device=entry.device,
                           block_dim=entry.block_dim, max_inputs_per_var=max_inputs_per_var,
                           max_outputs_per_var=max_outputs_per_var, show_summary=show_summary) and ok
        finally:
            for a, values, version in saved:  # an in-place launch changed what it read: put it back
                a.assign(values)
                memory = a._owner if a._owner is not None else a
                memory.writes = version
    return ok


def _name(names, k) -> str:
    return names[k] if k < len(names) else f"#{k}"
