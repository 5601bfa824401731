#!/usr/bin/env python3
"""Lyapunov exponents: what the tangent system costs (docs/physics.md 4a).
Writes its section into docs/BENCHMARKS.md (after bench/report.py's keep
marker, between this script's own markers).

    python3 bench/lyapunov_cost.py [--nholo build/release/nholo] [--out docs/BENCHMARKS.md]
                                   [--reps 3]

Two systems, each run without and with `[lyapunov] enabled = true`,
alternately, `reps` times, on one core (backend cpp), statistics only:
  - the rolling coin (built in: without, nholo's own kernels; with, the
    coin's plugin of tangent systems), examples/rolling_coin.toml's
    ensemble, 200 coins, t in [0, 20], DOPRI5;
  - the oscillating sleigh (a model file: its plugin, and its plugin of
    tangent systems), examples/models/oscillating_sleigh.toml, 16 starts,
    t in [0, 100], DOP853.
The integrating thread's time (root attribute compute_seconds), best of
the repetitions, per accepted step (the tangent joins the error control, so
the steps differ: both counts are shown) and per run. The plugins are
compiled before the first timed run (a run that compiles one is not timed).
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_section import publish_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench/lyapunov_cost.py: begin -->"
END = "<!-- bench/lyapunov_cost.py: end -->"

CASES = [
    # name, folder, config, --set overrides
    ("rolling coin (built in), udwadia_kalaba, dopri5", os.path.join(ROOT, "examples"),
     "rolling_coin.toml", ["ensemble.size=200", "time.t_end=20.0",
                           'formulations=["udwadia_kalaba"]']),
    ("oscillating sleigh (model file), udwadia_kalaba, dop853",
     os.path.join(ROOT, "examples", "models"), "oscillating_sleigh.toml",
     ["ensemble.size=16", "time.t_end=100.0", 'formulations=["udwadia_kalaba"]']),
]


def run_once(nholo, folder, cfg, sets, lyapunov, out):
    cmd = [nholo, "run", cfg, "-q", "--overwrite", "--set", f"output.path={out}",
           "--set", "backend.device=cpp", "--set", "output.fields=[]",
           "--set", f"lyapunov.enabled={'true' if lyapunov else 'false'}"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, cwd=folder)
    import h5py
    with h5py.File(out, "r") as f:
        return float(f.attrs["compute_seconds"]), int(f["udwadia_kalaba/steps"][:].sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nholo", default=os.path.join(ROOT, "build", "release", "nholo"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    a.nholo = os.path.abspath(a.nholo)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.h5")
        for name, folder, cfg, sets in CASES:
            for lyap in (False, True):  # compiles what is not cached, untimed
                run_once(a.nholo, folder, cfg, sets + ["ensemble.size=2"], lyap, out)
            best, steps = {}, {}
            for _ in range(a.reps):
                for lyap in (False, True):
                    sec, n = run_once(a.nholo, folder, cfg, sets, lyap, out)
                    best[lyap] = min(best.get(lyap, sec), sec)
                    steps[lyap] = n
            rows.append((name, steps[False], steps[True], 1e9 * best[False] / steps[False],
                         1e9 * best[True] / steps[True], best[True] / best[False]))
            print(rows[-1], flush=True)
    L = [BEGIN, "## Lyapunov exponents: the cost of the tangent system (bench/lyapunov_cost.py)",
         "", f"`python3 bench/lyapunov_cost.py --reps {a.reps}` on this machine (one core, "
         "backend cpp, statistics only), each system without and with `[lyapunov]`, "
         "alternately; best of the repetitions of the integrating thread's time. The tangent "
         "system (kernels/lyapunov.hpp) evaluates the formulation's right-hand side once on "
         "`Dual<double, 1>` (f and J delta together) and doubles the state; its error joins "
         "the step-size control, so the steps differ.", "",
         "| system | steps without | steps with | ns/step without | ns/step with | "
         "run with / without |", "|---|---|---|---|---|---|"]
    for name, s0, s1, t0, t1, r in rows:
        L.append(f"| {name} | {s0:,} | {s1:,} | {t0:.0f} | {t1:.0f} | {r:.2f} |")
    L += ["", "The coin without `[lyapunov]` runs nholo's own kernels, with it the coin's "
          "plugin of tangent systems (both -O3); the sleigh runs its plugins in both.", "", END]
    publish_section(a.out, L)
    return 0


if __name__ == "__main__":
    sys.exit(main())
