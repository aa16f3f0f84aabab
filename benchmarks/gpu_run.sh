#!/usr/bin/env bash
# Everything this project measures on a GPU machine, by steps (benchmarks/RESULTS.md records the runs).
#   bash benchmarks/gpu_run.sh STEP...      e.g.  bash benchmarks/gpu_run.sh stash probe install suite examples
# Carried, ignored folders: .whl (nvidia-mathdx, nvidia-cuda-cccl<13.2, -crt, -runtime wheels: the
# cuBLASDx path's headers), .whl_inst (setuptools wheel, Warp's tests as warptests.tgz, a copy of
# ../shared/warp_suite), .whl1 / .whl2 (the two halves, warp.partaa / warp.partab, of an `xz -9` tar of
# warp-lang's `warp/` package without warp-clang.so, tests and examples; unpacked by Python's tarfile:
# `stash` keeps the first half in ~ for a `warp` step in the next call, which must follow while the
# machine is still warm).
# Steps:
#   stash     keep .whl1 in ~/stash
#   probe     hand-written CUDA variants of the tile benchmarks, tilewarp's variants, Nsight Compute
#   tprobe    only tilewarp's variants (tile_probe.py --quick) and their SASS
#   ncu       Nsight Compute of the hand-written and tilewarp's sum of squares and row sum
#   matmul    tile GEMM at 4096^3 against torch (and warp-lang after `warp`)
#   mmprobe   Nsight Compute and SASS instruction counts of the float16 tile GEMM
#   mmtests   the tile_matmul and seed-program tests on cuda:0
#   diag      gradcheck summary of the atomics-with-contention kernel on cpu and cuda:0
#   tiles     tests/tiles on cuda:0
#   install   build the wheel, install it (non-editable) into an empty folder, then, in the first
#             processes after that: import time, cold compile + first launch, launch overhead
#   suite     the whole test suite with cuda:0 as the device (one pytest per file, 12 at a time)
#   examples  the examples gallery on cuda:0 (tilewarp; with warp-lang too after a `warp` step)
#   joinwarp  join warp-lang (needs .whl2 and a stashed first half): later steps run it side by side
#   warp      joinwarp, then every benchmark side by side
#   latests   the tile linear algebra and FFT tests (and their examples) on cuda:0
#   lasuite   Warp's own Cholesky, solve and FFT tests (no-MathDx files) against tilewarp (cpu + cuda:0)
#   linalg    tile Cholesky and FFT batches against torch (and warp-lang after `joinwarp`)
#   lancu     Nsight Compute of the Cholesky and FFT benchmark kernels
#   warpsuite Warp's own core and tile tests against tilewarp (cpu + cuda:0)
#   mmsuite   Warp's own tile_matmul test files only (cpu + cuda:0)
#   blocks    the block-program tests (tilewarp.pallas, tilewarp.arrange) on cuda:0, then benchmarks/blocks.py
#   geometry  tests/geometry on cuda:0 (one pytest per file, 8 at a time), then Warp's geometry example
#             programs on cuda:0 (needs .warpfiles: a copy of warp-lang's warp/examples and warp/tests, and
#             of ../shared/warp_suite; ignored by git, carried)
#   volume    tests/geometry/test_volume.py on cuda:0, then Warp's volume test files (cpu + cuda:0), from .warpfiles
#   geosuite  Warp's geometry tests against tilewarp (cpu + cuda:0), from .warpfiles
#   geoprof   the GPU hash-grid and mesh builds launch by launch (host-timed), and Nsight Compute's kernel times
#   geoquery  Nsight Compute sections of the benchmark's ray and neighbour-count kernels
#   geotests  tests/geometry and tests/runtime/test_utils.py on cuda:0
#   geobench  the geometry benchmark rows (side by side with warp-lang after `joinwarp`)
#   geoexamples  Warp's geometry example programs on cuda:0, from .warpfiles
#   speedtests  the test files of issue 29's changed paths on cuda:0 (tile GEMM shapes, tile gradients,
#             hash grid, tapes, tile_matmul)
#   warptimes  Warp's own example programs timed under both libraries ($WARPTIMES_ONLY: name fragments)
#   loopgrads  the autodiff tests on cuda:0, then the bounce and Tape.backward benchmark rows
#   rows      the SIMT, atomic, launch, backward and tile rows of python -m benchmarks (side by side after `joinwarp`)
#   parts     benchmarks.example_parts of tile_mlp and tile_nbody (side by side after `joinwarp`)
#   somexamples  the gallery examples issue 29's changes touch (mesh_collision, dem_particles, diff_ball,
#             cloth_sphere, sph_fluid, tile_nbody), side by side with warp-lang after `joinwarp`
#   dist      tilewarp.distributed on one GPU: its tests on cuda:0, both examples under torchrun (NCCL, 1 rank)
#             with --check, and each against its CPU run
#   dist2     on a 2-GPU machine: both examples on 2 ranks (NCCL) with --check, and the wave example's
#             strong scaling on a 16384^2 grid (1 rank against 2, ms a step: compute and exchange)
set -uo pipefail
REPO="$PWD"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TILEWARP_CACHE_DIR=/tmp/tw-cache
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if ls .whl/*.whl > /dev/null 2>&1; then  # carried wheels the machine lacks (MathDx, CCCL, CUDA headers)
  [ -d /tmp/site ] || python -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
python build_lib.py 2>&1 | tail -1
WITH_WARP=""
[ -d /tmp/warp-site/warp ] && WITH_WARP=1 && export PYTHONPATH="$PYTHONPATH:/tmp/warp-site"  # joined by an earlier call
for STEP in "$@"; do
  echo "== $STEP ($(date +%T))"
  case "$STEP" in
  stash)
    mkdir -p ~/stash && cp .whl1/* ~/stash/ && ls ~/stash ;;
  probe)
    timeout 120 python benchmarks/raw_tile_probe.py 2>&1 | tee "$OUT/raw_probe.txt"
    timeout 150 python benchmarks/tile_probe.py 2>&1 | tee "$OUT/tile_probe.txt" | grep -v "row sums True, copy True"
    timeout 150 ncu --clock-control none -k regex:"sum_squares|row_sum|tile_copy" --launch-skip 3 --launch-count 3 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis python -m benchmarks --device cuda:0 --modules tilewarp --only tiles \
      > "$OUT/ncu_tiles.txt" 2>&1
    grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Block Limit|Registers Per|Stall|Warp Cycles Per Issued|Waves Per SM|Grid Size|Block Size" \
      "$OUT/ncu_tiles.txt" | head -80
    for f in $(find "$TILEWARP_CACHE_DIR" -name "*.cubin"); do  # SASS of the benchmark kernels
      cuobjdump --dump-sass "$f" > /tmp/sass.txt 2>&1
      grep -q "Function : \(sum_squares\|row_sum\|tile_copy\)" /tmp/sass.txt && cat /tmp/sass.txt >> "$OUT/sass_tiles.txt"
    done; wc -l "$OUT/sass_tiles.txt" ;;
  tprobe)  # tilewarp's variants of the tile benchmarks only, and their SASS
    timeout 150 python benchmarks/tile_probe.py --quick 2>&1 | tee "$OUT/tile_probe.txt"
    for f in $(find "$TILEWARP_CACHE_DIR" -name "*.cubin"); do
      cuobjdump --dump-sass "$f" > /tmp/sass.txt 2>&1
      grep -q "Function : \(sum_squares\|row_sum\)" /tmp/sass.txt && cat /tmp/sass.txt >> "$OUT/sass_tiles.txt"
    done ;;
  ncu)  # Nsight Compute: the hand-written reference kernels, then tilewarp's (one launch each)
    M="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats"
    timeout 120 ncu --clock-control none -k regex:"^(sum_squares|row_sum)$" --launch-skip 2 --launch-count 2 $M \
      python benchmarks/raw_tile_probe.py --once > "$OUT/ncu_raw.txt" 2>&1
    timeout 150 ncu --clock-control none -k regex:"^(sum_squares|row_sum)_" --launch-skip 4 --launch-count 2 $M \
      python benchmarks/tile_probe.py --quick > "$OUT/ncu_tw.txt" 2>&1
    for f in ncu_raw ncu_tw; do echo "-- $f"; grep -E "^  [a-z_0-9]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Executed Instructions  |Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Registers Per" "$OUT/$f.txt"; done ;;
  matmul)  # tile GEMM 4096^3 (tilewarp, torch; warp-lang too after a `warp` step), two tile shapes
    MODS=tilewarp,torch; [ -n "$WITH_WARP" ] && MODS=tilewarp,warp,torch
    timeout 250 python -m benchmarks.matmul --device cuda:0 --modules $MODS 2>&1 | tee "$OUT/matmul_64.txt"
    echo "-- cuBLASDx (enable_mathdx_gemm) and tilewarp's own paths, 64x64x64 tiles on 128 threads"
    timeout 200 python -m benchmarks.matmul --device cuda:0 --modules tilewarp:mathdx,tilewarp --tile 64,64,64 \
      --block_dim 128 2>&1 | grep -v "^dtype"
    for cfg in 64,64,64:128 128,64,64:128 64,128,64:128 128,128,64:256 128,128,32:256 128,256,64:256; do
      echo "-- tile ${cfg%%:*} block_dim ${cfg##*:}"
      timeout 100 python -m benchmarks.matmul --device cuda:0 --modules tilewarp \
        --tile ${cfg%%:*} --block_dim ${cfg##*:} --dtypes float16,float32 2>&1 | grep -v "^dtype"
    done 2>&1 | tee "$OUT/matmul_tiles.txt" ;;
  mmtests)  # the tile_matmul tests on cuda:0 (tensor-core paths: mma.sync, wgmma; cuBLASDx)
    TILEWARP_TEST_DEVICES=cuda:0 timeout 300 python -m pytest -q -p no:cacheprovider --tb=short \
      tests/tiles/test_tile_matmul.py tests/tiles/test_tile_matmul_mathdx.py tests/tiles/test_seed_programs.py \
      > "$OUT/mm_tests.txt" 2>&1
    grep -E "^(FAILED|ERROR)|passed|failed|^E  " "$OUT/mm_tests.txt" | head -30 ;;
  mmprobe)  # Nsight Compute and the SASS of the float16 tile GEMM
    M="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
    TILEWARP_CACHE_DIR=/tmp/mm-cache timeout 200 ncu --clock-control none -k regex:"^gemm" --launch-skip 1 --launch-count 1 $M \
      python -m benchmarks.matmul --device cuda:0 --modules tilewarp --dtypes float16 --n 4096 ${MM_ARGS:---tile 128,128,64 --block_dim 256} \
      > "$OUT/ncu_gemm.txt" 2>&1
    grep -E "Duration|Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Stall|Warp Cycles|Executed Ipc|Pipe|Shared Memory|Bank" "$OUT/ncu_gemm.txt" | head -50
    for f in $(find /tmp/mm-cache -name "*.cubin"); do cuobjdump --dump-sass "$f" > "$OUT/sass_gemm.txt"; done
    grep -o "HGMMA[.A-Z0-9x]*\|HMMA[.A-Z0-9]*\|LDSM[.A-Z0-9]*\|LDGSTS[.A-Z0-9]*\|BAR[.A-Z]*\|LDS[.A-Z0-9]*\|STS[.A-Z0-9]*\|LDG[.A-Z0-9]*" "$OUT/sass_gemm.txt" | sort | uniq -c ;;
  diag)  # the one test that failed on cuda:0 at the session's start, with gradcheck's summary
    (cd tests/autodiff && timeout 120 python - 1234 <<'PYEOF' 2>&1 | tail -40 | tee "$OUT/diag_atomics.txt"
import sys; sys.path.insert(0, ".."); sys.path.insert(0, ".")
import numpy as np, tilewarp as tw
import test_grad_kernels as t
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1234  # the rng fixture's
for device in ("cpu", "cuda:0"):
    ins = t._arrays(tw, t._atomic_inputs(np.random.default_rng(seed)), device)
    ok = tw.autograd.gradcheck(t.TWM.atomics, dim=24, inputs=ins, outputs=t._zeros(tw, t._ATOMIC_OUT, device),
                               device=device, raise_exception=False, show_summary=True, **t.TOL)
    print(device, "gradcheck", ok)
PYEOF
    ) ;;
  blocks)  # block programs: tests on cuda:0, then the benchmark (side by side with Triton and torch if installed)
    python -c "import triton; print('triton', triton.__version__)" 2>&1 | tail -1
    TILEWARP_TEST_DEVICES=cuda:0 timeout 300 python -m pytest -q -p no:cacheprovider --tb=short tests/blocks \
      > "$OUT/blocks_tests.txt" 2>&1
    grep -E "^(FAILED|ERROR)|passed|failed|^E  " "$OUT/blocks_tests.txt" | head -30
    timeout 420 python -m benchmarks.blocks --device cuda:0 ${BLOCKS_ARGS:-} 2>&1 | tee "$OUT/blocks_bench.txt" \
      | grep -v "compiled in\|loaded from" ;;
  dist)
    TILEWARP_TEST_DEVICES=cuda:0 timeout 300 python -m pytest -q -p no:cacheprovider --tb=short tests/distributed \
      > "$OUT/dist_tests.txt" 2>&1
    grep -E "^(FAILED|ERROR)|passed|failed|^E  " "$OUT/dist_tests.txt" | head -20
    (cd examples && for ex in "dist_wave.py --grid 1024 --steps 200 --image $OUT/dist_wave.png" "dist_diffsim.py"; do
      timeout 200 torchrun --nproc_per_node 1 $ex --check 2>&1 | grep -v "^W\|^\*\*\*\|OMP_NUM" | tail -3; done)
    (cd examples && timeout 200 python - <<'PYEOF'
import numpy as np, tilewarp as wp, dist_wave, dist_diffsim
from tilewarp import distributed as dist
wp.config.quiet = True
one = lambda d: dist.Context(0, 1, 0, "single", wp.get_device(d))
f_gpu = dist_wave.simulate(one("cuda:0"), 512, 200)[0]; f_cpu = dist_wave.simulate(one("cpu"), 512, 200)[0]
print(f"wave 512^2, 200 steps: cuda:0 against cpu, max |difference| {np.abs(f_gpu - f_cpu).max():.3g} (field max {np.abs(f_cpu).max():.3f})")
h_gpu, v_gpu = dist_diffsim.optimise(one("cuda:0"), 256, 20); h_cpu, v_cpu = dist_diffsim.optimise(one("cpu"), 256, 20)
print(f"diffsim: loss {h_gpu[-1][0]:.5f} (cuda:0) vs {h_cpu[-1][0]:.5f} (cpu); velocity {np.round(v_gpu, 4)} vs {np.round(v_cpu, 4)}")
PYEOF
    ) ;;
  dist2)
    nvidia-smi -L
    (cd examples && for ex in "dist_wave.py --grid 4096 --steps 200 --image $OUT/dist_wave2.png" "dist_diffsim.py"; do
      timeout 200 torchrun --nproc_per_node 2 $ex --check 2>&1 | grep -v "^W\|^\*\*\*\|OMP_NUM" | tail -3; done
     for n in 1 2; do timeout 250 torchrun --nproc_per_node $n dist_wave.py --grid 16384 --steps 100 --image "" 2>&1 \
       | grep "rank(s)"; done) ;;
  tiles)
    TILEWARP_TEST_DEVICES=cuda:0 timeout 300 python -m pytest -q -p no:cacheprovider --tb=short tests/tiles \
      > "$OUT/tiles_tests.txt" 2>&1
    grep -E "^(FAILED|ERROR)|passed|failed|^E  " "$OUT/tiles_tests.txt" | head -30 ;;
  install)
    python3 -m pip install -q --no-index --no-deps --target /tmp/buildsite .whl_inst/setuptools-*.whl
    rm -rf /tmp/wheel /tmp/twsite && t0=$(date +%s)
    PYTHONPATH=/tmp/buildsite python -m pip wheel -q --no-deps --no-build-isolation -w /tmp/wheel . 2>&1 | tail -3
    python -m pip install -q --no-index --no-deps --target /tmp/twsite /tmp/wheel/tilewarp-*.whl 2>&1 | tail -3
    echo "wheel build + install: $(( $(date +%s) - t0 )) s"; ls /tmp/twsite/tilewarp/*.so
    mkdir -p /tmp/fresh && cd /tmp/fresh && cat > first.py <<'PYEOF'
import sys, time
t0 = time.perf_counter()
import tilewarp as wp
t1 = time.perf_counter()
@wp.kernel
def axpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]
x = wp.ones(1000, dtype=float, device="cuda:0")
y = wp.zeros(1000, dtype=float, device="cuda:0")
t2 = time.perf_counter()
wp.launch(axpy, dim=1000, inputs=[x, y, 2.0])
wp.synchronize()
t3 = time.perf_counter()
assert float(y.numpy().sum()) == 2000.0
n = 20000
t4 = time.perf_counter()
for _ in range(n):
    wp.launch(axpy, dim=1000, inputs=[x, y, 2.0])
wp.synchronize()
t5 = time.perf_counter()
print(f"process {sys.argv[1]}: import {t1 - t0:.3f} s, compile + first launch {t3 - t2:.3f} s, "
      f"then {(t5 - t4) / n * 1e6:.2f} us per launch; from {wp.__file__}")
PYEOF
    for i in 1 2 3; do PYTHONPATH=/tmp/twsite TILEWARP_CACHE_DIR=/tmp/fresh/cache python first.py $i; done
    PYTHONPATH=/tmp/twsite:$REPO timeout 200 python -m benchmarks --device cuda:0 --modules tilewarp \
      --only compile,launch 2>&1 | tee "$OUT/install_bench.txt" | grep -v "^   "
    cd "$REPO" ;;
  suite)
    # test_packaging builds the wheel without pip's build isolation there (no package index)
    python3 -m pip install -q --no-index --no-deps --target /tmp/buildsite .whl_inst/setuptools-*.whl
    export PIP_NO_BUILD_ISOLATION=0 PYTHONPATH="/tmp/buildsite:$PYTHONPATH"
    ls tests/test_*.py tests/*/test_*.py | xargs -P 12 -I{} sh -c 'f={}; TILEWARP_TEST_DEVICES=cuda:0 \
      timeout 250 python -m pytest -q -p no:cacheprovider --tb=line "$f" > "/tmp/pt_$(echo $f | tr / _).txt" 2>&1; \
      echo "$f: $(tail -1 "/tmp/pt_$(echo $f | tr / _).txt")"' > "$OUT/suite_cuda.txt"
    grep -v " passed in \| passed, " "$OUT/suite_cuda.txt"
    python - "$OUT/suite_cuda.txt" <<'EOF'
