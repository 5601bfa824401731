"""ptxas' resources of the rolling coin's Udwadia-Kalaba kernels, against their budget.

The CUDA build keeps the PTX of the coin's generated unit (CMakeLists.txt:
`--keep` on generated/cuda_RollingCoin.cu, into BUILD/ptx). This check runs
ptxas (-O3, the production optimisation) on that PTX for four
Udwadia-Kalaba kernels (RK4, DOPRI5, DOP853 without the events' hook, and
DOPRI5 with it: `integrate_kernel<Sys, M, Events>` of
host/backends/cuda_ensemble_impl.cuh; the hook is the same code for every
method, so one method checks it) and fails when one of them spills more
or its stack frame grows past its budget: what was measured when the budget
was set (docs/BENCHMARKS.md, "Kernel resources") plus 10 %. Registers are printed;
on sm_90 every count up to 255 gives the same occupancy (2 blocks of 128 per
SM), so they have no budget of their own.

So a build that makes PTX only (scripts/test.sh without a GPU: ptxas is the
slowest half of every CUDA unit) still checks what ptxas makes of the kernel
that matters most. Run by ctest (cuda_kernel_resources):

    python3 tests/python/check_kernel_resources.py PTXAS PTX_DIR
"""
import glob
import os
import re
import subprocess
import sys

# (method, events) -> (name, stack frame in bytes when the budget was set,
# sm_90; spill bytes stored when it was set). events 0: the kernel of a run
# without [[events]], 1: with them (EnsembleWindow::run<M, true>: the events'
# search and the refinement of each crossing by steps of the method, out of
# line, add their frames and spill a little; docs/BENCHMARKS.md)
BUDGET = {(0, 0): ("rk4", 1088, 0), (1, 0): ("dopri5", 1408, 0), (2, 0): ("dop853", 2128, 0),
          (1, 1): ("dopri5+ev", 2928, 132)}
GROWTH = 1.10
ENTRY = ("_ZN5nholo12cuda_backend16integrate_kernelINS_17SecondOrderSystemINS_6models11RollingCoinEd"
         "NS_24UdwadiaKalabaFormulationEEELNS_6MethodE{m}ELb{e}EEEvNS_14EnsembleWindowIT_EE"
         "NS_12WindowLaunchE")


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
    for m, e in BUDGET:
        cmd += ["--entry", ENTRY.format(m=m, e=e)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"ptxas failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    report, method, frame = {}, None, None
    for line in (proc.stdout + proc.stderr).splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            method = next((k for k in BUDGET if m.group(1) == ENTRY.format(m=k[0], e=k[1])), None)
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
    for k, (name, stack0, spill0) in BUDGET.items():
        regs, stack, stores, loads = report[k]
        limit = int(stack0 * GROWTH)
        spill_limit = int(spill0 * GROWTH)
        print(f"  {name:9s} {regs:3d} registers, {stack:5d} B stack (budget {limit} B), "
              f"spills {stores} B stored / {loads} B loaded (budget {spill_limit} B stored)")
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
