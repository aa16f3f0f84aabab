"""``wp.launch`` and ``wp.launch_tiled``: one path for every launch.

What a launch of a kernel over ``dim`` in blocks of ``block_dim`` lanes on a device needs is worked
out once into a ``Plan``: the compiled kernel of the argument types' specialisation (forward or
backward; per block shape for a kernel that uses tiles: runtime/block_shape.py), its argument
packer, the bounds and the grid. Every kind of launch runs a plan:

* a plain launch: ``Plan.run`` packs the arguments as bytes and submits them; in debug builds and
  under ``wp.config.verify_fp`` it launches through ``Plan.checked`` and checks afterwards;
* ``record_cmd=True``: ``Plan.checked`` keeps the packed struct in a replayable ``Launch``;
* ``adjoint=True`` (``Tape.backward``, ``wp.autograd``): a plan of the backward kernel,
  ``Plan.run_adjoint``;
* while a Tape is in use: the plain run, then ``Plan.track`` (versions of the arrays written, the
  launch recorded with the versions of those read);
* on another stream: the same, issued on that stream; under graph capture the backend issues on
  the capturing stream, so nothing here changes.

Plans are memoised on the kernel (the specialisation) per launch configuration, and a plain launch
of a (non-generic) kernel made before finds its plan by the caller's own spelling of the launch
(``remembered``): one dictionary lookup, one argument packing, one submit. SIMT kernels whose
arguments the native extension can pack go further still: their first plain launch leaves a native
Launcher on the kernel (runtime/native_launch.py), which the next ``wp.launch`` calls first.
Settings that decide how a kernel launches (``wp.config``, module options) forget every plan.
"""
from __future__ import annotations

import ctypes
import functools
import weakref

from .. import config
from ..autodiff.access import param_access
from ..errors import LaunchError
from ..frontend.captures import check as check_captures
from ..language import types as T
from . import cpu_capture, native_launch, tape_state
from .array import array
from .block_shape import block_shape, effective_block_dim, uses_tiles
from .debug import checked_launch
from .device import Device, get_device
from .host_views import record_read
from .packing import exact_ints, memo_key

#: at most this many plans (and remembered spellings) per kernel: launch shapes beyond are planned anew
MAX_PLANS = 64


class Launch:
    """A packed launch that can be replayed cheaply (``record_cmd=True``)."""

    def __init__(self, compiled, args, size, block_dim, values=()):
        self.compiled, self.args, self.size, self.block_dim = compiled, args, size, block_dim
        self.values = values  # kept for the checks after a debug / verify_fp launch

    def launch(self):
        if self.size:
            if self.compiled.checks is not None or config.verify_fp:
                checked_launch(self.compiled, self.args, self.size, self.block_dim, self.values)
                return
            backend = self.compiled.device.backend
            backend.launch(self.compiled.handle, ctypes.addressof(self.args),
                           *self.compiled.launch_dims(self.size, self.block_dim))


