#!/usr/bin/env bash
# One device call: the test suite on cuda:0 and CPU, the example on the GPU, and the side-by-side
# benchmarks. Usage (on the GPU machine, from the repo root): bash benchmarks/gpu_session.sh [warp-archive]
# The optional archive (.tar.zst of warp-lang's warp/ package) makes warp-lang available for the
# differential tests and the side-by-side numbers; without it those parts are skipped.
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TILEWARP_CACHE_DIR=/tmp/tw-cache
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
if [ -n "${1:-}" ] && [ -f "$1" ]; then
  mkdir -p /tmp/warp-site && "${ZSTD:-zstd}" -dc "$1" | tar xf - -C /tmp/warp-site && export PYTHONPATH="$PYTHONPATH:/tmp/warp-site"
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python -c "import numpy, cuda.bindings; from cuda.bindings import nvrtc; print('numpy', numpy.__version__, 'cuda-bindings', cuda.bindings.__version__, 'nvrtc', nvrtc.nvrtcVersion()[1:])"
python -c "import warp; print('warp', warp.__version__)" 2>/dev/null || echo "warp-lang not available"
echo "== example on the default device"
python examples/bouncing_particles.py --n 4000000 2>&1 | tee "$OUT/example.txt"
echo "== test suite on cpu and cuda:0"
TILEWARP_TEST_DEVICES=cpu,cuda:0 python -m pytest -q -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest.txt" | tail -30
echo "== benchmarks"
python -m benchmarks --device cuda:0 --modules "${BENCH_MODULES:-tilewarp,warp}" 2>&1 | tee "$OUT/bench.txt" | grep -v "^Module\|^Warp\|^   "
