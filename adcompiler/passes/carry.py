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

An update the adjoint makes before the last read of its input's old entries is moved after
that read (:func:`sink_updates`): the adjoint of ``h[:, t] = v`` reads ``g = dh[:, t]`` (a
view) and zeroes ``dh[:, t]``, and the reads of ``g`` came after the zeroing, so the emitter
copied the whole ``dh`` every iteration to keep ``g`` intact, O(T^2) over the loop. The
same holds for a forward loop stacking a view (``h[:, t]``, read by the adjoint) of an array
it then updates: the stack's store comes at the body's end, so the view is copied first
(:func:`_copy_stacked_views`, one row instead of the whole array).
"""

from __future__ import annotations

from ..ir.aliasing import fresh, is_view, updates_slot
from ..ir import Node, Value, walk
from .rewrite import Walker, use_counts

_UPDATES = ("setitem", "index_add")  # update their first input (written in place if owned)


def copy_updated_carries(graph):
    producer = {v: n for n in walk(graph.nodes) for v in n.outputs}
    Walker(visit=_copy_before).graph(graph, (graph, producer, _carried_params(graph)))
    sink_updates(graph)
    return graph


def _copy_before(node, scope) -> list:
    """``node``, a loop (its inner loops done first: the walk visits blocks before their
    owner) with the copies of its updated carried arrays put before it."""
    if node.prim not in ("loop", "while"):
        return (node,)
    graph, producer, carried = scope
    copies = _copy_inits(graph, node, producer, carried)
    _copy_stacked_views(node, producer)
    return copies + [node]


def _copy_stacked_views(loop, producer):
    """A value the loop stacks that is a view of an array its body then updates (the
    residual ``h[:, t]`` of ``h[:, t + 1] = f(h[:, t])``) is copied where it is read: the
    stack's store comes at the body's end, after the update, and to keep the view's entries
    there the emitter copied the whole array on every iteration. Now one row is copied."""
    body = loop.regions[-1]
    carried = len(loop.outputs) - loop.params.get("stacked", 0)
    for j, x in enumerate(body.outputs[carried:], carried):
        view = producer.get(x) if isinstance(x, Value) else None
        if view is None or view not in body.nodes or not _updated_later(body.nodes, view,
                                                                          producer):
            continue
        copy = Node("copy", (x,), {}, (Value(x.aval),), view.source, view.phase)
        body.nodes.insert(body.nodes.index(view) + 1, copy)
        producer[copy.outputs[0]] = copy
        body.outputs[j] = copy.outputs[0]


def _updated_later(nodes, view, producer) -> bool:
    """Whether ``view`` (a node of ``nodes``) makes a view of an array that an update after
    it in ``nodes`` writes."""
    bases = set()
    node = view
    while node is not None and is_view(node) and isinstance(node.inputs[0], Value):
        bases.add(node.inputs[0])
        node = producer.get(node.inputs[0])
    return bool(bases) and any(n.prim in _UPDATES and n.inputs[0] in bases
                               for n in nodes[nodes.index(view) + 1:])


def _copy_inits(graph, loop, producer, carried) -> list:
    """Copies of the initial values of ``loop``'s updated carried arrays that are not fresh;
    ``loop`` reads the copies."""
    body = loop.regions[-1]
    first = 1 if loop.prim == "loop" else 0
    params = body.params[first:]
    inputs, copies = list(loop.inputs), []
    for j, (p, nxt) in enumerate(zip(params, body.outputs)):
        init = inputs[first + j]
        if (not isinstance(init, Value) or init.aval.kind != "array" or not init.aval.ndim
                or _fresh(init, producer) or not _made_outside(graph, init, producer, carried)
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


def _carried_params(graph) -> dict:
    """Each loop's carried body param -> its next value (for :func:`_made_outside`)."""
    out = {}
    for loop in walk(graph.nodes):
        if loop.prim in ("loop", "while"):
            body = loop.regions[-1]
            params = body.params[1:] if loop.prim == "loop" else body.params
            out.update(zip(params, body.outputs))
    return out


