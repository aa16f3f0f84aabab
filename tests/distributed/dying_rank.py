"""Run under ``mpiexec -n 2``: rank 1 dies at once (``die``) or lives on without taking part
(``idle``); rank 0's allreduce must not hang: it raises at its deadline (printing the error) and
the job is aborted rather than left waiting in MPI_Finalize. Rank 0 also writes the error to the
file named by the third argument: what a rank prints just before the abort may not reach the
launcher's output."""
import os
import sys
import time

import tilewarp as wp
from tilewarp import distributed as dist

wp.config.quiet = True
mode, timeout, report = sys.argv[1], float(sys.argv[2]), sys.argv[3]
ctx = dist.init(device="cpu", timeout=timeout)
if ctx.rank == 1:
    if mode == "die":
        os._exit(3)  # no cleanup, as a crash
    time.sleep(4 * timeout)  # busy elsewhere (the job ends before this does)
    sys.exit(0)
try:
    ctx.allreduce(wp.ones(4, dtype=wp.float32, device="cpu"))
except dist.DistributedError as e:
    print(f"rank 0: {e}", flush=True)
    with open(report, "w") as f:
        f.write(str(e))
    sys.exit(2)
