"""Shared helpers for nholo's figure scripts (plot_*.py).

Reads nholo's HDF5 files with h5py (layout: docs/usage.md, "Output (HDF5)"),
draws with matplotlib's headless Agg backend and writes the numbers a figure
shows as JSON (--summary) so that tests can check them.

  open_result(path)              h5py.File, with a warning for unfinished files
                                 (a virtual merged file: its shards checked)
  formulations(f), coordinates(f), status_names(group)
  model_units(f)                 units of time, energy and every coordinate
  ok_trajectories(f, form)       boolean mask: status == ok
  coin_closed_form(f)            docs/physics.md, item 10, for every coin of the file
  coin_drift_statistics(f, form) drift velocity, band, drift ratio (stored or recomputed)
  pyplot()                       matplotlib.pyplot on the Agg backend, styled
  base_parser(...), save_figure(...), write_summary(...)
"""

import json
import math
import os
import sys
import warnings

import h5py
import numpy as np

# Trajectories read at once when a script walks a whole ensemble.
BLOCK = 4096

# Status codes of /<formulation>/status (docs/usage.md), used when a file has
# no flag_meanings attribute.
DEFAULT_STATUS_NAMES = ["ok", "max_steps", "step_underflow", "non_finite",
                        "singular", "not_run", "rejected", "event"]

# Files written before nholo stored units (root attribute coordinate_units)
# fall back to these, which follow the parameter units `nholo models` lists.
_SI = {"time": "s", "energy": "J", "length": "m", "angle": "rad"}
_ARB = {"time": "arb. units", "energy": "arb. units", "length": "arb. units",
        "angle": "rad"}
_ANGLES = {"phi", "theta"}
_MODEL_SYSTEM = {
    "rolling_coin": _SI, "skate": _SI, "appell": _SI, "incline_block": _SI,
    "parallel_velocities": _SI, "udwadia_example2": _ARB,
    "udwadia_example3": _ARB, "udwadia_example4": _ARB,
    "integrable_constraint": _ARB,
}

# Which coordinate points down the slope (docs/physics.md, items 2 and 10).
DOWNSLOPE = {"rolling_coin": "y", "skate": "x"}

# Readable at 100 % on a laptop screen: >= 10 pt everywhere.
STYLE = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "figure.titlesize": 13,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "savefig.bbox": "tight",
}

FORMULATION_LABELS = {
    "udwadia_kalaba": "Udwadia–Kalaba",
    "lagrange_multiplier": "Lagrange multipliers",
    "null_space": "null space (Maggi)",
    "vakonomic": "vakonomic",
    "conflated": "conflated (Hamel)",
}


def fail(message):
    """Stops the script with a message on stderr and exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def pyplot():
    """matplotlib.pyplot on the headless Agg backend, with the figures' style.
    Imported only when a figure is drawn (--help and errors stay quick)."""
    import matplotlib
    matplotlib.use("Agg")  # no display needed; must precede pyplot
    import matplotlib.pyplot as plt
    plt.rcParams.update(STYLE)
    return plt


def str_list(value):
    """An attribute or dataset of strings as a list of str (h5py gives bytes
    or a bare str for one-element lists)."""
    out = []
    for v in np.atleast_1d(value):
        out.append(v.decode() if isinstance(v, bytes) else str(v))
    return out


def check_merged_sources(f, path):
    """A virtual merged file (`nholo merge` without --copy) reads its
    trajectories from its shards: each must be beside it (or at its absolute
    name) and be the one it was merged from (configuration hash, trajectory
    range, size), as nholo's own readers check."""
    if str_list(f.attrs.get("merge", "")) != ["virtual"]:
        return
    names = str_list(f.attrs["merged_shards"])
    ranges = f.attrs.get("merged_shard_ranges")
    sizes = f.attrs.get("merged_shard_bytes")
    folder = os.path.dirname(os.path.abspath(path))
    advice = ("; a merged file reads its trajectories from its shards, which stay "
              "beside it (or merge with --copy for a self-contained file)")
    for i, name in enumerate(names):
        src = name if os.path.isabs(name) else os.path.join(folder, name)
        where = f"'{path}' is incomplete: its shard '{src}'"
        if not os.path.isfile(src):
            fail(f"{where} is missing{advice}")
        try:
            with h5py.File(src, "r") as s:
                theirs = str_list(s.attrs.get("config_hash", "none"))[0]
                span = (int(s.attrs.get("shard_begin", -1)), int(s.attrs.get("shard_end", -1)))
        except OSError as e:
            fail(f"{where} is not readable ({e}){advice}")
        ours = str_list(f.attrs["config_hash"])[0]
        if theirs != ours:
            fail(f"{where} is foreign: a result of another configuration "
                 f"(config hash {theirs}, not {ours}){advice}")
        if ranges is not None and len(ranges) == 2 * len(names):
            want = (int(ranges[2 * i]), int(ranges[2 * i + 1]))
            if span != want:
                fail(f"{where} is foreign: it holds trajectories [{span[0]}, {span[1]}), "
                     f"not [{want[0]}, {want[1]}){advice}")
        if sizes is not None and len(sizes) == len(names):
            if os.path.getsize(src) != int(sizes[i]):
                fail(f"{where} has changed since the merge ({os.path.getsize(src)} bytes, "
                     f"not {int(sizes[i])}){advice}")


