"""nholo's Python API (python/nholo, docs/python.md) against the command.

Run by scripts/test.sh against the installed package (pip install .), and by
ctest (python_api) against a build folder's BUILD/python. NHOLO_BINARY names
the nholo command to compare with (else the package's `nholo`).

    python3 -m pytest tests/python/test_python_api.py
"""
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr

import nholo

ROOT = Path(__file__).resolve().parents[2]
COIN = ROOT / "examples" / "rolling_coin.toml"
SLEIGH_MODEL = ROOT / "examples" / "models" / "chaplygin_sleigh.model.toml"

# a small coin run: two formulations, q and qdot at 11 saves
SMALL = {
    "ensemble.size": 96,
    "time.t_end": 1.0,
    "time.save_every": 0.1,
    "formulations": ["udwadia_kalaba", "null_space"],
    "output.fields": ["q", "qdot", "constraint_residual"],
    "backend.device": "omp",
    "backend.threads": 2,
}


def nholo_command():
    exe = os.environ.get("NHOLO_BINARY")
    return [exe] if exe else [sys.executable, "-m", "nholo._cli"]


def cli_run(config, path, sets):
    args = [*nholo_command(), "run", str(config), "-q", "--overwrite", "--set", f"output.path=\"{path}\""]
    for k, v in sets.items():
        args += ["--set", f"{k}={nholo._toml.value(v)}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return path


def h5_datasets(path):
    """every dataset of the file: name -> array"""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[()]
        f.visititems(visit)
    return out


def equal_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if b.dtype.kind in "OS":  # strings as h5py reads them
        b = np.array([x.decode() if isinstance(x, bytes) else x for x in b.ravel()]).reshape(b.shape)
        return a.shape == b.shape and bool(np.all(a.astype(str) == b.astype(str)))
    if a.dtype.kind == "f":
        return a.shape == b.shape and np.array_equal(a.view(np.uint8), np.asarray(b, a.dtype).view(np.uint8))
    return a.shape == b.shape and np.array_equal(a, b)


def test_results_are_bitwise_those_of_the_command(tmp_path):
    want = h5_datasets(cli_run(COIN, tmp_path / "cli.h5", SMALL))
    tree = nholo.run(COIN, set=SMALL)
    assert isinstance(tree, xr.DataTree)
    assert tree.attrs["model"] == "rolling_coin"
    assert tree.attrs["backend"] == "omp"
    compared = 0
    for name, values in want.items():
        group, _, var = name.rpartition("/")
        node = tree[group] if group else tree
        if var not in node.variables:
            continue  # HDF5 dimension scales without a variable of their own
        assert equal_bits(node[var].values, values), name
        compared += 1
    # every per-trajectory field, the initial states and the statistics
    for name in ["udwadia_kalaba/q", "null_space/qdot", "initial/q0", "udwadia_kalaba/status",
                 "statistics/udwadia_kalaba/mean", "statistics/udwadia_kalaba/drift_ratio"]:
        assert name in want, name
    assert compared >= 20
    q = tree["udwadia_kalaba"].ds.q
    assert q.dims == ("trajectory", "time", "coordinate")
    assert q.sel(coordinate="x").shape == (96, 11)


def test_fields_come_from_the_run_without_a_copy(tmp_path):
    """Without output=, the run writes the per-save fields into the arrays
    the tree holds (host/io/field_memory.hpp); the tree is the one a kept
    file gives: the same variables in the same order, dims, attrs, bits."""
    held = nholo.run(COIN, set=SMALL)
    kept = nholo.run(COIN, set=SMALL, output=tmp_path / "coin.h5")
    for node in kept.subtree:
        a, b = held[node.path].to_dataset(inherit=False), node.to_dataset(inherit=False)
        assert list(a.data_vars) == list(b.data_vars), node.path
        # every scale, also one no variable uses (the coin's constraint names)
        assert sorted(a.coords) == sorted(b.coords), node.path
        for name in b.data_vars:
            assert a[name].dims == b[name].dims, (node.path, name)
            assert a[name].attrs.keys() == b[name].attrs.keys(), (node.path, name)
            for key, value in b[name].attrs.items():
                assert equal_bits(a[name].attrs[key], value), (node.path, name, key)
            assert equal_bits(a[name].values, b[name].values), (node.path, name)
    for form in ("udwadia_kalaba", "null_space"):
        for name in ("q", "qdot"):
            values = held[form].ds[name].values
            # no copy: a view of the buffer the run wrote (the module's
            # nanobind ndarray), where the kept file's are arrays read from it
            assert not values.flags.owndata and isinstance(values.base, memoryview), (form, name)
            assert type(values.base.obj).__qualname__ == "nb_ndarray", (form, name)
            assert not isinstance(kept[form].ds[name].values.base, memoryview)
    with h5py.File(tmp_path / "coin.h5", "r") as f:
        assert f["udwadia_kalaba/q"].id.get_storage_size() > 0


def test_a_dict_config_and_text_give_the_same_results():
    text = COIN.read_text()
    a = nholo.run(text, set=SMALL)
    cfg = {
        "model": "rolling_coin",
        "formulations": ["udwadia_kalaba"],
        "params": {"slope": 0.3, "radius": 0.5},
        "time": {"t_end": 1.0, "save_every": 0.1},
        "integrator": {"method": "dopri5", "rtol": 1e-10, "atol": 1e-12, "drift": "project"},
        "ensemble": {"size": 96, "seed": 42,
                     "q0": {"x": 0.0, "y": 0.0, "phi": 0.0, "theta": {"uniform": [0.0, 6.283185307179586]}},
                     "qd0": {"theta": {"uniform": [1.0, 3.0]}, "phi": {"normal": [0.0, 2.0]}}},
        "output": {"fields": ["q"]},
        "backend": {"device": "omp"},
    }
    b = nholo.run(cfg)
    assert equal_bits(a["udwadia_kalaba"].ds.q.values, b["udwadia_kalaba"].ds.q.values)


def test_numpy_initial_states_and_parameters_are_used_as_given():
    rng = np.random.default_rng(7)
    n = 40
    q0 = np.column_stack([rng.normal(size=n), rng.normal(size=n), rng.uniform(0, 6, n), rng.uniform(0, 6, n)])
    slope = rng.uniform(0.05, 0.6, n)
    tree = nholo.run(COIN, set=SMALL, q0=q0, params={"slope": slope})
    ini = tree["initial"].ds
    assert equal_bits(ini.q0.values, q0)
    assert tree.attrs["ensemble_sampler"] == "file"
    params = ini.params.values
    assert equal_bits(params[:, list(ini.params.parameter.values).index("slope")], slope)
    assert tree["udwadia_kalaba"].ds.q.shape[0] == n
    # the trajectory starts where it was put
    assert equal_bits(tree["udwadia_kalaba"].ds.q.values[:, 0, :], q0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(q0=np.zeros((5, 3))), "shape (5, 3), accepted (trajectories, 4)"),
        (dict(q0=np.full((5, 4), np.nan)), "not finite"),
        (dict(q0=np.array([["a"] * 4] * 2)), "numeric array"),
        (dict(q0=np.zeros((5, 4)), qdot0=np.zeros((6, 4))), "6 rows, but the other arrays have 5"),
        (dict(q0=np.zeros((5, 4)), params={"tilt": np.ones(5)}), "'tilt' is not a parameter"),
        (dict(q0=np.zeros((5, 4)), params={"slope": np.array([0.1, 0.2, 5.0, 0.1, 0.1])}),
         "params['slope'][2] = 5.0 is outside the range model 'rolling_coin' allows"),
        (dict(threads=-1), "threads: -1"),
        (dict(backend="gpu"), "'gpu' is not a backend"),
        (dict(set={"integrator.rtoll": 1e-9}), "rtoll"),
        (dict(set={"ensemble.size": -3}), "ensemble.size"),
    ],
)
def test_bad_input_raises_with_the_message_and_writes_nothing(tmp_path, kwargs, message):
    out = tmp_path / "never.h5"
    kw = dict(kwargs)
    kw["set"] = {**SMALL, **kw.get("set", {})}
    with pytest.raises(nholo.ConfigError) as e:
        nholo.run(COIN, output=out, **kw)
    assert message in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_fields_that_do_not_fit_in_memory_are_refused_before_the_run():
    # 2e8 coins x 11 saves x 4 coordinates: far more than any test machine has
    with pytest.raises(nholo.ConfigError) as e:
        nholo.run(COIN, set={**SMALL, "ensemble.size": 200_000_000})
    assert "output.fields" in str(e.value) and "more than the" in str(e.value)
    assert "output=PATH" in str(e.value)


