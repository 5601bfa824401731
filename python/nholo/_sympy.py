"""A model file (docs/models.md) written from sympy expressions.

``nholo.Model.from_sympy`` (python/nholo/_api.py) calls :func:`model_text`:
the Lagrangian, constraints, forces and energy of a model derived with sympy
or sympy.physics.mechanics become nholo's TOML model file, so that nholo
reads exactly what sympy holds, without copying text by hand.

The steps:
  1. names: each coordinate (a dynamicsymbol ``q(t)``, or a plain Symbol with
     its rate and acceleration symbols given), each parameter and time get
     nholo's names (``q``, ``q_dot``, ``q_ddot``, ``t``); every expression is
     rewritten over plain symbols of those names (``Derivative(q(t), t)``
     becomes ``q_dot``);
  2. optionally sympy's ``cse`` over all the model's expressions together:
     each replacement a ``[definitions]`` entry;
  3. :class:`_GrammarPrinter` prints each expression in nholo's grammar
     (docs/models.md, "Grammar"), refusing what the grammar lacks.

sympy is imported here only, so that ``import nholo`` does not need it.
"""
from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any, NoReturn

import sympy as sp
from sympy.core.function import AppliedUndef

from ._nholo import ModelError

# nholo's grammar: functions of one argument, and of two
_FUNCTIONS_1 = {
    sp.sin: "sin", sp.cos: "cos", sp.tan: "tan", sp.exp: "exp", sp.log: "log",
    sp.sinh: "sinh", sp.cosh: "cosh", sp.tanh: "tanh", sp.Abs: "abs", sp.sign: "sign",
}
_FUNCTIONS_2 = {sp.atan2: "atan2"}
# function names nholo reserves (no coordinate, parameter or definition may take them)
_FUNCTION_NAMES = ("sin", "cos", "tan", "exp", "log", "sqrt", "abs", "sign", "sinh", "cosh",
                   "tanh", "atan2", "pow")
# sympy functions that are exactly expressions of the grammar's
_REWRITTEN = {
    sp.sec: lambda a: 1 / sp.cos(a), sp.csc: lambda a: 1 / sp.sin(a),
    sp.cot: lambda a: sp.cos(a) / sp.sin(a), sp.sech: lambda a: 1 / sp.cosh(a),
    sp.csch: lambda a: 1 / sp.sinh(a), sp.coth: lambda a: sp.cosh(a) / sp.sinh(a),
    sp.atan: lambda a: sp.atan2(a, sp.Integer(1)),
}
_ACCEPTED = ("+ - * / ^ (sympy's **; sqrt as x**(1/2)), numbers, pi, E, t, the functions "
             + ", ".join(f.__name__ for f in (*_FUNCTIONS_1, *_FUNCTIONS_2))
             + ", and " + ", ".join(f.__name__ for f in _REWRITTEN)
             + " (written through those)")

_NO_CONDITIONALS = ", which has no conditionals (abs and sign give piecewise smooth terms)"

_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_MODEL_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_KINDS = ("position", "velocity", "acceleration")
# integers beyond this are not all doubles: a literal would be rounded
_EXACT_INTEGER = 2**53

# precedence of printed text, by the grammar's rule it parses as
_SUM, _PRODUCT, _UNARY, _POWER, _ATOM = 1, 2, 3, 4, 5


def _fail(message: str) -> NoReturn:
    raise ModelError(f"nholo.Model.from_sympy: {message}")


def _shown(e: Any, limit: int = 80) -> str:
    s = str(e)
    return s if len(s) <= limit else s[: limit - 3] + "..."


