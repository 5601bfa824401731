#!/usr/bin/env python3
"""Largest Lyapunov exponent of the Chaplygin sleigh with an oscillating internal
mass (examples/models/oscillating_sleigh.model.toml), computed from the reduced
body-frame equations alone -- an independent check of nholo's [lyapunov] result.

The system (derivation in the model file's header; Bizyaev, Borisov,
Mamaev, "The Chaplygin sleigh with parametric excitation: chaotic dynamics and
nonholonomic acceleration", Regul. Chaotic Dyn. 22(8) 2017, and Bizyaev,
Borisov, Kuznetsov, "The Chaplygin sleigh with friction moving due to periodic
oscillations of an internal mass", Nonlinear Dyn. 2019):

  platform mass m0, inertia I0 about its centre of mass, which lies a ahead of
  the knife edge's contact point B along the blade; a point mass m at the
  body-frame position (xi, eta(t)), eta = b + A sin(Omega t) (xi along the
  blade, eta to its left); viscous friction -k_u u along the blade at B and a
  moment -k_w omega. With u the forward speed of B and omega the angular speed,

    M u' - m eta omega'             = c omega^2 + 2 m eta' omega - k_u u
   -m eta u' + (J + m eta^2) omega' = -c u omega - 2 m eta eta' omega - m xi eta'' - k_w omega

  M = m0 + m, c = m0 a + m xi, J = I0 + m0 a^2 + m xi^2; the determinant
  M (J + m eta^2) - m^2 eta^2 = M J + m0 m eta^2 > 0.

The reduced system is two non-autonomous first-order equations; x, y and the
heading theta do not enter them (translation and rotation symmetry), so the
largest exponent of the full system is this one when it is positive.

Two estimates:
  default        Benettin: a reference and a neighbour at distance d0 (in the
                 (u, omega) plane), both integrated; every `renorm` time units
                 the neighbour is pulled back to distance d0 along the current
                 separation; lambda = sum of log(d_k / d0) / T.
  --variational  the linearised reduced equations integrated with the
                 trajectory (exact Jacobian), the tangent renormalised every
                 `renorm`; lambda = sum of log |delta_k| / T.
  --both         both, one after the other (two integrations: after some 100
                 time units their reference trajectories part by rounding, as
                 chaotic ones do, so the two then agree only statistically:
                 each finite-time exponent scatters by a few per cent at
                 t_end = 2000, about 1 % at 20000).
  --joint        both on one reference trajectory: reference, neighbour and
                 tangent integrated as one system; the two estimates then
                 differ only by the neighbour's nonlinearity (O(d0)) and the
                 error control, and agree to about 1e-6.
Integration: scipy solve_ivp, DOP853, rtol 1e-11, atol 1e-12 (options).

Example (the defaults are the model file's):
  python3 scripts/benettin_sleigh.py --u0 0.5 --omega0 0.3 --t-end 2000
  python3 scripts/benettin_sleigh.py --u0 0.5 --omega0 0.3 --t-end 2000 --variational
"""
import argparse
import math
import sys
import time

import numpy as np
from scipy.integrate import solve_ivp

# defaults: those of examples/models/oscillating_sleigh.model.toml
DEFAULTS = dict(m0=1.0, m=2.0, I0=0.3, a=1.0, xi=0.5, b=0.25, A=1.5, Omega=2.0, k_u=0.1, k_w=0.1)


class Sleigh:
    def __init__(self, p):
        self.p = p
        self.M = p["m0"] + p["m"]
        self.c = p["m0"] * p["a"] + p["m"] * p["xi"]
        self.J = p["I0"] + p["m0"] * p["a"] ** 2 + p["m"] * p["xi"] ** 2

    def _coeffs(self, t):
        p = self.p
        s, co = math.sin(p["Omega"] * t), math.cos(p["Omega"] * t)
        eta = p["b"] + p["A"] * s
        etad = p["A"] * p["Omega"] * co
        etadd = -p["A"] * p["Omega"] ** 2 * s
        a11 = self.J + p["m"] * eta * eta  # inverse of [[M, -m eta], [-m eta, J + m eta^2]]
        a12 = p["m"] * eta                 # times the determinant D
        D = self.M * a11 - a12 * a12
        return eta, etad, etadd, a11, a12, D

    def accel(self, t, u, w):
        p = self.p
        eta, etad, etadd, a11, a12, D = self._coeffs(t)
        r1 = self.c * w * w + 2 * p["m"] * etad * w - p["k_u"] * u
        r2 = -self.c * u * w - 2 * p["m"] * eta * etad * w - p["m"] * p["xi"] * etadd - p["k_w"] * w
        return (a11 * r1 + a12 * r2) / D, (a12 * r1 + self.M * r2) / D

    def rhs_pair(self, t, y):
        """Benettin: reference (y0, y1) and neighbour (y2, y3)."""
        ud, wd = self.accel(t, y[0], y[1])
        ud2, wd2 = self.accel(t, y[2], y[3])
        return [ud, wd, ud2, wd2]

    def rhs_joint(self, t, y):
        """Reference (y0, y1), neighbour (y2, y3), tangent (y4, y5)."""
        f = self.rhs_tangent(t, [y[0], y[1], y[4], y[5]])
        ud2, wd2 = self.accel(t, y[2], y[3])
        return [f[0], f[1], ud2, wd2, f[2], f[3]]

    def rhs_tangent(self, t, y):
        """Trajectory (y0, y1) and tangent (y2, y3) of the linearised equations."""
        p = self.p
        u, w, du, dw = y
        eta, etad, etadd, a11, a12, D = self._coeffs(t)
        r1 = self.c * w * w + 2 * p["m"] * etad * w - p["k_u"] * u
        r2 = -self.c * u * w - 2 * p["m"] * eta * etad * w - p["m"] * p["xi"] * etadd - p["k_w"] * w
        dr1 = -p["k_u"] * du + (2 * self.c * w + 2 * p["m"] * etad) * dw
        dr2 = -self.c * w * du + (-self.c * u - 2 * p["m"] * eta * etad - p["k_w"]) * dw
        return [(a11 * r1 + a12 * r2) / D, (a12 * r1 + self.M * r2) / D,
                (a11 * dr1 + a12 * dr2) / D, (a12 * dr1 + self.M * dr2) / D]


