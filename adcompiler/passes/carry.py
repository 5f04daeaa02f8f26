"""A loop that updates a carried array entry by entry starts from a copy made once before it.

The emitter updates an array in place only where the code made it (see
:mod:`adcompiler.backends.inplace`): a carried ``dout`` whose initial value is a reduction's
broadcast seed (``np.broadcast_to(1.0, (n,))``, read-only), a caller's array or a view was
copied on every iteration that wrote one entry (``dout_1 = np.array(dout_1); dout_1[i] =
0.0``), O(n) per iteration. Copying the initial value once (``copy``, a fresh array) lets
every update run in place. Pattern: a loop whose carried param ``p`` has a next value made from
``p`` by entry updates (``setitem``, ``index_add``; through ``if`` branches, which may also pass
``p`` on unchanged) and an initial value that is not a fresh array. Invariant: the same values;
one copy before the loop instead of one per updating iteration. Plain code (read again by the
frontend, which never updates in place) is left as it is.
"""

from __future__ import annotations

from ..backends.aliasing import fresh, updates_slot
from ..ir import Node, Value, walk

def copy_updated_carries(graph):
    producer = {v: n for n in walk(graph.nodes) for v in n.outputs}
    graph.nodes = _visit(graph, graph.nodes, producer)
    return graph


def _visit(graph, nodes, producer) -> list:
    out = []
    for node in nodes:
        for block in node.regions:
            block.nodes = _visit(graph, block.nodes, producer)
        if node.prim in ("loop", "while"):
            out.extend(_copy_inits(graph, node, producer))
        out.append(node)
    return out


def _copy_inits(graph, loop, producer) -> list:
    """Copies of the initial values of ``loop``'s updated carried arrays that are not fresh;
    ``loop`` reads the copies."""
    body = loop.regions[-1]
    first = 1 if loop.prim == "loop" else 0
    params = body.params[first:]
    inputs, copies = list(loop.inputs), []
    for j, (p, nxt) in enumerate(zip(params, body.outputs)):
        init = inputs[first + j]
        if (not isinstance(init, Value) or init.aval.kind != "array" or not init.aval.ndim
                or _fresh(init, producer) or not _made_outside(graph, init, producer)
                or not updates_slot(nxt, p, producer)):
            continue
        value = graph.name_value(Value(init.aval, origin=p.origin), p.name) if p.name else \
            Value(init.aval)
        copy = Node("copy", (init,), {}, (value,), loop.source, loop.phase)
        copies.append(copy)
        inputs[first + j] = copy.outputs[0]
    loop.inputs = tuple(inputs)
    return copies


def _fresh(value, producer) -> bool:
    node = producer.get(value)
    return node is not None and fresh(node)


def _made_outside(graph, value, producer) -> bool:
    """Whether ``value`` is not an enclosing loop's carried param: that loop's own initial
    value decides (an inner loop updating it is part of its chain of updates)."""
    return value in producer or value in graph.params or value in graph.consts