class _GrammarPrinter:
    """Prints a sympy expression over plain symbols in nholo's grammar.

    names: symbol -> nholo name. Every number reads back as the value sympy
    holds: integers (below 2^53) and rationals (p/q of two such integers, a
    correctly rounded division) as written, floats with Python's repr (the
    shortest text that reads back to the same double)."""

    def __init__(self, names: Mapping[sp.Symbol, str], where: str):
        self.names = names
        self.where = where

    def __call__(self, e: sp.Expr) -> str:
        # sec, cot, atan, ...: rewritten first, so that sympy folds the
        # result (sec(x)^2 is 1/cos(x)^2, not (1/cos(x))^2)
        e = sp.sympify(e).replace(lambda f: f.func in _REWRITTEN, lambda f: _REWRITTEN[f.func](*f.args))
        return self.text(e)[0]

    def refuse(self, e: Any, why: str) -> NoReturn:
        if isinstance(e, sp.Basic):  # shown with the file's names (x_dot), not the plain symbols'
            e = e.xreplace({s: sp.Symbol(n) for s, n in self.names.items() if s in e.free_symbols})
        _fail(f"{self.where}: {_shown(e)}: {why} (accepted: {_ACCEPTED}; docs/models.md, \"Grammar\")")

    # (text, precedence) of e
    def text(self, e: sp.Basic) -> tuple[str, int]:
        if isinstance(e, sp.Symbol):
            if e not in self.names:
                self.refuse(e, f"unknown symbol '{e}'")
            return self.names[e], _ATOM
        if isinstance(e, sp.Number):
            return self.number(e)
        if isinstance(e, sp.NumberSymbol) or e is sp.S.Exp1:
            return self.constant(e)
        if isinstance(e, sp.Add):
            return self.sum(e)
        if isinstance(e, sp.Mul):
            return self.product(e)
        if isinstance(e, sp.Pow):
            return self.power(e)
        if isinstance(e, sp.Function):
            return self.function(e)
        self.unsupported(e)

    def unsupported(self, e: sp.Basic) -> NoReturn:
        if e.is_number and isinstance(e, sp.Atom):
            self.refuse(e, "not a finite real number")
        if isinstance(e, sp.Derivative):
            self.refuse(e, "a derivative that is not a coordinate's rate or acceleration "
                        "(nholo takes each coordinate's first and second time derivative)")
        self.refuse(e, f"sympy's {type(e).__name__} has no counterpart in nholo's grammar"
                    + _NO_CONDITIONALS * (isinstance(e, (sp.Max, sp.Min)) or bool(e.is_Relational)
                                          or bool(e.is_Boolean)))

    def wrapped(self, e: sp.Basic, at_least: int) -> str:
        s, level = self.text(e)
        return s if level >= at_least else f"({s})"

    def number(self, e: sp.Number) -> tuple[str, int]:
        if e is sp.S.NaN or e.is_infinite or not e.is_real:
            self.refuse(e, "not a finite real number")
        if e.is_negative:
            s, level = self.number(-e)
            return "-" + s, min(level, _UNARY)
        if isinstance(e, sp.Integer):
            if e < _EXACT_INTEGER:
                return str(int(e)), _ATOM
            return self.double(float(e)), _ATOM
        if isinstance(e, sp.Rational):
            if e.p < _EXACT_INTEGER and e.q < _EXACT_INTEGER:
                return f"{e.p}/{e.q}", _PRODUCT
            return self.double(float(e)), _ATOM
        return self.double(float(e)), _ATOM

    def double(self, x: float) -> str:
        """x >= 0 as the shortest text that reads back to it (Python's repr)"""
        if not math.isfinite(x) or x < 0:
            self.refuse(x, "not a finite double >= 0")
        return repr(abs(x))  # abs: -0.0 as 0.0

    def constant(self, e: sp.Basic) -> tuple[str, int]:
        if e is sp.pi:
            return "pi", _ATOM
        if e is sp.S.Exp1:
            return "exp(1)", _ATOM
        # Catalan, EulerGamma, GoldenRatio, ...: the double nearest to it
        return self.double(float(e)), _ATOM

    def sum(self, e: sp.Add) -> tuple[str, int]:
        parts: list[str] = []
        for i, term in enumerate(e.as_ordered_terms()):
            coeff, _ = term.as_coeff_Mul()
            if i > 0 and coeff.is_negative:
                parts.append(" - " + self.wrapped(-term, _PRODUCT))
            elif i > 0:
                parts.append(" + " + self.wrapped(term, _PRODUCT))
            else:
                parts.append(self.wrapped(term, _PRODUCT))
        return "".join(parts), _SUM

    def product(self, e: sp.Mul) -> tuple[str, int]:
        coeff, rest = e.as_coeff_Mul()
        if coeff.is_negative:
            s, level = self.text(-e)
            if level < _PRODUCT:
                s, level = f"({s})", _ATOM
            return "-" + s, min(level, _UNARY)
        numerator: list[tuple[str, int]] = []
        denominator: list[sp.Basic] = []
        if isinstance(coeff, sp.Rational) and not isinstance(coeff, sp.Integer) \
                and coeff.p < _EXACT_INTEGER and coeff.q < _EXACT_INTEGER:
            # p/q: the division by q written as such (x/3 rather than 1/3*x)
            if coeff.p != 1:
                numerator.append((str(coeff.p), _ATOM))
            denominator.append(sp.Integer(coeff.q))
        elif coeff != 1:
            numerator.append(self.text(coeff))
        for f in rest.as_ordered_factors():
            if isinstance(f, sp.Pow) and f.exp.is_number and f.exp.is_negative:
                denominator.append(sp.Pow(f.base, -f.exp))
            else:
                numerator.append(self.text(f))
        if not denominator and len(numerator) == 1:
            return numerator[0]
        top = "*".join(s if level >= _UNARY else f"({s})" for s, level in numerator) or "1"
        if not denominator:
            return top, _PRODUCT
        if len(denominator) == 1:
            bottom = self.wrapped(denominator[0], _POWER)
        else:
            bottom = "(" + "*".join(self.wrapped(d, _UNARY) for d in denominator) + ")"
        return f"{top}/{bottom}", _PRODUCT

    def power(self, e: sp.Pow) -> tuple[str, int]:
        base, exponent = e.base, e.exp
        if base is sp.S.Exp1:
            return self.function(sp.exp(exponent, evaluate=False))
        if exponent.is_number and exponent.is_negative:
            return f"1/{self.wrapped(sp.Pow(base, -exponent), _POWER)}", _PRODUCT
        if exponent == sp.S.Half:
            return f"sqrt({self.text(base)[0]})", _ATOM
        b = self.wrapped(base, _ATOM)
        x = self.wrapped(exponent, _ATOM)
        return f"{b}^{x}", _POWER

    def function(self, e: sp.Function) -> tuple[str, int]:
        f = e.func
        if f in _FUNCTIONS_1 and len(e.args) == 1:
            return f"{_FUNCTIONS_1[f]}({self.text(e.args[0])[0]})", _ATOM
        if f in _FUNCTIONS_2 and len(e.args) == 2:
            return f"{_FUNCTIONS_2[f]}({self.text(e.args[0])[0]}, {self.text(e.args[1])[0]})", _ATOM
        if isinstance(e, AppliedUndef):
            self.refuse(e, f"the function {f} is not a coordinate (dynamicsymbols given as q) "
                        "and nholo's grammar has no function of that name")
        self.refuse(e, f"the sympy function {f.__name__} has no counterpart in nholo's grammar"
                    + _NO_CONDITIONALS * (f in (sp.Piecewise, sp.Heaviside, sp.DiracDelta)))


