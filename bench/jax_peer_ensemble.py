#!/usr/bin/env python3
"""The JAX + diffrax peer of an nholo rolling-coin run, on the same ensemble
and the same device JAX finds (a GPU when jaxlib has CUDA), timed end to end.

    python3 bench/jax_peer_ensemble.py RESULT.h5 [--formulation F] [--rtol R] [--atol A]

RESULT.h5 is an nholo result file of model rolling_coin: its initial states
(/initial/q0, /initial/qdot0), parameters (root attributes param_*), save times
and, when the file has them, the trajectories q of formulation F (default
udwadia_kalaba). The peer is what a user of JAX would write: the coin's
Lagrangian terms (M = diag(m, m, m R^2/2, m R^2/4), F = (0, m g sin(alpha), 0, 0)),
the rolling constraints A(q) qd = 0 differentiated once (A qdd = b,
b = -(dA/dt) qd), the fundamental equation qdd = a + M^-1 A^T (A M^-1 A^T)^-1 (b - A a),
a = M^-1 F, with jnp.linalg.solve; diffrax Dopri5 with a PID controller at
the run's rtol/atol (or the ones given), float64, jit(vmap(...)) over the
ensemble, saving at the run's save times. Compile time is measured apart
(ahead-of-time lower/compile) and excluded from the run time; the states
come back to the host (as nholo's file does). Prints one JSON object: the
times, the device, and the largest difference from nholo's q relative to
1 + |q| (when the file has q). Exit 2 when jax or diffrax is missing.
"""
import argparse
import json
import sys
import time

try:
    import h5py
    import numpy as np
    import jax
    import jax.numpy as jnp
    import diffrax
except ImportError as e:  # the peer needs them; nholo does not
    print(f"jax_peer_ensemble: skipped: {e}", file=sys.stderr)
    sys.exit(2)

jax.config.update("jax_enable_x64", True)


def coin_rhs(p):
    m, R, g, alpha = p["mass"], p["radius"], p["g"], p["slope"]
    minv = jnp.array([1 / m, 1 / m, 2 / (m * R * R), 4 / (m * R * R)])
    a = jnp.array([0.0, g * jnp.sin(alpha), 0.0, 0.0])  # M^-1 F

    def rhs(t, y, args):
        q, qd = y[:4], y[4:]
        th = q[3]
        s, c = jnp.sin(th), jnp.cos(th)
        A = jnp.array([[1.0, 0.0, -R * s, 0.0], [0.0, 1.0, -R * c, 0.0]])
        # d/dt of the constraints: A qdd - b = 0, b = R phid thd (cos, -sin)
        b = R * qd[2] * qd[3] * jnp.array([c, -s])
        K = (A * minv) @ A.T
        lam = jnp.linalg.solve(K, b - A @ a)
        qdd = a + minv * (A.T @ lam)
        return jnp.concatenate([qd, qdd])

    return rhs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("result")
    ap.add_argument("--formulation", default="udwadia_kalaba")
    ap.add_argument("--rtol", type=float)
    ap.add_argument("--atol", type=float)
    a = ap.parse_args()
    with h5py.File(a.result, "r") as f:
        if f.attrs["model"] != "rolling_coin":
            print(f"jax_peer_ensemble: {a.result} is model {f.attrs['model']}, not rolling_coin",
                  file=sys.stderr)
            sys.exit(2)
        p = {k: float(f.attrs["param_" + k]) for k in ("mass", "radius", "g", "slope")}
        q0 = f["initial/q0"][:]
        qd0 = f["initial/qdot0"][:]
        ts = f[a.formulation + "/time"][:]
        t0 = float(f.attrs["integrator_t_start"]) if "integrator_t_start" in f.attrs else 0.0
        rtol = a.rtol or float(f.attrs["integrator_rtol"])
        atol = a.atol or float(f.attrs["integrator_atol"])
        q_nholo = f[a.formulation + "/q"] if a.formulation + "/q" in f else None
        q_nholo = q_nholo[:] if q_nholo is not None else None
    y0 = jnp.asarray(np.concatenate([q0, qd0], axis=1))
    term = diffrax.ODETerm(coin_rhs(p))
    ctrl = diffrax.PIDController(rtol=rtol, atol=atol)
    saveat = diffrax.SaveAt(ts=jnp.asarray(ts))

    def one(y):
        sol = diffrax.diffeqsolve(term, diffrax.Dopri5(), t0, float(ts[-1]), 1e-3, y,
                                  saveat=saveat, stepsize_controller=ctrl, max_steps=10_000_000)
        return sol.ys[:, :4], sol.stats["num_accepted_steps"]

    c0 = time.perf_counter()
    compiled = jax.jit(jax.vmap(one)).lower(y0).compile()
    compile_s = time.perf_counter() - c0
    r0 = time.perf_counter()
    ys, steps = compiled(y0)
    ys = np.asarray(ys)  # to the host, as nholo's results reach its file
    steps = np.asarray(steps)
    run_s = time.perf_counter() - r0
    out = {"peer": "jax_diffrax", "device": str(jax.devices()[0]), "trajectories": int(y0.shape[0]),
           "saves": int(len(ts)), "rtol": rtol, "atol": atol, "compile_seconds": compile_s,
           "run_seconds": run_s, "steps": int(steps.sum()),
           "trajectory_steps_per_second": float(steps.sum() / run_s)}
    if q_nholo is not None:
        qn = q_nholo.reshape(ys.shape)
        out["max_rel_difference_from_nholo"] = float(np.nanmax(np.abs(ys - qn) / (1 + np.abs(qn))))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
