#!/usr/bin/env python3
"""Events: what one event function costs per step (docs/events.md). Writes its
section into docs/BENCHMARKS.md (after bench/report.py's keep marker, between
this script's own markers).

    python3 bench/events_cost.py [--nholo build/release/nholo] [--out docs/BENCHMARKS.md]
                                 [--size 4000] [--reps 5]

The rolling coin's ensemble of examples/rolling_coin.toml (t in [0, 20],
statistics only, one core: backend cpp) runs with each method without
events and with one event function, sin(theta) in both directions, recorded
(with the default subdivisions = 1, and with 4)
(the half turns of the heading: about 13 per coin), alternately, `reps`
times each. The integrating thread's time (root attribute compute_seconds)
is divided by the accepted steps of the run (the sum of /udwadia_kalaba/steps),
best of the repetitions; the steps are the same with and without the event
(the event does not change the step sequence), which the script checks.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_section import publish_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench/events_cost.py: begin -->"
END = "<!-- bench/events_cost.py: end -->"
EVENT = ('[[events]]\nname = "half_turn"\nexpr = "sin(theta)"\ndirection = "both"\n'
         'max_records = 40\n')


def run_once(nholo, cfg, out, method):
    cmd = [nholo, "run", cfg, "-q", "--set", f"output.path={out}", "--set", "backend.device=cpp",
           "--set", "output.fields=[]", "--set", f"integrator.method={method}"]
    subprocess.run(cmd, check=True)
    import h5py
    with h5py.File(out, "r") as f:
        steps = int(f["udwadia_kalaba/steps"][:].sum())
        crossings = int(f["udwadia_kalaba/events/half_turn/count"][:].sum()) \
            if "udwadia_kalaba/events" in f else 0
        return float(f.attrs["compute_seconds"]), steps, crossings


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nholo", default=os.path.join(ROOT, "build", "release", "nholo"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    ap.add_argument("--size", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    base = open(os.path.join(ROOT, "examples", "rolling_coin.toml")).read()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.toml")
        with_event = os.path.join(tmp, "event.toml")
        with_event4 = os.path.join(tmp, "event4.toml")
        text = base.replace("size = 1000", f"size = {a.size}")
        open(plain, "w").write(text)
        open(with_event, "w").write(text + "\n" + EVENT)
        open(with_event4, "w").write(text + "\n" + EVENT + "subdivisions = 4\n")
        for method in ("rk4", "dopri5", "dop853"):
            best = {}
            info = {}
            n = 0
            for rep in range(a.reps):
                for kind, cfg in (("plain", plain), ("event", with_event), ("event4", with_event4)):
                    n += 1
                    out = os.path.join(tmp, f"{kind}_{n}.h5")
                    sec, steps, crossings = run_once(a.nholo, cfg, out, method)
                    os.remove(out)
                    best[kind] = min(best.get(kind, sec), sec)
                    info[kind] = (steps, crossings)
            for kind in ("event", "event4"):
                if info["plain"][0] != info[kind][0]:
                    sys.exit(f"{method}: the event changed the steps ({info['plain'][0]} vs "
                             f"{info[kind][0]})")
            steps = info["plain"][0]
            rows.append((method, steps, info["event"][1], 1e9 * best["plain"] / steps,
                         1e9 * best["event"] / steps, best["event"] / best["plain"],
                         1e9 * best["event4"] / steps, best["event4"] / best["plain"]))
            print(rows[-1], flush=True)
    L = [BEGIN, "## Events: the cost of one event function (bench/events_cost.py)", "",
         f"`python3 bench/events_cost.py --size {a.size} --reps {a.reps}` on this machine "
         "(one core, backend cpp, statistics only): the rolling coin of "
         f"examples/rolling_coin.toml, {a.size} coins over t in [0, 20], without events and "
         "with one, `sin(theta)` in both directions recorded (docs/events.md), run alternately; "
         "best of the repetitions of the integrating thread's time per accepted step. Goal: at "
         "most 1.20 (the phase-space issue).", "",
         "| method | accepted steps | crossings | ns/step, no events | ns/step, one event "
         "(subdivisions = 1, the default) | ratio | ns/step, subdivisions = 4 | ratio |",
         "|---|---|---|---|---|---|---|---|"]
    for method, steps, crossings, t0, t1, r, t4, r4 in rows:
        L.append(f"| {method} | {steps:,} | {crossings:,} | {t0:.0f} | {t1:.0f} | {r:.3f} | "
                 f"{t4:.0f} | {r4:.3f} |")
    L += ["", "The steps are the same with and without the event (checked). DOPRI5's last "
          "stage is f at the step's end, so the event costs its samples and root finding "
          "only; RK4 takes its last stage, f(t + h, y + h k3), as the end slope (f at the "
          "end to O(h^3)); DOP853 evaluates f at the end once more and reuses it as the next "
          "step's first stage (no net evaluation unless the drift projection, on in this "
          "example, moves the state). The rest is, per step, one evaluation of the "
          "event function's program on dual numbers at the step's end (g and dg/dt, kept for "
          "the next step's start), the points where the cubic through them is stationary "
          "inside the step (an evaluation on the interpolant each, where there are any), "
          "the ends of the `subdivisions` equal parts but the last, and, per stored crossing, "
          "its refinement by steps of the method. For the coin's `sin(theta)` one sine and "
          "cosine (about 20 ns here) are the largest part: RK4's step, four right-hand sides "
          "with one sine and cosine each, is the cheapest to add them to.",
          "", END]
    publish_section(a.out, L)
    return 0


if __name__ == "__main__":
    sys.exit(main())
