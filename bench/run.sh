#!/usr/bin/env bash
# bench/run.sh — nholo against what users would pick instead, side by side in
# one run; writes docs/BENCHMARKS.md.
#
#   bash bench/run.sh            quick mode: ensembles up to 10^5 (10^4 side by side), ~10 min on 2 cores
#   bash bench/run.sh --full     the big sizes: up to 10^6 trajectories (hours)
#   options: --no-cuda (skip the nvcc resource report), --build DIR (default
#            build/bench), --out FILE (default docs/BENCHMARKS.md),
#            --sweep "N1 N2 ..." (ensemble sizes of the throughput/memory
#            sweep; default quick "100 1000 10000 100000", full up to 10^6)
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
#      nholo CLI's peak RSS, scipy solve_ivp per trajectory, the peers
#      (bench/peers.py: jax + diffrax and sympy + scipy DOP853 on the coin at
#      equal accuracy; jax, diffrax and sympy pip-installed if missing);
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
SWEEP_SET=
while [ $# -gt 0 ]; do
  case "$1" in
    --full) MODE=full ;;
    --quick) MODE=quick ;;
    --no-cuda) CUDA=0 ;;
    --build) BUILD=$2; shift ;;
    --out) OUT=$2; shift ;;
    --sweep) SWEEP_SET=$2; shift ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown option $1 (accepted: --full --quick --no-cuda --build DIR --out FILE --sweep LIST)" >&2; exit 2 ;;
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
  N_OUT=100000; CLI_SIZES="1000 10000 100000 1000000"; N_PY=20; N_SYMPY=50
else
  N_MAIN=2000; N_EIGEN=100; REPS=2; SWEEP="100 1000 10000 100000"
  N_OUT=10000; CLI_SIZES="1000 10000"; N_PY=4; N_SYMPY=10
fi
# trajectories dumped with their reference end states (bench_ensemble
# --ref-n, default 200): the scipy baseline takes the first N_PY, the peers
# (coin) all of them for jax + diffrax and the first N_SYMPY for sympy + scipy
N_DUMP=200

[ -n "$SWEEP_SET" ] && SWEEP=$SWEEP_SET
for n in $SWEEP; do
  case "$n" in ''|*[!0-9]*) echo "bench/run.sh: --sweep takes positive integers, got '$n'" >&2; exit 2 ;; esac
done

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
log "build rhs_driver_static"
cmake --build "$BUILD" --target rhs_driver_static >"$RES/build1.txt" 2>&1 \
  || { tail -30 "$RES/build1.txt" >&2; exit 1; }

# the rest builds in the background while phase 2 counts (instruction counts
# and ptxas reports do not depend on the load)
log "build rhs_driver, bench_ensemble, nholo, bench_output (background)"
cmake --build "$BUILD" -j2 --target rhs_driver bench_ensemble nholo bench_output >"$RES/build2.txt" 2>&1 &
BG=$!

# ---- 2. deterministic counts
log "callgrind: instructions and flops per right-hand side (N = 500 vs 1500) and per step"
profiles=()
cg_run() {  # NAME ARGS... : one callgrind run of the static driver -> $BUILD/cg/NAME.out
  local name=$1; shift
  valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$BUILD/cg/$name.out" \
    "$BUILD/rhs_driver_static" "$@" >/dev/null 2>&1
  profiles+=("$BUILD/cg/$name.out")
}
rm -rf "$BUILD/cg"; mkdir -p "$BUILD/cg"
# the generic path under every formulation it has for the system (rhs_driver
# list); Appell's conflated Lagrangian has a singular mass matrix and these
# initial states are not in the singular-mass form's domain: no steps
FORMS_coin="nholo_lm nholo_ns nholo_vk"
FORMS_skate="nholo_lm nholo_ns nholo_vk nholo_cf"
FORMS_appell="nholo_lm nholo_ns nholo_vk"
for sys in coin skate appell; do
  forms_var=FORMS_$sys
  for impl in nholo_ad nholo_sym nholo_hand closed eigen ${!forms_var}; do
    cg_run "rhs_${sys}_${impl}_1" $sys $impl 500
    cg_run "rhs_${sys}_${impl}_2" $sys $impl 1500
  done
  for impl in nholo_ad nholo_sym nholo_hand closed ${!forms_var}; do
    cg_run "step_${sys}_${impl}_1" $sys $impl steps 2
    cg_run "step_${sys}_${impl}_2" $sys $impl steps 6
  done
done
python3 "$ROOT/bench/flops.py" "$BUILD/rhs_driver_static" "${profiles[@]}" >"$BUILD/cg/counts.txt"
python3 - "$BUILD/cg/counts.txt" "$BUILD/rhs_driver_static" "$RES" "${profiles[@]}" <<'PY'
import json, os, subprocess, sys
counts_file, binary, res, profiles = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
counts = {}
for prof, line in zip(profiles, open(counts_file).read().split("\n")):
    f, ir = map(int, line.split())
    counts[os.path.basename(prof)[:-4]] = (f, ir)
