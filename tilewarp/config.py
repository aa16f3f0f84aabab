"""Global settings, named as in Warp (``wp.config.mode`` etc.).

Only read at compile/launch time and folded into the frozen compile ``Options``, so a change takes
effect for kernels compiled afterwards and always changes the cache key.
"""
import os
import sys
import types

#: the tilewarp version (``wp.__version__``; as Warp's ``wp.config.version``): part of every cache key
version: str = "0.1.0"
#: "release" or "debug": debug builds check every array index and ``assert`` and raise
#: ``KernelRuntimeError`` after the launch (a module's ``"mode"`` option overrides this).
mode: str = "release"
#: Print nothing on compile/load when True.
quiet: bool = False
#: Print extra information (compile commands).
verbose: bool = False
#: Warp's switch for warnings with their full call stack (accepted; tilewarp's warnings name the
#: user's line already).
verbose_warnings: bool = False
#: Kernel cache folder; None means $TILEWARP_CACHE_DIR or ~/.cache/tilewarp.
kernel_cache_dir: str | None = None
#: Seconds a build waits for another process's build lock on the same kernel (that process may be
#: stopped, e.g. by Ctrl-Z) before building without it; None means $TILEWARP_LOCK_TIMEOUT or 60.
lock_timeout: float | None = None
#: Honour fast-math on both targets.
fast_math: bool = False
#: Host C++ compiler; None means $CXX or g++.
host_compiler: str | None = os.environ.get("CXX")
#: CPU blocks of tile kernels have the launch's block_dim lanes, as on a GPU, so a script gives the
#: same answers on both (tilewarp's default). False: Warp's default, one lane per CPU block.
enable_cpu_blocks: bool = True
#: After every launch, check the float arrays the kernel writes for NaN/Inf (raises KernelRuntimeError).
verify_fp: bool = False
#: CUDA tile_matmul through cuBLASDx (nvidia-mathdx) instead of tilewarp's own tensor-core paths
#: (docs/TILES.md): False by default, unlike Warp, as ours are faster and compile in about a second
#: where cuBLASDx takes 10-20 s a kernel; a module's ``enable_mathdx_gemm`` option overrides it.
enable_mathdx_gemm: bool = False
#: A ``for`` loop with constant bounds and at most this many iterations is unrolled (Warp's
#: setting and default): its counter becomes constants in each copy (a stencil's offsets and
#: weights fold away). Read when a kernel is built.
max_unroll: int = 16
#: Block programs (tilewarp.pallas, tilewarp.arrange) time candidate meta-parameters on a first call;
#: False (or $TILEWARP_TUNE=0) takes a rule of thumb instead (docs/BLOCKS.md).
block_tuning: bool = True

#: Called with the setting's name after any ``wp.config.<name> = value`` (and after a module's
#: options change): the launch caches decide debug vs release and ``verify_fp`` once per kernel.
_listeners: list = []


def _notify(name: str) -> None:
    for listener in _listeners:
        listener(name)


class _Settings(types.ModuleType):
    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        _notify(name)


sys.modules[__name__].__class__ = _Settings