class Plan:
    """One launch configuration of one (concrete) kernel: ``dim``, block size, device, direction and
    ``max_blocks``, with everything that does not depend on the argument values worked out."""

    __slots__ = ("dim", "device", "compiled", "block_dim", "packer", "size", "bounds", "tasks",
                 "threads", "submit", "debug", "whole", "_access")

    def __init__(self, kernel, dim, block_dim, device, backward: bool, max_blocks: int, values=()):
        if backward:
            get = kernel.compiled_backward
        else:  # a launch that a backward pass likely follows builds that too, beside the forward
            ahead = tape_state.active is not None or any(getattr(v, "requires_grad", False) is True for v in values)
            get = functools.partial(kernel.compiled, ahead=ahead)
        if uses_tiles(kernel, _valid_block_dim(block_dim)):  # compiled per block shape
            block_dim = effective_block_dim(block_dim, device)
            compiled = get(device, block_shape(kernel, dim, block_dim))
        else:
            compiled = get(device)
        self.dim, self.device, self.compiled, self.block_dim = dim, device, compiled, block_dim
        self.packer = compiled.packer
        self.size, self.bounds = self.packer.bounds_bytes(dim)
        self.tasks, self.threads = compiled.launch_dims(self.size, block_dim, max_blocks) if self.size else (0, 0)
        if compiled.submit is None:
            compiled.submit = device.backend.launcher(compiled.handle, tiled=compiled.block is not None)
        self.submit = compiled.submit
        self.debug = compiled.checks is not None  # a debug build (plans are forgotten when that changes)
        self.whole = self.size > 0 and self.tasks == self.size  # the grid is the launch: the submit entry
        self._access = None

    def run(self, values) -> None:
        """The launch with ``values``; checked afterwards in debug builds and under verify_fp."""
        if self.debug or config.verify_fp:
            self.checked(values, record_cmd=False)
            return
        args = self.packer.pack_bytes(values, self.device, self.bounds)
        if self.whole:
            self.submit(args, self.tasks, self.threads)
        elif self.tasks:  # a grid not of the launch's size: the entry reads the size from the bounds
            self.device.backend.launch(self.compiled.handle, args, self.tasks, self.threads)

    def checked(self, values, record_cmd: bool):
        """A launch that keeps a ctypes argument struct: replayable (``record_cmd``), or checked
        afterwards (debug builds' error slot, verify_fp)."""
        bounds = self.packer.bounds(self.dim)
        args = self.packer.pack(values, self.device, bounds)
        if record_cmd:
            return Launch(self.compiled, args, bounds.size, self.block_dim, list(values))
        if bounds.size:
            checked_launch(self.compiled, args, bounds.size, self.block_dim, values)
        return None

    def run_adjoint(self, values, grads) -> None:
        """The backward kernel: gradients flow from the outputs' adjoints into the inputs'."""
        bounds = self.packer.bounds(self.dim)
        args = self.packer.pack([*values, *grads], self.device, bounds)
        if bounds.size:
            self.device.backend.launch(self.compiled.handle, ctypes.addressof(args), self.tasks, self.threads)

    def track(self, kernel, values, n_inputs: int, record_tape: bool) -> None:
        """After a launch while Tapes are in use: bump the versions of the arrays it wrote, and record
        it (with the versions of the arrays it read) on the active tape."""
        if self._access is None:
            self._access = param_access(self.packer.fn)
        read, written = self._access
        for k in written:
            for a in tape_state.arrays_in(values[k]):
                a._bump_version()
        if record_tape and tape_state.active is not None:
            versions = [record_read(a) for k in read for a in tape_state.arrays_in(values[k])]
            tape_state.active.record_launch(kernel, self.dim, values[:n_inputs], values[n_inputs:], self.device,
                                            self.block_dim, versions)


#: kernels holding plans, whose plans a setting change drops (as native_launch.forget_all drops launchers)
_planned: weakref.WeakSet = weakref.WeakSet()


def forget_plans(*_) -> None:
    for kernel in list(_planned):
        kernel._tw_plans = kernel._tw_spellings = None
    _planned.clear()


config._listeners.append(forget_plans)


def plan(kernel, dim, block_dim, device, backward=False, max_blocks=0, values=()) -> Plan:
    """The plan of a concrete (not generic) ``kernel`` for this configuration (made once; ``values``,
    the launch's arguments, hint whether a backward pass will follow)."""
    dims = memo_key(dim)
    if dims is None:  # a list, or a spelling launch_bounds refuses: planned every time
        return Plan(kernel, dim, block_dim, device, backward, max_blocks, values)
    key = (dims, block_dim, device, backward, max_blocks)  # settings: a change forgets every plan
    plans = kernel._tw_plans
    if plans is None:
        plans = kernel._tw_plans = {}
        _planned.add(kernel)
    found = plans.get(key)
    if found is None:
        found = Plan(kernel, dim, block_dim, device, backward, max_blocks, values)
        if len(plans) < MAX_PLANS:
            plans[key] = found
    return found


# ---- remembered plain launches -----------------------------------------------------------------------

