"""Meta-parameters of block programs: tuned on a first call, remembered in memory and on disk,
pinned by explicit values or TILEWARP_TUNE=0, never changing results."""
import json

import numpy as np
import pytest

import tilewarp as wp
from tilewarp import arrange, pallas as pl
from tilewarp.arrange import Symbol, Tensor
from tilewarp.block_programs import tune

B = Symbol("B", meta=True, lower_bound=32, upper_bound=128)


@arrange.jit
def scale_add(x: Tensor(1).tile((B,)), y: Tensor(1).tile((B,))):
    y = y + 0.5 * x  # noqa: F841


@pytest.fixture
def tuning(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEWARP_TUNE", "1")
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path))
    tune.forget_memory()
    yield tmp_path
    tune.forget_memory()


def run_scale_add(n, kernel=scale_add, **meta):
    x = wp.array(np.arange(n, dtype=np.float32), device="cpu")
    y = wp.array(np.ones(n, dtype=np.float32), device="cpu")
    kernel(x, y, **meta)
    return y.numpy()


def test_first_call_tunes_then_memory_then_disk(tuning):
    before = len(tune.history)
    first = run_scale_add(300)
    assert len(tune.history) == before + 1
    key, choice, timings, seconds = tune.history[-1]
    assert choice["B"] in (32, 64, 128) and choice["block_dim"] in tune.CANDIDATES
    assert len(timings) >= 3 and seconds > 0
    files = list((tuning / "tuning").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["choice"] == choice
    np.testing.assert_array_equal(first, 1 + 0.5 * np.arange(300, dtype=np.float32))
    assert (run_scale_add(300) == first).all() and len(tune.history) == before + 1  # remembered
    tune.forget_memory()
    again = arrange.jit(scale_add.fn)  # a new process's kernel object: the choice is read back from disk
    assert (run_scale_add(300, again) == first).all() and len(tune.history) == before + 1
    run_scale_add(500)  # other shapes: tuned again
    assert len(tune.history) == before + 2


def test_pinned_values_and_switch_skip_tuning(tuning, monkeypatch):
    before = len(tune.history)
    fresh = arrange.jit(scale_add.fn)  # no plans of earlier tests
    pinned = run_scale_add(300, fresh, B=64, block_dim=32)
    assert len(tune.history) == before
    monkeypatch.setenv("TILEWARP_TUNE", "0")
    off = run_scale_add(300, fresh)
    assert len(tune.history) == before
    monkeypatch.setenv("TILEWARP_TUNE", "1")
    tuned = run_scale_add(300, fresh)
    assert len(tune.history) == before + 1
    np.testing.assert_array_equal(pinned, off)
    np.testing.assert_array_equal(pinned, tuned)


def test_pallas_block_dim_tuning(tuning):
    def kernel(x_ref, o_ref):
        o_ref[...] = wp.tile_sum(x_ref[...], axis=1)

    x = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    f = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((64,), np.float32), grid=(8,),
                       in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))], out_specs=pl.BlockSpec((8,), lambda i: (i,)))
    before = len(tune.history)
    tuned = f(wp.array(x, device="cpu")).numpy()
    assert len(tune.history) == before + 1 and tune.history[-1][1] in tune.CANDIDATES
    f(wp.array(x, device="cpu"))
    assert len(tune.history) == before + 1
    g = pl.pallas_call(kernel, out_shape=pl.ShapeDtypeStruct((64,), np.float32), grid=(8,), block_dim=64,
                       in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))], out_specs=pl.BlockSpec((8,), lambda i: (i,)))
    pinned = g(wp.array(x, device="cpu")).numpy()
    assert len(tune.history) == before + 1
    np.testing.assert_allclose(tuned, x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pinned, tuned, rtol=1e-6, atol=1e-6)


def test_tuning_does_not_run_outputs_twice(tuning):
    """An output the kernel reads (y = y + ...) is tuned on a scratch copy: one update lands."""
    y = run_scale_add(1000, arrange.jit(scale_add.fn))
    np.testing.assert_array_equal(y, 1 + 0.5 * np.arange(1000, dtype=np.float32))


@pytest.mark.parametrize("elements,lanes", [
    (8, [32]), (100, [32, 64]), (4096, [32, 64, 128, 256]), (128 * 128, [128, 256]), (1 << 20, [256])])
def test_lane_candidates_skip_blocks_whose_lanes_would_spill(elements, lanes):
    """Block sizes are tried up to one lane per output element and down to MOST_PER_LANE elements a
    lane (an output tile a lane holds past that spills its registers); the largest when none fits."""
    assert tune.lane_candidates(elements) == lanes
