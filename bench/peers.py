#!/usr/bin/env python3
"""Peers: what a user would write instead of nholo for the rolling coin, at
equal accuracy, on one core.

    python3 bench/peers.py DUMP.json [--peers jax,sympy] [--count K] [--jax-count J]

DUMP.json is written by `bench_ensemble --system coin --dump` (the ensemble's
initial states, nholo's end states, the reference end states of the closed
form with DOP853 at rtol 1e-13, nholo's time per trajectory on one thread).

  jax_diffrax   the Lagrangian and the rolling constraints of models/rolling_coin.hpp
                written in jax.numpy; M = d2L/dqd2, F = dL/dq - (d2L/dqd dq) qd,
                A = dg/dqd, b = -(dg/dq) qd by jax AD; the fundamental equation
                qdd = a + M^-1 A^T (A M^-1 A^T)^-1 (b - A a), a = M^-1 F (linear
                solves); diffrax Dopri5 with a PID controller, float64,
                jit(vmap(...)) over the ensemble; compile time excluded (reported)
  sympy_dop853  the same Lagrangian and constraints in sympy, M, F, A, b
                differentiated symbolically, the fundamental equation solved
                symbolically and simplified (the closed form a person would
                derive), lambdified to numpy scalars; scipy solve_ivp DOP853,
                one trajectory after the other; derivation time reported

  nholo         (--nholo BINARY) nholo itself through `nholo run`, on the dump's
                trajectories repeated to --nholo-size, one thread, for each
                backend.simd setting this CPU offers (off, avx2, avx512:
                bench/simd_lanes.py's choice), interleaved --nholo-repeat times,
                the median of compute_seconds / trajectories; its end states
                against the reference on the dump's trajectories. The peers'
                ratios to each setting are printed with them.

Equal accuracy: each peer starts at nholo's rtol/atol and its tolerances are
scaled (rtol and atol together) until the largest end-state error against the
reference, relative to 1 + |y|, is within 2x of nholo's on the same
trajectories (at most 6 tries on the first trajectories, then the timed run on
all). A peer whose packages are missing is skipped with the reason printed.
Prints one JSON object per peer on stdout.
"""
import argparse
import json
import math
import os
import sys
import time

# one core for every peer: XLA's own thread pools and BLAS
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np

COIN = dict(mass=1.0, radius=0.5, g=9.81, slope=0.3)  # bench_systems.hpp coin_params()


def rel_err(y, ref):
    y, ref = np.asarray(y), np.asarray(ref)
    return float(np.max(np.abs(y - ref) / (1.0 + np.abs(ref))))


def nholo_error(trajs):
    return max(rel_err(tr["y_nholo"], tr["y_ref"]) for tr in trajs)


def match_accuracy(run, trajs_probe, target, rtol0, atol0, log):
    """Scale rtol, atol until the error of `run` is within 2x of target."""
    scale = 1.0
    err = None
    for _ in range(6):
        rtol, atol = rtol0 * scale, atol0 * scale
        ys = run(trajs_probe, rtol, atol)
        err = max(rel_err(y, tr["y_ref"]) for y, tr in zip(ys, trajs_probe))
        log(f"  rtol {rtol:.3g} atol {atol:.3g}: error {err:.3g} (nholo {target:.3g})")
        if target / 2.0 <= err <= 2.0 * target:
            return rtol, atol, err
        # error ~ tol^(p/(p+1)) for an order-p pair: tol ~ err^((p+1)/p), p = 5
        scale *= (target / err) ** 1.2 if err > 0 else 10.0
    return rtol, atol, err


