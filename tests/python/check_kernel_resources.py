"""ptxas' resources of the rolling coin's Udwadia-Kalaba kernels, against their budget.

The CUDA build keeps the PTX of the coin's generated unit (CMakeLists.txt:
`--keep` on generated/cuda_RollingCoin.cu, into BUILD/ptx). This check runs
ptxas (-O3, the production optimisation) on that PTX for the coin's
Udwadia-Kalaba kernels: the lean kernels a run without events launches
(`lean_integrate_kernel<Sys, M>` of host/backends/cuda_ensemble_impl.cuh:
the trajectories whose cache is usable, every coin of valid parameters), and
the general kernels (`integrate_kernel<Sys, M, Events>`: RK4, DOPRI5 and
DOP853 without the events' hook, for the trajectories the lean kernel leaves
and runs without a step budget; DOPRI5 with the hook, the same code for every
method). It fails when a kernel spills more or its stack frame grows past its
budget: what was measured when the budget was set (docs/BENCHMARKS.md,
"Kernel resources") plus 10 %, and when a lean kernel's registers no longer
let 3 blocks of 128 threads share an SM (168 registers on sm_90): the
lean kernels exist for that occupancy. The general kernels' registers are
printed only (every count from 169 to 255 gives 2 blocks per SM).

So a build that makes PTX only (scripts/test.sh without a GPU: ptxas is the
slowest half of every CUDA unit) still checks what ptxas makes of the kernels
that matter most. Run by ctest (cuda_kernel_resources):

    python3 tests/python/check_kernel_resources.py PTXAS PTX_DIR
"""
import glob
import os
import re
import subprocess
import sys

# (kind, method, events) -> (name, stack frame in bytes when the budget was
# set, sm_90; spill bytes stored when it was set; most registers, None: no
# limit). kind "lean": lean_integrate_kernel (no events), "general":
# integrate_kernel; events 1: a run with [[events]] (EnsembleWindow::run<M,
# true>: the events' search and the refinement of each crossing by steps of
# the method, out of line, add their frames and spill a little)
THREE_BLOCKS = 168  # 65536 registers / (3 blocks x 128 threads), in steps of 8
BUDGET = {("lean", 0, 0): ("lean rk4", 1152, 0, THREE_BLOCKS),
          ("lean", 1, 0): ("lean dopri5", 1408, 0, THREE_BLOCKS),
          ("lean", 2, 0): ("lean dop853", 2192, 0, THREE_BLOCKS),
          ("general", 0, 0): ("rk4", 1152, 0, None),
          ("general", 1, 0): ("dopri5", 1408, 0, None),
          ("general", 2, 0): ("dop853", 2128, 0, None),
          ("general", 1, 1): ("dopri5+ev", 2944, 144, None)}
GROWTH = 1.10
SYSTEM = ("INS_17SecondOrderSystemINS_6models11RollingCoinEdNS_24UdwadiaKalabaFormulationEEE"
          "LNS_6MethodE{m}E")
ENTRY = {"general": "_ZN5nholo12cuda_backend16integrate_kernel" + SYSTEM +
                    "Lb{e}EEEvNS_14EnsembleWindowIT_EENS_12WindowLaunchE",
         "lean": "_ZN5nholo12cuda_backend21lean_integrate_kernel" + SYSTEM +
                 "EEvNS_14EnsembleWindowIT_EENS_12WindowLaunchENS_11GeneralListE"}


def entry(key):
    kind, m, e = key
    return ENTRY[kind].format(m=m, e=e)


def find_ptx(ptx_dir):
    """The kept PTX of the coin's unit, and its target (sm_XX); sm_90 first."""
    found = []
    for path in sorted(glob.glob(os.path.join(ptx_dir, "*.ptx"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
        m = re.search(r"^\.target\s+(sm_\d+)", head, re.M)
        if m:
            found.append((m.group(1), path))
    if not found:
        sys.exit(f"no PTX in '{ptx_dir}': the CUDA build keeps the coin unit's PTX there "
                 "(CMakeLists.txt, --keep on generated/cuda_RollingCoin.cu); rebuild nholo")
    found.sort(key=lambda tp: tp[0] != "sm_90")
    return found[0]


def ptxas_report(ptxas, target, ptx, out_dir):
    """{method: (registers, stack, spill stores, spill loads)} from ptxas -v."""
    cmd = [ptxas, f"-arch={target}", "-O3", "-v", ptx, "-o", os.path.join(out_dir, "coin_uk.cubin")]
    for key in BUDGET:
        cmd += ["--entry", entry(key)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"ptxas failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    report, method, frame = {}, None, None
    for line in (proc.stdout + proc.stderr).splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            method = next((k for k in BUDGET if m.group(1) == entry(k)), None)
            frame = None
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and method is not None and frame is None:
            frame = tuple(int(x) for x in m.groups())
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and method is not None and frame is not None:
            report[method] = (int(m.group(1)),) + frame
            method = None
    missing = [BUDGET[k][0] for k in BUDGET if k not in report]
    if missing:
        sys.exit(f"ptxas reported no resources for the coin's Udwadia-Kalaba {', '.join(missing)} "
                 f"kernel(s) in '{ptx}':\n{proc.stdout}{proc.stderr}")
    return report


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_kernel_resources.py PTXAS PTX_DIR")
    ptxas, ptx_dir = sys.argv[1:]
    target, ptx = find_ptx(ptx_dir)
    report = ptxas_report(ptxas, target, ptx, ptx_dir)
    failures = []
    print(f"ptxas -O3 -arch={target}, rolling coin, Udwadia-Kalaba kernels ({os.path.basename(ptx)}):")
    for k, (name, stack0, spill0, max_regs) in BUDGET.items():
        regs, stack, stores, loads = report[k]
        limit = int(stack0 * GROWTH)
        spill_limit = int(spill0 * GROWTH)
        reg_budget = f" (at most {max_regs})" if max_regs else ""
        print(f"  {name:12s} {regs:3d} registers{reg_budget}, {stack:5d} B stack (budget {limit} B), "
              f"spills {stores} B stored / {loads} B loaded (budget {spill_limit} B stored)")
        if max_regs and target == "sm_90" and regs > max_regs:
            failures.append(f"{name} uses {regs} registers: more than {max_regs}, so fewer than 3 "
                            "blocks of 128 threads share an SM")
        if stores > spill_limit or (spill0 == 0 and loads):
            failures.append(f"{name} spills ({stores} B stores, {loads} B loads; "
                            f"budget {spill_limit} B stored)")
        if target == "sm_90" and stack > limit:
            failures.append(f"{name} stack frame {stack} B exceeds its budget {limit} B "
                            f"({stack0} B when set, +10 %)")
    if target != "sm_90":
        print(f"  (the stack budgets are for sm_90; this build's PTX is for {target}: spills checked only)")
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("within budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
