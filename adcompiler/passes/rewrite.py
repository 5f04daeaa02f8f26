"""Value substitution shared by the passes: replace uses of values by other values or literals.

Invariant: after :func:`substitute`, no node input (in any region), no block output and no
graph output refers to a replaced value.
"""

from __future__ import annotations

from ..ir import Value, walk


def resolve(subst: dict, x):
    while isinstance(x, Value) and x in subst:
        x = subst[x]
    return x


def substitute(graph, subst: dict):
    """Rewrite every use through ``subst`` (value -> value or literal)."""
    if not subst:
        return graph
    for node in walk(graph.nodes):
        node.inputs = tuple(resolve(subst, x) for x in node.inputs)
        for block in node.regions:
            block.outputs = [resolve(subst, x) for x in block.outputs]
    graph.outputs = [resolve(subst, x) for x in graph.outputs]
    return graph