# ---------------------------------------------------------------- jax + diffrax
def jax_peer(d, trajs, probe, log):
    try:
        import jax
        import jax.numpy as jnp
        import diffrax
    except ImportError as e:  # noqa: F841
        return None, f"jax/diffrax not importable ({e}); install with pip install jax diffrax"
    jax.config.update("jax_enable_x64", True)
    p = COIN
    m, R, g, al = p["mass"], p["radius"], p["g"], p["slope"]
    n = 4

    def lagrangian(q, qd):
        return (0.5 * m * (qd[0] ** 2 + qd[1] ** 2) + 0.25 * m * R * R * qd[2] ** 2
                + 0.125 * m * R * R * qd[3] ** 2 + m * g * jnp.sin(al) * q[1])

    def constraints(q, qd):
        return jnp.array([qd[0] - R * qd[2] * jnp.sin(q[3]), qd[1] - R * qd[2] * jnp.cos(q[3])])

    dL_dqd = jax.grad(lagrangian, argnums=1)
    M_of = jax.jacfwd(dL_dqd, argnums=1)
    Lq_of = jax.grad(lagrangian, argnums=0)
    Lqdq_of = jax.jacfwd(dL_dqd, argnums=0)
    A_of = jax.jacfwd(constraints, argnums=1)
    gq_of = jax.jacfwd(constraints, argnums=0)

    def rhs(t, y, args):
        q, qd = y[:n], y[n:]
        M = M_of(q, qd)
        F = Lq_of(q, qd) - Lqdq_of(q, qd) @ qd
        A = A_of(q, qd)
        b = -gq_of(q, qd) @ qd
        a = jnp.linalg.solve(M, F)
        MinvAt = jnp.linalg.solve(M, A.T)
        K = A @ MinvAt
        qdd = a + MinvAt @ jnp.linalg.solve(K, b - A @ a)
        return jnp.concatenate([qd, qdd])

    t_end, saves = d["t_end"], d["saves"]
    ts = jnp.array([t_end * (k + 1) / saves for k in range(saves)])
    term = diffrax.ODETerm(rhs)
    solver = diffrax.Dopri5()
    compiled = {}

    def solver_for(rtol, atol):
        key = (rtol, atol)
        if key not in compiled:
            ctrl = diffrax.PIDController(rtol=rtol, atol=atol)

            def one(y0):
                sol = diffrax.diffeqsolve(term, solver, t0=0.0, t1=t_end, dt0=1e-3, y0=y0,
                                          saveat=diffrax.SaveAt(ts=ts), stepsize_controller=ctrl,
                                          max_steps=1_000_000)
                return sol.ys[-1], sol.stats["num_steps"]

            f = jax.jit(jax.vmap(one))
            compiled[key] = f
        return compiled[key]

    def run(tr_list, rtol, atol):
        f = solver_for(rtol, atol)
        y0 = jnp.array([tr["y0"] for tr in tr_list])
        ys, _ = f(y0)
        return np.asarray(ys)

    target = nholo_error(probe)
    rtol, atol, err_probe = match_accuracy(run, probe, target, d["rtol"], d["atol"], log)
    f = solver_for(rtol, atol)
    y0 = jnp.array([tr["y0"] for tr in trajs])
    t0 = time.perf_counter()
    ys, steps = f(y0)  # first call on this shape: compiles
    jax.block_until_ready(ys)
    compile_s = time.perf_counter() - t0
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        ys, steps = f(y0)
        jax.block_until_ready(ys)
        best = min(best, time.perf_counter() - t0)
    ys = np.asarray(ys)
    err = max(rel_err(y, tr["y_ref"]) for y, tr in zip(ys, trajs))
    return dict(impl="jax_diffrax", version=f"jax {jax.__version__}, diffrax {diffrax.__version__}",
                rtol=rtol, atol=atol, seconds=best, compile_seconds=compile_s,
                ns_per_traj=best / len(trajs) * 1e9, steps_per_traj=float(np.mean(np.asarray(steps))),
                err_ref=err, err_nholo=nholo_error(trajs)), None