def _identifier(raw: str) -> str:
    """A name nholo accepts ([A-Za-z][A-Za-z0-9_]*) for a sympy symbol's name:
    Greek letters spelled out (θ -> theta), LaTeX braces and backslashes
    dropped (\\theta_{1} -> theta_1), any other character '_'."""
    out: list[str] = []
    for c in raw:
        if c.isascii() and (c.isalnum() or c == "_"):
            out.append(c)
        elif not c.isascii() and "GREEK" in unicodedata.name(c, "") and " LETTER " in unicodedata.name(c):
            letter = unicodedata.name(c).split(" LETTER ", 1)[1].split()[0].lower()
            out.append(letter.capitalize() if "CAPITAL" in unicodedata.name(c) else letter)
        elif c in "\\{}":
            continue
        else:
            out.append("_")
    return re.sub(r"_+", "_", "".join(out)).strip("_")


def _check_name(name: str, raw: Any, what: str) -> None:
    why = None
    if not _IDENTIFIER.match(name):
        why = "letters, digits and _, starting with a letter"
    elif name.endswith("_dot") or name.endswith("_ddot"):
        why = "names ending in _dot and _ddot are the coordinates' rates and accelerations"
    elif name in ("t", "pi"):
        why = "t and pi are reserved (time and the constant)"
    elif name in _FUNCTION_NAMES:
        why = f"it is a function of nholo's grammar ({', '.join(_FUNCTION_NAMES)})"
    if why:
        _fail(f"{what} {raw!r} has no name nholo accepts ('{name}': {why}); rename the sympy symbol")