forms = {"coin": ["nholo_lm", "nholo_ns", "nholo_vk"],
         "skate": ["nholo_lm", "nholo_ns", "nholo_vk", "nholo_cf"],
         "appell": ["nholo_lm", "nholo_ns", "nholo_vk"]}
with open(os.path.join(res, "callgrind_rhs.jsonl"), "w") as out:
    for s in ("coin", "skate", "appell"):
        for i in ["nholo_ad", "nholo_sym", "nholo_hand", "closed", "eigen"] + forms[s]:
            (f1, i1), (f2, i2) = counts[f"rhs_{s}_{i}_1"], counts[f"rhs_{s}_{i}_2"]
            out.write(json.dumps({"system": s, "impl": i, "ir_per_rhs": (i2 - i1) // 1000,
                                  "flops_per_rhs": (f2 - f1) // 1000}) + "\n")
def steps(s, i, k):
    o = subprocess.run([binary, s, i, "steps", str(k)], capture_output=True, text=True, check=True).stdout.split()
    return int(o[1]) + int(o[3])  # accepted + rejected
with open(os.path.join(res, "callgrind_step.jsonl"), "w") as out:
    for s in ("coin", "skate", "appell"):
        for i in ["nholo_ad", "nholo_sym", "nholo_hand", "closed"] + forms[s]:
            (f1, i1), (f2, i2) = counts[f"step_{s}_{i}_1"], counts[f"step_{s}_{i}_2"]
            d = steps(s, i, 6) - steps(s, i, 2)
            out.write(json.dumps({"system": s, "impl": i, "attempted_steps": d, "ir_per_step": (i2 - i1) // d,
                                  "flops_per_step": (f2 - f1) // d}) + "\n")
PY
rm -rf "$BUILD/cg"

if [ "$CUDA" = 1 ]; then
  log "nvcc -arch=sm_90: resource usage of the ensemble kernels"
  if "$NVCC" -arch=sm_90 -std=c++17 -O3 -Xptxas -v --resource-usage -c \
      -I"$ROOT" -isystem "$(dirname "$NVCC")/../include/cccl" \
      "$ROOT/bench/cuda_resources.cu" -o "$BUILD/cuda_resources.o" >"$RES/ptxas.txt" 2>&1; then
    :
  else
    log "nvcc failed (see $RES/ptxas.txt); no CUDA report"
    mv "$RES/ptxas.txt" "$RES/ptxas_failed.txt"
  fi
fi

log "waiting for the background build"
if ! wait "$BG"; then tail -30 "$RES/build2.txt" >&2; exit 1; fi

# ---- 3. timings
echo "\"$(cut -d' ' -f1-3 /proc/loadavg)\"" >"$RES/loadavg_timing_start.json"
log "ns per right-hand side (best of 7 runs)"
for sys in coin skate appell; do
  for impl in nholo_ad nholo_sym nholo_hand closed eigen; do
    echo "{\"system\": \"$sys\", \"impl\": \"$impl\", \"ns_per_rhs\": $("$BUILD/rhs_driver" $sys $impl time)}" >>"$RES/time_rhs.jsonl"
  done
done

ALL_AGREE=1
log "ensembles side by side: $N_MAIN trajectories (eigen: $N_EIGEN), 1 and 2 threads"
for sys in coin skate appell; do
  for th in 1 2; do
    dump=""; [ "$th" = 1 ] && dump="--dump $RES/dump_$sys.json --dump-n $N_DUMP"
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
log "peers (coin, one core, equal accuracy): jax + diffrax, sympy + scipy DOP853"
# optional packages, installed here into the python3 on PATH; a peer that
# cannot be imported afterwards is skipped with its reason (bench/peers.py)
if ! python3 -c 'import jax, diffrax, sympy' 2>/dev/null; then
  python3 -m pip install --quiet jax diffrax sympy >"$RES/pip.txt" 2>&1 \
    || log "pip install jax diffrax sympy failed (see $RES/pip.txt): the missing peers are skipped"
fi
taskset -c 0 python3 "$ROOT/bench/peers.py" "$RES/dump_coin.json" --count $N_SYMPY >>"$RES/peers.jsonl" \
  || log "bench/peers.py failed (status $?)"
echo "\"$(cut -d' ' -f1-3 /proc/loadavg)\"" >"$RES/loadavg_timing_end.json"

# ---- 4. report
log "writing $OUT"
python3 "$ROOT/bench/report.py" "$RES" "$OUT" "$(( $(date +%s) - T_START ))"
if [ "$ALL_AGREE" != 1 ]; then
  log "WARNING: some implementation's end states disagree (see stderr above and $OUT)"
  exit 3
fi
log "done in $(( $(date +%s) - T_START )) s"
