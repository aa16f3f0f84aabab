"""Renderers for simulation output, with the API of NVIDIA Warp's ``warp.render``.

* ``UsdRenderer``: time-sampled USD stages (needs usd-core: ``pip install "tilewarp[usd]"``).
* ``ImageRenderer``: PNG images drawn with Pillow (``pip install "tilewarp[image]"``).

Both are imported on first use, so ``import tilewarp.render`` works without either extra.
"""
__all__ = ["ImageRenderer", "UsdRenderer"]


def __getattr__(name):
    # lazy: pxr takes a while to import and Pillow may be missing; only the renderer used is loaded
    if name == "UsdRenderer":
        from .usd import UsdRenderer

        return UsdRenderer
    if name == "ImageRenderer":
        from .image import ImageRenderer

        return ImageRenderer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