def test_check_models_and_errors():
    assert nholo.check(COIN, set=SMALL).startswith("config ok: model rolling_coin")
    names = [m["name"] for m in nholo.models()]
    assert "rolling_coin" in names and "skate" in names
    with pytest.raises(nholo.ConfigError, match="no_such_model"):
        nholo.check({"model": "no_such_model"})
    with pytest.raises(nholo.ConfigError, match="neither a file nor TOML"):
        nholo.run("no/such/file.toml")
    # a device this build or machine does not have (no GPU, or not GPU 99)
    with pytest.raises(nholo.DeviceError, match="backend"):
        nholo.run(COIN, set={**SMALL, "backend.gpu": 99}, backend="cuda")
    with pytest.raises(nholo.ModelError):
        nholo.Model.from_string('name = "broken"\ncoordinates = [ { name = "x" } ]\nlagrangian = "x_dot^"\n')


def test_output_keeps_the_file_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "coin.h5"
    tree = nholo.run(COIN, set=SMALL, output=out)
    assert out.is_file()
    with h5py.File(out, "r") as f:
        assert equal_bits(f["udwadia_kalaba/q"][()], tree["udwadia_kalaba"].ds.q.values)
    with pytest.raises(nholo.ConfigError, match="exists; pass overwrite=True"):
        nholo.run(COIN, set=SMALL, output=out)
    nholo.run(COIN, set=SMALL, output=out, overwrite=True)


