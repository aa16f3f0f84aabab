"""``wp.Volume``: a sparse voxel grid in the NanoVDB format, sampled in kernels.

The volume is its NanoVDB buffer, kept as is in the device's memory; the id handed to kernels is the
buffer's address (``native/geometry/volume.h`` walks the tree in place), so ``load_from_address``
can alias any grid already in memory. The host keeps a snapshot of the grid's headers and feature
metadata, taken (and checked) when the volume is made, for the introspection methods. Loading a file
checks every node reference of every grid first (``nanovdb.validate``), so a corrupt file raises
instead of sending kernels astray. Allocations take their headers from the host (``vdb_build``) and
build their nodes with kernels on the volume's device (``vdb_rebuild``): an exact grid is sized by
the node counts its points make, a rebuildable one keeps node slots for capacities and is built and
rebuilt in place, inside graph captures too.
"""
from __future__ import annotations

import weakref
from typing import ClassVar, NamedTuple

import numpy as np

from ..language import types as T
from ..runtime import retired
from ..runtime.array import array, zeros
from ..runtime.device import get_device
from . import nanovdb as nv
from . import volume_alloc as va
from .vdb_build import leaf_offsets, leaf_origins, voxel_coords

#: live volumes by id, so that an address is aliased by one Volume at most (as in Warp)
_LIVE: "weakref.WeakValueDictionary[int, Volume]" = weakref.WeakValueDictionary()


def _read(device, ptr: int, nbytes: int) -> np.ndarray:
    """A host copy of ``nbytes`` at ``ptr`` on ``device``."""
    host = np.empty(max(nbytes, 0), np.uint8)
    if nbytes > 0:
        device.backend.copy_dtoh(host.ctypes.data, ptr, nbytes)
    return host