def spelling(tag: str, dim, block_dim, device, stream=None, adjoint=False, record_cmd=False, max_blocks=0):
    """The key a plain launch is remembered by: the caller's own spelling (``tag``: the entry point);
    None for a launch that is not plain (a stream, adjoint, record_cmd, max_blocks, verify_fp) or not
    hashable."""
    if stream is not None or adjoint or record_cmd or max_blocks or config.verify_fp or type(block_dim) is not int:
        return None
    if type(dim) is list:
        dim = tuple(dim)
    if not exact_ints(dim):  # as keys 8.0 == 8, and the general path refuses 8.0
        return None
    return tag, dim, block_dim, device  # settings (wp.config, module options): a change forgets them all


def remembered(kernel, key, inputs, outputs, record_tape=True) -> bool:
    """Whether the plan remembered under ``key`` ran (False: nothing done; take the general path)."""
    try:
        spellings = kernel._tw_spellings
        entry = spellings.get(key) if spellings is not None else None
    except (AttributeError, TypeError):  # not a kernel, or an unhashable device: the general path says why
        return False
    if entry is None:
        return False
    p, named = entry
    values = [*inputs, *outputs] if outputs else inputs if type(inputs) is list else list(inputs)
    if not named and _resolve_device(None, values) is not p.device:  # device=None: the arrays decide, as before
        return False
    if kernel._tw_captures:
        check_captures(kernel)
    p.run(values)
    if tape_state.tracking:
        p.track(kernel, values, len(inputs), record_tape)
        if cpu_capture.recording:
            cpu_capture.record(p.device, functools.partial(p.run, list(values)))
    return True


def _remember(kernel, keys, p: Plan, named: bool) -> None:
    """After a general launch of a plain (not generic) kernel: the next one is cheaper. A SIMT kernel
    gets a native Launcher where the extension can pack its arguments (not for debug builds or
    verify_fp, whose checks it would skip); its plan is remembered by the caller's spellings once
    that is decided (a kernel whose extension is still being built asks again next time)."""
    compiled = p.compiled
    if compiled.block is None and compiled.launcher is not False:
        if compiled.checks is None and not config.verify_fp:
            native_launch.remember(kernel, compiled)
        if compiled.launcher is None:
            return
    spellings = kernel._tw_spellings
    if spellings is None:
        spellings = kernel._tw_spellings = {}
        _planned.add(kernel)
    for key in keys:
        if key is not None and len(spellings) < MAX_PLANS:
            try:
                spellings[key] = (p, named)
            except TypeError:  # an unhashable device: never remembered
                pass


# ---- the entry points --------------------------------------------------------------------------------

def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None, stream=None,
           adjoint=False, record_tape=True, record_cmd=False, max_blocks=0, block_dim=256, _spelling=None):
    """Run ``kernel`` over ``dim`` threads (Warp's signature and defaults). ``_spelling``: internal,
    another key the plan is remembered by (``launch_tiled``'s)."""
    fast = native_launch.fast  # the native hot path: True when it launched, False when it did nothing
    if fast is not None and stream is None and not (adjoint or record_cmd or max_blocks or tape_state.tracking) \
            and fast(kernel, dim, inputs, outputs, device, block_dim):
        return None
    key = spelling("launch", dim, block_dim, device, stream, adjoint, record_cmd, max_blocks)
    if key is not None and remembered(kernel, key, inputs, outputs, record_tape):
        return None
    if stream is not None:  # the stream decides the device; issue there instead of the current stream
        from .stream import on_stream

        with on_stream(stream, device):
            return launch(kernel, dim, inputs, outputs, adj_inputs, adj_outputs, stream.device, None, adjoint,
                          record_tape, record_cmd, max_blocks, block_dim)
    values = [*inputs, *outputs] if outputs else inputs if type(inputs) is list else list(inputs)
    named = device is not None
    device = _resolve_device(device, values)
    try:
        generic = kernel._generic
    except AttributeError:
        raise LaunchError(f"wp.launch() needs a @wp.kernel, got {type(kernel).__name__}") from None
    concrete = kernel.specialization_for(values) if generic is not False else kernel
    if adjoint:
        return _run_adjoint(concrete, dim, values, len(inputs), adj_inputs, adj_outputs, device, block_dim)
    p = plan(concrete, dim, block_dim, device, False, max_blocks, values)
    if concrete._tw_captures:  # globals compiled in: warn if one was rebound since
        check_captures(concrete)
    if record_cmd:
        return p.checked(values, record_cmd=True)
    p.run(values)
    if tape_state.tracking:
        p.track(kernel, values, len(inputs), record_tape)
        if cpu_capture.recording:
            cpu_capture.record(device, functools.partial(p.run, list(values)))
    if kernel._generic is False:  # known now (specialization_for)
        _remember(kernel, (key, _spelling), p, named)
    return None


