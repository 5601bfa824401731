#!/usr/bin/env bash
# bench/memory.sh — peak memory (maximum resident set size, /usr/bin/time -v)
# of `nholo run`, `nholo stats`, `nholo compare`, and `nholo merge` of two
# shards, at growing ensemble sizes: none of them should grow with the size.
#
#   bash bench/memory.sh [--nholo PATH] [--sizes "16384 131072 1048576"]
#                        [--budget MB] [--threads N] [--out DIR]
#
# The configuration is bench/output_coin.toml shortened: two formulations
# (so that compare has a pair), t_end = 0.5 with 5 saves, fields q and energy,
# output.memory_budget_mb = 16 (the slice, and so the run's memory, is set by
# the budget: with 16 MB it is below 2^14 trajectories at these settings).
# Prints a markdown table (MiB per command and size) and the elapsed seconds.
# About 3 minutes on 2 cores for the default sizes.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
nholo=""
sizes="16384 131072 1048576"
budget=16
threads=0
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nholo) nholo="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "bench/memory.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [ -z "$nholo" ]; then
  for c in "$here/build/release/nholo" "$here/build/cpu/nholo"; do
    if [ -x "$c" ]; then nholo="$c"; break; fi
  done
fi
[ -x "$nholo" ] || { echo "bench/memory.sh: no nholo binary (pass --nholo PATH)" >&2; exit 2; }
if [ ! -x /usr/bin/time ]; then
  echo "bench/memory.sh: /usr/bin/time is missing; installing the 'time' package" >&2
  apt-get install -y time >/dev/null
fi
tmp_out=0
if [ -z "$out" ]; then
  out="$(mktemp -d)"
  tmp_out=1
fi
mkdir -p "$out"
cp "$here/bench/output_coin.toml" "$out/memory.toml"
set_args=(--set time.t_end=0.5 --set time.save_every=0.125
          --set 'output.fields=["q","energy"]'
          --set 'formulations=["udwadia_kalaba","null_space"]'
          --set "output.memory_budget_mb=$budget" --set "backend.threads=$threads")

# peak RSS in MiB and elapsed seconds of one command, run in $out
measure() {
  local log="$out/time.log"
  (cd "$out" && /usr/bin/time -v "$@" >/dev/null 2>"$log") || {
    echo "bench/memory.sh: failed: $*" >&2
    cat "$log" >&2
    exit 1
  }
  local kb el
  kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  el=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
  awk -v kb="$kb" -v el="$el" 'BEGIN { printf "%.1f|%s", kb / 1024, el }'
}

declare -A rss secs
for n in $sizes; do
  rm -f "$out"/m_"$n"*.h5
  r=$(measure "$nholo" run -q memory.toml "${set_args[@]}" --set "ensemble.size=$n" \
        --set "output.path=m_$n.h5")
  rss[run,$n]=${r%%|*}; secs[run,$n]=${r##*|}
  r=$(measure "$nholo" stats "m_$n.h5")
  rss[stats,$n]=${r%%|*}; secs[stats,$n]=${r##*|}
  r=$(measure "$nholo" compare "m_$n.h5")
  rss[compare,$n]=${r%%|*}; secs[compare,$n]=${r##*|}
  for s in 0 1; do
    (cd "$out" && "$nholo" run -q memory.toml "${set_args[@]}" --set "ensemble.size=$n" \
       --set "output.path=m_${n}_sh.h5" --shard "$s/2")
  done
  mapfile -t shards < <(cd "$out" && ls "m_${n}_sh".shard-*.h5)
  r=$(measure "$nholo" merge -q "m_${n}_merged.h5" "${shards[@]}")
  rss[merge,$n]=${r%%|*}; secs[merge,$n]=${r##*|}
  r=$(measure "$nholo" merge -q --copy "m_${n}_copy.h5" "${shards[@]}")
  rss[merge_copy,$n]=${r%%|*}; secs[merge_copy,$n]=${r##*|}
  r=$(measure "$nholo" diff "m_$n.h5" "m_${n}_copy.h5" --rtol 0)
  rss[diff,$n]=${r%%|*}; secs[diff,$n]=${r##*|}
  bytes=$(stat -c %s "$out/m_$n.h5")
  awk -v n="$n" -v b="$bytes" -v t="${secs[run,$n]}" \
    'BEGIN { printf "size %s: file %.1f MiB, run %s (m:ss)\n", n, b / 1048576, t }' >&2
  rm -f "$out"/m_"$n"*.h5
done

table() {  # $1: rss or secs
  printf '| command |'; for n in $sizes; do printf ' %s |' "$n"; done; echo
  printf '|---|'; for n in $sizes; do printf -- '---:|'; done; echo
  for c in run stats compare merge merge_copy diff; do
    label="nholo $c"
    [ "$c" = merge ] && label="nholo merge (2 shards, virtual)"
    [ "$c" = merge_copy ] && label="nholo merge --copy (2 shards)"
    [ "$c" = diff ] && label="nholo diff (run vs merged copy)"
    printf '| %s |' "$label"
    for n in $sizes; do
      if [ "$1" = rss ]; then printf ' %s |' "${rss[$c,$n]}"; else printf ' %s |' "${secs[$c,$n]}"; fi
    done
    echo
  done
}
echo
echo "peak resident memory (MiB) by ensemble size; output.memory_budget_mb = $budget; $("$nholo" devices | sed -n 2p)"
echo
table rss
echo
echo "elapsed (m:ss)"
echo
table secs
[ "$tmp_out" = 1 ] && rm -rf "$out"
exit 0