def _made_outside(graph, value, producer, carried) -> bool:
    """Whether the inner loop must copy ``value`` to update it in place. An enclosing loop's
    carried param ``p`` whose next value is ``p`` after updates needs no copy: that loop's
    own initial value decides (an inner loop updating it is part of its chain of updates).
    Where its next value is another array (``du = du_2``, the adjoint of ``u = f(u)``: the
    inner loop only starts from ``du``), the emitter cannot tell that ``p`` is this code's
    own, and copied it on every inner iteration; one copy per entry into the loop does."""
    if value in carried:
        return not updates_slot(carried[value], value, producer)
    return value in producer or value in graph.params or value in graph.consts


def sink_updates(graph):
    """Move each entry update (``setitem``, ``index_add``) of a block after the block's last
    node that reads its input array, directly, through a view (``g = dh[:, t]``) or through
    an expression the emitter may evaluate later, at its only reader (inlined or fused:
    ``np.sum(g * x)``), when no node up to there reads the update's result. The emitter
    writes an update in place only where its input is never read again (else it copies the
    whole array first): moved, the update comes after those reads. Invariant: a reordering
    that keeps every node after the nodes whose results it reads, so the same values."""
    producer = {v: n for n in walk(graph.nodes) for v in n.outputs}
    facts = (_holders(graph), use_counts(graph), {}, producer)
    Walker(leave=_sink).graph(graph, facts)


def _holders(graph) -> dict:
    """value -> values that may hold its array: views of it, and the results of ``if``s
    that yield it."""
    edges = {}
    for node in walk(graph.nodes):
        if is_view(node) and isinstance(node.inputs[0], Value):
            edges.setdefault(node.inputs[0], []).append(node.outputs[0])
        if node.prim == "cond":
            for block in node.regions:
                for x, out in zip(block.outputs, node.outputs):
                    if isinstance(x, Value):
                        edges.setdefault(x, []).append(out)
    return edges


def _sink(nodes, facts) -> list:
    """:func:`sink_updates` in one scope's ``nodes`` (the walk did their blocks first), in
    place. Each update moves at most once (two updates of one array each read it: they would
    swap forever), so the loop ends."""
    i, moved = 0, set()
    while i < len(nodes):
        node = nodes[i]
        last = None
        if node.prim in _UPDATES and node not in moved:
            last = _last_read(nodes, i, facts)
        if last is None:
            i += 1
        else:
            moved.add(node)
            nodes.insert(last, nodes.pop(i))
    return nodes


def _last_read(nodes, i, facts):
    """Index of the last node after ``nodes[i]`` (an update) that reads the array it updates,
    where none before that one reads the update's result; else None."""
    holders, uses, reads_of, producer = facts
    update = nodes[i]
    if not isinstance(update.inputs[0], Value):
        return None
    held, last = _closure(update.inputs[0], holders), None
    for j in range(_made_at(nodes, i, producer.get(update.inputs[0])), len(nodes)):
        node = nodes[j]
        read = _reads(node, reads_of)
        if j > i and update.outputs[0] in read:
            break
        if j == i or read.isdisjoint(held):
            continue
        last = j if j > i else last
        if _deferrable(node, uses):  # evaluated where its reader is: that read counts
            held.add(node.outputs[0])
    return last


def _made_at(nodes, i, maker) -> int:
    """Where ``maker`` is among ``nodes[:i]``, else 0: nothing before it reads what it
    makes (the scan starts there)."""
    try:
        return nodes.index(maker, 0, i) if maker is not None else 0
    except ValueError:
        return 0


def _deferrable(node, uses) -> bool:
    """Whether the emitter may evaluate ``node`` at its only reader's statement instead of
    its own: a plain expression read once (inlined, or fused into its reader's chain)."""
    return (not node.regions and node.prim not in _UPDATES and len(node.outputs) == 1
            and uses.get(node.outputs[0], 0) == 1)


def _closure(v, holders) -> set:
    out, todo = set(), [v]
    while todo:
        x = todo.pop()
        if x not in out:
            out.add(x)
            todo.extend(holders.get(x, ()))
    return out


def _reads(node, reads_of) -> set:
    """The values ``node`` reads, in its blocks too (cached by node)."""
    if node not in reads_of:
        read = {x for n in walk([node]) for x in n.inputs if isinstance(x, Value)}
        read.update(x for n in walk([node]) for block in n.regions for x in block.outputs
                    if isinstance(x, Value))
        reads_of[node] = read
    return reads_of[node]
