#!/usr/bin/env python3
"""docs/BENCHMARKS.md from the results of bench/run.sh.

    python3 bench/report.py RESULTS_DIR OUT.md [SECONDS]

Reads the JSON-lines files that bench/run.sh writes into RESULTS_DIR (see its
header) and writes the tables, the goals (met / missed, computed from the
numbers), the CUDA resource usage with the theoretical occupancy on an H100
and a roofline ESTIMATE. Missing parts (no nvcc, no Boost) are reported as
missing, never filled in.
"""
import json
import math
import os
import re
import sys

# H100 SXM5 (NVIDIA datasheet): FP64 vector 33.5 TFLOP/s (an FMA counts 2),
# HBM3 3.35 TB/s; sm_90: 65536 registers, 64 warps, 32 blocks per SM, 132 SMs.
H100_FP64 = 33.5e12
H100_BW = 3.35e12
SM_REGS, SM_WARPS, SM_BLOCKS = 65536, 64, 32
BLOCK = 256  # threads per block assumed for the occupancy (Thrust/CUB for_each)

SYSTEMS = ["coin", "skate", "appell"]
SYSTEM_DESC = {
    "coin": "rolling coin (n = 4, m = 2, ideal)",
    "skate": "skate / Chaplygin sleigh on a slope (n = 3, m = 1, ideal)",
    "appell": "Appell's particle with drag (n = 3, m = 1, constraint quadratic in qd, nonideal)",
}
IMPL_DESC = {
    "nholo_ad": "nholo generic: AD-derived M, F, A, b + fundamental equation",
    "nholo_sym": "nholo generic through the system's model file (tests/model_files/): M, F "
                 "differentiated symbolically when nholo generates its C++ (docs/models.md), A, b "
                 "by AD, the same solver",
    "nholo_hand": "hand-written M, F, A, b, C + the same nholo solver",
    "closed": "closed-form accelerations in nholo's integrator",
    "odeint": "Boost.odeint dopri5 (controlled, dense output), closed-form RHS",
    "eigen": "Eigen dynamic matrices + JacobiSVD pinv per evaluation, nholo's integrator",
    "scipy_rk45": "scipy solve_ivp RK45, numpy pinv per evaluation",
    "scipy_dop853": "scipy solve_ivp DOP853, numpy pinv per evaluation",
    "jax_diffrax": "JAX + diffrax (coin only): M, F, A, b by jax AD of the same Lagrangian and "
                   "constraints, linear solves, Dopri5 with a PID controller, float64, jit(vmap(...))",
    "sympy_dop853": "sympy + scipy (coin only): the fundamental equation derived and simplified "
                    "symbolically from the same Lagrangian and constraints (a closed form), "
                    "lambdified, solve_ivp DOP853 per trajectory",
}
# the generic path under the other formulations (rhs_driver)
FORM_IMPLS = [("nholo_ad", "Udwadia–Kalaba"), ("nholo_lm", "Lagrange multipliers"),
              ("nholo_ns", "null space"), ("nholo_vk", "vakonomic"), ("nholo_cf", "conflated")]
# issue 13's targets: instructions per generic RHS
RHS_TARGET = {"coin": 600, "skate": 500, "appell": 400}


def load_jsonl(res, name):
    path = os.path.join(res, name)
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
    return out


def load_json(res, name, default=None):
    path = os.path.join(res, name)
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return json.load(f)


def fmt(x, digits=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, int):
        return f"{x:,}"
    ax = abs(x)
    if ax != 0 and (ax >= 1e6 or ax < 1e-3):
        return f"{x:.{digits - 1}e}"
    if ax >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


