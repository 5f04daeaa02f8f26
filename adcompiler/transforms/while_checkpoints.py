"""Checkpointed ``while`` loops in at most ``s`` snapshots, whatever the trip count.

A while loop's trip count ``T`` is known only once it has run, so no segment length can be
planned. With ``Checkpoint(snapshots=s)`` (or ``checkpoint=s``) and no ``every=``, the loop is
cut into *epochs* of doubling segments: epoch ``e`` runs up to ``q`` segments of ``2 ** e``
iterations, for at most ``E`` epochs (``E = min(s // 2, 32)``, ``q = s - E``), then a plain
``while`` takes whatever is left (only past ``q * (2 ** E - 1)`` iterations: 4 * 10^9 * q when
``E = 32``)::

    while test and e < E:                       # keeps the carried values per epoch
        while test and j < q:                   # remat: keeps them per segment when run again
            while test and i < interval: body   # remat: its residuals when run again
        interval *= 2
    while test: body

Both inner loops are marked remat (see :mod:`.checkpointing`): the reverse sweep runs each
epoch again from its snapshot, keeping a snapshot per segment, and each segment again from its
own, keeping its residuals. So at most ``E + q = s`` snapshots are held (the epochs' and one
epoch's segments'), and ``2 ** e <= T / q + 1`` iterations' residuals; each iteration of the
epochs runs forward three times (``3 T`` steps, ``T + 2 min(T, q (2 ** E - 1))`` exactly). The
forward sweep is not repeated to learn ``T``, and no snapshot is taken and dropped: only the
structured loops above, which reverse mode handles as any loop (the generated code needs
nothing but NumPy).

Invariant: the body runs on the same values in the same order as the loop's own iterations (the
test is evaluated again where a segment or epoch ends), so the gradient is the unbounded one's.
"""

from __future__ import annotations

from ..ir import Aval, Block, Literal, Node, Value
from ..ir.builder import Builder

MAX_EPOCHS = 32   # q * (2 ** 32 - 1) iterations before the rest loop keeps every residual


def split(snapshots: int) -> tuple:
    """(epochs E, segments per epoch q) for ``snapshots`` snapshots: ``E + q = snapshots``;
    E = 0 where there is one (a single snapshot is the loop's start: nothing to gain)."""
    epochs = min(snapshots // 2, MAX_EPOCHS)
    return epochs, snapshots - epochs


def covered(snapshots: int) -> int:
    """Iterations the epochs take before the plain rest loop: ``q * (2 ** E - 1)``."""
    epochs, per_epoch = split(snapshots)
    return per_epoch * (2 ** epochs - 1)


def forward_steps(trips: int, snapshots: int) -> int:
    """How often the body runs forward in one gradient call, for ``trips`` iterations."""
    return trips + 2 * min(trips, covered(snapshots)) if split(snapshots)[0] else trips


def bounded_while(graph, node, snapshots: int, clone_block, fresh) -> list:
    """The nodes standing for the while loop ``node``: the epoch loop, then the rest loop (the
    original node, started from the epochs' results); ``[node]`` where ``snapshots`` is 1."""
    epochs, per_epoch = split(snapshots)
    if not epochs:
        return [node]
    b = Builder(graph)
    b.source = node.source
    test, body = node.regions
    in_segment = [fresh(graph, p, {}) for p in body.params]   # the middle loop's body params
    in_epoch = [fresh(graph, p, {}) for p in body.params]     # the epoch loop's
    interval = graph.name_value(Value(Aval("int", "int64")), "interval")
    inner = _bounded(b, node, clone_block(graph, test, {}), clone_block(graph, body, {}),
                     in_segment, interval, "steps", True)
    middle = _bounded(b, node, clone_block(graph, test, {}),
                      Block(in_segment, [inner], list(inner.outputs[:-1])), in_epoch,
                      Literal(per_epoch), "segments", True)
    epoch = _epoch_loop(b, node, clone_block(graph, test, {}), middle, in_epoch, interval,
                        epochs, fresh)
    note = (f"checkpointed: at most {snapshots} snapshots, whatever the trip count: up to "
            f"{epochs} epochs of {per_epoch} segments of 1, 2, 4... iterations, each run again "
            "in the reverse sweep")
    epoch.params["note"] = note
    node.inputs = tuple(epoch.outputs[:len(in_epoch)])
    return [epoch, node]


def _bounded(b, node, test, body, inits, bound, name, remat):
    """``while test and count < bound: body`` (``test``/``body`` fresh copies of the loop's,
    their params the carried values), started from ``inits`` with ``count = 0``; its outputs
    the carried values' and the count's."""
    count = [b.graph.name_value(Value(Aval("int", "int64")), name) for _ in range(3)]
    with b, b.into(test):
        more = b.emit("less", (count[0], bound))
        test.outputs = [b.emit("logical_and", (test.outputs[0], more))]
    with b, b.into(body):
        body.outputs.append(b.emit("add", (count[1], Literal(1)), name=name))
    test.params.append(count[0])
    body.params.append(count[1])
    outs = tuple(Value(p.aval, origin=p.origin) for p in test.params[:-1]) + (count[2],)
    for o, p in zip(outs, test.params):
        if p.name:
            b.graph.name_value(o, p.name)
    params = {"stacked": 0, "remat": True} if remat else {"stacked": 0}
    return Node("while", (*inits, Literal(0)), params, outs, node.source, "forward",
                (test, body))


def _epoch_loop(b, node, test, middle, carried, interval, epochs, fresh):
    """``while test and e < epochs: middle; interval *= 2`` from ``interval = 1``: the
    outermost loop, not remat (its residuals are the epochs' snapshots)."""
    n = len(carried)
    body = Block([*carried, interval], [middle], list(middle.outputs[:n]))
    with b, b.into(body):
        body.outputs.append(b.emit("multiply", (interval, Literal(2)), name="interval"))
    test.params.append(fresh(b.graph, interval, {}))
    loop = _bounded(b, node, test, body, node.inputs, Literal(epochs), "epoch", False)
    loop.inputs = loop.inputs[:n] + (Literal(1), Literal(0))
    return loop