import re, sys
tot = {}
for line in open(sys.argv[1]):
    for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", line):
        tot[k] = tot.get(k, 0) + int(n)
print("suite on cuda:0:", tot)
EOF
    grep -h "^FAILED\|^ERROR" /tmp/pt_*.txt | head -20
    for f in $(grep -l "failed\|error" /tmp/pt_*.txt); do cp "$f" "$OUT/"; done ;;
  examples)
    MODS=tilewarp; [ -n "$WITH_WARP" ] && MODS=tilewarp,warp
    timeout 400 python -m benchmarks.examples --device cuda:0 --modules $MODS --frames 20 2>&1 | tee "$OUT/examples_$MODS.txt" ;;
  joinwarp|warp)
    [ -f ~/stash/warp.partaa ] || { echo "no stashed first half (machine not warm): stash again"; continue; }
    cat ~/stash/warp.partaa .whl2/warp.partab > /tmp/warp.tar.xz
    mkdir -p /tmp/warp-site && python -c "import tarfile; tarfile.open('/tmp/warp.tar.xz').extractall('/tmp/warp-site')"
    export PYTHONPATH="$PYTHONPATH:/tmp/warp-site"; WITH_WARP=1
    [ "$STEP" = joinwarp ] && { python -c "import warp; print('warp-lang', warp.__version__)"; continue; }
    timeout 300 python -m benchmarks --device cuda:0 --modules tilewarp,warp 2>&1 | tee "$OUT/bench_warp.txt" \
      | grep -v "^Module\|^Warp\|^   " ;;
  geometry)
    ls tests/geometry/test_*.py | xargs -P 8 -I{} sh -c 'f=$(basename {} .py); TILEWARP_TEST_DEVICES=cuda:0 \
      timeout 300 python -m pytest -q -p no:cacheprovider --tb=short {} > "$OUT/geo_$f.txt" 2>&1; \
      echo "$f: $(tail -1 "$OUT/geo_$f.txt")"; grep -E "^(FAILED|ERROR)" "$OUT/geo_$f.txt" | head -5'
    WARP_EXAMPLES_DIR="$REPO/.warpfiles/warp/examples" TILEWARP_ASSET_DIR="$REPO/.warpfiles/warp/examples/assets" \
      timeout 240 python -m benchmarks.warp_examples --geometry --device cuda:0 --frames 3 --timeout 100 \
      --json "$OUT/warp_examples.json" | tee "$OUT/warp_examples.txt" ;;
  geobench)  # the geometry rows of python -m benchmarks (side by side with warp-lang after `joinwarp`)
    MODS=tilewarp; [ -n "$WITH_WARP" ] && MODS=tilewarp,warp
    timeout 280 python -m benchmarks --device cuda:0 --modules $MODS --only geometry 2>&1 | tee "$OUT/bench_geometry.txt" \
      | grep -v "^Module\|^Warp\|^   " ;;
  geoprof)  # where the GPU builds' time goes: per-launch host timing, then Nsight Compute's kernel durations
    timeout 150 python -m benchmarks.geometry_probe --device cuda:0 2>&1 | tee "$OUT/geo_probe.txt"
    timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv python -m benchmarks.geometry_probe \
      --device cuda:0 --once > "$OUT/geo_ncu.csv" 2> "$OUT/geo_ncu.err"
    python benchmarks/ncu_summary.py "$OUT/geo_ncu.csv" | tee "$OUT/geo_ncu.txt" ;;
  geoquery)  # Nsight Compute of the benchmark's query kernels (rays, neighbour count), first launch each
    for K in cast_rays count_neighbours; do
      timeout 200 ncu --clock-control none -k regex:"$K" -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats \
        python -m benchmarks --device cuda:0 --modules tilewarp --only geometry > "$OUT/ncu_$K.txt" 2>&1
      grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|L1/TEX Hit|L2 Hit|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Registers Per|Local Memory|Stall|Warp Cycles Per Issued|Executed Ipc|Issue Slots|Executed Instructions|Block Limit" \
        "$OUT/ncu_$K.txt" | head -40
    done ;;
  geotests)  # tests/geometry and the utilities' sorts on cuda:0 (one pytest per file, 8 at a time)
    (ls tests/geometry/test_*.py; echo tests/runtime/test_utils.py) | xargs -P 8 -I{} sh -c 'f=$(basename {} .py); \
      TILEWARP_TEST_DEVICES=cuda:0 timeout 300 python -m pytest -q -p no:cacheprovider --tb=short {} \
      > "$OUT/geo_$f.txt" 2>&1; echo "$f: $(tail -1 "$OUT/geo_$f.txt")"; grep -E "^(FAILED|ERROR)" "$OUT/geo_$f.txt" | head -5' ;;
  speedtests)  # issue 29's changed paths on cuda:0: tile GEMM shapes and gradients, tile adjoints, hash grid, tapes
    for f in tests/tiles/test_tile_matmul_shapes.py tests/tiles/test_tile_grads.py tests/geometry/test_hash_grid.py \
        tests/autodiff/test_core.py tests/autodiff/test_grad_struct.py tests/tiles/test_tile_matmul.py; do echo $f; done | xargs -P 6 -I{} sh -c \
      'f=$(basename {} .py); TILEWARP_TEST_DEVICES=cuda:0 timeout 300 python -m pytest -q -p no:cacheprovider \
      --tb=short {} > "/tmp/st_$f.txt" 2>&1; echo "$f: $(tail -1 "/tmp/st_$f.txt")"; grep -E "^(FAILED|ERROR)" "/tmp/st_$f.txt" | head -5' ;;
  loopgrads)  # the autodiff tests on cuda:0 (loops' reverse passes), then the bounce / Tape.backward rows
    ls tests/autodiff/test_*.py tests/tiles/test_tile_grads.py | xargs -P 8 -I{} sh -c 'f=$(basename {} .py); \
      TILEWARP_TEST_DEVICES=cuda:0 timeout 300 python -m pytest -q -p no:cacheprovider --tb=short {} \
      > "/tmp/lg_$f.txt" 2>&1; echo "$f: $(tail -1 "/tmp/lg_$f.txt")"; grep -E "^(FAILED|ERROR)" "/tmp/lg_$f.txt" | head -5'
    MODS=tilewarp; [ -n "$WITH_WARP" ] && MODS=tilewarp,warp
    timeout 200 python -m benchmarks --device cuda:0 --modules $MODS --only bounce,backward 2>&1 | grep -v "^Module\|^Warp\|^   " ;;
  rows)  # the rows issue 29's second session changed: SIMT integrate, atomics, launch, Tape.backward, tiles
    MODS=tilewarp; [ -n "$WITH_WARP" ] && MODS=tilewarp,warp
    timeout 300 python -m benchmarks --device cuda:0 --modules $MODS --only integrate,bounce,atomic,launch,backward,tiles \
      2>&1 | tee "$OUT/rows.txt" | grep -v "^Module\|^Warp\|^   " ;;
  parts)  # where tile_mlp's iteration and tile_nbody's step go (both libraries after `joinwarp`)
    MODS=tilewarp; [ -n "$WITH_WARP" ] && MODS=tilewarp,warp
    for ex in tile_mlp tile_nbody; do timeout 200 python -m benchmarks.example_parts --device cuda:0 --modules $MODS \
      --example $ex 2>&1 | grep -v "^Module\|^Warp\|^   "; done ;;
  somexamples)  # the gallery examples this session's changes touch, on cuda:0 (with warp-lang after `joinwarp`)
    MODS=tilewarp; [ -n "$WITH_WARP" ] && MODS=tilewarp,warp
    timeout 400 python -m benchmarks.examples --device cuda:0 --modules $MODS --frames 20 \
      --only mesh_collision,dem_particles,diff_ball,cloth_sphere,sph_fluid,tile_nbody 2>&1 | tee "$OUT/examples_some.txt" ;;
  warptimes)  # Warp's own example programs timed side by side (benchmarks/examples.py --warp-examples; needs .warpfiles)
    MODS=tilewarp; [ -n "$WITH_WARP" ] && MODS=tilewarp,warp
    WARP_EXAMPLES_DIR="$REPO/.warpfiles/warp/examples" timeout 450 python -m benchmarks.examples --device cuda:0 \
      --modules $MODS --warp-examples --frames 20 --only "${WARPTIMES_ONLY:-example_}" 2>&1 | tee "$OUT/warp_times.txt" ;;
  geoexamples)  # Warp's geometry example programs on cuda:0 (with warp-lang too after `joinwarp`)
    WARP_EXAMPLES_DIR="$REPO/.warpfiles/warp/examples" TILEWARP_ASSET_DIR="$REPO/.warpfiles/warp/examples/assets" \
      timeout 280 python -m benchmarks.warp_examples --geometry --device cuda:0 --frames 3 --timeout 100 \
      --json "$OUT/warp_examples.json" | tee "$OUT/warp_examples.txt" ;;
  volume)  # Volume allocations and rebuilds: our tests on cuda:0, then Warp's volume test files (cpu + cuda:0)
    TILEWARP_TEST_DEVICES=cuda:0 timeout 250 python -m pytest -q -p no:cacheprovider --tb=short \
      tests/geometry/test_volume.py 2>&1 | tail -15
    timeout 250 python .warpfiles/warp_suite/warp_suite.py --warp-dir .warpfiles/warp --module tilewarp \
      --tests geometry/test_volume_write.py --tests geometry/test_volume.py -j 8 --timeout 200 \
      --out "$OUT/warpsuite_volume.json" > "$OUT/warpsuite_volume.txt" 2>&1
    tail -8 "$OUT/warpsuite_volume.txt" ;;
  geosuite)
    timeout 280 python .warpfiles/warp_suite/warp_suite.py --warp-dir .warpfiles/warp --module tilewarp --tests geometry \
      --tests test_closest_point_edge_edge.py --tests test_intersect.py --tests test_noise.py \
      --tests test_triangle_closest_point.py -j 12 --timeout 250 --out "$OUT/warpsuite_geometry.json" \
      > "$OUT/warpsuite_geometry.txt" 2>&1
    tail -5 "$OUT/warpsuite_geometry.txt" ;;
  warpsuite)
    mkdir -p /tmp/wd && tar xzf .whl_inst/warptests.tgz -C /tmp/wd
    for s in core tile; do
      timeout 280 python .whl_inst/warp_suite/warp_suite.py --warp-dir /tmp/wd/warp --module tilewarp --tests $s -j 16 \
        --timeout 260 --out "$OUT/warpsuite_$s.json" > "$OUT/warpsuite_$s.txt" 2>&1
      tail -4 "$OUT/warpsuite_$s.txt"
    done ;;
  latests)
    TILEWARP_TEST_DEVICES=cuda:0 timeout 300 python -m pytest -q -p no:cacheprovider --tb=short \
      tests/tiles/test_tile_linalg.py tests/tiles/test_tile_fft.py tests/tiles/test_tiles_doc.py \
      tests/examples/test_examples.py -k "linalg or fft or doc or ropes or poisson" > "$OUT/la_tests.txt" 2>&1
    grep -E "^(FAILED|ERROR)|passed|failed|^E  " "$OUT/la_tests.txt" | head -30 ;;
  lasuite)  # Warp's own Cholesky / solve / FFT tests (cpu + cuda:0 variants)
    mkdir -p /tmp/wd && tar xzf .whl_inst/warptests.tgz -C /tmp/wd
    for f in cholesky solve fft; do
      timeout 200 python .whl_inst/warp_suite/warp_suite.py --warp-dir /tmp/wd/warp --module tilewarp \
        --tests tile/test_tile_${f}_no_mathdx.py -j 8 --timeout 180 > "$OUT/lasuite_$f.txt" 2>&1
      echo "$f: $(grep TOTAL "$OUT/lasuite_$f.txt")"; grep -E "FAIL|ERROR" "$OUT/lasuite_$f.txt" | head -5
    done ;;
  linalg)  # tile Cholesky and FFT batches (tilewarp, torch; warp-lang too after `joinwarp`)
    MODS=tilewarp,torch; [ -n "$WITH_WARP" ] && MODS=tilewarp,warp,torch
    timeout 400 python -m benchmarks.linalg --device cuda:0 --modules $MODS 2>&1 | tee "$OUT/linalg.txt"
    for bd in 32 128; do echo "-- block_dim $bd"
      timeout 150 python -m benchmarks.linalg --device cuda:0 --modules tilewarp --block_dim $bd 2>&1 | grep -v "^problem"
    done | tee "$OUT/linalg_block_dims.txt" ;;
  lancu)  # Nsight Compute of the tile Cholesky (64 x 64) and FFT (1024 points) benchmark kernels
    M="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis"
    timeout 200 ncu --clock-control none -k regex:"^(cholesky|fft)_" --launch-skip 1 --launch-count 1 $M \
      python -m benchmarks.linalg --device cuda:0 --modules tilewarp --cholesky 64 --fft 1024 > "$OUT/ncu_linalg.txt" 2>&1
    grep -E "^  [a-z_0-9]+ \(|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Block Limit|Registers Per|Dynamic Shared|Static Shared|Grid Size|Block Size|Warp Cycles Per Issued|Stall|No Eligible|L1/TEX Hit|Bank" "$OUT/ncu_linalg.txt" | head -70 ;;
  mmsuite)  # Warp's own tile_matmul tests (cpu + cuda:0 variants)
    mkdir -p /tmp/wd && tar xzf .whl_inst/warptests.tgz -C /tmp/wd
    for f in tile/test_tile_matmul_no_mathdx.py tile/test_tile_matmul_strides.py tile/test_tile_matmul.py; do
      timeout 200 python .whl_inst/warp_suite/warp_suite.py --warp-dir /tmp/wd/warp --module tilewarp --tests $f -j 8 \
        --timeout 180 > "$OUT/mmsuite_$(basename $f .py).txt" 2>&1
      echo "$f: $(grep TOTAL "$OUT/mmsuite_$(basename $f .py).txt")"
    done ;;
  *) echo "unknown step $STEP" ;;
  esac
done
echo "== done ($(date +%T))"
