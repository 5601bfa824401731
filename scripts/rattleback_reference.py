#!/usr/bin/env python3
"""The rattleback, derived independently of nholo: Newton-Euler equations.

A rigid body of mass m rolls without slipping on the horizontal plane z = 0
under gravity g. Its bottom is the paraboloid

    z_b = -h + x_b^2 / (2 R1) + y_b^2 / (2 R2)

in the body frame (origin at the centre of mass, x_b, y_b the curvature axes,
z_b up when the body rests upright; h is the height of the centre of mass
above the lowest point). The principal axes of inertia (moments I1, I2, I3)
are turned by the skew angle delta about z_b from the curvature axes. This
misalignment couples spinning to rocking and pitching: the body spun one way
keeps its spin, spun the other way it starts to rock and reverses its spin
(Walker 1896; Bondi 1986; Garcia and Hubbard 1988; docs/references.md).

The coordinates are nholo's example's (examples/models/rattleback.model.toml):
the centre of mass (x, y, z) and the Tait-Bryan angles psi (heading, about
the vertical), theta (pitch), phi (roll), R = Rz(psi) Ry(theta) Rx(phi).
This script does not use that file's Lagrangian: it integrates

    m a = F - m g e_z                         (centre of mass, world frame)
    I w' + w x I w = r_c x (R^T F)            (Euler, body frame)
    a + R (w' x r_c + w x (w x r_c) + w x r_c') = 0   (rolling, differentiated)

for the acceleration a, the body rates' derivative w' and the contact force
F (a linear system of 9 equations per evaluation), with the contact point r_c
of the paraboloid whose normal is vertical: for the world's up direction in
body components g = R^T e_z, r_c = (-R1 g1/g3, -R2 g2/g3, -h + R1 g1^2/(2 g3^2)
+ R2 g2^2/(2 g3^2)); its rate r_c' = (d r_c/d g) (g x w) is differentiated by
sympy. The angles follow from w by the kinematic relation of the angles. The
integration is scipy's DOP853 at rtol = atol = 1e-12 (default; --rtol,
--atol).

Run it to print the reference table of the test
(tests/test_model_file_rattleback.cpp, made at rtol 1e-13, atol 1e-14), write
the test's initial states as a state file, or print the spin over time:

    python3 scripts/rattleback_reference.py --table --rtol 1e-13 --atol 1e-14
    python3 scripts/rattleback_reference.py --state-file out/states.txt
    python3 scripts/rattleback_reference.py --spin -3 3 --t-end 20
"""
import argparse
import sys

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

# the default parameters (those of examples/models/rattleback.model.toml)
DEFAULTS = {
    "m": 1.0,  # kg
    "g": 9.81,  # m/s^2
    "I1": 2.0e-4,  # kg m^2, principal moment about the first (long) principal axis
    "I2": 1.6e-3,  # kg m^2, about the second
    "I3": 1.7e-3,  # kg m^2, about the body's vertical
    "delta": 0.02,  # rad, skew of the principal axes from the curvature axes
    "R1": 0.5,  # m, radius of curvature of the bottom along x_b
    "R2": 0.03,  # m, radius of curvature along y_b
    "h": 0.01,  # m, height of the centre of mass above the lowest point
}

COORDINATES = ["x", "y", "z", "psi", "theta", "phi"]


def inertia_tensor(p):
    """The inertia tensor in the curvature frame: principal axes turned by delta about z_b."""
    c, s = np.cos(p["delta"]), np.sin(p["delta"])
    turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return turn @ np.diag([p["I1"], p["I2"], p["I3"]]) @ turn.T


def rotation(psi, theta, phi):
    """R = Rz(psi) Ry(theta) Rx(phi): body components to world components."""
    cps, sps, cth, sth, cph, sph = np.cos(psi), np.sin(psi), np.cos(theta), np.sin(theta), np.cos(phi), np.sin(phi)
    rz = np.array([[cps, -sps, 0], [sps, cps, 0], [0, 0, 1.0]])
    ry = np.array([[cth, 0, sth], [0, 1.0, 0], [-sth, 0, cth]])
    rx = np.array([[1.0, 0, 0], [0, cph, -sph], [0, sph, cph]])
    return rz @ ry @ rx