def _segments(t0, t_end, renorm):
    n = int(math.floor((t_end - t0) / renorm + 1e-9))
    edges = [t0 + k * renorm for k in range(n + 1)]
    if t_end - edges[-1] > 1e-12:
        edges.append(t_end)
    return edges


def _report_times(t0, t_end):
    marks = sorted({t_end} | {t0 + (t_end - t0) * f for f in (0.1, 0.25, 0.5)})
    return marks


def _renormalised_run(rhs, y, t0, t_end, renorm, rtol, atol, renormalise, report):
    """Integrates `rhs` from y at t0 to t_end (DOP853) in segments of `renorm`
    time units; after each segment the state is renormalise(state), and at
    each of _report_times, report(t, state) is called with the renormalised
    state."""
    edges = _segments(t0, t_end, renorm)
    marks = _report_times(t0, t_end)
    for ta, tb in zip(edges[:-1], edges[1:]):
        sol = solve_ivp(rhs, (ta, tb), y, method="DOP853", rtol=rtol, atol=atol)
        if not sol.success:
            raise RuntimeError(f"integration failed at t = {ta}: {sol.message}")
        y = renormalise(sol.y[:, -1].copy())
        while marks and tb >= marks[0] - 1e-9:
            report(tb, y)
            marks.pop(0)


def _unit(direction):
    v = np.asarray(direction, float)
    return v / np.linalg.norm(v)


def benettin(sys_, y0, t0, t_end, d0, renorm, rtol, atol, direction, verbose):
    ref = np.asarray(y0, float)
    log_sum = 0.0
    out = []

    def pull_back(y):
        """the neighbour (y2, y3) back to distance d0 from the reference (y0, y1)"""
        nonlocal log_sum
        sep = y[2:] - y[:2]
        d = float(np.hypot(sep[0], sep[1]))
        log_sum += math.log(d / d0)
        return np.r_[y[:2], y[:2] + sep * (d0 / d)]

    def report(tb, y):
        lam = log_sum / (tb - t0)
        out.append((tb, lam))
        if verbose:
            print(f"  benettin     t = {tb:10.1f}  lambda = {lam:.6f}  (u, omega) = ({y[0]: .4f}, {y[1]: .4f})")

    _renormalised_run(sys_.rhs_pair, np.r_[ref, ref + d0 * _unit(direction)], t0, t_end, renorm,
                      rtol, atol, pull_back, report)
    return log_sum / (t_end - t0), out


def variational(sys_, y0, t0, t_end, renorm, rtol, atol, direction, verbose):
    log_sum = 0.0
    out = []

    def unit_tangent(y):
        """the tangent (y2, y3) back to length 1"""
        nonlocal log_sum
        n = float(np.hypot(y[2], y[3]))
        log_sum += math.log(n)
        y[2:] /= n
        return y

    def report(tb, y):
        lam = log_sum / (tb - t0)
        out.append((tb, lam))
        if verbose:
            print(f"  variational  t = {tb:10.1f}  lambda = {lam:.6f}  (u, omega) = ({y[0]: .4f}, {y[1]: .4f})")

    _renormalised_run(sys_.rhs_tangent, np.r_[np.asarray(y0, float), _unit(direction)], t0, t_end,
                      renorm, rtol, atol, unit_tangent, report)
    return log_sum / (t_end - t0), out


