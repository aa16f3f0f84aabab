"""Warp's geometry objects: ``HashGrid`` (and, as they land, ``Bvh``, ``Mesh``, ``Volume``,
``MarchingCubes``). Each owns buffers on one device and hands kernels a ``wp.uint64`` id; the
kernel-side queries are ordinary builtins (``tilewarp/builtins/hash_grid.py`` ...) with their C++ in
``native/geometry/``. Builds run as tilewarp kernels on the object's device.

Scripts reach these as ``wp.HashGrid`` ...: the package's ``__getattr__`` loads this library on first
use (``import tilewarp`` stays light)."""
from .bvh import Bvh  # noqa: F401
from .delaunay import delaunay_edge_flip, find_triangle_neighbor_edge_index, tri_tri_adjacency  # noqa: F401
from .hash_grid import HashGrid  # noqa: F401
from .mesh import Mesh  # noqa: F401
from .marching_cubes import IsoSurfaceBase, IsoSurfaceMarchingCubes, MarchingCubes  # noqa: F401
from .surface_nets import IsoSurfaceNets  # noqa: F401
from .sparse_marching_cubes import lipschitz_octree, sparse_marching_cubes, sparse_marching_cubes_from_cells  # noqa
from .swept_volume import (SweptVolumeSignMode, swept_volume_bounds, swept_volume_field,  # noqa: F401
                           swept_volume_mesh, swept_volume_sdf)
from .texture import Texture, Texture1D, Texture2D, Texture3D, TextureAddressMode, TextureFilterMode  # noqa: F401
from .volume import Volume  # noqa: F401

#: the names ``wp.<name>`` resolves here
PUBLIC = ("HashGrid", "Bvh", "Mesh", "MarchingCubes", "Texture", "Texture1D", "Texture2D", "Texture3D",
          "TextureAddressMode", "TextureFilterMode", "Volume")
