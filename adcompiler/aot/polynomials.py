"""Numbers that are polynomials of degree two in the sizes, or one over such a polynomial.

``n * (n - 1) / 2`` (the pairs of n points), ``1 / (n * d - 1)``, ``1 / (n + d)``: a number
folded from such a polynomial of one to three sizes is found exactly. Each sample's value (its
reciprocal, for a float) is rounded to a fraction of small denominator; the polynomial's
rational coefficients are solved exactly (:class:`fractions.Fraction`) from as many samples as
it has terms, and every other sample, at least one, must give its value exactly. The formulas
returned are only candidates: :func:`adcompiler.aot.antiunify.fit_number` keeps one whose literal
is each sample's bit for bit. A polynomial times a float that no small fraction is (``0.5 *
math.log(2 * math.pi) * n * (n - 1)``) is found from the values' ratios, the float from the
first value, and spelled as Python evaluates the user's product, left to right. Degrees above
two (``n * (n - 1) * (n - 2) / 6``) are not found. Invariant: every formula is integer
arithmetic on the sizes, exact at any size, then divisions and products with at most one float
(in the order a user's product is evaluated, for the float that is no small fraction).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

MAX_SIZES = 3        # the sizes one number may change with
DENOMINATOR = 1000   # the largest denominator of a sample's value and of a coefficient


def changing(values, base, moves) -> list:
    """The symbols whose move alone changes the number."""
    return [d for d, k in moves.items() if values[k] != values[base]]


def candidates(values, sizes, base, moves, kind) -> list:
    """Formulas (Python text in the size symbols) of the polynomial, or of one over it, that
    gives every sample's value exactly; [] where none does or the samples are too few."""
    symbols = changing(values, base, moves)
    if not 0 < len(symbols) <= MAX_SIZES:
        return []
    out = []
    for inverted in (False, True) if kind is float else (False,):
        targets = [_rational(1 / v) if v else None for v in values] if inverted else \
            [_rational(v) for v in values]
        if None in targets:
            continue
        poly = solve(symbols, [[s[d] for d in symbols] for s in sizes], targets)
        if poly is not None:
            out += _spellings(poly, symbols, inverted, kind)
    if kind is float and not out and all(v > 0 for v in values):
        for inverted in (False, True):
            out += _scaled(values, symbols, [[s[d] for d in symbols] for s in sizes], inverted)
    return out


def _scaled(values, symbols, points, inverted) -> list:
    """``f * N`` or ``f / N``, ``f`` a float that no small fraction is (``0.5 *
    math.log(2 * math.pi) * n * (n - 1)``): ``N``'s coefficients from the values' ratios to the
    first (to a part in 10^9), ``f`` and its few float neighbours from the first value; spelled
    as Python evaluates the user's product, left to right (``f * d1 * (d1 - 1)``), and with
    ``N`` whole."""
    ratios = [Fraction(values[0] / v if inverted else v / values[0]) for v in values]
    poly = solve(symbols, points, ratios, exact=False)
    if poly is None:
        return []
    ints = _integral(poly)
    at = _value(ints, points[0])
    if at <= 0:
        return []
    text, product = _polynomial(ints, symbols)
    factors = text.split(" * ") if product and " * " in text else []
    op = "/" if inverted else "*"
    out = []
    for f in near(values[0] * at if inverted else values[0] / at):
        out += [f"{f!r} {op} " + (text if " " not in text else f"({text})")]
        out += [f"{f!r} {op} " + f" {op} ".join(factors)] if factors else []
    return out


def near(f, reach=4) -> list:
    """``f`` and the ``reach`` floats either side of it."""
    out, below, above = [f], f, f
    for _ in range(reach):
        below, above = math.nextafter(below, -math.inf), math.nextafter(above, math.inf)
        out += [below, above]
    return out


def _rational(value):
    """The fraction of denominator at most DENOMINATOR that ``value`` rounds, or None."""
    exact = Fraction(value).limit_denominator(DENOMINATOR)
    return exact if abs(exact - Fraction(value)) <= abs(exact) * Fraction(1, 10 ** 12) else None


