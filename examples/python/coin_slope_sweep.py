"""The rolling coin's bounded drift across slopes, from Python.

A vertical coin rolling without slipping on a plane inclined at alpha does
not roll down it: its contact point drifts sideways at the mean velocity
g sin(alpha) / (3 theta_dot) (docs/physics.md). This sweeps the slope in a
loop of nholo.run calls (each an ensemble of coins with random spin and
heading), reads each run's per-trajectory drift_ratio (measured drift / the
closed form) from the results in memory, and plots its mean and spread
against the slope: the closed form says 1 at every slope.

    python3 examples/python/coin_slope_sweep.py [--size 4000] [--out coin_slope_sweep.png]
"""
import argparse
from pathlib import Path

import numpy as np

import nholo

HERE = Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4000, help="coins per slope")
    ap.add_argument("--slopes", type=int, default=8, help="slopes in [0.05, 1.2] rad")
    ap.add_argument("--t-end", type=float, default=20.0)
    ap.add_argument("--backend", default="auto", help="auto | omp | cpp | cuda")
    ap.add_argument("--out", default="coin_slope_sweep.png")
    a = ap.parse_args()

    slopes = np.linspace(0.05, 1.2, a.slopes)
    mean, q05, q95 = [], [], []
    for alpha in slopes:
        tree = nholo.run(HERE.parent / "rolling_coin.toml", backend=a.backend, progress=True,
                         set={"ensemble.size": a.size, "params.slope": float(alpha),
                              "time.t_end": a.t_end, "output.fields": []})
        ratio = tree["statistics/udwadia_kalaba"].ds.drift_ratio.values
        ratio = ratio[np.isfinite(ratio)]
        mean.append(ratio.mean())
        q05.append(np.quantile(ratio, 0.05))
        q95.append(np.quantile(ratio, 0.95))
        print(f"slope {alpha:.3f} rad: drift ratio mean {mean[-1]:.4f}, 5-95 % [{q05[-1]:.4f}, {q95[-1]:.4f}]"
              f" over {ratio.size} coins ({tree.attrs['backend']})")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.fill_between(slopes, q05, q95, alpha=0.3, label="5-95 % of the coins")
    ax.plot(slopes, mean, "o-", label="mean over the ensemble")
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="closed form g sin(alpha) / (3 theta_dot)")
    ax.set_xlabel("slope alpha [rad]")
    ax.set_ylabel("drift / closed form")
    ax.set_title(f"rolling coin: bounded drift, {a.size} coins per slope")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
