"""Merge the sources compiled for several sizes into one source that reads the sizes.

The sources must agree token for token except in numbers (numbers inside comments included);
a number that differs becomes a formula of the size symbols (``d1``, ``d2``...) that gives it in
every source: ``c * d1**a * d2**b`` (``-0.125`` is ``-(1 / d1)``; a float ``c`` itself where
no small fraction is it, and for floats ``d1 - 1`` and the like in place of ``d1``), ``c *
np.sqrt(d1)`` or ``c * np.log(d1)`` (floats folded from ``math.sqrt(d)``, ``math.log(n)``),
or, for integers, ``a1 * d1 + a2 * d2 + k`` (``range(5)`` is ``range(d1 - 1)``), else a
polynomial of degree two of the sizes or one over it (:mod:`.polynomials`: ``2 / (d1 * (d1 -
1))`` for ``n * (n - 1) / 2`` pairs), where the samples are enough to fit one. A size the
function divides by a constant (``divisors``: ``{"d2": 4}``, every sample a multiple) may
stand as its quotient, and a float as a half power of it: ``(d2 // 4) ** -0.5`` for ``dh **
-0.5``, ``dh = D // 4``. Invariant, checked by construction: the merged template, specialised
back to each source's sizes, reproduces that source byte for byte; otherwise :func:`merge`
returns the reason instead of a template.
"""

from __future__ import annotations

import io
import itertools
import math
import re
import tokenize
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from . import polynomials

_OPEN = {"(", "[", ",", "=", ":", "return", "+=", "-=", "*=", "/="}
_CALL = re.compile(r"np\.\w+\(\w+\)")   # np.sqrt(d1): an atom
_CLOSE = {")", "]", ",", ":", "", "\n", "#"}


@dataclass
class Number:
    row: int
    col: int
    end: int
    text: str
    before: str   # the significant token before it ("" at a line's start)
    after: str    # the one after it ("" at a line's end)


@dataclass
class Fit:
    expr: str      # Python, in the size symbols: an int for an int literal, else a float

    def literal(self, sizes) -> str:
        """The literal the compiler writes for these sizes."""
        value = eval(self.expr, {"__builtins__": {"float": float}, "np": np},  # noqa: S307
                     dict(sizes))
        return repr(float(value) if isinstance(value, np.floating) else value)

    def spelled(self, before, after) -> str:
        atom = self.expr.isidentifier() or self.expr.isdigit() or _CALL.fullmatch(self.expr)
        return self.expr if atom or (before in _OPEN and after in _CLOSE) else f"({self.expr})"


@dataclass
class Template:
    text: str      # the first source
    holes: list    # (Number, Fit): the numbers that change with the sizes

    def render(self) -> str:
        return self._fill(lambda n, f: f.spelled(n.before, n.after))

    def instantiate(self, sizes) -> str:
        return self._fill(lambda n, f: f.literal(sizes))

    def _fill(self, spell):
        lines = self.text.splitlines(True)
        for number, fit in sorted(self.holes, key=lambda h: (h[0].row, h[0].col), reverse=True):
            line = lines[number.row - 1]
            lines[number.row - 1] = line[:number.col] + spell(number, fit) + line[number.end:]
        return "".join(lines)


class Unfitted(str):
    """Why a merge failed, where a number has no formula yet: ``symbols``, the sizes whose
    moves change such numbers (further samples moving them may fit a polynomial of them)."""

    def __new__(cls, why, symbols):
        self = super().__new__(cls, why)
        self.symbols = frozenset(symbols)
        return self


def merge(sources, sizes, base, moves, divisors=None):
    """A Template for ``sources`` (compiled for the size dicts ``sizes``), or the reason there is
    none. ``sizes[base]`` is a reference point and ``sizes[moves[d]]`` differs from it in ``d``
    only: they find each formula; every source checks it (and further samples, after those,
    fit polynomials). ``divisors``: ``{symbol: k}`` for the sizes the function divides by k. A
    reason that a number has no formula is an :class:`Unfitted`, naming the sizes it moves
    with."""
    scanned = [scan(s) for s in sources]
    if any(s[0] != scanned[0][0] for s in scanned):
        return "the code compiled for other sizes differs in more than its numbers"
    holes, unfitted = [], []
    for i, first in enumerate(scanned[0][1]):
        texts = [s[1][i].text for s in scanned]
        if len(set(texts)) == 1:
            continue
        fit = fit_number([_number(t) for t in texts], sizes, base, moves, divisors)
        if fit is None:
            unfitted.append((first, polynomials.changing(texts, base, moves)))
            continue
        holes.append((first, fit))
    if unfitted:
        first = unfitted[0][0]
        return Unfitted(f"the number {first.text} in `{_line(sources[0], first.row)}` changes "
                        "with the sizes in a way that is not a product, a sum or a polynomial "
                        "of degree two of sizes", {d for _, ds in unfitted for d in ds})
    template = Template(sources[0], holes)
    for source, size in zip(sources, sizes):
        if template.instantiate(size) != source:
            return "the merged code does not reproduce the code compiled for every size"
    return template


