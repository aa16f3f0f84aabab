"""Repeated launches of tile kernels (runtime/launch.py, remembered plans): a plain launch made before is
one argument packing and one submit, and still sees new arrays, debug mode, verify_fp and Tapes."""
from typing import Any

import numpy as np
import pytest

import tilewarp as wp

BD = 32
ROW = 64


@wp.kernel
def scaled_rows(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float), s: float):
    i = wp.tid()
    wp.tile_store(out[i], wp.tile_map(wp.sin, wp.tile_load(a[i], ROW)) * s)


@wp.kernel
def row_of(a: wp.array2d(dtype=float), out: wp.array(dtype=float), row: int):
    i = wp.tid()
    s = wp.tile_sum(wp.tile_load(a[row], ROW))
    wp.tile_store(out, s, offset=i)
    x = a[row, 0]  # a checked read in debug builds


@wp.kernel
def generic_rows(a: wp.array2d(dtype=Any), out: wp.array2d(dtype=Any)):
    i = wp.tid()
    t = wp.tile_load(a[i], ROW)
    wp.tile_store(out[i], t + t)


def _rows(rng, n, device):
    x = rng.uniform(-1, 1, (n, ROW)).astype(np.float32)
    return x, wp.array(x, device=device)


def _row_of_launched(device, seed: int, row: int, times: int):
    """``(a, out)`` after ``times`` launches of row_of (each checked): arrays for one more."""
    x, a = _rows(np.random.default_rng(seed), 3, device)
    out = wp.zeros(2, dtype=float, device=device)
    for _ in range(times):
        wp.launch_tiled(row_of, dim=[2], inputs=[a, out, row], block_dim=BD, device=device)
    np.testing.assert_allclose(out.numpy(), np.full(2, x[row].sum()), rtol=1e-5)
    return a, out


