"""Dead-code elimination: drop every node none of whose outputs is read, in every region.

Invariant: primitives have no side effects, so an unread node can always go. A region node stays
while any value defined inside it is read. A ``cond`` whose
outputs are partly unread loses those outputs (and the matching block yields); a loop keeps its
carried values (the next iteration reads them) but loses unread stacked outputs.
"""

from __future__ import annotations

from ..ir import Value, walk


def eliminate_dead_code(graph):
    live = {v for v in graph.outputs if isinstance(v, Value)}
    graph.nodes = _sweep(graph.nodes, live)
    graph.consts = {v: a for v, a in graph.consts.items() if v in live}
    return graph


def _mark(live, xs):
    live.update(x for x in xs if isinstance(x, Value))


def _sweep(nodes, live):
    """Keep live nodes, walking backwards; marks what they read as live."""
    kept = []
    for node in reversed(nodes):
        if not any(v in live for v in node.outputs) and not _inner_live(node, live):
            continue
        if node.prim == "cond":
            _prune_outputs(node, range(len(node.outputs)), live)
        elif node.prim in ("loop", "while"):
            carried = len(node.outputs) - node.params.get("stacked", 0)
            _prune_outputs(node, range(carried, len(node.outputs)), live)
            _mark(live, node.outputs[:carried])
        for block in node.regions:
            _mark(live, block.outputs)
            block.nodes = _sweep(block.nodes, live)
        _mark(live, node.inputs)
        kept.append(node)
    return kept[::-1]


def _inner_live(node, live) -> bool:
    """Whether code after a region node reads a value computed inside it (the adjoint of a
    cond reads values of the branch it replays)."""
    return any(v in live for n in walk([node]) for v in n.outputs) or any(
        p in live for n in walk([node]) for blk in n.regions for p in blk.params)


def _prune_outputs(node, positions, live):
    """Drop the outputs at ``positions`` that nobody reads, with their block yields."""
    dead = {i for i in positions if node.outputs[i] not in live}
    if not dead:
        return
    node.outputs = tuple(v for i, v in enumerate(node.outputs) if i not in dead)
    for block in node.regions[-1:] if node.prim == "while" else node.regions:
        # a block yields one value per node output, in order (a while's test yields its pred)
        block.outputs = [x for i, x in enumerate(block.outputs) if i not in dead]
    if node.prim in ("loop", "while"):
        node.params = {**node.params, "stacked": node.params.get("stacked", 0) - len(dead)}
