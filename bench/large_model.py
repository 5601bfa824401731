#!/usr/bin/env python3
"""Large model files of a realistic shape, for measuring the plugin's compile
time against the model's size (bench/model_compile_time.py).

    python3 bench/large_model.py BODIES OUT.model.toml [--no-energy]

A bicycle-like multibody system: 8 coordinates (x, y, yaw, roll, pitch,
steer and the two wheels' rotation angles), a rear frame and a front fork
(rotated by yaw, roll, pitch and, for the fork, steer) carrying BODIES rigid
bodies in all (at least 4: the two wheels, the frame and the fork; the others
are extra masses on the frame or the fork, each with its own parameters).
Each body's kinetic energy is m/2 |v|^2 + (I1 w1^2 + I2 w2^2 + I3 w3^2)/2 with
v its centre's velocity and w its angular velocity in its principal axes,
both derived with sympy and written out in full (the model language has no
named subexpressions yet), so that every term of the Lagrangian holds rates
and sines and cosines of the angles, as a derivation by hand or by sympy
gives them. Gravity acts on every body. One position constraint (the front
wheel's centre at its height above the ground) and four velocity
constraints (the wheels roll without slipping); the energy is the
Lagrangian's text with the potential's sign flipped, as a user writes it.

The size grows linearly with BODIES. The model's node count (as nholo counts
it after parsing: numbers, names, operations and calls) is printed to
stdout; nholo refuses a model over its node limit (docs/models.md, "Limits").
"""
import argparse
import re
import sys

import sympy as sp

COORDS = ["x", "y", "yaw", "roll", "pitch", "steer", "wheel_r", "wheel_f"]