def occupancy(regs, block=BLOCK):
    regs_per_warp = math.ceil(regs * 32 / 256) * 256
    warps_by_regs = SM_REGS // regs_per_warp
    warps_per_block = block // 32
    blocks = min(warps_by_regs // warps_per_block, SM_BLOCKS, SM_WARPS // warps_per_block)
    return blocks * warps_per_block / SM_WARPS


def parse_ptxas(path):
    """{kernel: {regs, stack, spill_st, spill_ld}} of the entry functions."""
    if not os.path.exists(path):
        return {}
    kernels = {}
    cur = None
    props = None
    with open(path) as f:
        for line in f:
            m = re.search(r"Function properties for (\S+)", line)
            if m:
                props = m.group(1)
                continue
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m and props:
                if props.startswith(("ensemble_", "dopri5_")):
                    kernels.setdefault(props, {}).update(
                        stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
                props = None
                continue
            m = re.search(r"Compiling entry function '(\S+)'", line)
            if m:
                cur = m.group(1)
                continue
            m = re.search(r"Used (\d+) registers", line)
            if m and cur:
                kernels.setdefault(cur, {})["regs"] = int(m.group(1))
                cur = None
    return kernels


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    res, out_path = sys.argv[1], sys.argv[2]
    total_s = int(sys.argv[3]) if len(sys.argv) > 3 else None
    meta = load_json(res, "meta.json", {})
    cg_rhs = load_jsonl(res, "callgrind_rhs.jsonl")
    cg_step = load_jsonl(res, "callgrind_step.jsonl")
    t_rhs = load_jsonl(res, "time_rhs.jsonl")
    ens = load_jsonl(res, "ensemble.jsonl")
    sweep = load_jsonl(res, "sweep.jsonl")
    outp = load_jsonl(res, "output.jsonl")
    cli = load_jsonl(res, "cli.jsonl")
    scipy = load_jsonl(res, "scipy.jsonl")
    peers = [r for r in load_jsonl(res, "peers.jsonl") if "skipped" not in r]
    peers_skipped = [r for r in load_jsonl(res, "peers.jsonl") if "skipped" in r]
    ptx = parse_ptxas(os.path.join(res, "ptxas.txt"))
    load0 = load_json(res, "loadavg_timing_start.json", "?")
    load1 = load_json(res, "loadavg_timing_end.json", "?")

    def cg(sys_, impl, key="ir_per_rhs"):
        for r in cg_rhs:
            if r["system"] == sys_ and r["impl"] == impl:
                return r[key]
        return None

    def cgs(sys_, impl, key):
        for r in cg_step:
            if r["system"] == sys_ and r["impl"] == impl:
                return r[key]
        return None

    def trhs(sys_, impl):
        for r in t_rhs:
            if r["system"] == sys_ and r["impl"] == impl:
                return r["ns_per_rhs"]
        return None

    def run(sys_, impl, threads):
        for r in ens:
            if r["system"] == sys_ and r["impl"] == impl and r["threads"] == threads:
                return r
        return None

    def sp(sys_, impl):
        for r in scipy:
            if r["system"] == sys_ and r["impl"] == impl:
                return r
        return None

    L = []
    L.append("# nholo benchmarks")
    L.append("")
    L.append("<!-- generated by bench/report.py from a run of bench/run.sh; edit those, not this file -->")
    L.append("")
    L.append(
        f"Generated by `bash bench/run.sh{' --full' if meta.get('mode') == 'full' else ''}` "
        f"({meta.get('mode', '?')} mode) on {meta.get('date', '?')}"
        + (f" in {total_s // 60} min {total_s % 60} s" if total_s is not None else "") + ".  ")
    L.append(f"Machine: {meta.get('cpu', '?')}, {meta.get('cores', '?')} cores, no GPU; "
             f"{meta.get('compiler', '?')}, `-O3` (CMake Release), no `-march`.  ")
    L.append(f"Load average (1, 5, 15 min) when the timings started: {load0}; when they ended: {load1}. "
             "This machine is shared: wall-clock timings are noisy, the callgrind counts are not.")
    L.append("")
    L.append("## How to reproduce")
    L.append("")
    L.append("    bash bench/run.sh           # quick: 2000 side by side, sweep to 10^5, ~10 min on 2 cores")
    L.append("    bash bench/run.sh --sweep \"100 1000 10000 100000 1000000\"   # the sweep to 10^6 (+5 min)")
    L.append("    bash bench/run.sh --full    # 20000 side by side, sweep and CLI to 10^6 (hours)")
    L.append("")
    L.append("It configures its own Release build in `build/bench` (benchmarks only), builds the "
             "drivers, counts instructions with callgrind while the rest builds, then runs the "
             "timings with nothing else of its own running, and rewrites this file from "
             "`build/bench/results/*.jsonl`. Sources: `bench/bench_systems.hpp` (the systems and "
             "their hand-written forms), `bench/eigen_direct.hpp`, `bench/bench_ensemble.cpp`, "
             "`bench/rhs_driver.cpp`, `bench/bench_output.cpp`, `bench/scipy_baseline.py`, "
             "`bench/peers.py`, `bench/flops.py`, `bench/cuda_resources.cu`, `bench/report.py`.")
    L.append("")
    L.append("**Common settings.** Each system integrates the same deterministic, consistent "
             "initial states in every implementation (`initial_state` in bench_systems.hpp), "
             "DOPRI5 with rtol = 1e-10, atol = 1e-12, t = 0 .. 10 with 20 saves of q and qdot "
             "kept in memory (output off), no drift correction. End states are compared with "
             "a reference (closed-form RHS, DOP853 at rtol = 1e-13) and with nholo's generic "
             "path: \"agree\" means both differences are below 1e-6 relative to 1 + |y| "
             "(every run asserts it; bench/run.sh exits with status 3 otherwise).")
    L.append("")
    L.append("Systems: " + "; ".join(f"**{s}** — {SYSTEM_DESC[s]}" for s in SYSTEMS) + ".")
    L.append("")
    L.append("Implementations: " + "; ".join(f"`{k}` — {v}" for k, v in IMPL_DESC.items()) + ".")
    L.append("")

    # ---------------------------------------------------------------- goals
    goals = []
    # 1. generic vs hand-written
    r_hand = {s: ratio(cg(s, "nholo_ad"), cg(s, "nholo_hand")) for s in SYSTEMS}
    r_closed = {s: ratio(cg(s, "nholo_ad"), cg(s, "closed")) for s in SYSTEMS}
    r_hand_t = {}
    for s in SYSTEMS:
        a, h = run(s, "nholo_ad", 1), run(s, "nholo_hand", 1)
        r_hand_t[s] = ratio(a and a["ns_per_traj"], h and h["ns_per_traj"])
    if all(v is not None for v in r_hand.values()):
        met = all(v <= 1.5 for v in r_hand.values())
        goals.append((
            "generic (AD) path within 1.5x of the hand-written RHS",
            "vs hand-written M, F, A, b through the same solver, instructions per RHS: " +
            ", ".join(f"{s} {r_hand[s]:.2f}x" for s in SYSTEMS) +
            "; per integration step (Ir): " +
            ", ".join(f"{s} {fmt(ratio(cgs(s, 'nholo_ad', 'ir_per_step'), cgs(s, 'nholo_hand', 'ir_per_step')))}x"
                      for s in SYSTEMS) +
            "; whole ensemble run (1 thread, time): " +
            ", ".join(f"{s} {fmt(r_hand_t[s])}x" for s in SYSTEMS) +
            ". vs the closed-form accelerations (no linear algebra at all): " +
            ", ".join(f"{s} {r_closed[s]:.1f}x" for s in SYSTEMS if r_closed[s]),
            ("met for " + ", ".join(s for s in SYSTEMS if r_hand[s] <= 1.5) if any(r_hand[s] <= 1.5 for s in SYSTEMS) else "") +
            ("; missed for " + ", ".join(s for s in SYSTEMS if r_hand[s] > 1.5) if not met else "") +
            " (vs hand-written M, F, A, b); missed vs closed form"))
    # 2. odeint
    rows = []
    for s in SYSTEMS:
        a, o, c = run(s, "nholo_ad", 1), run(s, "odeint", 1), run(s, "closed", 1)
        if a and o:
            rows.append((s, a["ns_per_traj"] / o["ns_per_traj"], c["ns_per_traj"] / o["ns_per_traj"] if c else None,
                         a["err_ref"], o["err_ref"]))
    if rows:
        goals.append((
            "at least as fast as Boost.odeint at equal accuracy",
            "time per trajectory, 1 thread, nholo generic / odeint (closed-form RHS): " +
            ", ".join(f"{s} {x:.2f}x" for s, x, _, _, _ in rows) +
            "; nholo's integrator with the same closed-form RHS / odeint: " +
            ", ".join(f"{s} {fmt(y)}x" for s, _, y, _, _ in rows) +
            "; end-state errors nholo / odeint: " +
            ", ".join(f"{s} {fmt(e1)} / {fmt(e2)}" for s, _, _, e1, e2 in rows),
            ("met" if all(x <= 1.0 for _, x, _, _, _ in rows) else
             "missed with the generic RHS" + (
                 "; met integrator vs integrator (same RHS)" if all(y is not None and y <= 1.0 for _, _, y, _, _ in rows)
                 else "; integrator vs integrator (same RHS): " + ", ".join(
                     f"{s} {'met' if y is not None and y <= 1.0 else 'missed'}" for s, _, y, _, _ in rows)))))
    # 2b. generic RHS close to a hand-derived one (instructions): the AD path,
    # and the same targets through a model file (symbolic M, F)
    def rhs_goal(impl, title, per_step_label, where):
        if not all(cg(s, impl) is not None for s in SYSTEMS):
            return
        per_step = {s: ratio(cgs(s, impl, "ir_per_step"), cgs(s, "closed", "ir_per_step")) for s in SYSTEMS}
        met_rhs = [s for s in SYSTEMS if cg(s, impl) <= RHS_TARGET[s]]
        met_step = [s for s in SYSTEMS if per_step[s] is not None and per_step[s] <= 2.0]

        def verdict(what, met):
            return (f"{what} met for " + ", ".join(met) if met else f"{what} missed for all") + (
                "" if len(met) in (0, len(SYSTEMS)) else
                ", missed for " + ", ".join(s for s in SYSTEMS if s not in met))
        goals.append((
            title,
            "instructions per RHS: " + ", ".join(f"{s} {fmt(cg(s, impl))}" for s in SYSTEMS) +
            f"; per step, {per_step_label}: " + ", ".join(f"{s} {fmt(per_step[s])}x" for s in SYSTEMS),
            verdict("per RHS", met_rhs) + "; " + verdict("per step", met_step) + f" ({where})"))

    rhs_goal("nholo_ad", "generic RHS: coin <= 600, skate <= 500, appell <= 400 instructions; per DOPRI5 "
             "step <= 2x the closed-form accelerations", "generic / closed form",
             "profiles: sections 9.3 and 9.7")
    rhs_goal("nholo_sym", "the same targets for the generic path through a model file (M, F derived "
             "symbolically, `nholo_sym`)", "symbolic / closed form", "section 9.8")
    # 2c. peers
    for impl, goal in (("jax_diffrax", 10), ("sympy_dop853", 100)):
        r = next((x for x in peers if x["impl"] == impl), None)
        if r:
            goals.append((
                f">= {goal}x faster than {'JAX + diffrax' if impl == 'jax_diffrax' else 'sympy + scipy DOP853'}"
                " per trajectory at equal accuracy (coin, one core)",
                f"{impl} / nholo generic, time per trajectory: {fmt(r['ratio_to_nholo_ad_1thread'])}x "
                f"(end-state errors {fmt(r['err_ref'])} vs nholo's {fmt(r['err_nholo'])})",
                "met" if r["ratio_to_nholo_ad_1thread"] >= goal else "missed"))
    for r in peers_skipped:
        goals.append((f"peer {r['impl']}", "not measured", f"skipped: {r['skipped']}"))
    # 3. Eigen
    rows = []
    for s in SYSTEMS:
        a, e = run(s, "nholo_ad", 1), run(s, "eigen", 1)
        if a and e:
            rows.append((s, e["ns_per_traj"] / a["ns_per_traj"], ratio(cg(s, "eigen"), cg(s, "nholo_ad"))))
    if rows:
        goals.append((
            ">= 20x faster than a direct Eigen implementation",
            "time per trajectory, 1 thread, Eigen / nholo generic: " +
            ", ".join(f"{s} {x:.1f}x" for s, x, _ in rows) +
            "; instructions per RHS: " + ", ".join(f"{s} {fmt(y)}x" for s, _, y in rows),
            "met" if all(x >= 20 for _, x, _ in rows) else
            "missed (" + ", ".join(f"{s} {x:.1f}x" for s, x, _ in rows if x < 20) + ")"))
    # 4. scipy
    rows = []
    for s in SYSTEMS:
        best = None
        for impl in ("scipy_rk45", "scipy_dop853"):
            r = sp(s, impl)
            if r and (best is None or r["ns_per_traj"] < best["ns_per_traj"]):
                best = r
        if best:
            rows.append((s, best["ratio_to_nholo_ad_1thread"], best["impl"]))
    if rows:
        goals.append((
            ">= 1000x faster than scipy per trajectory",
            "scipy (its faster method) / nholo generic, time per trajectory, 1 thread: " +
            ", ".join(f"{s} {x:,.0f}x ({m[6:].upper()})" for s, x, m in rows),
            "met" if all(x >= 1000 for _, x, _ in rows) else
            "missed (" + ", ".join(f"{s} {x:,.0f}x" for s, x, _ in rows if x < 1000) + ")"))
    # 5. output
    if outp:
        goals.append((
            "output >= half the raw write throughput",
            "; ".join(f"{o['threads']} thread{'s' if o['threads'] > 1 else ''}: "
                      f"{o['output_bytes_per_s'] / 1e6:,.0f} MB/s vs raw {o['raw_bytes_per_s'] / 1e6:,.0f} MB/s "
                      f"({o['output_over_raw']:.2f})" for o in outp) +
            " (default `output.compression = 0`); with deflate 1: " +
            ", ".join(f"{o['output_deflate_bytes_per_s'] / 1e6:,.0f} MB/s" for o in outp if "output_deflate_bytes_per_s" in o),
            "met (uncompressed default)" if all(o["output_over_raw"] >= 0.5 for o in outp) else
            "missed (section 6)"))
    L.append("## Goals")
    L.append("")
    L.append(table(["goal", "measured", "verdict"], goals))
    L.append("")
    L.append("Each verdict is computed by bench/report.py from the numbers below. Why the missed "
             "ones are missed is discussed in \"Reading the results\".")
    L.append("")

    # ---------------------------------------------------------------- RHS
    L.append("## 1. One right-hand side")
    L.append("")
    L.append("Callgrind instructions per evaluation (Ir; difference of 1500 and 500 calls, so "
             "setup cancels; exact and repeatable) and double-precision flops per evaluation "
             "(bench/flops.py: add/sub/mul/div/sqrt, FMA = 2, libm's sin/cos included), both "
             "of the statically linked driver rhs_driver_static, and the best of 7 timed runs "
             "of the dynamically linked one. The states cycle through 64 consistent initial "
             "states.")
    L.append("")
    rows = []
    for s in SYSTEMS:
        for impl in ("nholo_ad", "nholo_sym", "nholo_hand", "closed", "eigen"):
            ir = cg(s, impl)
            if ir is None:
                continue
            rows.append((s, f"`{impl}`", fmt(ir), fmt(cg(s, impl, "flops_per_rhs")), fmt(trhs(s, impl)),
                         fmt(ratio(ir, cg(s, "nholo_ad")))))
    L.append(table(["system", "implementation", "Ir / RHS", "flops / RHS", "ns / RHS", "Ir vs nholo_ad"], rows))
    L.append("")
    if cg_step:
        L.append("Per attempted integration step (DOPRI5: 6 RHS evaluations plus the stage sums, "
                 "error norm and step-size control; difference of integrating trajectories 0-5 "
                 "and 0-1 with `advance_to`, the loop the ensemble functor runs):")
        L.append("")
        rows = []
        for s in SYSTEMS:
            for impl in ("nholo_ad", "nholo_sym", "nholo_hand", "closed"):
                ir = cgs(s, impl, "ir_per_step")
                if ir is None:
                    continue
                rows.append((s, f"`{impl}`", fmt(ir), fmt(cgs(s, impl, "flops_per_step")),
                             fmt(ratio(ir, cgs(s, "nholo_hand", "ir_per_step")))))
        L.append(table(["system", "implementation", "Ir / step", "flops / step", "Ir vs nholo_hand"], rows))
        L.append("")

    rows = []
    for s in SYSTEMS:
        for impl, name in FORM_IMPLS:
            ir = cg(s, impl)
            if ir is None:
                continue
            st = cgs(s, impl, "ir_per_step")
            rows.append((s, name, f"`{impl}`", fmt(ir), fmt(cg(s, impl, "flops_per_rhs")), fmt(st),
                         fmt(ratio(st, cgs(s, "closed", "ir_per_step")))))
    if len(rows) > len(SYSTEMS):
        L.append("The generic path under every formulation (the same AD-derived M, F, A, b; "
                 "the vakonomic state carries the multipliers, here 0.1 at t = 0, so its "
                 "trajectories differ from the others'; Appell's conflated Lagrangian has a "
                 "singular mass matrix outside the singular-mass form's domain at these states, "
                 "so it has no row):")
        L.append("")
        L.append(table(["system", "formulation", "implementation", "Ir / RHS", "flops / RHS",
                        "Ir / step", "Ir / step vs closed form"], rows))
        L.append("")

    # ---------------------------------------------------------------- ensembles
    L.append("## 2. Ensembles side by side")
    L.append("")
    L.append(f"{meta.get('n_main', '?')} trajectories per system (Eigen: the first "
             f"{meta.get('n_eigen', '?')}; its rates are per trajectory like the others'), "
             f"best of {meta.get('reps', 1)} run(s). traj-steps/s = accepted steps of all "
             "trajectories per second; RHS evals counted exactly (nholo: 6 per attempted step + 1 "
             "per trajectory and window, checked against a counting wrapper; odeint: counted in "
             "the functor). \"time/traj vs nholo_ad\" > 1 means slower than nholo's generic path.")
    L.append("")
    for s in SYSTEMS:
        rows = []
        for th in (1, 2):
            a = run(s, "nholo_ad", th)
            for impl in ("nholo_ad", "nholo_hand", "closed", "odeint", "eigen"):
                r = run(s, impl, th)
                if not r:
                    continue
                rows.append((f"`{impl}`", th, fmt(r["n"]), fmt(r["seconds"]), fmt(r["steps"] / r["n"]),
                             fmt(r["rhs_evals"]), fmt(r["traj_steps_per_s"]), fmt(r["rhs_per_s"]),
                             fmt(r["ns_per_traj"] / 1e3), fmt(ratio(r["ns_per_traj"], a and a["ns_per_traj"])),
                             fmt(r["err_ref"]), fmt(r["diff_nholo_ad"]), "yes" if r["agree"] else "**NO**"))
        if rows:
            L.append(f"**{s}** — {SYSTEM_DESC[s]}")
            L.append("")
            L.append(table(["implementation", "threads", "trajectories", "time [s]", "steps/traj", "RHS evals",
                            "traj-steps/s", "RHS/s", "µs/traj", "time/traj vs nholo_ad", "error vs reference",
                            "diff to nholo_ad", "agree"], rows))
            L.append("")

    # ---------------------------------------------------------------- scaling
    rows = []
    for s in SYSTEMS:
        for impl in ("nholo_ad", "nholo_hand", "closed", "odeint", "eigen"):
            r1, r2 = run(s, impl, 1), run(s, impl, 2)
            if r1 and r2:
                rows.append((s, f"`{impl}`", fmt(r1["traj_steps_per_s"]), fmt(r2["traj_steps_per_s"]),
                             fmt(r2["traj_steps_per_s"] / r1["traj_steps_per_s"])))
    if rows:
        L.append("## 3. Thread scaling (1 → 2 threads)")
        L.append("")
        L.append(table(["system", "implementation", "traj-steps/s, 1 thread", "traj-steps/s, 2 threads",
                        "speed-up"], rows))
        L.append("")

    # ---------------------------------------------------------------- scipy
    if scipy:
        L.append("## 4. scipy, per trajectory")
        L.append("")
        L.append("`solve_ivp` with the same tolerances and save times (t_eval), the fundamental "
                 "equation written in numpy (`np.linalg.inv`, `np.linalg.pinv`) with the same "
                 "hand-written M, F, A, b, C; the first trajectories of the ensemble, one after "
                 "the other. Compared with nholo's generic path on one thread (time of the "
                 "ensemble run / trajectories).")
        L.append("")
        rows = []
        for r in scipy:
            a = run(r["system"], "nholo_ad", 1)
            rows.append((r["system"], f"`{r['impl']}`", r["n"], fmt(r["ns_per_traj"] / 1e6),
                         fmt(r["rhs_evals"] / r["n"]), fmt(r["ns_per_rhs"] / 1e3),
                         fmt(a["ns_per_traj"] / 1e6) if a else "–", f"{r['ratio_to_nholo_ad_1thread']:,.0f}",
                         fmt(r["err_ref"]), "yes" if r["agree"] else "**NO**"))
        L.append(table(["system", "method", "trajectories", "ms/traj", "RHS evals/traj", "µs/RHS",
                        "nholo_ad ms/traj", "scipy / nholo", "error vs reference", "agree"], rows))
        L.append("")

    # ---------------------------------------------------------------- peers
    if peers or peers_skipped:
        L.append("## 4b. Peers: JAX + diffrax and sympy + scipy, coin, equal accuracy")
        L.append("")
        L.append("bench/peers.py on the coin's dumped ensemble (nholo's initial states and "
                 "reference end states), one core (`taskset -c 0`, XLA and BLAS single-threaded). "
                 "Each peer's rtol and atol are scaled together from nholo's until its largest "
                 "end-state error against the reference is within 2x of nholo's on the same "
                 "trajectories. JAX: one jit(vmap(diffeqsolve)) over the ensemble, best of 3 "
                 "calls after the compiling one (compile time listed separately). sympy: "
                 "derivation and lambdify once (listed), then solve_ivp per trajectory. "
                 "nholo: the single-thread ensemble run of section 2 (time / trajectories).")
        L.append("")
        rows = []
        for r in peers:
            extra = (f"compile {fmt(r['compile_seconds'])} s" if "compile_seconds" in r else
                     f"derivation {fmt(r['derive_seconds'])} s" if "derive_seconds" in r else "")
            rows.append((f"`{r['impl']}`", r.get("version", ""), r["n"], f"{r['rtol']:.3g} / {r['atol']:.3g}",
                         fmt(r["ns_per_traj"] / 1e3), fmt(r["nholo_ad_ns_per_traj_1thread"] / 1e3),
                         fmt(r["ratio_to_nholo_ad_1thread"]), fmt(r["err_ref"]), fmt(r["err_nholo"]), extra))
        if rows:
            L.append(table(["peer", "version", "trajectories", "rtol / atol", "µs/traj", "nholo_ad µs/traj",
                            "peer / nholo", "peer error vs reference", "nholo error vs reference",
                            "set-up (excluded)"], rows))
            L.append("")
        for r in peers_skipped:
            L.append(f"- `{r['impl']}` skipped: {r['skipped']}")
        if peers_skipped:
            L.append("")

    # ---------------------------------------------------------------- sweep
    if sweep:
        L.append("## 5. Throughput and memory vs ensemble size")
        L.append("")
        L.append("Coin, 2 threads, t = 0 .. 2 with 4 saves, one process per row (peak RSS = "
                 "`getrusage` maximum resident set of that process, which holds the whole "
                 "ensemble's state and one window of outputs).")
        L.append("")
        rows = []
        for r in sweep:
            rows.append((f"`{r['impl']}`", fmt(r["n"]), fmt(r["seconds"]), fmt(r["traj_steps_per_s"]),
                         fmt(r["rhs_per_s"]), fmt(r["maxrss_kb"] / 1024), "yes" if r["agree"] else "**NO**"))
        L.append(table(["implementation", "trajectories", "time [s]", "traj-steps/s", "RHS/s",
                        "peak RSS [MiB]", "agree"], rows))
        L.append("")
        if cli:
            L.append("The `nholo` command itself (`nholo run bench/output_coin.toml`, 2 threads, "
                     "200 saves of q and qdot to HDF5, `/usr/bin/time -v`). It integrates the "
                     "ensemble in slices sized by `output.memory_budget_mb` (512 MB by default: about "
                     "10^5 coin trajectories with 16-save windows), so its peak memory grows with the "
                     "ensemble up to one slice and stays there beyond (the `--full` run covers 10^5 "
                     "and 10^6; a separate 10^6-coin run with 201 saves of q, measured the same way, "
                     "peaked at 288 MB and wrote 5.3 GB).")
            L.append("")
            rows = [(fmt(c["n"]), fmt(c["seconds"]),
                     fmt(c["maxrss_kb"] / 1024) if c.get("maxrss_kb") else "–",
                     fmt(c["file_bytes"] / 1e6)) for c in cli]
            L.append(table(["trajectories", "time [s]", "peak RSS [MiB]", "file [MB]"], rows))
            L.append("")

    # ---------------------------------------------------------------- output
    if outp:
        L.append("## 6. Output: HDF5 on / off, raw write")
        L.append("")
        L.append("`bench_output` (bench/output_coin.toml: coin, 200 saves, fields q and qdot): "
                 "*off* = the computation of `nholo run` alone (sampling, completion from the "
                 "constraints, the ensemble window by window); *on* = `nholo run` in-process "
                 "(the same plus transposition to the file layout, statistics, chunked HDF5) with "
                 "the default `output.compression = 0`, and *on, deflate* with `output.compression = 1` "
                 "(shuffle + deflate 1); *raw* = `fwrite` of the same number of bytes "
                 "(q and qdot, uncompressed) to a file in the same folder and one `fsync`. *writing* = "
                 "the seconds `nholo run` itself spent writing the fields and committing them, the "
                 "final file included (its `output_seconds` + `assembly_seconds`: with the fields "
                 "written in place, completing the result file; with deflate, assembling it from the "
                 "pieces); output throughput = bytes / writing. on - off is the same cost seen from "
                 "outside (noisier: two runs of several seconds).")
        L.append("")
        rows = [(fmt(o["n"]), o["threads"], fmt(o["bytes"] / 1e6), fmt(o["h5_file_bytes"] / 1e6),
                 fmt(o.get("h5_deflate_file_bytes", float("nan")) / 1e6),
                 fmt(o["seconds_off"]), fmt(o["seconds_on"]), fmt(o.get("seconds_on_deflate", float("nan"))),
                 fmt(o["seconds_raw"]), fmt(o.get("seconds_writing", float("nan"))),
                 fmt(o.get("seconds_writing_deflate", float("nan"))),
                 fmt(o["output_bytes_per_s"] / 1e6), fmt(o.get("output_deflate_bytes_per_s", float("nan")) / 1e6),
                 fmt(o["raw_bytes_per_s"] / 1e6), fmt(o["output_over_raw"])) for o in outp]
        L.append(table(["trajectories", "threads", "data [MB]", "file [MB]", "file, deflate [MB]",
                        "off [s]", "on [s]", "on, deflate [s]", "raw [s]", "writing [s]",
                        "writing, deflate [s]", "output MB/s", "output MB/s, deflate", "raw MB/s",
                        "output / raw"], rows))
        L.append("")
        L.append("The same bytes written through host/io/h5.hpp alone as two "
                 "(trajectory, time, coordinate) datasets, window by window and chunked as `nholo run` "
                 "does, with shuffle + deflate 1 and without filters (pseudo-random doubles, "
                 "as incompressible as real trajectories):")
        L.append("")
        rows = []
        for o in outp:
            if "seconds_h5_deflate" not in o:
                continue
            b = o["bytes"]
            rows.append((fmt(o["n"]), o["threads"],
                         fmt(o["seconds_h5_deflate"]), fmt(o["seconds_h5_plain"]), fmt(o["seconds_raw"]),
                         fmt(b / o["seconds_h5_deflate"] / 1e6), fmt(b / o["seconds_h5_plain"] / 1e6),
                         fmt(o["seconds_raw"] / o["seconds_h5_plain"])))
        if rows:
            L.append(table(["trajectories", "threads", "HDF5 + deflate [s]", "HDF5 plain [s]",
                            "raw [s]", "deflate MB/s", "plain MB/s", "plain HDF5 / raw throughput"], rows))
            L.append("")

    # ---------------------------------------------------------------- CUDA
    L.append("## 7. CUDA: kernel resources, occupancy, roofline estimate")
    L.append("")
    if ptx:
        L.append("`nvcc -arch=sm_90 -O3 -Xptxas -v --resource-usage` on bench/cuda_resources.cu: "
                 "one `__global__` per system wrapping `EnsembleWindow<Sys>::operator()` (the functor "
                 "host/backends/cuda_ensemble_impl.cuh launches through thrust::for_each). Theoretical occupancy "
                 f"on an H100 (sm_90: {SM_REGS} registers, {SM_WARPS} warps per SM) for "
                 f"{BLOCK}-thread blocks, from the registers alone (no shared memory is used; the "
                 "stack frame lives in local memory and does not limit occupancy).")
        L.append("")
        rows = []
        for k in sorted(ptx):
            v = ptx[k]
            if "regs" not in v:
                continue
            rows.append((f"`{k}`", v["regs"], fmt(v.get("stack")), fmt(v.get("spill_st")), fmt(v.get("spill_ld")),
                         f"{occupancy(v['regs']) * 100:.1f} %", f"{occupancy(v['regs'], 128) * 100:.1f} %"))
        L.append(table(["kernel", "registers/thread", "stack frame [B]", "spill stores [B]", "spill loads [B]",
                        f"occupancy, {BLOCK}-thread blocks", "128-thread blocks"], rows))
        L.append("")
        ens_regs = {k: v["regs"] for k, v in ptx.items() if k.startswith("ensemble_") and "regs" in v}
        dp = {k: v["regs"] for k, v in ptx.items() if k.startswith("dopri5_") and "regs" in v}
        if ens_regs and dp:
            pairs = [(k[len("dopri5_"):], dp[k], ens_regs.get("ensemble_" + k[len("dopri5_"):])) for k in sorted(dp)]
            L.append("`dopri5_*` kernels run the same trajectory loop with the method fixed at compile "
                     "time. The run-time choice between RK4, DOPRI5 and DOP853 (12 stage vectors) in "
                     "every `ensemble_*` kernel costs registers: " +
                     ", ".join(f"{name} {r} instead of {e}" for name, r, e in pairs if e) +
                     ". Occupancy stays register-bound either way: 25 % needs at most 128 registers "
                     "per thread; the generic path also carries 1-2 KB of stack frame (the "
                     "Lagrangian's jets) in local memory.")
            L.append("")
    else:
        L.append("No ptxas report (nvcc not found, or run with --no-cuda).")
        L.append("")
    rows = []
    for s in SYSTEMS:
        fl = cgs(s, "nholo_ad", "flops_per_step")
        a = run(s, "nholo_ad", 1)
        if not fl or not a:
            continue
        n = {"coin": 4, "skate": 3, "appell": 3}[s]
        steps_traj = a["steps"] / a["n"]
        saves, windows = a.get("saves", 20), 4
        # global memory per trajectory: q, qdot per save; state (2N + 7 words) in and out per window
        bytes_traj = saves * 2 * n * 8 + windows * 2 * (2 * n + 7) * 8
        bpstep = bytes_traj / steps_traj
        ai = fl / bpstep
        bound = min(H100_FP64 / fl, H100_BW / bpstep)
        kern = ptx.get(f"ensemble_{s}_nholo_ad", {})
        occ = occupancy(kern["regs"]) if "regs" in kern else None
        cpu2 = run(s, "nholo_ad", 2)
        rows.append((s, fmt(fl), fmt(bpstep), fmt(ai), fmt(bound), fmt(bound * 0.25),
                     f"{occ * 100:.1f} %" if occ else "–",
                     fmt(cpu2["traj_steps_per_s"]) if cpu2 else "–"))
    if rows:
        L.append("**Roofline ESTIMATE for an H100 SXM (not a measurement: this machine has no GPU).** "
                 f"Peak FP64 {H100_FP64 / 1e12:.1f} TFLOP/s (FMA = 2 flops), HBM3 "
                 f"{H100_BW / 1e12:.2f} TB/s. flops/step: the x86 count of section 1 for nholo's "
                 "generic path (divisions, square roots and libm's sin/cos count as the operations "
                 "x86 executes; on the GPU a double division or sqrt is a sequence of ~10 FMAs, so "
                 "the GPU does more work per step than counted). Bytes/step: global-memory traffic "
                 "per accepted step — per trajectory q and qdot at every save and the state in and "
                 "out once per window (the per-step state lives in registers and local memory; "
                 "spills hit L1/L2 and are not counted). The bound is min(peak flops / flops per "
                 "step, bandwidth / bytes per step); the kernels are compute-bound by two orders "
                 "of magnitude. The 25 % column is a plausible sustained fraction for "
                 "255-register, 12.5 %-occupancy, divergent per-thread integrators (latency of "
                 "dependent FP64 chains is poorly hidden at 8 warps per SM) — an assumption, "
                 "to be replaced by a measurement on a GPU.")
        L.append("")
        L.append(table(["system", "flops/step", "bytes/step", "flops/byte", "bound: traj-steps/s",
                        "at 25 % of bound", "occupancy", "measured here, 2 CPU threads"], rows))
        L.append("")

    # ---------------------------------------------------------------- notes
    L.append("## Reading the results")
    L.append("")
    L.append(NOTES)
    L.append("")
    # sections measured outside bench/run.sh (the run pipeline, the GPU
    # check) follow KEEP_MARKER in the existing file and are carried over
    kept = ""
    if os.path.exists(out_path):
        with open(out_path) as f:
            old = f.read()
        if KEEP_MARKER in old:
            kept = old[old.index(KEEP_MARKER):]
    with open(out_path, "w") as f:
        f.write("\n".join(L))
        if kept:
            f.write("\n" + kept)
    return 0


KEEP_MARKER = "<!-- bench/report.py keeps what follows: measured outside bench/run.sh -->"


NOTES = """\
**Generic path vs hand-written.** nholo's generic path derives M, F by
differentiating the Lagrangian twice and A, b by differentiating the
constraints, on every evaluation (each stage needs M(q) at its own state), and
then solves the fundamental equation with the Cholesky factor of M and, when
K = A M^-1 A^T passes a relative rank test (always, for these systems along
these trajectories), the LDL^T factor of the m x m matrix K (Cholesky on a
GPU); the one-sided
Jacobi SVD of the pseudoinverse runs only for rank-deficient or
ill-conditioned K (redundant constraints, Appell's particle at rest). Against
hand-written M, F, A, b fed to the same solver the AD costs what the table of
section 1 shows. Now that the solve is cheap, the AD is the larger part of
the difference. The coin and Appell's particle declare a constant mass
matrix (and the coin a constant force), which a per-trajectory cache takes
out of the right-hand side (section 9.5), so their generic paths beat the
hand-written M, F, A, b fed uncached to the same solver; the skate's M
depends on its heading and it does not, and callgrind says why (section 9.3):
the skate's hand-written M, F cost ~50 instructions, while the generic path
evaluates its Lagrangian, which couples thd with theta, on second-order jets
with 17 numbers each (value, 7 first derivatives: qd, the direction v and
q; 9 second derivatives) for each of its ~20 operations (~530 instructions);
Appell's hand-written M, F, A, b are a few products, while its generic
path runs the Lagrangian on jets and the quadratic, time-dependent constraint
(sin of t included) on duals. Closing the skate's
gap takes symbolic simplification of the Lagrangian, not faster
differentiation: nholo does that for model files (section 9.8; `nholo_sym`
in sections 1 and 2b: the skate's twin model file costs about what its
hand-written M, F do), while a built-in C++ model, a template nholo only
evaluates, keeps AD. Against closed-form accelerations, where a person has solved
the constrained equations on paper, the generic path is 1.8-4x more work
per evaluation (goal table): the price of not deriving equations of motion, which no
differentiation scheme removes, because the closed form skips the linear
algebra entirely.

**odeint.** The odeint baseline runs the closed-form right-hand side, so
"nholo generic vs odeint" mixes two things: the generic right-hand side (see
above) and the integrator. The row "nholo's integrator with the same
closed-form RHS / odeint" isolates the integrator: with the same
right-hand side nholo's DOPRI5 is on a par with odeint's for the coin and
1.2-1.4x slower for the skate and Appell's particle (whose closed forms cost under 300 instructions, so that the
per-step bookkeeping shows: nholo lands exactly on every save time, checks the status of
every stage and the new state for finiteness and evaluates two `pow` per
accepted step for the PI controller). nholo's integrator uses an RMS error norm;
odeint's dense output interpolates the saves and uses a max norm, so it takes
somewhat more steps at the same tolerances; both errors against the reference
are listed and agree. At equal accuracy the generic path is therefore
about 2x (coin, Appell) to 6x (skate) slower than odeint with a
hand-derived closed form — the price of the generic right-hand side above,
not of the integrator.

**Eigen and scipy.** Both baselines compute the same fundamental equation
from the same hand-written M, F, A, b (Eigen: heap-allocated dynamic
matrices, LLT and a JacobiSVD per evaluation; numpy: inv and pinv per
evaluation), i.e. they get the derivatives for free, and nholo's generic path
is still several times faster than Eigen (7-23x fewer instructions per
right-hand side) and about two orders of magnitude faster than scipy per
trajectory on one core (goal table). The 20x and
1000x goals are not met on a CPU core: the Eigen baseline spends most of its
time in the SVD and in allocation, and nholo's own cost per evaluation is
dominated by AD (above), which the baselines do not pay. Per trajectory on a
GPU (section 7, an estimate) the scipy ratio would exceed 1000x by orders of
magnitude, but that is not a measurement.

**Output.** On the CPU backends the kernels store each window's outputs
trajectory-major, in the file's (trajectory, time, coordinate) order, so
`nholo run` hands them to HDF5 without a copy (the CUDA backend keeps the
structure-of-arrays layout, which makes neighbouring threads' stores coalesce,
and the host transposes in cache-sized blocks). It keeps ensemble statistics
on the way and writes chunked datasets (up to 1024 trajectories x one window
per chunk). The raw write copies the same bytes into the page cache in 1 MiB
pieces, at memory speed on this machine (several GB/s, varying by 2x between
runs, so the ratio is noisy). What remains between `nholo run` and the raw
write is the HDF5 library itself: writing the same windows with the same
chunks directly through host/io/h5.hpp reaches about 0.65 of the raw write
(second table of section 6), because HDF5 copies every chunk once more on its
way to the page cache. Since the output became crash-consistent (each
window is committed as its own small HDF5 file, flushed, fsync'ed to disk and
renamed; docs/usage.md, "Interruptions, crashes and --resume"), *writing* also
waits for the disk: the raw write stops at the page cache, the pieces do not,
which is what took output / raw from about 0.5 to below 0.2 on this machine.
That time is spent on the writer thread while the next window integrates: in
these runs *on - off* is about 10 % of *on* (and contains the ensemble
statistics and the per-trajectory drift fits too); the final assembly of the
file from its pieces adds about 0.5 s per 400 MB. Committing several windows
per fsync (syncfs once per batch) would bring the ratio back up at the price
of a coarser crash granularity; not done yet.
Deflate (`output.compression = 1..9`, shuffle + deflate) costs 50-60 times
the plain write and shrinks the file by only about 20 %: full-precision
trajectories are close to incompressible, so compression is opt-in
(`output.compression = 0` by default).

**Where the generic right-hand side's instructions go now**, the changes
that brought them down (Cholesky of A M^-1 A^T with a rank test instead of an
SVD on every call, QR for the null space, a qdd-only right-hand side, a lean
jet for separable Lagrangians, a flattened right-hand side, a cheaper step
controller, a per-trajectory cache of a constant M, leaner linear algebra,
duals seeded in place and an LDL^T factor of A M^-1 A^T on the host) and every
formulation before and after them: section 9 (kept
below, measured side by side with the same driver).

**What was optimised for an earlier report** (callgrind instructions of
rhs_driver_static, deterministic; the same driver compiled against the kernels
before and after the change):

| change | where | before | after |
|---|---|---|---|
| M, F of the Lagrangian with a dedicated second-order jet `Jet2<S,2n+1,n,1>` (value; first derivatives in the qd, v and q directions; only the (qd_i, qd_j), j <= i, and (qd_i, v) second derivatives) instead of the nested `Dual<Dual<S,2n>,n+1>`, whose qd-q and v-q blocks and duplicated M entries were computed and thrown away; jet operations forced inline and the Lagrangian flattened into `lagrangian_terms_ad` | kernels/dual.hpp, kernels/dynamics.hpp | generic RHS: coin 5,181 / skate 6,084 / appell 3,609 Ir | coin 1,889 / skate 1,493 / appell 856 Ir (2.7x / 4.1x / 4.2x fewer) |
| Runge–Kutta stage sums over compile-time indices (the tableau coefficients became constants instead of local constexpr tables indexed at run time; zero coefficients skipped), then summed component by component in a register | kernels/steppers.hpp | closed-form RHS, per step: coin 3,273 / skate 3,081 / appell 2,869 Ir | coin 2,681 / skate 2,393 / appell 2,119 Ir |
| both together, generic path, per step | | coin 32,829 / skate 38,326 / appell 23,839 Ir | coin 12,417 / skate 9,795 / appell 6,280 Ir (2.6x / 3.9x / 3.8x fewer) |
| HDF5 output uncompressed by default (`output.compression`, opt-in deflate); outputs stored trajectory-major by the CPU kernels (the file's order: no transposition), the CUDA path's transposition blocked and threaded (it wrote one cache line per element before) | kernels/ensemble.hpp, host/run/runner.cpp, host/config/config.cpp | output 30 MB/s (shuffle + deflate 1, fixed); without deflate, with the old transposition, 480 MB/s | about 2 GB/s (section 6) |

The AD and stage-sum changes keep the arithmetic: the jet applies the same
product, quotient and chain rules (only the order in which some
second-derivative terms are summed differs), and the stage sums are formed in
the same order. The full test suite (closed forms, conservation laws,
formulations against each other, bitwise determinism across threads and slice
sizes) passes unchanged.
"""


if __name__ == "__main__":
    sys.exit(main())
