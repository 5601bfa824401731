#!/usr/bin/env python3
"""bench/simd_lanes.py — the CPU backend's SIMD lanes (backend.simd) against one
trajectory at a time, side by side: every system is run with each setting this
CPU offers (off, avx2, avx512), interleaved, `--repeat` times, and the median
of the integration's time (the file's `compute_seconds`) and of the wall time
is reported, with the ratio to `off`.

  python3 bench/simd_lanes.py [--nholo build/nholo] [--threads 1] [--repeat 3]
                              [--size 20000] [--coins 100000] [--drift none|project]
                              [--method dopri5|dop853|rk4 [--dt 0.01]]

Systems: the built-in coin, skate and Appell's particle (the bench's systems,
examples/*.toml, with --drift: `none` by default, `project` as the examples
run them: the lanes take the projection too) for --size trajectories and
t = 0..10 (Appell: --appell-size, t = 0..3: without the projection two of
its 40 trajectories take about 2 x 10^7 steps each), one thread; `coin_events`
(examples/rolling_coin_events.toml, --size / 4 coins, t = 0..8: a record
event, a stop event that ends about half of the coins at different times,
and --events-max-steps per save interval that ends about a quarter with
status max_steps: a heterogeneous ensemble); the model files
`coin_file` (the coin written as a model file, tests/model_files/rolling_coin.toml,
in the coin's example: its built-in twin's factor is the goal) and
`rattleback` (examples/models/rattleback.toml, 6 coordinates, 3 constraints;
--rattleback-size trajectories, spin rates drawn uniformly from the example's
range, t = 0..10); `coin_lyapunov` and `skate_lyapunov` (the coin's and
the skate's examples with [lyapunov]: the tangent system, the state and one
tangent vector on dual numbers, --size / 4 trajectories, t = 0..10), whose
plugins and lane add-ons are compiled by a first run outside the timing;
then the issue's end-to-end
case: --coins coins, t = 0..10, 101 saves of q, two threads. --method sets
every system's integrator (default: each example's own, DOP853 for the
skate, DOPRI5 for the others; rk4 with steps of --dt). Prints a markdown
table; the CPU's vector units and the load are printed first (measure idle).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import h5py

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_units():
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
                break
    return [u for u in ("avx512f", "avx2", "fma") if u in flags]


def settings():
    units = cpu_units()
    s = ["off"]
    if "avx2" in units and "fma" in units:
        s.append("avx2")
    if "avx512f" in units:
        s.append("avx512")
    return s


def run_once(nholo, config, extra, simd, out_dir):
    path = os.path.join(out_dir, "r.h5")
    if os.path.exists(path):
        os.remove(path)
    cmd = [nholo, "run", "-q", config, "--set", f"backend.simd={simd}",
           "--set", f"output.path={path}"] + extra
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with h5py.File(path, "r") as f:
        return float(f.attrs["compute_seconds"]), float(f.attrs["wall_seconds"])


def measure(nholo, name, config, extra, repeat, out_dir):
    times = {s: [] for s in settings()}
    for _ in range(repeat):
        for s in times:  # interleaved: the load falls on every setting alike
            times[s].append(run_once(nholo, config, extra, s, out_dir))
    base = statistics.median(t[0] for t in times["off"])
    rows = []
    for s, ts in times.items():
        c = statistics.median(t[0] for t in ts)
        w = statistics.median(t[1] for t in ts)
        rows.append(f"| {name} | {s} | {c:.2f} | {w:.2f} | {base / c:.2f}x |")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nholo", default=os.path.join(HERE, "build", "nholo"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--size", type=int, default=20000)
    ap.add_argument("--coins", type=int, default=100000)
    ap.add_argument("--appell-size", type=int, default=40,
                    help="Appell's particle: few trajectories take most steps (slow)")
    ap.add_argument("--rattleback-size", type=int, default=400)
    ap.add_argument("--events-max-steps", type=int, default=70,
                    help="coin_events: steps per save interval before status max_steps")
    ap.add_argument("--drift", choices=["none", "project"], default="none",
                    help="integrator.drift of every system (project: as the examples)")
    ap.add_argument("--method", choices=["dopri5", "dop853", "rk4"], default=None,
                    help="integrator.method of every system (default: each example's own)")
    ap.add_argument("--dt", type=float, default=0.01, help="rk4's step")
    ap.add_argument("--systems",
                    default="rolling_coin,skate,appell,coin_events,coin_file,rattleback,"
                            "coin_lyapunov,skate_lyapunov,coins")
    a = ap.parse_args()
    print(f"CPU vector units: {' '.join(cpu_units()) or 'none'}; load: {os.getloadavg()[0]:.1f}; "
          f"drift = {a.drift}; method = {a.method or 'the examples'}"
          + (f", dt = {a.dt}" if a.method == "rk4" else ""))
    print("| system | simd | compute s | wall s | vs off |")
    print("|---|---|---|---|---|")
    method = ["--set", f"integrator.method={a.method}"] if a.method else []
    if a.method == "rk4":
        method += ["--set", f"integrator.dt={a.dt}"]
    common = method + ["--set", 'formulations=["udwadia_kalaba"]',
                       "--set", f"integrator.drift={a.drift}",
                       "--set", "time.save_every=0.1", "--set", 'output.fields=["q"]']
    with tempfile.TemporaryDirectory() as d:
        systems = a.systems.split(",")
        for model in ("rolling_coin", "skate", "appell"):
            if model not in systems:
                continue
            size = a.appell_size if model == "appell" else a.size
            config = os.path.join(HERE, "examples", model + ".toml")
            # Appell's particle to its example's t = 3 (the others: t = 10)
            t_end = "3" if model == "appell" else "10"
            extra = common + ["--set", f"ensemble.size={size}", "--set", f"time.t_end={t_end}",
                              "--set", f"backend.threads={a.threads}"]
            for row in measure(a.nholo, f"{model}, {size}, {a.threads} thread", config, extra,
                               a.repeat, d):
                print(row, flush=True)
        if "coin_events" in systems:
            # a heterogeneous ensemble: the coin's events example (a `record`
            # event at every half turn, a `stop` at x = 4 that ends about half
            # of the coins at different times) to t = 8 with a step limit per
            # save interval that ends about a quarter (status max_steps)
            config = os.path.join(HERE, "examples", "rolling_coin_events.toml")
            extra = method + ["--set", f"integrator.drift={a.drift}",
                              "--set", f"ensemble.size={a.size // 4}",
                              "--set", "time.t_end=8",
                              "--set", f"integrator.max_steps={a.events_max_steps}",
                              "--set", f"backend.threads={a.threads}"]
            label = f"coin_events, {a.size // 4}, {a.threads} thread"
            for row in measure(a.nholo, label, config, extra, a.repeat, d):
                print(row, flush=True)
        # systems whose plugins (and lane add-ons) a first run compiles
        plugins = {
            "coin_file": ("examples/rolling_coin.toml", a.size,
                          ["--set", 'model="%s"' % os.path.join(HERE, "tests/model_files/rolling_coin.toml")]),
            # spin rates drawn from the example's range instead of its grid of 20
            "rattleback": ("examples/models/rattleback.toml", a.rattleback_size,
                           ["--set", "ensemble.sampler=sobol",
                            "--set", "ensemble.qd0.psi={ uniform = [-5.0, 5.0] }"]),
            "coin_lyapunov": ("examples/rolling_coin.toml", a.size // 4,
                              ["--set", "lyapunov.enabled=true"]),
            "skate_lyapunov": ("examples/skate.toml", a.size // 4,
                               ["--set", "lyapunov.enabled=true"]),
        }
        for name, (config, size, own) in plugins.items():
            if name not in systems:
                continue
            config = os.path.join(HERE, config)
            extra = common + own + ["--set", f"ensemble.size={size}", "--set", "time.t_end=10",
                                    "--set", f"backend.threads={a.threads}"]
            for s in settings():  # the plugin and its lane add-ons compiled, not timed
                run_once(a.nholo, config, extra + ["--set", "ensemble.size=8"], s, d)
            for row in measure(a.nholo, f"{name}, {size}, {a.threads} thread", config, extra,
                               a.repeat, d):
                print(row, flush=True)
        if "coins" in systems:
            config = os.path.join(HERE, "examples", "rolling_coin.toml")
            extra = common + ["--set", f"ensemble.size={a.coins}", "--set", "time.t_end=10",
                              "--set", "backend.threads=2"]
            for row in measure(a.nholo, f"rolling_coin, {a.coins}, 2 threads", config, extra,
                               a.repeat, d):
                print(row, flush=True)


if __name__ == "__main__":
    sys.exit(main())
