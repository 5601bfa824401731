"""TOML text of the values and tables nholo.run accepts as Python objects.

A configuration given as a dict, and every value of ``set=``, is turned into
TOML here and read by nholo's own parser, so that a dict means exactly what
the same TOML file means (docs/usage.md).
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def key(k: str) -> str:
    """A TOML key: bare when it can be, else quoted."""
    if not isinstance(k, str):
        raise TypeError(f"configuration keys are strings, not {type(k).__name__} ({k!r})")
    return k if _BARE_KEY.match(k) else json.dumps(k)


def value(v: Any, where: str = "value") -> str:
    """A TOML value (inline): bool, number, string, list, inline table."""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return "true" if bool(v) else "false"
    if isinstance(v, Integral):
        return str(int(v))
    if isinstance(v, Real):
        x = float(v)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return repr(x)
    if isinstance(v, str):
        return json.dumps(v)
    if hasattr(v, "__fspath__"):
        return json.dumps(str(v.__fspath__()))
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{key(k)} = {value(x, f'{where}.{k}')}" for k, x in v.items()) + " }"
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return value(v.tolist(), where)
    if isinstance(v, Sequence) and not isinstance(v, (str, bytes)):
        return "[" + ", ".join(value(x, where) for x in v) + "]"
    raise TypeError(
        f"{where}: {type(v).__name__} cannot be written as a configuration value "
        "(accepted: bool, int, float, str, path, list, dict)"
    )


def _is_table_array(v: Any) -> bool:
    return isinstance(v, Sequence) and not isinstance(v, (str, bytes)) and len(v) > 0 and all(
        isinstance(x, Mapping) for x in v
    )


def document(d: Mapping[str, Any]) -> str:
    """A TOML document of a nested dict: plain values first, then [tables]
    and [[arrays of tables]] (e.g. [[events]])."""
    out: list[str] = []

    def emit(table: Mapping[str, Any], path: list[str]) -> None:
        plain = [(k, v) for k, v in table.items() if not isinstance(v, Mapping) and not _is_table_array(v)]
        nested = [(k, v) for k, v in table.items() if isinstance(v, Mapping) or _is_table_array(v)]
        for k, v in plain:
            out.append(f"{key(k)} = {value(v, '.'.join(path + [k]))}")
        for k, v in nested:
            name = ".".join(key(p) for p in path + [k])
            if isinstance(v, Mapping):
                out.append(f"\n[{name}]")
                emit(v, path + [k])
            else:
                for item in v:
                    out.append(f"\n[[{name}]]")
                    emit(item, path + [k])

    if not isinstance(d, Mapping):
        raise TypeError(f"a configuration is a dict, a TOML string or a path, not {type(d).__name__}")
    emit(d, [])
    return "\n".join(out) + "\n"
