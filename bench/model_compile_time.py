#!/usr/bin/env python3
"""Plugin compile time against the model's size: `nholo model build` of the
large bicycle-like models of bench/large_model.py, each from an empty plugin
cache. Writes its section into docs/BENCHMARKS.md (after bench/report.py's
keep marker, between this script's own markers).

    python3 bench/model_compile_time.py [--nholo build/nholo] [--out docs/BENCHMARKS.md]
                                        [--sizes 2n,3n,4n,4] [--no-write]

A size is a number of bodies, with `n` when the model has no energy (the
energy repeats the Lagrangian's text: it doubles the node count without
adding to M, F or the constraints). For each: the model's node count (as
nholo counts it as written and as its shared graph, `nholo model check`), the
symbolic M and F's size and the parts they are written in, the wall time of
the plugin's compile and of its SIMD lane add-on's (as `nholo model build`
reports them), the compilers' CPU time (user + sys of nholo's child
processes: the compilers and the linker, what a machine shared with others
still measures) and the wall time of the whole command. The machine's
load average at the start of each build is printed with it: wall times on a
loaded machine say little, CPU times a little more than they would idle.

A model over nholo's node limit is refused by `nholo model check`; the
script reports it and goes on.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_section import publish_section  # noqa: E402
from large_model import model_text  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- bench/model_compile_time.py: begin -->"
END = "<!-- bench/model_compile_time.py: end -->"


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def build(nholo, path, cache):
    """(cpu seconds, wall seconds, output) of `nholo model build path`."""
    env = dict(os.environ, NHOLO_CACHE_DIR=cache)
    cpu0, t0 = children_cpu(), time.perf_counter()
    p = subprocess.run([nholo, "model", "build", path], env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    return cpu, wall, p.returncode, p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nholo", default=os.path.join(ROOT, "build", "nholo"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    ap.add_argument("--sizes", default="2n,3n,4n,4", help="bodies, n: without the energy")
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    a = ap.parse_args()
    nholo = os.path.abspath(a.nholo)
    if not os.access(nholo, os.X_OK):
        sys.exit(f"model_compile_time.py: {nholo} not found; build nholo first")
    work = tempfile.mkdtemp(prefix="nholo_compile_time_")
    rows = []
    for size in a.sizes.split(","):
        bodies, with_energy = int(size.rstrip("n")), not size.endswith("n")
        text, nodes = model_text(bodies, with_energy)
        path = os.path.join(work, f"large_{size}.model.toml")
        with open(path, "w") as f:
            f.write(text)
        check = subprocess.run([nholo, "model", "check", path], capture_output=True, text=True)
        graph = re.search(r"size: ([\d,]+) of", check.stdout)
        mf = re.search(r"M, F: differentiated symbolically from the Lagrangian \(([\d,]+) distinct", check.stdout)
        load = os.getloadavg()[0]
        cpu, wall, rc, out = build(nholo, path, os.path.join(work, f"cache_{size}"))
        if rc != 0:
            print(f"{size}: nholo model build failed ({rc}):\n{out[-2000:]}", file=sys.stderr)
            rows.append(f"| {bodies} | {'yes' if with_energy else 'no'} | {nodes:,} | refused or failed: "
                        f"{out.strip().splitlines()[-1][:120]} | | | | | | |")
            continue
        # "plugin compiled in X s", "SIMD lane add-on (...) compiled in Y s"
        plugin = re.search(r": plugin compiled in ([\d.]+) s", out)
        lanes = re.search(r"lane add-on \([^)]*\) compiled in ([\d.]+) s", out)
        parts = len(set(re.findall(r"hand_dynamics_part(\d+)<",
                                   "".join(open(os.path.join(work, f"cache_{size}", f)).read()
                                           for f in os.listdir(os.path.join(work, f"cache_{size}"))
                                           if f.endswith(".cpp") and "-lanes-" not in f))))
        rows.append(f"| {bodies} | {'yes' if with_energy else 'no'} | {nodes:,} | "
                    f"{graph.group(1) if graph else '?'} | {mf.group(1) if mf else 'none (AD)'} | "
                    f"{parts or 'one function'} | {plugin.group(1) if plugin else '?'} | "
                    f"{lanes.group(1) if lanes else 'not built'} | {cpu:.1f} | {wall:.1f} | {load:.1f} |")
        print(rows[-1], flush=True)
    lines = [BEGIN,
             "| bodies | energy | nodes as written | graph nodes | symbolic M, F nodes | M, F parts | "
             "plugin s | lane add-on s | CPU s | wall s | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"] + rows + [END]
    if a.no_write:
        print("\n".join(lines))
    else:
        publish_section(a.out, lines)


if __name__ == "__main__":
    main()
