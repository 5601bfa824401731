"""nholo.Model.from_sympy (python/nholo/_sympy.py): a model derived in sympy
runs in nholo as its hand-written model file does.

The models are derived here independently of the example files (the sleigh
with sympy.physics.mechanics, the disk by hand in sympy) and compared, run
by run, with the hand-written files in examples/models/. The printed text is
also read back with sympy's own parser, whose precedence for these
operations is nholo's (docs/models.md, "Grammar": -x^2 = -(x^2), ^ right-
associative, * and / left-associative), and compared symbolically with the
expressions given.

Run by ctest (python_from_sympy) against a build folder's BUILD/python, and
by scripts/test.sh against the installed package.
"""
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

import nholo

sp = pytest.importorskip("sympy", reason="nholo.Model.from_sympy needs sympy (scripts/setup.sh installs it)")
from sympy.physics.mechanics import Point, ReferenceFrame, dynamicsymbols  # noqa: E402

from nholo._sympy import model_text  # noqa: E402  (the file's text, without writing it)

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "examples" / "models"
t = dynamicsymbols._t


def sleigh_from_mechanics():
    """The Chaplygin sleigh of examples/models/chaplygin_sleigh.model.toml
    derived with sympy.physics.mechanics: blade point B = (x, y), body frame
    at heading theta, centre of mass C = B + a b_x + b b_y."""
    x, y, theta = dynamicsymbols("x y theta")
    m, Ic = sp.symbols("m Ic", positive=True)
    a, b = sp.symbols("a b")
    N = ReferenceFrame("N")
    body = N.orientnew("body", "Axis", [theta, N.z])
    O = Point("O")
    B = O.locatenew("B", x * N.x + y * N.y)
    C = B.locatenew("C", a * body.x + b * body.y)
    v_C = C.pos_from(O).dt(N)
    L = m / 2 * v_C.dot(v_C) + Ic / 2 * theta.diff(t) ** 2
    knife_edge = B.pos_from(O).dt(N).dot(body.y)  # B moves along the blade only
    return dict(lagrangian=L, q=[x, y, theta], constraints={"knife_edge": knife_edge},
                parameters={m: (1.0, "kg"), Ic: (0.2, "kg m^2"), a: (0.4, "m"), b: (0.15, "m")},
                energy=L, units={x: "m", y: "m", theta: "rad"},
                description="Chaplygin sleigh derived with sympy.physics.mechanics")


def disk_from_symbols():
    """The vertical rolling disk of examples/models/rolling_disk.model.toml,
    with plain Symbols for the coordinates and their rates: contact point
    (x, y), heading phi, rolling angle theta; torque tau about the axle."""
    x, y, phi, theta = sp.symbols("x y phi theta")
    xd, yd, phid, thetad = sp.symbols("xd yd phid thetad")
    m, R, I, J = sp.symbols("m R I J", positive=True)
    tau = sp.Symbol("tau")
    T = m / 2 * (xd**2 + yd**2) + J / 2 * phid**2 + I / 2 * thetad**2
    return dict(lagrangian=T, q=[x, y, phi, theta], rates=[xd, yd, phid, thetad],
                constraints=[("roll_x", xd - R * sp.cos(phi) * thetad), ("roll_y", yd - R * sp.sin(phi) * thetad)],
                parameters={m: (1.0, "kg"), R: (0.3, "m"), I: (m * R**2 / 2, "kg m^2"),
                            J: (m * R**2 / 4, "kg m^2"), tau: (0.05, "N m")},
                forces={theta: tau}, energy=T,
                units={x: "m", y: "m", phi: "rad", theta: "rad"},
                description="vertical disk rolling without slipping, from sympy")


def run(model_path, config, **sets):
    cfg = (MODELS / config).read_text()
    model_line = next(line for line in cfg.splitlines() if line.startswith("model = "))
    sets = {"backend.device": "omp", "backend.threads": 2, **sets}
    return nholo.run(cfg.replace(model_line, f'model = "{model_path}"'), set=sets)


