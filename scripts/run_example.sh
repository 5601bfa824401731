#!/usr/bin/env bash
# The main example: set the machine up, build nholo (CPU, OpenMP), run the
# rolling-coin ensemble of examples/rolling_coin.toml into out/coin.h5, print
# its statistics (the coin's bounded drift, PHYSICS.md item 10) and draw them
# next to it, out/coin_drift.png (scripts/plot_coin_drift.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DNHOLO_BACKEND=OMP >/dev/null
cmake --build build/release -j "$(nproc)" --target nholo
mkdir -p out
cp examples/rolling_coin.toml out/coin.toml
(cd out && ../build/release/nholo run coin.toml --overwrite)
build/release/nholo stats out/coin.h5
"${PYTHON:-python3}" scripts/plot_coin_drift.py out/coin.h5 -o out/coin_drift.png
echo "result: $(pwd)/out/coin.h5"
echo "figure: $(pwd)/out/coin_drift.png"
