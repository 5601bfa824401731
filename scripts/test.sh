#!/usr/bin/env bash
# The test command (README, .ci/run): sets the machine up, then
#   1. CPU build (Thrust OMP system, warnings as errors) and all tests;
#   2. the same tests under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. the CUDA build (nvcc, sm_90): compiles and links every model's ensemble
#      integrator; runs its smoke test only where a GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

bash scripts/setup.sh

echo "== [1/3] CPU build (OMP) + tests"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DNHOLO_BACKEND=OMP >/dev/null
cmake --build build/release -j "$JOBS"
ctest --test-dir build/release --output-on-failure -j "$JOBS"

echo "== [2/3] ASan/UBSan build + tests"
cmake -S . -B build/sanitize -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" \
  -DNHOLO_SANITIZE=ON >/dev/null
cmake --build build/sanitize -j "$JOBS"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/sanitize --output-on-failure -j "$JOBS"

echo "== [3/3] CUDA build (compile + link)"
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  cmake -S . -B build/cuda -DCMAKE_BUILD_TYPE=Release -DNHOLO_BACKEND=CUDA >/dev/null
  cmake --build build/cuda -j "$JOBS"
  ./build/cuda/nholo_cuda_smoke
else
  echo "nvcc not found: the CUDA build cannot be checked on this machine" >&2
  exit 1
fi
echo "== all tests passed"