def same_trajectories(hand, derived, tol, fields=("q", "qdot")):
    """every formulation's q and qdot (and other fields) of two runs (the
    same config, seeds and states), to tol"""
    forms = [n for n in hand.children if "q" in hand[n].ds]
    assert forms
    for form in forms:
        assert (hand[form].ds.status.values == 0).all() and (derived[form].ds.status.values == 0).all()
        for field in fields:
            a, b = hand[form].ds[field].values, derived[form].ds[field].values
            assert a.shape == b.shape and a.size > 1000
            err = float(np.max(np.abs(a - b)))
            assert err <= tol, (form, field, err)


def test_the_sleigh_from_mechanics_runs_as_the_hand_written_file():
    model = nholo.Model.from_sympy(**sleigh_from_mechanics(), name="sleigh_from_sympy", cse=False)
    text = Path(model.path).read_text()
    assert 'kind = "velocity"' in text and "[definitions]" not in text
    hand = run(MODELS / "chaplygin_sleigh.model.toml", "chaplygin_sleigh.toml")
    derived = run(model.path, "chaplygin_sleigh.toml")
    same_trajectories(hand, derived, 1e-13)
    # the energy sympy derived is conserved by the run as the hand-written one
    for form in ("udwadia_kalaba", "null_space"):
        e = derived[form].ds.energy.values
        assert np.max(np.abs(e - e[:, :1])) < 1e-10


def test_the_disk_with_a_force_runs_as_the_hand_written_file():
    model = nholo.Model.from_sympy(**disk_from_symbols(), name="disk_from_sympy", cse=False)
    text = Path(model.path).read_text()
    assert '{ name = "I", default = "R^2*m/2", unit = "kg m^2", positive = true }' in text
    assert '{ name = "tau", default = 0.05, unit = "N m" }' in text
    assert "[forces]\ntheta = \"tau\"" in text
    hand = run(MODELS / "rolling_disk.model.toml", "rolling_disk.toml")
    derived = run(model.path, "rolling_disk.toml")
    same_trajectories(hand, derived, 1e-13)
    # the parameters nholo evaluated from the printed defaults (I = m R^2/2, J = m R^2/4)
    assert list(hand.attrs["parameter_names"]) == list(derived.attrs["parameter_names"])
    assert np.array_equal(hand.attrs["parameter_values"], derived.attrs["parameter_values"])


def read_back(text):
    """the model file's expressions parsed by sympy: key -> expression over
    Symbols of the file's names, and the definitions substituted in"""
    doc = tomllib.loads(text)

    def parsed(s):
        return sp.parse_expr(s.replace("^", "**"), local_dict=local, evaluate=True)

    local = {"abs": sp.Abs, "sign": sp.sign, "atan2": sp.atan2, "pi": sp.pi, "sqrt": sp.sqrt,
             "exp": sp.exp, "log": sp.log}
    names = [c["name"] for c in doc["coordinates"]]
    for n in names:
        local.update({n: sp.Symbol(n), n + "_dot": sp.Symbol(n + "_dot"), n + "_ddot": sp.Symbol(n + "_ddot")})
    for p in doc.get("parameters", []):
        local[p["name"]] = sp.Symbol(p["name"])
    local["t"] = sp.Symbol("t")
    definitions = {}
    for name in doc.get("definitions", {}):
        local[name] = sp.Symbol(name)
    for name, s in doc.get("definitions", {}).items():
        definitions[sp.Symbol(name)] = parsed(s)
    out = {"lagrangian": parsed(doc["lagrangian"])}
    for key in ("energy", "conflated_lagrangian"):
        if key in doc:
            out[key] = parsed(doc[key])
    for c in doc.get("constraints", []):
        out["constraints." + c["name"]] = parsed(c["expr"])
    for table in ("forces", "nonideal_forces"):
        for k, s in doc.get(table, {}).items():
            out[f"{table}.{k}"] = parsed(s)
    # definitions may use definitions: substitute until none is left
    for key, e in out.items():
        for _ in range(len(definitions) + 1):
            e = e.xreplace(definitions)
        assert not (e.free_symbols & set(definitions)), key
        out[key] = e
    return doc, out