class _Names:
    """nholo's name of each coordinate, rate, acceleration, parameter and of
    time; the plain symbols (Dummy) every expression is rewritten over."""

    def __init__(self, q: Sequence[Any], rates: Sequence[Any] | None, accelerations: Sequence[Any] | None,
                 time: sp.Symbol, parameters: Sequence[sp.Symbol]):
        self.replace: dict[sp.Basic, sp.Symbol] = {}   # sympy object -> plain symbol
        self.name: dict[sp.Symbol, str] = {}           # plain symbol -> nholo name
        self.owner: dict[str, Any] = {}                # nholo name -> what it names
        self.coordinates: list[str] = []
        self.of_coordinate: dict[Any, str] = {}        # coordinate as given -> name
        self.rates: set[sp.Symbol] = set()
        self.accelerations: set[sp.Symbol] = set()
        self.parameters: dict[sp.Symbol, str] = {}
        self.time = time
        self.plain("t", time, "time")
        if isinstance(q, (sp.Basic, str)) or not isinstance(q, Sequence) or not q:
            _fail(f"q: a list of the coordinates (sympy dynamicsymbols or Symbols), not {_shown(q)}")
        applied = [isinstance(c, AppliedUndef) for c in q]
        if all(applied):
            self.dynamic_coordinates(q, rates, accelerations)
        elif not any(applied) and all(isinstance(c, sp.Symbol) for c in q):
            self.symbol_coordinates(q, rates, accelerations)
        else:
            _fail(f"q: {_shown(list(q))}: the coordinates are either all dynamicsymbols (q(t)) or all "
                  "sympy Symbols with their rates given (rates=[...])")
        for p in parameters:
            if not isinstance(p, sp.Symbol):
                _fail(f"parameters: the keys are sympy Symbols, not {_shown(p)} ({type(p).__name__})")
            self.parameters[p] = self.plain(self.named(p.name, p, "parameter"), p, "parameter")

    def named(self, raw: str, obj: Any, what: str) -> str:
        name = _identifier(raw)
        _check_name(name, obj, what)
        return name

    def plain(self, name: str, obj: Any, what: str) -> str:
        if name in self.owner:
            _fail(f"the {what} {_shown(obj)} and {_shown(self.owner[name])} would both be named "
                  f"'{name}' in the model file; names must be unique (rename one of the sympy symbols)")
        if obj in self.replace:
            _fail(f"{_shown(obj)} is given twice (as {self.name[self.replace[obj]]} and as {what} {name})")
        self.owner[name] = obj
        symbol = sp.Dummy(name)
        self.replace[obj] = symbol
        self.name[symbol] = name
        return name

    def coordinate(self, c: Any, name: str, rate: Any, acceleration: Any) -> None:
        self.plain(name, c, "coordinate")
        self.plain(name + "_dot", rate, "rate")
        self.rates.add(self.replace[rate])
        if acceleration is not None:
            self.plain(name + "_ddot", acceleration, "acceleration")
            self.accelerations.add(self.replace[acceleration])
        self.coordinates.append(name)
        self.of_coordinate[c] = name

    def dynamic_coordinates(self, q: Sequence[Any], rates: Any, accelerations: Any) -> None:
        if rates is not None or accelerations is not None:
            _fail("rates and accelerations are given only with Symbol coordinates; a dynamicsymbol's "
                  "are its derivatives q(t).diff(t) and q(t).diff(t, 2)")
        for c in q:
            if c.args != (self.time,):
                _fail(f"q: the coordinate {c} is a function of {c.args}, not of time {self.time} alone "
                      "(time=... names the time symbol)")
            name = self.named(type(c).__name__, c, "coordinate")
            self.coordinate(c, name, sp.Derivative(c, self.time), sp.Derivative(c, (self.time, 2)))

    def symbol_coordinates(self, q: Sequence[Any], rates: Any, accelerations: Any) -> None:
        if rates is None or len(rates) != len(q) or not all(isinstance(r, sp.Symbol) for r in rates):
            _fail(f"rates: with Symbol coordinates, a list of {len(q)} Symbols, the rate of each "
                  "coordinate in order (or give the coordinates as dynamicsymbols)")
        if accelerations is not None and (len(accelerations) != len(q)
                                          or not all(isinstance(a, sp.Symbol) for a in accelerations)):
            _fail(f"accelerations: a list of {len(q)} Symbols, the acceleration of each coordinate")
        for i, c in enumerate(q):
            name = self.named(c.name, c, "coordinate")
            self.coordinate(c, name, rates[i], accelerations[i] if accelerations is not None else None)

    def rewritten(self, e: Any, where: str) -> sp.Expr:
        """e over the plain symbols; refused naming anything left unknown."""
        if isinstance(e, str):
            _fail(f"{where}: {_shown(e)!r} is a string; give a sympy expression (its symbols are "
                  "those of q and parameters)")
        try:
            e = sp.sympify(e)
        except (sp.SympifyError, TypeError) as err:
            _fail(f"{where}: {_shown(e)} is not a sympy expression ({err})")
        for d in e.atoms(sp.Derivative):
            if d not in self.replace:
                _fail(f"{where}: {_shown(d)}: a derivative other than a coordinate's rate or acceleration "
                      f"(coordinates: {', '.join(self.coordinates)})")
        for f in e.atoms(AppliedUndef):
            if f not in self.replace:
                _fail(f"{where}: {_shown(f)} is not a coordinate (coordinates: "
                      f"{', '.join(self.coordinates)}); a function of time must be one of q")
        out = e.xreplace(self.replace)
        unknown = sorted(str(s) for s in out.free_symbols if s not in self.name)
        if unknown:
            _fail(f"{where}: {', '.join(unknown)}: neither a coordinate, a rate, a parameter nor time "
                  f"(coordinates: {', '.join(self.coordinates)}; parameters: "
                  f"{', '.join(self.parameters.values()) or 'none'}); give each parameter's value in "
                  "parameters={symbol: value}")
        return out

    def coordinate_key(self, c: Any, where: str) -> str:
        """the name of coordinate c, given as itself or by name"""
        if isinstance(c, str) and c in self.coordinates:
            return c
        if c in self.of_coordinate:
            return self.of_coordinate[c]
        _fail(f"{where}: {_shown(c)} is not a coordinate (coordinates: {', '.join(self.coordinates)})")


