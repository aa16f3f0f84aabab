"""Typed IR -> C++ source (one emitter for both targets)."""
from .cpp import emit_module  # noqa: F401
