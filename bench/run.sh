#!/usr/bin/env bash
# bench/run.sh — nholo against what users would pick instead, side by side in
# one run; writes docs/BENCHMARKS.md.
#
#   bash bench/run.sh            quick mode: ensembles up to 10^4, < ~10 min on 2 cores
#   bash bench/run.sh --full     the big sizes: up to 10^6 trajectories (hours)
#   options: --no-cuda (skip the nvcc resource report), --build DIR (default
#            build/bench), --out FILE (default docs/BENCHMARKS.md)
#
# Phases (results under BUILD/results/, one JSON object per line):
#   1. configure + build the drivers (Release, BUILD, benchmarks only);
#   2. deterministic counts, while the rest builds: callgrind instructions per
#      right-hand side and per step (rhs_driver), floating-point operations
#      (rhs_driver_static + bench/flops.py), nvcc/ptxas resource usage of the
#      ensemble kernels for sm_90 (bench/cuda_resources.cu);
#   3. timings, nothing else of ours running: ns per RHS (rhs_driver time),
#      the ensembles side by side (bench_ensemble: nholo generic / hand-written
#      M,F,A,b / closed form in nholo's integrator, Boost.odeint, direct Eigen;
#      1 and 2 threads; end states checked against a reference), throughput
#      and peak RSS vs ensemble size, output on/off (bench_output) and the
#      nholo CLI's peak RSS, scipy solve_ivp per trajectory;
#   4. bench/report.py -> docs/BENCHMARKS.md.
# Not part of the test suite. Needs: cmake, g++, Eigen, HDF5 and the other
# build dependencies of nholo, valgrind, python3 with numpy and scipy; Boost
# (odeint) and nvcc are used when present.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=quick
CUDA=1
BUILD=$ROOT/build/bench
OUT=$ROOT/docs/BENCHMARKS.md
while [ $# -gt 0 ]; do
  case "$1" in
    --full) MODE=full ;;
    --quick) MODE=quick ;;
    --no-cuda) CUDA=0 ;;
    --build) BUILD=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown option $1 (accepted: --full --quick --no-cuda --build DIR --out FILE)" >&2; exit 2 ;;
  esac
  shift
done
RES=$BUILD/results
T_START=$(date +%s)
log() { printf '[bench %4ds] %s\n' "$(( $(date +%s) - T_START ))" "$*" >&2; }

for tool in cmake g++ valgrind python3 objdump; do
  command -v "$tool" >/dev/null || { echo "bench/run.sh: $tool not found" >&2; exit 2; }
done
python3 -c 'import numpy, scipy' 2>/dev/null || { echo "bench/run.sh: python3 needs numpy and scipy" >&2; exit 2; }
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
if [ "$CUDA" = 1 ] && [ ! -x "$NVCC" ]; then
  command -v nvcc >/dev/null && NVCC=$(command -v nvcc) || { log "nvcc not found: no CUDA resource report"; CUDA=0; }
fi

# sizes and repetitions
if [ "$MODE" = full ]; then
  N_MAIN=20000; N_EIGEN=1000; REPS=3; SWEEP="100 1000 10000 100000 1000000"
  N_OUT=100000; CLI_SIZES="1000 10000 100000 1000000"; N_PY=20
else
  N_MAIN=2000; N_EIGEN=100; REPS=1; SWEEP="100 1000 10000"
  N_OUT=10000; CLI_SIZES="1000 10000"; N_PY=4
fi

