#!/usr/bin/env python3
"""The rattleback's spin reversal from an nholo file (examples/models/rattleback.toml).

Three panels:
  (a) the spin psi'(t) of the bodies spun at psi'0 = -3 and +3 rad/s (lines),
      with the independent Newton-Euler solution of
      scripts/rattleback_reference.py from the same initial states (dots,
      every 0.5 s; --no-reference leaves it out);
  (b) the pitch theta(t) and roll phi(t) of the body spun at -3 rad/s: the
      spin's energy goes into pitching, then back into the opposite spin;
  (c) the time of the first spin reversal over the initial spin, for every
      body of the file (those that did not reverse within the run at its end,
      open markers).
The largest difference of q between nholo and the reference at the reference's
times is in the summary (--summary) as reference_max_q_difference.

Example:
  nholo run examples/models/rattleback.toml
  python3 scripts/plot_rattleback.py rattleback.h5 -o rattleback.png --summary rattleback.json
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nholo_plot_common as common  # noqa: E402
import rattleback_reference as reference  # noqa: E402


def parse_args(argv=None):
    p = common.base_parser(__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    common.add_formulation_option(p)
    p.add_argument("--spin", type=float, default=3.0,
                   help="the initial spins +-SPIN of panels (a) and (b) (default 3)")
    p.add_argument("--no-reference", action="store_true",
                   help="do not integrate the Newton-Euler reference (a few seconds per body)")
    p.add_argument("--reference-every", type=float, default=0.5,
                   help="spacing of the reference's dots in (a) (default 0.5 s)")
    return p.parse_args(argv)


def first_reversal(t, spin):
    """The first save time where the spin has the opposite sign of its start (nan if none)."""
    flips = np.flatnonzero(spin * spin[0] < 0)
    return t[flips[0]] if flips.size else np.nan


def reference_of(f, i, t, times, params):
    """The reference's q and q_dot at `times` from trajectory i's initial state."""
    q0, qd0 = f["initial/q0"][i, :], f["initial/qdot0"][i, :]
    q, qd, _, _ = reference.integrate(q0, qd0, times, params)
    return q, qd


def file_params(f):
    """The model's parameters in force in the file (those of the reference's names)."""
    names = common.str_list(f.attrs["parameter_names"])
    values = np.asarray(f.attrs["parameter_values"], dtype=float)
    if np.isnan(values).any():
        common.fail("parameters vary per trajectory: the reference needs one set")
    given = dict(zip(names, values))
    missing = [k for k in reference.DEFAULTS if k not in given]
    if missing:
        common.fail(f"not a rattleback file: no parameter {', '.join(missing)}")
    return {k: given[k] for k in reference.DEFAULTS}


def main(argv=None):
    args = parse_args(argv)
    f = common.open_result(args.file)
    form = common.chosen_formulation(f, args.formulation)
    names = common.coordinates(f)
    if names != reference.COORDINATES:
        common.fail(f"not a rattleback file: coordinates {', '.join(names)}")
    t = f[form]["time"][:]
    q = common.dataset(f, f"{form}/q", 'add "q" to output.fields')[:]
    qd = common.dataset(f, f"{form}/qdot", 'add "qdot" to output.fields')[:]
    ok = f[form]["status"][:] == 0
    spin0 = f["initial/qdot0"][:, 3]
    pick = {s: int(np.argmin(np.abs(spin0 - s))) for s in (-args.spin, args.spin)}
    params = file_params(f)

    summary = {"file": args.file, "formulation": form, "t_end": float(t[-1])}
    ref_times = np.arange(0.0, t[-1] + 1e-9, args.reference_every)
    ref = {}
    if not args.no_reference:
        worst = 0.0
        for s, i in pick.items():
            rq, rqd = reference_of(f, i, t, ref_times, params)
            at = np.searchsorted(t, ref_times - 1e-9)
            worst = max(worst, float(np.max(np.abs(q[i, at, :] - rq))))
            ref[s] = rqd[:, 3]
        summary["reference_max_q_difference"] = worst
        summary["reference_times"] = [float(ref_times[0]), float(ref_times[-1]), float(args.reference_every)]

    plt = common.pyplot()
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.4))
    fig.subplots_adjust(wspace=0.3)
    for s, i in pick.items():
        line, = ax[0].plot(t, qd[i, :, 3], lw=1.4, label=f"nholo, psi'0 = {spin0[i]:+.1f} rad/s")
        if s in ref:
            ax[0].plot(ref_times, ref[s], "o", ms=3, color=line.get_color(), mfc="none")
    if ref:
        ax[0].plot([], [], "ok", ms=3, mfc="none", label="Newton-Euler reference")
    ax[0].axhline(0, color="k", lw=0.6)
    ax[0].set(xlabel="t [s]", ylabel="spin psi' [rad/s]", title="(a) spin")
    ax[0].legend(loc="lower right")

    i = pick[-args.spin]
    ax[1].plot(t, q[i, :, 5], lw=0.6, color="C1", alpha=0.7, label="roll phi")
    ax[1].plot(t, q[i, :, 4], lw=1.0, color="C0", label="pitch theta")
    ax[1].set(xlabel="t [s]", ylabel="angle [rad]", title=f"(b) rocking, psi'0 = {spin0[i]:+.1f} rad/s")
    ax[1].legend(loc="upper right")

    reversal = np.array([first_reversal(t, qd[k, :, 3]) if ok[k] else np.nan for k in range(spin0.size)])
    done = np.isfinite(reversal)
    ax[2].plot(spin0[done], reversal[done], "o", color="C3", label="first reversal")
    ax[2].plot(spin0[~done & ok], np.full((~done & ok).sum(), t[-1]), "o", color="C3", mfc="none",
               label=f"none within {t[-1]:g} s")
    ax[2].set(xlabel="initial spin psi'0 [rad/s]", ylabel="time of first reversal [s]",
              title="(c) reversal time", ylim=(0, t[-1] * 1.08))
    ax[2].legend(loc="upper left")
    fig.suptitle(common.file_title(f, args.file))

    summary["initial_spin"] = spin0.tolist()
    summary["first_reversal"] = reversal.tolist()
    energy = f[form].get("energy")
    if energy is not None:
        e = energy[:]
        summary["energy_relative_drift_max"] = float(np.max(np.abs(e[ok] / e[ok][:, :1] - 1)))
    output = args.output or os.path.join(os.path.dirname(os.path.abspath(args.file)), "rattleback.png")
    common.save_figure(fig, output, pdf=args.pdf, dpi=args.dpi)
    common.write_summary(args.summary, summary)
    print(f"wrote {output}")
    for k in ("reference_max_q_difference", "energy_relative_drift_max"):
        if k in summary:
            print(f"{k}: {summary[k]:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