def as_file_symbols(e, q, rates=None):
    """e over Symbols of the file's names (x, x_dot, x_ddot), independently of
    the code under test"""
    rep = {}
    for i, c in enumerate(q):
        n = c.func.__name__ if rates is None else c.name
        if rates is None:
            rep[c.diff(t, 2)] = sp.Symbol(n + "_ddot")
            rep[c.diff(t)] = sp.Symbol(n + "_dot")
        else:
            rep[rates[i]] = sp.Symbol(n + "_dot")
        rep[c] = sp.Symbol(n)
    e = sp.sympify(e).xreplace(rep)
    return e.xreplace({s: sp.Symbol(s.name) for s in e.free_symbols})


@pytest.mark.parametrize("cse", [False, True])
@pytest.mark.parametrize("model", [sleigh_from_mechanics, disk_from_symbols])
def test_the_written_expressions_are_the_given_ones(model, cse):
    spec = model()
    text = model_text(**spec, cse=cse)
    doc, written = read_back(text)
    assert ("definitions" in doc) == cse
    if cse:  # shared subexpressions: the file is shorter than written out in full
        assert len(text) < len(model_text(**spec, cse=False))
    rates = spec.get("rates")
    given = {"lagrangian": spec["lagrangian"], "energy": spec["energy"]}
    constraints = spec["constraints"]
    pairs = constraints.items() if isinstance(constraints, dict) else constraints
    for name, e in pairs:
        given["constraints." + name] = e
    for c, f in spec.get("forces", {}).items():
        given["forces." + c.name] = f
    assert sorted(given) == sorted(written)
    for key, e in given.items():
        assert sp.expand(written[key] - as_file_symbols(e, spec["q"], rates)) == 0, key


def test_with_definitions_the_models_run_as_the_hand_written_files():
    """cse=True (the default); the sleigh with energy = "auto": nholo's
    Jacobi integral of the Lagrangian sympy derived is the hand-written
    file's energy (measured: 4e-15)"""
    spec = sleigh_from_mechanics()
    spec["energy"] = "auto"
    sleigh = nholo.Model.from_sympy(**spec, name="sleigh_from_sympy_cse")
    assert "[definitions]" in Path(sleigh.path).read_text()
    same_trajectories(run(MODELS / "chaplygin_sleigh.model.toml", "chaplygin_sleigh.toml"),
                      run(sleigh.path, "chaplygin_sleigh.toml"), 1e-13, ("q", "qdot", "energy"))
    disk = nholo.Model.from_sympy(**disk_from_symbols(), name="disk_from_sympy_cse")
    assert "[definitions]" in Path(disk.path).read_text()
    same_trajectories(run(MODELS / "rolling_disk.model.toml", "rolling_disk.toml"),
                      run(disk.path, "rolling_disk.toml"), 1e-13)


def test_constraint_kinds_follow_from_what_they_use(tmp_path):
    """a particle in the plane on a circle (position), with a speed limit
    (velocity) and an acceleration constraint; nholo reads the file"""
    x, y, z = dynamicsymbols("x y z")
    ell, k = sp.symbols("ell k")
    L = (x.diff(t) ** 2 + y.diff(t) ** 2 + z.diff(t) ** 2) / 2 - k * z**2 / 2
    constraints = [x**2 + y**2 - ell**2, z.diff(t) - x.diff(t) * sp.cos(t),
                   {"name": "tangential", "expr": x * y.diff(t, 2) - y * x.diff(t, 2) + z.diff(t, 2) * 0 + z}]
    path = tmp_path / "kinds.model.toml"
    model = nholo.Model.from_sympy(L, [x, y, z, dynamicsymbols("w")], constraints=constraints[:2],
                                   parameters={ell: 1.0, k: 2.0}, cse=False, path=path, name="kinds")
    doc = tomllib.loads(path.read_text())
    assert [c["kind"] for c in doc["constraints"]] == ["position", "velocity"]
    assert [c["name"] for c in doc["constraints"]] == ["constraint_0", "constraint_1"]
    assert "cos(t)" in doc["constraints"][1]["expr"]
    assert model.path == str(path)
    w = dynamicsymbols("w")
    L4 = L + w.diff(t) ** 2 / 2
    nholo.Model.from_sympy(L4, [x, y, z, w], constraints=constraints, parameters={ell: 1.0, k: 2.0},
                           cse=False, path=path, name="kinds")
    doc = tomllib.loads(path.read_text())
    assert [c["kind"] for c in doc["constraints"]] == ["position", "velocity", "acceleration"]
    assert doc["constraints"][2]["expr"] == "x*y_ddot - x_ddot*y + z"
    # a kind given is kept (and checked by nholo)
    with pytest.raises(nholo.ModelError, match="must depend on a rate"):
        nholo.Model.from_sympy(L4, [x, y, z, w], constraints=[{"expr": x - y, "kind": "velocity"}],
                               parameters={k: 2.0}, cse=False, path=path, name="kinds")


