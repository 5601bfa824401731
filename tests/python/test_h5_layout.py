"""nholo's HDF5 output layout (docs/usage.md, "Output (HDF5)"), read by h5py and xarray.

Runs the C++ program h5_layout_writer (tests/h5_layout_writer.cpp, written
through host/io/h5.hpp; its path comes in the environment variable
NHOLO_H5_LAYOUT_WRITER, which ctest's python_h5_layout sets) to write the
layout with synthetic values to a temporary directory, then checks that

  * h5py sees the groups, shapes, types, dimension scales, filters and fill;
  * xarray.open_dataset(path, engine="h5netcdf", group=...) gives every
    variable its named dimensions (trajectory, time, coordinate, constraint)
    with coordinate values, including the string-valued `coordinate`, so that
    ds.q.sel(coordinate="x") works;
  * the root attributes read back through h5py and xarray;
  * an interrupted run (--partial) is readable: complete = 0, unfinished
    trajectories have status -1 and NaN data.

Synthetic values (see h5_layout_writer.cpp), i trajectory, k time index,
c coordinate, j constraint:
  time = 0.1 k, q = 1000 i + k + 0.1 c, qdot = -0.5 q,
  multiplier = i + 0.01 k + 100 j, constraint_residual = 1e-12 (i+1)(k+1),
  energy = 1 + i + 0.25 k, status = (i % 3 == 2), steps = 100 + 10 i.
"""

import datetime
import os
import subprocess

import h5py
import numpy as np
import pytest
import xarray as xr

N, T, NC, NM = 10, 7, 4, 2
COORDINATES = ["x", "y", "phi", "theta"]
UK = "udwadia_kalaba"


def writer():
    exe = os.environ.get("NHOLO_H5_LAYOUT_WRITER")
    if not exe:
        pytest.fail(
            "NHOLO_H5_LAYOUT_WRITER is not set: run this test through ctest "
            "(ctest -R python_h5_layout) or point it at the built h5_layout_writer"
        )
    if not os.access(exe, os.X_OK):
        pytest.fail(f"NHOLO_H5_LAYOUT_WRITER={exe!r} is not an executable (build h5_layout_writer)")
    return exe


def write(path, *extra):
    run = subprocess.run(
        [writer(), str(path), *extra], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return path


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    return write(tmp_path_factory.mktemp("h5") / "layout.h5")


@pytest.fixture(scope="module")
def partial(tmp_path_factory):
    return write(tmp_path_factory.mktemp("h5") / "partial.h5", "--partial")


def expected():
    i = np.arange(N)[:, None, None]
    k = np.arange(T)[None, :, None]
    c = np.arange(NC)[None, None, :]
    j = np.arange(NM)[None, None, :]
    q = 1000.0 * i + k + 0.1 * c
    return {
        "time": 0.1 * np.arange(T),
        "q": q,
        "qdot": -0.5 * q,
        "multiplier": 1.0 * i + 0.01 * k + 100.0 * j,
        "constraint_residual": (1e-12 * (i + 1) * (k + 1))[:, :, 0],
        "energy": (1.0 + i + 0.25 * k)[:, :, 0],
        "status": (np.arange(N) % 3 == 2).astype(np.int32),
        "steps": 100 + 10 * np.arange(N, dtype=np.int64),
    }


DIMS = {
    "q": ("trajectory", "time", "coordinate"),
    "qdot": ("trajectory", "time", "coordinate"),
    "multiplier": ("trajectory", "time", "constraint"),
    "constraint_residual": ("trajectory", "time"),
    "energy": ("trajectory", "time"),
    "status": ("trajectory",),
    "steps": ("trajectory",),
}
SIZES = {"trajectory": N, "time": T, "coordinate": NC, "constraint": NM}


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-14, atol=0)


# ---------------------------------------------------------------- h5py


