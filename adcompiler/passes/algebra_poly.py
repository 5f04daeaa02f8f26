"""Fused blocks as polynomials, simplified without SymPy: the fast tier of :mod:`.algebra`.

A block built from + - *, integer powers, division by a single term and elementwise calls,
where no product multiplies two sums, is a Laurent polynomial: a sum of terms
``c * a1**k1 * a2**k2 ...`` whose atoms are the block's inputs and calls (``exp``, ``tanh``,
...) of such polynomials. Its normal form merges like terms and folds constants, as SymPy's
canonical form does; exact rational coefficients (:class:`fractions.Fraction`, exact for every
float) keep that folding free of new rounding. The same rewrites the SymPy tier tries are then
priced: the sum as it is, its common factor taken out (``factor_terms``), and its terms
collected on each atom; also after using what the forward part computed (an input ``s = f``
inlined, or replacing ``f`` where a term holds it). All of it takes well under a millisecond,
where importing SymPy alone takes ~0.2 s.

Invariants: :func:`to_poly` gives None for what it cannot express (a quotient of sums, a
non-integer power, a product or power of sums, which it never expands, more than
``MAX_TERMS`` terms), and the caller then leaves the block to SymPy; a candidate is a function
``emit(emitter)`` that writes a tree (each result read once) and returns its result; everything
is ordered, so the outcome depends only on the block.
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd

from ..ir import Literal

MAX_TERMS = 64           # a bigger expansion is left to SymPy (or alone)
MAX_POWER = 8
CALLS = {"exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "arctan",
         "arcsin", "arccos", "sinh", "cosh"}   # the elementwise calls both tiers take as atoms


class NotPolynomial(Exception):
    """The block holds something this tier does not express."""


# ---- polynomials: {monomial: Fraction}; a monomial is a sorted tuple of (atom, exponent) -------
# An atom is ("in", i) for the block's i-th input or (prim, key of its argument) for a call.
def const(c) -> dict:
    c = Fraction(c)
    return {(): c} if c else {}


def atom(a) -> dict:
    return {((a, 1),): Fraction(1)}


def add(p, q, sign=1) -> dict:
    out = dict(p)
    for m, c in q.items():
        v = out.get(m, 0) + sign * c
        if v:
            out[m] = v
        else:
            out.pop(m, None)
    return out


def _mono_mul(m1, m2, k=1) -> tuple:
    exps = dict(m1)
    for a, e in m2:
        exps[a] = exps.get(a, 0) + k * e
    return tuple(sorted((a, e) for a, e in exps.items() if e))


def mul(p, q) -> dict:
    if len(p) > 1 and len(q) > 1:
        # (x + 1)*(x - 1) expanded is x**2 - 1, which loses digits near x = 1; SymPy's canonical
        # form does not expand either
        raise NotPolynomial("a product of two sums")
    out: dict = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            out = add(out, {_mono_mul(m1, m2): c1 * c2})
    if len(out) > MAX_TERMS:
        raise NotPolynomial("too many terms")
    return out


def inverse(p) -> dict:
    if len(p) != 1:
        raise NotPolynomial("a quotient of sums")
    ((m, c),) = p.items()
    return {_mono_mul((), m, -1): 1 / c}


def power(p, k) -> dict:
    if k != int(k) or abs(k) > MAX_POWER:
        raise NotPolynomial("a power this tier does not expand")
    out = const(1)
    for _ in range(abs(int(k))):
        out = mul(out, p)
    return inverse(out) if k < 0 else out


def key(p) -> tuple:
    return tuple(sorted(p.items()))


_OPS = {"add": lambda a, b: add(a, b), "subtract": lambda a, b: add(a, b, -1),
        "multiply": mul, "divide": lambda a, b: mul(a, inverse(b)),
        "negative": lambda a: add({}, a, -1), "square": lambda a: mul(a, a),
        "reciprocal": inverse}


def apply(prim, args, calls) -> dict:
    """``prim(*args)`` on polynomials; ``calls`` collects each call atom's (prim, argument)."""
    if prim in _OPS:
        return _OPS[prim](*args)
    if prim == "power":
        base, exponent = args
        if set(exponent) - {()}:
            raise NotPolynomial("a traced exponent")
        return power(base, exponent.get((), 0))
    if prim in CALLS:
        (arg,) = args
        a = (prim, key(arg))
        calls[a] = (prim, arg)
        return atom(a)
    raise NotPolynomial(prim)


