"""Run under ``mpiexec -n N``: allreduce (sum, mean) against NumPy and the argument check across
ranks. Prints one line per rank; exits 1 on a failure. (Deadlines: dying_rank.py.)"""
import sys

import numpy as np

import tilewarp as wp
from tilewarp import distributed as dist

wp.config.quiet = True


def main():
    ctx = dist.init(device="cpu", timeout=float(sys.argv[1]) if len(sys.argv) > 1 else 30.0)
    n = ctx.size
    rng = np.random.default_rng(ctx.rank)
    mine = rng.standard_normal((5, 3))
    everyone = sum(np.random.default_rng(r).standard_normal((5, 3)) for r in range(n))
    a = wp.array(mine, dtype=wp.float64, device="cpu")
    b = wp.array(np.full(4, ctx.rank + 1, dtype=np.float32), device="cpu")
    ctx.allreduce([a, b])
    assert np.allclose(a.numpy(), everyone, rtol=1e-12), "allreduce sum"
    assert np.array_equal(b.numpy(), np.full(4, n * (n + 1) / 2, dtype=np.float32)), "allreduce sum float32"
    c = wp.array(np.full(3, float(ctx.rank)), dtype=wp.float64, device="cpu")
    ctx.allreduce(c, op="mean")
    assert np.allclose(c.numpy(), (n - 1) / 2), "allreduce mean"
    # mismatched arguments: every rank raises, naming each rank's arrays
    bad = wp.zeros(3 + ctx.rank, dtype=wp.float32, device="cpu")
    try:
        ctx.allreduce(bad)
        raise AssertionError("mismatched shapes were not refused")
    except dist.DistributedError as e:
        assert "rank 0: [((3,), 'float32')]" in str(e) and "rank 1: [((4,), 'float32')]" in str(e), str(e)
    print(f"rank {ctx.rank} of {n}: collectives ok")


if __name__ == "__main__":
    main()
