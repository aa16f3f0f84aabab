"""Build the native runtime beside the package, in tilewarp/_native/ (the kernel cache where that
folder cannot be written): libtilewarp_cpu (the thread pool), libtilewarp_cuda (the CUDA launch
entry) and _tw_launch (wp.launch's native hot path, a CPython extension).

    python build_lib.py

Not required: ``pip install`` compiles these (pyproject's ext-modules) and tilewarp uses those. Where
the install could not (no compiler then), or in a source checkout used without installing, each library
is built on first use (the extension in the background); running this up front moves those one-time
compiles (about a second each) out of the first launches and checks that the host compiler works.
"""
import sys


def main() -> str:
    from tilewarp.compile.host import build_runtime, compiler, target_identity
    from tilewarp.runtime import native_launch
    from tilewarp.runtime.cuda import build_native_library

    path = build_runtime()
    print(f"compiler: {compiler()} ({target_identity()})")
    print(f"CPU runtime: {path}")
    print(f"CUDA launch entry: {build_native_library()}")
    ext = native_launch.extension()  # needs Python's headers; without them wp.launch stays in Python
    print(f"native launch path: {ext.__file__ if ext is not None else 'not built (no Python headers?)'}")
    return path


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a compile failure prints the compiler log, not a traceback
        print(f"build_lib.py: {e}", file=sys.stderr)
        sys.exit(1)