def _parameter_entry(p: sp.Symbol, spec: Any, names: _Names, units: Mapping[Any, str]) -> dict[str, Any]:
    """The model file's table of parameter p: spec is its default (a number,
    or a sympy expression of numbers, pi and the parameters before it), a
    tuple (default, unit[, description]) or a dict of the model file's keys
    (default, unit, description, min, max, positive, nonnegative)."""
    name = names.parameters[p]
    where = f"parameters[{p}]"
    if isinstance(spec, Mapping):
        accepted = ("default", "unit", "description", "min", "max", "positive", "nonnegative")
        extra = [k for k in spec if k not in accepted]
        if extra:
            _fail(f"{where}: unknown key {extra[0]!r} (accepted: {', '.join(accepted)})")
        if "default" not in spec:
            _fail(f"{where}: the dict has no 'default'")
        entry = dict(spec)
    elif isinstance(spec, tuple):
        if not 2 <= len(spec) <= 3:
            _fail(f"{where}: a tuple (default, unit) or (default, unit, description), not {spec!r}")
        entry = dict(zip(("default", "unit", "description"), spec))
    else:
        entry = {"default": spec}
    entry.setdefault("unit", units.get(p, "1"))
    # sympy's assumptions as the model file's range
    if p.is_positive and "positive" not in entry and "min" not in entry:
        entry["positive"] = True
    elif p.is_nonnegative and "nonnegative" not in entry and "min" not in entry:
        entry["nonnegative"] = True
    entry["default"] = _default_value(entry["default"], names, p, where)
    ordered = {"name": name, "default": entry.pop("default"), "unit": entry.pop("unit")}
    return {**ordered, **entry}


