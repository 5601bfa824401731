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
# nholo from a relocatable bundle (scripts/bundle.sh): its libraries are in ../lib
here=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/lib/nholo.bin" "$@"
EOF
chmod +x "$OUT/bin/nholo"
cp -r "$ROOT/examples/." "$OUT/examples/"
cp "$ROOT/scripts/gpu_check.sh" "$OUT/scripts/"

# the newest glibc symbol version any binary in the bundle needs
glibc=$(objdump -T "$OUT/lib/nholo.bin" "$OUT"/lib/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1)
if "$OUT/bin/nholo" devices | grep -q "^backends:.*cuda"; then cuda=yes; else cuda=no; fi
cat > "$OUT/README.txt" <<EOF
nholo $("$OUT/bin/nholo" --version 2>/dev/null || echo "") — relocatable bundle made by scripts/bundle.sh

Run:   bin/nholo run examples/rolling_coin.toml
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
echo "bundle: $OUT ($(du -sh "$OUT" | cut -f1), $(ls "$OUT/lib" | wc -l) files in lib/, needs glibc >= ${glibc#GLIBC_}); checked: runs from a copy with an empty environment"
