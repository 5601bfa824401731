"""Checks an nholo result against an uninterrupted run's, with h5py (the fault
suite, tests/test_faults.cpp, runs it after each interruption).

  fault_check.py partial REF PATH.partial   every trajectory of the
      interrupted run's file either finished (status and every per-trajectory
      value bitwise equal to REF's) or not_run (status 5, data NaN/fill);
      prints "finished N not_run M"
  fault_check.py same REF PATH             every dataset of PATH bitwise
      equal to REF's (values, shapes, types), and the same set of datasets

Exit 0 when the check holds, 1 otherwise (with the reason).
"""
import sys

import h5py
import numpy as np

NOT_RUN = 5


def datasets(f):
    names = []
    f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    return sorted(names)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def same_bits(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fiub":
        return a.tobytes() == b.tobytes()
    return bool(np.all(a == b))


def check_same(ref_path, path):
    with h5py.File(ref_path, "r") as r, h5py.File(path, "r") as f:
        if int(f.attrs["complete"]) != 1:
            fail(f"{path}: complete = {f.attrs['complete']}")
        a, b = datasets(r), datasets(f)
        if a != b:
            fail(f"dataset sets differ: only in ref {sorted(set(a) - set(b))}, "
                 f"only in file {sorted(set(b) - set(a))}")
        for n in a:
            if not same_bits(r[n][()], f[n][()]):
                fail(f"{n} differs")
    print(f"same: {len(a)} datasets bitwise equal")


def check_partial(ref_path, path):
    with h5py.File(ref_path, "r") as r, h5py.File(path, "r") as f:
        if int(f.attrs["complete"]) != 0:
            fail(f"{path}: complete = {f.attrs['complete']} in a .partial")
        forms = [str(x) for x in r.attrs["formulations"]]
        size = int(r.attrs["ensemble_size"])
        finished = None
        for form in forms:
            st, st_ref = f[form + "/status"][()], r[form + "/status"][()]
            if st.shape != (size,):
                fail(f"{form}/status has shape {st.shape}")
            done = st != NOT_RUN
            if np.any(st[done] != st_ref[done]):
                fail(f"{form}: a finished trajectory's status differs from the reference")
            finished = done if finished is None else finished
            if np.any(finished != done):
                fail("formulations disagree on which trajectories finished")
        # every per-trajectory dataset: finished rows bitwise equal, the rest fill
        for n in datasets(r):
            d = f.get(n)
            if d is None:
                if n.split("/")[-1] in ("mean", "variance", "min", "max", "count", "qdot_mean",
                                        "qdot_variance", "qdot_min", "qdot_max"):
                    continue  # merged statistics: written when a run stops cleanly
                fail(f"{n} missing in the .partial")
            x, y = d[()], r[n][()]
            if x.shape != y.shape:
                fail(f"{n}: shape {x.shape} vs {y.shape}")
            if x.ndim == 0 or x.shape[0] != size or n.endswith("trajectory"):
                if n.endswith("trajectory") and not same_bits(x, y):
                    fail(f"{n} differs")
                continue
            if not same_bits(x[finished], y[finished]):
                fail(f"{n}: finished trajectories differ from the reference")
            rest = x[~finished]
            if n.endswith("/status"):
                continue
            if rest.dtype.kind == "f":
                # windows of an unfinished slice may be written; what is there is exact
                written = ~np.isnan(rest)
                if np.any(rest[written] != y[~finished][written]):
                    fail(f"{n}: data of unfinished trajectories neither fill nor the reference's")
            elif np.any(rest != 0):
                fail(f"{n}: unfinished trajectories are not fill (0)")
    print(f"finished {int(finished.sum())} not_run {int((~finished).sum())}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("partial", "same"):
        print(__doc__)
        sys.exit(2)
    (check_partial if sys.argv[1] == "partial" else check_same)(sys.argv[2], sys.argv[3])
