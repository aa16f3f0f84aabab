"""tilewarp.distributed: the launcher environment, decompositions, and (under mpiexec, 2 and 4
ranks) the halo exchange of every dimension and ghost width, the collectives, and both examples
against their single-process runs."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tilewarp as wp
from tilewarp import distributed as dist

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent.parent / "examples"
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")


def ranks(n, script, *args, timeout=600):
    """Run ``script`` on ``n`` MPI ranks; its output (a failure shows every rank's)."""
    pytest.importorskip("mpi4py")
    if MPIEXEC is None:
        pytest.skip("no mpiexec (pip install tilewarp[dist])")
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}  # Open MPI in containers
    res = subprocess.run([MPIEXEC, "-n", str(n), sys.executable, str(script), *args], capture_output=True, text=True,
                         timeout=timeout, cwd=str(Path(script).parent), env=env)
    assert res.returncode == 0, f"{script} on {n} ranks failed:\n{res.stdout}\n{res.stderr}"
    return res.stdout


def test_launcher_environment():
    assert dist.launcher_environment({}) == {"launcher": None, "rank": 0, "size": 1, "local_rank": 0}
    torchrun = dist.launcher_environment({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"})
    assert torchrun == {"launcher": "torchrun", "rank": 3, "size": 8, "local_rank": 1}
    hydra = dist.launcher_environment({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1"})
    assert hydra["launcher"].startswith("mpiexec (MPICH") and hydra["rank"] == 1 and hydra["size"] == 2
    ompi = dist.launcher_environment({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "6",
                                      "OMPI_COMM_WORLD_LOCAL_RANK": "2"})
    assert (ompi["rank"], ompi["size"], ompi["local_rank"]) == (5, 6, 2)
    slurm = dist.launcher_environment({"SLURM_PROCID": "4", "SLURM_NTASKS": "8"})
    assert (slurm["rank"], slurm["local_rank"]) == (4, 4)


@pytest.mark.parametrize("n,parts", [(10, 3), (7, 7), (1000, 6), (5, 2)])
def test_split_covers_the_axis(n, parts):
    pieces = [dist.split(n, parts, k) for k in range(parts)]
    assert pieces[0][0] == 0 and sum(e for _, e in pieces) == n
    assert all(s + e == t for (s, e), (t, _) in zip(pieces, pieces[1:]))
    assert max(e for _, e in pieces) - min(e for _, e in pieces) <= 1


def test_process_grids():
    assert dist.process_grid(4, (100, 100)) == (2, 2)
    assert dist.process_grid(6, (300, 100)) == (6, 1) or np.prod(dist.process_grid(6, (300, 100))) == 6
    assert dist.process_grid(8, (64, 64, 64)) == (2, 2, 2)
    assert dist.process_grid(2, (10,)) == (2,)


def _ctx(size=1, rank=0):
    return dist.Context(rank, size, rank, "single", wp.get_device("cpu"))


def test_decompositions_that_do_not_fit():
    with pytest.raises(ValueError, match="axis 0 has 5 points for 4 ranks"):
        dist.Decomposition(_ctx(4), (5,), ghost=2)
    with pytest.raises(ValueError, match="a process grid"):
        dist.Decomposition(_ctx(4), (64, 64), dims=(3, 1))
    with pytest.raises(ValueError, match="1 to 3 axes"):
        dist.Decomposition(_ctx(), (4, 4, 4, 4))
    dec = dist.Decomposition(_ctx(), (8, 8), ghost=1)
    with pytest.raises(ValueError, match=r"expected a local block of shape \(10, 10\)"):
        dec.exchange(wp.zeros((8, 8), dtype=float, device="cpu"))


@pytest.mark.parametrize("ghost", [1, 2])
def test_one_rank_periodic_exchange_wraps(ghost):
    dec = dist.Decomposition(_ctx(), (6, 5), ghost=ghost, periodic=True)
    grid = np.random.default_rng(ghost).standard_normal((6, 5))
    a = dec.zeros(dtype=wp.float64)
    a.numpy()[dec.interior] = grid
    dec.exchange(a)
    want = np.pad(grid, ghost, mode="wrap")
    np.testing.assert_array_equal(a.numpy(), want)
    np.testing.assert_array_equal(dec.gather(a), grid)


@pytest.mark.parametrize("n", [2, 4])
def test_halo_exchange_over_ranks(n):
    out = ranks(n, HERE / "halo_check.py")
    assert out.count("18 halo cases match") == n, out


def test_collectives_over_ranks():
    out = ranks(2, HERE / "collectives_check.py", "30")
    assert out.count("collectives ok") == 2, out


@pytest.mark.parametrize("mode", ["die", "idle"])
def test_a_missing_rank_ends_the_job_without_a_hang(mode, tmp_path):
    """A rank that dies (the launcher ends the job, MPICH's default; with -disable-auto-cleanup the
    others run on) or that lives on without taking part: rank 0 raises at its deadline, saying so,
    and the job is aborted instead of waiting in MPI_Finalize."""
    pytest.importorskip("mpi4py")
    if MPIEXEC is None:
        pytest.skip("no mpiexec")
    import time

    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    hydra = "HYDRA" in subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True).stdout
    flags = ["-disable-auto-cleanup"] if hydra and mode == "die" else []
    t0 = time.monotonic()
    res = subprocess.run([MPIEXEC, *flags, "-n", "2", sys.executable, str(HERE / "dying_rank.py"), mode, "5",
                          str(tmp_path / "rank0.txt")],
                         capture_output=True, text=True, timeout=120, env=env)
    said = res.stdout + res.stderr
    assert res.returncode != 0 and time.monotonic() - t0 < 60, said
    if mode == "idle" or flags:
        report = tmp_path / "rank0.txt"
        assert report.exists() and "rank 0 of 2 waited 5 s for the other ranks" in report.read_text(), said


def test_wave_example_is_bit_identical_on_two_ranks(tmp_path):
    image = tmp_path / "wave.png"
    out = ranks(2, EXAMPLES / "dist_wave.py", "--device", "cpu", "--check", "--grid", "96", "--steps", "80",
                "--image", str(image))
    assert "2 rank(s) on cpu (mpi)" in out and "(bit-identical)" in out, out
    assert image.exists() or image.with_suffix(".npy").exists()


def test_diffsim_example_on_two_ranks():
    out = ranks(2, EXAMPLES / "dist_diffsim.py", "--device", "cpu", "--check", "--balls", "64", "--iterations", "12")
    assert "2 rank(s) on cpu (mpi), 64 balls" in out and "check against one process" in out, out
    first, last = (float(v) for v in out.split("loss ")[1].split(" in ")[0].split(" -> "))
    assert last < 0.2 * first, out


def test_examples_alone_in_one_process(device):
    """Without a launcher both examples are one rank on ``device`` (the GPU run of the issue)."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import dist_diffsim
        import dist_wave
    finally:
        sys.path.remove(str(EXAMPLES))
    os.environ.pop("RANK", None)
    field = dist_wave.main(["--device", device, "--grid", "64", "--steps", "30", "--image", "", "--check"])
    assert field.shape == (64, 64) and np.isfinite(field).all() and np.abs(field).max() > 0.05
    history = dist_diffsim.main(["--device", device, "--balls", "32", "--iterations", "8"])
    assert history[-1][0] < history[0][0]