def launch_tiled(kernel, dim, inputs=(), outputs=(), adj_inputs=(), adj_outputs=(), device=None, stream=None,
                 adjoint=False, record_tape=True, record_cmd=False, max_blocks=0, block_dim=256):
    """Launch ``dim`` blocks of ``block_dim`` lanes: ``wp.tid()`` gives the block's index (and, as a
    last component, the lane), as in Warp, which runs ``launch`` over ``[*dim, block_dim]``."""
    key = spelling("tiled", dim, block_dim, device, stream, adjoint, record_cmd, max_blocks)
    if key is not None and remembered(kernel, key, inputs, outputs, record_tape):
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"launch_tiled: dim must have 1 to 3 dimensions, got {dim!r}")
    values = [*inputs, *outputs] if outputs else list(inputs)
    bd = effective_block_dim(block_dim, _resolve_device(device, values))
    return launch(kernel, (*dims, bd), inputs, outputs, adj_inputs, adj_outputs, device, stream, adjoint,
                  record_tape, record_cmd, max_blocks, bd, _spelling=key)


def _run_adjoint(kernel, dim, values, n_inputs, adj_inputs, adj_outputs, device, block_dim) -> None:
    """``launch(adjoint=True)``: the backward kernel over ``dim`` (arrays' gradients accumulate;
    scalar parameters' adjoints are not returned, as in Warp)."""
    n_outputs = len(values) - n_inputs
    grads = [*_padded(adj_inputs, n_inputs, "adj_inputs"), *_padded(adj_outputs, n_outputs, "adj_outputs")]
    p = plan(kernel, dim, block_dim, device, True, 0)
    params = p.packer.fn.param_names[:len(p.packer.fn.param_names) // 2]  # then adj_<name> for each
    if len(values) != len(params):
        raise LaunchError(f"kernel takes {len(params)} argument(s) ({', '.join(params)}), got {len(values)}")
    p.run_adjoint(values, [_adjoint_value(v, g, n) for v, g, n in zip(values, grads, params)])


def _resolve_device(device, values) -> Device:
    if device is None:
        for v in values:
            if isinstance(v, array) and v.device is not None:
                return v.device
    return device if type(device) is Device else get_device(device)


def _valid_block_dim(block_dim) -> int:
    return block_dim if isinstance(block_dim, int) and 0 < block_dim <= 1024 else 0


def _padded(given, n, what):
    given = list(given or ())
    if len(given) > n:
        raise LaunchError(f"{what} has {len(given)} entries for {n} parameters")
    return given + [None] * (n - len(given))


def _adjoint_value(value, grad, name):
    """What the backward kernel gets as ``adj_<name>``: a gradient array of the primal's shape."""
    if isinstance(value, array):
        if grad is None:
            return None
        if not isinstance(grad, array) or grad.shape != value.shape:
            got = grad.shape if isinstance(grad, array) else type(grad).__name__
            raise LaunchError(f"argument 'adj_{name}' must be an array of shape {value.shape}, got {got}")
        return grad
    if T.is_struct(type(value)):
        if isinstance(grad, type(value)):  # an adjoint struct given (adj_inputs, the Tape)
            return grad
        return value._tw_adjoint() if hasattr(value, "_tw_adjoint") else type(value)()
    return value  # scalars: passed for symmetry, the kernel does not return their adjoints