def test_h5py_groups_shapes_types_and_scales(layout):
    with h5py.File(layout, "r") as f:
        assert set(f.keys()) == {UK, "initial", "statistics"}
        assert set(f["statistics"].keys()) == {UK}
        g = f[UK]
        for name in ["trajectory", "time", "coordinate", "constraint"]:
            assert g[name].is_scale, name
            assert g[name].shape == (SIZES[name],)
        for name, dims in DIMS.items():
            d = g[name]
            assert d.shape == tuple(SIZES[x] for x in dims), name
            # each axis carries exactly the scale of its dimension (same group)
            for axis, dim in enumerate(dims):
                assert len(d.dims[axis]) == 1, (name, axis)
                assert d.dims[axis][0].name == f"/{UK}/{dim}", (name, axis)
        assert g["q"].dtype == np.float64
        assert g["status"].dtype == np.int32
        assert g["steps"].dtype == np.int64
        assert g["trajectory"].dtype == np.int64
        assert g["coordinate"].dtype.kind == "O"  # variable-length strings
        assert h5py.check_string_dtype(g["coordinate"].dtype).encoding == "utf-8"
        # chunked, shuffled, deflated; NaN fill for floats, -1 for status
        assert g["q"].chunks is not None
        assert g["q"].compression == "gzip" and g["q"].shuffle
        assert np.isnan(g["q"].fillvalue)
        assert g["status"].fillvalue == -1
        q0 = f["initial/q0"]
        assert q0.shape == (N, NC)
        assert [q0.dims[a][0].name for a in range(2)] == ["/initial/trajectory", "/initial/coordinate"]
        mean = f[f"statistics/{UK}/mean"]
        assert mean.shape == (T, NC)
        assert [mean.dims[a][0].name for a in range(2)] == [
            f"/statistics/{UK}/time",
            f"/statistics/{UK}/coordinate",
        ]


def test_h5py_values(layout):
    want = expected()
    with h5py.File(layout, "r") as f:
        g = f[UK]
        close(g["time"][:], want["time"])
        for name in ["q", "qdot", "multiplier", "constraint_residual", "energy"]:
            close(g[name][:], want[name])
        np.testing.assert_array_equal(g["status"][:], want["status"])
        np.testing.assert_array_equal(g["steps"][:], want["steps"])
        np.testing.assert_array_equal(g["trajectory"][:], np.arange(N))
        np.testing.assert_array_equal(g["constraint"][:], np.arange(NM))
        assert list(g["coordinate"].asstr()[:]) == COORDINATES
        close(f["initial/q0"][:], want["q"][:, 0, :])
        close(f[f"statistics/{UK}/mean"][:], want["q"].mean(axis=0))
        assert not np.isnan(g["q"][:]).any()


def test_h5py_root_attributes(layout):
    with h5py.File(layout, "r") as f:
        a = f.attrs
        assert a["model"] == "rolling_coin"  # str, not bytes (vlen UTF-8)
        assert isinstance(a["model"], str)
        assert list(a["formulations"]) == [UK]
        assert a["nholo_version"] == "0.1.0"
        assert a["git_revision"] == "unknown"
        assert 'model = "rolling_coin"' in a["config"] and "φ θ" in a["config"]
        assert a["config"].count("\n") > 10
        created = datetime.datetime.fromisoformat(a["created"].replace("Z", "+00:00"))
        assert created.tzinfo is not None
        assert abs(datetime.datetime.now(datetime.timezone.utc) - created) < datetime.timedelta(hours=1)
        assert a["complete"] == 1
        assert np.asarray(a["complete"]).dtype == np.int64
        assert f[f"{UK}/q"].attrs["long_name"] == "generalized coordinates"
        assert f[f"{UK}/time"].attrs["units"] == "s"


# ---------------------------------------------------------------- xarray


