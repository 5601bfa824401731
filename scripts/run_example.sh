#!/usr/bin/env bash
# The main example: set the machine up, build nholo (build/release: the
# OpenMP backend and, when nvcc is found, the CUDA backend in one binary; the
# run takes the GPU when one is visible), run the rolling-coin ensemble of
# examples/rolling_coin.toml into out/coin.h5, print its statistics (the
# coin's bounded drift, Lemos 2022) and draw them next to it,
# out/coin_drift.png (scripts/plot_coin_drift.py).
# NHOLO_WITH_CUDA=OFF bash scripts/run_example.sh builds the CPU backends only
# (minutes instead of tens of minutes on two cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
args=()
[ -n "${NHOLO_WITH_CUDA:-}" ] && args+=("-DNHOLO_WITH_CUDA=$NHOLO_WITH_CUDA")
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release "${args[@]}" >/dev/null
cmake --build build/release -j "$(nproc)" --target nholo
mkdir -p out
cp examples/rolling_coin.toml out/coin.toml
(cd out && ../build/release/nholo run coin.toml --overwrite)
build/release/nholo stats out/coin.h5
"${PYTHON:-python3}" scripts/plot_coin_drift.py out/coin.h5 -o out/coin_drift.png
echo "result: $(pwd)/out/coin.h5"
echo "figure: $(pwd)/out/coin_drift.png"
