"""A fuzzer over nholo result files: real files made by the nholo binary,
mutated (shapes, types, attributes, deleted and replaced objects, the bytes
of the file's metadata and chunk tables, truncation), then read by every
command that reads result files: `stats`, `compare`, `diff`, `merge`
(virtual and --copy) and `run --resume` of a mutated .partial.

Each command must end with exit 0 (or 1: `diff` found a difference) or 2
with a message: no crash (signal), no hang (a timeout per command), no
allocation beyond its budget (the address space of each command is limited
to NHOLO_FUZZ_MEMORY_MB, default 3072, so that a read sized by a crafted
header ends as an error, not as a machine out of memory), no uncaught
exception text (`std::bad_alloc`, `terminate called`), no sanitizer report.
Where the HDF5 library itself hangs or crashes on the damaged file, nholo
ends the command with exit 2 and says so (host/io/h5_library_faults.hpp;
NHOLO_HDF5_HANG_SECONDS is set to a quarter of the timeout); what still hangs
or dies inside HDF5 (the sanitizer build, where AddressSanitizer owns
SIGSEGV) is listed apart from nholo's own failures.

  fuzz_result_files.py NHOLO_BINARY [CASES [SEED]]

CASES defaults to NHOLO_FUZZ_RESULT_CASES or 200 (the CI's sample; the
issue's check ran 10^4: docs/usage.md). Deterministic for a seed. Prints a
summary line per command and exits 1 listing the failing cases (each
reproducible: the mutated file is kept in the work folder).
"""
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

CONFIG = """
model = "rolling_coin"
formulations = ["udwadia_kalaba", "null_space"]
[params]
slope = 0.3
[time]
t_end = 0.5
save_every = 0.125
[integrator]
method = "dopri5"
rtol = 1e-8
atol = 1e-8
[ensemble]
size = 2100
seed = 5
[ensemble.q0]
theta = { uniform = [0.0, 6.28] }
[ensemble.qd0]
theta = { uniform = [1.0, 3.0] }
phi = { uniform = [0.5, 1.5] }
[output]
path = "out.h5"
window = 2
fields = ["q", "qdot", "energy"]

[[events]]
name = "half_turn"
expr = "sin(theta)"
max_records = 3
"""

BAD_TEXT = ("bad_alloc", "terminate called", "AddressSanitizer", "runtime error:",
            "Segmentation", "core dumped", "std::length_error")


def innermost_frames(pid):
    """The stack of pid's main thread (gdb), innermost first; [] without gdb."""
    if not shutil.which("gdb"):
        return []
    try:
        bt = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "bt 40"], capture_output=True,
                            text=True, timeout=60, errors="replace").stdout
    except subprocess.TimeoutExpired:
        return []
    return [line for line in bt.splitlines() if line.startswith("#")]


def stop_hung(p):
    """A command past its time: where it hangs, then whether a signal stops it
    (the first asks for a clean stop, a second ends nholo at once)."""
    frames = innermost_frames(p.pid)
    # hung inside the HDF5 library (a loop on a damaged heap or b-tree): the
    # innermost frame is libhdf5's code
    # (no stack where gdb is missing or may not attach: said, and judged by
    # whether a signal stops it)
    in_hdf5 = bool(frames) and "libhdf5" in frames[0]
    unknown = not frames
    for _ in range(2):
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(2)
            if in_hdf5:
                return "hang in the HDF5 library, stopped by a signal", frames
            if unknown:
                return "hang in the HDF5 library?, stopped by a signal (no stack: gdb)", frames
            return "timeout", frames
        except subprocess.TimeoutExpired:
            pass
    p.kill()
    p.wait()
    return "timeout, not stopped by two SIGTERMs", frames


# frames of the C library above the code that called it: its abort path,
# and the copies and frees a damaged structure makes fault (a memmove past a
# buffer, free() of a corrupted block); "from .../libc.so.6" without its
# debug symbols
C_LIBRARY_FRAMES = ("pthread_kill", "raise", "abort", "__libc_message", "fortify_fail", "chk_fail",
              "__GI_", "__pthread", "malloc_printerr", "_int_free", "__memmove", "__memcpy",
              "memmove", "memcpy", "libc.so")


