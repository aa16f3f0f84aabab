"""Build the native CPU runtime (libtilewarp_cpu: the thread pool) into the kernel cache.

    python build_lib.py

Not required before use: the CPU backend builds it on first launch. Running it up front moves that
one-time compile (about a second) out of the first kernel launch and checks the host compiler works.
"""
import sys


def main() -> str:
    from tilewarp.compile.host import build_runtime, compiler, target_identity
    from tilewarp.runtime.cpu import _cache_dir

    path = build_runtime(_cache_dir())
    print(f"compiler: {compiler()} ({target_identity()})")
    print(f"CPU runtime: {path}")
    return path


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a compile failure prints the compiler log, not a traceback
        print(f"build_lib.py: {e}", file=sys.stderr)
        sys.exit(1)
