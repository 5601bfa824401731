"""The include rules of nholo's source tree (docs/architecture.md, "The floor plan of host/").

Every `#include "..."` of a file in kernels/, models/, host/, python/ is checked
against the rooms it may reach. A violation names the file, the line and the
rule. Run by ctest (include_rules); exits 1 when a rule is broken.

    python3 tests/python/check_include_rules.py [SOURCE_DIR]
"""
import os
import re
import sys

# room -> the rooms its files may include (a room always reaches itself).
# kernels/ and models/: __host__ __device__ numerics, compiled by nvcc and NVRTC too.
ALLOWED = {
    "kernels": {"kernels"},
    "models": {"kernels", "models"},
    # HDF5 wrappers, pieces, the writer thread, the result file's layout, merge,
    # every file name, a run's output from its lock to its end: reads the run
    # configuration and the model's description (config/), never a model
    # type, a device or the pipeline
    "host/io": {"kernels", "host/config", "host/io"},
    # reading result files, statistics, quantiles, stats / compare / diff
    "host/analysis": {"kernels", "host/config", "host/io", "host/analysis"},
    # the run config (TOML, --set, validation), its tables and the model
    # catalogue: a model file's [model] table read and its [[events]] compiled
    # by the model language below it; a plugin loaded by the loader the
    # program registers (set_plugin_model_loader)
    "host/config": {"kernels", "models", "host/model_language", "host/config"},
    # the device interface, the CPU and CUDA ensembles
    "host/backends": {"kernels", "models", "host/config", "host/io", "host/backends"},
    # the model language: model files read and checked, the expression
    # language, [[events]] read and compiled (with the key error, the value
    # readers and the name tables they share with config/), the generated C++
    # header; below config/, knows nothing of configurations, plugins,
    # devices or runs
    "host/model_language": {"kernels", "host/model_language"},
    # the toolchain: plugins, their cache, GPU modules; a plugin's runtime
    # implements run/'s ModelRuntime, so model_files/ reaches run/ (run/ never
    # reaches model_files/)
    "host/model_files": {"kernels", "models", "host/config", "host/model_language",
                         "host/backends", "host/io", "host/run", "host/model_files"},
    # the pipeline and its stages, interrupts, the MPI work plan, the device
    # and model-runner choice: never cli/, model_language/ nor model_files/
    # (the GPU-compiler check is an argument of open_run_device)
    "host/run": {"kernels", "models", "host/config", "host/backends", "host/io",
                 "host/analysis", "host/run"},
    # the commands: reach the rest through run/, analysis/, config/, io/ (and
    # model_language/, model_files/ for `nholo model` and a model file's
    # plugin), never a backend, a model or a kernel directly
    "host/cli": {"host/cli", "host/run", "host/analysis", "host/config", "host/io",
                 "host/model_language", "host/model_files"},
    # the Python module (python/src): a caller of the commands, like cli/ (and
    # the run's interrupt flag and progress counter)
    "python": {"host/cli", "host/run", "host/analysis", "host/config", "host/io",
               "host/model_language", "host/model_files"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
MAX_FILES_IN_HOST = 8


def room_of(rel):
    """The room of a path relative to the source root, or None outside the rules."""
    parts = rel.split("/")
    if parts[0] in ("kernels", "models"):
        return parts[0]
    if parts[0] == "python":
        return "python"
    if parts[0] == "host" and len(parts) >= 3:
        return "host/" + parts[1]
    return None


def target_room(inc, here):
    """The room an include names: a root-relative path, else relative to the including file."""
    room = room_of(inc)
    if room is not None:
        return room
    rel = os.path.normpath(os.path.join(os.path.dirname(here), inc))
    return room_of(rel)


def room_cycle():
    """A cycle of rooms that may include one another (their rules must be a
    stack: a room never reaches back to a room that may include it), or None."""
    state = {}

    def visit(room, path):
        state[room] = "open"
        for nxt in sorted(ALLOWED.get(room, ())):
            if nxt == room:
                continue
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt] if nxt in path else [room, nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[room] = "done"
        return None

    for room in sorted(ALLOWED):
        if room not in state:
            found = visit(room, [room])
            if found:
                return found
    return None


def main(root):
    problems = []
    cycle = room_cycle()
    if cycle:
        problems.append(f"the include rules run in a circle: {' -> '.join(cycle)}")
    for top in ("kernels", "models", "host", "python"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".hpp", ".cpp", ".cu", ".cuh", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                if rel.startswith("kernels/nvrtc/"):
                    continue
                room = room_of(rel)
                if room is None:
                    problems.append(f"{rel}: a file directly in host/ belongs in one of its rooms "
                                    f"({', '.join(sorted(r for r in ALLOWED if r.startswith('host/')))})")
                    continue
                if room not in ALLOWED:
                    problems.append(f"{rel}: room {room} has no include rule (add it to "
                                    "tests/python/check_include_rules.py and docs/architecture.md)")
                    continue
                with open(path, encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = target_room(m.group(1), rel)
                        if target is None or target in ALLOWED[room]:
                            continue
                        problems.append(f"{rel}:{lineno}: includes {m.group(1)} ({target}); "
                                        f"{room} may include only {', '.join(sorted(ALLOWED[room]))}")
    host_files = [f for f in os.listdir(os.path.join(root, "host"))
                  if os.path.isfile(os.path.join(root, "host", f))]
    if len(host_files) > MAX_FILES_IN_HOST:
        problems.append(f"host/: {len(host_files)} files directly in host/ (at most {MAX_FILES_IN_HOST})")
    for p in problems:
        print(p)
    print(f"include rules: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.normpath(os.path.join(here, "..", ".."))))
