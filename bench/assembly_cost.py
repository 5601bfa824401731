#!/usr/bin/env python3
"""The end of a run: what completing the result file costs (docs/usage.md,
"Output (HDF5)"). Writes its section into docs/BENCHMARKS.md (after
bench/report.py's keep marker, between this script's own markers).

    python3 bench/assembly_cost.py --before OLD_NHOLO --after NEW_NHOLO
                                   [--size 1048576] [--field-size 100000]
                                   [--reps 3] [--out docs/BENCHMARKS.md]

Two nholo binaries (before and after a change to the output) run the same
configurations alternately, `reps` times each (the page cache written
back, `sync`, before each); the timing line's "assembling the file"
seconds (from the last slice's end to the file's rename, syncs included),
its wall time (from the first slice's start) and the process's, from its
start to its exit (the set-up included: the result file's creation), best
of the repetitions:
  - statistics only: `--size` coins of examples/rolling_coin.toml over
    t in [0, 0.01] (the integration short, the file's per-trajectory
    datasets, initial states, statuses, steps, drift fits, as large as for a
    long run);
  - q written and compressed (`output.compression = 4`): `--field-size`
    coins, t in [0, 1], 101 saves: the fields assembled from the window
    pieces;
  - q written in place (`output.compression = 0`, the default): the same,
    the fields in the file already.
Every file is checked to hold the same values as the other binary's
(`nholo diff --rtol 0`).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_section import publish_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench/assembly_cost.py: begin -->"
END = "<!-- bench/assembly_cost.py: end -->"
CONFIG = os.path.join(ROOT, "examples", "rolling_coin.toml")
TIMING = re.compile(r"assembling the file ([0-9.]+) s")
WALL = re.compile(r"\(([0-9]+) trajectories, ([0-9.]+) s\)")


def cases(a):
    stats = ["time.t_end=0.01", "time.save_every=0.01", "output.fields=[]",
             f"ensemble.size={a.size}"]
    fields = ["time.t_end=1.0", "time.save_every=0.01", 'output.fields=["q"]',
              f"ensemble.size={a.field_size}"]
    return [(f"statistics only, {a.size:,} coins", stats),
            (f"q compressed (level 4), {a.field_size:,} coins x 101 saves",
             fields + ["output.compression=4"]),
            (f"q in place (uncompressed), {a.field_size:,} coins x 101 saves", fields)]


def run_once(nholo, sets, out):
    cmd = [nholo, "run", CONFIG, "--overwrite", "--set", f'output.path="{out}"']
    for s in sets:
        cmd += ["--set", s]
    os.sync()  # what earlier runs left in the page cache, not this run's cost
    t0 = time.perf_counter()
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    process = time.perf_counter() - t0
    t, w = TIMING.search(r.stderr), WALL.search(r.stderr)
    if not t or not w:
        sys.exit(f"no timing line in the output of {' '.join(cmd)}:\n{r.stderr}")
    return float(t.group(1)), float(w.group(2)), process


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--label-before", default="before")
    ap.add_argument("--label-after", default="after")
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--field-size", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("NHOLO_BENCH_DIR")) as tmp:
        for name, sets in cases(a):
            best = {}
            for rep in range(a.reps):
                for label, nholo in (("before", a.before), ("after", a.after)):
                    out = os.path.join(tmp, f"{label}.h5")
                    got = run_once(nholo, sets, out)
                    b = best.setdefault(label, list(got))
                    best[label] = [min(x, y) for x, y in zip(b, got)]
            d = subprocess.run([a.after, "diff", os.path.join(tmp, "before.h5"),
                                os.path.join(tmp, "after.h5"), "--rtol", "0"],
                               capture_output=True, text=True)
            if d.returncode != 0:
                sys.exit(f"{name}: the two files differ:\n{d.stdout}{d.stderr}")
            size = os.path.getsize(os.path.join(tmp, "after.h5")) / 1e6
            rows.append((name, size, best["before"], best["after"]))
            print(rows[-1], flush=True)
    L = [BEGIN, "## The end of a run: completing the result file (bench/assembly_cost.py)", "",
         f"`python3 bench/assembly_cost.py --size {a.size} --field-size {a.field_size} "
         f"--reps {a.reps}` on this machine (2 cores, 2 threads, one disk): *{a.label_before}* "
         f"and *{a.label_after}* run alternately, the page cache written back (`sync`) before "
         "each run; the timing line's \"assembling the file\" (from the last slice's end to "
         "the file's rename, syncs included), its wall time (from the first slice's start) and "
         "the process's (start to exit, the set-up and the result file's creation included), "
         "best of the repetitions; the two binaries' files hold the same values "
         "(`nholo diff --rtol 0`, checked).", "",
         f"| run | file [MB] | assembling, {a.label_before} [s] | assembling, {a.label_after} "
         f"[s] | wall, {a.label_before} [s] | wall, {a.label_after} [s] | process, "
         f"{a.label_before} [s] | process, {a.label_after} [s] | process ratio |",
         "|---|---|---|---|---|---|---|---|---|"]
    for name, size, b, f in rows:
        L.append(f"| {name} | {size:,.0f} | {b[0]:.3f} | {f[0]:.3f} | {b[1]:.2f} | {f[1]:.2f} | "
                 f"{b[2]:.2f} | {f[2]:.2f} | {f[2] / b[2]:.2f} |")
    L += ["", "With `output.compression = 0` (the default) every per-trajectory dataset is "
          "written into the result file as its window or slice finishes (the fields of every "
          "save by the window, the initial states and a slice's results by the slice, each "
          "chunk with its Fletcher-32), so the end of the run adds the statistics and the root "
          "attributes only. With `output.compression > 0` the chunks of the window and slice "
          "pieces are the result's chunks (the same shape, filters and type, on its chunk grid), "
          "and the end of the run copies them as they are stored (`H5Dread_chunk`/"
          "`H5Dwrite_chunk`), checking each one's Fletcher-32, without inflating and deflating "
          "them again. What it measured is discussed in docs/BENCHMARKS.md, section 17.",
          "", END]
    publish_section(a.out, L)
    return 0


if __name__ == "__main__":
    sys.exit(main())
