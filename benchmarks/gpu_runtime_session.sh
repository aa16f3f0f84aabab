#!/usr/bin/env bash
# One device call for the CUDA runtime issue: runtime tests on cpu + cuda:0 (streams, events,
# graphs, pinned memory, interop, the async-fault child process), the launch-overhead breakdown,
# the standard launch benchmark, then the CUDA-marked tests of the whole suite (time permitting).
# Usage (on the GPU machine, from the repo root): bash benchmarks/gpu_runtime_session.sh
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TILEWARP_CACHE_DIR=/tmp/tw-cache
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" 2>&1 | tail -1
echo "== runtime tests (cpu, cuda:0)"
TILEWARP_TEST_DEVICES=cpu,cuda:0 timeout 200 python -m pytest -q -p no:cacheprovider -x --tb=short \
  tests/runtime/test_streams.py tests/runtime/test_interop.py tests/runtime/test_nvrtc.py \
  tests/runtime/test_launch.py tests/runtime/test_array.py 2>&1 | tee "$OUT/pytest_runtime.txt" | tail -40
echo "== launch breakdown"
timeout 90 python benchmarks/cuda_launch_bench.py --device cuda:0 2>&1 | tee "$OUT/launch_cuda.txt"
timeout 60 python benchmarks/cuda_launch_bench.py --device cpu --iters 20000 2>&1 | tee "$OUT/launch_cpu.txt"
echo "== python -m benchmarks --only launch"
timeout 90 python -m benchmarks --device cuda:0 --modules tilewarp --only launch 2>&1 | tee "$OUT/bench.txt" | tail -8
echo "== all cuda-marked tests"
TILEWARP_TEST_DEVICES=cpu,cuda:0 timeout "${CUDA_SUITE_S:-150}" python -m pytest -q -p no:cacheprovider -m cuda \
  --tb=line tests 2>&1 | tee "$OUT/pytest_cuda.txt" | tail -25
