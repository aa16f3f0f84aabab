#!/usr/bin/env bash
# Two back-to-back device calls (the machine stays warm 30 s between them):
#   call 1: bash benchmarks/gpu_final_session.sh tests    (carry .whl1: stashes the first half of warp)
#   call 2: bash benchmarks/gpu_final_session.sh bench    (carry .whl2: joins warp, side-by-side benchmarks)
# Call 1 runs the example on the GPU, the launch-overhead breakdown and an A/B of the native launch
# path (TILEWARP_FAST_LAUNCH=1/0, alternated), and the whole test suite with cuda:0 as the device;
# call 2 the benchmarks against warp-lang (its warp/ package without warp-clang.so: GPU kernels only).
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TILEWARP_CACHE_DIR=/tmp/tw-cache
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
if [ "${1:-}" = tests ]; then
  mkdir -p ~/stash && cp .whl1/* ~/stash/ 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "== example on the default device"
  timeout 60 python examples/bouncing_particles.py --n 4000000 2>&1 | tail -5 | tee "$OUT/example.txt"
  echo "== native runtime (Python.h: $(python -c 'import sysconfig,os;print(os.path.isfile(sysconfig.get_paths()["include"]+"/Python.h"))'))"
  python build_lib.py 2>&1 | tail -3
  echo "== launch overhead: breakdown, then native path on/off alternated (python -m benchmarks --only launch)"
  timeout 240 python benchmarks/cuda_launch_bench.py --device cuda:0 --paired 15 2>&1 | tee "$OUT/launch_breakdown.txt" | tail -20
  for i in 1 2 3 4 5; do for fast in 1 0; do
    echo "fast=$fast $(TILEWARP_FAST_LAUNCH=$fast timeout 60 python -m benchmarks --device cuda:0 --modules tilewarp \
      --only launch 2>&1 | grep -i 'launch overhead')"; done; done | tee "$OUT/launch_ab.txt"
  [ -n "${SKIP_SUITE:-}" ] && exit 0
  echo "== test suite, cuda:0 as the device (one pytest per file, 12 at a time, one shared cache)"
  ls tests/test_*.py tests/*/test_*.py | xargs -P 12 -I{} sh -c 'f={}; TILEWARP_TEST_DEVICES=cuda:0 \
    timeout "${SUITE_S:-420}" python -m pytest -q -p no:cacheprovider --tb=line "$f" \
    > "$OUT/pytest_$(echo $f | tr / _).txt" 2>&1; echo "$f: $(tail -1 "$OUT/pytest_$(echo $f | tr / _).txt")"'
  grep -h "^FAILED\|^ERROR\|Error:" "$OUT"/pytest_*.txt | head -30
else
  cat ~/stash/warp.part00 .whl2/warp.part01 > /tmp/warp.tar.zst
  mkdir -p /tmp/warp-site && LD_LIBRARY_PATH=~/stash ~/stash/zstd -dc /tmp/warp.tar.zst | tar xf - -C /tmp/warp-site
  export PYTHONPATH="$PYTHONPATH:/tmp/warp-site"
  echo "== benchmarks (tilewarp, warp)"
  timeout 420 python -m benchmarks --device cuda:0 --modules tilewarp,warp 2>&1 | tee "$OUT/bench.txt" \
    | grep -v "^Module\|^Warp\|^   "
fi
