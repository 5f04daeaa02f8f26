"""Simplify's algebraic identities: ``x * 1``, ``x + 0``, ``x ** 1`` are ``x``; ``a + a`` is
``2.0 * a``; ``x.T.T`` is ``x``; a ``where`` whose test never holds is its other branch.

Every rule is ``rule(node, ctx)`` under the protocol of :class:`.rewrite.Rewrite`. Invariant: a
node is replaced only by a value of exactly its abstract value (shape, dtype, Python-ness), and
a forward ``x + 0.0`` keeps the sign of a zero result (see :func:`_keeps_zero_sign`).
"""

from __future__ import annotations

import math

from ..ir import Literal, Value
from .literals import literal_value
from .rewrite import IN_PLACE, Rewrite

# prim -> (position of the operand kept, literal the other operand must equal)
_IDENTITIES = {
    "multiply": [(0, 1), (1, 1)],
    "add": [(0, 0), (1, 0)],
    "subtract": [(0, 0)],
    "divide": [(0, 1)],
    "power": [(0, 1)],
}


def identity(node, ctx):
    """``x * 1``, ``1 * x``, ``x + 0``, ``x - 0``, ``x / 1``, ``x ** 1`` are ``x`` (the unit
    spread to an array or typed counts too)."""
    for keep, unit in _IDENTITIES.get(node.prim, ()):
        value = literal_value(node.inputs[1 - keep], ctx.producers)
        x = node.inputs[keep]
        if (value is not None and type(value) is not bool and value == unit
                and x.aval == node.out.aval and _keeps_zero_sign(node, value)):
            return Rewrite(value=x)
    return None


def _keeps_zero_sign(node, value) -> bool:
    """Whether dropping ``node``'s zero operand keeps the sign of a zero result: ``x + 0.0``
    and ``x - (-0.0)`` turn ``-0.0`` into ``+0.0`` (``1 / (x + 0.0)`` is ``+inf`` there), so in
    the user's computation only ``x + (-0.0)`` and ``x - 0.0`` are ``x``. An adjoint's zero
    carries no sign that matters (a cotangent's ``-0.0`` is as good as ``+0.0``)."""
    if node.phase != "forward" or node.prim not in ("add", "subtract"):
        return True
    negative = math.copysign(1.0, value) < 0
    return negative if node.prim == "add" else not negative


def doubling(node, ctx):
    """``a + a`` becomes ``2.0 * a`` (rewritten in place): one operation, a product by a literal
    that later rules fold further."""
    if node.prim != "add":
        return None
    x = node.inputs[0]
    if x is node.inputs[1] and isinstance(x, Value) and x.aval.is_float:
        node.prim, node.inputs = "multiply", (Literal(2.0), x)
        return IN_PLACE
    return None


def double_transpose(node, ctx):
    """``x.T.T`` is ``x`` (and any two transposes whose axes compose to no change): the
    adjoint of ``x @ C.T`` reads ``C.T.T``."""
    if node.prim != "transpose" or not isinstance(node.inputs[0], Value):
        return None
    producer = ctx.producers.get(node.inputs[0])
    if producer is None or producer.prim != "transpose" or node.out.aval.shape is None:
        return None
    inner = producer.inputs[0]
    ndim = len(node.out.aval.shape)
    first = producer.params.get("axes") or tuple(reversed(range(ndim)))
    second = node.params.get("axes") or tuple(reversed(range(ndim)))
    composed = [first[a % ndim] % ndim for a in second]
    if composed == list(range(ndim)) and isinstance(inner, Value) and inner.aval == node.out.aval:
        return Rewrite(value=inner)
    return None


def never_selected(node, ctx):
    """``where(x > inf, a, b)`` is ``b`` (and ``x < -inf``): the adjoint of a one-sided clip,
    whose missing bound is infinite."""
    if node.prim != "where" or not isinstance(node.inputs[0], Value):
        return None
    test, otherwise = ctx.producers.get(node.inputs[0]), node.inputs[2]
    if (test is None or test.prim not in ("greater", "less")
            or not isinstance(test.inputs[1], Literal) or not isinstance(otherwise, Value)):
        return None
    bound = test.inputs[1].value
    never = ((test.prim == "greater" and bound == float("inf"))
             or (test.prim == "less" and bound == float("-inf")))
    return Rewrite(value=otherwise) if never and otherwise.aval == node.out.aval else None
