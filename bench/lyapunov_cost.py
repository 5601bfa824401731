#!/usr/bin/env python3
"""Lyapunov exponents: what the tangent system costs (docs/physics.md 4a).
Writes its section into docs/BENCHMARKS.md (after bench/report.py's keep
marker, between this script's own markers).

    python3 bench/lyapunov_cost.py [--nholo build/release/nholo] [--out docs/BENCHMARKS.md]
                                   [--reps 3] [--baseline-headers DIR]

Three systems, each run without and with `[lyapunov] enabled = true`,
alternately, `reps` times, on one core (backend cpp, `backend.simd =
"off"`: the tangent systems integrate one trajectory at a time, so the
state does too), statistics only:
  - the rolling coin (built in: without, nholo's own kernels; with, the
    coin's plugin of tangent systems), examples/rolling_coin.toml's
    ensemble, 200 coins, t in [0, 20], DOPRI5;
  - the oscillating sleigh (a model file: its plugin, and its plugin of
    tangent systems), examples/models/oscillating_sleigh.toml, 16 starts,
    t in [0, 100], DOP853;
  - the rattleback (a model file of 6 coordinates and 3 constraints),
    examples/models/rattleback.toml, 20 starts, t in [0, 5], DOP853.
The integrating thread's time (root attribute compute_seconds), best of
the repetitions, per accepted step (the tangent joins the error control, so
the steps differ: both counts are shown) and per run. The plugins are
compiled before the first timed run (a run that compiles one is not timed).
--baseline-headers DIR: also run the tangent plugins compiled from the
headers of another checkout (NHOLO_INCLUDE_DIR=DIR, e.g. a `git worktree`
of an earlier commit), interleaved with the others: a change to the
tangent's kernels measured side by side.
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
    # name, folder, config, --set overrides (those of the untimed first run
    # that compiles the plugins: the ensemble's size or the grid's end time)
    ("rolling coin (built in), udwadia_kalaba, dopri5", os.path.join(ROOT, "examples"),
     "rolling_coin.toml", ["ensemble.size=200", "time.t_end=20.0",
                           'formulations=["udwadia_kalaba"]'], ["ensemble.size=2"]),
    ("oscillating sleigh (model file), udwadia_kalaba, dop853",
     os.path.join(ROOT, "examples", "models"), "oscillating_sleigh.toml",
     ["ensemble.size=16", "time.t_end=100.0", 'formulations=["udwadia_kalaba"]'],
     ["ensemble.size=2"]),
    ("rattleback (model file, n = 6, m = 3), udwadia_kalaba, dop853",
     os.path.join(ROOT, "examples", "models"), "rattleback.toml",
     ["time.t_end=5.0", "time.save_every=0.5"], ["time.t_end=0.5", "time.save_every=0.5"]),
]


def run_once(nholo, folder, cfg, sets, lyapunov, out, headers=None):
    cmd = [nholo, "run", cfg, "-q", "--overwrite", "--set", f"output.path={out}",
           "--set", "backend.device=cpp", "--set", "backend.threads=1",
           "--set", 'backend.simd="off"', "--set", "output.fields=[]",
           "--set", f"lyapunov.enabled={'true' if lyapunov else 'false'}"]
    for s in sets:
        cmd += ["--set", s]
    env = dict(os.environ)
    if headers:
        env["NHOLO_INCLUDE_DIR"] = headers
    subprocess.run(cmd, check=True, cwd=folder, env=env)
    import h5py
    with h5py.File(out, "r") as f:
        return float(f.attrs["compute_seconds"]), int(f["udwadia_kalaba/steps"][:].sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nholo", default=os.path.join(ROOT, "build", "release", "nholo"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--baseline-headers", default=None,
                    help="the headers of another checkout: its tangent plugins run beside")
    a = ap.parse_args()
    a.nholo = os.path.abspath(a.nholo)
    # (lyapunov, headers): the state; the tangent; the tangent of the baseline
    kinds = [(False, None), (True, None)]
    if a.baseline_headers:
        kinds.append((True, os.path.abspath(a.baseline_headers)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.h5")
        for name, folder, cfg, sets, warm_up in CASES:
            for k in kinds:  # compiles what is not cached, untimed
                run_once(a.nholo, folder, cfg, sets + warm_up, k[0], out, k[1])
            best, steps = {}, {}
            for _ in range(a.reps):
                for k in kinds:
                    sec, n = run_once(a.nholo, folder, cfg, sets, k[0], out, k[1])
                    best[k] = min(best.get(k, sec), sec)
                    steps[k] = n
            state, tangent = kinds[0], kinds[1]
            row = [name, steps[state], steps[tangent], 1e9 * best[state] / steps[state],
                   1e9 * best[tangent] / steps[tangent], best[tangent] / best[state]]
            if a.baseline_headers:
                row.append(best[kinds[2]] / best[state])
            rows.append(tuple(row))
            print(rows[-1], flush=True)
    base = " --baseline-headers DIR" if a.baseline_headers else ""
    L = [BEGIN, "## Lyapunov exponents: the cost of the tangent system (bench/lyapunov_cost.py)",
         "", f"`python3 bench/lyapunov_cost.py --reps {a.reps}{base}` on this machine (one "
         "core, backend cpp, `backend.simd = \"off\"`, statistics only), each system without "
         "and with `[lyapunov]`, alternately; best of the repetitions of the integrating "
         "thread's time. The tangent system (kernels/lyapunov.hpp) evaluates the formulation's "
         "right-hand side once on `Dual<double, 1>` (f and J delta together) and doubles the "
         "state; its error joins the step-size control, so the steps differ.", ""]
    head = ("| system | steps without | steps with | ns/step without | ns/step with | "
            "run with / without |")
    rule = "|---|---|---|---|---|---|"
    if a.baseline_headers:
        head += " baseline's run with / without |"
        rule += "---|"
    L += [head, rule]
    for row in rows:
        name, s0, s1, t0, t1, r = row[:6]
        line = f"| {name} | {s0:,} | {s1:,} | {t0:.0f} | {t1:.0f} | {r:.2f} |"
        if a.baseline_headers:
            line += f" {row[6]:.2f} |"
        L.append(line)
    L += ["", "The coin without `[lyapunov]` runs nholo's own kernels, with it the coin's "
          "plugin of tangent systems (both -O3); the model files run their plugins in both."]
    if a.baseline_headers:
        rev = subprocess.run(["git", "-C", a.baseline_headers, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "unknown"
        L += ["", f"The baseline's column: the same runs with the tangent plugins compiled from "
              f"the headers of commit {rev} (NHOLO_INCLUDE_DIR), interleaved with the others."]
    L += ["", END]
    publish_section(a.out, L)
    return 0


if __name__ == "__main__":
    sys.exit(main())
