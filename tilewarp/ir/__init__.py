"""The typed IR shared by the frontend, autodiff and the emitter."""
from . import nodes  # noqa: F401
