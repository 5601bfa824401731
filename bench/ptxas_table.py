#!/usr/bin/env python3
"""ptxas resource usage of nholo's production CUDA kernels, as a table.

    cmake -S . -B build/cuda -DNHOLO_CUDA_RESOURCE_USAGE=ON
    cmake --build build/cuda --target nholo 2>&1 | tee build.log
    python3 bench/ptxas_table.py build.log [--sm 90] [--models RollingCoin,Skate,Appell]
                                 [--before OLD.log]

Reads ptxas' `-v` report of every `integrate_kernel<System, Method, Events>`
and `lean_integrate_kernel<System, Method>` (one per model, formulation,
integration method and kind: lean, general, general with the events' hook;
host/backends/cuda_ensemble_impl.cuh) and
prints a markdown table: registers per thread, stack frame, spill stores and
loads, and the theoretical occupancy of 128-thread blocks from the registers
(65536 registers and 64 warps per SM on sm_80/sm_90; registers are allocated
per warp in units of 256).

--before OLD.log: the same report of a build before one kernel per method
(the ensemble functor launched by thrust::for_each with a run-time switch
between the methods, cub's for_each static_kernel); prints instead one row per
model and formulation, that kernel against the per-method kernels.
"""
import argparse
import re
import subprocess
import sys

METHODS = {"0": "rk4", "1": "dopri5", "2": "dop853"}
FORMS = [("EmbeddedSystem", "embedded"), ("VakonomicSystem", "vakonomic"),
         ("NullSpaceFormulation", "null_space"),
         ("LagrangeMultiplierFormulation", "lagrange_multiplier"),
         ("UdwadiaKalabaFormulation", "udwadia_kalaba")]


def occupancy(regs, block=128):
    per_warp = ((regs * 32 + 255) // 256) * 256
    warps_per_block = block // 32
    blocks = 65536 // (per_warp * warps_per_block)
    return min(64, blocks * warps_per_block) / 64


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log")
    ap.add_argument("--sm", default="90")
    ap.add_argument("--models", default="RollingCoin,Skate,Appell")
    ap.add_argument("--before", help="ptxas report of the thrust::for_each build")
    a = ap.parse_args()
    txt = open(a.log).read()
    pat = re.compile(r"Compiling entry function '(\S+)' for 'sm_(\d+)'\n"
                     r"ptxas info\s+: Function properties for \S+\n"
                     r"\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads\n"
                     r"ptxas info\s+: Used (\d+) registers")
    found = [m.groups() for m in pat.finditer(txt) if "integrate_kernel" in m.group(1) and m.group(2) == a.sm]
    if not found:
        print(f"ptxas_table: no integrate_kernel for sm_{a.sm} in {a.log} "
              "(build with -DNHOLO_CUDA_RESOURCE_USAGE=ON)", file=sys.stderr)
        return 2
    dem = subprocess.run(["c++filt"], input="\n".join(f[0] for f in found), capture_output=True,
                         text=True, check=True).stdout.split("\n")
    models = a.models.split(",")
    rows = []
    for (name, _, stack, ss, sl, regs), d in zip(found, dem):
        mm = re.search(r"models::(\w+)", d)
        if not mm or mm.group(1) not in models:
            continue
        form = next(f for k, f in FORMS if k in d)
        if "Conflated<" in d:
            form = "conflated"
        meth = METHODS[re.search(r"\(nholo::Method\)(\d)", d).group(1)]
        kind = kernel_kind(d)
        if a.before and kind != "general":
            continue
        rows.append((models.index(mm.group(1)), mm.group(1), form, meth, kind, int(regs), int(stack),
                     int(ss), int(sl)))
    rows.sort()
    if a.before:
        return print_before_after(a, rows, models)
    print(f"| model | formulation | method | kernel | registers | stack frame [B] | spill stores [B] | spill loads [B] | occupancy (128-thread blocks) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for _, mo, f, me, k, r, st, ss, sl in rows:
        print(f"| {mo} | {f} | {me} | {k} | {r} | {st:,} | {ss} | {sl} | {100 * occupancy(r):.1f} % |")
    return 0


def kernel_kind(d):
    """lean (lean_integrate_kernel), general, or general+events (integrate_kernel<..., true>)."""
    if "lean_integrate_kernel<" in d:
        return "lean"
    return "general+events" if re.search(r"\(nholo::Method\)\d, true>", d) else "general"


def parse(path, sm, keep):
    """(demangled name, regs, stack, spill stores, spill loads) of the kernels keep() selects."""
    txt = open(path).read()
    pat = re.compile(r"Compiling entry function '(\S+)' for 'sm_(\d+)'\n"
                     r"ptxas info\s+: Function properties for \S+\n"
                     r"\s+(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads\n"
                     r"ptxas info\s+: Used (\d+) registers")
    found = [m.groups() for m in pat.finditer(txt) if m.group(2) == sm]
    dem = subprocess.run(["c++filt"], input="\n".join(f[0] for f in found), capture_output=True,
                         text=True, check=True).stdout.split("\n")
    return [(d, int(f[5]), int(f[2]), int(f[3]), int(f[4])) for f, d in zip(found, dem) if keep(d)]


def model_form(d):
    mm = re.search(r"models::(\w+)", d)
    if not mm:
        return None, None
    form = next((f for k, f in FORMS if k in d), None)
    if "Conflated<" in d:
        form = "conflated"
    return mm.group(1), form


def print_before_after(a, rows, models):
    before = {}
    for d, r, st, ss, sl in parse(a.before, a.sm, lambda d: "EnsembleWindow<" in d):
        mo, fo = model_form(d)
        if mo in models and fo:
            before[(mo, fo)] = (r, st, ss + sl)
    after = {(mo, f, me): (r, st, ss + sl) for _, mo, f, me, _, r, st, ss, sl in rows}
    print("| model | formulation | before: registers / stack [B] / spills [B] (one kernel, run-time method) "
          "| after, rk4 | after, dopri5 | after, dop853 |")
    print("|---|---|---|---|---|---|")
    cell = lambda v: f"{v[0]} / {v[1]:,} / {v[2]}" if v else "—"
    for mo in models:
        for fo in ["udwadia_kalaba", "lagrange_multiplier", "null_space", "vakonomic", "conflated", "embedded"]:
            if (mo, fo) not in before and (mo, fo, "dopri5") not in after:
                continue
            print(f"| {mo} | {fo} | {cell(before.get((mo, fo)))} | {cell(after.get((mo, fo, 'rk4')))} | "
                  f"{cell(after.get((mo, fo, 'dopri5')))} | {cell(after.get((mo, fo, 'dop853')))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
