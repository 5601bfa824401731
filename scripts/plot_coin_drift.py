#!/usr/bin/env python3
"""The rolling coin's bounded drift (docs/physics.md, item 10) from an nholo file.

Three panels:
  (a) contact-point paths (x, y) of a sample of coins spread over theta_dot,
      y (down the slope) pointing down: the coins loop sideways;
  (b) above, x(t) of the same coins with their closed-form guiding lines
      x = x0' + g sin(slope) t / (3 theta_dot) (dashed); below, y(t) inside the
      ensemble's envelope (min to max over all coins, from /statistics) and
      the ensemble mean: the band does not run down the slope;
  (c) histogram of measured / predicted drift velocity over the ensemble
      (/statistics/<formulation>/drift_ratio, or recomputed from q with
      --recompute), with the closed form sampled at the same saves and fitted
      the same way (outline) and its long-run value 1.
The closed form (docs/physics.md, item 10) is the nonholonomic one, whatever
--formulation is drawn.

Example:
  nholo run examples/rolling_coin.toml
  python3 scripts/plot_coin_drift.py coin.h5 -o coin_drift.png --summary coin_drift.json
"""

import numpy as np

import nholo_plot_common as common


def parse_args(argv=None):
    p = common.base_parser(__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    common.add_formulation_option(p)
    p.add_argument("--sample", type=int, default=6,
                   help="number of coins drawn in (a) and (b), spread over theta_dot (default 6)")
    p.add_argument("--trajectories", default=None,
                   help="comma-separated trajectory indices to draw instead of --sample")
    p.add_argument("--bins", type=int, default=40, help="histogram bins (default 40)")
    p.add_argument("--recompute", action="store_true",
                   help="recompute drift and band from q instead of reading /statistics")
    return p.parse_args(argv)


def pick_sample(Omega, ok, n):
    """n ok trajectories spread evenly over the range of theta_dot."""
    idx = np.flatnonzero(ok & np.isfinite(Omega))
    if idx.size == 0:
        common.fail("no trajectory finished with status ok")
    order = idx[np.argsort(Omega[idx], kind="stable")]
    n = max(1, min(n, order.size))
    picks = np.unique(np.round(np.linspace(0, order.size - 1, n)).astype(int))
    return np.sort(order[picks])


def main(argv=None):
    args = parse_args(argv)
    f = common.open_result(args.file)
    form = common.chosen_formulation(f, args.formulation)
    cf = common.coin_closed_form(f)
    units = common.model_units(f)
    tu, lu = units["time"], units["x"]
    stats, source = common.coin_drift_statistics(f, form, recompute=args.recompute)
    status = f[form]["status"][:]
    ok = status == 0
    n = status.size
    if not ok.any():
        common.fail(f"no trajectory of '{form}' finished with status ok")
    t = f[form]["time"][:]
    ix, iy = common.coordinate_index(f, "x"), common.coordinate_index(f, "y")
    q = common.dataset(f, f"{form}/q", "add \"q\" to output.fields")

    if args.trajectories:
        sample = np.array(sorted({int(s) for s in args.trajectories.split(",")}))
        if sample.min() < 0 or sample.max() >= n:
            common.fail(f"--trajectories: indices must lie in [0, {n - 1}]")
    else:
        sample = pick_sample(cf["Omega"], ok, args.sample)
    qs = q[sample.tolist(), :, :]
    xs, ys = qs[:, :, ix], qs[:, :, iy]

    # the ensemble's y envelope over time (finite values): the downslope band
    st = f.get(f"statistics/{form}")
    if st is not None and "min" in st and "max" in st and not args.recompute:
        y_env = (st["min"][:, iy], st["max"][:, iy])
        y_mean = st["mean"][:, iy] if "mean" in st else None
    else:
        lo = np.full(t.size, np.inf)
        hi = np.full(t.size, -np.inf)
        for a, b in common.blocks(n):
            y = np.where(ok[a:b, None], q[a:b, :, iy], np.nan)
            with np.errstate(invalid="ignore"):
                lo = np.fmin(lo, np.nanmin(np.where(np.isnan(y), np.inf, y), axis=0))
                hi = np.fmax(hi, np.nanmax(np.where(np.isnan(y), -np.inf, y), axis=0))
        y_env = (lo, hi)
        y_mean = None
    y_lo, y_hi = float(np.min(y_env[0])), float(np.max(y_env[1]))

    ratio = stats["drift_ratio"]
    ratio_ok = np.where(ok, ratio, np.nan)
    rstats = common.finite_stats(ratio_ok)
    finite_ratio = ratio_ok[np.isfinite(ratio_ok)]

    # bound on |ratio - 1| from fitting a line to a bounded oscillation:
    # |slope error| <= amplitude * sum|t - mean t| / sum (t - mean t)^2
    tc = t - t.mean()
    fit_bound = cf["amplitude"] * np.abs(tc).sum() / np.dot(tc, tc) / np.abs(cf["v"])
    # the closed form sampled at the same saves and fitted the same way
    ok_idx = np.flatnonzero(ok)
    ratio_cf = np.full(n, np.nan)
    ratio_cf[ok_idx] = common.coin_closed_form_drift_ratio(cf, t, ok_idx)

    output = common.check_output(args.output or common.default_output(args.file, "coin_drift"))
    plt = common.pyplot()
    cmap = plt.get_cmap("viridis")
    om_lo, om_hi = np.nanmin(cf["Omega"][ok]), np.nanmax(cf["Omega"][ok])
    norm = plt.Normalize(om_lo, om_hi if om_hi > om_lo else om_lo + 1.0)

    fig = plt.figure(figsize=(13.5, 5.6), layout="constrained")
    gs = fig.add_gridspec(2, 3, width_ratios=[1.3, 1.0, 0.85])
    ax_path = fig.add_subplot(gs[:, 0])
    ax_x = fig.add_subplot(gs[0, 1])
    ax_y = fig.add_subplot(gs[1, 1], sharex=ax_x)
    ax_h = fig.add_subplot(gs[:, 2])

    # (a) paths, y down the slope pointing down
    for k, i in enumerate(sample):
        c = cmap(norm(cf["Omega"][i]))
        ax_path.plot(xs[k], ys[k], color=c, lw=1.2)
        ax_path.plot(xs[k, 0], ys[k, 0], "o", color=c, ms=4)
        ax_path.plot(xs[k, -1], ys[k, -1], "s", color=c, ms=4)
    y_min, y_max = np.nanmin(ys), np.nanmax(ys)
    pad = 0.25 * max(y_max - y_min, 1e-6)
    ax_path.set_ylim(y_max + pad, y_min - pad)  # y down the slope points down
    ax_path.set_xlabel(common.label("x, horizontal", lu))
    ax_path.set_ylabel(common.label("y, down the slope ↓", lu))
    ax_path.set_title(f"(a) contact-point paths of {sample.size} coins (● start, ■ end)")
    sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    cb = fig.colorbar(sm, ax=ax_path, location="bottom", shrink=0.7, aspect=30)
    cb.set_label(common.label("θ̇, spin rate", common.rate_unit("rad", tu)))

    # (b) x(t) and the closed-form guiding lines
    for k, i in enumerate(sample):
        c = cmap(norm(cf["Omega"][i]))
        ax_x.plot(t, xs[k], color=c, lw=1.2)
        ax_x.plot(t, cf["x_offset"][i] + cf["v"][i] * t, "--", color=c, lw=1.0)
    ax_x.plot([], [], "-", color="0.3", label="nholo")
    ax_x.plot([], [], "--", color="0.3", label="x₀′ + g sin(α) t / (3θ̇)")
    ax_x.set_ylabel(common.label("x", lu))
    ax_x.set_title("(b) sideways drift x(t) and downslope y(t)")
    plt.setp(ax_x.get_xticklabels(), visible=False)

    # y(t): the sample and the ensemble's envelope (min..max over all coins)
    if y_env is not None:
        ax_y.fill_between(t, y_env[0], y_env[1], color="0.85", lw=0,
                          label="ensemble min–max")
    for k, i in enumerate(sample):
        ax_y.plot(t, ys[k], color=cmap(norm(cf["Omega"][i])), lw=1.0)
    if y_mean is not None:
        ax_y.plot(t, y_mean, color="k", lw=1.5, label="ensemble mean")
    ax_y.invert_yaxis()
    ax_y.set_xlabel(common.label("t", tu))
    ax_y.set_ylabel(common.label("y ↓", lu))
    # one legend for (b), in the empty upper left of x(t)
    h1, l1 = ax_x.get_legend_handles_labels()
    h2, l2 = ax_y.get_legend_handles_labels()
    ax_x.legend(h1 + h2, l1 + l2, loc="upper left", framealpha=0.9, fontsize=9)

    # (c) drift ratio histogram
    counts, edges = np.histogram(finite_ratio, bins=args.bins) if finite_ratio.size \
        else (np.zeros(0, int), np.zeros(1))
    if finite_ratio.size:
        ax_h.hist(finite_ratio, bins=edges, color="tab:blue", alpha=0.7, label="nholo")
        cf_finite = ratio_cf[np.isfinite(ratio_cf)]
        ax_h.hist(cf_finite, bins=edges, histtype="step", color="k", lw=1.2,
                  label="closed form, same saves and fit")
        ax_h.axvline(1.0, color="0.4", lw=1.5, ls=":", label="closed form, t → ∞: 1")
        ax_h.axvline(rstats["mean"], color="tab:red", lw=1.5, ls="--",
                     label=f"mean {rstats['mean']:.4f}")
        ax_h.set_ylim(0, 1.6 * max(counts.max(), 1))
        ax_h.text(0.97, 0.60, f"std {rstats['std']:.4f}\n{rstats['count']} coins\n"
                  f"fit over t = {t[0]:g}–{t[-1]:g} {tu}",
                  transform=ax_h.transAxes, va="top", ha="right", fontsize=10,
                  bbox=dict(boxstyle="round", fc="white", alpha=0.9))
        ax_h.legend(loc="upper right", framealpha=0.9)
    ax_h.set_xlabel("measured / predicted drift velocity")
    ax_h.set_ylabel("coins")
    ax_h.set_title("(c) drift ratio over the ensemble")

    fig.suptitle(args.title or f"{common.file_title(f, args.file)}: bounded drift on a "
                 f"{common.param(f, 'slope'):g} rad slope ({common.formulation_label(form)})")
    written = common.save_figure(fig, output, args.pdf, args.dpi)

    band_ok = np.where(ok, stats["band"], np.nan)
    attrs = dict(st.attrs) if st is not None else {}
    summary = {
        "figure": written,
        "file": args.file,
        "formulation": form,
        "source": source,
        "parameters": {k: common.param(f, k) for k in ("g", "slope", "radius")},
        "trajectories": n,
        "trajectories_ok": int(ok.sum()),
        "time": [float(t[0]), float(t[-1])],
        "drift_ratio": {**rstats,
                        "q05": np.quantile(finite_ratio, 0.05) if finite_ratio.size else None,
                        "q95": np.quantile(finite_ratio, 0.95) if finite_ratio.size else None},
        "drift_ratio_mean_attribute": attrs.get("drift_ratio_mean"),
        "drift_ratio_std_attribute": attrs.get("drift_ratio_std"),
        "drift_ratio_fit_bound": common.finite_stats(np.where(ok, fit_bound, np.nan)),
        "drift_ratio_outside_fit_bound": int(np.sum(
            ok & (np.abs(ratio - 1.0) > fit_bound * (1 + 1e-9) + 1e-12))),
        "drift_ratio_closed_form_sampled": common.finite_stats(ratio_cf),
        "drift_ratio_minus_closed_form_sampled_max_abs": float(np.nanmax(
            np.abs(ratio - ratio_cf))) if ok_idx.size else None,
        "drift_velocity": common.finite_stats(np.where(ok, stats["drift_velocity"], np.nan)),
        "band": common.finite_stats(band_ok),
        "band_closed_form": common.finite_stats(np.where(ok, cf["band"], np.nan)),
        "band_over_closed_form": common.finite_stats(band_ok / cf["band"]),
        "y_range": [y_lo, y_hi],
        "typical_theta_dot": float(np.nanmedian(cf["Omega"][ok])),
        "typical_drift_velocity_predicted": float(
            cf["g_sin_slope"] / (3.0 * np.nanmedian(cf["Omega"][ok]))),
        "histogram": {"edges": edges, "counts": counts},
        "sample": {
            "trajectory": sample,
            "theta_dot": cf["Omega"][sample],
            "drift_velocity": stats["drift_velocity"][sample],
            "drift_velocity_predicted": cf["v"][sample],
            "drift_ratio": ratio[sample],
            "band": stats["band"][sample],
            "band_closed_form": cf["band"][sample],
            "x_offset": cf["x_offset"][sample],
        },
    }
    common.write_summary(args.summary, summary)
    print(f"figure: {', '.join(written)}")
    print(f"drift ratio (measured / predicted) over {rstats['count']} coins: "
          f"mean {rstats['mean']:.6g}, std {rstats['std']:.3g}; "
          f"band mean {summary['band']['mean']:.4g} {lu}, max {summary['band']['max']:.4g} {lu}")
    f.close()


if __name__ == "__main__":
    main()
