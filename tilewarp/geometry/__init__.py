"""Warp's geometry objects: ``HashGrid`` (and, as they land, ``Bvh``, ``Mesh``, ``Volume``,
``MarchingCubes``). Each owns buffers on one device and hands kernels a ``wp.uint64`` id; the
kernel-side queries are ordinary builtins (``tilewarp/builtins/hash_grid.py`` ...) with their C++ in
``native/geometry/``. Builds run as tilewarp kernels on the object's device.

Scripts reach these as ``wp.HashGrid`` ...: the package's ``__getattr__`` loads this library on first
use (``import tilewarp`` stays light)."""
from .bvh import Bvh  # noqa: F401
from .hash_grid import HashGrid  # noqa: F401
from .mesh import Mesh  # noqa: F401
from .volume import Volume  # noqa: F401

#: the names ``wp.<name>`` resolves here
PUBLIC = ("HashGrid", "Bvh", "Mesh", "Volume")