def open_result(path):
    """Opens an nholo HDF5 file read-only; warns when it is unfinished."""
    if not os.path.exists(path):
        fail(f"{path}: no such file")
    # a virtual dataset's sources beside its file first, never first in the
    # current folder (unless the user set the prefix)
    os.environ.setdefault("HDF5_VDS_PREFIX", "${ORIGIN}")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        fail(f"{path}: not an HDF5 file ({e})")
    if "model" not in f.attrs:
        fail(f"{path}: not an nholo output file (no 'model' attribute)")
    check_merged_sources(f, path)
    if int(f.attrs.get("complete", 1)) != 1:
        print(f"warning: {path} is unfinished (complete = 0): "
              "trajectories not run are left out", file=sys.stderr)
    return f


def model(f):
    return str_list(f.attrs["model"])[0]


def formulations(f):
    return str_list(f.attrs["formulations"])


def coordinates(f):
    return str_list(f.attrs["coordinates"])


def param(f, name):
    key = f"param_{name}"
    if key not in f.attrs:
        fail(f"the file has no parameter '{name}' (attribute {key})")
    value = f.attrs[key]
    if isinstance(value, (str, bytes)):
        # [ensemble.params]: one value per trajectory, in /initial/params
        fail(f"parameter '{name}' varies per trajectory in this file (/initial/params); "
             f"this script needs one value of it")
    return float(value)


def coordinate_index(f, name):
    names = coordinates(f)
    if name not in names:
        fail(f"unknown coordinate '{name}'; the file has {', '.join(names)}")
    return names.index(name)


def check_formulation(f, form):
    forms = formulations(f)
    if form not in forms or form not in f:
        fail(f"formulation '{form}' is not in the file; it has {', '.join(forms)}")
    return form


def chosen_formulation(f, requested=None):
    """The formulation a script draws: the one asked for (checked), else
    udwadia_kalaba when the file has it, else the file's first."""
    forms = formulations(f)
    form = requested or ("udwadia_kalaba" if "udwadia_kalaba" in forms else forms[0])
    return check_formulation(f, form)


def dataset(f, path, hint=""):
    if path not in f:
        fail(f"the file has no dataset /{path}{(': ' + hint) if hint else ''}")
    return f[path]


def model_units(f):
    """{'time': .., 'energy': .., '<coordinate>': ..} for the file's model."""
    if "coordinate_units" in f.attrs:
        cu = str_list(f.attrs["coordinate_units"])
        si = all(u != "1" for u in cu)
        units = {"time": "s", "energy": "J" if si else "arb. units"}
        units.update(zip(coordinates(f), cu))
        return units
    system = _MODEL_SYSTEM.get(model(f), _ARB)
    units = {"time": system["time"], "energy": system["energy"]}
    for c in coordinates(f):
        units[c] = system["angle"] if c in _ANGLES else system["length"]
    return units



def rate_unit(unit, time_unit):
    return f"{unit}/{time_unit}" if time_unit == "s" else f"{unit} per time unit"


def label(text, unit):
    return f"{text} ({unit})" if unit else text


def formulation_label(form):
    return FORMULATION_LABELS.get(form, form)


def status_names(group):
    """Names of the status codes 0, 1, ... of /<formulation>/status."""
    st = group["status"]
    if "flag_meanings" in st.attrs:
        return str_list(st.attrs["flag_meanings"])[0].split()
    return list(DEFAULT_STATUS_NAMES)


def ok_trajectories(f, form):
    return f[form]["status"][:] == 0


def blocks(n, size=BLOCK):
    for start in range(0, n, size):
        yield start, min(n, start + size)


def least_squares_slope(t, x):
    """Least-squares slope of x(t) for each row of x (finite saves only),
    the definition of /statistics/<formulation>/drift_velocity."""
    x = np.asarray(x, dtype=float)
    out = np.full(x.shape[0], np.nan)
    for i, row in enumerate(x):
        m = np.isfinite(row)
        if m.sum() < 2:
            continue
        tt, xx = t[m], row[m]
        tc = tt - tt.mean()
        out[i] = np.dot(tc, xx - xx.mean()) / np.dot(tc, tc)
    return out