def test_progress_callback_and_the_gil_released_while_running():
    calls = []
    ticks = [0]
    stop = threading.Event()

    def other_python_thread():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    t = threading.Thread(target=other_python_thread)
    t.start()
    try:
        start = ticks[0]
        nholo.run(COIN, set={**SMALL, "ensemble.size": 4096, "time.t_end": 4.0},
                  progress=lambda done, total: calls.append((done, total)))
        ran = ticks[0] - start
    finally:
        stop.set()
        t.join()
    assert ran > 50, "another Python thread did not run while nholo integrated"
    assert calls and calls[-1][0] == calls[-1][1] > 0
    assert all(d <= tot for d, tot in calls)


def test_two_runs_in_two_python_threads():
    results = [None, None]
    errors = []

    def one(i):
        try:
            results[i] = nholo.run(COIN, set=SMALL)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert equal_bits(results[0]["udwadia_kalaba"].ds.q.values, results[1]["udwadia_kalaba"].ds.q.values)


def test_keyboard_interrupt_stops_the_run_promptly(tmp_path):
    # Python's own SIGINT handler, also where the tests were started with
    # SIGINT ignored (a background job of a non-interactive shell: Python then
    # leaves it ignored and the signal below would never arrive)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    out = tmp_path / "long.h5"
    long_run = {**SMALL, "ensemble.size": 200_000, "time.t_end": 50.0, "time.save_every": 1.0,
                "output.fields": []}
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        nholo.run(COIN, set=long_run, output=out)
    elapsed = time.monotonic() - t0
    timer.cancel()
    # stopped at the next safe point, not at the end of the run (minutes)
    assert elapsed < 20, elapsed
    assert not out.exists()
    # the next run is not stopped by the old interrupt
    tree = nholo.run(COIN, set=SMALL)
    assert int(tree.attrs["complete"]) == 1


def test_memory_is_returned_when_the_tree_is_released():
    tree = nholo.run(COIN, set={**SMALL, "ensemble.size": 2048})
    q = weakref.ref(tree["udwadia_kalaba"].ds.q.values)
    assert q() is not None
    del tree
    gc.collect()
    assert q() is None


def test_a_model_from_a_string_runs():
    model = nholo.Model.from_string(SLEIGH_MODEL.read_text(), name="chaplygin_sleigh")
    assert "chaplygin_sleigh" in model.description
    cfg = (ROOT / "examples" / "models" / "chaplygin_sleigh.toml").read_text()
    tree = nholo.run(cfg.replace('model = "chaplygin_sleigh.model.toml"', f'model = "{model.path}"'),
                     set={"ensemble.size": 64, "time.t_end": 1.0, "backend.device": "omp"})
    assert tree.attrs["model"] == "chaplygin_sleigh"
    assert (tree["udwadia_kalaba"].ds.status.values == 0).all()


@pytest.mark.parametrize(
    "script, args, printed",
    [
        ("coin_slope_sweep.py", ["--size", "128", "--slopes", "2", "--t-end", "4"], "drift ratio mean"),
        ("sleigh_formulations.py", ["--size", "32"], "null_space"),
    ],
)
def test_the_python_examples_run(tmp_path, script, args, printed):
    out = tmp_path / "figure.png"
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / script), *args,
                        "--backend", "omp", "--out", str(out)],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "MPLBACKEND": "Agg"})
    assert r.returncode == 0, r.stderr
    assert printed in r.stdout
    assert out.stat().st_size > 10_000


def test_events_and_lyapunov_exponents_are_in_the_tree(tmp_path):
    sets = {"ensemble.size": 64, "time.t_end": 3.0, "backend.device": "omp"}
    out = tmp_path / "events.h5"
    tree = nholo.run(ROOT / "examples" / "rolling_coin_events.toml", set=sets, output=out)
    ev = tree["udwadia_kalaba/events/half_turn"].to_dataset(inherit=False)
    with h5py.File(out, "r") as f:
        assert equal_bits(ev.time.values, f["udwadia_kalaba/events/half_turn/time"][()])
        assert equal_bits(ev["count"].values, f["udwadia_kalaba/events/half_turn/count"][()])
    assert ev["count"].values.sum() > 0
    # the exponents of the coin (its tangent plugin, compiled on first use)
    tree = nholo.run(COIN, set={**SMALL, "lyapunov.enabled": True, "time.t_end": 5.0})
    ly = tree["udwadia_kalaba"].ds.lyapunov.values
    assert ly.shape == (96,) and np.all(np.isfinite(ly)) and np.all(ly > 0)
