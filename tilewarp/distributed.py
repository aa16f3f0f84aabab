"""tilewarp inside the multi-process engines simulation users already run: MPI (``mpi4py``) on CPUs,
NCCL through ``torch.distributed`` on GPUs. tilewarp does not communicate by itself; this module is
the glue (docs/DISTRIBUTED.md):

* ``init()`` reads the launcher's environment (``mpiexec``, ``torchrun``, Slurm), starts the engine,
  and picks the rank's device (``cuda:<local rank>`` where there are GPUs, else the CPU);
* ``ctx.view(a)`` hands a ``wp.array`` to the engine without a copy (a NumPy view of CPU memory, a
  torch tensor through DLPack, the array itself for CUDA-aware MPI);
* ``ctx.allreduce(arrays)`` sums (or averages) arrays across ranks, e.g. gradients after
  ``Tape.backward``, after checking on every rank that all ranks pass the same shapes and dtypes;
* ``Decomposition`` cuts a 1-, 2- or 3-D grid into blocks, one per rank, with ghost layers of any
  width, and ``exchange`` fills the ghost layers from the neighbours.

Every collective has a deadline (``timeout`` seconds, default 300): a rank that died or went its
own way makes the others raise ``DistributedError`` naming the operation, instead of hanging. On
GPUs with NCCL the collectives run on tilewarp's current stream (a torch external stream), so the
kernels before and after them need no device-wide synchronisation.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

import numpy as np

from .language import types as T
from .errors import TileWarpError
from .runtime.array import array as wp_array
from .runtime.array import zeros
from .runtime.device import get_cuda_device_count, get_device, synchronize_device
from .runtime.stream import get_stream

__all__ = ["Context", "Decomposition", "DistributedError", "init", "launcher_environment"]


class DistributedError(TileWarpError, RuntimeError):
    """A collective that could not complete: mismatched arguments across ranks, or a rank that did
    not take part before the deadline."""


#: (rank, size, local rank) variables of the launchers we know, first match wins
_LAUNCHERS = [
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("mpiexec (MPICH / Hydra)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("mpiexec (Open MPI)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("srun (Slurm)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
]


def launcher_environment(environ=None) -> dict:
    """``{"launcher", "rank", "size", "local_rank"}`` from the environment a launcher set (a single
    process, rank 0 of 1, when none did)."""
    env = os.environ if environ is None else environ
    for name, rank, size, local in _LAUNCHERS:
        if rank in env and size in env:
            r, s = int(env[rank]), int(env[size])
            return {"launcher": name, "rank": r, "size": s, "local_rank": int(env.get(local, r))}
    return {"launcher": None, "rank": 0, "size": 1, "local_rank": 0}


@dataclass
class Context:
    """This process's place among the ranks, its device, and the engine's handles."""

    rank: int
    size: int
    local_rank: int
    backend: str  # "mpi", "nccl", "gloo" or "single"
    device: object  # the tilewarp Device this rank computes on
    timeout: float = 300.0
    comm: object = None  # mpi4py communicator (backend "mpi")
    broken: bool = False  # a collective passed its deadline
    _torch: object = field(default=None, repr=False)

    # ---- zero-copy views -----------------------------------------------------------------------

    def view(self, a):
        """``a`` as the engine takes it, sharing memory: a NumPy array (MPI, CPU arrays), the array
        itself (MPI, CUDA arrays: CUDA-aware MPI reads ``__cuda_array_interface__``), a torch
        tensor (NCCL / gloo, through DLPack; remembered per array, as the export costs ~50 us)."""
        if self.backend in ("nccl", "gloo"):
            import weakref

            views = self.__dict__.setdefault("_views", {})
            known = views.get(id(a))
            if known is not None and known[0]() is a:
                return known[1]
            t = self._torch.from_dlpack(a)
            views[id(a)] = (weakref.ref(a, lambda _, k=id(a): views.pop(k, None)), t)
            return t
        if a.device.is_cpu:
            return a.numpy()
        return a

    # ---- collectives ---------------------------------------------------------------------------

    def barrier(self, what="barrier"):
        if self.backend == "mpi":
            self._wait([self.comm.Ibarrier()], what)
        elif self.backend != "single":
            self._torch.distributed.barrier()

    def allreduce(self, arrays, op="sum"):
        """Sum (``op="sum"``) or average (``"mean"``) each array over the ranks, in place: every
        rank ends with the same values. All ranks must pass the same shapes and dtypes in the same
        order; otherwise every rank raises ``DistributedError`` saying which differ."""
        arrays = list(arrays) if isinstance(arrays, (list, tuple)) else [arrays]
        if op not in ("sum", "mean"):
            raise ValueError(f"allreduce: op must be 'sum' or 'mean', got {op!r}")
        if self.size == 1:
            return arrays
        self.check_same([(tuple(a.shape), T.type_name(a.dtype)) for a in arrays], "allreduce")
        if self.backend == "mpi":
            from mpi4py import MPI

            self._settle(arrays)
            requests = [self.comm.Iallreduce(MPI.IN_PLACE, self._buffer(a), op=MPI.SUM) for a in arrays]
            self._wait(requests, "allreduce")
            if op == "mean":
                for a in arrays:
                    self._scale(a, 1.0 / self.size)
            return arrays
        dist = self._torch.distributed
        with self._on_stream():
            for a in arrays:
                t = self.view(a)
                dist.all_reduce(t, op=dist.ReduceOp.SUM)
                if op == "mean":
                    t.div_(self.size)
        return arrays

    def check_same(self, description, what: str):
        """Raise on every rank unless all ranks pass an equal ``description`` (any picklable value)."""
        if self.size == 1:
            return
        digest = np.frombuffer(_digest(repr(description)), dtype=np.int64).copy()
        low, high = digest.copy(), digest.copy()
        if self.backend == "mpi":
            from mpi4py import MPI

            self._wait([self.comm.Iallreduce(MPI.IN_PLACE, low, op=MPI.MIN),
                        self.comm.Iallreduce(MPI.IN_PLACE, high, op=MPI.MAX)], f"{what} (argument check)")
            if (low == high).all():
                return
            every = self.comm.allgather(description)
        else:
            torch, dist = self._torch, self._torch.distributed
            where = torch.device("cpu" if self.device.is_cpu else f"cuda:{self.device.ordinal}")
            lo, hi = torch.tensor(low, device=where), torch.tensor(high, device=where)
            dist.all_reduce(lo, op=dist.ReduceOp.MIN)
            dist.all_reduce(hi, op=dist.ReduceOp.MAX)
            if torch.equal(lo, hi):
                return
            every = [None] * self.size
            dist.all_gather_object(every, description)
        lines = "; ".join(f"rank {r}: {d}" for r, d in enumerate(every))
        raise DistributedError(f"{what}: the ranks passed different arrays ({lines})")

    # ---- internals -----------------------------------------------------------------------------

    def _buffer(self, a):
        if not a.is_contiguous:
            raise DistributedError("collectives take contiguous arrays (an array, not a strided view)")
        return self.view(a)

    def _settle(self, arrays):
        """MPI reads memory directly: kernels writing these arrays must have finished."""
        if any(not a.device.is_cpu for a in arrays):
            synchronize_device(self.device)

    def _scale(self, a, factor):
        if a.device.is_cpu:
            v = a.numpy()
            v *= v.dtype.type(factor)
        else:
            a.assign(wp_array(a.numpy() * factor, dtype=a.dtype, device=a.device))

    def _wait(self, requests, what):
        """Wait for MPI requests until the deadline; past it, raise (the other ranks will too)."""
        from mpi4py import MPI

        deadline = time.monotonic() + self.timeout
        pause = 1e-5
        while not MPI.Request.Testall(requests):
            if time.monotonic() > deadline:
                self.broken = True  # its requests stay pending: at exit the job is aborted (init), not finalised
                raise DistributedError(f"{what}: rank {self.rank} of {self.size} waited {self.timeout:g} s for the "
                                       "other ranks (one of them stopped or is doing something else)")
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)

    def _on_stream(self):
        """torch collectives issued on tilewarp's current CUDA stream (ordered after its kernels)."""
        import contextlib

        if self.device.is_cpu:
            return contextlib.nullcontext()

        torch, handle = self._torch, get_stream(self.device).cuda_stream
        streams = self.__dict__.setdefault("_streams", {})
        if handle not in streams:
            streams[handle] = torch.cuda.ExternalStream(handle, device=torch.device(f"cuda:{self.device.ordinal}"))
        return torch.cuda.stream(streams[handle])