def scan(source):
    """``(skeleton, numbers)``: the token strings with each number as None, and the numbers."""
    skeleton, numbers = [], []
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
              if t.type not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT)]
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.COMMENT and any(c.isdigit() for c in tok.string):
            inner = _scan_comment(tok)
            if inner is not None:
                skeleton.append(("#", tuple(inner[0])))
                numbers += inner[1]
                continue
        if tok.type == tokenize.NUMBER:
            numbers.append(Number(tok.start[0], tok.start[1], tok.end[1], tok.string,
                                  _text(tokens, i - 1, tok.start[0]),
                                  _text(tokens, i + 1, tok.start[0])))
            skeleton.append(None)
        else:
            skeleton.append(tok.string)
    return skeleton, numbers


def _scan_comment(tok):
    body = tok.string[1:]
    offset = tok.start[1] + 1 + len(body) - len(body.lstrip())
    try:
        skeleton, numbers = scan(body.lstrip())
    except (tokenize.TokenError, SyntaxError):
        return None
    for n in numbers:
        n.row, n.col, n.end = tok.start[0], n.col + offset, n.end + offset
    return skeleton, numbers


def _text(tokens, i, row):
    if not 0 <= i < len(tokens) or tokens[i].start[0] != row:
        return ""
    if tokens[i].type in (tokenize.NEWLINE, tokenize.ENDMARKER):
        return "\n"
    return "#" if tokens[i].type == tokenize.COMMENT else tokens[i].string


def _number(text):
    if text.lower().endswith("j"):
        return complex(text)
    return float(text) if any(c in text.lower() for c in ".e") else int(text, 0)


def _line(source, row):
    return source.splitlines()[row - 1].strip()


# ---- formulas -----------------------------------------------------------------------------------
def fit_number(values, sizes, base, moves, divisors=None):
    """A Fit giving ``values[k]`` for ``sizes[k]``, for every k; None if none is found."""
    kind = type(values[0])
    if kind not in (int, float) or any(type(v) is not kind for v in values):
        return None
    for candidates in _candidates(values, sizes, base, moves, divisors or {}, kind):
        for expr in candidates:
            fit = Fit(expr)
            try:
                if all(fit.literal(s) == repr(v) for s, v in zip(sizes, values)):
                    return fit
            except (ArithmeticError, TypeError, ValueError):
                continue
    return None


def _candidates(values, sizes, base, moves, divisors, kind):
    """The formulas to try, a list at a time, the likeliest first: sums (ints), products of
    the sizes, of the divided sizes' quotients, then (floats) of a size less or more one or
    two: ``0.5 / (n - 1)`` for a variance with ``ddof=1``; last, polynomials of degree two
    (:mod:`.polynomials`: ``n * (n - 1) / 2``), where the samples are enough to fit one."""
    if kind is int:
        yield _sums(values, sizes, base, moves)
    for view, view_moves in _views(sizes, moves, divisors):
        yield _products(values, view, base, view_moves, kind)
    if kind is float:
        yield _calls(values, sizes, base, moves)
        for view, view_moves in _shifted(sizes, moves):
            try:
                yield _products(values, view, base, view_moves, kind)
            except (ArithmeticError, ValueError):
                continue
    yield polynomials.candidates(values, sizes, base, moves, kind)


