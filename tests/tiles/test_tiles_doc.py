"""The Python snippets of docs/TILES.md run and their assertions hold (each in a fresh module file)."""
import re
import runpy
from pathlib import Path

import pytest

import tilewarp as wp

DOC = Path(__file__).resolve().parents[2] / "docs" / "TILES.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_guide_has_snippets():
    assert len(SNIPPETS) >= 3


@pytest.mark.parametrize("k", range(len(SNIPPETS)))
def test_snippet(k, tmp_path, device):
    path = tmp_path / f"tiles_doc_{k}.py"
    path.write_text(SNIPPETS[k].replace('device="cpu"', f'device="{device}"'))
    with wp.ScopedDevice(device):
        runpy.run_path(str(path), run_name="__main__")
