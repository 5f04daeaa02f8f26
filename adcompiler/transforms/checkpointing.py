"""Checkpointed loops: a ``for`` loop's forward keeps snapshots of its carried values only, and its
reverse sweep runs each segment between two snapshots forward again before reversing it.

The rewrite (before reverse mode) turns ``for k in range(T): body`` into segments of ``L``
iterations: an outer loop of ``T // L`` segments, each an inner loop over its ``L`` iterations
(``k = j * L + i``), then a plain loop over the ``T % L`` left (stacking its residuals as any
loop does: fewer than a segment's). Each inner loop is marked ``remat``: reverse mode does not
differentiate it where it runs but :func:`replay`\\s it (a copy, run again from the same carried
values) in the adjoint, and differentiates the copy. So the outer forward loop stacks only its
carried values (the snapshots, ``T // L`` of them) and each reverse step stacks one segment's
residuals (``L`` iterations) while it runs: two-level checkpointing, ``2 sqrt(T)`` stored states
for ``L = sqrt(T)``, each iteration of the full segments run twice forward (``T + L * (T // L)``
steps in all). A ``while`` loop, with ``Checkpoint(every=E)``, becomes ``while test: (while test
and i < E: body)``, the inner loop marked remat: the outer loop's lists hold a snapshot per ``E``
iterations.

Invariant: the same operations on the same values in the same order (the gradient is the
unbounded one's, bitwise but where the optimiser treats the unsegmented loop otherwise: one
product ``x @ Wx`` hoisted out of it, in the last bits); loops with a ``break`` and loops inside
loops are left as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import CompileError
from ..ir import Aval, Block, Literal, Node, Value
from ..ir.builder import Builder
from .checkpoint_budget import choose, parse_bytes, state_bytes, step_bytes
from .loop_exit import exit_guard
from .while_checkpoints import bounded_while


SCHEDULES = ("two-level", "binomial")


@dataclass(frozen=True)
class Checkpoint:
    """A memory budget for reverse mode through ``for`` loops (``grad(f, checkpoint=...)``).

    ``snapshots``: how many carried states a loop's forward keeps (``None``: ``ceil(sqrt(T))``
    for a loop of ``T`` iterations, ``ceil(T ** (1 / levels))`` with more levels). The reverse
    sweep then keeps one segment's residuals, ``ceil(T / snapshots)`` iterations of them, at a
    time. ``levels``: with ``levels=d > 2``
    each segment is itself checkpointed, recursively (``d - 1`` levels of snapshots, about
    ``d * T ** (1 / d)`` states held, each step run ``d`` times forward). ``every``: a ``while`` loop, whose
    trip count ``T`` is known only once it has run, keeps a snapshot every ``every``
    iterations (``T / every`` of them, and ``every`` iterations' residuals in the reverse
    sweep); ``None``: at most ``snapshots`` of them whatever ``T`` (epochs of doubling
    segments, :mod:`.while_checkpoints`), every iteration without ``snapshots``. ``memory``:
    a budget in bytes (an int, or
    ``"64MB"``, ``"1GiB"``) from which each ``for`` loop's snapshots and levels are chosen, by
    the size of its carried values (:mod:`.checkpoint_budget`; the code's note says the choice).
    ``schedule="binomial"``: Revolve's schedule instead of fixed segments (NumPy code; other
    backends write the two-level one): at most ``snapshots`` states held (``None``:
    ``ceil(sqrt(T))``), taken and dropped as the reverse sweep goes, each step run again from
    the last snapshot, the fewest forward steps ``snapshots`` allow
    (:mod:`~adcompiler.backends.binomial`); ``segment_steps=L`` makes its steps segments of ``L``
    iterations replayed with their residuals (``snapshots + L`` states held).
    """

    snapshots: int | None = None
    every: int | None = None
    levels: int = 2
    memory: int | None = None
    schedule: str = "two-level"
    segment_steps: int | None = None

    def __post_init__(self):
        if self.segment_steps is not None and self.schedule != "binomial":
            raise TypeError("Checkpoint(segment_steps=...) is the binomial schedule's: give "
                            "schedule=\"binomial\" with it")
        if self.schedule not in SCHEDULES:
            raise TypeError(f"Checkpoint(schedule=...) takes one of {SCHEDULES}, not "
                            f"{self.schedule!r}")
        if self.schedule == "binomial" and (self.levels != 2 or self.memory is not None):
            raise TypeError("Checkpoint(schedule=\"binomial\") takes snapshots= (its own "
                            "levels), not levels= or memory=")
        if self.memory is not None:
            object.__setattr__(self, "memory", parse_bytes(self.memory))
            if self.snapshots is not None or self.levels != 2:
                raise TypeError("Checkpoint(memory=...) chooses the snapshots and levels: give "
                                "memory= or snapshots=/levels=, not both")
        for name in ("snapshots", "every", "levels", "segment_steps"):
            n = getattr(self, name)
            if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
                raise TypeError(f"Checkpoint({name}=...) takes an int >= 1 or None, not {n!r}")
        if self.levels < 2:
            raise TypeError(f"Checkpoint(levels=...) takes an int >= 2, not {self.levels!r}")

    def segment(self, trips: int) -> int | None:
        """Iterations per (outermost) segment for a loop of ``trips`` iterations; None where the
        budget holds every iteration (nothing to gain)."""
        lengths = self.lengths(trips)
        return lengths[0] if lengths else None

    def lengths(self, trips: int) -> list:
        """The segment length of each level, outermost first, each a multiple of the next
        (``levels - 1`` of them); empty where the budget holds every iteration."""
        if trips <= 1:
            return []
        keep = self.snapshots or _root(trips, self.levels)   # ceil(T ** (1 / levels))
        if keep >= trips:
            return []
        if self.schedule == "binomial":   # the store choosing snapshots among segments
            length = self.segment_steps or 1
            return [length] if length < trips else []
        top = -(-trips // keep)
        if self.levels == 2:
            return [top]
        base = max(_root(top, self.levels - 1), 2)   # top rounded up to base ** (levels - 1)
        lengths = [base ** n for n in range(self.levels - 1, 0, -1)]
        return lengths if lengths[0] < trips else [top]


def _root(n: int, k: int) -> int:
    """ceil(n ** (1 / k)) for ints, exactly."""
    r = max(int(round(n ** (1.0 / k))), 1)
    while r ** k < n:
        r += 1
    while r > 1 and (r - 1) ** k >= n:
        r -= 1
    return r


def as_checkpoint(checkpoint) -> Checkpoint | None:
    """``checkpoint=`` as given to grad: None, a number of snapshots, ``"sqrt"``, a dict of
    :class:`Checkpoint`'s fields (``{"memory": "64MB"}``) or a :class:`Checkpoint`; else a
    TypeError saying what is accepted."""
    if checkpoint is None or isinstance(checkpoint, Checkpoint):
        return checkpoint
    if isinstance(checkpoint, dict):
        fields = set(Checkpoint.__dataclass_fields__)
        if not checkpoint or not set(checkpoint) <= fields:
            raise TypeError(f"checkpoint={{...}} takes the keys {sorted(fields)}, not "
                            f"{sorted(map(str, checkpoint))}")
        return Checkpoint(**checkpoint)
    if checkpoint == "sqrt":
        return Checkpoint()
    if isinstance(checkpoint, int) and not isinstance(checkpoint, bool) and checkpoint >= 1:
        return Checkpoint(snapshots=checkpoint)
    raise TypeError(f"checkpoint= takes None, a number of snapshots (an int >= 1), \"sqrt\", "
                    f"{{\"memory\": \"64MB\"}} or adcompiler.Checkpoint(snapshots=...), not "
                    f"{checkpoint!r}")


def for_backend(policy: Checkpoint | None, backend: str) -> Checkpoint | None:
    """``policy`` as ``backend`` writes it: the binomial schedule's store is NumPy code, so
    the other backends get the two-level schedule with as many snapshots."""
    if policy is None or policy.schedule != "binomial" or backend == "numpy":
        return policy
    return Checkpoint(snapshots=policy.snapshots, every=policy.every)


def checkpoint_loops(graph, policy: Checkpoint | None):
    """Split every outermost counted loop of ``graph`` (in its top level or its ifs) into
    checkpointed segments, as ``policy`` says; the graph, changed in place."""
    if policy is not None:
        _rewrite(graph, graph.nodes, policy)
    return graph


def _rewrite(graph, nodes, policy):
    for i in range(len(nodes) - 1, -1, -1):
        node = nodes[i]
        if node.prim == "cond":
            for block in node.regions:
                _rewrite(graph, block.nodes, policy)
        elif node.prim == "loop" and _eligible(node):
            loop_policy, said = _within_memory(policy, node)
            lengths = loop_policy.lengths(node.inputs[0].value) if loop_policy else []
            if lengths:
                nodes[i:i + 1] = _segments(graph, node, lengths, loop_policy)
            if said:   # what the memory budget chose, said where the loop is
                first = nodes[i]
                first.params["note"] = "; ".join(filter(None, (first.params.get("note"), said)))
        elif node.prim == "while" and policy.every and not node.params.get("stacked"):
            nodes[i] = _while_segments(graph, node, policy.every)
        elif node.prim == "while" and policy.snapshots and not node.params.get("stacked"):
            # no every=: at most `snapshots` whatever the trip count (.while_checkpoints)
            nodes[i:i + 1] = bounded_while(graph, node, policy.snapshots, clone_block, _fresh)


def _within_memory(policy, node):
    """The policy for the loop ``node`` (with ``memory=``, its snapshots and levels chosen from
    the carried values' bytes) and what was chosen (None without ``memory=``)."""
    if policy.memory is None:
        return policy, None
    (body,) = node.regions
    state, step = state_bytes(body.params[1:]), step_bytes(body)
    if state is None or step is None:
        raise CompileError(f"checkpoint memory= needs the shapes of the loop's carried values "
                           f"at compile time (the loop `{(node.source or '').strip()}`)",
                           hint="give checkpoint=K snapshots instead")
    snapshots, levels, said = choose(node.inputs[0].value, state, step, policy.memory, node,
                                     type(policy))
    if levels is None:
        return None, said
    return Checkpoint(snapshots=snapshots, every=policy.every, levels=levels), said


def _eligible(node) -> bool:
    return (isinstance(node.inputs[0], Literal) and not node.params.get("stacked")
            and not node.params.get("reverse") and exit_guard(node) is None)


def _segments(graph, node, lengths, policy):
    """The nodes standing for ``node``: an outer loop over its full segments of ``lengths[0]``
    iterations (each split again by the other lengths), then one over the rest (where there is
    a rest; itself checkpointed where it is long enough)."""
    trips, length = node.inputs[0].value, lengths[0]
    full, rest = divmod(trips, length)
    inits = list(node.inputs[1:])
    b = Builder(graph)
    b.source = node.source
    b.policy = policy
    outer = _outer(b, node, full, lengths, inits, rest == 0)
    if not rest:
        return [outer]
    # the rest's residuals (fewer than a segment's) are stacked as it runs: no replay
    tail = _segment(b, node, rest, Literal(full * length), list(outer.outputs), node.outputs)
    del tail.params["remat"]
    nodes = [tail]
    if len(lengths) > 1:   # with more levels, the rest is bounded the same way
        _rewrite(graph, nodes, policy)
    return [outer, *nodes]


def _outer(b, node, full, lengths, inits, last):
    """A loop over ``full`` segments of ``lengths[0]`` iterations of ``node``, keeping a snapshot
    of the carried values per segment; each segment a remat loop (split by ``lengths[1:]``)."""
    (body,) = node.regions
    length = lengths[0]
    j = b.graph.name_value(Value(body.params[0].aval), "segment")
    carried = [_fresh(b.graph, p, {}) for p in body.params[1:]]
    block = Block(params=[j, *carried])
    with b, b.into(block):
        start = b.emit("multiply", (j, Literal(length)), name="first")
    outs = node.outputs if last else tuple(_fresh(b.graph, v, {}) for v in node.outputs)
    inner = _segment(b, node, length, start, carried,
                     tuple(_fresh(b.graph, v, {}) for v in node.outputs))
    if len(lengths) > 1:   # the segment split again: its own snapshots, replayed in its turn
        inner = _outer(b, inner, length // lengths[1], lengths[1:], carried, True)
        inner.params["remat"] = True
    block.nodes.append(inner)
    block.outputs = list(inner.outputs)
    names = ", ".join(p.name or "?" for p in body.params[1:])
    note = (f"checkpointed: {full} snapshot{'s' if full > 1 else ''} of {names}, one per "
            f"{length} steps, run again in the reverse sweep")
    params = {"stacked": 0, "note": note}
    if b.policy.schedule == "binomial" and len(lengths) == 1:
        slots = min(b.policy.snapshots or _root(full, 2), full)
        params["binomial"] = slots
        unit = "steps" if length == 1 else f"segments of {length} steps"
        params["note"] = (f"checkpointed, binomial schedule (Revolve): at most {slots} "
                          f"snapshots of {names} over {full} {unit}, each run again from the "
                          "last snapshot in the reverse sweep")
    return Node("loop", (Literal(full), *inits), params, tuple(outs),
                node.source, "forward", (block,))


def _segment(b, node, trips, start, inits, outs):
    """A copy of ``node`` over ``trips`` iterations from iteration ``start``, marked remat."""
    (body,) = node.regions
    k = body.params[0]
    i = b.graph.name_value(Value(k.aval), "step")
    subst = {}
    copy = clone_block(b.graph, body, subst)
    copy.params[0] = i
    if isinstance(start, Literal) and start.value == 0:
        counter = i
    else:
        with b, b.into(Block()) as top:
            counter = b.emit("add", (start, i), name=k.name)
        copy.nodes[:0] = top.nodes
    _substitute(copy, {subst[k]: counter})
    return Node("loop", (Literal(trips), *inits), {"stacked": 0, "remat": True}, tuple(outs),
                node.source, "forward", (copy,))


def _while_segments(graph, node, every):
    """``while test: body`` as ``while test: (while test and i < every: body; i += 1)``, the
    inner loop marked remat: the outer loop's per-iteration residuals are the snapshots."""
    test, body = node.regions
    outer_test = clone_block(graph, test, {})
    carried = [_fresh(graph, p, {}) for p in body.params]
    inner_test, inner_body = clone_block(graph, test, {}), clone_block(graph, body, {})
    count = [graph.name_value(Value(Aval("int", "int64")), "steps") for _ in range(3)]
    b = Builder(graph)
    b.source = node.source
    with b, b.into(inner_test):
        more = b.emit("less", (count[0], Literal(every)))
        inner_test.outputs = [b.emit("logical_and", (inner_test.outputs[0], more))]
    with b, b.into(inner_body):
        inner_body.outputs.append(b.emit("add", (count[1], Literal(1)), name="steps"))
    inner_test.params.append(count[0])
    inner_body.params.append(count[1])
    outs = tuple(_fresh(graph, v, {}) for v in node.outputs) + (count[2],)
    inner = Node("while", (*carried, Literal(0)), {"stacked": 0, "remat": True}, outs,
                 node.source, "forward", (inner_test, inner_body))
    note = (f"checkpointed: a snapshot every {every} iterations, each segment run again in "
            "the reverse sweep")
    return Node("while", node.inputs, {"stacked": 0, "note": note}, node.outputs, node.source,
                "forward", (outer_test, Block(carried, [inner], list(outs[:-1]))))


# ---- copies ---------------------------------------------------------------------------------
def replay(b, node, ct: dict):
    """Run the remat loop ``node`` again where the adjoint is being emitted: a copy of it (its
    values fresh, active where the originals are), whose outputs take over their cotangents;
    reverse mode differentiates the copy, so its residuals live only in this sweep."""
    subst = {}
    params = {k: v for k, v in node.params.items() if k != "remat"}
    params["note"] = "a checkpointed segment run again, its residuals kept for it only"
    twin = clone_node(b.graph, node, subst, params)
    b.active.update(new for old, new in subst.items() if old in b.active)
    for old, new in zip(node.outputs, twin.outputs):
        if ct.get(old) is not None:
            ct[new] = ct[old]
    b.target.append(twin)
    return twin


def clone_node(graph, node, subst: dict, params=None) -> Node:
    """A copy of ``node`` (and its blocks) defining fresh values, recorded in ``subst``."""
    inputs = tuple(_read(subst, x) for x in node.inputs)
    regions = tuple(clone_block(graph, block, subst) for block in node.regions)
    outputs = tuple(_fresh(graph, v, subst) for v in node.outputs)
    return Node(node.prim, inputs, dict(node.params) if params is None else params, outputs,
                node.source, node.phase, regions)


def clone_block(graph, block, subst: dict) -> Block:
    params = [_fresh(graph, p, subst) for p in block.params]
    nodes = [clone_node(graph, n, subst) for n in block.nodes]
    return Block(params, nodes, [_read(subst, x) for x in block.outputs])


def _fresh(graph, v: Value, subst: dict) -> Value:
    new = Value(v.aval, origin=v.origin)
    if v.name:
        graph.name_value(new, v.name)
    subst[v] = new
    return new


def _read(subst, x):
    return subst.get(x, x) if isinstance(x, Value) else x


def _substitute(block, subst):
    for n in block.nodes:
        n.inputs = tuple(_read(subst, x) for x in n.inputs)
        for region in n.regions:
            _substitute(region, subst)
    block.outputs = [_read(subst, x) for x in block.outputs]
