#!/usr/bin/env bash
# The test command (README, .ci/run): sets the machine up, then
#   1. the product build (build/release): ONE nholo with the OpenMP backend,
#      the CUDA backend (-DNHOLO_WITH_CUDA, ON when nvcc is found) and MPI
#      runs (-DNHOLO_WITH_MPI, ON when Open MPI is found; the MPI tests run
#      mpirun -n 2 and -n 3, oversubscribed); warnings are errors. Every test
#      runs through that binary: without a GPU it integrates on OpenMP.
#   1b. the Python package (pip install . from the product build's folder:
#      nothing is compiled again) and its tests against the installed package
#   2. the same tests under AddressSanitizer + UndefinedBehaviorSanitizer
#      (CPU backends only: the sanitizers do not instrument device code; MPI
#      left out, its library is not instrumented: the MPI tests say so).
#   3. the GPU check's CPU-side steps: the relocatable bundle of that nholo
#      (scripts/bundle.sh, checked from a copy with an empty environment) and
#      scripts/gpu_check.sh on it, which stops after `nholo devices` when no
#      GPU is visible (and runs the whole check where one is).
# Step 1 compiles the GPU code of every unit to compute_90 PTX (nvcc's
# front end: every device-code error is found) and, where no
# GPU is visible, stops there: ptxas, the slowest half of each unit, would
# make code nothing here can run. ptxas still runs, at -O3 for sm_90, on the
# rolling coin's Udwadia-Kalaba kernels (ctest cuda_kernel_resources: no
# spills, the stack within budget, the lean kernels 3 blocks per SM). There
# the other models' units are compiled with an unoptimizing device back end
# (-DNHOLO_CUDA_CHECK_ONLY=ON: a third of nvcc's time; such an nholo runs on
# no GPU and says so). Where a GPU is visible, step 1 adds sm_90
# real code and optimizes all of it, so that the GPU check runs what the product runs;
# NHOLO_CUDA_ARCH="80-real;90-real;90-virtual" builds the product's list. Step 2 keeps line tables only (-g1: the sanitizers' reports
# name file and line) and compiles the tests' own code unoptimized and
# under AddressSanitizer only (CMakeLists.txt; nholo and its library keep
# both sanitizers), which builds several times quicker than -O1 -g.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
t_start=$(date +%s)
stamp() { echo "   ($(( $(date +%s) - t_start )) s since start)"; }

bash scripts/setup.sh

cuda_args=()
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_args=(-DNHOLO_WITH_CUDA=ON)
  default_arch="90-virtual"
  check_only=ON
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    default_arch="90-real;90-virtual"
    check_only=OFF
  fi
  cuda_args+=("-DCMAKE_CUDA_ARCHITECTURES=${NHOLO_CUDA_ARCH:-$default_arch}"
              "-DNHOLO_CUDA_CHECK_ONLY=${NHOLO_CUDA_CHECK_ONLY:-$check_only}")
  echo "CUDA architectures: ${NHOLO_CUDA_ARCH:-$default_arch}; GPU code for checking only:" \
    "${NHOLO_CUDA_CHECK_ONLY:-$check_only}"
else
  echo "nvcc not found: the CUDA backend cannot be built and checked on this machine" >&2
  exit 1
fi

echo "== [1/3] product build (OpenMP + CUDA in one nholo, and the Python module) + tests"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DNHOLO_BUILD_TESTS=ON -DNHOLO_PYTHON=ON \
  "${cuda_args[@]}" >/dev/null
cmake --build build/release -j "$JOBS"
build/release/nholo devices
# python_api and python_from_sympy run below, against the installed package
ctest --test-dir build/release --output-on-failure -j "$JOBS" -E '^python_(api|from_sympy)$'
stamp

echo "== [1b] the Python package installed from that build (pip install ., nothing recompiled) + its tests"
PY=${PYTHON:-python3}
# (the build folder's generator, Makefiles, also for pip's build step)
CMAKE_GENERATOR="Unix Makefiles" "$PY" -m pip install --quiet --disable-pip-version-check \
  --no-build-isolation -Cbuild-dir=build/release -Ccmake.define.NHOLO_BUILD_TESTS=ON .
# from another folder: the installed package, not the source tree
root=$PWD
(cd /tmp && NHOLO_CACHE_DIR="$root/build/test-plugin-cache" "$PY" -m pytest -q -p no:cacheprovider \
  "$root/tests/python/test_python_api.py" "$root/tests/python/test_from_sympy.py")
stamp

echo "== [2/3] ASan/UBSan build (CPU backends) + tests"
cmake -S . -B build/sanitize -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" \
  -DNHOLO_SANITIZE=ON -DNHOLO_WITH_CUDA=OFF >/dev/null
cmake --build build/sanitize -j "$JOBS"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/sanitize --output-on-failure -j "$JOBS"
stamp

echo "== [3/3] bundle + GPU check (CPU-side steps without a GPU)"
bash scripts/gpu_check.sh --build build/release --out out/ci_gpu_check --allow-no-gpu
stamp
echo "== all tests passed"
