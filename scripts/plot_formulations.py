#!/usr/bin/env python3
"""The same initial conditions under two or more formulations of mechanics.

Three panels:
  (a) one trajectory's path under each formulation (for the rolling coin y,
      down the slope, points down);
  (b) the distance |q_a - q_b| between formulation a and each b over time for
      that trajectory (solid) and the ensemble's median (dotted), log scale
      (exact zeros, as at t = 0, are left out);
  (c) the distribution over the ensemble of the largest distance,
      /compare/<a>__<b>/max_distance (trajectories that finished ok under both;
      a largest distance of exactly 0 is counted at 1e-17).
The distance is the Euclidean norm over all coordinates, as in /compare
(lengths and angles together: m and rad for the coin and the skate), or with
--distance path over the two path coordinates only.

Example:
  nholo run examples/skate.toml
  python3 scripts/plot_formulations.py skate.h5 --a udwadia_kalaba --b conflated
"""

import numpy as np

import nholo_plot_common as common

FLOOR = 1e-17  # distances of exactly 0 are drawn here on log axes
COLOURS = ["tab:red", "tab:green", "tab:purple", "tab:orange", "tab:brown"]
STYLES = ["--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1))]


def parse_args(argv=None):
    p = common.base_parser(__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--a", default=None,
                   help="reference formulation "
                        "(default: udwadia_kalaba if present, else the first)")
    p.add_argument("--b", nargs="+", default=None,
                   help="formulation(s) compared with --a (default: all the others)")
    p.add_argument("--trajectory", type=int, default=None,
                   help="trajectory drawn in (a) and (b) (default: the one with the median "
                        "largest distance to the first --b among those ok everywhere)")
    p.add_argument("--distance", choices=("all", "path"), default="all",
                   help="distance over all coordinates, as /compare (default), or over the two "
                        "path coordinates only (lengths without angles)")
    p.add_argument("--coords", default=None,
                   help="two coordinates for the path, e.g. x,y (default: the first two)")
    return p.parse_args(argv)


def positive(d):
    """Distances for a log axis: exact zeros (identical states) left out."""
    return np.where(d > 0, d, np.nan)


def compare_group(f, a, b):
    for name in (f"compare/{a}__{b}", f"compare/{b}__{a}"):
        if name in f:
            return f[name]
    return None


def path_axes(f, coords):
    """(horizontal, vertical, invert vertical): the downslope coordinate of
    a model on a slope is drawn vertically, pointing down."""
    names = common.coordinates(f)
    if coords:
        pair = [c.strip() for c in coords.split(",")]
        if len(pair) != 2:
            common.fail("--coords: give two coordinates, e.g. x,y")
        for c in pair:
            common.coordinate_index(f, c)
    else:
        pair = names[:2]
    down = common.DOWNSLOPE.get(common.model(f))
    on_slope = down is not None and "param_slope" in f.attrs and common.param(f, "slope") != 0
    if on_slope and down in pair:
        other = pair[0] if pair[1] == down else pair[1]
        return other, down, True
    return pair[0], pair[1], False


def main(argv=None):
    args = parse_args(argv)
    f = common.open_result(args.file)
    forms = common.formulations(f)
    if len(forms) < 2:
        common.fail(f"the file has one formulation ({forms[0]}): run nholo with two or more "
                    "(formulations = [\"udwadia_kalaba\", \"conflated\"])")
    a = args.a or ("udwadia_kalaba" if "udwadia_kalaba" in forms else forms[0])
    common.check_formulation(f, a)
    bs = args.b or [x for x in forms if x != a]
    for b in bs:
        common.check_formulation(f, b)
        if b == a:
            common.fail(f"--b {b} is the reference formulation --a")
    units = common.model_units(f)
    tu = units["time"]
    t = f[a]["time"][:]
    qa_ds = common.dataset(f, f"{a}/q", "add \"q\" to output.fields")
    n = qa_ds.shape[0]
    ok = {x: f[x]["status"][:] == 0 for x in [a] + bs}
    ok_all = np.logical_and.reduce([ok[x] for x in [a] + bs])

    h, v, invert = path_axes(f, args.coords)
    ih, iv = common.coordinate_index(f, h), common.coordinate_index(f, v)
    cols = slice(None) if args.distance == "all" else [ih, iv]
    what = "all coordinates" if args.distance == "all" else f"{h}, {v} only"

    # distances over time for the whole ensemble (blockwise), per b
    dist_max = {b: np.full(n, np.nan) for b in bs}
    med_t = {b: None for b in bs}
    all_dist = {b: [] for b in bs}
    for a0, a1 in common.blocks(n):
        qa = qa_ds[a0:a1]
        for b in bs:
            d = np.linalg.norm((qa - f[b]["q"][a0:a1])[:, :, cols], axis=2)
            with np.errstate(invalid="ignore"):
                m = np.isfinite(d).any(axis=1)
                dist_max[b][a0:a1][m] = np.nanmax(d[m], axis=1)
            if n * t.size <= 5e7 or a0 == 0:  # median over time: bounded memory
                all_dist[b].append(np.where((ok[a] & ok[b])[a0:a1, None], d, np.nan))
    for b in bs:
        stacked = np.concatenate(all_dist[b])
        with np.errstate(invalid="ignore"):
            med_t[b] = np.nanmedian(stacked, axis=0) if np.isfinite(stacked).any() \
                else np.full(t.size, np.nan)

    stored = {}
    for b in bs:
        g = compare_group(f, a, b)
        stored[b] = None if g is None or args.distance != "all" else {
            "max_distance": g["max_distance"][:],
            "first_exceed_time": g["first_exceed_time"][:],
            "threshold": float(g.attrs["threshold"]) if "threshold" in g.attrs else None,
            "group": g.name}

    # the trajectory drawn
    if args.trajectory is not None:
        i = args.trajectory
        if not 0 <= i < n:
            common.fail(f"--trajectory must lie in [0, {n - 1}]")
    else:
        cand = np.flatnonzero(ok_all & np.isfinite(dist_max[bs[0]]))
        if cand.size == 0:
            cand = np.flatnonzero(np.isfinite(dist_max[bs[0]]))
        if cand.size == 0:
            common.fail("no trajectory has finite distances")
        order = cand[np.argsort(dist_max[bs[0]][cand], kind="stable")]
        i = int(order[(order.size - 1) // 2])

    q_i = {x: f[x]["q"][i] for x in [a] + bs}
    d_i = {b: np.linalg.norm((q_i[a] - q_i[b])[:, cols], axis=1) for b in bs}

    output = common.check_output(args.output or common.default_output(args.file, "formulations"))
    plt = common.pyplot()
    fig, (ax_p, ax_d, ax_h) = plt.subplots(
        1, 3, figsize=(13.5, 5.0), layout="constrained",
        gridspec_kw={"width_ratios": [1.0, 1.1, 0.9]})

    # (a) paths
    ax_p.plot(q_i[a][:, ih], q_i[a][:, iv], "-", color="tab:blue", lw=2.6, alpha=0.8,
              label=common.formulation_label(a))
    for k, b in enumerate(bs):
        ax_p.plot(q_i[b][:, ih], q_i[b][:, iv], ls=STYLES[k % 5], color=COLOURS[k % 5],
                  lw=1.6, label=common.formulation_label(b))
    ax_p.plot(q_i[a][0, ih], q_i[a][0, iv], "ko", ms=5, label="start")
    if invert:
        ax_p.invert_yaxis()
    down = ", down the slope ↓" if invert else ""
    ax_p.set_xlabel(common.label(h, units[h]))
    ax_p.set_ylabel(common.label(v + down, units[v]))
    ax_p.set_title(f"(a) trajectory {i}: paths, t = {t[0]:g}–{t[-1]:g} {tu}")
    ax_p.legend(loc="best", framealpha=0.9)

    # (b) distance over time
    for k, b in enumerate(bs):
        c = COLOURS[k % 5]
        ax_d.plot(t, positive(d_i[b]), "-", color=c, lw=1.6,
                  label=f"{common.formulation_label(b)}: trajectory {i}")
        ax_d.plot(t, positive(med_t[b]), ":", color=c, lw=1.6,
                  label=f"{common.formulation_label(b)}: ensemble median")
    thresholds = {s["threshold"] for s in stored.values() if s and s["threshold"] is not None}
    for th in thresholds:
        ax_d.axhline(th, color="0.4", lw=1.0, ls="--", label=f"compare.threshold = {th:g}")
    ax_d.set_yscale("log")
    ax_d.set_xlabel(common.label("t", tu))
    ax_d.set_ylabel(r"$|q_a - q_b|$" + f" ({what})")
    ax_d.set_title(f"(b) distance from {common.formulation_label(a)}")
    ax_d.legend(loc="best", framealpha=0.9, fontsize=9)

    # (c) distribution of the largest distance over the ensemble
    summary_b = {}
    all_lv = []
    for b in bs:
        s = stored[b]
        md = s["max_distance"] if s else dist_max[b]
        sel = ok[a] & ok[b] & np.isfinite(md)
        all_lv.append(np.log10(np.maximum(md[sel], FLOOR)))
    lv_all = np.concatenate(all_lv) if all_lv else np.zeros(0)
    bins = np.linspace(lv_all.min() - 0.25, lv_all.max() + 0.25, 41) if lv_all.size else 10
    for k, b in enumerate(bs):
        lv = all_lv[k]
        if lv.size:
            ax_h.hist(lv, bins=bins, histtype="stepfilled", alpha=0.35, color=COLOURS[k % 5])
            ax_h.hist(lv, bins=bins, histtype="step", lw=1.5, color=COLOURS[k % 5],
                      label=f"{common.formulation_label(b)} ({lv.size})")
    ax_h.set_xlabel(r"$\log_{10}\ \max_t\ |q_a - q_b|$")
    ax_h.set_ylabel("trajectories")
    ax_h.set_title("(c) largest distance, whole ensemble"
                   + ("" if args.distance == "all" else f" ({h}, {v})"))
    ax_h.legend(loc="best", framealpha=0.9)

    fig.suptitle(args.title or f"{common.file_title(f, args.file)}: "
                 f"{common.formulation_label(a)} vs "
                 f"{', '.join(common.formulation_label(b) for b in bs)} (same initial states)")
    written = common.save_figure(fig, output, args.pdf, args.dpi)

    for k, b in enumerate(bs):
        s = stored[b]
        both = ok[a] & ok[b]
        entry = {
            "distance": d_i[b],
            "max_distance": float(np.nanmax(d_i[b])) if np.isfinite(d_i[b]).any() else None,
            "ensemble_median_distance": med_t[b],
            "ensemble_max_distance": common.finite_stats(np.where(both, dist_max[b], np.nan)),
            "trajectories_ok_in_both": int(both.sum()),
            "compare_group": s["group"] if s else None,
        }
        if s:
            md = s["max_distance"]
            entry["stored_max_distance"] = float(md[i])
            entry["stored_first_exceed_time"] = float(s["first_exceed_time"][i])
            entry["threshold"] = s["threshold"]
            entry["stored_ensemble_max_distance"] = common.finite_stats(np.where(both, md, np.nan))
            diff = np.abs(md - dist_max[b])[both]
            entry["stored_minus_recomputed_max_abs"] = float(diff.max()) if diff.size else None
            # failed under one formulation, yet a finite stored distance
            entry["stored_finite_where_not_ok"] = int(np.sum(~both & np.isfinite(md)))
        entry["histogram_log10"] = {"values": all_lv[k]}
        summary_b[b] = entry
    summary = {
        "figure": written,
        "file": args.file,
        "a": a,
        "b": bs,
        "trajectory": i,
        "coordinates": [h, v],
        "distance": args.distance,
        "time": t,
        "status_ok": {x: int(ok[x].sum()) for x in [a] + bs},
        "pairs": summary_b,
        "ensemble_median_over": n if n * t.size <= 5e7 else min(n, common.BLOCK),
    }
    common.write_summary(args.summary, summary)
    print(f"figure: {', '.join(written)}")
    for b in bs:
        st = summary_b[b]["ensemble_max_distance"]
        print(f"{a} vs {b}: trajectory {i} max distance {summary_b[b]['max_distance']:.4g}; "
              f"over {st['count']} trajectories median {st['median']:.4g}, max {st['max']:.4g}"
              if st["count"] else f"{a} vs {b}: no trajectory ok under both")
    f.close()


if __name__ == "__main__":
    main()
