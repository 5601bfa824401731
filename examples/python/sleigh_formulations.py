"""One ensemble of Chaplygin sleighs under every formulation nholo has for
it, compared trajectory by trajectory, from Python.

Udwadia-Kalaba, Lagrange multipliers and the null-space form are three
ways of writing the same nonholonomic (d'Alembert) motion and must agree to
the integrator's tolerance; the vakonomic and embedded (Wang-Gao) forms
are different mechanics and move the sleigh elsewhere (docs/formulations.md).
This runs examples/sleigh.toml once with all five on the same initial
states and plots each formulation's largest distance from Udwadia-Kalaba
over the ensemble against time.

    python3 examples/python/sleigh_formulations.py [--size 256] [--out sleigh_formulations.png]
"""
import argparse
from pathlib import Path

import numpy as np

import nholo

HERE = Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--out", default="sleigh_formulations.png")
    a = ap.parse_args()

    forms = next(m for m in nholo.models() if m["name"] == "sleigh")["formulations"]
    tree = nholo.run(HERE.parent / "sleigh.toml", backend=a.backend,
                     set={"ensemble.size": a.size, "formulations": forms, "output.fields": ["q"]})
    ref = tree["udwadia_kalaba"].ds.q
    t = ref.time.values
    dist = {}
    for f in forms:
        if f == "udwadia_kalaba":
            continue
        d = np.abs(tree[f].ds.q - ref).max(dim="coordinate")  # (trajectory, time)
        dist[f] = d.max(dim="trajectory").values
        print(f"{f:20s} largest |q - q_udwadia_kalaba| over the ensemble at t = {t[-1]:g}: {dist[f][-1]:.3e}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for f, d in dist.items():
        ax.semilogy(t, np.maximum(d, 1e-17), label=f)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("max over trajectories of |q - q_UK|")
    ax.set_title(f"sleigh: {a.size} trajectories, each formulation against Udwadia-Kalaba")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
