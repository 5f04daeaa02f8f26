"""Simplify's rules on negations: moved to where they cost least, rewritten in place: onto the
result of a linear primitive no larger than the negated array (``sum(-x)`` is ``-sum(x)``,
``a @ -b`` is ``-(a @ b)``) and into a literal factor (``-x * c`` is ``x * -c``); made from a
product by -1, absorbed by a sum (``-a + b`` is ``b - a``) and cancelled (``-(-x)`` is ``x``).
Adjoints make such negations (the rule of ``a - b`` gives ``-g`` to ``b``, whose broadcast is
summed back): each is a pass over an array, and after the move it is a pass over a smaller
one, or none (``c + -s`` then is ``c - s``). Every rule is ``rule(node, ctx)`` under the
protocol of :class:`.rewrite.Rewrite`. Exact: IEEE negation commutes with every rounding of sums
and products, and no NumPy routine orders its operations by sign.
"""

from __future__ import annotations

from ..ir import Literal, Node, Value, sizing
from .literals import literal_value
from .rewrite import IN_PLACE, Rewrite


# linear in input 0 (every input of matmul), and never larger than it: a negation moved past
# them lands on as many elements or fewer (not past broadcast_to, which makes more)
_NEGATION_OUTWARDS = ("sum", "mean", "sum_to", "transpose", "reshape", "squeeze",
                      "expand_dims", "getitem", "matmul")


def negation_outwards(node, ctx):
    """``sum(-x)`` becomes ``-sum(x)`` (so mean, sum_to, transposes and reshapes, ``a @ -b``),
    rewritten in place, returning the node to emit before: the negation moves to the result,
    as large or smaller (``X.T @ -d`` in k-means: a (16, 32) negation for a (20000, 32) one),
    one pass over ``x`` fewer once nothing else reads ``-x``."""
    if node.prim not in _NEGATION_OUTWARDS or len(node.outputs) != 1:
        return None
    positions = range(len(node.inputs)) if node.prim == "matmul" else (0,)
    for k in positions:
        x = node.inputs[k]
        producer = ctx.producers.get(x) if isinstance(x, Value) else None
        if (producer is None or producer.prim != "negative" or producer.params
                or not _no_larger(node.out.aval, x.aval)):
            continue
        inputs = node.inputs[:k] + (producer.inputs[0],) + node.inputs[k + 1:]
        inner = Node(node.prim, inputs, dict(node.params), (Value(node.out.aval),),
                     node.source, node.phase)
        node.prim, node.inputs, node.params = "negative", (inner.out,), {}
        return Rewrite(before=(inner,))
    return None


def _no_larger(out, x) -> bool:
    if out.shape is None or x.shape is None or out.kind != "array":
        return False
    return sizing.elements(out.shape) <= sizing.elements(x.shape)


def negated_factor(node, ctx):
    """``-x * c`` (either order) becomes ``x * -c`` for a float literal ``c`` (rewritten in
    place): exact, and the negation's pass goes once nothing else reads ``-x``."""
    if node.prim != "multiply":
        return None
    for k in (0, 1):
        c, x = node.inputs[k], node.inputs[1 - k]
        producer = ctx.producers.get(x) if isinstance(x, Value) else None
        if (isinstance(c, Literal) and type(c.value) is float and producer is not None
                and producer.prim == "negative" and not producer.params
                and producer.inputs[0].aval == x.aval):
            node.inputs = (Literal(-c.value), producer.inputs[0])
            return IN_PLACE
    return None


def minus_one_product(node, ctx):
    """``-1 * x`` and ``x * -1`` become ``-x``, -1 broadcast too (rewritten in place)."""
    if node.prim != "multiply":
        return None
    for k in (0, 1):
        lit, x = literal_value(node.inputs[k], ctx.producers), node.inputs[1 - k]
        if (lit is not None and type(lit) is not bool and lit == -1
                and isinstance(x, Value) and x.aval == node.out.aval):
            node.prim, node.inputs = "negative", (x,)
            return IN_PLACE
    return None


def subtraction(node, ctx):
    """``-a + b`` and ``b + -a`` become ``b - a``, ``b - -a`` becomes ``b + a`` (rewritten in
    place): the same IEEE result, one operation fewer once the negation has no other reader."""
    if node.prim not in ("add", "subtract"):
        return None
    for k in ((0, 1) if node.prim == "add" else (1,)):
        x, other = node.inputs[k], node.inputs[1 - k]
        producer = ctx.producers.get(x) if isinstance(x, Value) else None
        if producer is not None and producer.prim == "negative" and producer.params == {}:
            node.prim = "subtract" if node.prim == "add" else "add"
            node.inputs = (other, producer.inputs[0])
            return IN_PLACE
    return None


def double_negation(node, ctx):
    """``-(-x)`` is ``x``."""
    if node.prim != "negative" or not isinstance(node.inputs[0], Value):
        return None
    producer = ctx.producers.get(node.inputs[0])
    if producer is not None and producer.prim == "negative":
        inner = producer.inputs[0]
        if inner.aval == node.out.aval:
            return Rewrite(value=inner)
    return None


def double_negation_in_products(node, ctx):
    """``-(-a * b)`` becomes ``a * b`` (rewritten in place, before the identities run)."""
    if node.prim != "negative" or not isinstance(node.inputs[0], Value):
        return None
    producer = ctx.producers.get(node.inputs[0])
    if producer is not None and producer.prim in ("multiply", "divide"):
        a, b = producer.inputs
        inner = ctx.producers.get(a)
        if inner is not None and inner.prim == "negative" and producer.out.aval == node.out.aval:
            node.prim, node.inputs = producer.prim, (inner.inputs[0], b)
            return IN_PLACE
    return None
