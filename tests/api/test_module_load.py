"""wp.load_module / wp.force_load compile kernels ahead of their first launch, as Warp's do."""
import numpy as np

import tilewarp as wp
from conftest import load_module

TEXT = '''
import WP as wp


@wp.kernel
def fill(x: wp.array(dtype=float), v: float):
    x[wp.tid()] = v


@wp.kernel
def tiled(x: wp.array2d(dtype=float)):
    i = wp.tid()
    wp.tile_store(x[i], wp.tile_ones(shape=8, dtype=float))
'''


def test_load_module_builds_before_the_first_launch():
    mod = load_module(TEXT, "tilewarp")
    cpu = wp.get_device("cpu")
    assert not mod.fill._compiled
    built = wp.load_module(mod, device="cpu")
    assert built == 1  # the tile kernel waits for its launch's block size
    assert mod.fill._compiled, "compiled ahead of the launch"
    x = wp.zeros(5, dtype=float, device=cpu)
    wp.launch(mod.fill, 5, inputs=[x, 2.5], device=cpu)
    np.testing.assert_array_equal(x.numpy(), 2.5)
    assert wp.force_load(device="cpu", modules=[mod.__name__]) == 1
    assert wp.load_module(mod.__name__, device=["cpu"]) == 1