def to_poly(block, calls):
    """The block's result as a polynomial in its inputs (atom ("in", i) for param i), or None."""
    env = {p: atom(("in", i)) for i, p in enumerate(block.params)}
    try:
        for n in block.nodes:
            args = [const(x.value) if isinstance(x, Literal) else env[x] for x in n.inputs]
            env[n.outputs[0]] = apply(n.prim, args, calls)
    except (NotPolynomial, ZeroDivisionError, TypeError, ValueError, OverflowError):
        return None
    return env[block.outputs[0]]


def substitute(p, i, f, calls) -> dict:
    """``p`` with input ``i`` replaced by the polynomial ``f`` (inside call arguments too)."""
    out: dict = {}
    for m, c in p.items():
        term = const(c)
        for a, e in m:
            if a == ("in", i):
                term = mul(term, power(f, e))
            elif a[0] != "in":
                prim, arg = calls[a]
                term = mul(term, power(apply(prim, [substitute(arg, i, f, calls)], calls), e))
            else:
                term = mul(term, power(atom(a), e))
        out = add(out, term)
    return out


def reuse(p, s, f) -> dict:
    """``p`` reading input ``s`` where a term holds the monomial ``f`` (``s = f``): the forward
    part already computed it. ``p`` itself where ``f`` is not one positive monomial."""
    if len(f) != 1:
        return p
    ((fm, fc),) = f.items()
    if not fm or any(e < 0 for _, e in fm):
        return p
    out: dict = {}
    for m, c in p.items():
        exps = dict(m)
        while all(exps.get(a, 0) >= e for a, e in fm):
            m, c = _mono_mul(_mono_mul(m, fm, -1), ((("in", s), 1),)), c / fc
            exps = dict(m)
        out = add(out, {m: c})
    return out


# ---- the rewrites -------------------------------------------------------------------------------
def content(p):
    """(common factor, common monomial) of the terms: what ``factor_terms`` takes out."""
    cs = list(p.values())
    if all(c.denominator == 1 for c in cs):
        g = 0
        for c in cs:
            g = gcd(g, c.numerator)
        factor = Fraction(-g if all(c < 0 for c in cs) else g)
    else:
        factor = abs(cs[0]) if all(abs(c) == abs(cs[0]) for c in cs) else Fraction(1)
    shared = None
    for m, _ in p.items():
        shared = dict(m) if shared is None else {
            a: (min(e, shared[a]) if e > 0 else max(e, shared[a])) for a, e in m
            if a in shared and (e > 0) == (shared[a] > 0)}
    return factor, tuple(sorted((shared or {}).items()))


def divide_out(p, factor, mono) -> dict:
    return {_mono_mul(m, mono, -1): c / factor for m, c in p.items()}


def collected(p, a):
    """Terms grouped by the exponent of atom ``a``: ({exponent: polynomial}, rest)."""
    groups: dict = {}
    rest: dict = {}
    for m, c in p.items():
        e = dict(m).get(a, 0)
        if e:
            groups.setdefault(e, {})[_mono_mul(m, ((a, e),), -1)] = c
        else:
            rest[m] = c
    return groups, rest


def atoms(p) -> list:
    return sorted({a for m in p for a, _ in m})


def variants(p, links, calls) -> list:
    """``p`` after using each link ``(i, f)`` (input ``i`` is ``f`` of the other inputs): ``f``
    inlined, ``f`` replaced by ``i`` where a term holds it, and, where ``i = c/u``, ``u``
    replaced by ``c/i`` (a division becomes a product). A rewrite this tier cannot express
    (an inlined quotient of sums) is left out."""
    out = []
    for i, f in links:
        tries = [lambda: substitute(p, i, f, calls)]
        if set(f) - {()}:
            tries.append(lambda: reuse(p, i, f))
        u = _reciprocal_of(f)
        if u is not None:
            c = next(iter(f.values()))
            tries.append(lambda: substitute(p, u, mul(const(c), inverse(atom(("in", i)))),
                                            calls))
        for rewrite in tries:
            try:
                out.append(rewrite())
            except (NotPolynomial, ZeroDivisionError, OverflowError):
                pass
    return out


