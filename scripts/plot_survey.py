#!/usr/bin/env python3
"""A per-trajectory statistic over a 2-D grid of initial conditions.

Left: heat map of the statistic over the grid read from /initial/q0 and
/initial/qdot0 (the axes are found automatically or named with --x/--y as
q.<coordinate> or qdot.<coordinate>), with the closed form's contours
(dashed) where docs/physics.md, item 10 gives one. Right: the statistic against
its closed form (drift velocity against theta_dot with g sin(slope) /
(3 theta_dot); band against the closed-form band; drift ratio against the
closed form fitted over the same saves), or its distribution.

Statistics (--stat):
  drift_velocity  least-squares slope of x(t)        rolling coin, /statistics
  band            max y - min y (downslope band)      rolling coin, /statistics
  drift_ratio     drift_velocity / (g sin(slope) / (3 theta_dot))
  energy_error    max over time of |E(t) - E(0)| / |E(0)|     any model with energy
  residual        max over time of the constraint residual   any model

Example:
  nholo run examples/rolling_coin_survey.toml
  python3 scripts/plot_survey.py rolling_coin_survey.h5 --stat drift_velocity -o survey.png
"""

import numpy as np

import nholo_plot_common as common

STATS = ("drift_velocity", "band", "drift_ratio", "energy_error", "residual")
COIN_STATS = ("drift_velocity", "band", "drift_ratio")


def parse_args(argv=None):
    p = common.base_parser(__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--stat", choices=STATS, default="drift_velocity",
                   help="the per-trajectory statistic (default drift_velocity)")
    p.add_argument("--x", default=None,
                   help="grid axis drawn horizontally, q.<coordinate> or qdot.<coordinate> "
                        "(default: qdot.theta for the rolling coin, else found from /initial)")
    p.add_argument("--y", default=None, help="grid axis drawn vertically (as --x)")
    common.add_formulation_option(p)
    p.add_argument("--recompute", action="store_true",
                   help="recompute drift and band from q instead of reading /statistics")
    return p.parse_args(argv)


def initial_columns(f):
    """{'q.<c>': values, 'qdot.<c>': values} from /initial."""
    names = common.coordinates(f)
    q0 = common.dataset(f, "initial/q0")[:]
    qd0 = common.dataset(f, "initial/qdot0")[:]
    cols = {}
    for j, c in enumerate(names):
        cols[f"q.{c}"] = q0[:, j]
        cols[f"qdot.{c}"] = qd0[:, j]
    return cols


def normalise_spec(spec):
    head, _, coord = spec.partition(".")
    head = {"q": "q", "q0": "q", "qd": "qdot", "qdot": "qdot", "qd0": "qdot",
            "qdot0": "qdot"}.get(head)
    if head is None or not coord:
        common.fail(f"grid axis '{spec}': write q.<coordinate> or qdot.<coordinate>")
    return f"{head}.{coord}"


def axis_levels(values):
    """Distinct values (merged within a relative 1e-9) and each entry's level."""
    v = np.asarray(values, dtype=float)
    s = np.unique(v)
    tol = 1e-9 * max(1.0, float(np.max(np.abs(s)))) if s.size else 0.0
    keep = np.concatenate([[True], np.diff(s) > tol]) if s.size else s.astype(bool)
    levels = s[keep]
    index = np.clip(np.searchsorted(levels, v - tol), 0, max(levels.size - 1, 0))
    return levels, index


def is_grid(cols, a, b, n):
    la, ia = axis_levels(cols[a])
    lb, ib = axis_levels(cols[b])
    if la.size < 2 or lb.size < 2 or la.size * lb.size != n:
        return False
    return np.unique(ia * lb.size + ib).size == n


def find_axes(f, cols, x, y, n):
    if x and y:
        for s in (x, y):
            if s not in cols:
                common.fail(f"grid axis '{s}' is not in /initial; columns: {', '.join(cols)}")
        if not is_grid(cols, x, y, n):
            lx, ly = axis_levels(cols[x])[0].size, axis_levels(cols[y])[0].size
            common.fail(f"{x} ({lx} values) x {y} ({ly} values) is not a complete grid of "
                        f"the {n} initial states: name two axes of a 2-D grid with --x/--y")
        return x, y
    if common.model(f) == "rolling_coin" and not (x or y) and \
            is_grid(cols, "qdot.theta", "qdot.phi", n):
        return "qdot.theta", "qdot.phi"
    names = [c for c in cols if axis_levels(cols[c])[0].size > 1]
    for a in names:
        for b in names:
            if a == b or (x and a != x) or (y and b != y):
                continue
            if is_grid(cols, a, b, n):
                return a, b
    common.fail("the initial states are not a 2-D grid (sampler = \"grid\" with two varied "
                "entries); name the axes with --x and --y")


def axis_label(spec, units):
    kind, coord = spec.split(".", 1)
    unit = units.get(coord, "")
    sym = {"phi": "φ", "theta": "θ"}.get(coord, coord)
    if kind == "qdot":
        return common.label(f"{sym}̇ at t = 0", common.rate_unit(unit, units["time"]))
    return common.label(f"{sym} at t = 0", unit)


