#!/usr/bin/env bash
# Issue 10 on the GPU, one device call:
#   bash benchmarks/gpu_tiles_session.sh [bench-only]
# the tile tests with cuda:0 as the device, then the tile benchmarks (tilewarp alone; with warp-lang
# when it is on PYTHONPATH, see gpu_final_session.sh for carrying it).
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TILEWARP_CACHE_DIR=/tmp/tw-cache
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python build_lib.py 2>&1 | tail -1
if [ "${1:-}" != bench-only ]; then
  echo "== tile tests, cuda:0"
  TILEWARP_TEST_DEVICES=cuda:0 timeout "${SUITE_S:-360}" python -m pytest -q -p no:cacheprovider --tb=short \
    tests/tiles > "$OUT/tiles_tests.txt" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed|^E  " "$OUT/tiles_tests.txt" | head -40
fi
echo "== tile benchmarks"
timeout 240 python -m benchmarks --device cuda:0 --modules "${MODULES:-tilewarp}" --only tiles 2>&1 | tee "$OUT/bench_tiles.txt" \
  | grep -v "^Module\|^Warp\|^   "
