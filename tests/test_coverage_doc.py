"""docs/BUILTINS.md (Warp builtin coverage) is regenerated from the code: fail when it is stale."""
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_builtin_coverage_doc_is_up_to_date():
    pytest.importorskip("warp", reason="the builtin list comes from warp-lang")
    spec = importlib.util.spec_from_file_location("builtin_coverage", REPO / "tools" / "builtin_coverage.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = tool.render()
    assert (REPO / "docs" / "BUILTINS.md").read_text() == text, \
        "docs/BUILTINS.md is out of date: run `python tools/builtin_coverage.py` and commit the result"
    assert "| `sqrt` | implemented |" in text and "| `mesh_query_point` |" not in text
