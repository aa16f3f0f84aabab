"""Python source -> typed IR."""
from .lower import Lowerer  # noqa: F401
from .source import Source, get_source  # noqa: F401