PRECEDENCE = [
    # (a sympy expression of numbers, left unevaluated where sympy would fold it; its value)
    (sp.Mul(-1, sp.Pow(2, 2, evaluate=False), evaluate=False), -4.0),       # -2^2
    (sp.Pow(-2, 2, evaluate=False), 4.0),                                    # (-2)^2
    (sp.Pow(2, sp.Pow(3, 2, evaluate=False), evaluate=False), 512.0),        # 2^3^2 = 2^9
    (sp.Pow(sp.Pow(2, 3, evaluate=False), 2, evaluate=False), 64.0),         # (2^3)^2
    (sp.Mul(sp.Rational(2, 3), 5, evaluate=False), 10 / 3),
    (sp.Integer(7) / (sp.Integer(3) * sp.pi), 7 / (3 * math.pi)),
    (sp.Mul(sp.Pow(3, -1, evaluate=False), sp.pi, 7, evaluate=False), 7 * math.pi / 3),
    (sp.sqrt(2) / 2, math.sqrt(2) / 2),
    (sp.E ** sp.Rational(1, 3), math.exp(1 / 3)),
    (sp.atan2(1, -sp.sqrt(3)), math.atan2(1, -math.sqrt(3))),
    (sp.Rational(1, 2) ** sp.Rational(-3, 2), 0.5 ** -1.5),
    (sp.Pow(sp.Rational(1, 2), sp.Rational(1, 3), evaluate=False), 0.5 ** (1 / 3)),
    (sp.sec(sp.Rational(1, 5)) - sp.cot(sp.Rational(1, 7)), 1 / math.cos(0.2) - 1 / math.tan(1 / 7)),
    (sp.Float(0.1) + sp.Float(0.2), 0.1 + 0.2),
    (sp.Integer(2) ** 60 + 1, 2.0**60),
]


def test_printed_numbers_and_precedence_read_back_in_nholo(tmp_path):
    """each constant expression, printed as a parameter's default, is
    evaluated by nholo's parser to the value Python computes (a few ulp:
    the order of operations may differ)"""
    x = dynamicsymbols("x")
    params = {sp.Symbol(f"c{i}"): e for i, (e, _) in enumerate(PRECEDENCE)}
    text = model_text(x.diff(t) ** 2 / 2, [x], parameters=params, cse=False)
    defaults = {p["name"]: p["default"] for p in tomllib.loads(text)["parameters"]}
    assert defaults["c13"] == 0.30000000000000004  # a float printed to read back exactly
    path = tmp_path / "numbers.model.toml"
    path.write_text(text)
    model = nholo.Model.from_file(path)
    tree = nholo.run({"model": str(path), "time": {"t_end": 0.1, "save_every": 0.1},
                      "ensemble": {"size": 1, "q0": {"x": 0.0}, "qd0": {"x": 1.0}},
                      "formulations": ["udwadia_kalaba"], "backend": {"device": "cpp"}})
    assert list(tree.attrs["parameter_names"]) == [f"c{i}" for i in range(len(PRECEDENCE))]
    values = tree.attrs["parameter_values"]
    for i, (e, want) in enumerate(PRECEDENCE):
        assert math.isclose(values[i], want, rel_tol=1e-15, abs_tol=0.0), (i, e, defaults[f"c{i}"], values[i])
    assert model.path == str(path)