class Volume:
    """A sparse volume (Warp's ``wp.Volume``), in NanoVDB's format: float, double, int32, int64,
    uint32, vec3/vec4 (float or double) grids, and index grids whose voxels index user arrays."""

    CLOSEST: ClassVar[int] = 0
    """Sampling mode: the nearest voxel"""
    LINEAR: ClassVar[int] = 1
    """Sampling mode: trilinear interpolation"""

    REBUILD_SUCCESS: ClassVar[int] = 0
    REBUILD_LEAF_CAPACITY_EXCEEDED: ClassVar[int] = va.REBUILD_LEAF
    REBUILD_LOWER_CAPACITY_EXCEEDED: ClassVar[int] = va.REBUILD_LOWER
    REBUILD_UPPER_CAPACITY_EXCEEDED: ClassVar[int] = va.REBUILD_UPPER
    REBUILD_VOXEL_CAPACITY_EXCEEDED: ClassVar[int] = va.REBUILD_VOXEL
    REBUILD_INVALID_INPUT: ClassVar[int] = 1 << 4

    class RebuildInfo(NamedTuple):
        """The input kind ("tiles", "voxels", None) and node capacities reserved for ``rebuild``."""

        kind: str | None
        max_voxel_count: int
        max_leaf_node_count: int
        max_lower_node_count: int
        max_upper_node_count: int

    class ActiveStats(NamedTuple):
        """The grid's current voxel and node counts."""

        voxel_count: int
        leaf_node_count: int
        lower_node_count: int
        upper_node_count: int

    class GridInfo(NamedTuple):
        """Grid metadata."""

        name: str
        size_in_bytes: int
        grid_index: int
        grid_count: int
        type_str: str
        translation: object  # vec3f
        transform_matrix: object  # mat33f

    class FeatureArrayInfo(NamedTuple):
        """A feature (blind data) array's metadata."""

        name: str
        ptr: int
        value_size: int
        value_count: int
        type_str: str

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self.id = None  # until __init__ has a buffer (a bare __new__ then __del__ must work, as in Warp)
        return self

    def __init__(self, data: array | None, copy: bool = True, *, _validated: bool = False):
        """A volume of the NanoVDB grid in ``data`` (a ``wp.array`` of bytes), copied or aliased. Its
        headers, feature metadata and every node reference are checked first (``_validated``: they
        were, by ``load_from_nvdb``), so kernels never walk outside the buffer."""
        self._rebuild_info = Volume.RebuildInfo(None, 0, 0, 0, 0)
        self._alloc = None  # what a rebuild needs: grid type, background, map, capacities
        if data is None:
            return
        if not isinstance(data, array) or data.dtype is not T.uint8 or not data.is_contiguous or data.ndim != 1:
            raise TypeError(f"Volume(data): data must be a contiguous 1-d wp.array of uint8 (a NanoVDB grid), "
                            f"got {getattr(data, 'dtype', type(data).__name__)!r}")
        self.device = data.device
        size = data.size or self._declared_size(data)
        if not copy:
            if data.ptr % 8:
                raise RuntimeError("Volume(data, copy=False): data must be 8-byte aligned to be read in place")
            if data.ptr in _LIVE:
                raise RuntimeError("Volume(data, copy=False): a Volume already aliases this address")
        self._snapshot(data.ptr, size)
        if not _validated:
            self._check_tree(data.ptr)
        if copy:
            self._buffer = array(dtype=T.uint8, shape=size, device=self.device)
            self.device.backend.copy_dtod(self._buffer.ptr, data.ptr, size)
        else:
            self._buffer = data  # kept alive with the volume
        self._size = size
        self.id = self._buffer.ptr
        _LIVE[self.id] = self

    def _declared_size(self, data) -> int:
        """A buffer of unknown size (an aliased address): the size its grid header declares."""
        if not data.ptr:
            raise RuntimeError("Volume(data): null buffer pointer")
        return int(nv.grid_header(_read(data.device, data.ptr, nv.GRID_SIZE))["grid_size"])

    def _snapshot(self, ptr: int, size: int) -> None:
        """Read and check the grid and tree headers and the feature metadata of the buffer at ``ptr``."""
        if size < nv.GRID_SIZE + nv.TREE_SIZE:
            raise RuntimeError(f"Volume(data): {size} bytes cannot hold a NanoVDB grid")
        heads = _read(self.device, ptr, nv.GRID_SIZE + nv.TREE_SIZE)
        head = nv.grid_header(heads)
        problem = nv.header_problem(head, size)
        blind = np.zeros(0, nv.BLIND_META)
        if problem is None:
            offset, count = int(head["blind_offset"]), int(head["blind_count"])
            blind = _read(self.device, ptr + offset, count * nv.BLIND_SIZE).view(nv.BLIND_META)
            problem = nv.blind_problem(blind, offset, int(head["grid_size"]))
        if problem is not None:
            raise RuntimeError(f"Volume(data): not a valid NanoVDB grid: {problem}")
        self._head, self._tree, self._blind = head.copy(), nv.tree_header(heads).copy(), blind.copy()

    def _check_tree(self, ptr: int) -> None:
        if not int(self._head["flags"]) & nv.FLAG_BREADTH_FIRST:
            raise RuntimeError("Volume(data): Unsupported NanoVDB tree layout (only breadth-first grids are supported)")
        grid = _read(self.device, ptr, int(self._head["grid_size"]))
        problem = nv.tree_problem(grid, self._head)
        if problem is not None:
            raise RuntimeError(f"Volume(data): Invalid NanoVDB grid structure: {problem}")

    def __del__(self):
        if getattr(self, "id", None) and _LIVE.get(self.id) is self:
            del _LIVE[self.id]
            retired.retire(self.id, "wp.Volume")
        self.id = None

    # ---- the buffer and its metadata -------------------------------------------------------------

    def _valid(self) -> None:
        if not self.id or not hasattr(self, "_head"):
            raise RuntimeError("Invalid Volume")

    def array(self) -> array:
        """The volume's NanoVDB buffer, as a ``wp.array`` of bytes (aliasing it)."""
        self._valid()
        out = array(ptr=self.id, dtype=T.uint8, shape=self._size, device=self.device)
        out.deleter = None  # the volume owns the memory
        out._tw_volume = self  # keep it alive as long as the view
        return out

    @property
    def _code(self) -> int:
        return int(self._head["grid_type"])

    def get_grid_info(self) -> Volume.GridInfo:
        """The grid's name, size, position in its buffer, value type and index-to-world map."""
        self._valid()
        h = self._head
        return Volume.GridInfo(self._decode_nvdb_name(h["name"]), int(h["grid_size"]), int(h["grid_index"]),
                               int(h["grid_count"]), nv.type_name(self._code), T.vec3(*h["vecf"].tolist()),
                               T.mat33(*h["matf"].tolist()))

    @staticmethod
    def _decode_nvdb_name(raw) -> str:
        name = nv.c_string(raw)
        if name is None:
            raise RuntimeError("Invalid NanoVDB name")
        return name

    @property
    def dtype(self):
        """The values' type (``wp.float32``, ``wp.vec3``, ...); None for index grids and types no kernel
        type matches."""
        return va.NVDB_DTYPES.get(self.get_grid_info().type_str)

    @property
    def is_index(self) -> bool:
        """Whether this is an index grid (its voxels number the elements of user arrays)."""
        return self.get_grid_info().type_str in nv.INDEX_TYPES

    @property
    def is_rebuildable(self) -> bool:
        return self._rebuild_info.kind is not None

    def get_rebuild_info(self) -> Volume.RebuildInfo:
        return self._rebuild_info

    def get_voxel_size(self) -> tuple:
        """The index-to-world image of the voxel diagonal (the voxel sizes of an axis-aligned map)."""
        self._valid()
        return tuple(float(np.float32(v)) for v in self._head["voxel_size"])

    def get_tile_count(self) -> int:
        """The number of leaves (8^3 voxel tiles); a rebuildable volume's capacity."""
        self._valid()
        return self._rebuild_info.max_leaf_node_count if self.is_rebuildable else int(self._tree["leaf_count"])

    def get_voxel_count(self) -> int:
        """Voxels an index refers to: active ones of OnIndex grids, every leaf voxel otherwise; a
        rebuildable volume's capacity."""
        self._valid()
        if self.is_rebuildable:
            return self._rebuild_info.max_voxel_count
        return self._indexed_voxels(self._head, self._tree)

    @staticmethod
    def _indexed_voxels(head, tree) -> int:
        if int(head["grid_type"]) in nv.ON_INDEX_CODES:
            return int(tree["voxel_count"])
        return int(tree["leaf_count"]) * 512

    def get_active_stats(self) -> Volume.ActiveStats:
        """The current topology, read from the grid (for rebuildable volumes, not their capacity)."""
        self._valid()
        heads = _read(self.device, self.id, nv.GRID_SIZE + nv.TREE_SIZE)
        head, tree = nv.grid_header(heads), nv.tree_header(heads)
        return Volume.ActiveStats(self._indexed_voxels(head, tree), int(tree["leaf_count"]), int(tree["lower_count"]),
                                  int(tree["upper_count"]))

    def _leaves(self) -> tuple:
        """(leaf region on the host, the leaves' byte offsets in it)."""
        tree = nv.tree_header(_read(self.device, self.id, nv.GRID_SIZE + nv.TREE_SIZE))  # rebuilds change it
        start = nv.GRID_SIZE + int(tree["leaf_offset"])
        count = int(tree["leaf_count"])
        leaf_size = nv.LAYOUTS[self._code].leaf_size if self._code in nv.LAYOUTS else 0
        end = start + count * leaf_size if leaf_size else int(self._head["grid_size"])
        if end > self._size:  # checked when the volume was made; a rebuild keeps it so
            raise RuntimeError("Invalid Volume: its leaves lie outside its buffer")
        region = _read(self.device, self.id + start, end - start) if count else np.zeros(0, np.uint8)
        return region, leaf_offsets(region, self._code, count)

    def _output(self, out, rows: int, what: str):
        if out is None:
            return zeros((rows, 3), dtype=T.int32, device=self.device)
        if not isinstance(out, array) or out.device != self.device or out.shape[0] < rows:
            raise RuntimeError(f"'out' must be an array with at least {rows} rows on device {self.device}")
        ok = out.is_contiguous and ((out.ndim == 1 and out.dtype is T.vec3i) or
                                    (out.ndim == 2 and out.shape[1] == 3 and out.dtype is T.int32))
        if not ok:
            raise RuntimeError("'out' must be a contiguous 1D array with type vec3i or a 2D array of type int32 "
                               f"with shape (N, 3), for the {what}")
        return out

    @staticmethod
    def _store_rows(out, rows: np.ndarray) -> None:
        if len(rows):
            out[0:len(rows)].assign(rows.astype(np.int32).reshape(-1, 3))

    def get_tiles(self, out: array | None = None) -> array:
        """The index-space origin of every leaf (8^3 tile), into ``out`` (N x 3 int32 or vec3i) if given."""
        self._valid()
        out = self._output(out, self.get_tile_count(), "tile origins")
        region, offsets = self._leaves()
        self._store_rows(out, leaf_origins(region, offsets))
        return out

    def get_voxels(self, out: array | None = None) -> array:
        """The index-space coordinate of every indexed voxel, at its index (see ``get_voxel_count``)."""
        self._valid()
        count = self.get_voxel_count()
        out = self._output(out, count, "voxel coordinates")
        region, offsets = self._leaves()
        if len(offsets):
            coords, index = voxel_coords(region, offsets, self._code)
            keep = index < count
            rows = np.zeros((min(count, int(index[keep].max(initial=-1)) + 1), 3), np.int32)
            rows[index[keep]] = coords[keep]
            self._store_rows(out, rows)
        return out

    # ---- feature arrays ----------------------------------------------------------------------------

    def get_feature_array_count(self) -> int:
        """How many feature (blind data) arrays the grid carries."""
        blind = getattr(self, "_blind", None)
        return 0 if blind is None else len(blind)

    def get_feature_array_info(self, feature_index: int) -> Volume.FeatureArrayInfo:
        """Name, address, value size and count, and type of feature array ``feature_index``."""
        blind = getattr(self, "_blind", None)
        if blind is None or not self.id or not 0 <= int(feature_index) < len(blind):
            raise RuntimeError("Invalid feature array")
        i = int(feature_index)
        m = blind[i]
        ptr = self.id + int(self._head["blind_offset"]) + i * nv.BLIND_SIZE + int(m["data_offset"])
        return Volume.FeatureArrayInfo(self._decode_nvdb_name(m["name"]), ptr, int(m["value_size"]),
                                       int(m["value_count"]), nv.type_name(int(m["data_type"])))

    def feature_array(self, feature_index: int, dtype=None) -> array:
        """Feature array ``feature_index`` as a ``wp.array`` (aliasing the grid): of ``dtype`` (by default
        its recorded type, or bytes); bytes may be viewed as any type and any type as bytes."""
        info = self.get_feature_array_info(feature_index)
        dtype = va.NVDB_DTYPES.get(info.type_str, T.uint8) if dtype is None else T.value_type(dtype)
        size, count, want = info.value_size, info.value_count, T.type_size(dtype)
        if want == 1:
            count, size = count * size, 1
        elif size == 1 and count % want == 0:
            count, size = count // want, want
        if want != size:
            raise RuntimeError(f"Cannot cast feature data of size {size} to array dtype {T.type_name(dtype)}")
        out = array(ptr=info.ptr, dtype=dtype, shape=count, device=self.device)
        out._tw_volume = self
        return out

    # ---- files and addresses -----------------------------------------------------------------------

    @classmethod
    def load_from_nvdb(cls, file_or_buffer, device=None) -> Volume:
        """A volume from a ``.nvdb`` file (an open binary file, or its bytes); every grid is checked."""
        data = file_or_buffer.read() if hasattr(file_or_buffer, "read") else file_or_buffer
        if isinstance(data, np.ndarray):
            data = data.tobytes()
        grids = np.frombuffer(nv.read_file(data), np.uint8)
        status = nv.validate(grids)
        if status == "unsupported":
            raise RuntimeError("Unsupported NanoVDB tree layout (only breadth-first grids are supported)")
        if status != "ok":
            raise RuntimeError(f"Invalid NanoVDB grid structure: {status}")
        return cls(array(grids, dtype=T.uint8, device=get_device(device)), copy=False, _validated=True)

    def save_to_nvdb(self, path, codec: str = "none"):
        """Write the volume (and the grids after it in its buffer) as a ``.nvdb`` file."""
        self._valid()
        if codec not in nv.CODECS:
            raise RuntimeError(f"Unsupported codec requested: {codec!r} (one of {sorted(nv.CODECS)})")
        if codec == "blosc":
            nv._blosc()
        if int(self._head["grid_index"]) > 0:
            raise RuntimeError("Saving of aliased Volumes is not supported. Use `save_to_nvdb` on the original "
                               "volume, before any `load_next_grid` calls.")
        data = _read(self.device, self.id, self._size)
        grids, at = [], 0
        for _ in range(int(self._head["grid_count"])):
            if at + nv.GRID_SIZE > len(data):
                break
            size = int(nv.grid_header(data, at)["grid_size"])
            grids.append(data[at:at + size])
            at += size
        nv.write_file(path, grids, codec)
        return path

    @classmethod
    def load_from_address(cls, grid_ptr: int, buffer_size: int = 0, device=None) -> Volume:
        """A volume aliasing a grid already in memory at ``grid_ptr`` (``buffer_size`` bytes, or the
        grid's own size when 0); one Volume per address."""
        if not grid_ptr:
            raise RuntimeError("Invalid grid buffer pointer")
        if int(grid_ptr) in _LIVE:
            raise RuntimeError("A Volume has already been created for this grid, aliasing it is not possible.")
        data = array(ptr=int(grid_ptr), dtype=T.uint8, shape=int(buffer_size), device=get_device(device))
        return cls(data, copy=False)

    def load_next_grid(self) -> Volume | None:
        """The grid after this one in the buffer, if any, as a volume aliasing it."""
        info = self.get_grid_info()
        if info.grid_index + 1 >= info.grid_count or self._size <= info.size_in_bytes:
            return None
        nxt = Volume.load_from_address(self.id + info.size_in_bytes, self._size - info.size_in_bytes, self.device)
        nxt._previous_grid = self  # its memory is this volume's
        return nxt

    @classmethod
    def load_from_numpy(cls, ndarray: np.ndarray, min_world=(0.0, 0.0, 0.0), voxel_size=1.0, bg_value=0.0,
                        device=None) -> Volume:
        """A volume of a dense 3-d array (4-d with 3 components: a vec3 grid) whose voxel (0, 0, 0) sits at
        ``min_world``; an ``int`` background makes an int32 grid, other scalars a float32 one."""
        sizes = va.normalize_voxel_size(voxel_size)
        data = np.asarray(ndarray)
        shape = [-(-s // 8) * 8 for s in data.shape[:3]]
        lo = np.asarray(min_world, dtype=np.float64)
        hi = [lo[a] + (shape[a] - 1) * sizes[a] for a in range(3)]
        if not hasattr(bg_value, "__len__") and not isinstance(bg_value, int):
            bg_value = float(bg_value)
        volume = cls.allocate(lo, hi, sizes, bg_value=bg_value, translation=lo, points_in_world_space=True,
                              device=device)
        va.fill_dense(volume, data, bg_value, volume.device)
        return volume

    # ---- allocation (volume_alloc.py) ------------------------------------------------------------

    allocate = classmethod(va.allocate)
    allocate_by_tiles = classmethod(va.allocate_by_tiles)
    allocate_by_voxels = classmethod(va.allocate_by_voxels)
    rebuild = va.rebuild

    def _install_empty(self, head: np.ndarray, size: int, device) -> None:
        """Become a grid of ``size`` bytes, zeroed, whose first bytes ``head`` (headers and root, from
        ``vdb_build``) ``vdb_rebuild.write_head`` writes; the snapshot is taken from ``head`` (nothing
        is read back, so this works inside a graph capture)."""
        self.device = device
        self._buffer = zeros(size, dtype=T.uint8, device=device)
        self._size = size
        self._head, self._tree = nv.grid_header(head).copy(), nv.tree_header(head).copy()
        self._blind = np.zeros(0, nv.BLIND_META)
        self.id = self._buffer.ptr
        _LIVE[self.id] = self