mkdir -p "$RES"
rm -f "$RES"/*.jsonl "$RES"/*.txt "$RES"/*.json
{
  echo "{\"mode\": \"$MODE\", \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo " \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')\","
  echo " \"cores\": $(nproc), \"compiler\": \"$(g++ --version | head -1)\","
  echo " \"loadavg_start\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"n_main\": $N_MAIN, \"n_eigen\": $N_EIGEN, \"reps\": $REPS}"
} > "$RES/meta.json"

# ---- 1. build
log "configure $BUILD (Release)"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNHOLO_BUILD_TESTS=OFF >"$RES/cmake.txt" 2>&1 \
  || { cat "$RES/cmake.txt" >&2; exit 1; }
log "build rhs_driver, rhs_driver_static"
cmake --build "$BUILD" -j2 --target rhs_driver rhs_driver_static >"$RES/build1.txt" 2>&1 \
  || { tail -30 "$RES/build1.txt" >&2; exit 1; }

# the rest builds in the background while phase 2 counts instructions
# (instruction counts do not depend on the load)
(
  cmake --build "$BUILD" -j2 --target bench_ensemble nholo bench_output >"$RES/build2.txt" 2>&1
  echo $? >"$RES/build2.rc"
  if [ "$CUDA" = 1 ]; then
    # quick: the generic kernels + the coin's closed form; full: all (minutes each)
    defs=""; [ "$MODE" = quick ] && defs="-DNHOLO_BENCH_QUICK=1"
    "$NVCC" -arch=sm_90 -std=c++17 -O3 -Xptxas -v --resource-usage $defs -c \
      -I"$ROOT" -isystem /usr/local/cuda/include/cccl -isystem "$(dirname "$NVCC")/../include/cccl" \
      "$ROOT/bench/cuda_resources.cu" -o "$BUILD/cuda_resources.o" >"$RES/ptxas.txt" 2>&1
    echo $? >"$RES/ptxas.rc"
  fi
) &
BG=$!

# ---- 2. deterministic counts
cg_count() {  # BINARY ARGS... N  -> "Ir flops" of one callgrind run
  local bin=$1; shift
  local f="$BUILD/cg.$$.out"
  valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$f" "$bin" "$@" >/dev/null 2>&1
  python3 "$ROOT/bench/flops.py" "$bin" "$f"
  rm -f "$f"
}
log "callgrind: instructions and flops per right-hand side (static driver, N = 1000 vs 3000)"
for sys in coin skate appell; do
  for impl in nholo_ad nholo_hand closed eigen; do
    read -r f1 i1 < <(cg_count "$BUILD/rhs_driver_static" $sys $impl 1000)
    read -r f2 i2 < <(cg_count "$BUILD/rhs_driver_static" $sys $impl 3000)
    # the dynamically linked driver too (the one the timings use)
    d1=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BUILD/rhs_driver" $sys $impl 1000 2>&1 | sed -n 's/.*refs: *//p' | tr -d ,)
    d2=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BUILD/rhs_driver" $sys $impl 3000 2>&1 | sed -n 's/.*refs: *//p' | tr -d ,)
    echo "{\"system\": \"$sys\", \"impl\": \"$impl\", \"ir_per_rhs\": $(( (d2 - d1) / 2000 )), \"ir_per_rhs_static\": $(( (i2 - i1) / 2000 )), \"flops_per_rhs\": $(( (f2 - f1) / 2000 ))}" >>"$RES/callgrind_rhs.jsonl"
  done
  log "  $sys done"
done
log "callgrind: instructions and flops per integration step (trajectories 0-1 vs 0-5)"
for sys in coin skate appell; do
  for impl in nholo_ad closed; do
    s1=$("$BUILD/rhs_driver_static" $sys $impl steps 2 | awk '{print $2 + $4}')
    s2=$("$BUILD/rhs_driver_static" $sys $impl steps 6 | awk '{print $2 + $4}')
    read -r f1 i1 < <(cg_count "$BUILD/rhs_driver_static" $sys $impl steps 2)
    read -r f2 i2 < <(cg_count "$BUILD/rhs_driver_static" $sys $impl steps 6)
    echo "{\"system\": \"$sys\", \"impl\": \"$impl\", \"attempted_steps\": $(( s2 - s1 )), \"ir_per_step\": $(( (i2 - i1) / (s2 - s1) )), \"flops_per_step\": $(( (f2 - f1) / (s2 - s1) ))}" >>"$RES/callgrind_step.jsonl"
  done
done