def coin_closed_form(f):
    """docs/physics.md, item 10, for every coin of a rolling_coin file, from the
    initial states actually integrated (/initial):

      theta = Omega t + theta0,  phid = omega + 2 g sin(a) / (3 R Omega) sin(theta)
      x = x0 + v t - f(theta) cos(theta),  y = y0 + f(theta) sin(theta)
      f(theta) = A + B sin(theta),  A = omega R / Omega,  B = g sin(a) / (3 Omega^2)
      v = g sin(a) / (3 Omega)   (the mean drift velocity)

    Returns arrays: Omega, omega, A, B, v (drift velocity), x_offset (the
    guiding-centre line is x = x_offset + v t), band (max - min of
    f(theta) sin(theta) over a turn: |A| + B + A^2 / (4B) when |A| <= 2B,
    else 2|A|), amplitude (max |f(theta) cos(theta)|, the x oscillation about
    the guiding line, bounded by |A| + B)."""
    if model(f) != "rolling_coin":
        fail(f"the file's model is '{model(f)}': this needs a rolling_coin file")
    g, slope, radius = param(f, "g"), param(f, "slope"), param(f, "radius")
    ix, iphi, ith = (coordinate_index(f, c) for c in ("x", "phi", "theta"))
    q0 = dataset(f, "initial/q0")[:]
    qd0 = dataset(f, "initial/qdot0")[:]
    Omega = qd0[:, ith]
    theta0 = q0[:, ith]
    gs = g * math.sin(slope)
    with np.errstate(divide="ignore", invalid="ignore"):
        omega = qd0[:, iphi] - 2.0 * gs / (3.0 * radius * Omega) * np.sin(theta0)
        A = omega * radius / Omega
        B = gs / (3.0 * Omega ** 2)
        v = gs / (3.0 * Omega)
        band = np.where(np.abs(A) <= 2.0 * B, np.abs(A) + B + A ** 2 / (4.0 * B),
                        2.0 * np.abs(A))
        x_offset = q0[:, ix] + (A + B * np.sin(theta0)) * np.cos(theta0)
        th = np.linspace(0.0, 2.0 * np.pi, 721)
        amplitude = np.max(np.abs((A[:, None] + B[:, None] * np.sin(th)) * np.cos(th)),
                           axis=1)
    return {"Omega": Omega, "omega": omega, "A": A, "B": B, "v": v,
            "x_offset": x_offset, "band": band, "amplitude": amplitude,
            "theta0": theta0, "g_sin_slope": gs}


def coin_closed_form_path(cf, index, t):
    """Closed-form x(t), y(t) (docs/physics.md, item 10) of the coins `index`
    relative to their start: arrays (len(index), len(t)) of x - x0, y - y0."""
    index = np.asarray(index)
    A, B, Om, v = (cf[k][index, None] for k in ("A", "B", "Omega", "v"))
    th0 = cf["theta0"][index, None]
    th = th0 + Om * np.asarray(t)[None, :]
    f_t, f_0 = A + B * np.sin(th), A + B * np.sin(th0)
    x = v * t - f_t * np.cos(th) + f_0 * np.cos(th0)
    y = f_t * np.sin(th) - f_0 * np.sin(th0)
    return x, y


def coin_closed_form_drift_ratio(cf, t, index=None):
    """The drift ratio the closed form itself gives when x(t) is sampled at
    the save times t and fitted by least squares like nholo does: 1 + the
    fitted slope of the bounded oscillation, divided by the drift velocity."""
    n = cf["Omega"].size
    index = np.arange(n) if index is None else np.asarray(index)
    out = np.empty(index.size)
    for a, b in blocks(index.size):
        x, _ = coin_closed_form_path(cf, index[a:b], t)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[a:b] = least_squares_slope(t, x) / cf["v"][index[a:b]]
    return out


def coin_drift_statistics(f, form, recompute=False):
    """Per-trajectory drift velocity, band and drift ratio of a rolling-coin
    formulation: /statistics/<form>/drift_velocity, band, drift_ratio, or,
    with recompute=True (or when the file lacks them), recomputed from q
    (least-squares slope of x(t); max y - min y; slope / (g sin(a) / (3 Omega))).
    Returns (dict of arrays, source)."""
    st = f.get(f"statistics/{form}")
    names = ("drift_velocity", "band", "drift_ratio")
    if not recompute and st is not None and all(n in st for n in names):
        return {n: st[n][:] for n in names}, f"/statistics/{form}"
    q = dataset(f, f"{form}/q", "add \"q\" to output.fields")
    t = f[form]["time"][:]
    ix, iy = coordinate_index(f, "x"), coordinate_index(f, "y")
    n = q.shape[0]
    drift = np.empty(n)
    band = np.empty(n)
    for a, b in blocks(n):
        xy = q[a:b, :, :]
        drift[a:b] = least_squares_slope(t, xy[:, :, ix])
        y = xy[:, :, iy]
        with np.errstate(invalid="ignore"):
            band[a:b] = np.nanmax(y, axis=1) - np.nanmin(y, axis=1)
    cf = coin_closed_form(f)
    return {"drift_velocity": drift, "band": band,
            "drift_ratio": drift / cf["v"]}, f"recomputed from /{form}/q"


