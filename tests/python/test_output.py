"""The nholo command's HDF5 output read the way users read it: h5py and
xarray (engine="h5netcdf") with named dimensions, attributes and values.

Runs the nholo binary named by $NHOLO_BINARY on a small rolling-coin ensemble.
"""
import os
import subprocess
import textwrap

import h5py
import numpy as np
import pytest
import xarray as xr

CONFIG = textwrap.dedent(
    """
    model = "rolling_coin"
    formulations = ["udwadia_kalaba", "lagrange_multiplier"]
    [params]
    radius = 0.5
    slope = 0.2
    [time]
    t_end = 2.0
    save_every = 0.5
    [integrator]
    method = "dop853"
    rtol = 1e-12
    atol = 1e-12
    [ensemble]
    size = 50
    seed = 3
    [ensemble.q0]
    theta = { uniform = [0.0, 6.0] }
    [ensemble.qd0]
    theta = { uniform = [1.0, 2.0] }
    phi = { uniform = [-1.0, 1.0] }
    [output]
    path = "out.h5"
    fields = ["q", "qdot", "multiplier", "constraint_residual", "energy"]
    """
)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    binary = os.environ.get("NHOLO_BINARY")
    if not binary:
        pytest.fail("NHOLO_BINARY is not set: run this test through ctest")
    d = tmp_path_factory.mktemp("nholo_output")
    (d / "coin.toml").write_text(CONFIG)
    subprocess.run([binary, "run", "-q", "coin.toml"], cwd=d, check=True)
    return d / "out.h5"


def test_h5py_layout_and_attributes(result):
    with h5py.File(result, "r") as f:
        assert f.attrs["model"] == "rolling_coin"
        assert list(f.attrs["formulations"]) == ["udwadia_kalaba", "lagrange_multiplier"]
        assert f.attrs["complete"] == 1
        assert "rolling_coin" in f.attrs["config"]
        assert f.attrs["nholo_version"]
        assert f.attrs["git_revision"]
        assert f.attrs["param_radius"] == 0.5
        g = f["udwadia_kalaba"]
        assert g["q"].shape == (50, 5, 4)
        assert g["multiplier"].shape == (50, 5, 2)
        assert g["time"][:].tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]
        assert (g["status"][:] == 0).all()
        # the first save is the initial state
        np.testing.assert_array_equal(g["q"][:, 0, :], f["initial/q0"][:])
        np.testing.assert_array_equal(g["qdot"][:, 0, :], f["initial/qdot0"][:])
        # x and y velocities were completed from the rolling constraints
        qd0 = f["initial/qdot0"][:]
        q0 = f["initial/q0"][:]
        np.testing.assert_allclose(qd0[:, 0], 0.5 * qd0[:, 2] * np.sin(q0[:, 3]), atol=1e-13)
        np.testing.assert_allclose(qd0[:, 1], 0.5 * qd0[:, 2] * np.cos(q0[:, 3]), atol=1e-13)
        # ensemble statistics agree with the data
        mean = f["statistics/udwadia_kalaba/mean"][:]
        np.testing.assert_allclose(mean, g["q"][:].mean(axis=0), rtol=1e-12, atol=1e-12)
        var = f["statistics/udwadia_kalaba/variance"][:]
        np.testing.assert_allclose(var, g["q"][:].var(axis=0, ddof=1), rtol=1e-10, atol=1e-12)
        # both formulations integrate the same initial states to the same motion
        np.testing.assert_allclose(f["lagrange_multiplier/q"][:], g["q"][:], atol=1e-9)
        assert f["compare/udwadia_kalaba__lagrange_multiplier/max_distance"][:].max() < 1e-9


def test_xarray_named_dimensions(result):
    ds = xr.open_dataset(result, engine="h5netcdf", group="udwadia_kalaba")
    assert ds["q"].dims == ("trajectory", "time", "coordinate")
    assert ds["multiplier"].dims == ("trajectory", "time", "constraint")
    assert ds["energy"].dims == ("trajectory", "time")
    assert ds.sizes["trajectory"] == 50
    assert list(ds["coordinate"].values) == ["x", "y", "phi", "theta"]
    # theta advances at its constant rate: theta(t) = theta0 + theta_dot0 t
    th = ds["q"].sel(coordinate="theta")
    thd = ds["qdot"].sel(coordinate="theta").isel(time=0)
    expected = th.isel(time=0) + thd * ds["time"]
    np.testing.assert_allclose(th.values, expected.transpose("trajectory", "time").values, atol=1e-9)
    # energy is conserved (ideal, scleronomic constraints)
    e = ds["energy"].values
    np.testing.assert_allclose(e, e[:, :1].repeat(e.shape[1], axis=1), rtol=1e-9, atol=1e-9)
    root = xr.open_dataset(result, engine="h5netcdf")
    assert root.attrs["model"] == "rolling_coin"
    stats = xr.open_dataset(result, engine="h5netcdf", group="statistics/udwadia_kalaba")
    assert stats["mean"].dims == ("time", "coordinate")


def test_every_chunk_carries_a_checksum_that_readers_check(result, tmp_path):
    # every chunked dataset carries HDF5's Fletcher-32 (the per-trajectory
    # ones written in place by their slices, each chunk with its checksum)
    # but the fields of every save written in place (output.compression = 0)
    fields = {"q", "qdot", "multiplier", "constraint_residual", "energy"}
    with h5py.File(result, "r") as f:
        chunked = []
        f.visititems(lambda n, o: chunked.append(n)
                     if isinstance(o, h5py.Dataset) and o.chunks else None)
        assert "initial/q0" in chunked and "udwadia_kalaba/status" in chunked
        assert "compare/udwadia_kalaba__lagrange_multiplier/max_distance" in chunked
        for name in chunked:
            assert f[name].fletcher32 == (name.split("/")[-1] not in fields), name
        info = f["initial/q0"].id.get_chunk_info(0)
        steps = f["udwadia_kalaba/steps"][:]
    damaged = tmp_path / "damaged.h5"
    data = bytearray(result.read_bytes())
    data[info.byte_offset + info.size // 2] ^= 0x08
    damaged.write_bytes(bytes(data))
    with h5py.File(damaged, "r") as f:
        np.testing.assert_array_equal(f["udwadia_kalaba/steps"][:], steps)  # other chunks read
        with pytest.raises(OSError):
            f["initial/q0"][:]
    # compressed, the fields carry it too
    binary = os.environ["NHOLO_BINARY"]
    (tmp_path / "coin.toml").write_text(CONFIG + "compression = 4\n")
    subprocess.run([binary, "run", "-q", "coin.toml"], cwd=tmp_path, check=True)
    with h5py.File(tmp_path / "out.h5", "r") as f, h5py.File(result, "r") as g:
        assert f["udwadia_kalaba/q"].fletcher32 and f["udwadia_kalaba/q"].compression == "gzip"
        np.testing.assert_array_equal(f["udwadia_kalaba/q"][:], g["udwadia_kalaba/q"][:])
