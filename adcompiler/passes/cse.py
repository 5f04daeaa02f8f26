"""Common-subexpression elimination: a node equal to an earlier one (prim, inputs, params) goes.

Invariant: every primitive is pure, so two nodes with the same key compute the same value.
"""

from __future__ import annotations

from ..ir import Literal
from .rewrite import resolve, substitute


def _key(node):
    inputs = tuple(("lit", type(x.value).__name__, x.value) if isinstance(x, Literal) else id(x)
                   for x in node.inputs)
    return node.prim, inputs, repr(sorted(node.params.items()))


def eliminate_common_subexpressions(graph):
    seen, subst, kept = {}, {}, []
    for node in graph.nodes:
        node.inputs = tuple(resolve(subst, x) if not isinstance(x, Literal) else x
                            for x in node.inputs)
        key = _key(node)
        if key in seen:
            for old, new in zip(node.outputs, seen[key].outputs):
                subst[old] = new
                if new.name and new.name.startswith("_") and old.name:
                    new.name = old.name
        else:
            seen[key] = node
            kept.append(node)
    graph.nodes = kept
    return substitute(graph, subst)
