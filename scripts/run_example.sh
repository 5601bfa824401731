#!/usr/bin/env bash
# The main example: set the machine up, build nholo (build/release), run the
# rolling-coin ensemble of examples/rolling_coin.toml into out/coin.h5, print
# its statistics (the coin's bounded drift, Lemos 2022) and draw them next to
# it, out/coin_drift.png (scripts/plot_coin_drift.py).
# The CUDA backend is built where it can be used: when a GPU is visible
# (nvidia-smi lists one) and nvcc is there, for that GPU's architecture only;
# elsewhere the CPU backends only (minutes instead of tens of minutes on two
# cores). NHOLO_WITH_CUDA=ON or OFF decides instead (ON without a visible GPU:
# the product's architecture list); NHOLO_CUDA_ARCH sets the architectures.
# scripts/test.sh always builds and tests the one binary with both backends.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
args=()
gpu_arch=""
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu_arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)
fi
with_cuda=${NHOLO_WITH_CUDA:-}
if [ -z "$with_cuda" ]; then
  if [ -n "$gpu_arch" ] && { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
    with_cuda=ON
    echo "run_example: GPU visible (compute capability ${gpu_arch:0:-1}.${gpu_arch: -1}): building the CUDA backend for sm_$gpu_arch"
  else
    with_cuda=OFF
    echo "run_example: no GPU visible (or no nvcc): building the CPU backends only (NHOLO_WITH_CUDA=ON builds the CUDA backend too)"
  fi
fi
args+=("-DNHOLO_WITH_CUDA=$with_cuda")
if [ "$with_cuda" = ON ]; then
  arch=${NHOLO_CUDA_ARCH:-}
  [ -z "$arch" ] && [ -n "$gpu_arch" ] && arch="${gpu_arch}-real"
  [ -n "$arch" ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$arch")
fi
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release "${args[@]}" >/dev/null
cmake --build build/release -j "$(nproc)" --target nholo
mkdir -p out
cp examples/rolling_coin.toml out/coin.toml
(cd out && ../build/release/nholo run coin.toml --overwrite)
build/release/nholo stats out/coin.h5
"${PYTHON:-python3}" scripts/plot_coin_drift.py out/coin.h5 -o out/coin_drift.png
echo "result: $(pwd)/out/coin.h5"
echo "figure: $(pwd)/out/coin_drift.png"