def joint(sys_, y0, t0, t_end, d0, renorm, rtol, atol, direction, verbose):
    v = _unit(direction)
    ref = np.asarray(y0, float)
    sum_b = sum_v = 0.0
    out = []

    def renormalise_both(y):
        """the neighbour (y2, y3) back to distance d0, the tangent (y4, y5) to length 1"""
        nonlocal sum_b, sum_v
        sep = y[2:4] - y[:2]
        d = float(np.hypot(sep[0], sep[1]))
        sum_b += math.log(d / d0)
        y[2:4] = y[:2] + sep * (d0 / d)
        n = float(np.hypot(y[4], y[5]))
        sum_v += math.log(n)
        y[4:] /= n
        return y

    def report(tb, y):
        lb, lv = sum_b / (tb - t0), sum_v / (tb - t0)
        out.append((tb, lb, lv))
        if verbose:
            print(f"  joint        t = {tb:10.1f}  benettin = {lb:.6f}  variational = {lv:.6f}"
                  f"  relative difference = {abs(lb - lv) / abs(0.5 * (lb + lv)):.1e}")

    _renormalised_run(sys_.rhs_joint, np.r_[ref, ref + d0 * v, v], t0, t_end, renorm, rtol, atol,
                      renormalise_both, report)
    return sum_b / (t_end - t0), sum_v / (t_end - t0), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--u0", type=float, required=True, help="initial forward speed of the blade point B")
    ap.add_argument("--omega0", type=float, required=True, help="initial angular speed theta_dot")
    ap.add_argument("--t-end", type=float, required=True, help="end time (the average runs over [t0, t_end])")
    ap.add_argument("--t0", type=float, default=0.0, help="start time (the drive's phase is Omega t0; default 0, as nholo)")
    for k, v in DEFAULTS.items():
        ap.add_argument("--" + k.replace("_", "-"), dest=k, type=float, default=v, help=f"default {v}")
    ap.add_argument("--d0", type=float, default=1e-8, help="Benettin: initial separation (default 1e-8)")
    ap.add_argument("--renorm", type=float, default=1.0, help="time between renormalisations (default 1)")
    ap.add_argument("--rtol", type=float, default=1e-11)
    ap.add_argument("--atol", type=float, default=1e-12)
    ap.add_argument("--direction", type=float, nargs=2, default=(1.0, 1.0),
                    help="initial perturbation direction in (u, omega) (default 1 1)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--variational", action="store_true", help="integrate the linearised equations instead")
    g.add_argument("--both", action="store_true", help="Benettin and variational, two integrations, and their relative difference")
    g.add_argument("--joint", action="store_true", help="Benettin and variational on one reference trajectory (one integration)")
    ap.add_argument("-q", "--quiet", action="store_true", help="print only the final estimate(s)")
    a = ap.parse_args(argv)
    if not a.t_end > a.t0:
        ap.error("--t-end must be larger than --t0")
    p = {k: getattr(a, k) for k in DEFAULTS}
    if not (p["m0"] > 0 and p["m"] >= 0 and p["I0"] > 0):
        ap.error("need m0 > 0, m >= 0, I0 > 0")
    s = Sleigh(p)
    y0 = (a.u0, a.omega0)
    verbose = not a.quiet
    if verbose:
        print("parameters: " + ", ".join(f"{k}={v:g}" for k, v in p.items()))
        print(f"initial state: u0={a.u0:g}, omega0={a.omega0:g}, t in [{a.t0:g}, {a.t_end:g}], "
              f"renormalise every {a.renorm:g}, DOP853 rtol={a.rtol:g} atol={a.atol:g}")
    res = {}
    if a.joint:
        t1 = time.time()
        b, v, _ = joint(s, y0, a.t0, a.t_end, a.d0, a.renorm, a.rtol, a.atol, a.direction, verbose)
        print(f"joint: benettin (d0 = {a.d0:g}): lambda = {b:.6f}, variational: lambda = {v:.6f}, "
              f"relative difference {abs(b - v) / abs(0.5 * (b + v)):.1e}   [{time.time() - t1:.1f} s]")
        return 0
    if not a.variational:
        t1 = time.time()
        lam, _ = benettin(s, y0, a.t0, a.t_end, a.d0, a.renorm, a.rtol, a.atol, a.direction, verbose)
        res["benettin"] = lam
        print(f"benettin    (d0 = {a.d0:g}): lambda = {lam:.6f}   [{time.time() - t1:.1f} s]")
    if a.variational or a.both:
        t1 = time.time()
        lam, _ = variational(s, y0, a.t0, a.t_end, a.renorm, a.rtol, a.atol, a.direction, verbose)
        res["variational"] = lam
        print(f"variational              : lambda = {lam:.6f}   [{time.time() - t1:.1f} s]")
    if a.both:
        b, v = res["benettin"], res["variational"]
        print(f"relative difference      : {abs(b - v) / abs(0.5 * (b + v)):.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
