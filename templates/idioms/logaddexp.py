"""The stable log-add-exp idiom, ``maximum(x, y) + log1p(exp(-abs(x - y)))``, seen whole by
the adjoint rules of ``maximum`` and ``abs`` (:mod:`templates.elementwise`).

Its derivative is a sigmoid: ``d/dx = 1 / (1 + exp(y - x))``, 1/2 to each at a tie. Rule by
rule it is a sum of pieces that cancel (maximum's where/equal/greater, abs's sign, log1p's and
exp's quotient and product): about twelve passes over the arrays for a softplus, where a
hand-written gradient is one sigmoid. Seen whole, the rule of ``maximum`` gives the idiom's
entire derivative and the rule of ``abs`` gives zero (the path through ``log1p`` that it ends
is already counted), which is exact because ``top = maximum(x, y)`` receives exactly the
idiom's cotangent (its one reader is the idiom's sum, whose rule passes the cotangent on) and
``abs(...)``, ``exp``, ``log1p`` are each read only by the next step of the idiom, so the
cotangent ``abs`` receives comes from this path alone.

Three spellings are recognised, all computing ``np.logaddexp(x, y)``:

- ``np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))`` (a softplus, literal 0 either side);
- ``np.maximum(x, y) + np.log1p(np.exp(-np.abs(x - y)))`` (either order of the difference);
- NumPy's own, as :func:`adcompiler.compositions.elementwise.logaddexp` spells ``np.logaddexp``:
  the difference taken as ``where(x == y, 0, x) - where(x == y, 0, y)`` (no ``inf - inf`` at a
  tie of infinities).
"""

from __future__ import annotations

from dataclasses import dataclass

from adcompiler.ir import Literal, Value
from .forward_uses import forward_uses


@dataclass
class LogAddExp:
    """``x``, ``y``: the operands (Values or Literals); ``u``: the forward ``exp(-|x - y|)``,
    1 at a tie even of infinities when ``tie_safe``."""
    x: object
    y: object
    u: Value
    tie_safe: bool


def logaddexp_at(ops, ans, via: str):
    """The idiom whose ``maximum`` (``via="maximum"``) or ``abs`` (``via="abs"``) node gave
    ``ans``, when ``ops`` is the compiler's Builder and the forward graph holds it; else None."""
    uses = forward_uses(ops)
    if uses is None or uses.producer(ans) is None:
        return None
    total = uses.only_reader(ans) if via == "maximum" else _up_to_sum(uses, ans)
    if total is None or total.prim != "add" or len(total.inputs) != 2:
        return None
    found = _match(uses, total)
    if found is None or (via == "maximum" and found[0] is not ans):
        return None
    return found[1] if via == "maximum" or found[2] is ans else None


def _up_to_sum(uses, a):
    """From ``a = abs(d)``: the sum reached through ``-a``, ``exp``, ``log1p``, each read once."""
    node = None
    for prim in ("negative", "exp", "log1p", "add"):
        node = uses.only_reader(a)
        if node is None or node.prim != prim:
            return None
        a = node.out
    return node


def _chain(uses, tail):
    """``(u, a, d)`` for ``tail = log1p(u)``, ``u = exp(-a)``, ``a = abs(d)``, each of ``u``,
    ``-a`` and ``a`` read once (by the next step); None otherwise."""
    values = [tail]
    for prim in ("log1p", "exp", "negative", "abs"):
        node = uses.producer(values[-1])
        if node is None or node.prim != prim or (len(values) > 1
                                                 and uses.only_reader(values[-1]) is not
                                                 uses.producer(values[-2])):
            return None
        values.append(node.inputs[0])
    _, u, _, a, d = values
    return u, a, d


def _match(uses, total):
    """``(top, LogAddExp, a)`` when ``total = top + tail`` is the idiom, else None."""
    for top, tail in (total.inputs, total.inputs[::-1]):
        high, chain = uses.producer(top), uses.producer(tail)
        if (high is None or chain is None or high.prim != "maximum"
                or uses.only_reader(top) is not total or uses.only_reader(tail) is not total):
            continue
        found = _chain(uses, tail)
        if found is None:
            continue
        u, a, d = found
        x, y = high.inputs
        tie_safe = _tie_safe_gap(uses, d, x, y)
        if tie_safe or _gap(uses, d, x, y):
            return top, LogAddExp(x, y, u, tie_safe), a
    return None


def _same(p, q) -> bool:
    if isinstance(p, Literal) and isinstance(q, Literal):
        return type(p.value) is type(q.value) and p.value == q.value
    return p is q


def _zero(x) -> bool:
    return isinstance(x, Literal) and type(x.value) in (int, float) and x.value == 0


def _gap(uses, d, x, y) -> bool:
    """``d`` is ``x - y`` or ``y - x`` (``|d|`` is the same), or the other operand where one
    is a literal 0."""
    if (_zero(y) and d is x) or (_zero(x) and d is y):
        return True
    node = uses.producer(d)
    if node is None or node.prim != "subtract":
        return False
    p, q = node.inputs
    return (_same(p, x) and _same(q, y)) or (_same(p, y) and _same(q, x))


def _tie_safe_gap(uses, d, x, y) -> bool:
    """``d`` is ``where(x == y, 0, x) - where(x == y, 0, y)``: np.logaddexp as lowered."""
    node = uses.producer(d)
    if node is None or node.prim != "subtract":
        return False
    sides = [uses.producer(v) for v in node.inputs]
    if any(s is None or s.prim != "where" or not _zero(s.inputs[1]) for s in sides):
        return False
    test = uses.producer(sides[0].inputs[0])
    if sides[0].inputs[0] is not sides[1].inputs[0] or test is None or test.prim != "equal":
        return False
    p, q = test.inputs
    if not ((_same(p, x) and _same(q, y)) or (_same(p, y) and _same(q, x))):
        return False
    return _same(sides[0].inputs[2], x) and _same(sides[1].inputs[2], y)
