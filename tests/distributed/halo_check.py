"""Run under ``mpiexec -n N``: every rank fills its block of a known global grid, exchanges ghost
layers, and compares every ghost cell with the global grid (NumPy), for 1-, 2- and 3-D grids and
ghost widths 1 to 3, periodic or not. Prints one line per case; exits 1 on the first mismatch."""
import sys

import numpy as np

import tilewarp as wp
from tilewarp import distributed as dist

wp.config.quiet = True


def expected(global_grid, dec):
    """The local block with ghosts as the global grid says (wrapped where periodic, NaN outside)."""
    g, out = dec.ghost, np.full(dec.local_shape, np.nan)
    index = np.indices(dec.local_shape)
    coords, inside = [], np.ones(dec.local_shape, bool)
    for a in range(len(dec.shape)):
        c = index[a] - g + dec.start[a]
        if dec.periodic[a]:
            c = c % dec.shape[a]
        inside &= (c >= 0) & (c < dec.shape[a])
        coords.append(np.clip(c, 0, dec.shape[a] - 1))
    out[inside] = global_grid[tuple(c[inside] for c in coords)]
    return out


def main():
    ctx = dist.init(device="cpu", timeout=60)
    cases = 0
    for shape in [(37,), (12, 9), (7, 6, 5)]:
        for ghost in (1, 2, 3):
            for periodic in (False, True):
                try:
                    dec = dist.Decomposition(ctx, shape, ghost=ghost, periodic=periodic)
                except ValueError as e:  # a grid too small for these ghosts over these ranks
                    print(f"rank {ctx.rank}: {shape} ghost {ghost}: refused ({e})")
                    continue
                rng = np.random.default_rng(sum(shape) + ghost)
                global_grid = rng.standard_normal(shape)
                a = dec.zeros(dtype=wp.float64)
                local = a.numpy()
                local[...] = np.nan
                local[dec.interior] = global_grid[dec.global_slices()]
                dec.exchange(a)
                want = expected(global_grid, dec)
                got = a.numpy()
                known = ~np.isnan(want)
                if not np.array_equal(got[known], want[known]) or not np.isnan(got[~known]).all():
                    print(f"rank {ctx.rank}: MISMATCH shape {shape} ghost {ghost} periodic {periodic} dims {dec.dims}")
                    sys.exit(1)
                full = dec.gather(a)
                if ctx.rank == 0 and not np.array_equal(full, global_grid):
                    print(f"rank 0: gather MISMATCH shape {shape}")
                    sys.exit(1)
                cases += 1
    print(f"rank {ctx.rank} of {ctx.size}: {cases} halo cases match")


if __name__ == "__main__":
    main()
