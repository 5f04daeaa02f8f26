"""Shared by the passes: value substitution (uses of values replaced by other values or
literals) and use counts.

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


def use_counts(scope) -> dict:
    """How many times each value is read in ``scope`` (a graph or a block): by node inputs,
    block outputs at any depth, and ``scope``'s own outputs."""
    uses = {}
    for node in walk(scope.nodes):
        reads = list(node.inputs) + [x for b in node.regions for x in b.outputs]
        for x in reads:
            if isinstance(x, Value):
                uses[x] = uses.get(x, 0) + 1
    for x in scope.outputs:
        if isinstance(x, Value):
            uses[x] = uses.get(x, 0) + 1
    return uses