def _default_value(v: Any, names: _Names, p: sp.Symbol, where: str) -> Any:
    if isinstance(v, bool):
        _fail(f"{where}: the default is a number or a sympy expression, not {v!r}")
    if isinstance(v, Integral) or isinstance(v, sp.Integer):
        if abs(int(v)) < _EXACT_INTEGER:
            return int(v)
    if isinstance(v, (Real, sp.Float, sp.Integer)):
        x = float(v)
        if not math.isfinite(x):
            _fail(f"{where}: the default {v!r} is not finite")
        return x
    e = names.rewritten(v, f"{where} (default)")
    for s in e.free_symbols:
        if names.name[s] not in names.parameters.values():
            _fail(f"{where}: the default {_shown(v)} uses {names.name[s]}: a default is a constant, "
                  "of numbers, pi and the parameters before it")
    earlier = list(names.parameters)[: list(names.parameters).index(p)]
    later = [names.name[s] for s in e.free_symbols if names.name[s] not in
             [names.parameters[q] for q in earlier]]
    if later:
        _fail(f"{where}: the default {_shown(v)} uses {', '.join(sorted(later))}, not a parameter "
              "given before it (a default uses the parameters before it, in the dict's order)")
    return _GrammarPrinter(names.name, f"{where} (default)")(e)


def _constraint_entries(constraints: Any, names: _Names) -> list[dict[str, Any]]:
    """{name, kind, expr (rewritten)} of each constraint: a list of
    expressions, of (name, expr) pairs or of dicts {expr, kind, name}, or a
    dict name -> expression; the kind, when not given, from what the
    expression uses (an acceleration, else a rate, else neither)."""
    if constraints is None:
        return []
    if isinstance(constraints, Mapping):
        items: list[Any] = [{"name": k, "expr": v} for k, v in constraints.items()]
    elif isinstance(constraints, (sp.Basic, str)) or not isinstance(constraints, Sequence):
        _fail(f"constraints: a list of expressions (each = 0) or a dict name -> expression, "
              f"not {_shown(constraints)}")
    else:
        items = list(constraints)
    out = []
    for i, c in enumerate(items):
        where = f"constraints[{i}]"
        if isinstance(c, Mapping):
            extra = [k for k in c if k not in ("expr", "kind", "name")]
            if extra or "expr" not in c:
                _fail(f"{where}: a dict with 'expr' and optionally 'kind' and 'name', not keys {list(c)}")
            spec = dict(c)
        elif isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], str):
            spec = {"name": c[0], "expr": c[1]}
        else:
            spec = {"expr": c}
        name = spec.get("name", f"constraint_{i}")
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            _fail(f"{where}: constraint name {name!r}: letters, digits and _, starting with a letter")
        e = names.rewritten(spec["expr"], f"{where} ({name})")
        used = e.free_symbols
        inferred = ("acceleration" if used & names.accelerations else
                    "velocity" if used & names.rates else "position")
        kind = spec.get("kind", inferred)
        if kind not in _KINDS:
            _fail(f"{where} ({name}): unknown kind {kind!r} (accepted: {', '.join(_KINDS)})")
        out.append({"name": name, "kind": kind, "expr": e})
    seen = [c["name"] for c in out]
    for n in seen:
        if seen.count(n) > 1:
            _fail(f"constraints: the name '{n}' is given to {seen.count(n)} constraints")
    return out


