"""Build the native runtime (libtilewarp_cpu: the thread pool; libtilewarp_cuda: the CUDA launch
entry; _tw_launch: wp.launch's native hot path, a CPython extension) into the kernel cache.

    python build_lib.py

Not required before use: the CPU backend builds it on first launch. Running it up front moves that
one-time compile (about a second) out of the first kernel launch and checks the host compiler works.
"""
import glob
import os
import sys


def main() -> str:
    from tilewarp.compile.host import build_runtime, compiler, target_identity
    from tilewarp.runtime.cpu import _cache_dir

    from tilewarp.runtime.cuda import native_library

    path = build_runtime(_cache_dir())
    print(f"compiler: {compiler()} ({target_identity()})")
    print(f"CPU runtime: {path}")
    native_library()  # builds it; needs no GPU (without libcuda it is built but not loaded)
    built = sorted(glob.glob(os.path.join(_cache_dir(), "runtime", "libtilewarp_cuda-*.so")))
    print(f"CUDA launch entry: {built[-1] if built else 'not built'}")
    from tilewarp.runtime import native_launch

    ext = native_launch.extension()  # needs Python's headers; without them wp.launch stays in Python
    print(f"native launch path: {ext.__file__ if ext is not None else 'not built (no Python headers?)'}")
    return path


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a compile failure prints the compiler log, not a traceback
        print(f"build_lib.py: {e}", file=sys.stderr)
        sys.exit(1)
