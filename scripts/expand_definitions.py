#!/usr/bin/env python3
"""Write a model file's [definitions] out: every definition's name replaced by
its expression in parentheses, recursively, in every expression of the model.

The result is the same model as one expression per key, for an nholo that
has no [definitions] (and a check of one that has: both files must give the
same trajectories). `energy = "auto"` has no expanded form here: give the
energy with --energy (an expression that may use the definitions).

    python3 scripts/expand_definitions.py examples/models/rattleback.model.toml \
        --name rattleback_expanded --energy "..." -o tests/model_files/rattleback_expanded.toml
"""
import argparse
import re
import sys
import tomllib

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def expand(expr, definitions, resolving=()):
    """expr with every definition's name replaced by its expanded expression in parentheses."""
    def replace(match):
        name = match.group(0)
        if name not in definitions:
            return name
        if name in resolving:
            raise SystemExit(f"definitions form a cycle: {' -> '.join(resolving + (name,))}")
        return "(" + expand(definitions[name], definitions, resolving + (name,)) + ")"
    return NAME.sub(replace, expr)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        if '"' in v or "\\" in v or "\n" in v:
            raise SystemExit(f"cannot write the string {v!r} (quotes, backslashes or newlines)")
        return f'"{v}"'
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        if all(isinstance(x, dict) for x in v) and v:
            return "[\n" + "".join(f"  {toml_value(x)},\n" for x in v) + "]"
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise SystemExit(f"cannot write a value of type {type(v).__name__}")


def expanded_model(model, energy=None, name=None):
    definitions = model.pop("definitions", {})
    out = dict(model)
    if name:
        out["name"] = name
    for key in ("lagrangian", "conflated_lagrangian"):
        if key in out:
            out[key] = expand(out[key], definitions)
    if out.get("energy") == "auto" or energy is not None:
        if energy is None:
            raise SystemExit('the model says energy = "auto": give its expression with --energy')
        out["energy"] = expand(energy, definitions)
    elif "energy" in out:
        out["energy"] = expand(out["energy"], definitions)
    for c in out.get("constraints", []):
        c["expr"] = expand(c["expr"], definitions)
    for key in ("forces", "nonideal_forces"):
        if key in out:
            out[key] = {k: expand(v, definitions) for k, v in out[key].items()}
    if "events" in out:
        raise SystemExit("[[events]] are not expanded by this script")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--name", help="the expanded model's name (default: the model's)")
    ap.add_argument("--energy", help='the energy expression, for a model with energy = "auto"')
    ap.add_argument("--header", default="", help="comment lines to put first")
    args = ap.parse_args(argv)
    with open(args.model, "rb") as f:
        model = tomllib.load(f)
    out = expanded_model(model, args.energy, args.name)
    with open(args.output, "w") as f:
        for line in args.header.splitlines():
            f.write(f"# {line}\n".replace("# \n", "#\n"))
        for k, v in out.items():
            f.write(f"{k} = {toml_value(v)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