def edges(levels):
    if levels.size == 1:
        return np.array([levels[0] - 0.5, levels[0] + 0.5])
    mid = 0.5 * (levels[1:] + levels[:-1])
    return np.concatenate([[2 * levels[0] - mid[0]], mid, [2 * levels[-1] - mid[-1]]])


def per_trajectory(f, form, stat, recompute):
    """(values, unit text, closed form or None, source)."""
    n = f[form]["status"].shape[0]
    units = common.model_units(f)
    if stat in COIN_STATS:
        if common.model(f) != "rolling_coin":
            common.fail(f"--stat {stat} is a rolling-coin statistic; the file's model is "
                        f"'{common.model(f)}' (use energy_error or residual)")
        stats, source = common.coin_drift_statistics(f, form, recompute=recompute)
        cf = common.coin_closed_form(f)
        if stat == "drift_velocity":
            return stats[stat], common.rate_unit(units["x"], units["time"]), cf["v"], source
        if stat == "band":
            return stats[stat], units["y"], cf["band"], source
        t = f[form]["time"][:]
        return stats[stat], "", common.coin_closed_form_drift_ratio(cf, t), source
    name = "energy" if stat == "energy_error" else "constraint_residual"
    ds = common.dataset(f, f"{form}/{name}", f"add \"{name}\" to output.fields")
    out = np.full(n, np.nan)
    for a, b in common.blocks(n):
        v = ds[a:b, :]
        if stat == "energy_error":
            v = common.relative_energy_error(v)
        with np.errstate(invalid="ignore"):
            m = np.isfinite(v).any(axis=1)
            out[a:b][m] = np.nanmax(v[m], axis=1)
    return out, "", None, f"/{form}/{name}"


TITLES = {
    "drift_velocity": "horizontal drift velocity",
    "band": "downslope band (max y − min y)",
    "drift_ratio": "measured / predicted drift velocity",
    "energy_error": "max relative energy error |E − E₀|/|E₀|",
    "residual": "max constraint residual",
}