def crash_in_hdf5(binary, args, cwd, env=None):
    """Whether a command that died of a signal died inside the HDF5 library:
    run again under gdb, the innermost frame outside the C library (its abort
    path, its copies and frees) is libhdf5's (HDF5 1.10 parses some damaged metadata, e.g. a
    virtual dataset's selection, past its buffer: glibc's fortify check
    aborts it; or copies a damaged global heap object past its collection,
    or frees a block its metadata cache's damaged entry overwrote). The
    frames, innermost first; [] without gdb."""
    if not shutil.which("gdb"):
        return False, []
    try:
        bt = subprocess.run(["gdb", "-batch", "-ex", "run", "-ex", "bt 40", "--args", binary] + args,
                            cwd=cwd, capture_output=True, text=True, timeout=120, errors="replace",
                            env=dict(os.environ, **(env or {}))).stdout
    except subprocess.TimeoutExpired:
        return False, []
    frames = [line for line in bt.splitlines() if line.startswith("#")]
    caller = [f for f in frames if not any(a in f for a in C_LIBRARY_FRAMES)]
    return bool(caller) and "libhdf5" in caller[0], frames


def run(binary, args, cwd, timeout, memory_mb, env=None):
    def limit():
        b = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (b, b))
    # one HDF5 call that has not returned after a quarter of the timeout ends
    # the command with exit 2 (host/io/h5_library_faults.hpp)
    hang = {"NHOLO_HDF5_HANG_SECONDS": os.environ.get("NHOLO_HDF5_HANG_SECONDS",
                                                      str(max(1.0, timeout / 4)))}
    p = subprocess.Popen([binary] + args, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace",
                         preexec_fn=limit if memory_mb else None,
                         env=dict(os.environ, **hang, **(env or {})))
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        code, frames = stop_hung(p)
        out, _ = p.communicate()
        return code, out + "\n".join(frames[:12])


def make_corpus(binary, work):
    (work / "c.toml").write_text(CONFIG)
    steps = [["run", "-q", "c.toml"],
             ["run", "-q", "c.toml", "--range", "0:1024"],
             ["run", "-q", "c.toml", "--range", "1024:2100"],
             ["merge", "merged.h5", "out.shard-0-1024.h5", "out.shard-1024-2100.h5"]]
    for a in steps:
        code, out = run(binary, a, work, 300, 0)
        if code != 0:
            sys.exit(f"fuzz_result_files: making the corpus, nholo {' '.join(a)}: {code}\n{out}")
    # a .partial: a run that failed in its fourth window (the failpoint of
    # host/backends/cpu_ensemble.hpp), slices of 1024 trajectories
    code, out = run(binary, ["run", "-q", "c.toml", "--threads", "1", "--set", "output.path=p.h5",
                             "--set", "output.memory_budget_mb=4"], work, 300, 0,
                    {"NHOLO_FAILPOINT_DEVICE_FAULT": "3"})
    if code != 3 or not (work / "p.h5.partial").exists():
        sys.exit(f"fuzz_result_files: making the .partial: exit {code}\n{out}")
    return {"full": work / "out.h5", "shard0": work / "out.shard-0-1024.h5",
            "shard1": work / "out.shard-1024-2100.h5", "merged": work / "merged.h5",
            "partial": work / "p.h5.partial"}


def objects(f):
    found = []
    f.visititems(lambda n, o: found.append((n, o)))
    return found


