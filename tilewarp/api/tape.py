"""``wp.Tape``: records launches (and host steps) and runs their adjoints in reverse."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..language import types as T
from ..errors import TapeError
from ..runtime import tape_state
from ..runtime.array import array
from ..runtime.launch import launch


@dataclass(eq=False)
class _Launch:
    kernel: object
    dim: object
    inputs: list
    outputs: list
    device: object
    block_dim: int
    read_versions: list = field(default_factory=list)  # host_views.ReadRecord of each array read


@dataclass(eq=False)
class _HostStep:
    backward: object  # a callable run in the backward pass
    arrays: list


class Tape:
    """Record ``wp.launch`` calls inside ``with wp.Tape() as tape:``; ``tape.backward(loss)`` then
    launches their backward kernels in reverse order, accumulating into the arrays' ``.grad``."""

    def __init__(self):
        self.launches: list = []
        self.gradients: dict = {}
        self.loss = None
        #: scope markers for visualize(): (launch index, name, metadata) opens one, (index, None, None) closes it
        self.scopes: list = []

    def __enter__(self):
        if tape_state.active is not None:
            raise TapeError("a Tape is already recording: finish it before starting another")
        tape_state.active = self
        tape_state.tracking = True
        return self

    def __exit__(self, *exc):
        tape_state.active = None

    # ---- recording ---------------------------------------------------------------------------

    def record_launch(self, kernel, dim, inputs, outputs, device, block_dim, read_versions=()):
        entry = _Launch(kernel, dim, list(inputs), list(outputs), device, block_dim, list(read_versions))
        self.launches.append(entry)
        return entry

    def record_func(self, backward, arrays):
        """Record a host-side step: ``backward()`` runs at its place in the reverse pass."""
        if not callable(backward):
            raise TapeError(f"record_func() needs a callable backward, got {type(backward).__name__}")
        self.launches.append(_HostStep(backward, list(arrays)))

    def record_scope_begin(self, scope_name, metadata=None):
        """Open a named group of the launches recorded from now on (only visualize() uses scopes)."""
        self.scopes.append((len(self.launches), scope_name, {} if metadata is None else metadata))

    def record_scope_end(self, remove_scope_if_empty=True):
        """Close the innermost open scope; one that holds no launch is dropped unless
        ``remove_scope_if_empty`` is False."""
        depth = sum(-1 if name is None else 1 for _, name, _ in self.scopes)
        if depth <= 0:
            raise TapeError("ended tape scope, but scope not present (record_scope_end() without a matching "
                            "record_scope_begin())")
        last_index, last_name, _ = self.scopes[-1]
        if remove_scope_if_empty and last_name is not None and last_index == len(self.launches):
            self.scopes.pop()
        else:
            self.scopes.append((len(self.launches), None, None))

    def visualize(self, filename=None, simplify_graph=True, hide_readonly_arrays=False, array_labels=None,
                  choose_longest_node_name=True, ignore_graph_scopes=False, track_inputs=None, track_outputs=None,
                  track_input_names=None, track_output_names=None, graph_direction="LR"):
        """The recorded computation as GraphViz DOT source (written to ``filename`` too when given):
        launches, the arrays they read and write, scopes as clusters, and with ``simplify_graph``
        runs of identical launches drawn once as "repeated Nx"."""
        from .tape_graph import tape_to_dot

        dot = tape_to_dot(self, simplify_graph=simplify_graph, hide_readonly_arrays=hide_readonly_arrays,
                          array_labels=array_labels, choose_longest_node_name=choose_longest_node_name,
                          ignore_graph_scopes=ignore_graph_scopes,
                          track_inputs=track_inputs or [], track_outputs=track_outputs or [],
                          track_input_names=track_input_names or [], track_output_names=track_output_names or [],
                          graph_direction=graph_direction)
        if filename is not None:
            with open(filename, "w", encoding="utf-8") as f:
                f.write(dot)
        return dot

    # ---- the backward pass -------------------------------------------------------------------

    def backward(self, loss=None, grads=None):
        """Gradients of ``loss`` (a one-element array; its gradient is seeded with 1) or of the
        outputs in ``grads`` ({array: seed gradient}) with respect to every recorded array; with
        neither, the outputs' ``.grad`` as they are seed the pass (as in Warp)."""
        if loss is not None:
            self._seed_loss(loss)
        for a, g in (grads or {}).items():
            self._seed(a, g)
        if not self.launches:
            raise TapeError("Tape.backward(): nothing was recorded on this tape (launch kernels inside "
                            "'with tape:')")
        self._check_inputs_intact()
        for entry in reversed(self.launches):
            if isinstance(entry, _HostStep):
                entry.backward()
                continue
            launch(entry.kernel, entry.dim, entry.inputs, entry.outputs, [self.get_adjoint(v) for v in entry.inputs],
                   [self.get_adjoint(v) for v in entry.outputs], entry.device, adjoint=True, block_dim=entry.block_dim)

    def _check_inputs_intact(self):
        """Beyond Warp (NVIDIA/warp#1350): a launch's backward replays it from the arrays it read,
        so an array written after that launch would give a wrong gradient without a word."""
        checksums: dict = {}
        for n, entry in enumerate(self.launches):
            if isinstance(entry, _HostStep):
                continue
            for r in entry.read_versions:
                a = r.array
                if a.version != r.version:
                    how = f"({a.version - r.version} write(s) since)"
                elif r.written_through_view(checksums):
                    how = "through a host view (x.numpy(), np.asarray(x) or DLPack)"
                else:
                    continue
                names, values = entry.kernel.arg_names, [*entry.inputs, *entry.outputs]
                k = next((k for k, v in enumerate(values) if any(x is a for x in tape_state.arrays_in(v))), None)
                what = f"argument '{names[k]}'" if k is not None and k < len(names) else "an array"
                raise TapeError(
                    f"{what} of launch #{n} ({entry.kernel.key}) was overwritten after that launch {how}, so its "
                    f"gradient would be wrong; write new values into a new array (e.g. one state array per step) "
                    f"instead")

    def _seed_loss(self, loss):
        if not isinstance(loss, array):
            raise TapeError(f"Tape.backward(loss=...) takes a wp.array, got {type(loss).__name__}")
        if loss.size != 1:
            raise TapeError(f"Tape.backward(loss=...) needs a one-element array, got shape {loss.shape}")
        if not loss.requires_grad or loss.grad is None:
            raise TapeError("Tape.backward(): the loss array was created without requires_grad=True, "
                            "so no gradient can flow from it")
        self.loss = loss
        loss.grad.fill_(1.0 if T.is_scalar(loss.dtype) else np.ones(getattr(loss.dtype, "_wp_shape_", ())))

    def _seed(self, a, g):
        if not isinstance(a, array):
            raise TapeError(f"Tape.backward(grads=...) keys must be wp.arrays, got {type(a).__name__}")
        if a.grad is None:
            a.grad = g if isinstance(g, array) else array(g, dtype=a.dtype, shape=a.shape, device=a.device)
            a._requires_grad = True
        else:
            a.grad.assign(g)
        self.gradients[a] = a.grad

    def get_adjoint(self, value):
        """What a backward launch gets for ``value``: its gradient array (None without one), or for
        a struct the adjoint struct holding its array fields' gradients (as Warp's Tape)."""
        if isinstance(value, array):
            if not value.requires_grad:
                return None
            self.gradients[value] = value.grad  # tape.gradients[a] after backward, as Warp's
            return value.grad
        if T.is_struct(type(value)):
            adjoint = value._tw_adjoint()
            self.gradients[value] = adjoint  # tape.gradients[s].x is the gradient of s.x, as in Warp
            for a in tape_state.arrays_in(value):  # and tape.gradients[s.x] itself
                if a.requires_grad:
                    self.gradients[a] = a.grad
            return adjoint
        return None

    # ---- housekeeping ------------------------------------------------------------------------

    def _arrays(self):
        seen = {}
        for entry in self.launches:
            if isinstance(entry, _HostStep):
                values = entry.arrays
            elif isinstance(entry, _Launch):
                values = [*entry.inputs, *entry.outputs]
            else:  # something a user appended to ``launches`` by hand
                continue
            for v in values:  # arrays held in struct arguments too: zero() clears their gradients
                for a in tape_state.arrays_in(v):
                    seen[id(a)] = a
        return list(seen.values())

    def zero(self):
        """Zero the gradients of every array recorded on the tape."""
        done = set()  # (a gradient is often in both lists: zeroed once)
        for a in self._arrays():
            if a.grad is not None and id(a.grad) not in done:
                done.add(id(a.grad))
                a.grad.zero_()
        for g in self.gradients.values():
            for a in tape_state.arrays_in(g):  # a gradient array, or the arrays of a struct's adjoint
                if id(a) not in done:
                    done.add(id(a))
                    a.zero_()

    def reset(self):
        """Forget the recorded launches and scopes and zero the gradients (``gradients`` keeps its
        entries, zeroed, as in Warp)."""
        self.zero()
        self.launches = []
        self.scopes = []
        self.loss = None
