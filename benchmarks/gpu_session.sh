#!/usr/bin/env bash
# One device call: the test suite on cpu and cuda:0, the example on the GPU, and the side-by-side
# benchmarks. Usage (on the GPU machine, from the repo root): bash benchmarks/gpu_session.sh [warp-archive]
# The optional archive (.tar.zst of warp-lang's warp/ package, without warp-clang.so) adds warp-lang
# to the benchmarks only: the tests there compare the GPU with tilewarp's own CPU results, because
# warp-lang without its clang library cannot run CPU kernels.
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TILEWARP_CACHE_DIR=/tmp/tw-cache
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python -c "import numpy, cuda.bindings; from cuda.bindings import nvrtc; print('numpy', numpy.__version__, 'cuda-bindings', cuda.bindings.__version__, 'nvrtc', nvrtc.nvrtcVersion()[1:])"
echo "== example on the default device"
python examples/bouncing_particles.py --n 4000000 2>&1 | tee "$OUT/example.txt"
echo "== test suite on cpu and cuda:0"
TILEWARP_TEST_DEVICES=cpu,cuda:0 python -m pytest -q -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest.txt" | tail -40
modules=tilewarp
if [ -n "${1:-}" ] && [ -f "$1" ]; then
  mkdir -p /tmp/warp-site && "${ZSTD:-zstd}" -dc "$1" | tar xf - -C /tmp/warp-site && export PYTHONPATH="$PYTHONPATH:/tmp/warp-site" && modules=tilewarp,warp
fi
echo "== benchmarks ($modules)"
python -m benchmarks --device cuda:0 --modules "$modules" 2>&1 | tee "$OUT/bench.txt" | grep -v "^Module\|^Warp\|^   "
