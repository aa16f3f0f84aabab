"""The tiles chapter's programs, unchanged but for the import, on every test device."""
import runpy

import numpy as np

import tilewarp as wp
import seed_programs


def run(text, tmp_path, name, device):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    with wp.ScopedDevice(device):
        return runpy.run_path(str(path), run_name="__main__")


def test_row_sum(tmp_path, capsys, device):
    scope = run(seed_programs.ROW_SUM, tmp_path, "row_sum", device)
    assert "b = [   0.  256.  512.  768. 1024. 1280. 1536. 1792. 2048. 2304.]" in capsys.readouterr().out
    np.testing.assert_array_equal(scope["b"].numpy()[:, 0], np.arange(10) * 256.0)


def test_tiled_gemm_under_a_tape(tmp_path, capsys, device):
    scope = run(seed_programs.GEMM, tmp_path, "gemm", device)
    assert "Example matrix multiplication passed" in capsys.readouterr().out
    np.testing.assert_allclose(scope["C_wp"].numpy(), scope["A"] @ scope["B"], rtol=1e-5)


def test_sum_of_squares(tmp_path, device):
    scope = run(seed_programs.SUM_OF_SQUARES, tmp_path, "sum_of_squares", device)
    data = scope["data"].numpy()
    np.testing.assert_allclose(scope["result"].numpy()[0], np.sum(data * data), rtol=1e-12)


def test_simt_to_tile_same_on_every_device(tmp_path, device):
    """tile(x) gathers the 64 lanes of each block on the CPU as on a GPU (Warp's CPU: 1 lane)."""
    scope = run(seed_programs.SIMT_TO_TILE, tmp_path, "simt_to_tile", device)
    i = np.arange(256, dtype=np.float32)
    x = i * np.float32(2.0) + np.sin(i).astype(np.float32)
    want = np.repeat(x.reshape(4, 64).sum(axis=1), 64)
    np.testing.assert_allclose(scope["out"].numpy(), want, rtol=1e-5)