def test_xarray_named_dimensions_and_values(layout):
    want = expected()
    with xr.open_dataset(layout, engine="h5netcdf", group=UK) as ds:
        assert dict(ds.sizes) == SIZES
        assert set(ds.data_vars) == set(DIMS)
        for name, dims in DIMS.items():
            assert ds[name].dims == dims, name
        # every dimension is an indexed coordinate with its values
        assert set(ds.indexes) == set(SIZES)
        assert ds.coordinate.values.tolist() == COORDINATES
        np.testing.assert_array_equal(ds.trajectory.values, np.arange(N))
        np.testing.assert_array_equal(ds.constraint.values, np.arange(NM))
        assert ds.time.dtype == np.float64  # units "s" is not decoded as a timedelta
        close(ds.time.values, want["time"])
        for name in ["q", "qdot", "multiplier", "constraint_residual", "energy"]:
            close(ds[name].values, want[name])
        assert ds.status.dtype == np.int32
        np.testing.assert_array_equal(ds.status.values, want["status"])
        np.testing.assert_array_equal(ds.steps.values, want["steps"])
        # selection by coordinate name (string dimension coordinate)
        close(ds.q.sel(coordinate="x").values, want["q"][:, :, 0])
        close(ds.q.sel(coordinate="theta", trajectory=3).values, want["q"][3, :, 3])
        close(ds.qdot.sel(coordinate=["phi", "y"]).values, want["qdot"][:, :, [2, 1]])
        close(ds.q.sel(time=0.3, method="nearest").values, want["q"][:, 3, :])
        close(ds.multiplier.sel(constraint=1).values, want["multiplier"][:, :, 1])
        assert ds.q.attrs["long_name"] == "generalized coordinates"


def test_xarray_initial_and_statistics_groups(layout):
    want = expected()
    with xr.open_dataset(layout, engine="h5netcdf", group="initial") as ini:
        assert ini.q0.dims == ("trajectory", "coordinate")
        assert ini.coordinate.values.tolist() == COORDINATES
        close(ini.q0.sel(coordinate="phi").values, want["q"][:, 0, 2])
    with xr.open_dataset(layout, engine="h5netcdf", group=f"statistics/{UK}") as st:
        # `mean` (like min, max, var) is also a Dataset method: index, don't dot
        assert st["mean"].dims == ("time", "coordinate")
        assert dict(st.sizes) == {"time": T, "coordinate": NC}
        close(st["mean"].sel(coordinate="y").values, want["q"].mean(axis=0)[:, 1])
        close(st.time.values, want["time"])


def test_xarray_root_attributes(layout):
    with xr.open_dataset(layout, engine="h5netcdf") as root:
        a = root.attrs
        assert a["model"] == "rolling_coin"
        # a one-element string list comes back as a plain str through
        # h5netcdf (netCDF semantics); np.atleast_1d reads both forms
        assert np.atleast_1d(a["formulations"]).tolist() == [UK]
        assert a["nholo_version"] == "0.1.0"
        assert a["git_revision"] == "unknown"
        assert "[integrator]" in a["config"]
        assert a["created"].endswith("Z")
        assert int(a["complete"]) == 1


def test_xarray_datatree_opens_the_whole_file(layout):
    tree = xr.open_datatree(layout, engine="h5netcdf")
    try:
        assert tree.attrs["model"] == "rolling_coin"
        assert tree[UK].q.dims == DIMS["q"]
        assert tree["initial"].q0.dims == ("trajectory", "coordinate")
        assert tree[f"statistics/{UK}"]["mean"].dims == ("time", "coordinate")
    finally:
        tree.close()


# ---------------------------------------------------------------- interrupted run


def test_partial_file_marks_unfinished_trajectories(partial):
    want = expected()
    done = 8  # the writer leaves the last slice [8, 10) unwritten
    with h5py.File(partial, "r") as f:
        assert f.attrs["complete"] == 0
    with xr.open_dataset(partial, engine="h5netcdf", group=UK) as ds:
        np.testing.assert_array_equal(ds.status.values[:done], want["status"][:done])
        np.testing.assert_array_equal(ds.status.values[done:], [-1] * (N - done))
        close(ds.q.values[:done], want["q"][:done])
        assert np.isnan(ds.q.values[done:]).all()
        assert np.isnan(ds.energy.values[done:]).all()
        finished = ds.sel(trajectory=ds.status >= 0)
        assert finished.sizes["trajectory"] == done


def test_writer_refuses_to_overwrite(layout):
    run = subprocess.run([writer(), str(layout)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert str(layout) in run.stderr
    with h5py.File(layout, "r") as f:  # untouched
        assert f.attrs["complete"] == 1
