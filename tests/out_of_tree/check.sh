#!/usr/bin/env bash
# tests/out_of_tree/check.sh BUILD_DIR PYTHON — the install tree and a C++
# model out of nholo's tree: installs BUILD_DIR's nholo into a temporary
# prefix, builds tests/out_of_tree/pendulum.hpp with find_package(nholo) and
# nholo_add_model (by clang++ when there is one: any C++17 compiler), runs
# it (model = "libcartesian_pendulum.so") with the installed nholo, and checks its trajectories against the same pendulum as a
# model file to 1e-13.
set -euo pipefail
BUILD=$(cd "$1" && pwd)
PY=$2
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nholo_out_of_tree.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
test -x "$WORK/prefix/bin/nholo"
test -f "$WORK/prefix/include/nholo/host/model_files/plugin_define.hpp"
# the plugin's compiler need not be nholo's (the plugin interface is C): clang++
# when there is one, else the compiler nholo was built with
CXX=$(command -v clang++ || sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
echo "out-of-tree model: compiled by $CXX"
cmake -S "$HERE" -B "$WORK/build" -DCMAKE_PREFIX_PATH="$WORK/prefix" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$WORK/build" >/dev/null
test -f "$WORK/build/libcartesian_pendulum.so"
cp "$HERE/run.toml" "$HERE/pendulum.model.toml" "$WORK/build/"
cd "$WORK/build"
export NHOLO_CACHE_DIR="$WORK/cache"
"$WORK/prefix/bin/nholo" run -q run.toml --set 'model="libcartesian_pendulum.so"' --set 'output.path="cpp.h5"'
"$WORK/prefix/bin/nholo" run -q run.toml --set 'model="pendulum.model.toml"' --set 'output.path="file.h5"'
"$PY" - <<'PY'
import h5py, numpy as np
a, b = h5py.File("cpp.h5", "r"), h5py.File("file.h5", "r")
assert a.attrs["model"] == "cartesian_pendulum", a.attrs["model"]
worst = 0.0
for f in ("udwadia_kalaba", "lagrange_multiplier"):
    for d in ("q", "qdot"):
        x, y = a[f][d][...], b[f][d][...]
        worst = max(worst, np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(x))))
    assert (a[f]["status"][...] == 0).all()
# the rod: x^2 + y^2 = l^2 along the C++ plugin's path
q = a["udwadia_kalaba"]["q"][...]
rod = np.max(np.abs(np.hypot(q[..., 0], q[..., 1]) - 1.0))
print(f"out-of-tree C++ plugin vs model file: max relative difference {worst:.2e}, rod length error {rod:.2e}")
assert worst < 1e-13, worst
assert rod < 1e-9, rod
PY
echo "out-of-tree model: ok"