def rot(axis, a):
    c, s = sp.cos(a), sp.sin(a)
    if axis == "x":
        return sp.Matrix([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return sp.Matrix([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def text(e):
    """sympy's expression in the model language (^ for powers)."""
    return str(e).replace("**", "^")


def node_count(s):
    """nholo's count after parsing (host/model_language/expr: each number,
    name, operation and call is one node): names and numbers, binary and
    unary operators, a call counted by its name."""
    tokens = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\d+\.?\d*(?:[eE][-+]?\d+)?|[-+*/^]", s)
    return len(tokens)


class Kinematics:
    """Positions and angular velocities of the frame and the fork."""

    def __init__(self):
        self.q = sp.symbols(COORDS)
        self.qd = sp.symbols([c + "_dot" for c in COORDS])
        x, y, yaw, roll, pitch, steer, _, _ = self.q
        rr, L, h, lam = sp.symbols("rr L h lam")
        self.R_yaw_roll = rot("z", yaw) * rot("x", roll)
        self.R_frame = self.R_yaw_roll * rot("y", pitch)
        self.R_fork = self.R_frame * rot("y", lam) * rot("z", steer)
        # the rear wheel's centre, above its contact point (x, y)
        self.rear_centre = sp.Matrix([x, y, 0]) + self.R_yaw_roll * sp.Matrix([0, 0, rr])
        # the steering head, at (L, 0, h) in the frame
        self.head = self.rear_centre + self.R_frame * sp.Matrix([L, 0, h])
        qd = self.qd
        ez, ex, ey = sp.Matrix([0, 0, 1]), sp.Matrix([1, 0, 0]), sp.Matrix([0, 1, 0])
        w_yaw_roll = qd[2] * ez + qd[3] * (rot("z", yaw) * ex)
        self.w_frame = w_yaw_roll + qd[4] * (self.R_yaw_roll * ey)
        self.w_fork = self.w_frame + qd[5] * (self.R_frame * rot("y", lam) * ez)
        # the front wheel's centre, (fa, 0, fc) in the fork's axes
        fa, fc = sp.symbols("fa fc")
        self.front_centre = self.head + self.R_fork * sp.Matrix([fa, 0, fc])
        self.w_rear_wheel = self.w_frame + qd[6] * (self.R_frame * ey)
        self.w_front_wheel = self.w_fork + qd[7] * (self.R_fork * ey)

    def velocity(self, r):
        return r.jacobian(sp.Matrix(self.q)) * sp.Matrix(self.qd)


def body_terms(kin, k, kind):
    """(kinetic energy, potential) of body k: its parameters are m_k, a_k,
    b_k, c_k (its centre in its carrier's axes) and I1_k, I2_k, I3_k."""
    m, a, b, c, I1, I2, I3 = sp.symbols(f"m_{k} a_{k} b_{k} c_{k} I1_{k} I2_{k} I3_{k}")
    g = sp.Symbol("g")
    if kind == "rear_wheel":
        centre, R, w = kin.rear_centre, kin.R_frame, kin.w_rear_wheel
    elif kind == "front_wheel":
        R, w, centre = kin.R_fork, kin.w_front_wheel, kin.front_centre
    elif kind == "fork":
        R, w = kin.R_fork, kin.w_fork
        centre = kin.head + R * sp.Matrix([a, b, c])
    else:
        R, w = kin.R_frame, kin.w_frame
        centre = kin.rear_centre + R * sp.Matrix([a, b, c])
    v = kin.velocity(centre)
    wb = R.T * w  # the angular velocity in the body's axes
    T = m / 2 * (v[0] ** 2 + v[1] ** 2 + v[2] ** 2) + (I1 * wb[0] ** 2 + I2 * wb[1] ** 2 + I3 * wb[2] ** 2) / 2
    V = m * g * centre[2]
    names = [m, a, b, c, I1, I2, I3] if kind not in ("rear_wheel",) else [m, I1, I2, I3]
    if kind == "front_wheel":
        names = [m, I1, I2, I3]
    return T, V, [str(s) for s in names]


def kinds(bodies):
    base = ["rear_wheel", "front_wheel", "frame", "fork"]
    extra = ["frame" if i % 2 == 0 else "fork" for i in range(bodies - len(base))]
    return (base + extra)[:bodies]


def param_default(name, k):
    head = name.split("_")[0]
    value = {"m": 1.0 + 0.25 * (k % 4), "a": 0.1 + 0.05 * (k % 5), "b": 0.02 * ((k % 3) - 1),
            "c": -0.2 + 0.1 * (k % 4), "I1": 0.05 + 0.01 * (k % 3), "I2": 0.08 + 0.01 * (k % 4),
            "I3": 0.06 + 0.01 * (k % 5)}[head]
    return round(value, 6)


def constraints(kin):
    """The front contact point on the ground (position) and both contact
    points at rest (velocity: their x and y velocities vanish), written out
    as sympy gives them: v_contact = v_centre + w_wheel x (contact - centre),
    with the contact the lowest point of the wheel's plane."""
    rr, rf = sp.symbols("rr rf")
    ez = sp.Matrix([0, 0, 1])
    # rear: the centre is rr above the contact along the frame's roll
    rear_arm = -kin.R_yaw_roll * sp.Matrix([0, 0, rr])
    v_rear = kin.velocity(kin.rear_centre) + kin.w_rear_wheel.cross(rear_arm)
    # front: down in the wheel's plane, e_z less its part along the axle n
    n = kin.R_fork * sp.Matrix([0, 1, 0])
    nz = n[2]
    down = (ez - nz * n) / sp.sqrt(1 - nz**2)
    front_arm = -rf * down
    centre = kin.front_centre
    v_front = kin.velocity(centre) + kin.w_front_wheel.cross(front_arm)
    return [
        ("front_contact_height", "position", centre[2] + front_arm[2]),
        ("rear_contact_x", "velocity", v_rear[0]),
        ("rear_contact_y", "velocity", v_rear[1]),
        ("front_contact_x", "velocity", v_front[0]),
        ("front_contact_y", "velocity", v_front[1]),
    ]


def model_text(bodies, with_energy=True):
    kin = Kinematics()
    T_total, V_total, params = 0, 0, []
    for k, kind in enumerate(kinds(bodies)):
        T, V, names = body_terms(kin, k, kind)
        T_total += T
        V_total += V
        params += names
    lagrangian = text(T_total - V_total)
    energy = text(T_total + V_total)
    lines = [
        f"# generated by bench/large_model.py {bodies}: a bicycle-like model of {bodies} rigid bodies",
        f'name = "large_{bodies}"',
        f'description = "bicycle-like multibody model of {bodies} rigid bodies (bench/large_model.py)"',
        "coordinates = [" + ", ".join(f'{{ name = "{c}", unit = "{"m" if c in ("x", "y") else "rad"}" }}' for c in COORDS) + "]",
        "parameters = [",
        '  { name = "g", default = 9.81, unit = "m/s^2" },',
        '  { name = "rr", default = 0.3, unit = "m", positive = true },',
        '  { name = "rf", default = 0.3, unit = "m", positive = true },',
        '  { name = "L", default = 1.0, unit = "m", positive = true },',
        '  { name = "h", default = 0.0, unit = "m" },',
        '  { name = "lam", default = 0.3, unit = "rad" },',
        '  { name = "fa", default = 0.05, unit = "m" },',
        '  { name = "fc", default = 0.0, unit = "m" },',
    ]
    units = {"m": "kg", "a": "m", "b": "m", "c": "m", "I1": "kg m^2", "I2": "kg m^2", "I3": "kg m^2"}
    for p in params:
        k = int(p.split("_")[1])
        lines.append(f'  {{ name = "{p}", default = {param_default(p, k)}, unit = "{units[p.split("_")[0]]}" }},')
    lines.append("]")
    lines.append(f'lagrangian = "{lagrangian}"')
    lines.append("constraints = [")
    cons = constraints(kin)
    for name, kind, e in cons:
        lines.append(f'  {{ name = "{name}", kind = "{kind}", expr = "{text(e)}" }},')
    lines.append("]")
    if with_energy:
        lines.append(f'energy = "{energy}"')
    nodes = node_count(lagrangian) + sum(node_count(text(e)) for _, _, e in cons)
    if with_energy:
        nodes += node_count(energy)
    return "\n".join(lines) + "\n", nodes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bodies", type=int, help="number of rigid bodies (at least 4)")
    ap.add_argument("out", help="the model file to write")
    ap.add_argument("--no-energy", action="store_true", help="leave the energy out")
    a = ap.parse_args()
    if a.bodies < 2:
        sys.exit("large_model.py: at least 2 bodies (the wheels)")
    text_, nodes = model_text(a.bodies, not a.no_energy)
    with open(a.out, "w") as f:
        f.write(text_)
    print(nodes)


if __name__ == "__main__":
    main()