def _contact_functions():
    """r_c(g) and d r_c / d g for the paraboloid, by sympy."""
    g1, g2, g3, r1, r2, h = sp.symbols("g1 g2 g3 R1 R2 h")
    # the point of z_b = -h + x^2/(2 R1) + y^2/(2 R2) whose outward normal
    # (x/R1, y/R2, -1) points along -g
    xc, yc = -r1 * g1 / g3, -r2 * g2 / g3
    rc = sp.Matrix([xc, yc, -h + xc**2 / (2 * r1) + yc**2 / (2 * r2)])
    normal = sp.Matrix([xc / r1, yc / r2, -1])
    assert sp.simplify(normal.cross(sp.Matrix([g1, g2, g3])) * g3 - sp.zeros(3, 1)) == sp.zeros(3, 1)
    jac = rc.jacobian(sp.Matrix([g1, g2, g3]))
    args = (g1, g2, g3, r1, r2, h)
    return sp.lambdify(args, rc, "numpy"), sp.lambdify(args, jac, "numpy")


CONTACT, CONTACT_JACOBIAN = _contact_functions()


def contact_point(gb, p):
    return np.asarray(CONTACT(gb[0], gb[1], gb[2], p["R1"], p["R2"], p["h"]), dtype=float).reshape(3)


def euler_rates(theta, phi, w):
    """(psi', theta', phi') from the body rates w = (w1, w2, w3)."""
    cth, sth, cph, sph = np.cos(theta), np.sin(theta), np.cos(phi), np.sin(phi)
    psi_d = (w[1] * sph + w[2] * cph) / cth
    return np.array([psi_d, w[1] * cph - w[2] * sph, w[0] + psi_d * sth])


def body_rates(theta, phi, rates):
    """w = (w1, w2, w3) from the angles' rates (psi', theta', phi')."""
    psi_d, theta_d, phi_d = rates
    cth, sth, cph, sph = np.cos(theta), np.sin(theta), np.cos(phi), np.sin(phi)
    return np.array([phi_d - psi_d * sth, theta_d * cph + psi_d * cth * sph, -theta_d * sph + psi_d * cth * cph])


def newton_euler(t, y, p, inertia):
    """State (x, y, z, psi, theta, phi, vx, vy, vz, w1, w2, w3) -> its derivative."""
    psi, theta, phi = y[3:6]
    v, w = y[6:9], y[9:12]
    rot = rotation(psi, theta, phi)
    gb = rot[2, :]  # R^T e_z
    rc = contact_point(gb, p)
    gb_dot = np.cross(gb, w)
    jac = np.asarray(CONTACT_JACOBIAN(gb[0], gb[1], gb[2], p["R1"], p["R2"], p["h"]), dtype=float)
    rc_dot = jac @ gb_dot
    m = p["m"]
    # unknowns u = (a, w', F); rows: Newton, Euler, rolling
    sys9 = np.zeros((9, 9))
    rhs9 = np.zeros(9)
    sys9[0:3, 0:3] = m * np.eye(3)
    sys9[0:3, 6:9] = -np.eye(3)
    rhs9[0:3] = [0.0, 0.0, -m * p["g"]]
    skew_rc = np.array([[0, -rc[2], rc[1]], [rc[2], 0, -rc[0]], [-rc[1], rc[0], 0]])
    sys9[3:6, 3:6] = inertia
    sys9[3:6, 6:9] = -skew_rc @ rot.T
    rhs9[3:6] = -np.cross(w, inertia @ w)
    sys9[6:9, 0:3] = np.eye(3)
    sys9[6:9, 3:6] = -rot @ skew_rc  # R (w' x r_c) = -R [r_c]x w'
    rhs9[6:9] = -rot @ (np.cross(w, np.cross(w, rc)) + np.cross(w, rc_dot))
    u = np.linalg.solve(sys9, rhs9)
    return np.concatenate([v, euler_rates(theta, phi, w), u[0:3], u[3:6]])


def consistent_state(x, y, psi, theta, phi, psi_d, theta_d, phi_d, p):
    """The full state (q, q_dot) touching the plane and rolling: z and the centre's velocity follow."""
    rot = rotation(psi, theta, phi)
    rc = contact_point(rot[2, :], p)
    z = -(rot @ rc)[2]
    w = body_rates(theta, phi, (psi_d, theta_d, phi_d))
    v = -rot @ np.cross(w, rc)
    return np.array([x, y, z, psi, theta, phi]), np.array([v[0], v[1], v[2], psi_d, theta_d, phi_d])


def energy(y, p, inertia):
    v, w = y[6:9], y[9:12]
    return 0.5 * p["m"] * v @ v + 0.5 * w @ inertia @ w + p["m"] * p["g"] * y[2]


