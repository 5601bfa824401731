#!/usr/bin/env python3
"""ptxas resource usage of nholo's production CUDA kernels, as a table.

    cmake -S . -B build/cuda -DNHOLO_CUDA_RESOURCE_USAGE=ON
    cmake --build build/cuda --target nholo 2>&1 | tee build.log
    python3 bench/ptxas_table.py build.log [--sm 90] [--models RollingCoin,Skate,Appell]

Reads ptxas' `-v` report of every `integrate_kernel<System, Method>` (one per
model, formulation and integration method, host/cuda_ensemble_impl.cuh) and
prints a markdown table: registers per thread, stack frame, spill stores and
loads, and the theoretical occupancy of 128-thread blocks from the registers
(65536 registers and 64 warps per SM on sm_80/sm_90; registers are allocated
per warp in units of 256).
"""
import argparse
import re
import subprocess
import sys

METHODS = {"0": "rk4", "1": "dopri5", "2": "dop853"}
FORMS = [("VakonomicSystem", "vakonomic"), ("NullSpaceFormulation", "null_space"),
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
        rows.append((models.index(mm.group(1)), mm.group(1), form, meth, int(regs), int(stack), int(ss), int(sl)))
    rows.sort()
    print(f"| model | formulation | method | registers | stack frame [B] | spill stores [B] | spill loads [B] | occupancy (128-thread blocks) |")
    print("|---|---|---|---|---|---|---|---|")
    for _, mo, f, me, r, st, ss, sl in rows:
        print(f"| {mo} | {f} | {me} | {r} | {st:,} | {ss} | {sl} | {100 * occupancy(r):.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
