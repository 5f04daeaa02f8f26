"""Dead-code elimination: drop every node none of whose outputs reaches a graph output.

Invariant: primitives have no side effects, so an unused node can always go.
"""

from __future__ import annotations

from ..ir import Value


def eliminate_dead_code(graph):
    live = {v for v in graph.outputs if isinstance(v, Value)}
    kept = []
    for node in reversed(graph.nodes):
        if any(v in live for v in node.outputs):
            kept.append(node)
            live.update(x for x in node.inputs if isinstance(x, Value))
    graph.nodes = kept[::-1]
    graph.consts = {v: a for v, a in graph.consts.items() if v in live}
    return graph
