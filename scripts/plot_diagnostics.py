#!/usr/bin/env python3
"""Numerical health of an nholo run, for each formulation in the file.

Three panels:
  (a) constraint residual over time (max over the constraint rows of |phi|,
      |phidot|, |g|): median over the ensemble (solid) and the worst
      trajectory (dashed), log scale;
  (b) relative energy error |E(t) - E(0)| / |E(0)|, median and worst, log
      scale (with friction or drag this is the physical energy change);
  (c) trajectories per status (ok, max_steps, step_underflow, ...).
Only finite values count (a failed trajectory is NaN after its failure);
exact zeros are left out of the log plots.

Example:
  nholo run examples/skate.toml
  python3 scripts/plot_diagnostics.py skate.h5 -o diagnostics.png
"""

import numpy as np

import nholo_plot_common as common

COLOURS = {"udwadia_kalaba": "tab:blue", "lagrange_multiplier": "tab:green",
           "null_space": "tab:purple", "vakonomic": "tab:orange", "conflated": "tab:red"}


def parse_args(argv=None):
    p = common.base_parser(__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--formulations", default=None,
                   help="comma-separated formulations (default: all in the file)")
    return p.parse_args(argv)


def positive(v):
    return np.where(v > 0, v, np.nan)


def has_work_done(f, forms):
    """True when a nonideal force (friction, drag) is nonzero somewhere."""
    for form in forms:
        ds = f.get(f"{form}/force_nonideal")
        if ds is None:
            continue
        for a, b in common.blocks(ds.shape[0], 1024):
            v = ds[a:b]
            if np.any(np.abs(v[np.isfinite(v)]) > 0):
                return True
    return False


def main(argv=None):
    args = parse_args(argv)
    f = common.open_result(args.file)
    forms = common.formulations(f)
    if args.formulations:
        forms = [x.strip() for x in args.formulations.split(",")]
        for x in forms:
            common.check_formulation(f, x)
    units = common.model_units(f)
    tu = units["time"]
    nonideal = has_work_done(f, forms)

    output = common.check_output(args.output or common.default_output(args.file, "diagnostics"))
    plt = common.pyplot()
    fig, (ax_r, ax_e, ax_s) = plt.subplots(
        1, 3, figsize=(13.5, 5.4), layout="constrained",
        gridspec_kw={"width_ratios": [1.0, 1.0, 0.9]})
    per_form = {}
    for k, form in enumerate(forms):
        g = f[form]
        c = COLOURS.get(form, f"C{k}")
        lab = common.formulation_label(form)
        t = g["time"][:]
        entry = {"time": t}
        for ax, name, transform, key in (
                (ax_r, "constraint_residual", None, "residual"),
                (ax_e, "energy", common.relative_energy_error, "energy_error")):
            if name not in g:
                entry[key] = None
                continue
            med, mx, count, n_med = common.ensemble_median_max(g[name], transform)
            ax.plot(t, positive(med), "-", color=c, lw=1.8)
            ax.plot(t, positive(mx), "--", color=c, lw=1.4)
            entry[key] = {"median": med, "max": mx, "finite_count": count,
                          "median_over": n_med,
                          "overall_max": float(np.nanmax(mx)) if np.isfinite(mx).any() else None}

        status = g["status"][:]
        names = common.status_names(g)
        counts = {nm: int(np.sum(status == code)) for code, nm in enumerate(names)}
        other = int(np.sum((status < 0) | (status >= len(names))))
        if other:
            counts["other"] = other
        st = f.get(f"statistics/{form}")
        entry["status"] = counts
        entry["status_attributes"] = None if st is None else {
            key[len("status_"):]: int(v)
            for key, v in st.attrs.items() if key.startswith("status_")}
        per_form[form] = entry

    for ax, what, key in ((ax_r, "constraint residual", "residual"),
                          (ax_e, "relative energy " + ("change" if nonideal else "error")
                           + r" $|E - E_0|/|E_0|$", "energy_error")):
        if all(per_form[x][key] is None for x in forms):
            field = "constraint_residual" if key == "residual" else "energy"
            ax.text(0.5, 0.5, f"not in the file\n(output.fields lacks \"{field}\")",
                    ha="center", va="center", transform=ax.transAxes)
        else:
            ax.set_yscale("log")
        ax.set_xlabel(common.label("t", tu))
        ax.set_ylabel(what)
    ax_r.set_title("(a) constraint residual over the ensemble")
    ax_e.set_title("(b) energy " + ("change (friction/drag do work)" if nonideal
                                    else "conservation"))

    # (c) status counts, grouped by status
    shown = [nm for nm in common.status_names(f[forms[0]])
             if nm == "ok" or any(per_form[x]["status"].get(nm, 0) for x in forms)]
    if any("other" in per_form[x]["status"] for x in forms):
        shown.append("other")
    width = 0.8 / len(forms)
    xpos = np.arange(len(shown))
    for k, form in enumerate(forms):
        vals = [per_form[form]["status"].get(nm, 0) for nm in shown]
        bars = ax_s.bar(xpos + (k - (len(forms) - 1) / 2) * width, vals, width,
                        color=COLOURS.get(form, f"C{k}"), label=common.formulation_label(form))
        ax_s.bar_label(bars, fontsize=9, padding=1)
    ax_s.set_xticks(xpos, shown)
    ax_s.set_ylabel("trajectories")
    ax_s.set_title("(c) trajectories per status")
    ax_s.set_ylim(0, 1.25 * max(1, max(max(e["status"].values()) for e in per_form.values())))
    ax_s.grid(axis="x", alpha=0)

    # one legend for the figure: colours are formulations, line styles statistics
    handles = [plt.Line2D([], [], color=COLOURS.get(x, f"C{k}"), lw=6,
                          label=common.formulation_label(x)) for k, x in enumerate(forms)]
    handles += [plt.Line2D([], [], color="0.3", ls="-", lw=1.8, label="median over the ensemble"),
                plt.Line2D([], [], color="0.3", ls="--", lw=1.4, label="worst trajectory")]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), frameon=False)

    fig.suptitle(args.title or f"{common.file_title(f, args.file)}: diagnostics, "
                 f"{f[forms[0]]['status'].shape[0]} trajectories")
    written = common.save_figure(fig, output, args.pdf, args.dpi)
    summary = {"figure": written, "file": args.file, "formulations": forms,
               "nonideal_work": nonideal, "per_formulation": per_form}
    common.write_summary(args.summary, summary)
    print(f"figure: {', '.join(written)}")
    for form in forms:
        e = per_form[form]
        r = e["residual"]["overall_max"] if e["residual"] else None
        en = e["energy_error"]["overall_max"] if e["energy_error"] else None
        st = ", ".join(f"{k} {v}" for k, v in e["status"].items() if v)
        print(f"{form}: worst residual {r if r is None else f'{r:.3g}'}, worst relative energy "
              f"error {en if en is None else f'{en:.3g}'}; status: {st}")
    f.close()


if __name__ == "__main__":
    main()
