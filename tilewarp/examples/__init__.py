"""``wp.examples``: where Warp's example programs find their data (``get_asset_directory()``).

Warp's programs and tests load meshes and volumes (``bunny.usd``, ``rocks.nvdb``...) from
``warp.examples.get_asset_directory()``. Those files ship with warp-lang, not with tilewarp, so the
folder is, in order: ``$TILEWARP_ASSET_DIR``; the assets of an installed warp-lang (found from its
distribution's file list, without importing it); this package's own ``assets`` folder. tilewarp's
own gallery lives in the repository's ``examples/`` and needs none of these.
"""
from __future__ import annotations

import importlib.metadata
import os
import pathlib

_HERE = pathlib.Path(__file__).resolve().parent


def get_asset_directory() -> str:
    env = os.environ.get("TILEWARP_ASSET_DIR")
    if env:
        return env
    try:  # the installed distribution's files: no import of warp itself
        assets = pathlib.Path(importlib.metadata.distribution("warp-lang").locate_file("warp/examples/assets"))
        if assets.is_dir():
            return str(assets)
    except importlib.metadata.PackageNotFoundError:
        pass
    return str(_HERE / "assets")


def get_source_directory() -> str:
    return str(_HERE)


def get_output_directory() -> str:
    """Where example programs write their output (created on demand), as Warp's does."""
    out = pathlib.Path(os.environ.get("TILEWARP_OUTPUT_DIR", pathlib.Path.cwd() / "example_output"))
    out.mkdir(parents=True, exist_ok=True)
    return str(out)
