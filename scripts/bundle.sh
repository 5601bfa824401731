#!/usr/bin/env bash
# scripts/bundle.sh [BUILD_DIR] [OUT_DIR] — a relocatable nholo folder that runs
# on a bare Linux x86-64 machine (with an NVIDIA driver for the GPU backend):
# how nholo is copied onto a cluster or a GPU machine without root, without a
# compiler and without a package registry.
#
#   OUT_DIR/bin/nholo            the command (a wrapper that finds lib/)
#   OUT_DIR/lib/nholo.bin        the nholo of BUILD_DIR (CUDA runtime linked in)
#   OUT_DIR/lib/*.so*            every shared library it needs except the C
#                                library's own and the GPU driver (libcuda),
#                                which the target machine provides
#   OUT_DIR/include/nholo/       nholo's headers: what a model file's plugin is
#                                compiled against, on the target machine, with
#                                its C++ compiler, any C++17 one (docs/models.md)
#   OUT_DIR/lib/libnvrtc*.so*    NVRTC, when BUILD_DIR's nholo has the CUDA
#                                backend (about 110 MB; NHOLO_BUNDLE_NVRTC=0
#                                leaves it out): it compiles a model file's GPU
#                                kernels on the target machine
#   OUT_DIR/examples/            the example configurations
#   OUT_DIR/scripts/gpu_check.sh the GPU check (run it with --nholo OUT_DIR/bin/nholo)
#   OUT_DIR/README.txt           what it needs: glibc version, driver
#
# Defaults: BUILD_DIR = build/release, OUT_DIR = out/nholo-bundle. The bundle
# is checked before this script returns: its nholo runs an example from a
# copy of the folder in another place, with an empty environment.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/release}
OUT=${2:-$ROOT/out/nholo-bundle}
NHOLO="$BUILD/nholo"
if [ ! -x "$NHOLO" ]; then
  echo "bundle: $NHOLO not found; build it first (cmake -S . -B $BUILD && cmake --build $BUILD --target nholo)" >&2
  exit 2
fi
case "$OUT" in
  /|"$ROOT"|"$HOME") echo "bundle: refusing to use '$OUT' as the output folder" >&2; exit 2 ;;
esac
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/examples" "$OUT/scripts"
cp "$NHOLO" "$OUT/lib/nholo.bin"

# shared libraries (ldd lists the whole closure), minus glibc and the driver
ldd "$NHOLO" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
  case "$name" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libutil.so*|libresolv.so*|ld-linux*|libcuda.so*|libnvidia*)
      continue ;;
  esac
  cp -L "$path" "$OUT/lib/$name"
done

cat > "$OUT/bin/nholo" <<'EOF'
#!/bin/sh
# nholo from a relocatable bundle (scripts/bundle.sh): its libraries are in ../lib;
# model files are compiled by the c++ on PATH (the machine's, e.g. after
# `module load gcc`), not the build machine's, unless NHOLO_CXX says otherwise
here=$(cd "$(dirname "$0")/.." && pwd)
NHOLO_CXX="${NHOLO_CXX:-c++}" \
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/lib/nholo.bin" "$@"
EOF
chmod +x "$OUT/bin/nholo"
cp -r "$ROOT/examples/." "$OUT/examples/"
# headers for model-file plugins: nholo's, and the libraries' it was built with
# (host/ keeps its folders: cli/, config/, run/, ...)
for d in kernels models host; do
  (cd "$ROOT" && find "$d" \( -name '*.hpp' -o -name '*.h' -o -name '*.cuh' \) -not -path 'kernels/nvrtc/*') |
    while read -r f; do
      mkdir -p "$OUT/include/nholo/$(dirname "$f")"
      cp "$ROOT/$f" "$OUT/include/nholo/$f"
    done
done
# the standard-library names the kernel headers use, for NVRTC
cp -r "$ROOT/kernels/nvrtc" "$OUT/include/nholo/kernels/"
# SLEEF's header, for a model file's SIMD lane add-on (compiled against
# include/sleef/sleef.h and linked with lib/libsleef.so.3, which nholo itself
# needs: host/model_files/plugin.cpp lane_flags)
sleef_h=$(sed -n 's/^NHOLO_SLEEF_INCLUDE_DIR:PATH=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
if [ -n "$sleef_h" ] && [ -f "$sleef_h/sleef.h" ] && ls "$OUT"/lib/libsleef.so.* >/dev/null 2>&1; then
  mkdir -p "$OUT/include/sleef"
  cp "$sleef_h/sleef.h" "$OUT/include/sleef/"
else
  echo "bundle: no sleef.h or libsleef beside nholo: model files will run one trajectory at a time per thread (no SIMD lanes)" >&2
fi
nvrtc=""
if [ "${NHOLO_BUNDLE_NVRTC:-1}" != 0 ] && "$NHOLO" devices | grep -q "^backends:.*cuda"; then
  nvrtc_lib=$(ls /usr/local/cuda/lib64/libnvrtc.so.[0-9]* 2>/dev/null | grep -v alt | head -1 || true)
  if [ -n "$nvrtc_lib" ]; then
    cp -L "$nvrtc_lib" "$OUT/lib/"
    for b in /usr/local/cuda/lib64/libnvrtc-builtins.so.[0-9]*; do
      case "$b" in *alt*) ;; *) cp -L "$b" "$OUT/lib/" ;; esac
    done
    nvrtc=$(basename "$nvrtc_lib")
  else
    echo "bundle: no libnvrtc in /usr/local/cuda/lib64: model files will run on the CPU backends only" >&2
  fi