def monomials(count) -> list:
    """The exponents of every term of degree at most two in ``count`` sizes, highest first."""
    terms = [e for e in itertools.product(range(3), repeat=count) if sum(e) <= 2]
    return sorted(terms, key=lambda e: (-sum(e), [-x for x in e]))


def solve(symbols, points, targets, exact=True):
    """``{exponents: coefficient}`` of the polynomial that gives ``targets[k]`` at
    ``points[k]``: solved from the first points that determine every term, checked at every
    other point (one, at least, not the same as a point solved from); None where no such
    polynomial is. Not ``exact``: the targets are known up to a scale and to a part in 10^9,
    and the coefficients are small fractions of the largest term's."""
    terms = monomials(len(symbols))
    rows = [[Fraction(math.prod(x ** e for x, e in zip(p, t))) for t in terms] for p in points]
    chosen = _independent(rows, len(terms))
    if chosen is None or not set(map(tuple, points)) - {tuple(points[k]) for k in chosen}:
        return None
    coefficients = _eliminate([rows[k] + [targets[k]] for k in chosen])
    if not exact:
        coefficients = _ratios(coefficients, rows[0])
    if coefficients is None or any(c.denominator > DENOMINATOR for c in coefficients):
        return None
    poly = {t: c for t, c in zip(terms, coefficients) if c}
    if exact:
        return poly if all(_value(poly, p) == v for p, v in zip(points, targets)) else None
    first = _value(poly, points[0])
    return poly if first and all(abs(_value(poly, p) / first - v) <= abs(v) / 10 ** 9
                                 for p, v in zip(points, targets)) else None


def _ratios(coefficients, row):
    """The coefficients as small fractions of the one whose term is largest at ``row``."""
    lead = max(range(len(row)), key=lambda i: abs(coefficients[i] * row[i]))
    if not coefficients[lead]:
        return None
    return [(c / coefficients[lead]).limit_denominator(DENOMINATOR) for c in coefficients]


def _independent(rows, width):
    """The indices of the first ``width`` rows that are linearly independent, or None."""
    chosen, basis = [], []
    for k, row in enumerate(rows):
        reduced = _reduce(row, basis)
        if any(reduced):
            chosen.append(k)
            basis.append(reduced)
            if len(chosen) == width:
                return chosen
    return None


def _reduce(row, basis):
    row = list(row)
    for b in basis:
        pivot = next(i for i, x in enumerate(b) if x)
        if row[pivot]:
            factor = row[pivot] / b[pivot]
            row = [x - factor * y for x, y in zip(row, b)]
    return row


def _eliminate(augmented) -> list:
    """The solution of the square system ``augmented`` (each row its coefficients, then its
    right-hand side), exactly."""
    n, rows = len(augmented), [list(r) for r in augmented]
    for col in range(n):
        pivot = next(r for r in range(col, n) if rows[r][col])
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(n):
            if r != col and rows[r][col]:
                factor = rows[r][col] / rows[col][col]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col])]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def _value(poly, point):
    return sum(c * math.prod(x ** e for x, e in zip(point, t)) for t, c in poly.items())


# ---- spellings -----------------------------------------------------------------------------------
def _spellings(poly, symbols, inverted, kind) -> list:
    """The ways the compiler may have computed ``c * N`` (or ``1 / (c * N)``), ``N`` the
    polynomial with coprime integer coefficients, its first positive."""
    ints = _integral(poly)
    c = next(iter(poly.values())) / next(iter(ints.values()))
    text, product = _polynomial(ints, symbols)
    if kind is int:
        return _integers(c, text, product, ints)
    wrapped = text if product else f"({text})"
    if inverted:    # 1 / (c * N) = b / (a * N)
        a, b = c.numerator, c.denominator
        den = text if a == 1 else f"{a} * {wrapped}"
        den = f"({den})" if " " in den else den
        out = [f"{b} / {den}", f"{float(1 / c)!r} / {den if a == 1 else f'({text})'}"]
        return out + ([f"{b} * (1 / {den})", f"{float(1 / c)!r} * (1 / ({text}))"]
                      if c != 1 else [])
    num = text if c.numerator == 1 else f"{c.numerator} * {wrapped}"
    return [f"float({num})" if c.denominator == 1 else f"{num} / {c.denominator}"] + \
        ([f"{float(c)!r} * {wrapped}"] if c != 1 else [])


