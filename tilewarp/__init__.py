"""tilewarp: Warp-compatible simulation kernels in Python for CPUs and NVIDIA GPUs.

``import tilewarp as wp`` — the public names follow NVIDIA Warp's.
"""
from . import config
from .errors import (  # noqa: F401
    AutodiffError, CompileError, CudaError, DeviceError, KernelError, KernelRuntimeError, KernelSyntaxError,
    KernelTypeError, KernelValueError, LaunchError, ModuleLoadError, TapeError, TileWarpError, WarpCodegenError,
    WarpCodegenTypeError, WarpCodegenValueError)
# the language: types (Warp's names; wp.types is Warp's warp.types), structs, generic annotations
from . import types  # noqa: F401
from .language.types import (  # noqa: F401
    COMPOSITE_ALIASES as _COMPOSITE_ALIASES, Float, Int, Scalar, bfloat16, constant, dtype_from_numpy,
    dtype_to_numpy, float16, float32, float64, half, int8, int16, int32, int64, mat22, mat22d, mat33, mat33d,
    mat44, mat44d, matrix, quaternion, transformation, uint8, uint16, uint32, uint64, vec2, vec2d, vec2h, vec2i,
    vec3, vec3d, vec3h, vec3i, vec4, vec4d, vec4h, vec4i, vector)
from .language.types import bool_ as bool  # noqa: F401
from .language.structs import struct  # noqa: F401
from .builtins.hash_grid import HashGridQuery  # noqa: F401
from .builtins.bvh import BvhQuery, MeshQueryAABB  # noqa: F401
from .builtins.bvh_tile import BvhQueryTiled, MeshQueryAABBTiled  # noqa: F401
from .builtins.bvh import MeshQueryAABB as MeshQuery  # noqa: F401
from .builtins.mesh import MeshQueryPoint, MeshQueryRay  # noqa: F401
from .builtins import REGISTRY as _REGISTRY
from .builtins.registry import public as _public
# the compiler's user-facing objects: @wp.func, wp.static, custom gradients
from .frontend.function import Function, func, func_native  # noqa: F401
from .frontend.static import static  # noqa: F401
from .autodiff.custom import adjoint, func_grad, func_replay, grad  # noqa: F401
# the runtime: devices, arrays, streams, events, graphs, interop
from .runtime.device import (  # noqa: F401
    Device, ScopedDevice, get_cuda_device_count, get_cuda_devices, get_device, get_devices,
    get_preferred_device, is_cpu_available, is_cubql_available, is_cuda_available, is_mempool_enabled,
    is_mempool_supported, set_device, synchronize,
    synchronize_device)
from .runtime.array import (  # noqa: F401
    array, array1d, array2d, array3d, array4d, clone, copy, empty, empty_like, from_numpy, full, full_like,
    ones, ones_like, zeros, zeros_like)
from .runtime.indexedarray import (  # noqa: F401
    indexedarray, indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d)
from .runtime.launch import Launch, launch, launch_tiled  # noqa: F401
from .runtime.stream import (  # noqa: F401
    Event, ScopedStream, Stream, get_event_elapsed_time, get_stream, record_event, set_stream, synchronize_event,
    synchronize_stream, wait_event, wait_stream)
from .runtime.graph import (  # noqa: F401
    CaptureMode, Graph, ScopedCapture, capture_begin, capture_end, capture_launch)
from .runtime.interop import (  # noqa: F401
    device_from_torch, device_to_torch, dtype_from_torch, dtype_to_torch, from_dlpack, from_torch,
    stream_from_torch, stream_to_torch, to_dlpack, to_torch)
# the API: kernels, modules, the Tape, timers
from .api.kernel import Kernel, kernel, overload  # noqa: F401
from .api.module import (  # noqa: F401
    Module, force_load, get_module, get_module_options, load_module, set_module_options)
from .api.tape import Tape  # noqa: F401
from .api.timing import ScopedTimer  # noqa: F401

__version__ = config.version

# Warp's math constants (plain Python floats: in kernels they are literals of the surrounding type)
import math as _math

e, pi, tau, inf, nan = _math.e, _math.pi, _math.tau, _math.inf, _math.nan
log2e, log10e, ln2, ln10, phi = 1 / _math.log(2), _math.log10(_math.e), _math.log(2), _math.log(10), (1 + 5 ** 0.5) / 2
half_pi = _math.pi / 2
# Warp spells each constant in capitals too
E, PI, HALF_PI, TAU, INF, NAN = e, pi, half_pi, tau, inf, nan
LOG2E, LOG10E, LN2, LN10, PHI = log2e, log10e, ln2, ln10, phi

globals().update(_COMPOSITE_ALIASES)  # vec3ub, mat44h, quat, quatd, transform, spatial_vector, ...

# kernel-side builtins users call as wp.<name> (builtins/registry.py: public)
globals().update({name: _REGISTRY[name] for name in _REGISTRY if _public(name) is not None})


def init():
    """Initialise the runtime up front, as Warp's ``wp.init()`` does: find the devices and create
    the CUDA context of each GPU (otherwise this happens lazily, at first use)."""
    from .runtime.device import get_devices

    for d in get_devices():
        d.backend  # noqa: B018 - building the backend retains the device's primary context


def clear_kernel_cache():
    """Delete every compiled kernel from the on-disk cache."""
    from .compile.cache import clear

    clear()


#: the geometry library's objects (tilewarp/geometry), loaded on first use like the libraries below
_GEOMETRY = frozenset({"HashGrid", "Bvh", "Mesh", "MarchingCubes", "Texture", "Texture1D", "Texture2D", "Texture3D",
                       "TextureAddressMode", "TextureFilterMode", "Volume"})


def __getattr__(name):
    """Libraries Warp scripts reach as ``wp.<name>`` without importing them (``wp.render``), loaded on
    first use so ``import tilewarp`` stays light (the one upward import: tests/test_layers.py).
    ``import a.b`` statements: ``from . import b`` would ask this function for ``b`` again."""
    if name == "render":
        import tilewarp.render  # noqa: F401
    elif name == "optim":
        import tilewarp.optim  # noqa: F401
    elif name == "utils":
        import tilewarp.utils  # noqa: F401
    elif name == "autograd":
        import tilewarp.autograd  # noqa: F401
    elif name == "examples":
        import tilewarp.examples  # noqa: F401
    elif name in _GEOMETRY:
        import tilewarp.geometry

        if name == "MarchingCubes":  # Warp 1.19's deprecated alias
            import warnings

            warnings.warn("wp.MarchingCubes is deprecated: use wp.geometry.IsoSurfaceMarchingCubes",
                          DeprecationWarning, stacklevel=2)
        return getattr(tilewarp.geometry, name)
    else:
        raise AttributeError(f"module 'tilewarp' has no attribute '{name}'")
    return globals()[name]
