#!/usr/bin/env python3
"""Baseline 4: scipy.integrate.solve_ivp per trajectory, numpy pinv in the RHS.

    python3 bench/scipy_baseline.py DUMP.json [--methods RK45,DOP853] [--count K]

DUMP.json is written by `bench_ensemble --dump` (bench/bench_ensemble.cpp):
the system, tolerances, save times, the initial states of the first
trajectories, nholo's end states and the reference end states (closed form,
DOP853 at rtol 1e-13). Each trajectory is integrated with solve_ivp at the same
rtol/atol, saving at the same times (t_eval), with the right-hand side written
the way a numpy user writes the fundamental equation (Udwadia & Wanichanon
(2010) eq 2.6 with the nonideal term of Udwadia (2005)):

    a = M^-1 F,  c = M^-1 C,  K = A M^-1 A^T,
    qdd = a + c + M^-1 A^T pinv(K) (b - A (a + c))

with the same hand-written M, F, A, b, C as bench/bench_systems.hpp (Hand<>).
Prints one JSON object per method on stdout: seconds per trajectory, RHS
evaluations per trajectory and per second, the largest deviation of the end
states from the reference and from nholo ("agree": both below 1e-6, relative
to 1 + |y|), and the ratio to nholo's single-thread time per trajectory.
"""
import argparse
import json
import math
import sys
import time

import numpy as np
from scipy.integrate import solve_ivp

# Parameters as in bench_systems.hpp
COIN = dict(mass=1.0, radius=0.5, g=9.81, slope=0.3)
SKATE = dict(mass=1.0, offset=0.5, inertia=0.8, g=9.81, slope=0.3)
APPELL = dict(alpha=0.0, drag=0.2, fx=0.0, fy=0.0, fz=-9.81, g_amp=1.0, g_freq=1.0)


def coin_terms(q, qd, t):
    p = COIN
    R, m = p["radius"], p["mass"]
    s, c = math.sin(q[3]), math.cos(q[3])
    M = np.diag([m, m, 0.5 * m * R * R, 0.25 * m * R * R])
    F = np.array([0.0, m * p["g"] * math.sin(p["slope"]), 0.0, 0.0])
    A = np.array([[1.0, 0.0, -R * s, 0.0], [0.0, 1.0, -R * c, 0.0]])
    b = np.array([R * qd[2] * qd[3] * c, -R * qd[2] * qd[3] * s])
    C = np.zeros(4)
    return M, F, A, b, C


def skate_terms(q, qd, t):
    p = SKATE
    m, so, I = p["mass"], p["offset"], p["inertia"]
    s, c = math.sin(q[2]), math.cos(q[2])
    gs = p["g"] * math.sin(p["slope"])
    ms = m * so
    M = np.array([[m, 0.0, -ms * s], [0.0, m, ms * c], [-ms * s, ms * c, I]])
    F = np.array([m * gs + ms * qd[2] ** 2 * c, ms * qd[2] ** 2 * s, -ms * gs * s])
    A = np.array([[-s, c, 0.0]])
    b = np.array([qd[2] * (qd[0] * c + qd[1] * s)])
    C = np.zeros(3)
    return M, F, A, b, C


def appell_terms(q, qd, t):
    p = APPELL
    M = np.eye(3)
    F = np.array([p["fx"], p["fy"], p["fz"]])
    A = np.array([[qd[0], qd[1], -qd[2]]])
    b = np.array([p["alpha"] * p["g_amp"] * p["g_freq"] * math.cos(p["g_freq"] * t)])
    u = math.sqrt(float(qd @ qd))
    C = -p["drag"] * u * qd if u > 0.0 else np.zeros(3)
    return M, F, A, b, C


TERMS = {"coin": (coin_terms, 4), "skate": (skate_terms, 3), "appell": (appell_terms, 3)}


def make_rhs(terms, n, counter):
    def rhs(t, y):
        counter[0] += 1
        q, qd = y[:n], y[n:]
        M, F, A, b, C = terms(q, qd, t)
        Minv = np.linalg.inv(M)
        a = Minv @ F
        c = Minv @ C
        MinvAt = Minv @ A.T
        K = A @ MinvAt
        qdd = a + c + MinvAt @ (np.linalg.pinv(K, rcond=1e-12) @ (b - A @ (a + c)))
        return np.concatenate([qd, qdd])

    return rhs


def rel_diff(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump")
    ap.add_argument("--methods", default="RK45,DOP853")
    ap.add_argument("--count", type=int, default=0, help="trajectories (0: all in the dump)")
    args = ap.parse_args()
    with open(args.dump) as f:
        d = json.load(f)
    terms, n = TERMS[d["system"]]
    trajs = d["trajectories"]
    if args.count > 0:
        trajs = trajs[: args.count]
    t_end, saves = d["t_end"], d["saves"]
    t_eval = [t_end * (k + 1) / saves for k in range(saves)]
    nholo_ns = d["nholo_ad_ns_per_traj_1thread"]
    ok_all = True
    for method in args.methods.split(","):
        counter = [0]
        rhs = make_rhs(terms, n, counter)
        err_ref = diff_nholo = 0.0
        t0 = time.perf_counter()
        for tr in trajs:
            sol = solve_ivp(rhs, (0.0, t_end), np.array(tr["y0"]), method=method,
                            t_eval=t_eval, rtol=d["rtol"], atol=d["atol"])
            if not sol.success:
                print(f"scipy_baseline: {method} failed: {sol.message}", file=sys.stderr)
                ok_all = False
            y_end = sol.y[:, -1]
            err_ref = max(err_ref, rel_diff(y_end, tr["y_ref"]))
            diff_nholo = max(diff_nholo, rel_diff(y_end, tr["y_nholo"]))
        seconds = time.perf_counter() - t0
        per_traj = seconds / len(trajs)
        agree = err_ref < 1e-6 and diff_nholo < 1e-6
        ok_all = ok_all and agree
        print(json.dumps({
            "system": d["system"], "impl": "scipy_" + method.lower(), "n": len(trajs), "threads": 1,
            "t_end": t_end, "saves": saves, "rtol": d["rtol"], "atol": d["atol"],
            "seconds": seconds, "ns_per_traj": per_traj * 1e9,
            "rhs_evals": counter[0], "rhs_per_s": counter[0] / seconds,
            "ns_per_rhs": seconds / counter[0] * 1e9,
            "err_ref": err_ref, "diff_nholo_ad": diff_nholo, "agree": agree,
            "ratio_to_nholo_ad_1thread": per_traj * 1e9 / nholo_ns,
        }), flush=True)
        if not agree:
            print(f"scipy_baseline: {d['system']} {method} DISAGREES: err_ref {err_ref:.3g}, "
                  f"diff to nholo {diff_nholo:.3g}", file=sys.stderr)
    return 0 if ok_all else 3


if __name__ == "__main__":
    sys.exit(main())
