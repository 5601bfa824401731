#!/usr/bin/env python3
"""nholo from Python against the command: what running in the Python process
costs (docs/python.md). Writes its section into docs/BENCHMARKS.md (after
bench/report.py's keep marker, between this script's own markers).

    python3 bench/python_overhead.py [--nholo build/release/nholo] [--size 100000]
                                     [--reps 3] [--out docs/BENCHMARKS.md]

The same configuration (examples/rolling_coin.toml, `--size` coins, t in
[0, 10], 101 saves, Udwadia-Kalaba, DOPRI5) run alternately, `reps` times:
  - `nholo run` (a subprocess; its wall time, from start to exit);
  - `nholo.run(...)` in this process (wall time of the call: the run, then
    the results as an xarray.DataTree): q written by the run into the numpy
    arrays the tree holds (host/io/field_memory.hpp), and, in a third row,
    with `output=` (q into a kept file, as the command writes it, then read);
each with q written (101 saves of 4 coordinates) and statistics only.
Best of the repetitions; the ratio is Python / command. The package is
imported from the installed nholo, or from BUILD/python when --nholo's
build folder has one.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_section import publish_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench/python_overhead.py: begin -->"
END = "<!-- bench/python_overhead.py: end -->"
CONFIG = os.path.join(ROOT, "examples", "rolling_coin.toml")


def settings(size, fields):
    return {"ensemble.size": size, "time.t_end": 10.0, "time.save_every": 0.1,
            "formulations": ["udwadia_kalaba"], "output.fields": fields}


def command(nholo, sets, out):
    from nholo import _toml
    cmd = [nholo, "run", CONFIG, "-q", "--overwrite", "--set", f"output.path=\"{out}\""]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={_toml.value(v)}"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def in_python(sets, output=None):
    import nholo
    t0 = time.perf_counter()
    tree = nholo.run(CONFIG, set=sets, output=output, overwrite=True)
    dt = time.perf_counter() - t0
    n = tree["udwadia_kalaba"].ds.status.size
    del tree
    return dt, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nholo", default=os.path.join(ROOT, "build", "release", "nholo"))
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    a = ap.parse_args()
    a.nholo = os.path.abspath(a.nholo)
    build_python = os.path.join(os.path.dirname(a.nholo), "python")
    if os.path.isdir(os.path.join(build_python, "nholo")):
        sys.path.insert(0, build_python)
    import nholo
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cli.h5")
        kept = os.path.join(tmp, "python.h5")
        for label, fields, output in (("q written (101 saves), into memory", ["q"], None),
                                      ("q written (101 saves), `output=` file", ["q"], kept),
                                      ("statistics only", [], None)):
            sets = settings(a.size, fields)
            best_cli = best_py = float("inf")
            for _ in range(a.reps):
                best_cli = min(best_cli, command(a.nholo, sets, out))
                dt, n = in_python(sets, output)
                assert n == a.size
                best_py = min(best_py, dt)
            rows.append((label, best_cli, best_py, best_py / best_cli))
            print(rows[-1], flush=True)
    cores = os.cpu_count()
    L = [BEGIN, "## nholo from Python: the cost of the process (bench/python_overhead.py)", "",
         f"`python3 bench/python_overhead.py --size {a.size} --reps {a.reps}` on this machine "
         f"({cores} cores, OpenMP), nholo {nholo.version()}: the rolling coin "
         f"(examples/rolling_coin.toml, {a.size:,} coins, t in [0, 10], 101 saves, "
         "Udwadia-Kalaba, DOPRI5), `nholo run` as a subprocess and `nholo.run` in this "
         "Python process, alternately; best of the repetitions, wall seconds.", "",
         "| output | `nholo run` [s] | `nholo.run` [s] | Python / command |", "|---|---|---|---|"]
    for label, c, p, r in rows:
        L.append(f"| {label} | {c:.3f} | {p:.3f} | {r:.3f} |")
    L += ["", "`nholo.run` includes making the xarray.DataTree, which the command does "
          "not do: without `output=` the run writes q into the arrays the tree holds "
          "(no file, no copy) and the rest (initial states, statuses, statistics) "
          "passes through a small temporary file; with `output=` q goes into the kept "
          "file as the command writes it and is read back from it.", "", END]
    publish_section(a.out, L)
    return 0


if __name__ == "__main__":
    sys.exit(main())
