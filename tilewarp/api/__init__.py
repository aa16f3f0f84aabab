"""The user API: ``@wp.kernel`` (``kernel.py``), the build chain (``pipeline.py``), modules and their
options (``module.py``), ``wp.Tape`` (``tape.py``), timers; and the services the runtime's arrays and
the builtin table reach upwards through hooks, installed here at import: array arithmetic
(``array_ops.py``: ``a + b`` runs a kernel) and builtins called from Python (``host_calls.py``)."""
from . import array_ops, host_calls  # noqa: F401 - installs their hooks
