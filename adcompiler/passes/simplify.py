"""Constant folding and algebraic identities: literal-only scalar nodes fold, x*1, x+0, x**1 vanish.

Invariant: a rewrite happens only when the replacement has exactly the node's abstract value
(shape, dtype and Python-ness), so no dtype or broadcast is lost.
"""

from __future__ import annotations

from ..ir import Literal, Value
from ..ir.primitives import evaluate
from .rewrite import resolve, substitute

# prim -> (position of the operand kept, literal the other operand must equal)
_IDENTITIES = {
    "multiply": [(0, 1), (1, 1)],
    "add": [(0, 0), (1, 0)],
    "subtract": [(0, 0)],
    "divide": [(0, 1)],
    "power": [(0, 1)],
}


def simplify(graph):
    subst, producers = {}, {}
    graph.nodes = _simplify_nodes(graph.nodes, subst, producers)
    return substitute(graph, subst)


def _simplify_nodes(nodes, subst, producers):
    kept = []
    for node in nodes:
        node.inputs = tuple(resolve(subst, x) for x in node.inputs)
        for block in node.regions:  # a block sees outer producers, never a sibling's
            block.nodes = _simplify_nodes(block.nodes, subst, dict(producers))
            block.outputs = [resolve(subst, x) for x in block.outputs]
        if node.regions:
            kept.append(node)
            continue
        _negation(node)
        replacement = _fold(node) or _identity(node) or _double_negation(node, producers)
        if replacement is not None:
            subst[node.out] = replacement
        else:
            kept.append(node)
            producers.update((v, node) for v in node.outputs)
    return kept


def _fold(node):
    if len(node.outputs) != 1 or not node.out.aval.is_scalar:
        return None
    if node.inputs and all(isinstance(x, Literal) for x in node.inputs):
        return Literal(evaluate(node.prim, [x.value for x in node.inputs], node.params))
    return None


def _identity(node):
    for keep, unit in _IDENTITIES.get(node.prim, ()):
        other = node.inputs[1 - keep]
        x = node.inputs[keep]
        if (isinstance(other, Literal) and type(other.value) is not bool
                and other.value == unit and x.aval == node.out.aval):
            return x
    return None


def _negation(node):
    """``-1 * x`` and ``x * -1`` become ``-x`` (rewritten in place)."""
    if node.prim != "multiply":
        return
    for k in (0, 1):
        lit, x = node.inputs[k], node.inputs[1 - k]
        if (isinstance(lit, Literal) and type(lit.value) is not bool and lit.value == -1
                and isinstance(x, Value) and x.aval == node.out.aval):
            node.prim, node.inputs = "negative", (x,)
            return


def _double_negation(node, producers):
    if node.prim != "negative" or not isinstance(node.inputs[0], Value):
        return None
    producer = producers.get(node.inputs[0])
    if producer is not None and producer.prim == "negative":
        inner = producer.inputs[0]
        if inner.aval == node.out.aval:
            return inner
    return None