def test_what_nholo_cannot_say_is_refused_naming_it():
    x, y = dynamicsymbols("x y")
    k = sp.Symbol("k")
    L = x.diff(t) ** 2 / 2
    cases = [
        (L + sp.asin(x), "sympy function asin has no counterpart"),
        (L + sp.Piecewise((x, x > 0), (0, True)), "Piecewise"),
        (L + sp.Heaviside(x), "Heaviside"),
        (L + sp.Max(x, 0), "Max"),
        (L + sp.I * x, "not a finite real number"),
        (L + k * x, "k: neither a coordinate, a rate, a parameter nor time"),
        (L + sp.Function("f")(t), r"f\(t\) is not a coordinate"),
        (L + x.diff(t, 3), "a derivative other than a coordinate's rate or acceleration"),
        (L * x.diff(t, 2), "lagrangian: it uses an acceleration"),
        (x**2, "lagrangian: it uses no rate"),
    ]
    for e, message in cases:
        with pytest.raises(nholo.ModelError, match=message) as info:
            model_text(e, [x], cse=False)
        assert "accepted:" in str(info.value) or "coordinates:" in str(info.value) or "lagrangian" in str(info.value)
    # the message lists what nholo's grammar accepts
    with pytest.raises(nholo.ModelError) as info:
        model_text(L + sp.acos(x), [x])
    for name in ("sin", "cos", "atan2", "sqrt", "tanh", "Abs", "sign", "pi"):
        assert name in str(info.value)


def test_names_are_sanitised_and_clashes_refused():
    theta, q1 = dynamicsymbols("theta q_{1}")
    greek = dynamicsymbols("θ")
    L = theta.diff(t) ** 2 / 2 + q1.diff(t) ** 2 / 2
    text = model_text(L, [theta, q1], cse=False)
    names = [c["name"] for c in tomllib.loads(text)["coordinates"]]
    assert names == ["theta", "q_1"]
    assert tomllib.loads(model_text(greek.diff(t) ** 2, [greek]))["coordinates"][0]["name"] == "theta"
    m1, m2 = sp.Symbol("m"), sp.Symbol("m", positive=True)
    with pytest.raises(nholo.ModelError, match="would both be named 'm'"):
        model_text(L * m1 * m2, [theta, q1], parameters={m1: 1.0, m2: 2.0})
    with pytest.raises(nholo.ModelError, match="would both be named 'theta'"):
        model_text(L + greek.diff(t) ** 2, [theta, q1, greek])
    for bad, why in [("pi", "reserved"), ("sin", "function"), ("v_dot", "_dot"), ("2x", "starting with a letter")]:
        with pytest.raises(nholo.ModelError, match=why):
            model_text(L, [theta, q1], parameters={sp.Symbol(bad): 1.0})
    with pytest.raises(nholo.ModelError, match="either all dynamicsymbols"):
        model_text(L, [theta, sp.Symbol("z")])
    with pytest.raises(nholo.ModelError, match="rates: with Symbol coordinates"):
        model_text(L, [sp.Symbol("z")])
    with pytest.raises(nholo.ModelError, match="is a string"):
        model_text("x_dot^2", [theta])
    with pytest.raises(nholo.ModelError, match="name"):
        model_text(L, [theta, q1], name="Bad Name")  # at most 64 characters