def relative_energy_error(E):
    """|E(t) - E(0)| / |E(0)| for each row; rows with E(0) == 0 give NaN."""
    E = np.asarray(E, dtype=float)
    E0 = E[:, :1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(E0 != 0.0, np.abs(E - E0) / np.abs(E0), np.nan)


def ensemble_median_max(ds, transform=None, limit=5e7):
    """Per save time, the median and the max over trajectories of the finite
    values of a (trajectory, time) dataset, read block by block (transform:
    applied to each block first). The max is exact; the median uses every
    trajectory while trajectories x saves <= limit, else the first BLOCK.
    Returns (median, max, finite count per time, trajectories in the median)."""
    n, nt = ds.shape
    mx = np.full(nt, -np.inf)
    count = np.zeros(nt, dtype=np.int64)
    kept = []
    n_median = n if n * nt <= limit else min(n, BLOCK)
    for a, b in blocks(n):
        v = np.asarray(ds[a:b, :], dtype=float)
        if transform is not None:
            v = transform(v)
        fin = np.isfinite(v)
        count += fin.sum(axis=0)
        mx = np.maximum(mx, np.where(fin, v, -np.inf).max(axis=0))
        if a < n_median:
            kept.append(v[: n_median - a])
    mx[count == 0] = np.nan
    allv = np.concatenate(kept) if kept else np.full((0, nt), np.nan)
    with warnings.catch_warnings():  # all-NaN columns give NaN, quietly
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(allv, axis=0) if allv.size else np.full(nt, np.nan)
    return med, mx, count, n_median


def finite_stats(values):
    """mean, std (ddof=1), min, median, max and count of the finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return {"count": 0, "mean": None, "std": None, "min": None,
                "median": None, "max": None}
    return {"count": int(v.size), "mean": float(v.mean()),
            "std": float(v.std(ddof=1)) if v.size > 1 else 0.0,
            "min": float(v.min()), "median": float(np.median(v)),
            "max": float(v.max())}


def base_parser(description, epilog=None):
    import argparse
    p = argparse.ArgumentParser(
        description=description, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="an nholo HDF5 output file")
    p.add_argument("-o", "--output", metavar="PNG",
                   help="figure file (default: next to FILE, named after the figure)")
    p.add_argument("--pdf", action="store_true",
                   help="also write a PDF next to the PNG")
    p.add_argument("--dpi", type=float, default=100.0,
                   help="PNG resolution (default 100)")
    p.add_argument("--summary", metavar="JSON",
                   help="write the numbers drawn to this JSON file")
    p.add_argument("--title", help="figure title (default: from the file)")
    return p


def add_formulation_option(
        p, help_text="formulation to draw (default: udwadia_kalaba if present, else the first)"):
    """--formulation: the one a script draws (read by chosen_formulation)."""
    p.add_argument("--formulation", default=None, help=help_text)


def default_output(file, name):
    return os.path.join(os.path.dirname(os.path.abspath(file)), name + ".png")


def check_output(output):
    """Fails early when the figure's folder does not exist."""
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        fail(f"{output}: folder {folder} does not exist")
    return output


def save_figure(fig, output, pdf=False, dpi=100.0):
    """Writes the PNG (and a PDF with pdf=True); returns the paths."""
    import matplotlib.pyplot as plt
    check_output(output)
    paths = [output]
    fig.savefig(output, dpi=dpi)
    if pdf:
        path = os.path.splitext(output)[0] + ".pdf"
        fig.savefig(path)
        paths.append(path)
    plt.close(fig)
    return paths


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return x if math.isfinite(x) else None  # NaN / inf -> null
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, bytes):
        return x.decode()
    return x


def write_summary(path, summary):
    """The numbers a figure shows, as JSON (NaN and infinities as null)."""
    if not path:
        return
    with open(path, "w") as out:
        json.dump(_jsonable(summary), out, indent=1, allow_nan=False)
        out.write("\n")


def file_title(f, path):
    return f"{os.path.basename(path)} — {model(f)}"
