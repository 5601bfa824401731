#!/usr/bin/env bash
# bench/mpi_scaling.sh — what an MPI run costs and gains on this machine
# (docs/cluster.md, "What to expect from scaling"):
#   1. throughput: the same rolling-coin ensemble on one process (1 thread)
#      and on mpirun -n 2, 3, 4 ranks of 1 thread each (more ranks than cores
#      are oversubscribed: their total cannot grow past the cores);
#   2. the cost of a parcel: the same run on 2 ranks in 16 parcels and in 2;
#   3. the cost of the final merge (virtual datasets over the shard files,
#      statistics merged in block order) against the number of shard files.
# Usage: bash bench/mpi_scaling.sh [BUILD_DIR (default build/cpu)]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/cpu}
NHOLO=$(realpath "$BUILD/nholo")
"$NHOLO" devices | grep -q "^MPI: built in" || { echo "bench/mpi_scaling.sh: $NHOLO is built without MPI" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
W=$(mktemp -d /tmp/nholo_mpi_bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
cat > "$W/c.toml" <<'EOF'
model = "rolling_coin"
formulations = ["udwadia_kalaba"]
[params]
slope = 0.3
[time]
t_end = 30.0
save_every = 0.5
[integrator]
method = "dopri5"
rtol = 1e-8
atol = 1e-8
[ensemble]
size = 16384
seed = 3
[ensemble.q0]
theta = { uniform = [0.0, 6.283185307179586] }
[ensemble.qd0]
theta = { uniform = [1.0, 3.0] }
phi = { uniform = [0.5, 1.5] }
[output]
path = "out.h5"
fields = ["q"]
EOF
now() { date +%s.%N; }
cd "$W"
echo "machine: $(nproc) cores; $(mpirun --version | head -1)"
echo
echo "1. throughput (16384 trajectories, 1 thread per rank)"
echo "(wall: mpirun to exit, start-up and merge included; ranks: the ranks' own rates while"
echo " they integrate, summed, from the run's summary lines)"
echo "| ranks | wall s | trajectory-steps/s (wall) | per rank | vs 1 process | ranks' own rate, summed |"
echo "|---|---|---|---|---|---|"
t0=$(now); "$NHOLO" run c.toml --threads 1 --overwrite 2> one.log; t1=$(now)
steps=$(grep -o '[0-9]* steps' one.log | head -1 | cut -d' ' -f1)
base=$(echo "$steps / ($t1 - $t0)" | bc -l)
printf "| 1 (no MPI) | %.2f | %.3g | %.3g | 1.00 | - |\n" "$(echo "$t1 - $t0" | bc -l)" "$base" "$base"
for n in 2 3 4; do
  rm -f out*.h5
  t0=$(now); mpirun -n "$n" "$NHOLO" run c.toml --threads 1 2> mpi.log; t1=$(now)
  rate=$(echo "$steps / ($t1 - $t0)" | bc -l)
  own=$(grep -o '([0-9.e+]* trajectory-steps/s)' mpi.log | tr -d '(' | awk '{s += $1} END {print s}')
  printf "| %d | %.2f | %.3g | %.3g | %.2f | %.3g |\n" "$n" "$(echo "$t1 - $t0" | bc -l)" "$rate" \
    "$(echo "$rate / $n" | bc -l)" "$(echo "$rate / $base" | bc -l)" "$own"
done
echo
echo "2. parcels (2 ranks): 16 parcels of 1 block against 2 parcels of 8 blocks"
for cb in 8 1; do
  rm -f out*.h5
  t0=$(now); mpirun -n 2 "$NHOLO" run c.toml --threads 1 --chunk-blocks "$cb" 2> mpi.log; t1=$(now)
  printf "  --chunk-blocks %d: %d parcels, %.2f s wall\n" "$cb" "$((16 / cb))" "$(echo "$t1 - $t0" | bc -l)"
  eval "wall_$cb=$(echo "$t1 - $t0" | bc -l)"
done
printf "  cost per parcel: %.3f s\n" "$(echo "($wall_1 - $wall_8) / (16 / 2 - 2 / 2)" | bc -l)"
echo
echo "3. merge (statistics only, 1 save: the merge's own cost) against the number of shard files"
echo "| shard files | trajectories | merge s | per shard ms |"
echo "|---|---|---|---|"
sed -e 's/^t_end = 30.0/t_end = 0.5/' -e 's/^fields = \["q"\]/fields = []/' c.toml > m.toml
for shards in 16 64 256; do
  rm -rf m && mkdir m && cp m.toml m/c.toml && cd m
  size=$((shards * 1024))
  sed -i "s/^size = 16384/size = $size/" c.toml
  for ((r = 0; r < shards; r++)); do "$NHOLO" run -q c.toml --threads 1 --shard "$r/$shards"; done
  t0=$(now); "$NHOLO" merge -q merged.h5 out.shard-*.h5; t1=$(now)
  dt=$(echo "$t1 - $t0" | bc -l)
  printf "| %d | %d | %.3f | %.2f |\n" "$shards" "$size" "$dt" "$(echo "1000 * $dt / $shards" | bc -l)"
  cd ..
done
echo
echo "4. merge against the volume of block moments (the statistics' part of the merge: 5 moments"
echo "   x blocks x saves x coordinates x 2 (q, qdot) doubles, read back and folded in block order)"
echo "| shard files | blocks | saves | block moments MB | merge s | MB/s |"
echo "|---|---|---|---|---|---|"
sed -e 's/^t_end = 30.0/t_end = 0.2/' -e 's/^save_every = 0.5/save_every = 0.001/' \
    -e 's/^fields = \["q"\]/fields = []/' c.toml > v.toml
for shards in 4 16; do
  rm -rf v && mkdir v && cp v.toml v/c.toml && cd v
  size=$((shards * 65536))
  sed -i "s/^size = 16384/size = $size/" c.toml
  for ((r = 0; r < shards; r++)); do "$NHOLO" run -q c.toml --shard "$r/$shards"; done
  t0=$(now); "$NHOLO" merge -q merged.h5 out.shard-*.h5; t1=$(now)
  dt=$(echo "$t1 - $t0" | bc -l)
  blocks=$((size / 1024))
  mb=$(echo "5 * $blocks * 201 * 4 * 2 * 8 / 1048576" | bc -l)
  printf "| %d | %d | 201 | %.1f | %.3f | %.0f |\n" "$shards" "$blocks" "$mb" "$dt" "$(echo "$mb / $dt" | bc -l)"
  cd ..
done
