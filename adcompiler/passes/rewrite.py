"""Value substitution shared by the passes: replace uses of values by other values or literals.

Invariant: after :func:`substitute`, no node input and no graph output refers to a replaced value.
"""

from __future__ import annotations


def resolve(subst: dict, x):
    while x in subst:
        x = subst[x]
    return x


def substitute(graph, subst: dict):
    """Rewrite every node input and graph output through ``subst`` (value -> value or literal)."""
    if not subst:
        return graph
    for node in graph.nodes:
        node.inputs = tuple(resolve(subst, x) if _hashable(x) else x for x in node.inputs)
    graph.outputs = [resolve(subst, x) if _hashable(x) else x for x in graph.outputs]
    return graph


def _hashable(x):
    try:
        hash(x)
        return True
    except TypeError:
        return False
