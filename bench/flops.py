#!/usr/bin/env python3
"""Dynamic floating-point operation counts from a callgrind profile.

    python3 bench/flops.py BINARY CALLGRIND_OUT...   -> "flops Ir" per profile, one a line

BINARY must be statically linked and not position independent
(rhs_driver_static, bench/run.sh), so that the instruction addresses of the
profile (valgrind --tool=callgrind --dump-instr=yes) are the addresses that
`objdump -d` prints, libm's sin/cos/pow included. Every executed instruction
is weighted by the double-precision operations it performs:
  add/sub/mul/div/sqrt, scalar (..sd) 1, packed (..pd) 2 per xmm, 4 per ymm;
  fused multiply-add (vfmadd/vfmsub/vfnmadd/vfnmsub ..sd) 2, packed 4 / 8.
min/max, compares, conversions, logic and moves count 0 (the usual flop
convention, under which a GPU's peak counts an FMA as 2). The difference of
two runs with N1 and N2 evaluations (or steps) gives flops per evaluation.
"""
import re
import subprocess
import sys

ARITH = ("add", "sub", "mul", "div", "sqrt")


def flops_of(mnemonic, operands):
    m = mnemonic
    if m.startswith("v"):
        m = m[1:]
    fma = re.match(r"f(n?)m(add|sub)(132|213|231)?(sd|pd)$", m)
    if fma:
        kind = fma.group(4)
        if kind == "sd":
            return 2
        return 8 if "ymm" in operands else 4
    mm = re.match(r"(add|sub|mul|div|sqrt)(sd|pd)$", m)
    if mm:
        if mm.group(2) == "sd":
            return 1
        return 4 if "ymm" in operands else 2
    return 0


def instruction_table(binary):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], check=True,
                         capture_output=True, text=True).stdout
    table = {}
    for line in out.splitlines():
        mt = re.match(r"\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if mt:
            table[int(mt.group(1), 16)] = flops_of(mt.group(2), mt.group(3))
    return table


def parse_position(tok, prev):
    if tok == "*":
        return prev
    if tok.startswith("+"):
        return prev + int(tok[1:], 0)
    if tok.startswith("-"):
        return prev - int(tok[1:], 0)
    return int(tok, 0)


def count(table, profile):
    flops = 0
    ir = 0
    npos = 1
    addr = 0
    skip_next = False
    with open(profile) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("positions:"):
                npos = len(line.split()[1:])
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                if line.startswith("calls="):
                    skip_next = True
                continue
            parts = line.split()
            addr = parse_position(parts[0], addr)
            if skip_next:  # inclusive cost of a call: not this instruction's own
                skip_next = False
                continue
            cost = int(parts[npos]) if len(parts) > npos else 0
            ir += cost
            flops += cost * table.get(addr, 0)
    return flops, ir


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    table = instruction_table(sys.argv[1])
    for profile in sys.argv[2:]:
        f, ir = count(table, profile)
        print(f, ir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
