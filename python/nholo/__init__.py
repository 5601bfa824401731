"""nholo: ensembles of constrained mechanical systems, in Python.

    import nholo
    tree = nholo.run("examples/rolling_coin.toml", set={"ensemble.size": 10_000})
    tree["udwadia_kalaba"].ds.q.sel(coordinate="x")

The run is nholo's own pipeline (the ``nholo run`` command's code) in this
process, on the GPU or the CPU cores; the results are an xarray.DataTree
with the layout of nholo's result file. docs/python.md has the whole API.
"""
from ._api import (
    ConfigError,
    DeviceError,
    Model,
    ModelError,
    check,
    models,
    run,
    version,
)

__all__ = ["run", "check", "models", "Model", "version", "ConfigError", "ModelError", "DeviceError"]
__version__ = version().split()[0]