def integrate(q0, qd0, t_save, p=None, rtol=1e-12, atol=1e-12):
    """q and q_dot at the times t_save, from the state (q0, qd0); also the largest rolling residual."""
    p = dict(DEFAULTS, **(p or {}))
    inertia = inertia_tensor(p)
    y0 = np.concatenate([q0, qd0[0:3], body_rates(q0[4], q0[5], qd0[3:6])])
    sol = solve_ivp(newton_euler, (0.0, t_save[-1]), y0, method="DOP853", t_eval=t_save, rtol=rtol, atol=atol,
                    args=(p, inertia))
    if not sol.success:
        raise RuntimeError(sol.message)
    q = sol.y[0:6].T
    qd = np.array([np.concatenate([s[6:9], euler_rates(s[4], s[5], s[9:12])]) for s in sol.y.T])
    e = np.array([energy(s, p, inertia) for s in sol.y.T])
    residual = 0.0
    for s in sol.y.T:
        rot = rotation(*s[3:6])
        rc = contact_point(rot[2, :], p)
        residual = max(residual, abs(s[2] + (rot @ rc)[2]), np.max(np.abs(s[6:9] + rot @ np.cross(s[9:12], rc))))
    return q, qd, e, residual


# The test's initial states: (x, y, psi, theta, phi, psi', theta', phi')
TEST_STATES = [
    (0.0, 0.0, 0.0, 0.01, 0.01, -3.0, 0.0, 0.0),  # spun the unstable way, slightly tilted
    (0.0, 0.0, 0.3, 0.02, -0.01, 3.0, 0.0, 0.0),  # spun the steady way, tilted
    (0.1, -0.2, 1.0, 0.05, 0.04, -1.5, 0.3, -0.5),  # rocking and spinning
]
TEST_SAVES = [0.5, 1.0, 2.0]


def print_table(rtol, atol):
    """The reference values of tests/test_model_file_rattleback.cpp."""
    p = dict(DEFAULTS)
    for k, st in enumerate(TEST_STATES):
        q0, qd0 = consistent_state(*st, p)
        q, qd, e, res = integrate(q0, qd0, np.array([0.0] + TEST_SAVES), rtol=rtol, atol=atol)
        print(f"// state {k}: q0 = {{{', '.join(f'{v:.17g}' for v in q0)}}}")
        print(f"//          qd0 = {{{', '.join(f'{v:.17g}' for v in qd0)}}}")
        for i, t in enumerate(TEST_SAVES):
            print(f"//   t = {t}: q = {{{', '.join(f'{v:.17g}' for v in q[i + 1])}}}")
        print(f"//   energy drift {np.max(np.abs(e - e[0])) / abs(e[0]):.2e}, rolling residual {res:.2e}")


def write_state_file(path, states):
    p = dict(DEFAULTS)
    with open(path, "w") as f:
        f.write(" ".join([f"q0.{c}" for c in COORDINATES] + [f"qd0.{c}" for c in COORDINATES]) + "\n")
        for st in states:
            q0, qd0 = consistent_state(*st, p)
            f.write(" ".join(f"{v:.17g}" for v in np.concatenate([q0, qd0])) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", action="store_true", help="print the test's reference values")
    ap.add_argument("--state-file", help="write the test's initial states as an nholo state file")
    ap.add_argument("--spin", type=float, nargs="*", help="print psi' over time for these initial spins")
    ap.add_argument("--t-end", type=float, default=20.0)
    ap.add_argument("--rtol", type=float, default=1e-12, help="DOP853's relative tolerance")
    ap.add_argument("--atol", type=float, default=1e-12, help="DOP853's absolute tolerance")
    args = ap.parse_args(argv)
    if args.table:
        print_table(args.rtol, args.atol)
    if args.state_file:
        write_state_file(args.state_file, TEST_STATES)
    for spin in args.spin or []:
        q0, qd0 = consistent_state(0, 0, 0, 0.01, 0.01, spin, 0, 0, DEFAULTS)
        ts = np.linspace(0, args.t_end, 41)
        q, qd, e, res = integrate(q0, qd0, ts, rtol=args.rtol, atol=args.atol)
        print(f"spin {spin}: psi' =", " ".join(f"{v:.2f}" for v in qd[:, 3]))
        print(f"   energy drift {np.max(np.abs(e - e[0])) / abs(e[0]):.2e}, residual {res:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