def test_nonideal_forces_and_a_conflated_lagrangian_are_written(tmp_path):
    """tests/model_files/incline_block.toml's block with Coulomb friction (a
    work-doing constraint force), and a skate's (a sleigh with its centre of
    mass on the blade) conflated Lagrangian: nholo reads the files, and each
    written expression is the one given"""
    x, y = dynamicsymbols("x y")
    mass, g, friction = sp.symbols("mass g friction", nonnegative=True)
    angle = sp.Symbol("angle", positive=True)
    xd, yd = x.diff(t), y.diff(t)
    L = sp.Float(0.5) * mass * (xd**2 + yd**2) - mass * g * y
    push = -friction * mass * g * sp.cos(angle) * sp.sign(xd)
    spec = dict(lagrangian=L, q=[x, y], constraints={"plane": y - sp.tan(angle) * x},
                parameters={mass: 1.0, g: 9.81, angle: {"default": 0.5, "max": 1.5}, friction: 0.3},
                nonideal_forces={x: push * sp.cos(angle), "y": push * sp.sin(angle)}, energy=L + 2 * mass * g * y)
    model = nholo.Model.from_sympy(**spec, name="incline_from_sympy", cse=False, path=tmp_path / "incline.toml")
    doc, written = read_back(Path(model.path).read_text())
    assert doc["constraints"][0]["kind"] == "position"
    assert doc["parameters"][2] == {"name": "angle", "default": 0.5, "unit": "1", "max": 1.5, "positive": True}
    assert doc["parameters"][1] == {"name": "g", "default": 9.81, "unit": "1", "nonnegative": True}
    for key, e in [("nonideal_forces.x", push * sp.cos(angle)), ("nonideal_forces.y", push * sp.sin(angle)),
                   ("energy", spec["energy"])]:
        assert sp.expand(written[key] - as_file_symbols(e, [x, y])) == 0, key

    X, Y, TH = dynamicsymbols("x y theta")
    m, J = sp.symbols("m J", positive=True)
    L = m / 2 * (X.diff(t) ** 2 + Y.diff(t) ** 2) + J / 2 * TH.diff(t) ** 2
    # the knife edge Y' = X' tan(theta) substituted: X'^2 (1 + tan^2) = X'^2 sec^2
    L_plus = m / 2 * X.diff(t) ** 2 * sp.sec(TH) ** 2 + J / 2 * TH.diff(t) ** 2
    model = nholo.Model.from_sympy(L, [X, Y, TH], constraints=[Y.diff(t) * sp.cos(TH) - X.diff(t) * sp.sin(TH)],
                                   parameters={m: 1.0, J: 0.5}, conflated_lagrangian=L_plus,
                                   name="skate_from_sympy", cse=False, path=tmp_path / "skate.toml")
    assert "conflated" in model.description
    doc, written = read_back(Path(model.path).read_text())
    assert sp.simplify(written["conflated_lagrangian"] - as_file_symbols(L_plus, [X, Y, TH])) == 0
    assert "sec" not in doc["conflated_lagrangian"] and "cos(theta)^2" in doc["conflated_lagrangian"]


def test_symbol_coordinates_with_rates_and_accelerations():
    """plain Symbols: the rates and accelerations given in order; forces as a
    list, one per coordinate (zeros left out)"""
    x, y, xd, yd, xdd, ydd = sp.symbols("x y xd yd xdd ydd")
    k = sp.Symbol("k")
    text = model_text((xd**2 + yd**2) / 2 - k * x**2 / 2, [x, y], rates=[xd, yd], accelerations=[xdd, ydd],
                      constraints=[xdd + ydd - sp.cos(sp.Symbol("t"))], forces=[0, -yd / 10],
                      parameters={k: sp.Rational(3, 2)}, cse=False)
    doc = tomllib.loads(text)
    assert doc["constraints"] == [{"name": "constraint_0", "kind": "acceleration",
                                   "expr": "x_ddot + y_ddot - cos(t)"}]
    assert doc["forces"] == {"y": "-y_dot/10"}
    assert doc["parameters"] == [{"name": "k", "default": 1.5, "unit": "1"}]  # a sympy number as a number
    with pytest.raises(nholo.ModelError, match="accelerations: a list of 2 Symbols"):
        model_text(xd**2, [x, y], rates=[xd, yd], accelerations=[xdd])
    with pytest.raises(nholo.ModelError, match="forces: a dict coordinate -> expression, or a list of 2"):
        model_text(xd**2, [x, y], rates=[xd, yd], forces=[1])
    with pytest.raises(nholo.ModelError, match=r"forces: key: z is not a coordinate \(coordinates: x, y\)"):
        model_text(xd**2, [x, y], rates=[xd, yd], forces={sp.Symbol("z"): 1})
    with pytest.raises(nholo.ModelError, match="units: k is neither a coordinate nor a parameter"):
        model_text(xd**2, [x, y], rates=[xd, yd], units={k: "N/m"})


def test_without_sympy_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "sympy", None)  # `import sympy` fails
    monkeypatch.delitem(__import__("sys").modules, "nholo._sympy")
    monkeypatch.delattr(nholo, "_sympy")
    with pytest.raises(ModuleNotFoundError, match="nholo.Model.from_sympy needs sympy: pip install sympy"):
        nholo.Model.from_sympy(None, [])