# ---------------------------------------------------------------- sympy + scipy
def sympy_peer(d, trajs, probe, log):
    try:
        import sympy as sp
        from scipy.integrate import solve_ivp
    except ImportError as e:
        return None, f"sympy/scipy not importable ({e}); install with pip install sympy scipy"
    p = COIN
    m, R, g, al = p["mass"], p["radius"], p["g"], p["slope"]
    t0 = time.perf_counter()
    q = sp.symbols("x y phi theta")
    qd = sp.symbols("xd yd phid thetad")
    L = (sp.Rational(1, 2) * m * (qd[0] ** 2 + qd[1] ** 2) + sp.Rational(1, 4) * m * R * R * qd[2] ** 2
         + sp.Rational(1, 8) * m * R * R * qd[3] ** 2 + m * g * sp.sin(al) * q[1])
    gcon = sp.Matrix([qd[0] - R * qd[2] * sp.sin(q[3]), qd[1] - R * qd[2] * sp.cos(q[3])])
    n = 4
    M = sp.Matrix(n, n, lambda i, j: sp.diff(L, qd[i], qd[j]))
    F = sp.Matrix([sp.diff(L, q[i]) - sum(sp.diff(L, qd[i], q[j]) * qd[j] for j in range(n))
                   for i in range(n)])
    A = gcon.jacobian(qd)
    b = -(gcon.jacobian(q) * sp.Matrix(qd))
    Minv = M.inv()
    a = Minv * F
    K = A * Minv * A.T
    qdd = sp.simplify(a + Minv * A.T * K.inv() * (b - A * a))
    f = sp.lambdify([q, qd], list(qdd), modules="math")
    derive_s = time.perf_counter() - t0

    def rhs(t, y):
        return [y[4], y[5], y[6], y[7], *f(y[:4], y[4:])]

    t_end, saves = d["t_end"], d["saves"]
    t_eval = [t_end * (k + 1) / saves for k in range(saves)]

    def run(tr_list, rtol, atol):
        out = []
        for tr in tr_list:
            sol = solve_ivp(rhs, (0.0, t_end), tr["y0"], method="DOP853", t_eval=t_eval,
                            rtol=rtol, atol=atol)
            out.append(sol.y[:, -1])
        return out

    target = nholo_error(probe)
    rtol, atol, _ = match_accuracy(run, probe, target, d["rtol"], d["atol"], log)
    t0 = time.perf_counter()
    ys = run(trajs, rtol, atol)
    secs = time.perf_counter() - t0
    err = max(rel_err(y, tr["y_ref"]) for y, tr in zip(ys, trajs))
    return dict(impl="sympy_dop853", version=f"sympy {sp.__version__}", rtol=rtol, atol=atol,
                seconds=secs, derive_seconds=derive_s, ns_per_traj=secs / len(trajs) * 1e9,
                err_ref=err, err_nholo=nholo_error(trajs)), None