def _force_entries(forces: Any, names: _Names, what: str) -> dict[str, sp.Expr]:
    """coordinate name -> rewritten force, of a dict coordinate -> expression
    (the coordinate as given in q, or its name) or a list, one per coordinate;
    zeros are left out."""
    if forces is None:
        return {}
    if isinstance(forces, Mapping):
        pairs = [(names.coordinate_key(k, f"{what}: key"), v) for k, v in forces.items()]
    elif isinstance(forces, Sequence) and not isinstance(forces, (str, sp.Basic)) \
            and len(forces) == len(names.coordinates):
        pairs = list(zip(names.coordinates, forces))
    else:
        _fail(f"{what}: a dict coordinate -> expression, or a list of {len(names.coordinates)} "
              f"expressions (one per coordinate: {', '.join(names.coordinates)})")
    out: dict[str, sp.Expr] = {}
    for k, v in pairs:
        if k in out:
            _fail(f"{what}: the coordinate {k} is given twice")
        e = names.rewritten(v, f"{what}[{k}]")
        if e.free_symbols & names.accelerations:
            _fail(f"{what}[{k}]: {_shown(v)} uses an acceleration; accelerations are usable only in "
                  "acceleration constraints")
        if e != 0:
            out[k] = e
    return out


def _shared_subexpressions(exprs: list[sp.Expr], names: _Names) -> tuple[list[tuple[sp.Symbol, sp.Expr]],
                                                                          list[sp.Expr]]:
    """sympy's cse over every expression together: its replacements, each
    named sub0, sub1, ... (skipping any name the model already has)."""
    def fresh():
        i = 0
        while True:
            name = f"sub{i}"
            i += 1
            if name not in names.owner:
                symbol = sp.Dummy(name)
                names.name[symbol] = name
                yield symbol

    replacements, reduced = sp.cse(exprs, symbols=fresh(), order="canonical")
    return replacements, reduced


def _string(text: str) -> str:
    """A TOML string of an expression: one line, or a multi-line string broken
    before a binary + or - when it is long (whitespace, which nholo skips)."""
    if len(text) <= 90:
        return json.dumps(text)
    lines, line = [], ""
    for piece in re.split(r" (?=[+-] )", text):
        if line and len(line) + len(piece) > 90:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    lines.append(line)
    return '"""\n  ' + "\n  ".join(lines) + '"""'


def _value(v: Any) -> str:
    """a TOML value of a parameter table's entry"""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Integral):
        return str(int(v))
    if isinstance(v, Real):
        return repr(float(v))
    return json.dumps(str(v))