def _reciprocal_of(f):
    """``u`` where ``f`` is ``c / u`` for an input ``u``, else None."""
    if len(f) != 1:
        return None
    (m,) = f
    if len(m) == 1 and m[0][1] == -1 and m[0][0][0] == "in":
        return m[0][0][1]
    return None


def candidates(p, links, calls) -> list:
    """Functions ``emit(emitter)``, in a fixed order: for ``p`` and each variant, the sum as it
    is, its common factor taken out, and its terms collected on each atom."""
    out = []
    for base in [p] + variants(p, links, calls):
        out.append(lambda em, base=base: em.poly(base))
        factor, mono = content(base)
        if len(base) > 1 and (factor != 1 or mono):
            out.append(lambda em, base=base, f=factor, m=mono: em.factored(base, f, m))
        for a in atoms(base):
            groups, _ = collected(base, a)
            if any(len(g) > 1 for g in groups.values()):
                out.append(lambda em, base=base, a=a: em.collected(base, a))
    return out


# ---- back to IR: a tree of elementwise nodes -----------------------------------------------
def number(c):
    """A coefficient as the Python number the generated code writes (2, not 2.0)."""
    return int(c) if c.denominator == 1 and abs(c) < 2 ** 53 else float(c)


def _order(item):
    """Reading order of a sum's terms: those of inputs alone, then collected groups, then those
    holding a call (``t + x*(7 - t**2) + exp(-x)``); higher degrees first."""
    m, _ = item
    return (2 if any(a[0] != "in" for a, _ in m) else 0, -sum(e for _, e in m if e > 0), m)


class Emitter:
    """Writes polynomials through a builder ``b`` (or anything with its ``emit``); ``inputs``
    are the block's params, ``calls`` each call atom's (prim, argument)."""

    def __init__(self, b, inputs, calls):
        self.b, self.inputs, self.calls = b, inputs, calls

    def poly(self, p):
        return self.sum([(c < 0, lambda m=m, c=c: self.term(abs(c), m))
                         for m, c in sorted(p.items(), key=_order)])

    def factored(self, p, factor, mono):
        inner = divide_out(p, factor, mono)
        v = self.term(abs(factor), mono, lambda: self.poly(inner))
        return self.b.emit("negative", (v,)) if factor < 0 else v

    def collected(self, p, a):
        groups, rest = collected(p, a)
        parts = []
        for e, g in sorted(groups.items()):
            if len(g) == 1:
                rest = add(rest, mul(g, {((a, e),): Fraction(1)}))
                continue
            negative = all(c < 0 for c in g.values())
            g = add({}, g, -1) if negative else g
            parts.append(((1, -e), negative, lambda e=e, g=g: self.term(
                1, ((a, e),), lambda: self.poly(g))))
        parts += [(_order((m, c)), c < 0, lambda m=m, c=c: self.term(abs(c), m))
                  for m, c in rest.items()]
        return self.sum([part[1:] for part in sorted(parts, key=lambda part: part[0])])

    def sum(self, parts):
        """Positive parts added, then negative ones subtracted (each part gives its size)."""
        acc = None
        for negative, part in [p for p in parts if not p[0]] + [p for p in parts if p[0]]:
            v = part()
            if negative:
                acc = self.b.emit("negative", (v,)) if acc is None else \
                    self.b.emit("subtract", (acc, v))
            else:
                acc = v if acc is None else self.b.emit("add", (acc, v))
        return 0 if acc is None else acc

    def term(self, c, mono, inner=None):
        """``c * mono * inner()``, with ``c > 0``; negative exponents divide."""
        top = self._product([(a, e) for a, e in mono if e > 0])
        if inner is not None:
            v = inner()
            top = v if top is None else self.b.emit("multiply", (top, v))
        if c != 1 or top is None:
            top = number(c) if top is None else self.b.emit("multiply", (number(c), top))
        bottom = self._product([(a, -e) for a, e in mono if e < 0])
        return top if bottom is None else self.b.emit("divide", (top, bottom))

    def _product(self, factors):
        acc = None
        for a, e in factors:
            v = self._atom(a)
            v = v if e == 1 else self.b.emit("power", (v, e))
            acc = v if acc is None else self.b.emit("multiply", (acc, v))
        return acc

    def _atom(self, a):
        if a[0] == "in":
            return self.inputs[a[1]]
        prim, arg = self.calls[a]
        return self.b.emit(prim, (self.poly(arg),))
