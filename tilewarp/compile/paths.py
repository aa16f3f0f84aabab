"""Where the C++ headers and runtime sources are (``tilewarp.h``, ``core/``, ``runtime/``, ``tile/``).

In a source tree (and an editable install) that is the repository's ``native/`` folder beside the
package; an installed wheel carries the same files inside the package as ``tilewarp/native``
(``pyproject.toml`` maps the one onto the other).
"""
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
NATIVE_DIR = _PACKAGE / "native" if (_PACKAGE / "native" / "tilewarp.h").is_file() else _PACKAGE.parent / "native"
