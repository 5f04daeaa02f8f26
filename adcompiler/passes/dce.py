"""Dead-code elimination: drop every node none of whose outputs is read, in every region.

Invariant: primitives have no side effects, so an unread node can always go, except a
``raise_if`` check (and a region holding one), which stays. A region node stays
while any value defined inside it is read. A ``cond`` whose outputs are partly unread loses those
outputs (and the matching block yields); a loop loses its unread stacked outputs, and the carried
values that nothing needs: a carried value whose result is unread after the loop and whose body
param (and while-test param) feeds only its own next value, or other such dead carried values
(``total = total + z`` in a gradient that never reads ``total``), goes with its initial value,
its params, its next value and the code computing it. Carried values the next iteration reads
for anything live stay.
"""

from __future__ import annotations

from ..ir import Value, walk
from .rewrite import Walker


def eliminate_dead_code(graph):
    live = {v for v in graph.outputs if isinstance(v, Value)}
    _SWEEP.graph(graph, _Liveness(live))
    graph.consts = {v: a for v, a in graph.consts.items() if v in live}
    return graph


class _Liveness:
    """The scope of the backwards sweep: the values read later (``live``, shared by every
    block), each region node's kept output positions (None: all of them), and ``dry``: a trial
    sweep (for the carried values' fixpoint), which marks what the sweep would, changing nothing."""

    __slots__ = ("live", "dry", "keep")

    def __init__(self, live, dry=False, keep=None):
        self.live, self.dry, self.keep = live, dry, keep or {}


def _mark(live, xs):
    live.update(x for x in xs if isinstance(x, Value))


def _visit(node, scope):
    """Drop ``node`` if nothing reads it; else prune its unread outputs (a trial only notes
    them) and mark what it reads from outside its blocks (its blocks' yields are marked on
    entering them, :func:`_enter`)."""
    live = scope.live
    if not any(v in live for v in node.outputs) and not _inner_live(node, live):
        return ()
    keep = None
    if node.regions:
        keep = scope.keep[node] if node in scope.keep else _kept(node, live)
        if not scope.dry and keep is not None:
            _prune(node, keep)
            keep = None
        scope.keep[node] = keep
    loop = node.prim in ("loop", "while")
    if loop:  # a kept carried value stays: the next iteration reads it
        _mark(live, [v for i, v in enumerate(node.outputs[:_carried(node)]) if _in(i, keep)])
    inputs = node.inputs
    if loop and keep is not None:
        first = 1 if node.prim == "loop" else 0  # a for loop's first input is its count
        inputs = inputs[:first] + tuple(x for i, x in enumerate(inputs[first:]) if i in keep)
    _mark(live, inputs)  # (before the blocks: no block defines what its owner reads)
    return (node,)


def _enter(scope, node, block):
    """Mark what ``block`` yields for the kept outputs as live (a while's test: its pred)."""
    yields = block.outputs
    if not (node.prim == "while" and block is node.regions[0]):
        keep = scope.keep[node]
        yields = [x for i, x in enumerate(yields) if _in(i, keep)]
    _mark(scope.live, yields)
    return scope


_SWEEP = Walker(visit=_visit, enter=_enter, backwards=True)
_TRIAL = Walker(visit=_visit, enter=_enter, backwards=True, write=False)


def _kept(node, live):
    """The output positions of a region node that stay (None: all of them)."""
    n = len(node.outputs)
    if node.prim == "cond":
        keep = {i for i in range(n) if node.outputs[i] in live}
    elif node.prim in ("loop", "while"):
        carried = _carried(node)
        stacked = {i for i in range(carried, n) if node.outputs[i] in live}
        keep = (set(range(carried)) - _dead_carried(node, live)) | stacked
    else:
        return None
    return None if len(keep) == n else keep


def _in(i, keep) -> bool:
    return keep is None or i in keep


def _carried(node) -> int:
    return len(node.outputs) - node.params.get("stacked", 0)


def _carried_params(node, i) -> list:
    """The block params holding carried value ``i``: the body's (and a while test's)."""
    if node.prim == "loop":
        return [node.regions[0].params[i + 1]]
    return [block.params[i] for block in node.regions]


def _dead_carried(node, live) -> set:
    """The carried positions of a loop that nothing live needs: the result is unread and the
    params feed only dead values. A fixpoint: start from every unread result, and revive those
    whose params a dry sweep of the kept ones finds read."""
    carried = _carried(node)
    dead = {i for i in range(carried) if node.outputs[i] not in live}
    stacked = {i for i in range(carried, len(node.outputs)) if node.outputs[i] in live}
    while dead:
        trial = set(live)
        keep = {node: (set(range(carried)) - dead) | stacked}
        _TRIAL.nodes([node], _Liveness(trial, dry=True, keep=keep))
        revived = {i for i in dead if any(p in trial for p in _carried_params(node, i))}
        if not revived:
            break
        dead -= revived
    return dead


def _inner_live(node, live) -> bool:
    """Whether code after a region node reads a value computed inside it (the adjoint of a
    cond reads values of the branch it replays)."""
    return any(v in live for n in walk([node]) for v in n.outputs) or any(
        p in live for n in walk([node]) for blk in n.regions for p in blk.params) or any(
        n.prim == "raise_if" for n in walk([node]))  # a check runs for its effect


def _prune(node, keep):
    """Keep only the outputs at positions ``keep``, with their block yields, and for a loop's
    carried values their initial values and block params."""
    dead = set(range(len(node.outputs))) - keep
    if node.prim in ("loop", "while"):
        carried = _carried(node)
        gone = sorted(i for i in dead if i < carried)
        params = {id(p) for i in gone for p in _carried_params(node, i)}
        for block in node.regions:
            block.params = [p for p in block.params if id(p) not in params]
        first = 1 if node.prim == "loop" else 0
        node.inputs = node.inputs[:first] + tuple(
            x for i, x in enumerate(node.inputs[first:]) if i not in dead)
        node.params = {**node.params, "stacked": node.params.get("stacked", 0)
                       - len(dead - set(gone))}
    node.outputs = tuple(v for i, v in enumerate(node.outputs) if i not in dead)
    for block in node.regions[-1:] if node.prim == "while" else node.regions:
        # a block yields one value per node output, in order (a while's test yields its pred)
        block.outputs = [x for i, x in enumerate(block.outputs) if i not in dead]