@pytest.mark.parametrize("named", [True, False])
def test_each_launch_reads_its_own_arguments(device, named):
    rng = np.random.default_rng(21)
    for launch in range(4):
        n = 5 if launch < 3 else 7  # a new dim is remembered apart
        x, a = _rows(rng, n, device)
        out = wp.zeros((n, ROW), dtype=float, device=device)
        s = float(launch + 1)
        wp.launch_tiled(scaled_rows, dim=[n], inputs=[a, out, s], block_dim=BD, device=device if named else None)
        np.testing.assert_allclose(out.numpy(), np.sin(x) * s, rtol=1e-5, atol=1e-6)
        full = wp.zeros((n, ROW), dtype=float, device=device)  # the same kernel through wp.launch
        wp.launch(scaled_rows, dim=(n, BD), inputs=[a, full, s], block_dim=BD, device=device if named else None)
        np.testing.assert_allclose(full.numpy(), np.sin(x) * s, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("switch", ["config", "set_module_options", "module_options_dict"])
def test_debug_mode_switch_is_seen(device, switch, monkeypatch):
    a, out = _row_of_launched(device, seed=22, row=1, times=3)
    if switch == "config":
        monkeypatch.setattr(wp.config, "mode", "debug")
    else:
        opts = wp.get_module_options(__name__)
        monkeypatch.setitem(opts, "mode", None)  # restored afterwards
        if switch == "set_module_options":
            wp.set_module_options({"mode": "debug"}, __name__)
        else:
            opts["mode"] = "debug"
    with pytest.raises(wp.KernelRuntimeError, match="out of bounds"):
        wp.launch_tiled(row_of, dim=[2], inputs=[a, out, 9], block_dim=BD, device=device)


def test_verify_fp_switch_is_seen(device, monkeypatch):
    rng = np.random.default_rng(23)
    x, a = _rows(rng, 2, device)
    out = wp.zeros((2, ROW), dtype=float, device=device)
    for _ in range(2):
        wp.launch_tiled(scaled_rows, dim=[2], inputs=[a, out, 1.0], block_dim=BD, device=device)
    monkeypatch.setattr(wp.config, "verify_fp", True)
    with pytest.raises(wp.KernelRuntimeError):
        wp.launch_tiled(scaled_rows, dim=[2], inputs=[a, out, float("nan")], block_dim=BD, device=device)


def test_a_tape_records_a_launch_made_before(device):
    rng = np.random.default_rng(24)
    x = rng.uniform(-1, 1, (3, ROW)).astype(np.float32)
    a = wp.array(x, device=device, requires_grad=True)
    out = wp.zeros((3, ROW), dtype=float, device=device, requires_grad=True)
    for _ in range(2):
        wp.launch_tiled(scaled_rows, dim=[3], inputs=[a, out, 2.0], block_dim=BD, device=device)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(scaled_rows, dim=[3], inputs=[a, out, 2.0], block_dim=BD, device=device)
    tape.backward(grads={out: wp.array(np.ones((3, ROW), dtype=np.float32), device=device)})
    np.testing.assert_allclose(a.grad.numpy(), 2.0 * np.cos(x), rtol=1e-5, atol=1e-6)


def test_generic_kernels_launch_per_argument_types(device):
    rng = np.random.default_rng(25)
    for dtype in (np.float32, np.float64, np.float32):
        x = rng.uniform(-1, 1, (2, ROW)).astype(dtype)
        out = wp.zeros((2, ROW), dtype=wp.dtype_from_numpy(dtype), device=device)
        wp.launch_tiled(generic_rows, dim=[2], inputs=[wp.array(x, device=device), out], block_dim=BD, device=device)
        np.testing.assert_allclose(out.numpy(), 2 * x, rtol=1e-6)


def test_tile_reads_and_writes_count_for_the_tapes_version_check(device):
    """A launch that read an array with tile_load is refused by backward once a tile_store (or a
    tile_atomic_add) of a later launch overwrote that array."""
    rng = np.random.default_rng(26)
    a = wp.array(rng.uniform(-1, 1, (2, ROW)).astype(np.float32), device=device, requires_grad=True)
    out = wp.zeros((2, ROW), dtype=float, device=device, requires_grad=True)
    other = wp.array(rng.uniform(-1, 1, (2, ROW)).astype(np.float32), device=device)
    tape = wp.Tape()
    with tape:
        wp.launch_tiled(scaled_rows, dim=[2], inputs=[a, out, 2.0], block_dim=BD, device=device)
    wp.launch_tiled(scaled_rows, dim=[2], inputs=[other, a, 1.0], block_dim=BD, device=device)
    with pytest.raises(wp.TapeError, match=r"argument 'a' of launch #0 \(.*scaled_rows\) was overwritten"):
        tape.backward(grads={out: wp.array(np.ones((2, ROW), dtype=np.float32), device=device)})


def test_record_cmd_returns_a_replayable_launch(device):
    rng = np.random.default_rng(27)
    x, a = _rows(rng, 3, device)
    out = wp.zeros((3, ROW), dtype=float, device=device)
    wp.launch_tiled(scaled_rows, dim=[3], inputs=[a, out, 1.0], block_dim=BD, device=device)  # remembered
    cmd = wp.launch_tiled(scaled_rows, dim=[3], inputs=[a, out, 3.0], block_dim=BD, device=device, record_cmd=True)
    out.zero_()
    cmd.launch()
    np.testing.assert_allclose(out.numpy(), 3.0 * np.sin(x), rtol=1e-5, atol=1e-6)


def test_debug_builds_check_every_launch(device, monkeypatch):
    monkeypatch.setattr(wp.config, "mode", "debug")
    a, out = _row_of_launched(device, seed=28, row=2, times=2)
    with pytest.raises(wp.KernelRuntimeError, match="out of bounds"):
        wp.launch_tiled(row_of, dim=[2], inputs=[a, out, 9], block_dim=BD, device=device)
