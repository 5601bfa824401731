"""The figure scripts (scripts/plot_*.py) on real nholo output.

Runs the nholo binary named by $NHOLO_BINARY on small configurations written
to a temporary folder, runs every script headless with --summary, and checks

  * the figure (PNG, and PDF with --pdf) is written and is an image;
  * the numbers drawn (the JSON summary) equal the file's own values:
    /statistics/<formulation> drift_ratio_mean, drift_ratio_std, band,
    drift_velocity, status_* counts, /compare/<a>__<b>/max_distance, and
    the residual and energy error recomputed here from the datasets;
  * the numbers agree with the rolling coin's closed form (docs/physics.md, item 10):
    - the drift ratio (fitted drift / (g sin(slope) / (3 theta_dot))) of every
      coin lies within the bound the fit itself allows: a least-squares line
      through x(t) = x0' + v t - f(theta) cos(theta) over saves t_k misses v by
      at most H sum|t_k - tbar| / sum (t_k - tbar)^2, H = max|f cos| <= |A| + B
      (A = omega R / Omega, B = g sin(slope) / (3 Omega^2)); over 40 s this is
      a few per cent, and the ensemble mean is within 1 % of 1;
    - the closed form sampled at the same saves and fitted the same way gives
      the measured drift ratio to 1e-8;
    - the measured band (max y - min y over the saves) is at most the
      closed-form band |A| + B + A^2 / (4B) (or 2|A|) and within 0.5 % of it
      (the saves, every 0.1 s, can miss the extremes);
  * the rattleback's nholo run agrees with the Newton-Euler reference of
    scripts/rattleback_reference.py that plot_rattleback.py integrates, and
    its spin reverses when the reference's does;
  * --help works and a wrong file gives exit status 2 with a message.
"""

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# the coins of COIN and SURVEY: 40 s on a slope of 0.3, saved every 0.1 s
COIN_RUN = """
model = "rolling_coin"
[params]
radius = 0.5
slope = 0.3
[time]
t_end = 40.0
save_every = 0.1
[integrator]
method = "dopri5"
rtol = 1e-10
atol = 1e-12
drift = "project"
"""

COIN = COIN_RUN + """[ensemble]
size = 48
seed = 7
[ensemble.q0]
theta = { uniform = [0.0, 6.283185307179586] }
[ensemble.qd0]
theta = { uniform = [1.5, 3.0] }
phi = { uniform = [-1.5, 1.5] }
[output]
path = "coin.h5"
fields = ["q", "qdot", "constraint_residual", "energy"]
"""

SURVEY = COIN_RUN + """[ensemble]
sampler = "grid"
[ensemble.q0]
theta = 0.3
[ensemble.qd0]
theta = { linspace = [1.0, 3.0, 5] }
phi = { values = [-1.0, 0.0, 0.5, 2.0] }
[output]
path = "survey.h5"
fields = ["q", "constraint_residual", "energy"]
"""

SKATE = """
model = "skate"
formulations = ["udwadia_kalaba", "conflated", "lagrange_multiplier"]
[params]
offset = 0.5
inertia = 0.8
slope = 0.0
[time]
t_end = 5.0
save_every = 0.05
[integrator]
method = "dop853"
rtol = 1e-11
atol = 1e-12
drift = "project"
[ensemble]
size = 12
seed = 1
[ensemble.q0]
theta = { uniform = [-1.0, 1.0] }
[ensemble.qd0]
x = { uniform = [0.5, 1.5] }
theta = { uniform = [0.5, 2.0] }
[output]
path = "skate.h5"
fields = ["q", "qdot", "constraint_residual", "energy"]
"""