def main(argv=None):
    args = parse_args(argv)
    f = common.open_result(args.file)
    form = common.chosen_formulation(f, args.formulation)
    units = common.model_units(f)
    status = f[form]["status"][:]
    ok = status == 0
    n = status.size

    cols = initial_columns(f)
    xs = normalise_spec(args.x) if args.x else None
    ys = normalise_spec(args.y) if args.y else None
    xs, ys = find_axes(f, cols, xs, ys, n)
    lx, ix = axis_levels(cols[xs])
    ly, iy = axis_levels(cols[ys])

    values, unit, closed, source = per_trajectory(f, form, args.stat, args.recompute)
    values = np.where(ok, values, np.nan)
    grid = np.full((ly.size, lx.size), np.nan)
    traj = np.full((ly.size, lx.size), -1, dtype=int)
    grid[iy, ix] = values
    traj[iy, ix] = np.arange(n)
    closed_grid = None
    if closed is not None:
        closed_grid = np.full_like(grid, np.nan)
        closed_grid[iy, ix] = np.where(ok, closed, np.nan)

    output = common.check_output(args.output or
                                 common.default_output(args.file, f"survey_{args.stat}"))
    plt = common.pyplot()
    from matplotlib import colors
    log = args.stat in ("energy_error", "residual")
    cmap = plt.get_cmap("RdBu_r" if args.stat == "drift_ratio" else "viridis").copy()
    cmap.set_bad("0.6")
    finite = grid[np.isfinite(grid)]
    if log:
        pos = finite[finite > 0]
        lo = pos.min() if pos.size else 1e-16
        hi = pos.max() if pos.size else 1.0
        norm = colors.LogNorm(vmin=lo, vmax=max(hi, lo * 10))
        shown = np.where(grid > 0, grid, lo)  # exact zeros drawn at the floor
    elif args.stat == "drift_ratio":
        span = max(np.nanmax(np.abs(finite - 1.0)) if finite.size else 0.0, 1e-6)
        norm = colors.Normalize(1.0 - span, 1.0 + span)
        shown = grid
    else:
        norm = colors.Normalize(np.nanmin(finite) if finite.size else 0.0,
                                np.nanmax(finite) if finite.size else 1.0)
        shown = grid

    fig, (ax_map, ax_cf) = plt.subplots(1, 2, figsize=(12.0, 5.0), layout="constrained",
                                        gridspec_kw={"width_ratios": [1.15, 1.0]})
    title_unit = f" ({unit})" if unit else ""
    mesh = ax_map.pcolormesh(edges(lx), edges(ly), np.ma.masked_invalid(shown),
                             cmap=cmap, norm=norm, shading="flat")
    cb = fig.colorbar(mesh, ax=ax_map)
    cb.set_label(TITLES[args.stat] + title_unit)
    if closed_grid is not None and lx.size > 1 and ly.size > 1 and np.isfinite(closed_grid).any():
        levels = [v for v in cb.get_ticks() if norm.vmin < v < norm.vmax]
        if len(levels) >= 1:
            cs = ax_map.contour(lx, ly, closed_grid, levels=levels, colors="k",
                                linestyles="--", linewidths=1.0)
            if args.stat != "drift_ratio":  # its many unit contours only clutter
                ax_map.clabel(cs, fontsize=9, fmt="%g")
            ax_map.plot([], [], "k--", lw=1.0, label="closed form (Lemos 2022)")
            ax_map.legend(loc="upper right", framealpha=0.9)
    ax_map.set_xlabel(axis_label(xs, units))
    ax_map.set_ylabel(axis_label(ys, units))
    ax_map.set_title(f"(a) {TITLES[args.stat]}, {lx.size} × {ly.size} grid")
    ax_map.grid(False)

    # right panel
    colour = cols[ys]
    if args.stat == "drift_velocity":
        cf = common.coin_closed_form(f)
        Om = cf["Omega"]
        sc = ax_cf.scatter(Om[ok], values[ok], c=colour[ok], s=18, cmap="coolwarm",
                           label="nholo, every grid point")
        o = np.linspace(np.nanmin(Om[ok]), np.nanmax(Om[ok]), 200)
        ax_cf.plot(o, cf["g_sin_slope"] / (3.0 * o), "k-", lw=1.5,
                   label="g sin(α) / (3 θ̇)")
        ax_cf.set_xlabel(axis_label("qdot.theta", units))
        ax_cf.set_ylabel(common.label("drift velocity", unit))
        ax_cf.set_title("(b) drift ∝ 1/θ̇, whatever φ̇")
        fig.colorbar(sc, ax=ax_cf).set_label(axis_label(ys, units))
        ax_cf.legend(loc="upper right", framealpha=0.9)
    elif closed_grid is not None:
        sc = ax_cf.scatter(closed[ok], values[ok], c=colour[ok], s=14, cmap="coolwarm",
                           alpha=0.8,
                           label="nholo, every grid point")
        both = np.concatenate([closed[ok], values[ok]])
        both = both[np.isfinite(both)]
        if both.size:
            ax_cf.plot([both.min(), both.max()], [both.min(), both.max()], "k-", lw=1.0,
                       label="measured = closed form")
        what = "band" if args.stat == "band" else "drift ratio"
        ax_cf.set_xlabel(common.label(f"closed-form {what}" +
                                      (", same saves and fit" if args.stat == "drift_ratio"
                                       else ""), unit))
        ax_cf.set_ylabel(common.label(f"measured {what}", unit))
        ax_cf.set_title(f"(b) {what}: nholo against the closed form")
        fig.colorbar(sc, ax=ax_cf).set_label(axis_label(ys, units))
        ax_cf.legend(loc="upper left", framealpha=0.9)
    else:
        pos = finite[finite > 0]
        if pos.size:
            lv = np.log10(pos)
            ax_cf.hist(lv, bins=30, color="tab:blue", alpha=0.8)
        ax_cf.set_xlabel(f"log10 of {TITLES[args.stat]}")
        ax_cf.set_ylabel("trajectories")
        ax_cf.set_title(f"(b) distribution over {finite.size} trajectories")

    fig.suptitle(args.title or f"{common.file_title(f, args.file)}: "
                 f"{TITLES[args.stat]} ({common.formulation_label(form)})")
    written = common.save_figure(fig, output, args.pdf, args.dpi)

    summary = {
        "figure": written,
        "file": args.file,
        "formulation": form,
        "stat": args.stat,
        "unit": unit,
        "source": source,
        "x": {"axis": xs, "values": lx},
        "y": {"axis": ys, "values": ly},
        "grid": grid,
        "trajectory": traj,
        "stats": common.finite_stats(grid),
        "cells_not_ok": int((~ok).sum()),
    }
    if closed_grid is not None:
        summary["closed_form"] = closed_grid
        with np.errstate(divide="ignore", invalid="ignore"):
            summary["over_closed_form"] = common.finite_stats(grid / closed_grid)
    if args.stat in COIN_STATS:
        cf = common.coin_closed_form(f)
        pred = np.where(ok, cf["v"], np.nan)
        stats, _ = common.coin_drift_statistics(f, form, recompute=args.recompute)
        with np.errstate(divide="ignore", invalid="ignore"):
            summary["drift_velocity_times_3_theta_dot_over_g_sin_slope"] = common.finite_stats(
                stats["drift_velocity"] / pred)
    common.write_summary(args.summary, summary)
    print(f"figure: {', '.join(written)}")
    s = summary["stats"]
    print(f"{args.stat} over the {lx.size} x {ly.size} grid ({xs} x {ys}): "
          f"min {s['min']:.4g}, median {s['median']:.4g}, max {s['max']:.4g}"
          if s["count"] else f"{args.stat}: no finite values")
    f.close()


if __name__ == "__main__":
    main()
