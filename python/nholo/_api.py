"""nholo's Python API: runs in this process, results as xarray.

The run is nholo's own pipeline (the same code as ``nholo run``) in this
process; its results come back as an :class:`xarray.DataTree` with the
layout, names, dimensions and attributes of the result file (docs/usage.md,
"Output (HDF5)"). See docs/python.md.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Union

import numpy as np

from . import _nholo, _toml

ConfigError = _nholo.ConfigError
ModelError = _nholo.ModelError
DeviceError = _nholo.DeviceError

Config = Union[str, "os.PathLike[str]", Mapping[str, Any]]
ProgressArg = Union[bool, Callable[[int, int], None], None]

_BACKENDS = ("auto", "omp", "cpp", "cuda")


def _header_dir() -> None:
    """Points nholo at the headers installed with the package (model-file
    plugins are compiled against them), unless NHOLO_INCLUDE_DIR says otherwise."""
    inc = Path(__file__).resolve().parent / "include" / "nholo"
    if "NHOLO_INCLUDE_DIR" not in os.environ and (inc / "host").is_dir():
        os.environ["NHOLO_INCLUDE_DIR"] = str(inc)


_header_dir()


class _Source:
    """A configuration as nholo's parser takes it: a path, or TOML text with
    the file it came from (its relative paths are relative to that file's
    folder; "" for the working directory)."""

    def __init__(self, config: Config):
        self.dict: dict[str, Any] | None = None
        if isinstance(config, Mapping):
            self.text, self.is_text, self.source = _toml.document(config), True, ""
            self.dict = dict(config)
        elif isinstance(config, (str, os.PathLike)):
            s = os.fspath(config)
            if isinstance(config, str) and ("\n" in s or "=" in s):
                self.text, self.is_text, self.source = s, True, ""
            elif Path(s).is_file():
                self.text, self.is_text, self.source = s, False, os.path.abspath(s)
            else:
                raise ConfigError(
                    f"config error: '{s}' is neither a file nor TOML text "
                    "(accepted: a path to a .toml file, a TOML string, a dict)"
                )
        else:
            raise TypeError(f"config is a path, a TOML string or a dict, not {type(config).__name__}")

    def args(self) -> tuple[str, bool, str]:
        return self.text, self.is_text, self.source

    def without(self, entries: dict[tuple[str, ...], list[str]]) -> None:
        """The config's entries of these tables removed, e.g. {("params",):
        ["slope"], ("ensemble", "q0"): ["x", "y"]}: values given as arrays
        replace them."""
        import tomllib

        d = self.dict
        if d is None:
            try:
                d = tomllib.loads(Path(self.text).read_text() if not self.is_text else self.text)
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"config error: {self.source or '<config text>'}: {e}") from None

        def pruned(table: Any, path: tuple[str, ...], names: list[str]) -> tuple[Any, bool]:
            if not isinstance(table, Mapping):
                return table, False
            if not path:
                kept = {k: v for k, v in table.items() if k not in names}
                return kept, len(kept) != len(table)
            if path[0] not in table:
                return table, False
            inner, changed = pruned(table[path[0]], path[1:], names)
            return ({**table, path[0]: inner} if changed else table), changed

        changed_any = False
        for path, names in entries.items():
            d, changed = pruned(d, path, names)
            changed_any |= changed
        if changed_any:
            self.text, self.is_text, self.dict = _toml.document(d), True, dict(d)


def _overrides(set: Mapping[str, Any] | None, backend: str | None, threads: int | None) -> list[str]:
    out: list[str] = []
    for k, v in (set or {}).items():
        if not isinstance(k, str) or not k:
            raise ConfigError(f"config error: set: keys are dotted names such as 'ensemble.size', not {k!r}")
        out.append(f"{k}={_toml.value(v, k)}")
    if backend is not None:
        if backend not in _BACKENDS:
            raise ConfigError(f"config error: backend: '{backend}' is not a backend (accepted: {', '.join(_BACKENDS)})")
        out.append(f"backend.device={_toml.value(backend)}")
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 0:
            raise ConfigError(f"config error: threads: {threads!r} (accepted: a whole number of "
                              "threads >= 1, or 0 for all cores)")
        out.append(f"backend.threads={int(threads)}")
    return out


def _numbers(a: Any, what: str) -> np.ndarray:
    """a as float64, refused naming the first bad entry unless every entry is
    a finite number."""
    x = np.asarray(a)
    if x.dtype.kind not in "fiu":
        raise ConfigError(f"config error: {what}: a numeric array, not dtype {x.dtype}")
    x = x.astype(np.float64)
    bad = np.argwhere(~np.isfinite(x))
    if len(bad):
        where = tuple(int(i) for i in bad[0])
        raise ConfigError(f"config error: {what}: {x[where] if where else x} at index {where} is not "
                          "finite; every value must be a finite number")
    return x


def _state_file(info: dict, q0: Any, qdot0: Any, params: Mapping[str, Any] | None, folder: Path) -> tuple[Path, int]:
    """The initial states and per-trajectory parameters given as arrays,
    written as a state file (sampler = "file", docs/usage.md) with every
    double to 17 digits, so that nholo reads back exactly the given values."""
    coords: list[str] = info["coordinates"]
    names: list[str] = []
    cols: list[np.ndarray] = []
    rows: int | None = None

    def take(prefix: str, a: Any, what: str) -> None:
        nonlocal rows
        x = _numbers(a, what)
        if x.ndim != 2 or x.shape[1] != len(coords):
            raise ConfigError(
                f"config error: {what}: shape {x.shape}, accepted (trajectories, {len(coords)}): "
                f"one column per coordinate of model '{info['model']}' ({', '.join(coords)})"
            )
        if rows is not None and x.shape[0] != rows:
            raise ConfigError(f"config error: {what}: {x.shape[0]} rows, but the other arrays have {rows}")
        rows = x.shape[0]
        for j, c in enumerate(coords):
            names.append(f"{prefix}.{c}")
            cols.append(x[:, j])

    if q0 is not None:
        take("q0", q0, "q0")
    if qdot0 is not None:
        take("qd0", qdot0, "qdot0")
    for p, a in (params or {}).items():
        if p not in info["parameters"]:
            raise ConfigError(
                f"config error: params: '{p}' is not a parameter of model '{info['model']}' "
                f"(accepted: {', '.join(info['parameters']) or 'none'})"
            )
        x = _numbers(a, f"params['{p}']")
        if x.ndim == 0:
            if rows is None:
                raise ConfigError(f"config error: params['{p}']: a scalar needs q0 or qdot0 to say how many trajectories")
            x = np.full(rows, float(x))
        if x.ndim != 1:
            raise ConfigError(f"config error: params['{p}']: shape {x.shape}, accepted (trajectories,)")
        if rows is not None and x.shape[0] != rows:
            raise ConfigError(f"config error: params['{p}']: {x.shape[0]} values, but the other arrays have {rows} rows")
        lo, hi, lo_open, hi_open, text = info["parameter_ranges"][p]
        outside = (x <= lo if lo_open else x < lo) | (x >= hi if hi_open else x > hi)
        if outside.any():
            i = int(np.argmax(outside))
            raise ConfigError(f"config error: params['{p}'][{i}] = {float(x[i])!r} is outside the range "
                              f"model '{info['model']}' allows: {p} {text}")
        rows = x.shape[0]
        names.append(f"params.{p}")
        cols.append(x)
    if rows is None or rows == 0:
        raise ConfigError("config error: q0/qdot0/params: no trajectories (the arrays have no rows)")
    path = folder / "initial_states.txt"
    np.savetxt(path, np.column_stack(cols), fmt="%.17g", header=" ".join(names), comments="")
    return path, rows


def _progress_callback(progress: ProgressArg) -> tuple[Callable[[int, int], None] | None, Any]:
    if progress is None or progress is False:
        return None, None
    if callable(progress) and progress is not True:
        return progress, None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # a plain line on stderr, every few seconds
        tqdm = None
    state: dict[str, Any] = {"bar": None, "last": 0}

    def update(done: int, total: int) -> None:
        if total <= 0:
            return
        if tqdm is not None:
            if state["bar"] is None:
                state["bar"] = tqdm(total=total, desc="nholo", unit="unit", unit_scale=True,
                                    bar_format="{l_bar}{bar}| {elapsed}<{remaining}")
            state["bar"].update(done - state["bar"].n)
        elif done - state["last"] >= total / 20 or done == total:
            state["last"] = done
            print(f"nholo: {100.0 * done / total:5.1f} %", file=sys.stderr, flush=True)

    return update, state


def _load_tree(path: str, fields: Mapping[str, np.ndarray] | None = None):
    """The result file as a DataTree whose every node's own variables are in
    memory (each node read without inheritance: an event group's own `time`,
    the crossing times, is loaded too, though its parent's `time`, the save
    times, shadows it in the node's inherited view).

    fields: the per-save fields the run held in memory ("udwadia_kalaba/q"
    -> array); the file has them as datasets without storage, whose
    dimensions and attributes the arrays take, without a copy."""
    import xarray as xr

    fields = dict(fields or {})
    # nholo's files carry no CF encoding (_FillValue, scale_factor, time
    # units): the arrays come back as stored, integers as integers
    tree = xr.open_datatree(path, engine="h5netcdf", phony_dims="access", mask_and_scale=False,
                            decode_times=False, decode_timedelta=False)
    try:
        nodes = {}
        for node in tree.subtree:
            ds = node.to_dataset(inherit=False)
            order = list(ds.data_vars)
            prefix = node.path.strip("/")
            held = {name: fields.pop(f"{prefix}/{name}") for name in list(ds.data_vars)
                    if f"{prefix}/{name}" in fields}
            shells = {name: ds[name].variable for name in held}
            ds = ds.drop_vars(list(held)).load()
            for name, values in held.items():
                shell = shells[name]
                if values.shape != shell.shape:
                    raise RuntimeError(f"nholo: the field {prefix}/{name} came back with shape "
                                       f"{values.shape}, the file says {shell.shape}")
                ds[name] = xr.Variable(shell.dims, values, attrs=dict(shell.attrs))
            if held:  # the file's order, and every scale (one no variable uses too)
                ds = ds[order].assign_coords({c: ds.coords[c] for c in ds.coords})
            nodes[node.path] = ds
    finally:
        tree.close()
    if fields:
        raise RuntimeError(f"nholo: fields held in memory that the file does not have: {sorted(fields)}")
    return xr.DataTree.from_dict(nodes)


def run(
    config: Config,
    *,
    set: Mapping[str, Any] | None = None,
    backend: str | None = None,
    threads: int | None = None,
    output: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    q0: Any = None,
    qdot0: Any = None,
    params: Mapping[str, Any] | None = None,
    progress: ProgressArg = False,
    quiet: bool = True,
):
    """Run an ensemble in this process and return its results as an
    :class:`xarray.DataTree` (the layout of the result file, docs/usage.md).

    Parameters
    ----------
    config
        The run configuration: a path to a TOML file, TOML text, or a dict of
        the same tables (``{"model": "rolling_coin", "time": {...}, ...}``).
        Relative paths inside text or a dict are relative to the working
        directory; inside a file, to the file's folder.
    set
        Keys to override, as ``nholo run --set``: ``{"ensemble.size": 10_000,
        "params.slope": 0.2}``; values are Python values (bool, number,
        string, list, dict).
    backend
        ``"auto"`` (the GPU when one is visible, else OpenMP), ``"omp"``,
        ``"cpp"`` or ``"cuda"``; None: the config's ``backend.device``.
    threads
        OpenMP threads (0: all cores); None: the config's.
    output
        Also keep the result file at this path (as ``nholo run`` writes it;
        refused if it exists unless ``overwrite``). None: no result file;
        the per-save fields (q, qdot, ...) are written by the run straight
        into the numpy arrays the tree holds (no copy), the rest of the
        results (initial states, statuses, statistics) pass through a small
        temporary file, removed once they are loaded.
    overwrite
        Replace an existing ``output`` file.
    q0, qdot0
        Initial coordinates and velocities, arrays of shape (trajectories,
        coordinates) in the model's coordinate order; they replace the
        config's sampler and its [ensemble.q0] / [ensemble.qd0] entries (the
        ensemble is one trajectory per row). Velocities not given are
        sampled as the config says, then completed from the constraints as
        usual.
    params
        Model parameters that vary per trajectory: name -> array of shape
        (trajectories,) (or a scalar, the same for every row); they replace
        the config's [params] values of those parameters.
    progress
        True: a progress bar (tqdm, in a terminal or Jupyter); a callable
        ``f(done, total)`` is called about every 0.1 s instead.
    quiet
        False: nholo's own messages (backend, timing, statuses) on stderr.

    Returns
    -------
    xarray.DataTree
        ``tree["udwadia_kalaba"].ds.q`` (trajectory, time, coordinate),
        ``tree["initial"]``, ``tree["statistics/udwadia_kalaba"]``,
        ``tree.attrs`` (model, backend, config, ...), loaded in memory.

    Raises
    ------
    nholo.ConfigError, nholo.ModelError, nholo.DeviceError
        With nholo's message; nothing is written.
    KeyboardInterrupt
        Ctrl-C stops the run at its next safe point (within about a second)
        and is raised; no results are returned (with ``output``, the
        ``.partial`` file is kept, as ``nholo run`` keeps it).
    """
    src = _Source(config)
    overrides = _overrides(set, backend, threads)
    with tempfile.TemporaryDirectory(prefix="nholo-run-") as tmp:
        folder = Path(tmp)
        if q0 is not None or qdot0 is not None or params:
            info = _nholo.config_info(*src.args(), overrides)
            src.without({("params",): list(params or {}),
                         ("ensemble", "q0"): info["coordinates"] if q0 is not None else [],
                         ("ensemble", "qd0"): info["coordinates"] if qdot0 is not None else []})
            states, rows = _state_file(info, q0, qdot0, params, folder)
            overrides += ['ensemble.sampler="file"', f"ensemble.file={_toml.value(str(states))}",
                          f"ensemble.size={rows}"]
        if output is not None and not overwrite:
            out = os.fspath(output)
            if os.path.lexists(out):
                raise ConfigError(f"config error: output: '{out}' exists; pass overwrite=True to replace it")
            if os.path.lexists(out + ".partial"):
                raise ConfigError(f"config error: output: '{out}.partial' exists, the incomplete result "
                                  "of an earlier run; pass overwrite=True to discard it, or finish it "
                                  "with `nholo run CONFIG --resume`")
        path = os.fspath(output) if output is not None else str(folder / "result.h5")
        overrides.append(f"output.path={_toml.value(os.path.abspath(path))}")
        callback, state = _progress_callback(progress)
        try:
            # without a file to keep, the per-save fields are written into
            # arrays that become the tree's (host/io/field_memory.hpp)
            summary = _nholo.run(*src.args(), overrides, bool(overwrite) or output is None,
                                 bool(quiet), output is None, callback)
        finally:
            if state and state.get("bar") is not None:
                state["bar"].close()
        if summary["fault"]:
            raise DeviceError(f"the device failed: {summary['fault']}")
        if summary["interrupted"] or summary["completed"] < summary["trajectories"]:
            raise KeyboardInterrupt(f"the run was stopped after {summary['completed']} of "
                                    f"{summary['trajectories']} trajectories")
        tree = _load_tree(summary["path"], summary["fields"])
    return tree


def check(
    config: Config,
    *,
    set: Mapping[str, Any] | None = None,
    backend: str | None = None,
) -> str:
    """Validate a configuration as ``nholo check`` does (the model, every
    key, the backend) and return its one-line description; nothing is run
    or written. Raises nholo.ConfigError / ModelError / DeviceError."""
    return _nholo.check(*_Source(config).args(), _overrides(set, backend, None)).strip()


def models() -> list[dict[str, Any]]:
    """The built-in models, as ``nholo models --json``: name, description,
    coordinates and their units, constraints, formulations, parameters with
    defaults, units and ranges (the cached model-file plugins are listed by
    ``nholo models`` as text)."""
    return json.loads(_nholo.models("", True))


class Model:
    """A model file (docs/models.md), checked when it is made.

    ``Model.from_file("m.model.toml")`` or ``Model.from_string(text)``; use
    it as a configuration's model: ``nholo.run({"model": m.path, ...})``.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.path.abspath(os.fspath(path))
        self.description = _nholo.model_file(self.path, False).strip()

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> "Model":
        if not Path(path).is_file():
            raise ModelError(f"model file '{path}' does not exist")
        return cls(path)

    @classmethod
    def from_string(cls, text: str, name: str = "model") -> "Model":
        """A model file from its text, kept under the temporary folder by the
        hash of its text (so that the plugin cache finds it again)."""
        import hashlib

        folder = Path(tempfile.gettempdir()) / "nholo-models"
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = folder / f"{name}-{digest}.model.toml"
        if not path.exists():
            _write_atomically(path, text)
        return cls(path)

    @classmethod
    def from_sympy(
        cls,
        lagrangian: Any,
        q: Any,
        *,
        constraints: Any = None,
        parameters: Mapping[Any, Any] | None = None,
        forces: Any = None,
        nonideal_forces: Any = None,
        energy: Any = None,
        conflated_lagrangian: Any = None,
        rates: Any = None,
        accelerations: Any = None,
        time: Any = None,
        units: Mapping[Any, str] | None = None,
        name: str = "sympy_model",
        description: str = "a model derived with sympy, written by nholo.Model.from_sympy",
        cse: bool = True,
        path: str | os.PathLike[str] | None = None,
    ) -> "Model":
        """A model file written from sympy expressions (docs/python.md,
        "Models from sympy"), checked by nholo.

        Parameters
        ----------
        lagrangian
            L = T - V of the unconstrained system, a sympy expression.
        q
            The coordinates, in order: sympy.physics.mechanics
            dynamicsymbols (``q(t)``; their rates and accelerations are
            ``q.diff(t)`` and ``q.diff(t, 2)``), or sympy Symbols with
            ``rates`` (and ``accelerations``) given as Symbols in the same
            order. A coordinate named ``x`` has the rate ``x_dot`` and the
            acceleration ``x_ddot`` in the file.
        constraints
            Expressions that the motion keeps at 0: a list (each an
            expression, a pair ``(name, expr)`` or a dict ``{"expr", "kind",
            "name"}``) or a dict name -> expression. The kind, unless given,
            follows from what the expression uses: an acceleration ->
            ``"acceleration"``, else a rate -> ``"velocity"``, else
            ``"position"``. Unnamed ones are ``constraint_0``, ...
        parameters
            symbol -> default: a number, a sympy expression of numbers, pi
            and the parameters before it (evaluated by nholo when it reads
            the file), a tuple ``(default, unit)`` or ``(default, unit,
            description)``, or a dict of the model file's keys (``default``,
            ``unit``, ``description``, ``min``, ``max``, ``positive``,
            ``nonnegative``). A symbol declared ``positive=True``
            (``nonnegative=True``) gets that range unless the dict says
            otherwise. Units default to ``"1"``.
        forces, nonideal_forces
            Non-potential generalized forces (and forces of constraints that
            do work): a dict coordinate -> expression (the coordinate as in
            ``q``, or its name) or a list with one per coordinate.
        energy
            None (no energy field), an expression, or ``"auto"`` (nholo
            derives the Jacobi integral from the Lagrangian).
        conflated_lagrangian
            Hamel's L+ (the ``conflated`` formulation), an expression.
        time
            The time symbol (default: sympy.physics.mechanics' ``t``).
        units
            coordinate or parameter -> unit text (default ``"1"``).
        name, description
            The model's name (``[a-z][a-z0-9_]*``) and one line.
        cse
            True: sympy's ``cse`` over all the expressions together, each
            shared subexpression a ``[definitions]`` entry (``sub0``,
            ``sub1``, ...); False: every expression written out in full.
        path
            Where to write the model file (replaced if it exists). None: the
            temporary folder, named by the hash of the text, as
            ``from_string``.

        Raises
        ------
        nholo.ModelError
            Anything nholo's grammar cannot say (a sympy function it lacks,
            a symbol that is neither a coordinate, a rate, a parameter nor
            time, two symbols with one name), naming it; or nholo's own
            refusal of the written file.
        """
        try:
            from . import _sympy
        except ModuleNotFoundError as e:
            if e.name != "sympy":
                raise
            raise ModuleNotFoundError("nholo.Model.from_sympy needs sympy: pip install sympy "
                                      "(or pip install 'nholo[sympy]')", name="sympy") from None

        text = _sympy.model_text(
            lagrangian, q, constraints=constraints, parameters=parameters, forces=forces,
            nonideal_forces=nonideal_forces, energy=energy, conflated_lagrangian=conflated_lagrangian,
            rates=rates, accelerations=accelerations, time=time, units=units, name=name,
            description=description, cse=cse)
        if path is None:
            return cls.from_string(text, name=name)
        _write_atomically(Path(path), text)
        return cls(path)

    def build(self) -> str:
        """Compile the model's plugin now (else the first run does), and
        return the command's report."""
        return _nholo.model_file(self.path, True).strip()

    def __repr__(self) -> str:
        return f"nholo.Model({self.path!r})"


def _write_atomically(path: Path, text: str) -> None:
    """path holds text, replaced in one step (a concurrent reader sees the
    old file or the new one)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def version() -> str:
    """nholo's version and git revision."""
    return _nholo.version()