def model_text(
    lagrangian: Any,
    q: Sequence[Any],
    *,
    constraints: Any = None,
    parameters: Mapping[sp.Symbol, Any] | None = None,
    forces: Any = None,
    nonideal_forces: Any = None,
    energy: Any = None,
    conflated_lagrangian: Any = None,
    rates: Sequence[sp.Symbol] | None = None,
    accelerations: Sequence[sp.Symbol] | None = None,
    time: sp.Symbol | None = None,
    units: Mapping[Any, str] | None = None,
    name: str = "sympy_model",
    description: str = "a model derived with sympy, written by nholo.Model.from_sympy",
    cse: bool = True,
) -> str:
    """The text of the model file (nholo.Model.from_sympy documents the
    arguments)."""
    if not isinstance(name, str) or not _MODEL_NAME.match(name) or len(name) > 64:
        _fail(f"name: {name!r}: [a-z][a-z0-9_]*, at most 64 characters")
    if not isinstance(description, str) or not description or "\n" in description or "\r" in description:
        _fail("description: one line of text, not empty")
    if time is None:
        from sympy.physics.vector import dynamicsymbols
        time = dynamicsymbols._t
    parameters = dict(parameters or {})
    units = dict(units or {})
    names = _Names(q, rates, accelerations, time, list(parameters))
    for k in units:
        if k not in names.of_coordinate and k not in names.parameters:
            _fail(f"units: {_shown(k)} is neither a coordinate nor a parameter")
    param_entries = [_parameter_entry(p, spec, names, units) for p, spec in parameters.items()]

    # every expression over plain symbols, in the order cse sees them
    exprs: dict[str, sp.Expr] = {"lagrangian": names.rewritten(lagrangian, "lagrangian")}
    if not exprs["lagrangian"].free_symbols & names.rates:
        _fail("lagrangian: it uses no rate (L = T - V: the kinetic energy holds the rates)")
    if exprs["lagrangian"].free_symbols & names.accelerations:
        _fail("lagrangian: it uses an acceleration; accelerations are usable only in acceleration constraints")
    constraint_entries = _constraint_entries(constraints, names)
    for i, c in enumerate(constraint_entries):
        exprs[f"constraints.{i}"] = c["expr"]
    for table, given in (("forces", forces), ("nonideal_forces", nonideal_forces)):
        for k, e in _force_entries(given, names, table).items():
            exprs[f"{table}.{k}"] = e
    auto_energy = isinstance(energy, str) and energy == "auto"
    for key, given in (("energy", None if auto_energy else energy),
                       ("conflated_lagrangian", conflated_lagrangian)):
        if given is not None:
            exprs[key] = names.rewritten(given, key)
            if exprs[key].free_symbols & names.accelerations:
                _fail(f"{key}: it uses an acceleration; accelerations are usable only in acceleration "
                      "constraints")

    definitions: list[tuple[sp.Symbol, sp.Expr]] = []
    if cse:
        definitions, reduced = _shared_subexpressions(list(exprs.values()), names)
        exprs = dict(zip(exprs, reduced))
    printed = {key: _GrammarPrinter(names.name, key.replace(".", "[", 1) + ("]" if "." in key else ""))(e)
               for key, e in exprs.items()}

    out = ["# Written by nholo.Model.from_sympy from sympy expressions: edit those, not this file."]
    out.append(f"name = {json.dumps(name)}")
    out.append(f"description = {json.dumps(description)}")
    out.append("coordinates = [")
    for c, n in names.of_coordinate.items():
        out.append(f"  {{ name = {json.dumps(n)}, unit = {json.dumps(units.get(c, '1'))} }},")
    out.append("]")
    if param_entries:
        out.append("parameters = [")
        for entry in param_entries:
            out.append("  { " + ", ".join(f"{k} = {_value(v)}" for k, v in entry.items()) + " },")
        out.append("]")
    out.append(f"lagrangian = {_string(printed['lagrangian'])}")
    if auto_energy:
        out.append('energy = "auto"')
    for key in ("energy", "conflated_lagrangian"):
        if key in printed:
            out.append(f"{key} = {_string(printed[key])}")
    for i, c in enumerate(constraint_entries):
        out.append(f"\n[[constraints]]\nname = {json.dumps(c['name'])}\nkind = {json.dumps(c['kind'])}")
        out.append(f"expr = {_string(printed[f'constraints.{i}'])}")
    for table in ("forces", "nonideal_forces"):
        entries = [(k.split(".", 1)[1], s) for k, s in printed.items() if k.startswith(table + ".")]
        if entries:
            out.append(f"\n[{table}]")
            out.extend(f"{k} = {_string(s)}" for k, s in entries)
    if definitions:
        out.append("\n[definitions]")
        for symbol, e in definitions:
            text = _GrammarPrinter(names.name, f"definitions[{names.name[symbol]}]")(e)
            out.append(f"{names.name[symbol]} = {_string(text)}")
    return "\n".join(out) + "\n"