def _digest(text: str) -> bytes:
    import hashlib

    return hashlib.sha256(text.encode()).digest()[:16]


def _abort_job(comm):
    """Abort the MPI job, letting the launcher forward what this rank printed first: an abort
    kills the job's processes at once, and output still in the pipe to the launcher was lost."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    time.sleep(0.5)
    comm.Abort(1)


def init(backend: str = "auto", device=None, timeout: float = 300.0) -> Context:
    """This process's ``Context``. ``backend``: ``"mpi"``, ``"nccl"``, ``"gloo"`` (torch), ``"single"``
    or ``"auto"``: torch when started by ``torchrun`` (NCCL on GPUs, gloo on CPUs), MPI when started
    by ``mpiexec`` / ``srun``, else a single process. ``device``: the rank's device (default
    ``cuda:<local rank mod GPUs>`` where there are GPUs, else ``cpu``)."""
    env = launcher_environment()
    if backend == "auto":
        backend = "single" if env["launcher"] is None else "torch" if env["launcher"] == "torchrun" else "mpi"
    if device is None:
        gpus = get_cuda_device_count()
        device = f"cuda:{env['local_rank'] % gpus}" if gpus and backend != "mpi" else "cpu"
    device = get_device(device)
    if backend == "torch":
        backend = "gloo" if device.is_cpu else "nccl"
    if backend == "single":
        return Context(0, 1, 0, "single", device, timeout)
    if backend == "mpi":
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise DistributedError("backend 'mpi' needs mpi4py (pip install tilewarp[dist])") from e
        import atexit

        comm = MPI.COMM_WORLD
        local = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
        ctx = Context(comm.Get_rank(), comm.Get_size(), local, "mpi", device, timeout, comm=comm)
        # after a deadline passed, MPI_Finalize would wait for the missing rank forever: end the job
        # instead (atexit runs this before mpi4py's own finalisation, registered earlier)
        atexit.register(lambda: ctx.broken and _abort_job(comm))
        return ctx
    if backend not in ("nccl", "gloo"):
        raise ValueError(f"init: unknown backend {backend!r}")
    try:
        import datetime

        import torch
        import torch.distributed as dist
    except ImportError as e:
        raise DistributedError(f"backend '{backend}' needs torch") from e
    if backend == "nccl":
        torch.cuda.set_device(device.ordinal)  # NCCL's own buffers (object collectives) go to this rank's GPU
    if not dist.is_initialized():
        import atexit

        kwargs = {"device_id": torch.device(f"cuda:{device.ordinal}")} if backend == "nccl" else {}
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout), **kwargs)
        atexit.register(lambda: dist.is_initialized() and dist.destroy_process_group())  # NCCL frees its resources
    return Context(dist.get_rank(), dist.get_world_size(), env["local_rank"], backend, device, timeout, _torch=torch)


# ---- block decomposition with ghost layers ------------------------------------------------------


def split(n: int, parts: int, k: int) -> tuple:
    """``(start, extent)`` of part ``k`` of ``n`` cut into ``parts`` near-equal pieces (the first
    ``n % parts`` one longer)."""
    base, extra = divmod(n, parts)
    return k * base + min(k, extra), base + (1 if k < extra else 0)


def process_grid(size: int, shape: tuple) -> tuple:
    """Ranks per axis, product ``size``: each prime factor of ``size``, largest first, goes to the
    axis with the longest pieces so far (blocks near-cubic, little ghost surface)."""
    dims = [1] * len(shape)
    factors, n, p = [], size, 2
    while n > 1:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    for f in sorted(factors, reverse=True):
        axis = max(range(len(shape)), key=lambda a: shape[a] / dims[a])
        dims[axis] *= f
    return tuple(dims)


class Decomposition:
    """A ``shape`` grid (1-3 axes) cut into one block per rank, each block stored with ``ghost``
    layers on every side: ``local_shape = block + 2 * ghost`` per axis, ``interior`` the block's
    slices in it, ``start`` / ``block`` its place in the global grid. ``periodic`` (a bool or one
    per axis) wraps the neighbours around; elsewhere the outer ghost layers are left to the user's
    boundary condition."""

    def __init__(self, ctx: Context, shape, ghost: int = 1, dims=None, periodic=False):
        shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
        if not 1 <= len(shape) <= 3:
            raise ValueError(f"Decomposition: 1 to 3 axes, got shape {shape}")
        if not isinstance(ghost, int) or ghost < 0:
            raise ValueError(f"Decomposition: ghost must be a non-negative int, got {ghost!r}")
        self.ctx, self.shape, self.ghost = ctx, shape, ghost
        self.dims = tuple(dims) if dims is not None else process_grid(ctx.size, shape)
        if len(self.dims) != len(shape) or math.prod(self.dims) != ctx.size:
            raise ValueError(f"Decomposition: a process grid {self.dims} for {ctx.size} ranks and {len(shape)} axes")
        self.periodic = (periodic,) * len(shape) if isinstance(periodic, bool) else tuple(periodic)
        self.coords = tuple(int(c) for c in np.unravel_index(ctx.rank, self.dims))
        pieces = [split(n, d, c) for n, d, c in zip(shape, self.dims, self.coords)]
        self.start = tuple(p[0] for p in pieces)
        self.block = tuple(p[1] for p in pieces)
        smallest = [shape[a] // self.dims[a] for a in range(len(shape))]
        for a, (n, d) in enumerate(zip(shape, self.dims)):
            if smallest[a] < max(ghost, 1):
                raise ValueError(f"Decomposition: axis {a} has {n} points for {d} ranks: blocks of {smallest[a]} "
                                 f"cannot hold ghost layers {ghost} deep (use fewer ranks or a thinner ghost)")
        self.local_shape = tuple(b + 2 * ghost for b in self.block)
        self._checked = False
        self.interior = tuple(slice(ghost, ghost + b) for b in self.block)

    def neighbour(self, axis: int, step: int):
        """The rank ``step`` (-1 or +1) blocks along ``axis``, or None past a non-periodic edge."""
        c = list(self.coords)
        c[axis] += step
        if not 0 <= c[axis] < self.dims[axis]:
            if not self.periodic[axis]:
                return None
            c[axis] %= self.dims[axis]
        return int(np.ravel_multi_index(c, self.dims))

    def zeros(self, dtype=float, requires_grad=False):
        """A local block with its ghost layers, on this rank's device."""
        return zeros(self.local_shape, dtype=dtype, device=self.ctx.device, requires_grad=requires_grad)

    def global_slices(self) -> tuple:
        """This rank's block as slices of the global grid."""
        return tuple(slice(s, s + b) for s, b in zip(self.start, self.block))

    def exchange(self, a):
        """Fill ``a``'s ghost layers with the neighbours' boundary layers, axis by axis (so the
        corners and edges come along too)."""
        self._check(a)
        g = self.ghost
        if g == 0:
            return a
        if not self._checked:  # the first exchange, on every rank alike: the same grid, ghosts and dtype
            self.ctx.check_same((self.shape, self.dims, self.ghost, T.type_name(a.dtype)), "exchange")
            self._checked = True
        for axis in range(len(self.shape)):
            if self.dims[axis] == 1 and not self.periodic[axis]:
                continue  # nobody to exchange with along this axis
            sends = []
            n = self.local_shape[axis]
            for step in (-1, 1):
                # my layers next to side `step` go to the neighbour there (into its ghost on the other
                # side); the neighbour on the other side sends me its layers for my ghost on that side
                inner = slice(g, 2 * g) if step < 0 else slice(n - 2 * g, n - g)
                ghost = slice(n - g, n) if step < 0 else slice(0, g)
                sends.append((self.neighbour(axis, step), self._slab(axis, inner), self.neighbour(axis, -step),
                              self._slab(axis, ghost), 8 + step))
            self._swap(a, sends, f"exchange (axis {axis})")
        return a

    def gather(self, a, root: int = 0):
        """The whole grid's interior values on ``root`` (a NumPy array), None on the other ranks."""
        self._check(a)
        mine = np.ascontiguousarray(_host(a)[self.interior])
        if self.ctx.size == 1:
            return mine
        if self.ctx.backend == "mpi":
            parts = self.ctx.comm.gather((self.start, mine), root=root)
        else:
            parts = [None] * self.ctx.size if self.ctx.rank == root else None
            self.ctx._torch.distributed.gather_object((self.start, mine), parts, dst=root)
        if self.ctx.rank != root:
            return None
        out = np.empty(self.shape + mine.shape[len(self.shape):], dtype=mine.dtype)
        for start, block in parts:
            out[tuple(slice(s, s + b) for s, b in zip(start, block.shape))] = block
        return out

    # ---- internals -------------------------------------------------------------------------------

    def _check(self, a):
        if tuple(a.shape[:len(self.shape)]) != self.local_shape:
            raise ValueError(f"Decomposition: expected a local block of shape {self.local_shape} (the block "
                             f"{self.block} and {self.ghost} ghost layers a side), got {tuple(a.shape)}")

    def _slab(self, axis, piece):
        return tuple(piece if k == axis else slice(None) for k in range(len(self.shape)))

    def _swap(self, a, sends, what):
        ctx = self.ctx
        if ctx.backend in ("mpi", "single"):
            host = _host(a)
            buffers, requests, receives = [], [], []
            for dest, inner, source, ghost, tag in sends:
                if dest is not None and dest == ctx.rank:  # periodic with one rank along the axis
                    host[ghost] = host[inner]
                    continue
                if dest is not None:
                    out = np.ascontiguousarray(host[inner])
                    buffers.append(out)
                    requests.append(ctx.comm.Isend(out, dest=dest, tag=tag))
                if source is not None and source != ctx.rank:
                    into = np.empty_like(host[ghost])
                    receives.append((ghost, into))
                    requests.append(ctx.comm.Irecv(into, source=source, tag=tag))
            if requests:
                ctx._wait(requests, what)
            for ghost, into in receives:
                host[ghost] = into
            if not a.device.is_cpu:
                a.assign(host)
            return
        dist, t = ctx._torch.distributed, ctx.view(a)
        with ctx._on_stream():
            ops, receives = [], []
            for dest, inner, source, ghost, _ in sends:
                if dest is not None and dest == ctx.rank:
                    t[ghost] = t[inner]
                    continue
                if dest is not None:
                    ops.append(dist.P2POp(dist.isend, t[inner].contiguous(), dest))
                if source is not None and source != ctx.rank:
                    into = t[ghost].contiguous()
                    receives.append((ghost, into))
                    ops.append(dist.P2POp(dist.irecv, into, source))
            if ops:
                for req in dist.batch_isend_irecv(ops):
                    req.wait()
            for ghost, into in receives:
                if into.data_ptr() != t[ghost].data_ptr():  # (a contiguous ghost slab was received in place)
                    t[ghost] = into


def _host(a) -> np.ndarray:
    """A NumPy view of a CPU array; for a GPU array, a host copy (written back by the caller)."""
    if a.device.is_cpu:
        return a.numpy()

    synchronize_device(a.device)
    return a.numpy()
