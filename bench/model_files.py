#!/usr/bin/env python3
"""Model files: plugin compile time and integration speed against the built-in
models (docs/models.md). Writes its section into docs/BENCHMARKS.md (after
bench/report.py's keep marker, between this script's own markers).

    python3 bench/model_files.py [--nholo build/release/nholo] [--out docs/BENCHMARKS.md]
                                 [--size 4000] [--reps 3] [--baseline OLD_NHOLO]

1. cold compile: `nholo model build FILE --force` in an empty cache, for the
   example model files (the compile time the command reports), with nholo's
   compiler and, when there is one, with clang++ (NHOLO_CXX);
2. warm: `nholo model build FILE` with the plugin cached (wall time of the
   command, best of 5);
   GPU modules (NVRTC, no GPU needed): `nholo model build FILE --gpu-arch
   sm_90 --force` compiles every formulation's DOPRI5 module; cold = the
   compile times the command reports per module, warm = wall time of the
   command with everything cached (best of 5). Skipped, with the reason, when
   NVRTC cannot be loaded;
3. speed: the built-in model and its twin model file (tests/model_files/, the
   same Lagrangian and constraints) run the same ensemble on one core
   (backend cpp, statistics only), alternately, `reps` times each; the
   integrating thread's time (root attribute compute_seconds) is compared,
   best of the repetitions. The trajectories are the same to 3e-15
   (tests/test_model_file_runs.cpp); the model file's M and F are symbolic, the
   built-in's from AD or hand-written (the table says which). With
   --baseline, the model file also runs with that (earlier) nholo, in turn
   with the others, and the table gives this nholo's time over its.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_section import publish_section  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench/model_files.py: begin -->"
END = "<!-- bench/model_files.py: end -->"

PAIRS = [  # built-in, example config, share of --size, where the built-in's M and F come from
    ("rolling_coin", "rolling_coin.toml", 1.0, "hand-written (hand_dynamics); constant M"),
    ("skate", "skate.toml", 1.0, "AD (second-order jets); M depends on theta"),
    ("parallel_velocities", "parallel_velocities.toml", 1.0, "AD; constant M"),
    ("appell", "appell.toml", 0.05, "AD; constant M"),  # minutes per 1000 trajectories
]


def run(cmd, env, cwd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"model_files.py: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return wall, p.stdout + p.stderr


def compute_seconds(path):
    import h5py
    with h5py.File(path, "r") as f:
        return float(f.attrs["compute_seconds"]), int(f.attrs["ensemble_size"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nholo", default=os.path.join(ROOT, "build", "release", "nholo"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    ap.add_argument("--size", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--baseline", help="an earlier nholo: the model files' speed side by side")
    a = ap.parse_args()
    nholo = os.path.abspath(a.nholo)
    if not os.access(nholo, os.X_OK):
        sys.exit(f"model_files.py: {nholo} not found; build nholo first")
    work = tempfile.mkdtemp(prefix="nholo_bench_models_")
    env = dict(os.environ, NHOLO_CACHE_DIR=os.path.join(work, "cache"))
    base_env = dict(os.environ, NHOLO_CACHE_DIR=os.path.join(work, "cache-baseline"))
    clang = shutil.which("clang++")
    try:
        # 1, 2: compile times
        rows = []
        for m in ("rolling_disk", "chaplygin_sleigh", "constant_speed"):
            src = os.path.join(ROOT, "examples", "models", m + ".model.toml")
            _, out = run([nholo, "model", "build", src, "--force"], env, work)
            cold = float(re.search(r"compiled in ([0-9.]+) s", out).group(1))
            warm = min(run([nholo, "model", "build", src], env, work)[0] for _ in range(5))
            cold_clang = cold_base = None
            if clang:
                _, out = run([nholo, "model", "build", src, "--force"], dict(env, NHOLO_CXX=clang), work)
                cold_clang = float(re.search(r"compiled in ([0-9.]+) s", out).group(1))
            if a.baseline:
                _, out = run([a.baseline, "model", "build", src, "--force"], base_env, work)
                cold_base = float(re.search(r"compiled in ([0-9.]+) s", out).group(1))
            rows.append((m, cold, warm, cold_clang, cold_base))
            print(f"{m}: cold {cold:.1f} s (clang++ {cold_clang}), warm {warm * 1000:.0f} ms",
                  file=sys.stderr)
        # GPU modules
        gpu_rows, gpu_skip = [], ""
        for m in ("rolling_disk", "chaplygin_sleigh", "constant_speed"):
            src = os.path.join(ROOT, "examples", "models", m + ".model.toml")
            cmd = [nholo, "model", "build", src, "--gpu-arch", "sm_90"]
            p = subprocess.run(cmd + ["--force"], env=env, cwd=work, capture_output=True, text=True)
            if p.returncode != 0:
                gpu_skip = (p.stdout + p.stderr).strip().splitlines()[-1]
                print(f"GPU modules skipped: {gpu_skip}", file=sys.stderr)
                break
            secs = [float(x) for x in re.findall(r"GPU module \S+ dopri5 sm_90: \S+\n  compiled in ([0-9.]+) s",
                                                  p.stdout)]
            warm = min(run(cmd, env, work)[0] for _ in range(5))
            gpu_rows.append((m, secs, warm))
            print(f"{m}: {len(secs)} GPU modules, {min(secs):.1f}-{max(secs):.1f} s each, "
                  f"warm {warm * 1000:.0f} ms", file=sys.stderr)
        # 3: speed against the built-in twin
        speed = []
        for builtin, example, share, extra in PAIRS:
            size = max(64, int(a.size * share))
            twin = os.path.join(ROOT, "tests", "model_files", builtin + ".toml")
            cfg = os.path.join(ROOT, "examples", example)
            common = ["--set", f"ensemble.size={size}", "--set", "output.fields=[]",
                      "--set", 'formulations=["udwadia_kalaba"]', "--backend", "cpp", "-q", "--overwrite"]
            run([nholo, "model", "build", twin], env, work)  # compiled before timing
            kinds = [("builtin", builtin, nholo, env), ("file", twin, nholo, env)]
            if a.baseline:
                run([a.baseline, "model", "build", twin], base_env, work)
                kinds.append(("baseline", twin, os.path.abspath(a.baseline), base_env))
            best = {k[0]: 1e300 for k in kinds}
            for _ in range(a.reps):
                for kind, model, exe, e in kinds:
                    path = os.path.join(work, f"{builtin}_{kind}.h5")
                    run([exe, "run", cfg, "--set", f'model="{model}"', "--set",
                         f'output.path="{path}"'] + common, e, work)
                    best[kind] = min(best[kind], compute_seconds(path)[0])
            speed.append((builtin, size, best["builtin"], best["file"], extra, best.get("baseline")))
            print(f"{builtin}: built-in {best['builtin']:.3f} s, file {best['file']:.3f} s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         capture_output=True, text=True).stdout.strip()
    L = [BEGIN, "## Model files: compile time and speed (bench/model_files.py)", "",
         f"Measured {time.strftime('%Y-%m-%d')} on {cpu}, {os.cpu_count()} cores, by "
         "`python3 bench/model_files.py" + (" --baseline OLD" if a.baseline else "") + "`. "
         "The plugin of a model file holds the model's functions and the integrators of every "
         "formulation and method behind the C plugin interface (docs/models.md), no host code, "
         "compiled with -O3 like the built-in models.",
         "", "| model file | cold compile, nholo's compiler | the same, baseline nholo | "
         "cold compile, clang++ | warm (cached: check, load) |", "|---|---|---|---|---|"]
    for m, cold, warm, cold_clang, cold_base in rows:
        cc = f"{cold_clang:.1f} s" if cold_clang is not None else "no clang++"
        cb = f"{cold_base:.1f} s" if cold_base is not None else "-"
        L.append(f"| examples/models/{m} | {cold:.1f} s | {cb} | {cc} | {warm * 1000:.0f} ms |")
    if gpu_rows:
        L += ["", "GPU modules (NVRTC, for sm_90, DOPRI5; compiled without a GPU): one per formulation, "
              "each compiled by `nholo model build FILE --gpu-arch sm_90 --force`; warm = the same command "
              "with the plugin and the modules cached:", "",
              "| model file | modules (formulations) | cold, per module | cold, all | warm (cached: check, load) |",
              "|---|---|---|---|---|"]
        for m, secs, warm in gpu_rows:
            L.append(f"| examples/models/{m} | {len(secs)} | {min(secs):.1f}-{max(secs):.1f} s | "
                     f"{sum(secs):.1f} s | {warm * 1000:.0f} ms |")
    else:
        L += ["", f"GPU modules: not measured ({gpu_skip or 'no NVRTC'})."]
    L += ["", "Speed: the same ensemble (trajectories of the model's example config, "
          "udwadia_kalaba, statistics only) on one core (backend cpp), the built-in model and its "
          "twin in tests/model_files/ run alternately, best of "
          f"{a.reps}; the integrating thread's time:", "",
          "| model | trajectories | built-in | model file | model file / built-in | "
          "model file, baseline nholo | this / baseline | the built-in's M, F |",
          "|---|---|---|---|---|---|---|---|"]
    for name, size, b, f, extra, base in speed:
        bs = f"{base:.3f} s | {f / base:.3f}" if base else "- | -"
        L.append(f"| {name} | {size} | {b:.3f} s | {f:.3f} s | {f / b:.3f} | {bs} | {extra} |")
    L += ["", "A model file's M and F are derived symbolically from its Lagrangian when the C++ is "
          "generated (docs/models.md, \"Symbolic derivatives\"), with structural zeros dropped and "
          "shared subexpressions computed once; its parameter-only subexpressions (m g sin(alpha)) "
          "are computed once per trajectory. A built-in model's come from AD unless it has "
          "hand-written ones. Where M is constant (coin, parallel velocities, Appell) both are "
          "factored once per trajectory (docs/BENCHMARKS.md 9.5) and the two differ by the timing "
          "noise of a shared machine (the shortest runs are the noisiest); where M depends on the "
          "state (the skate) the symbolic form skips the second-order jets of 9.3.",
          "", END]
    publish_section(a.out, L)
    return 0


if __name__ == "__main__":
    sys.exit(main())
