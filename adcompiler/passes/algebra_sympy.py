"""The SymPy side of :mod:`.algebra` (imported only when a fused block qualifies): IR to SymPy and
back, and the search for the cheapest equivalent form.

Invariants: :func:`to_sympy` and :func:`emit` are inverse up to SymPy's canonical form
(``log1p``/``expm1`` stay opaque functions, so their accuracy is kept); :func:`emit` writes a tree
(each operation's result read once) and raises :class:`Unsupported` for what the elementwise
primitives cannot spell; :func:`best` tries a fixed list of candidates, in a fixed order.
"""

from __future__ import annotations

import sympy

LOG1P, EXPM1 = sympy.Function("log1p"), sympy.Function("expm1")
_FUNCTIONS = {"exp": sympy.exp, "log": sympy.log, "sin": sympy.sin, "cos": sympy.cos,
              "tan": sympy.tan, "tanh": sympy.tanh, "sinh": sympy.sinh, "cosh": sympy.cosh,
              "arctan": sympy.atan, "arcsin": sympy.asin, "arccos": sympy.acos,
              "log1p": LOG1P, "expm1": EXPM1, "sqrt": sympy.sqrt}
_PRIM_OF = {f: prim for prim, f in _FUNCTIONS.items() if prim != "sqrt"}


class Unsupported(Exception):
    """A SymPy form the elementwise primitives cannot spell (Abs, sech, Piecewise, ...)."""


def symbols_for(n) -> list:
    return [sympy.Symbol(f"a{i}", real=True) for i in range(n)]


def key(expr) -> str:
    return sympy.srepr(expr)


def number(v):
    """A Python number as SymPy's: an integral float as an Integer (so ``1 - t*t`` factors)."""
    if isinstance(v, bool):
        return sympy.Integer(int(v))
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53):
        return sympy.Integer(int(v))
    return sympy.Float(v)


def apply(prim, args):
    """``prim(*args)`` on SymPy values, or None for what this module does not translate."""
    binary = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
              "multiply": lambda a, b: a * b, "divide": lambda a, b: a / b,
              "power": lambda a, b: a ** b}
    if prim in binary:
        return binary[prim](*args)
    (a,) = args
    unary = {"negative": lambda: -a, "square": lambda: a ** 2, "reciprocal": lambda: 1 / a}
    if prim in unary:
        return unary[prim]()
    return _FUNCTIONS[prim](a) if prim in _FUNCTIONS else None


def to_sympy(block, env):
    """The block's result as one SymPy expression of the symbols in ``env`` (param -> symbol)."""
    env = dict(env)
    for n in block.nodes:
        args = [env[x] if x in env else number(x.value) for x in n.inputs]
        env[n.outputs[0]] = apply(n.prim, args)
        if env[n.outputs[0]] is None:
            return None
    return env[block.outputs[0]]


# ---- the candidates ---------------------------------------------------------------------------
def _rewrites(expr):
    """``expr`` and the cheap rewrites of it, in a fixed order."""
    out = [expr, sympy.factor_terms(expr), sympy.together(expr)]
    out += [sympy.collect(expr, s) for s in sorted(expr.free_symbols, key=str)]
    return out + _quotients(expr)


def _quotients(expr) -> list:
    """``sinh(a)`` as ``tanh(a)*cosh(a)`` where ``cosh(a)`` appears too (likewise sin, cos,
    tan), so a quotient of the two cancels into one call: a targeted ``trigsimp``, which is
    too slow to run on every expression."""
    out = []
    for top, bottom, quotient in ((sympy.sinh, sympy.cosh, sympy.tanh),
                                  (sympy.sin, sympy.cos, sympy.tan)):
        for a in sorted({f.args[0] for f in expr.atoms(bottom)}, key=sympy.default_sort_key):
            if expr.has(top(a)):
                out.append(expr.subs(top(a), quotient(a) * bottom(a)))
    return out