fi
cp "$ROOT/scripts/gpu_check.sh" "$OUT/scripts/"

# the newest glibc symbol version any binary in the bundle needs
glibc=$(objdump -T "$OUT/lib/nholo.bin" "$OUT"/lib/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1)
if "$OUT/bin/nholo" devices | grep -q "^backends:.*cuda"; then cuda=yes; else cuda=no; fi
cat > "$OUT/README.txt" <<EOF
nholo $("$OUT/bin/nholo" --version 2>/dev/null || echo "") — relocatable bundle made by scripts/bundle.sh

Run:   bin/nholo run examples/rolling_coin.toml
       bin/nholo run examples/models/rolling_disk.toml   (a model file: compiled with
                                  the machine's C++ compiler against include/)
       bin/nholo devices          (backends built in, GPUs visible)
GPU:   bash scripts/gpu_check.sh --nholo bin/nholo

Needs: Linux x86-64 with glibc >= ${glibc#GLIBC_}; for the GPU backend an NVIDIA driver
       supporting CUDA $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' || echo "?")
       (the CUDA runtime is linked into nholo; the driver's libcuda comes from the machine).
CUDA backend built in: $cuda
EOF

# check: a copy of the bundle elsewhere, an empty environment
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
cp -r "$OUT" "$check/b"
(cd "$check" && env -i PATH=/usr/bin:/bin "$check/b/bin/nholo" run b/examples/rolling_coin.toml \
   --set ensemble.size=16 --set time.t_end=1 --set output.path='"c.h5"' -q)
env -i PATH=/usr/bin:/bin "$check/b/bin/nholo" stats "$check/c.h5" >/dev/null
# a model file's plugin compiled from the copy against the copy's headers
plugin=""
if command -v c++ >/dev/null 2>&1; then
  env -i PATH=/usr/bin:/bin NHOLO_CACHE_DIR="$check/cache" "$check/b/bin/nholo" model build \
    "$check/b/examples/models/constant_speed.model.toml" > "$check/plugin.log" 2>&1 || {
    cat "$check/plugin.log" >&2; echo "bundle: compiling a model plugin from the bundle failed" >&2; exit 1; }
  grep -q "headers in $check/b/include/nholo" "$check/plugin.log" || {
    cat "$check/plugin.log" >&2; echo "bundle: the plugin was not compiled against the bundle's headers" >&2; exit 1; }
  plugin=", compiles a model file's plugin against its own headers"
  # `model build` also builds the SIMD lane add-on where this CPU has the
  # lanes: against the bundle's SLEEF (include/sleef, lib/libsleef.so.3)
  if [ -f "$check/b/include/sleef/sleef.h" ] && grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    if grep -q "could not be built" "$check/plugin.log" || ! grep -q "SIMD lane add-on" "$check/plugin.log"; then
      cat "$check/plugin.log" >&2; echo "bundle: a model file's SIMD lane add-on did not build from the bundle" >&2; exit 1
    fi
    plugin="$plugin and its SIMD lane add-on against the bundle's SLEEF"
  fi
  # and with another compiler than nholo's (the plugin interface is C): the
  # same trajectories, bit for bit
  if command -v clang++ >/dev/null 2>&1; then
    for cxx in c++ clang++; do
      (cd "$check" && env -i PATH=/usr/bin:/bin NHOLO_CACHE_DIR="$check/cache" NHOLO_CXX=$cxx \
        "$check/b/bin/nholo" run b/examples/models/constant_speed.toml --backend omp \
        --set output.path="\"cs-$cxx.h5\"" -q) > "$check/plugin-$cxx.log" 2>&1 || {
        cat "$check/plugin-$cxx.log" >&2; echo "bundle: a model file with a $cxx plugin failed" >&2; exit 1; }
    done
    env -i PATH=/usr/bin:/bin "$check/b/bin/nholo" diff "$check/cs-c++.h5" "$check/cs-clang++.h5" \
      --rtol 0 > "$check/diff.log" 2>&1 || {
      cat "$check/diff.log" >&2; echo "bundle: the clang++ plugin's results differ from the c++ plugin's" >&2; exit 1; }
    plugin="$plugin, with c++ and with clang++ (equal results)"

  fi
  if [ -n "$nvrtc" ]; then
    # run from the source tree on purpose: its kernels/ must not be mixed
    # into the module (NVRTC compiles from memory; includes go by -I only)
    (cd "$ROOT" && env -i PATH=/usr/bin:/bin NHOLO_CACHE_DIR="$check/cache" "$check/b/bin/nholo" model build \
      "$check/b/examples/models/constant_speed.model.toml" --gpu-arch sm_90 --formulations udwadia_kalaba) \
      > "$check/gpu.log" 2>&1 || {
      cat "$check/gpu.log" >&2; echo "bundle: compiling a GPU module from the bundle failed" >&2; exit 1; }
    grep -q "($check/b/lib/$nvrtc)" "$check/gpu.log" || {
      cat "$check/gpu.log" >&2; echo "bundle: the GPU module was not compiled by the bundle's NVRTC" >&2; exit 1; }
    plugin="$plugin and its GPU module with its own NVRTC"
  fi
else
  echo "bundle: no C++ compiler here: the check of model-file plugins from the bundle is skipped"
fi
echo "bundle: $OUT ($(du -sh "$OUT" | cut -f1), $(ls "$OUT/lib" | wc -l) files in lib/, needs glibc >= ${glibc#GLIBC_}); checked: runs from a copy with an empty environment$plugin"