def replace_dataset(f, rng, name, d):
    kind = rng.choice(["huge", "shape", "dtype", "scalar", "empty", "strings"])
    shape = d.shape
    del f[name]
    if kind == "huge":
        dims = tuple([rng.choice([10**9, 2**40, 10**6])] + list(shape[1:])) if shape else (10**9,)
        f.create_dataset(name, shape=dims, dtype="f8", chunks=tuple([1024] + [1] * (len(dims) - 1)))
    elif kind == "shape" and shape:
        dims = tuple(max(0, s + rng.choice([-1, 1, 7, -s])) for s in shape)
        f.create_dataset(name, data=np.zeros(dims, dtype=d.dtype if d.dtype.kind != "O" else "f8"))
    elif kind == "dtype":
        dt = rng.choice(["i1", "u2", "f4", "i8", "f8", "S7", "c16"])
        f.create_dataset(name, shape=shape, dtype=dt)
    elif kind == "scalar":
        f.create_dataset(name, data=3.5)
    elif kind == "empty":
        f.create_dataset(name, shape=(0,) + tuple(shape[1:]), dtype="f8")
    else:
        f.create_dataset(name, data=np.array([b"x", b"yy"] * 3, dtype=object),
                         dtype=h5py.string_dtype())
    return f"dataset {name}: {kind}"


def mutate_attribute(f, rng, name, o):
    keys = list(o.attrs.keys())
    if not keys:
        return None
    k = rng.choice(keys)
    kind = rng.choice(["delete", "string", "number", "array", "huge_array", "negative"])
    if kind == "delete":
        del o.attrs[k]
    elif kind == "string":
        o.attrs[k] = "x" * rng.choice([0, 1, 300])
    elif kind == "number":
        o.attrs[k] = rng.choice([0, -1, 2**62, 1e308, float("nan")])
    elif kind == "array":
        o.attrs[k] = np.arange(rng.choice([0, 2, 5]), dtype="f8")
    elif kind == "huge_array":
        o.attrs.create(k, np.zeros(200000, dtype="f8"))
    else:
        o.attrs[k] = np.int64(-rng.randrange(1, 10**12))
    return f"attribute {name}@{k}: {kind}"


def mutate_structure(path, rng):
    with h5py.File(path, "r+") as f:
        objs = objects(f)
        name, o = rng.choice(objs)
        what = rng.random()
        if what < 0.45 and isinstance(o, h5py.Dataset):
            return replace_dataset(f, rng, name, o)
        if what < 0.75:
            r = mutate_attribute(f, rng, name, o) or mutate_attribute(f, rng, "/", f)
            if r:
                return r
        del f[name]
        return f"deleted {name}"


def mutate_bytes(path, rng):
    data = bytearray(path.read_bytes())
    kind = rng.choice(["flip", "flip_head", "zero", "truncate"])
    if kind == "truncate":
        cut = rng.randrange(0, len(data))
        path.write_bytes(bytes(data[:cut]))
        return f"truncated at {cut}"
    count = rng.choice([1, 4, 32])
    for _ in range(count):
        span = min(len(data), 65536) if kind == "flip_head" else len(data)
        at = rng.randrange(0, span)
        if kind == "zero":
            data[at:at + 64] = bytes(min(64, len(data) - at))
        else:
            data[at] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return f"{kind} x{count}"


def commands(case, corpus_name, file_name):
    if corpus_name in ("shard0", "shard1"):
        other = "out.shard-1024-2100.h5" if corpus_name == "shard0" else "out.shard-0-1024.h5"
        pair = [file_name, other] if corpus_name == "shard0" else [other, file_name]
        return [["merge", f"m{case}.h5"] + pair, ["merge", "--copy", f"mc{case}.h5"] + pair,
                ["stats", file_name]]
    if corpus_name == "partial":
        stem = file_name[:-len(".partial")]
        return [["stats", file_name],
                ["run", "-q", "c.toml", "--threads", "1", "--set", f"output.path={stem}",
                 "--set", "output.memory_budget_mb=4", "--resume"]]
    return [["stats", file_name], ["compare", file_name], ["diff", file_name, "out.h5"]]