log "waiting for the background build$( [ "$CUDA" = 1 ] && echo ' and nvcc')"
wait $BG || true
if [ "$(cat "$RES/build2.rc")" != 0 ]; then tail -30 "$RES/build2.txt" >&2; exit 1; fi
if [ "$CUDA" = 1 ] && [ "$(cat "$RES/ptxas.rc")" != 0 ]; then
  log "nvcc failed (see $RES/ptxas.txt); continuing without the CUDA report"
fi

# ---- 3. timings
echo "\"$(cut -d' ' -f1-3 /proc/loadavg)\"" >"$RES/loadavg_timing_start.json"
log "ns per right-hand side (best of 7 runs)"
for sys in coin skate appell; do
  for impl in nholo_ad nholo_hand closed eigen; do
    echo "{\"system\": \"$sys\", \"impl\": \"$impl\", \"ns_per_rhs\": $("$BUILD/rhs_driver" $sys $impl time)}" >>"$RES/time_rhs.jsonl"
  done
done

ALL_AGREE=1
log "ensembles side by side: $N_MAIN trajectories (eigen: $N_EIGEN), 1 and 2 threads"
for sys in coin skate appell; do
  for th in 1 2; do
    dump=""; [ "$th" = 1 ] && dump="--dump $RES/dump_$sys.json --dump-n $N_PY"
    "$BUILD/bench_ensemble" --system $sys --n $N_MAIN --threads $th --eigen-n $N_EIGEN \
      --reps $REPS $dump >>"$RES/ensemble.jsonl" || ALL_AGREE=0
  done
  log "  $sys done"
done

log "throughput and peak RSS vs ensemble size: $SWEEP (coin, 2 threads, t_end 2)"
for n in $SWEEP; do
  for impl in nholo_ad odeint; do
    "$BUILD/bench_ensemble" --system coin --n $n --threads 2 --impls $impl --t-end 2 --saves 4 \
      --window 4 --ref-n 20 >>"$RES/sweep.jsonl" || ALL_AGREE=0
  done
done

log "output on/off: $N_OUT trajectories, 200 saves (bench/output_coin.toml)"
for th in 1 2; do
  "$BUILD/bench_output" --config "$ROOT/bench/output_coin.toml" --n $N_OUT --threads $th \
    --dir "$BUILD/out" --reps $REPS >>"$RES/output.jsonl"
done
log "nholo CLI peak RSS vs ensemble size: $CLI_SIZES"
for n in $CLI_SIZES; do
  start=$(date +%s.%N)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -v "$BUILD/nholo" run "$ROOT/bench/output_coin.toml" --overwrite --threads 2 \
      --set ensemble.size=$n --set output.path="$BUILD/out/cli.h5" >"$RES/cli_$n.txt" 2>&1
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): *//p' "$RES/cli_$n.txt")
  else
    "$BUILD/nholo" run "$ROOT/bench/output_coin.toml" --overwrite --threads 2 \
      --set ensemble.size=$n --set output.path="$BUILD/out/cli.h5" >"$RES/cli_$n.txt" 2>&1
    rss=null
  fi
  secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
  echo "{\"n\": $n, \"threads\": 2, \"seconds\": $secs, \"maxrss_kb\": ${rss:-null}, \"file_bytes\": $(stat -c %s "$BUILD/out/cli.h5")}" >>"$RES/cli.jsonl"
done
rm -f "$BUILD/out/cli.h5" "$BUILD/out/bench_output.h5"

log "scipy solve_ivp (RK45, DOP853) per trajectory: $N_PY trajectories per system"
for sys in coin skate appell; do
  python3 "$ROOT/bench/scipy_baseline.py" "$RES/dump_$sys.json" --count $N_PY >>"$RES/scipy.jsonl" || ALL_AGREE=0
done
echo "\"$(cut -d' ' -f1-3 /proc/loadavg)\"" >"$RES/loadavg_timing_end.json"

# ---- 4. report
log "writing $OUT"
python3 "$ROOT/bench/report.py" "$RES" "$OUT" "$(( $(date +%s) - T_START ))"
if [ "$ALL_AGREE" != 1 ]; then
  log "WARNING: some implementation's end states disagree (see stderr above and $OUT)"
  exit 3
fi
log "done in $(( $(date +%s) - T_START )) s"
