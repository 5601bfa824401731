#!/usr/bin/env python3
"""Phase-space figures of a chaotic model: a Poincare section from a run's
events, a chaos map from its Lyapunov exponents and their convergence in
time (docs/gallery.md).

  plot_chaos.py section FILE --event NAME [--after T] [-o PNG]
      the state at every stored crossing of event NAME (a stroboscopic
      section: an event like sin(Omega*t/2), which crosses zero once per
      period of the drive), over every trajectory of the ensemble, drawn in
      the body-frame plane (u, omega): u = x_dot cos(theta) + y_dot sin(theta),
      the forward speed of the blade's contact point, omega = theta_dot (the
      sleigh models: coordinates x, y, theta); --coords A,B draws two
      coordinates' rates instead (e.g. --coords phi,theta), and --x EXPR
      --y EXPR any two expressions of the crossing's state, for any model:
      the coordinates by name, their rates as NAME_dot, t, and sin, cos,
      tan, exp, log, sqrt, abs, atan2, pi (e.g. --x
      "x_dot*cos(theta) + y_dot*sin(theta)" --y theta_dot). Crossings before
      --after (time) are left out: the transient onto the attractor.
  plot_chaos.py map FILE [--x SPEC] [--y SPEC] [-o PNG]
      the largest Lyapunov exponent (/<formulation>/lyapunov, a run with
      [lyapunov]) over a grid of initial conditions (sampler = "grid"), as an
      image; SPEC as in plot_survey.py: q0.NAME or qd0.NAME (default: the two
      initial columns that vary).
  plot_chaos.py convergence FILE [-o PNG]
      the running estimates lambda_j(t) of every trajectory (the field
      lyapunov_estimate, a run with [lyapunov] and it in output.fields): one
      panel per exponent, every trajectory in grey, the ensemble's median and
      5-95 % band; a converged exponent's band narrows like 1/sqrt(t). With
      [lyapunov] observables and the field lyapunov_observed_estimate, one
      more panel: the exponent in the observables' norm (the reduced motion).

Reads the file with h5py (docs/usage.md, "Output (HDF5)"). --summary writes
the numbers drawn as JSON.
"""

import sys
import warnings

import numpy as np

import nholo_plot_common as common

KINDS = ("section", "map", "convergence")


def parse_args(argv=None):
    p = common.base_parser(__doc__.split("\n")[0])
    p.add_argument("kind", choices=KINDS, nargs="?", default=None,
                   help="section (events), map (Lyapunov exponents) or convergence (their "
                        "running estimates)")
    common.add_formulation_option(p, help_text="formulation to draw (default: the file's first)")
    p.add_argument("--event", default=None, help="section: the event whose records are drawn")
    p.add_argument("--after", type=float, default=0.0,
                   help="section: leave out crossings before this time (default 0)")
    p.add_argument("--coords", default=None,
                   help="section: draw the rates of these two coordinates (A,B) instead of "
                        "the sleigh's (u, omega)")
    p.add_argument("--x", default=None,
                   help="map: grid axis drawn horizontally (q0.NAME, qd0.NAME); section: an "
                        "expression of the state drawn horizontally")
    p.add_argument("--y", default=None,
                   help="map: grid axis drawn vertically; section: an expression drawn "
                        "vertically")
    # the kind may come first or after FILE: accept "section FILE" and "FILE section"
    args = sys.argv[1:] if argv is None else list(argv)
    if "-h" in args or "--help" in args:
        p.parse_args(["--help"])
    kinds = [a for a in args if a in KINDS]
    if len(kinds) != 1:
        common.fail("say which figure: plot_chaos.py section FILE --event NAME, "
                    "plot_chaos.py map FILE or plot_chaos.py convergence FILE")
    kind = kinds[0]
    rest = [a for a in args if a != kind]
    ns = p.parse_args(rest)
    ns.kind = kind
    return ns


def body_frame(f, q, qd):
    """(u, omega) of the sleigh models from q, qdot [..., 3] (x, y, theta)."""
    coords = common.coordinates(f)
    try:
        ix, iy, it = coords.index("x"), coords.index("y"), coords.index("theta")
    except ValueError:
        common.fail("the model's coordinates are " + ", ".join(coords) +
                    ": (u, omega) needs x, y, theta; pass --coords A,B or --x EXPR --y EXPR")
    th = q[..., it]
    u = qd[..., ix] * np.cos(th) + qd[..., iy] * np.sin(th)
    return u, qd[..., it], ("u (forward speed of B)", "omega = theta_dot")


SECTION_FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "exp": np.exp, "log": np.log,
                     "sqrt": np.sqrt, "abs": np.abs, "atan2": np.arctan2, "pi": np.pi}