def _reused(expr, relations):
    """``expr`` rewritten to read what the forward part computed: each input given by a
    relation ``s = f`` replaces ``f`` where it appears (or is replaced by ``f``, which may let
    like terms merge and leave ``s`` unread), and an input ``u`` of which ``s`` is a
    reciprocal (``s = c/u``) is replaced by ``c/s``, so a division becomes a product."""
    out = []
    for s, f in relations:
        if f.is_Number:
            out.append(expr.subs(s, f))
            continue
        out.append(expr.subs(f, s))
        out.append(expr.subs(s, f))   # inlined: 6*x + x*(1 - t**2) collects to x*(7 - t**2)
        for u in sorted(f.free_symbols - {s}, key=str):
            solved = _solve(f, u, s)
            if solved is not None:
                out.append(expr.subs(u, solved))
    return out


def _solve(f, u, s):
    """``u`` from ``s = f`` where ``f`` is ``u**-1`` times factors without ``u``, else None."""
    factors = f.args if f.is_Mul else (f,)
    holding = [t for t in factors if t.has(u)]
    if len(holding) == 1 and holding[0].as_base_exp() == (u, -1):
        rest = sympy.Mul(*[t for t in factors if not t.has(u)])
        return rest / s
    return None


def best(expr, relations, symbols, cost):
    """The cheapest of the candidates (``cost`` gives None where one cannot be built)."""
    winner, lowest, seen = None, None, set()
    for base in [expr] + _reused(expr, relations):
        for candidate in _rewrites(base):
            if candidate in seen:
                continue
            seen.add(candidate)
            c = cost(candidate)
            if c is not None and (lowest is None or c < lowest):
                winner, lowest = candidate, c
    return winner


# ---- back to IR: a tree of elementwise nodes -----------------------------------------------
def emit(e, b, env):
    """Emit ``e`` through the builder ``b``; symbols read ``env``. Numbers come back as Python
    numbers (the caller refuses a constant result)."""
    try:
        return _emit(e, b, env)
    except Unsupported:
        return None


def _emit(e, b, env):
    if e.is_Symbol:
        return env[e]
    if e.is_Number:
        return _python(e)
    if e.is_Add:
        return _emit_add(e, b, env)
    if e.is_Mul:
        return _emit_mul(e, b, env)
    if e.is_Pow:
        return _emit_pow(e, b, env)
    if e.func in _PRIM_OF and len(e.args) == 1:
        return b.emit(_PRIM_OF[e.func], (_emit(e.args[0], b, env),))
    raise Unsupported(e.func)


def _python(n):
    if n.is_Integer:
        return int(n)
    if n.is_Rational or n.is_Float:
        return float(n)
    raise Unsupported(n)


def _emit_add(e, b, env):
    terms = e.as_ordered_terms()
    positive = [t for t in terms if not t.could_extract_minus_sign()]
    negative = [-t for t in terms if t.could_extract_minus_sign()]
    acc = None
    for t in positive:
        v = _emit(t, b, env)
        acc = v if acc is None else b.emit("add", (acc, v))
    for t in negative:
        v = _emit(t, b, env)
        acc = b.emit("negative", (v,)) if acc is None else b.emit("subtract", (acc, v))
    return acc


def _emit_mul(e, b, env):
    coeff, factors = e.as_coeff_mul()
    num, den = [], []
    for f in factors:
        base, exp = f.as_base_exp()
        if exp.is_Number and exp < 0:
            den.append(base ** -exp)
        else:
            num.append(f)
    top = _product(num, b, env)
    if coeff == -1 and top is not None:
        top = b.emit("negative", (top,))
    elif coeff != 1:
        top = _python(coeff) if top is None else b.emit("multiply", (_python(coeff), top))
    bottom = _product(den, b, env)
    if bottom is None:
        return top
    return b.emit("divide", (1 if top is None else top, bottom))


def _product(factors, b, env):
    acc = None
    for f in factors:
        v = _emit(f, b, env)
        acc = v if acc is None else b.emit("multiply", (acc, v))
    return acc


def _emit_pow(e, b, env):
    base, exp = e.as_base_exp()
    if exp.is_Number and exp < 0:
        return b.emit("divide", (1, _emit(base ** -exp, b, env)))
    v = _emit(base, b, env)
    if exp == sympy.Rational(1, 2):
        return b.emit("sqrt", (v,))
    if exp.is_Number:
        return b.emit("power", (v, _python(exp)))
    return b.emit("power", (v, _emit(exp, b, env)))
