"""tilewarp: Warp-compatible simulation kernels in Python for CPUs and NVIDIA GPUs.

``import tilewarp as wp`` — the public names follow NVIDIA Warp's.
"""
__version__ = "0.1.0"

from . import config  # noqa: E402
from .builtins import REGISTRY as _REGISTRY  # noqa: E402
from .errors import (  # noqa: E402,F401
    CompileError, CudaError, DeviceError, KernelError, KernelSyntaxError, KernelTypeError, KernelValueError,
    LaunchError, AutodiffError, ModuleLoadError, TapeError, TileWarpError)
from .errors import KernelRuntimeError, WarpCodegenError, WarpCodegenTypeError, WarpCodegenValueError  # noqa: E402,F401
from .module_options import (Module, force_load, get_module, get_module_options, load_module,  # noqa: E402,F401
                             set_module_options)
from .runtime.indexedarray import (  # noqa: E402,F401
    indexedarray, indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d)
from .generics import overload  # noqa: E402,F401
from .kernel import Function, Kernel, func, func_native, kernel, static  # noqa: E402,F401
from .types import Float, Int, Scalar  # noqa: E402,F401  (generic annotations)
from .types import dtype_from_numpy, dtype_to_numpy  # noqa: E402,F401
from .runtime.array import (  # noqa: E402,F401
    array, array1d, array2d, array3d, array4d, clone, copy, empty, empty_like, from_numpy, full, full_like,
    ones, ones_like, zeros, zeros_like)
from .runtime.device import (  # noqa: E402,F401
    Device, ScopedDevice, get_cuda_device_count, get_cuda_devices, get_device, get_devices,
    get_preferred_device, is_cuda_available, set_device, synchronize)
from .runtime.launch import Launch, launch  # noqa: E402,F401
from .runtime.tiled import launch_tiled  # noqa: E402,F401
from .runtime.device import is_mempool_enabled, is_mempool_supported, synchronize_device  # noqa: E402,F401
from .runtime.stream import (  # noqa: E402,F401
    Event, ScopedStream, Stream, get_event_elapsed_time, get_stream, record_event, set_stream, synchronize_event,
    synchronize_stream, wait_event, wait_stream)
from .runtime.graph import (  # noqa: E402,F401
    CaptureMode, Graph, ScopedCapture, capture_begin, capture_end, capture_launch)
from .runtime.interop import (  # noqa: E402,F401
    device_from_torch, device_to_torch, dtype_from_torch, dtype_to_torch, from_dlpack, from_torch,
    stream_from_torch, stream_to_torch, to_dlpack, to_torch)
from .structs import struct  # noqa: E402,F401
from .tape import Tape  # noqa: E402,F401
from .timing import ScopedTimer  # noqa: E402,F401
from .autodiff.custom import adjoint, func_grad, func_replay, grad  # noqa: E402,F401
from . import autograd  # noqa: E402,F401
from .types import (  # noqa: E402,F401
    bfloat16, constant, float16, float32, float64, half, int8, int16, int32, int64, mat22, mat22d, mat33, mat33d, mat44,
    mat44d, matrix, uint8, uint16, uint32, uint64, vec2, vec2d, vec2h, vec2i, vec3, vec3d, vec3h, vec3i, vec4,
    vec4d, vec4h, vec4i, vector)
from .types import bool_ as bool  # noqa: E402,F401
from .types import COMPOSITE_ALIASES as _COMPOSITE_ALIASES, quaternion, transformation  # noqa: E402,F401

# Warp's math constants (plain Python floats: in kernels they are literals of the surrounding type)
import math as _math  # noqa: E402

e, pi, tau, inf, nan = _math.e, _math.pi, _math.tau, _math.inf, _math.nan
log2e, log10e, ln2, ln10, phi = 1 / _math.log(2), _math.log10(_math.e), _math.log(2), _math.log(10), (1 + 5 ** 0.5) / 2
half_pi = _math.pi / 2
# Warp spells each constant in capitals too
E, PI, HALF_PI, TAU, INF, NAN = e, pi, half_pi, tau, inf, nan
LOG2E, LOG10E, LN2, LN10, PHI = log2e, log10e, ln2, ln10, phi

globals().update(_COMPOSITE_ALIASES)  # vec3ub, mat44h, quat, quatd, transform, spatial_vector, ...

# kernel-side builtins users call as wp.<name> (operators are reached through Python syntax)
_HIDDEN = {"add", "sub", "mul", "matmul", "div", "mod", "floordiv", "neg", "pos", "eq", "ne", "lt", "le", "gt",
           "ge", "bool_not", "construct", "extract", "with_component", "extract_row", "with_row", "load", "view",
           "store", "store_component", "shape", "cast", "invert", "make_tuple", "tuple_get",
           "struct_new", "struct_get", "struct_set"}
globals().update({name: b for name, b in _REGISTRY.items() if name not in _HIDDEN})
# operators also exist as functions in Warp (wp.add, wp.mul, ...)
globals().update({name: _REGISTRY[name] for name in ("add", "sub", "mul", "div", "mod", "neg", "floordiv", "pos",
                                                      "invert")})


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


def __getattr__(name):
    """Submodules Warp scripts reach as ``wp.<name>`` without importing them (``wp.render``), loaded on
    first use so ``import tilewarp`` stays light."""
    if name in ("render", "optim", "utils"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'tilewarp' has no attribute '{name}'")