def state_expression(f, expr, t, q, qd):
    """expr (Python syntax, ^ as a power) over the crossings' state: each
    coordinate by name, its rate as NAME_dot, t and SECTION_FUNCTIONS."""
    names = dict(SECTION_FUNCTIONS, t=t)
    for j, c in enumerate(common.coordinates(f)):
        names[c] = q[..., j]
        names[c + "_dot"] = qd[..., j]
    try:
        code = compile(expr.replace("^", "**"), "<expression>", "eval")
    except SyntaxError as e:
        common.fail(f"section: '{expr}' is not an expression ({e.msg})")
    unknown = [n for n in code.co_names if n not in names]
    if unknown:
        common.fail(f"section: '{expr}' names {', '.join(unknown)}; accepted: " +
                    ", ".join(k for k in names if k not in SECTION_FUNCTIONS) + " and " +
                    ", ".join(SECTION_FUNCTIONS))
    with np.errstate(all="ignore"):
        value = eval(code, {"__builtins__": {}}, names)  # names checked above
    return np.broadcast_to(np.asarray(value, dtype=float), t.shape)


def section(args, f, form):
    g = f.get(form + "/events")
    names = list(g.keys()) if g is not None else []
    if not names:
        common.fail(f"{args.file}: formulation {form} has no events; run with an [[events]] "
                    "table (docs/events.md)")
    name = args.event or names[0]
    if name not in names:
        common.fail(f"{args.file}: no event '{name}' in {form}; the file has " + ", ".join(names))
    eg = g[name]
    t = eg["time"][()]
    q, qd = eg["q"][()], eg["qdot"][()]
    keep = np.isfinite(t) & (t >= args.after)
    if (args.x is None) != (args.y is None):
        common.fail("section: --x and --y go together (two expressions of the state)")
    if args.x is not None and args.coords:
        common.fail("section: --coords or --x/--y, not both")
    if args.x is not None:
        xs = state_expression(f, args.x, t, q, qd)
        ys = state_expression(f, args.y, t, q, qd)
        labels = (args.x, args.y)
    elif args.coords:
        parts = [c.strip() for c in args.coords.split(",")]
        if len(parts) != 2:
            common.fail(f"--coords: '{args.coords}' is not two coordinates A,B")
        a, b = parts
        coords = common.coordinates(f)
        for c in (a, b):
            if c not in coords:
                common.fail(f"--coords: '{c}' is not a coordinate ({', '.join(coords)})")
        xs, ys = qd[..., coords.index(a)], qd[..., coords.index(b)]
        labels = (a + "_dot", b + "_dot")
    else:
        xs, ys, labels = body_frame(f, q, qd)
    xs, ys = xs[keep], ys[keep]
    plt = common.pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    ax.plot(xs, ys, ",", color="black", alpha=0.6, rasterized=True)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    traj = int(np.count_nonzero(keep.any(axis=1)))
    ax.set_title(args.title or f"{common.model(f)}: section at event {name} "
                 f"({xs.size} points, {traj} trajectories, t >= {args.after:g})")
    fig.tight_layout()
    return fig, {"event": name, "points": int(xs.size), "trajectories": traj,
                 "x_range": [float(xs.min()), float(xs.max())] if xs.size else None,
                 "y_range": [float(ys.min()), float(ys.max())] if ys.size else None}


def grid_axes(f, args):
    cols = {}
    for group, prefix in (("q0", "q0."), ("qdot0", "qd0.")):
        data = f["initial/" + group][()]
        for j, c in enumerate(common.coordinates(f)):
            cols[prefix + c] = data[:, j]
    varying = [k for k, v in cols.items() if np.unique(v).size > 1]
    n = next(iter(cols.values())).size

    def is_grid(a, b):  # every pair of levels once (columns completed from a constraint are not)
        na, nb = np.unique(cols[a]).size, np.unique(cols[b]).size
        pairs = np.unique(np.stack([cols[a], cols[b]], axis=1), axis=0).shape[0]
        return na * nb == n and pairs == n

    # the axes the configuration gave as grids (linspace, values) come first:
    # a column completed from a constraint can form a grid with another too
    declared = []
    try:
        import tomllib
        ens = tomllib.loads(common.str_list(f.attrs["config"])[0]).get("ensemble", {})
        for table, prefix in (("q0", "q0."), ("qd0", "qd0.")):
            for name, v in ens.get(table, {}).items():
                if isinstance(v, dict) and ("linspace" in v or "values" in v):
                    declared.append(prefix + name)
    except (ImportError, KeyError, ValueError):
        pass
    varying = [k for k in declared if k in varying] + [k for k in varying if k not in declared]
    x, y = args.x, args.y
    if x is None or y is None:
        candidates = [(a, b) for i, a in enumerate(varying) for b in varying[i + 1:]
                      if (x is None or a == x or b == x) and (y is None or a == y or b == y)
                      and is_grid(a, b)]
        if candidates:
            a, b = candidates[0]
            if x is None:
                x = b if a == y else a
            if y is None:
                y = b if x == a else a
    for spec in (x, y):
        if spec is None or spec not in cols:
            common.fail("map: need two grid axes (--x, --y: " + ", ".join(sorted(cols)) +
                        "); varying in this file: " + ", ".join(varying))
    return x, y, cols[x], cols[y]


