#!/usr/bin/env bash
# Issue 10 on the GPU (benchmarks/RESULTS.md). Modes:
#   bash benchmarks/gpu_tiles_session.sh            tile tests on cuda:0, tile probe and benchmarks (tilewarp alone)
#   bash benchmarks/gpu_tiles_session.sh suite      (carry .whl, .whl1) the above, the whole test suite on cuda:0,
#                                                   Warp's tile tests through ../shared/warp_suite (a copy in
#                                                   .whl/warp_suite, Warp's tests in .whl/warptests.tgz); stashes
#                                                   the first half of warp-lang for the next call
#   bash benchmarks/gpu_tiles_session.sh bench-warp (carry .whl2) joins warp-lang: tile benchmarks side by side
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TILEWARP_CACHE_DIR=/tmp/tw-cache
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python build_lib.py 2>&1 | tail -1
MODE="${1:-}"
if [ "$MODE" = stash ]; then  # (carry .whl1) the first half of warp-lang, for a bench-warp call right after
  mkdir -p ~/stash && cp .whl1/* ~/stash/ && ls ~/stash && exit 0
fi
if [ "$MODE" = bench-warp ]; then
  [ -f ~/stash/warp.partaa ] || { echo "no stashed first half (the machine was not warm): run the stash call again"; exit 1; }
  cat ~/stash/warp.partaa .whl2/warp.partab > /tmp/warp.tar.zst
  mkdir -p /tmp/warp-site && LD_LIBRARY_PATH=~/stash ~/stash/zstd -dc /tmp/warp.tar.zst | tar xf - -C /tmp/warp-site
  export PYTHONPATH="$PYTHONPATH:/tmp/warp-site"
  timeout 200 python -m benchmarks --device cuda:0 --modules tilewarp,warp --only tiles 2>&1 | tee "$OUT/bench_tiles_warp.txt" \
    | grep -v "^Module\|^Warp\|^   "
  MODE=warp-suite
fi
if [ "$MODE" = warp-suite ]; then
  echo "== Warp's tile tests (warp_suite), cpu + cuda:0"
  mkdir -p /tmp/wd && tar xzf .whl/warptests.tgz -C /tmp/wd
  timeout 400 python .whl/warp_suite/warp_suite.py --warp-dir /tmp/wd/warp --module tilewarp --tests tile -j 16 \
    --timeout 380 --out "$OUT/tile_suite_gpu.json" 2>&1 | tail -42 | tee "$OUT/tile_suite_gpu.txt"
  exit 0
fi
echo "== tile tests, cuda:0"
TILEWARP_TEST_DEVICES=cuda:0 timeout 300 python -m pytest -q -p no:cacheprovider --tb=short tests/tiles \
  > "$OUT/tiles_tests.txt" 2>&1
grep -E "^(FAILED|ERROR)|passed|failed|^E  " "$OUT/tiles_tests.txt" | head -30
echo "== tile probe (variants of the benchmark kernels)"
timeout 200 python benchmarks/tile_probe.py 2>&1 | tee "$OUT/tile_probe.txt" | grep -v "row sums True, copy True"
echo "== tile benchmarks (tilewarp)"
timeout 200 python -m benchmarks --device cuda:0 --modules tilewarp --only tiles 2>&1 | tee "$OUT/bench_tiles.txt" \
  | grep -v "^Module\|^Warp\|^   "
[ "$MODE" = suite ] || exit 0
mkdir -p ~/stash && cp .whl1/* ~/stash/
echo "== whole suite, cuda:0 (one pytest per file, 12 at a time)"
ls tests/test_*.py tests/*/test_*.py | xargs -P 12 -I{} sh -c 'f={}; TILEWARP_TEST_DEVICES=cuda:0 \
  timeout 200 python -m pytest -q -p no:cacheprovider --tb=line "$f" > "/tmp/pt_$(echo $f | tr / _).txt" 2>&1; \
  echo "$f: $(tail -1 "/tmp/pt_$(echo $f | tr / _).txt")"' | tee "$OUT/suite_cuda.txt" | grep -v " passed in \| passed, " 
grep -h "^FAILED\|^ERROR" /tmp/pt_*.txt | head -20
echo "== Warp's tile tests (warp_suite), cpu + cuda:0"
mkdir -p /tmp/wd && tar xzf .whl/warptests.tgz -C /tmp/wd
timeout 200 python .whl/warp_suite/warp_suite.py --warp-dir /tmp/wd/warp --module tilewarp --tests tile -j 12 \
  --out "$OUT/tile_suite_gpu.json" 2>&1 | tail -42 | tee "$OUT/tile_suite_gpu.txt"