def _integral(poly) -> dict:
    """``N``: the polynomial times the fraction that makes its coefficients coprime integers,
    the first positive."""
    scale = math.lcm(*(c.denominator for c in poly.values()))
    ints = {t: int(c * scale) for t, c in poly.items()}
    common = math.gcd(*ints.values()) * (1 if next(iter(ints.values())) > 0 else -1)
    return {t: v // common for t, v in ints.items()}


def _integers(c, text, product, ints) -> list:
    """An integer literal ``c * N``: where ``c`` is no integer, ``N``'s values at every size
    must be multiples of its denominator (checked over the residues)."""
    a, b = c.numerator, c.denominator
    wrapped = text if product else f"({text})"
    num = text if a == 1 else f"{a} * {wrapped}"
    if b == 1:
        return [num]
    count = len(next(iter(ints)))
    if b ** count > 10 ** 4 or any(
            _value(ints, r) * a % b for r in itertools.product(range(b), repeat=count)):
        return []
    return [f"{num} // {b}"]


def _polynomial(ints, symbols) -> tuple:
    """``(text, whether it is a product)``: ``d1 * (d1 - 1)`` or ``(d1 + 1) * (d2 - 1)``
    where the polynomial factors so, else its terms, highest degree first."""
    factors = _factors(ints, len(symbols))
    if factors is not None:
        grouped = len(factors) > 1
        text = " * ".join(_linear(f, symbols, grouped) for f in factors)
        return text, grouped or not factors[0][1]
    out = ""
    for t, v in ints.items():
        names = [s if e == 1 else f"{s} ** {e}" for s, e in zip(symbols, t) if e]
        term = " * ".join(([str(abs(v))] if abs(v) != 1 or not names else []) + names)
        out = ("-" if v < 0 else "") + term if not out else \
            out + (" - " if v < 0 else " + ") + term
    return out, len(ints) == 1


def _factors(ints, count):
    """Two linear factors ``(x + r)(x + s)`` or ``(x + r)(y + s)``, each monic, with integer
    ``r``, ``s`` (a lone monic linear term is one factor), or None."""
    degree = max(sum(t) for t in ints)
    unit = [tuple(int(i == k) for i in range(count)) for k in range(count)]
    if degree == 1:
        lead = [u for u in unit if u in ints]
        return [(lead[0], ints.get((0,) * count, 0))] if len(lead) == 1 and \
            ints[lead[0]] == 1 and len(ints) <= 2 else None
    top = [t for t in ints if sum(t) == 2]
    if len(top) != 1 or ints[top[0]] != 1:
        return None
    x, y = [u for u in unit if top[0][unit.index(u)]] * (2 if 2 in top[0] else 1)
    constant = ints.get((0,) * count, 0)
    r, s = ints.get(y, 0), ints.get(x, 0)   # (x + r)(y + s): x's coefficient is s
    if x == y:   # x^2 + p x + q: integer roots
        p, root = s, math.isqrt(max(s * s - 4 * constant, 0))
        if root * root != p * p - 4 * constant or (p + root) % 2:
            return None
        r, s = (p - root) // 2, (p + root) // 2
    if set(ints) - {top[0], x, y, (0,) * count} or r * s != constant:
        return None
    if x != y:
        return [(x, r), (y, s)]
    return sorted([(x, r), (y, s)], key=lambda f: (f[1] != 0, -f[1]))   # d1 * (d1 - 1)


def _linear(factor, symbols, grouped) -> str:
    unit, k = factor
    name = symbols[unit.index(1)]
    if not k:
        return name
    text = f"{name} {'-' if k < 0 else '+'} {abs(k)}"
    return f"({text})" if grouped else text