def chaos_map(args, f, form):
    if form + "/lyapunov" not in f:
        common.fail(f"{args.file}: formulation {form} has no lyapunov dataset; run with "
                    "[lyapunov] enabled = true")
    lam = f[form + "/lyapunov"][()]
    x, y, xv, yv = grid_axes(f, args)
    xs, ys = np.unique(xv), np.unique(yv)
    if xs.size * ys.size != lam.size:
        common.fail(f"map: {x} and {y} do not form a full grid ({xs.size} x {ys.size} levels, "
                    f"{lam.size} trajectories): run with sampler = \"grid\"")
    img = np.full((ys.size, xs.size), np.nan)
    img[np.searchsorted(ys, yv), np.searchsorted(xs, xv)] = lam
    plt = common.pyplot()
    fig, ax = plt.subplots(figsize=(6.6, 5.6))
    dx = (xs[-1] - xs[0]) / max(xs.size - 1, 1) / 2
    dy = (ys[-1] - ys[0]) / max(ys.size - 1, 1) / 2
    im = ax.imshow(img, origin="lower", aspect="auto", cmap="magma",
                   extent=[xs[0] - dx, xs[-1] + dx, ys[0] - dy, ys[-1] + dy])
    fig.colorbar(im, ax=ax, label="largest Lyapunov exponent (1/time)")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    t_end = float(f[form + "/time"][-1]) if form + "/time" in f else float("nan")
    ax.set_title(args.title or f"{common.model(f)}: largest Lyapunov exponent over "
                 f"{xs.size} x {ys.size} starts, t = {t_end:g}")
    fig.tight_layout()
    fin = lam[np.isfinite(lam)]
    return fig, {"grid": [int(xs.size), int(ys.size)], "x": x, "y": y,
                 "finite": int(fin.size), "mean": float(fin.mean()) if fin.size else None,
                 "min": float(fin.min()) if fin.size else None,
                 "max": float(fin.max()) if fin.size else None}


def convergence(args, f, form):
    name = form + "/lyapunov_estimate"
    if name not in f:
        common.fail(f"{args.file}: formulation {form} has no lyapunov_estimate field; run with "
                    "[lyapunov] enabled = true and \"lyapunov_estimate\" in output.fields")
    est = f[name][()]  # (trajectory, time, exponent)
    t = f[form + "/time"][()]
    k = est.shape[2]
    panels = [(f"lambda_{j + 1}(t)", est[:, :, j]) for j in range(k)]
    observed_name = form + "/lyapunov_observed_estimate"
    if observed_name in f:  # [lyapunov] observables: the reduced motion's exponent
        panels.append(("observed lambda(t)", f[observed_name][()][:, :, 0]))
    plt = common.pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.0, 1.2 + 2.0 * len(panels)),
                             sharex=True, squeeze=False)
    finals = []
    for j, (label, lam) in enumerate(panels):
        ax = axes[j, 0]
        for row in lam:
            ax.plot(t, row, color="0.75", lw=0.5)
        with warnings.catch_warnings():  # t = 0: every estimate NaN (no time has passed)
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, med, hi = [np.nanpercentile(lam, p, axis=0) for p in (5, 50, 95)]
        ax.fill_between(t, lo, hi, color="tab:blue", alpha=0.25, lw=0, label="5-95 %")
        ax.plot(t, med, color="tab:blue", lw=1.5, label="median")
        ax.axhline(0.0, color="black", lw=0.5)
        last = lam[:, -1][np.isfinite(lam[:, -1])]
        finals.append({"median": float(np.median(last)) if last.size else None,
                       "p5": float(np.percentile(last, 5)) if last.size else None,
                       "p95": float(np.percentile(last, 95)) if last.size else None})
        if last.size:
            spread = np.percentile(last, 95) - np.percentile(last, 5)
            ax.set_ylim(np.median(last) - 4 * spread - 0.05, np.median(last) + 4 * spread + 0.05)
        ax.set_ylabel(label)
    axes[0, 0].legend(loc="upper right", fontsize="small")
    axes[-1, 0].set_xlabel("t")
    axes[0, 0].set_title(args.title or f"{common.model(f)} ({form}): running Lyapunov "
                         f"exponents of {est.shape[0]} trajectories")
    fig.tight_layout()
    return fig, {"exponents": k, "trajectories": int(est.shape[0]), "t_end": float(t[-1]),
                 "final": finals[:k], "observed": finals[k] if len(finals) > k else None}


def main(argv=None):
    args = parse_args(argv)
    f = common.open_result(args.file)
    forms = common.formulations(f)
    form = args.formulation or forms[0]
    if form not in forms:
        common.fail(f"{args.file}: no formulation '{form}' ({', '.join(forms)})")
    draw = {"section": section, "map": chaos_map, "convergence": convergence}[args.kind]
    fig, summary = draw(args, f, form)
    output = args.output or common.default_output(args.file, "chaos_" + args.kind)
    paths = common.save_figure(fig, output, args.pdf, args.dpi)
    common.write_summary(args.summary, summary)
    print("wrote " + ", ".join(paths))


if __name__ == "__main__":
    main()