def nholo_runs(d, trajs, binary, size, repeat, log):
    """{setting: (ns per trajectory, error vs reference)} of `nholo run` on the
    dump's coins (t_end, rtol, atol and saves of the dump), one thread."""
    import statistics
    import subprocess
    import tempfile

    import h5py

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from simd_lanes import settings  # the SIMD settings this CPU offers

    names = ["x", "y", "phi", "theta"]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "states.csv"), "w") as fh:
            fh.write(" ".join([f"q0.{c}" for c in names] + [f"qd0.{c}" for c in names]) + "\n")
            for k in range(size):
                fh.write(" ".join(f"{v:.17g}" for v in trajs[k % len(trajs)]["y0"]) + "\n")
        t_end = d["t_end"]
        with open(os.path.join(tmp, "coins.toml"), "w") as fh:
            fh.write(f"""model = "rolling_coin"
formulations = ["udwadia_kalaba"]
[params]
mass = {COIN['mass']}
radius = {COIN['radius']}
g = {COIN['g']}
slope = {COIN['slope']}
[time]
t_end = {t_end!r}
save_every = {t_end / d['saves']!r}
[integrator]
method = "dopri5"
rtol = {d['rtol']!r}
atol = {d['atol']!r}
drift = "none"
[ensemble]
sampler = "file"
file = "states.csv"
[output]
path = "out.h5"
fields = ["q", "qdot"]
[backend]
threads = 1
""")
        out = os.path.join(tmp, "out.h5")
        times = {s: [] for s in settings()}
        errors = {}
        for r in range(repeat):
            for s in settings():
                if os.path.exists(out):
                    os.remove(out)
                subprocess.run([binary, "run", "-q", "coins.toml", "--set", f"backend.simd={s}"],
                               cwd=tmp, check=True)
                with h5py.File(out, "r") as f:
                    times[s].append(float(f.attrs["compute_seconds"]) / size)
                    q = f["udwadia_kalaba/q"][: len(trajs), -1, :]
                    qd = f["udwadia_kalaba/qdot"][: len(trajs), -1, :]
                errors[s] = max(rel_err(np.concatenate([q[i], qd[i]]), tr["y_ref"])
                                for i, tr in enumerate(trajs))
                log(f"peers: nholo simd={s} run {r + 1}: {times[s][-1] * 1e6:.1f} us/traj")
        return {s: (statistics.median(v) * 1e9, errors[s]) for s, v in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump")
    ap.add_argument("--peers", default="jax,sympy")
    ap.add_argument("--count", type=int, default=0, help="trajectories of the sympy peer (0: all)")
    ap.add_argument("--jax-count", type=int, default=0, help="trajectories of the jax peer (0: all)")
    ap.add_argument("--probe", type=int, default=8, help="trajectories for matching the accuracy")
    ap.add_argument("--nholo", default="", help="an nholo binary: time it too, every SIMD setting")
    ap.add_argument("--nholo-size", type=int, default=20000,
                    help="trajectories of each nholo run (the dump's, repeated)")
    ap.add_argument("--nholo-repeat", type=int, default=3)
    args = ap.parse_args()
    with open(args.dump) as fh:
        d = json.load(fh)
    if d["system"] != "coin":
        print(f"peers: the peers integrate the rolling coin, not {d['system']}", file=sys.stderr)
        return 2
    trajs = d["trajectories"]
    probe = trajs[: args.probe]
    nholo_ns = d["nholo_ad_ns_per_traj_1thread"]

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    lanes = {}
    if args.nholo:
        lanes = nholo_runs(d, trajs, os.path.abspath(args.nholo), args.nholo_size,
                           args.nholo_repeat, log)
        for s, (ns, err) in lanes.items():
            print(json.dumps({"system": "coin", "impl": f"nholo_run_simd_{s}", "n": args.nholo_size,
                              "threads": 1, "ns_per_traj": ns, "err_ref": err}), flush=True)

    for name in args.peers.split(","):
        if name == "jax":
            sel = trajs[: args.jax_count] if args.jax_count > 0 else trajs
            log(f"peers: jax + diffrax, {len(sel)} trajectories")
            r, why = jax_peer(d, sel, probe, log)
        elif name == "sympy":
            sel = trajs[: args.count] if args.count > 0 else trajs
            log(f"peers: sympy + scipy DOP853, {len(sel)} trajectories")
            r, why = sympy_peer(d, sel, probe, log)
        else:
            print(f"peers: unknown peer {name} (jax, sympy)", file=sys.stderr)
            return 2
        if r is None:
            print(f"peers: SKIPPED {name}: {why}", file=sys.stderr)
            impl = {"jax": "jax_diffrax", "sympy": "sympy_dop853"}[name]
            print(json.dumps({"system": "coin", "impl": impl, "skipped": why}), flush=True)
            continue
        r.update(system="coin", n=len(sel), threads=1,
                 nholo_ad_ns_per_traj_1thread=nholo_ns,
                 ratio_to_nholo_ad_1thread=r["ns_per_traj"] / nholo_ns)
        for s, (ns, _) in lanes.items():
            r[f"ratio_to_nholo_run_simd_{s}"] = r["ns_per_traj"] / ns
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