def main():
    binary = os.path.abspath(sys.argv[1])
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else int(
        os.environ.get("NHOLO_FUZZ_RESULT_CASES", "200"))
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    memory_mb = int(os.environ.get("NHOLO_FUZZ_MEMORY_MB", "3072"))
    timeout = float(os.environ.get("NHOLO_FUZZ_TIMEOUT", "30"))
    work = Path(tempfile.mkdtemp(prefix="nholo_fuzz_results_"))
    corpus = {k: v for k, v in make_corpus(binary, work).items() if v is not None}
    rng = random.Random(seed)
    failures, library_hangs, tally = [], [], {}
    library_exits = 0  # exit 2: HDF5 hung or crashed, and nholo said so
    for case in range(cases):
        corpus_name = rng.choice(sorted(corpus))
        src = corpus[corpus_name]
        if corpus_name == "partial":
            stem = f"case{case}.h5"
            dst = work / (stem + ".partial")
            shutil.copy(src, dst)
            pieces = work / "p.h5.partial.d"
            if pieces.exists():
                shutil.copytree(pieces, work / (stem + ".partial.d"))
        else:
            dst = work / f"case{case}_{src.name}"
            shutil.copy(src, dst)
        try:
            how = mutate_structure(dst, rng) if rng.random() < 0.6 else mutate_bytes(dst, rng)
        except Exception as e:  # h5py could not open what the byte mutations left
            how = f"(mutation failed: {type(e).__name__})"
        for args in commands(case, corpus_name, dst.name):
            code, out = run(binary, args, work, timeout, memory_mb)
            key = args[0] + (" --copy" if "--copy" in args else "") + (
                " --resume" if "--resume" in args else "")
            tally.setdefault(key, {})
            tally[key][code] = tally[key].get(code, 0) + 1
            ok_codes = (0, 1, 2) if args[0] == "diff" else (0, 2)
            library_exits += code == 2 and "nholo: error: the HDF5 library" in out
            bad = [t for t in BAD_TEXT if t in out]
            if isinstance(code, int) and code < 0:
                inside, frames = crash_in_hdf5(binary, args, work)
                if inside:
                    code = "crash in the HDF5 library"
                    out += "\n" + "\n".join(frames[:12])
            if isinstance(code, str) and code.startswith(("hang in the HDF5 library",
                                                          "crash in the HDF5 library")):  # listed
                library_hangs.append(f"case {case} ({corpus_name}, {how}): nholo {' '.join(args)}"
                                     f" ({code})")
            elif code not in ok_codes or bad or (code == 2 and "nholo" not in out):
                failures.append(f"case {case} ({corpus_name}, {how}): nholo {' '.join(args)} "
                                f"-> {code} {bad}\n{out[-600:]}")
        failed = failures and failures[-1].startswith(f"case {case} ")
        if failed:
            print(failures[-1], flush=True)
        if (case + 1) % 100 == 0:
            print(f"{case + 1} of {cases} cases: {len(failures)} failures, "
                  f"{len(library_hangs)} hangs or crashes inside HDF5", flush=True)
        for extra in list(work.glob(f"m*{case}.h5")) + list(work.glob(f"case{case}.h5")):
            extra.unlink()
        if not failed:
            dst.unlink(missing_ok=True)
            shutil.rmtree(work / f"case{case}.h5.partial.d", ignore_errors=True)
    for key in sorted(tally):
        print(f"{key}: " + ", ".join(f"exit {c}: {n}" for c, n in sorted(tally[key].items(),
                                                                           key=str)))
    print(f"{cases} mutated files (seed {seed}), {len(failures)} failures; work folder {work}")
    print(f"{library_exits} commands ended with exit 2 because the HDF5 library hung or crashed "
          "on the damaged file (its message)")
    if library_hangs:
        # a known limit of the HDF5 library nholo links (1.10: a loop on some
        # damaged global heaps); nholo cannot see it coming, a signal stops it
        # or its parser reading damaged metadata past a buffer (glibc aborts it)
        print(f"{len(library_hangs)} commands hung inside the HDF5 library and were stopped by "
              "SIGTERM (docs/usage.md, \"Interruptions\"), or died inside it on damaged "
              "metadata:\n  " + "\n  ".join(library_hangs))
    if failures:
        print("\n".join(failures[:40]))
        return 1
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