def _views(sizes, moves, divisors):
    """``(sizes, moves)`` with the sizes as they are, then with each divided size's symbol
    ``d`` as its quotient ``(d // k)`` (every combination)."""
    options = [[(d, 1)] + ([(d, divisors[d])] if divisors.get(d, 1) > 1 else [])
               for d in moves]
    for choice in itertools.product(*options):
        names = {d: d if k == 1 else f"({d} // {k})" for d, k in choice}
        by = dict(choice)
        yield ([{names.get(d, d): v // by.get(d, 1) for d, v in s.items()} for s in sizes],
               {names[d]: i for d, i in moves.items()})


def _shifted(sizes, moves, shifts=(-1, 1, -2, 2)):
    """``(sizes, moves)`` with one size's symbol ``d`` as ``(d - 1)``, ``(d + 1)``...: each
    symbol and shift alone, where every sample's shifted size is positive."""
    for d in moves:
        for k in shifts:
            if any(s[d] + k < 1 for s in sizes):
                continue
            name = f"({d} {'-' if k < 0 else '+'} {abs(k)})"
            yield ([{name if e == d else e: v + k if e == d else v for e, v in s.items()}
                    for s in sizes], {name if e == d else e: i for e, i in moves.items()})


def _sums(values, sizes, base, moves):
    """``a1 * d1 + ... + k`` with integer coefficients."""
    terms, v0 = [], values[base]
    for d, k in moves.items():
        step = values[k] - v0
        width = sizes[k][d] - sizes[base][d]
        if step % width:
            return []
        if step:
            terms.append((step // width, d))
    k = v0 - sum(a * sizes[base][d] for a, d in terms)
    expr = ""
    for a, d in terms:
        sign = " - " if a < 0 else " + "
        term = d if abs(a) == 1 else f"{abs(a)} * {d}"
        expr = (("-" if a < 0 else "") + term) if not expr else expr + sign + term
    if not expr:
        return []
    return [expr + (f" + {k}" if k > 0 else f" - {-k}" if k < 0 else "")]


def _products(values, sizes, base, moves, kind):
    """``c * d1**a * d2**b`` spelled the ways the compiler may have computed it."""
    v0 = values[base]
    if v0 <= 0:  # a number token is never negative
        return []
    powers = {}
    for d, k in moves.items():
        if values[k] == v0:
            continue
        if values[k] <= 0:
            return []
        e = 2 * math.log(values[k] / v0) / math.log(sizes[k][d] / sizes[base][d])
        if abs(e - round(e)) > 1e-6 or round(e) == 0 or abs(round(e)) > 6 or \
                round(e) % 2 and kind is int:
            return []
        powers[d] = round(e) // 2 if round(e) % 2 == 0 else round(e) / 2   # a half power
    c = Fraction(v0 / math.prod(sizes[base][d] ** e for d, e in powers.items()))
    c = c.limit_denominator(10_000)
    if any(isinstance(e, float) for e in powers.values()):
        return _half_powers(c, powers)
    up = [d if e == 1 else f"{d} ** {e}" for d, e in powers.items() if e > 0]
    down = [d if e == -1 else f"{d} ** {-e}" for d, e in powers.items() if e < 0]
    exact = _float_factors(v0, sizes[base], powers) if kind is float and powers else []
    grouped = [_scaled(f, [" * ".join(up)], down) for f in exact] if len(up) > 1 else []
    return _spellings(c, up, down, kind) + [_scaled(f, up, down) for f in exact] + grouped


def _float_factors(v0, sizes, powers) -> list:
    """The floats ``f`` nearest ``v0`` over its sizes' product: ``0.5 * d * 1.8378770664093453``
    folds to ``f * d`` with ``f = 0.9189385332046727``, a float no small fraction gives bit for
    bit; ``v0 / d`` may round to a neighbour of ``f``, so the few floats either side come too
    (each checked against every sample)."""
    return polynomials.near(v0 / math.prod(sizes[d] ** e for d, e in powers.items()))


_FUNCTIONS = {"np.sqrt": math.sqrt, "np.log": math.log}


def _calls(values, sizes, base, moves) -> list:
    """``c * np.sqrt(d)``, ``c / np.log(d)``...: a float the compiler folded from
    ``math.sqrt(d)`` or ``math.log(n)``, where one size changes it, spelled with NumPy's
    function (the module needs NumPy only)."""
    changing = [d for d, k in moves.items() if values[k] != values[base]]
    if len(changing) != 1:
        return []
    d, v0 = changing[0], values[base]
    out = []
    for name, f in _FUNCTIONS.items():
        at = f(sizes[base][d])
        if at <= 0:
            continue
        call = f"{name}({d})"
        out += [call if c == 1 else f"{c!r} * {call}" for c in polynomials.near(v0 / at)]
        out += [f"1 / {call}" if c == 1 else f"{c!r} / {call}" for c in polynomials.near(v0 * at)]
    return out


def _scaled(f, up, down) -> str:
    """``f * d1 * d2 / d3``: the float ``f`` times the sizes, as Python evaluates it; an
    item of ``up`` that is a product is one integer (``f * (d1 * d2)``: ``n * d * 1e-6``)."""
    text = repr(f) + "".join(f" * ({u})" if " * " in u else f" * {u}" for u in up)
    return text + (f" / {down[0]}" if len(down) == 1 else
                   f" / ({' * '.join(down)})" if down else "")


def _spellings(c, up, down, kind):
    num = " * ".join(([str(c.numerator)] if c.numerator != 1 or not up else []) + up)
    den = " * ".join(([str(c.denominator)] if c.denominator != 1 else []) + down)
    paren = (lambda s: s if " " not in s or s[0] + s[-1] == "()" and s.count("(") == 1
             else f"({s})")
    if kind is int:
        out = [num] if not den else [f"{paren(num)} // {paren(den)}"]
    elif not down:
        out = [f"float({num})" if c.denominator == 1 else f"{paren(num)} / {paren(den)}",
               f"{float(c)!r} * {' * '.join(up)}" if up else repr(float(c))]
    else:
        dims = " * ".join(down)
        up_part = "".join(f" * {u}" for u in up)
        out = [f"{num} / {paren(den)}", f"{float(c)!r}{up_part} / {paren(dims)}",
               f"{c.numerator}{up_part} * (1 / {paren(den)})",
               f"{float(c)!r}{up_part} * (1 / {paren(dims)})"]
    return out


def _half_powers(c, powers):
    """``(d2 // 4) ** -0.5``: a float that is a power of a quotient of sizes with a half
    exponent (``dh ** -0.5``; a size's own square root, folded from ``math.sqrt(d)``, is
    :func:`_calls`' ``np.sqrt(d)``)."""
    if not all("//" in d for d in powers):
        return []
    term = " * ".join(f"{d} ** {e!r}" for d, e in powers.items())
    if c == 1:
        return [term]
    return [f"{float(c)!r} * {term}", f"{c.numerator} * {term}" if c.denominator == 1
            else f"{c.numerator} / {c.denominator} * {term}"]