VAKONOMIC = """
model = "rolling_coin"
formulations = ["udwadia_kalaba", "vakonomic"]
[params]
radius = 0.5
slope = 0.3
[time]
t_end = 4.0
save_every = 0.05
[integrator]
method = "dop853"
rtol = 1e-10
atol = 1e-12
[ensemble]
size = 8
seed = 11
[ensemble.q0]
theta = 0.5
[ensemble.qd0]
theta = 2.0
phi = 1.0
[ensemble.lambda0]
roll_x = { uniform = [-2.0, 2.0] }
roll_y = { uniform = [-2.0, 2.0] }
[output]
path = "vak.h5"
fields = ["q", "qdot", "constraint_residual", "energy"]
[compare]
threshold = 0.1
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    binary = os.environ.get("NHOLO_BINARY")
    if not binary:
        pytest.fail("NHOLO_BINARY is not set: run this test through ctest or set it")
    d = tmp_path_factory.mktemp("nholo_scripts")
    out = {}
    for name, text in (("coin", COIN), ("survey", SURVEY), ("skate", SKATE),
                       ("vak", VAKONOMIC)):
        (d / f"{name}.toml").write_text(textwrap.dedent(text))
        subprocess.run([binary, "run", "-q", "--threads", "2", f"{name}.toml"], cwd=d,
                       check=True)
        out[name] = d / f"{name}.h5"
    out["dir"] = d
    return out


def run_script(script, *args, check=True):
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("DISPLAY", None)
    proc = subprocess.run([sys.executable, str(SCRIPTS / script), *map(str, args)],
                          capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        pytest.fail(f"{script} {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                    f"{proc.stdout}\n{proc.stderr}")
    return proc


def draw(script, h5, tmp, name, *args):
    """Runs a script; returns its summary after checking the figure."""
    png, js = tmp / f"{name}.png", tmp / f"{name}.json"
    run_script(script, h5, "-o", png, "--summary", js, *args)
    data = png.read_bytes()
    assert len(data) > 10_000 and data[:8] == PNG_MAGIC, f"{png} is not a PNG figure"
    return json.loads(js.read_text())


def closed_form(f):
    """docs/physics.md, item 10, written out again here (independently of the
    scripts' helper): Omega, omega, A, B, v, band, H per coin."""
    g, slope, radius = (float(f.attrs[f"param_{k}"]) for k in ("g", "slope", "radius"))
    names = [c.decode() if isinstance(c, bytes) else c for c in f.attrs["coordinates"]]
    iphi, ith = names.index("phi"), names.index("theta")
    q0, qd0 = f["initial/q0"][:], f["initial/qdot0"][:]
    Om, th0 = qd0[:, ith], q0[:, ith]
    gs = g * math.sin(slope)
    omega = qd0[:, iphi] - 2 * gs / (3 * radius * Om) * np.sin(th0)
    A, B = omega * radius / Om, gs / (3 * Om ** 2)
    band = np.where(np.abs(A) <= 2 * B, np.abs(A) + B + A ** 2 / (4 * B), 2 * np.abs(A))
    return {"Omega": Om, "A": A, "B": B, "v": gs / (3 * Om), "band": band, "H": np.abs(A) + B,
            "gs": gs}


# --------------------------------------------------------------------------
# plot_coin_drift.py


def test_coin_drift_matches_statistics_and_closed_form(runs, tmp_path):
    s = draw("plot_coin_drift.py", runs["coin"], tmp_path, "coin_drift", "--pdf")
    assert (tmp_path / "coin_drift.pdf").stat().st_size > 1000
    with h5py.File(runs["coin"], "r") as f:
        st = f["statistics/udwadia_kalaba"]
        ratio, band, drift = st["drift_ratio"][:], st["band"][:], st["drift_velocity"][:]
        t = f["udwadia_kalaba/time"][:]
        q = f["udwadia_kalaba/q"][:]
        cf = closed_form(f)
        # the numbers drawn are the file's statistics
        assert s["trajectories"] == s["trajectories_ok"] == 48
        assert s["drift_ratio"]["count"] == 48
        assert s["drift_ratio"]["mean"] == pytest.approx(st.attrs["drift_ratio_mean"],
                                                         rel=0, abs=1e-12)
        assert s["drift_ratio"]["std"] == pytest.approx(st.attrs["drift_ratio_std"], rel=1e-9)
        assert s["drift_ratio_mean_attribute"] == st.attrs["drift_ratio_mean"]
        assert s["band"]["mean"] == pytest.approx(band.mean(), rel=1e-12)
        assert s["band"]["max"] == band.max() and s["band"]["min"] == band.min()
        assert s["drift_velocity"]["mean"] == pytest.approx(drift.mean(), rel=1e-12)
        idx = np.array(s["sample"]["trajectory"])
        assert idx.size == 6
        np.testing.assert_array_equal(s["sample"]["band"], band[idx])
        np.testing.assert_array_equal(s["sample"]["drift_ratio"], ratio[idx])
        # the y range drawn is that of the data
        assert s["y_range"] == pytest.approx([q[:, :, 1].min(), q[:, :, 1].max()], abs=1e-12)
        assert sum(s["histogram"]["counts"]) == 48

    # closed form: each coin within what a line fit over 40 s allows
    tc = t - t.mean()
    bound = cf["H"] * np.abs(tc).sum() / np.dot(tc, tc) / cf["v"]
    assert bound.max() < 0.2
    assert np.all(np.abs(ratio - 1.0) <= bound)
    assert abs(s["drift_ratio"]["mean"] - 1.0) < 0.01
    np.testing.assert_allclose(s["sample"]["drift_velocity_predicted"], cf["v"][idx], rtol=1e-14)
    # ... and exactly what the closed form gives when fitted the same way
    assert s["drift_ratio_minus_closed_form_sampled_max_abs"] < 1e-8
    assert s["drift_ratio_closed_form_sampled"]["mean"] == pytest.approx(
        s["drift_ratio"]["mean"], abs=1e-8)
    # the band: never wider than the closed form's, and close to it
    assert np.all(band <= cf["band"] * (1 + 1e-7))
    np.testing.assert_allclose(band, cf["band"], rtol=5e-3)
    assert s["band_over_closed_form"]["min"] > 0.995
    np.testing.assert_allclose(s["sample"]["band_closed_form"], cf["band"][idx], rtol=1e-12)


def test_coin_drift_recomputed_from_q_equals_statistics(runs, tmp_path):
    a = draw("plot_coin_drift.py", runs["coin"], tmp_path, "stored", "--trajectories", "3,0,17")
    b = draw("plot_coin_drift.py", runs["coin"], tmp_path, "recomputed", "--recompute")
    assert a["source"] == "/statistics/udwadia_kalaba"
    assert b["source"].startswith("recomputed")
    assert a["sample"]["trajectory"] == [0, 3, 17]
    for key in ("mean", "std", "min", "max"):
        assert b["drift_ratio"][key] == pytest.approx(a["drift_ratio"][key], abs=1e-12)
        assert b["band"][key] == pytest.approx(a["band"][key], abs=1e-12)
    assert b["y_range"] == pytest.approx(a["y_range"], abs=1e-12)


# --------------------------------------------------------------------------
# plot_survey.py


def test_survey_grid_and_drift_closed_form(runs, tmp_path):
    s = draw("plot_survey.py", runs["survey"], tmp_path, "survey", "--stat", "drift_velocity",
             "--x", "qdot.theta", "--y", "qdot.phi")
    assert s["x"] == {"axis": "qdot.theta", "values": [1.0, 1.5, 2.0, 2.5, 3.0]}
    assert s["y"] == {"axis": "qdot.phi", "values": [-1.0, 0.0, 0.5, 2.0]}
    grid, traj = np.array(s["grid"]), np.array(s["trajectory"])
    assert grid.shape == traj.shape == (4, 5)
    with h5py.File(runs["survey"], "r") as f:
        drift = f["statistics/udwadia_kalaba/drift_velocity"][:]
        qd0 = f["initial/qdot0"][:]
        cf = closed_form(f)
        t = f["udwadia_kalaba/time"][:]
    assert sorted(traj.ravel().tolist()) == list(range(20))
    for iy, phid in enumerate(s["y"]["values"]):
        for ix, thd in enumerate(s["x"]["values"]):
            i = traj[iy, ix]
            assert qd0[i, 3] == pytest.approx(thd) and qd0[i, 2] == pytest.approx(phid)
            assert grid[iy, ix] == drift[i]
    # drift * 3 theta_dot / (g sin(slope)) ~ 1, within the fit's own bound
    measured = grid * 3 * np.array(s["x"]["values"])[None, :] / cf["gs"]
    tc = t - t.mean()
    bound = cf["H"] * np.abs(tc).sum() / np.dot(tc, tc) / cf["v"]
    assert np.all(np.abs(drift / cf["v"] - 1) <= bound)
    np.testing.assert_allclose(measured, 1.0, atol=0.02)
    ratio = s["drift_velocity_times_3_theta_dot_over_g_sin_slope"]
    assert ratio["count"] == 20 and abs(ratio["mean"] - 1) < 0.01
    np.testing.assert_allclose(np.array(s["closed_form"]), cf["v"][traj], rtol=1e-14)


def test_survey_auto_axes_band_and_energy(runs, tmp_path):
    band = draw("plot_survey.py", runs["survey"], tmp_path, "band", "--stat", "band")
    assert band["x"]["axis"] == "qdot.theta" and band["y"]["axis"] == "qdot.phi"
    energy = draw("plot_survey.py", runs["survey"], tmp_path, "energy",
                  "--stat", "energy_error")
    with h5py.File(runs["survey"], "r") as f:
        cf = closed_form(f)
        b = f["statistics/udwadia_kalaba/band"][:]
        E = f["udwadia_kalaba/energy"][:]
    traj = np.array(band["trajectory"])
    np.testing.assert_array_equal(np.array(band["grid"]), b[traj])
    np.testing.assert_allclose(np.array(band["grid"]), cf["band"][traj], rtol=5e-3)
    rel = np.max(np.abs(E - E[:, :1]) / np.abs(E[:, :1]), axis=1)
    np.testing.assert_allclose(np.array(energy["grid"]), rel[traj], rtol=1e-12)
    assert energy["stats"]["max"] < 1e-6  # energy is conserved by the rolling coin


# --------------------------------------------------------------------------
# plot_formulations.py


def test_formulations_skate_distances(runs, tmp_path):
    s = draw("plot_formulations.py", runs["skate"], tmp_path, "skate",
             "--a", "udwadia_kalaba", "--b", "conflated", "lagrange_multiplier",
             "--trajectory", "4")
    assert s["trajectory"] == 4 and s["b"] == ["conflated", "lagrange_multiplier"]
    with h5py.File(runs["skate"], "r") as f:
        qa = f["udwadia_kalaba/q"][4]
        for b in s["b"]:
            pair = s["pairs"][b]
            d = np.linalg.norm(qa - f[f"{b}/q"][4], axis=1)
            np.testing.assert_allclose(pair["distance"], d, rtol=1e-12, atol=0)
            stored = f[f"compare/udwadia_kalaba__{b}/max_distance"][:]
            assert pair["max_distance"] == pytest.approx(stored[4], rel=1e-12)
            assert pair["stored_max_distance"] == stored[4]
            assert pair["stored_minus_recomputed_max_abs"] < 1e-12
            assert pair["ensemble_max_distance"]["count"] == 12
            assert pair["ensemble_max_distance"]["max"] == pytest.approx(stored.max(), rel=1e-12)
    # Hamel's conflated Lagrangian gives another motion; multipliers the same one
    assert s["pairs"]["conflated"]["ensemble_max_distance"]["min"] > 1e-2
    assert s["pairs"]["lagrange_multiplier"]["ensemble_max_distance"]["max"] < 1e-9


def test_formulations_vakonomic_path_distance(runs, tmp_path):
    s = draw("plot_formulations.py", runs["vak"], tmp_path, "vak", "--b", "vakonomic",
             "--distance", "path", "--pdf")
    assert (tmp_path / "vak.pdf").exists()
    assert s["coordinates"] == ["x", "y"] and s["distance"] == "path"
    i = s["trajectory"]
    with h5py.File(runs["vak"], "r") as f:
        d = np.linalg.norm(f["udwadia_kalaba/q"][i, :, :2] - f["vakonomic/q"][i, :, :2], axis=1)
    np.testing.assert_allclose(s["pairs"]["vakonomic"]["distance"], d, rtol=1e-12)
    # on a slope no lambda(0) reproduces the nonholonomic motion (Lemos 2022)
    assert s["pairs"]["vakonomic"]["ensemble_max_distance"]["min"] > 0.1


# --------------------------------------------------------------------------
# plot_diagnostics.py


@pytest.mark.parametrize("name", ["skate", "vak"])
def test_diagnostics_match_the_file(runs, tmp_path, name):
    if name == "skate":
        s = draw("plot_diagnostics.py", runs[name], tmp_path, f"diag_{name}")
    else:  # without -o: the figure goes next to the HDF5 file
        run_script("plot_diagnostics.py", runs[name], "--summary", tmp_path / "d.json")
        assert (runs["dir"] / "diagnostics.png").read_bytes()[:8] == PNG_MAGIC
        s = json.loads((tmp_path / "d.json").read_text())
    with h5py.File(runs[name], "r") as f:
        forms = [x.decode() if isinstance(x, bytes) else x for x in f.attrs["formulations"]]
        assert s["formulations"] == forms
        for form in forms:
            e = s["per_formulation"][form]
            attrs = {k[len("status_"):]: int(v)
                     for k, v in f[f"statistics/{form}"].attrs.items() if k.startswith("status_")}
            assert e["status"] == attrs  # bar heights = the file's status counts
            r = f[f"{form}/constraint_residual"][:]
            np.testing.assert_allclose(e["residual"]["max"], r.max(axis=0), rtol=1e-15)
            np.testing.assert_allclose(e["residual"]["median"], np.median(r, axis=0),
                                       rtol=1e-15)
            E = f[f"{form}/energy"][:]
            rel = np.abs(E - E[:, :1]) / np.abs(E[:, :1])
            np.testing.assert_allclose(e["energy_error"]["max"], rel.max(axis=0), rtol=1e-12)
            assert e["energy_error"]["overall_max"] == pytest.approx(rel.max(), rel=1e-12)
            assert e["residual"]["overall_max"] < 1e-8   # constraints are kept
            assert e["energy_error"]["overall_max"] < 1e-6  # ideal constraints: E conserved


# --------------------------------------------------------------------------
# plot_chaos.py: a section from a run's events, a map of Lyapunov exponents

CHAOS_COIN = """
model = "rolling_coin"
[time]
t_end = 20.0
save_every = 10.0
[integrator]
method = "dopri5"
rtol = 1e-10
atol = 1e-12
[ensemble]
sampler = "grid"
[ensemble.qd0]
theta = { linspace = [1.0, 3.0, 4] }
phi = { linspace = [-1.0, 1.0, 3] }
[[events]]
name = "half_turn"
expr = "sin(theta)"
max_records = 20
[lyapunov]
enabled = true
observables = ["theta_dot", "x_dot*cos(theta) + y_dot*sin(theta)"]
[output]
path = "chaos.h5"
fields = ["lyapunov_estimate", "lyapunov_observed_estimate"]
"""


@pytest.fixture(scope="module")
def chaos_run(tmp_path_factory):
    """12 coins on a grid of (theta_dot, phi_dot) with an event and [lyapunov]
    (the coin's tangent plugin: compiled once, in the tests' plugin cache)."""
    d = tmp_path_factory.mktemp("nholo_chaos")
    (d / "chaos.toml").write_text(textwrap.dedent(CHAOS_COIN))
    subprocess.run([os.environ["NHOLO_BINARY"], "run", "-q", "chaos.toml"], cwd=d, check=True)
    return d / "chaos.h5"


def test_chaos_section_draws_every_stored_crossing(chaos_run, tmp_path):
    s = draw("plot_chaos.py", chaos_run, tmp_path, "section", "section", "--event", "half_turn",
             "--after", "5")
    with h5py.File(chaos_run, "r") as f:
        t = f["udwadia_kalaba/events/half_turn/time"][:]
        q = f["udwadia_kalaba/events/half_turn/q"][:]
        qd = f["udwadia_kalaba/events/half_turn/qdot"][:]
    keep = np.isfinite(t) & (t >= 5)
    assert s["points"] == int(keep.sum()) > 12
    assert s["trajectories"] == 12
    # (u, omega): the contact point's speed along the heading, and theta_dot
    u = qd[..., 0] * np.cos(q[..., 3]) + qd[..., 1] * np.sin(q[..., 3])
    assert s["x_range"] == pytest.approx([u[keep].min(), u[keep].max()], rel=1e-15)
    assert s["y_range"] == pytest.approx([qd[..., 3][keep].min(), qd[..., 3][keep].max()],
                                         rel=1e-15)


def test_chaos_section_of_expressions_of_the_state(chaos_run, tmp_path):
    # any two expressions of the crossing's state: here the coin's (u, omega)
    # written out, and a coordinate against time
    s = draw("plot_chaos.py", chaos_run, tmp_path, "section_expr", "section", "--event",
             "half_turn", "--after", "5", "--x", "x_dot*cos(theta) + y_dot*sin(theta)",
             "--y", "theta_dot")
    with h5py.File(chaos_run, "r") as f:
        t = f["udwadia_kalaba/events/half_turn/time"][:]
        q = f["udwadia_kalaba/events/half_turn/q"][:]
        qd = f["udwadia_kalaba/events/half_turn/qdot"][:]
    keep = np.isfinite(t) & (t >= 5)
    u = qd[..., 0] * np.cos(q[..., 3]) + qd[..., 1] * np.sin(q[..., 3])
    assert s["points"] == int(keep.sum())
    assert s["x_range"] == pytest.approx([u[keep].min(), u[keep].max()], rel=1e-15)
    s2 = draw("plot_chaos.py", chaos_run, tmp_path, "section_t", "section", "--event",
              "half_turn", "--x", "t", "--y", "sqrt(abs(phi)) + 2^2")
    assert s2["x_range"] == pytest.approx([np.nanmin(t), np.nanmax(t)], rel=1e-15)
    phi = q[..., 2][np.isfinite(t)]
    assert s2["y_range"] == pytest.approx([np.sqrt(np.abs(phi)).min() + 4,
                                           np.sqrt(np.abs(phi)).max() + 4], rel=1e-15)
    bad = run_script("plot_chaos.py", "section", chaos_run, "--x", "nope", "--y", "t",
                     check=False)
    assert bad.returncode == 2 and "names nope" in bad.stderr
    lone = run_script("plot_chaos.py", "section", chaos_run, "--x", "t", check=False)
    assert lone.returncode == 2 and "--x and --y go together" in lone.stderr


def test_chaos_map_draws_the_exponents_on_the_grid(chaos_run, tmp_path):
    s = draw("plot_chaos.py", chaos_run, tmp_path, "map", "map")
    with h5py.File(chaos_run, "r") as f:
        lam = f["udwadia_kalaba/lyapunov"][:]
    assert s["grid"] == [3, 4] and s["x"] == "qd0.phi" and s["y"] == "qd0.theta"
    assert s["finite"] == 12
    assert s["mean"] == pytest.approx(lam.mean(), rel=1e-15)
    assert 0 < s["min"] <= s["max"] < 0.5  # integrable: small, decaying like log(t)/t
    bad = run_script("plot_chaos.py", "map", chaos_run, "--x", "qd0.nope", check=False)
    assert bad.returncode == 2 and "grid axes" in bad.stderr


def test_chaos_convergence_draws_the_running_estimates(chaos_run, tmp_path):
    s = draw("plot_chaos.py", chaos_run, tmp_path, "convergence", "convergence")
    with h5py.File(chaos_run, "r") as f:
        lam = f["udwadia_kalaba/lyapunov"][:]
        est = f["udwadia_kalaba/lyapunov_estimate"][:]
    assert est.shape == (12, 3, 1)
    assert np.array_equal(est[:, -1, 0], lam)  # the last save is the result, bit for bit
    assert s["exponents"] == 1 and s["trajectories"] == 12 and s["t_end"] == 20.0
    assert s["final"][0]["median"] == pytest.approx(np.median(lam), rel=1e-15)
    # the observables' panel: their running estimate, its last save the result
    with h5py.File(chaos_run, "r") as f:
        obs = f["udwadia_kalaba/lyapunov_observed"][:]
        obs_est = f["udwadia_kalaba/lyapunov_observed_estimate"][:]
    assert obs_est.shape == (12, 3, 1) and np.array_equal(obs_est[:, -1, 0], obs)
    assert s["observed"]["median"] == pytest.approx(np.median(obs), rel=1e-15)
    bad = run_script("plot_chaos.py", "convergence", str(tmp_path / "none.h5"), check=False)
    assert bad.returncode != 0


RATTLEBACK = """
model = "{model}"
[time]
t_end = 8.0
save_every = 0.02
[integrator]
method = "dop853"
rtol = 1e-12
atol = 1e-13
[ensemble]
sampler = "grid"
[ensemble.q0]
theta = 0.01
phi = 0.01
[ensemble.qd0]
psi = {{ values = [-3.0, -2.0, 2.0, 3.0] }}
[output]
path = "rattleback.h5"
fields = ["q", "qdot", "energy"]
"""


def test_rattleback_spin_reversal_against_newton_euler(tmp_path):
    """plot_rattleback.py on four rattlebacks (examples/models/rattleback.model.toml:
    the plugin compiled once, in the tests' plugin cache): the Newton-Euler
    reference of scripts/rattleback_reference.py (psi' from -3 rad/s crosses 0
    between 5.0 and 5.5 s; from +3 rad/s it keeps its sign for 20 s) and nholo agree."""
    model = Path(__file__).resolve().parents[2] / "examples" / "models" / "rattleback.model.toml"
    (tmp_path / "rb.toml").write_text(RATTLEBACK.format(model=model))
    subprocess.run([os.environ["NHOLO_BINARY"], "run", "-q", "rb.toml"], cwd=tmp_path, check=True)
    s = draw("plot_rattleback.py", tmp_path / "rattleback.h5", tmp_path, "rattleback",
             "--reference-every", "1")
    assert s["reference_max_q_difference"] < 1e-9
    assert s["initial_spin"] == [-3.0, -2.0, 2.0, 3.0]
    assert 5.0 < s["first_reversal"][0] < 5.5
    assert s["first_reversal"][1] > s["first_reversal"][0]
    assert s["first_reversal"][2] is None and s["first_reversal"][3] is None
    assert s["energy_relative_drift_max"] < 1e-9


# --------------------------------------------------------------------------
# command line (the runs of a test go concurrently: each starts matplotlib)


def run_many(calls):
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("DISPLAY", None)
    procs = [subprocess.Popen([sys.executable, str(SCRIPTS / script), *map(str, args)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for script, *args in calls]
    results = []
    for p in procs:
        out, err = p.communicate()
        results.append((p.returncode, out, err))
    return results


def test_help():
    scripts = ["plot_coin_drift.py", "plot_survey.py", "plot_formulations.py",
               "plot_diagnostics.py", "plot_chaos.py", "plot_rattleback.py"]
    for script, (rc, out, err) in zip(scripts, run_many([(s, "--help") for s in scripts])):
        assert rc == 0, f"{script} --help: {err}"
        assert "usage:" in out and "--summary" in out and "--pdf" in out, script


def test_wrong_input_is_a_clear_error(runs, tmp_path):
    png = tmp_path / "never.png"
    results = run_many([
        ("plot_coin_drift.py", runs["skate"], "-o", png),      # not a rolling coin
        ("plot_survey.py", runs["coin"], "-o", png),           # random, not a grid
        ("plot_formulations.py", runs["coin"], "-o", png),     # one formulation only
        ("plot_diagnostics.py", tmp_path / "missing.h5"),      # no such file
    ])
    expected = ["rolling_coin", "grid", "one formulation", "no such file"]
    for (rc, out, err), words in zip(results, expected):
        assert rc == 2 and words in err, (rc, out, err)
        assert "Traceback" not in err
    assert not png.exists()


def test_a_parameter_sweep_is_refused_by_one_parameter_scripts(tmp_path):
    """A file whose slope varies per trajectory ([ensemble.params]): the
    scripts that need one slope say so (exit 2), no traceback, no figure."""
    text = COIN.replace("slope = 0.3\n", "").replace("size = 48", "size = 8").replace(
        "t_end = 40.0", "t_end = 1.0") + "[ensemble.params]\nslope = { uniform = [0.1, 0.3] }\n"
    (tmp_path / "sweep.toml").write_text(textwrap.dedent(text).replace('"coin.h5"', '"sweep.h5"'))
    subprocess.run([os.environ["NHOLO_BINARY"], "run", "-q", "sweep.toml"], cwd=tmp_path, check=True)
    with h5py.File(tmp_path / "sweep.h5") as f:
        assert list(f["initial/params"].attrs["names"]) == ["slope"]
    png = tmp_path / "never.png"
    p = run_script("plot_coin_drift.py", tmp_path / "sweep.h5", "-o", png, check=False)
    assert p.returncode == 2 and "varies per trajectory" in p.stderr, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr
    assert not png.exists()
