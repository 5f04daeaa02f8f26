"""Shared by the passes: the one walk over nested scopes (:class:`Walker`), the protocol of
:mod:`.simplify`'s rules (:class:`Rewrite`), value substitution (uses of values replaced by
other values or literals) and use counts.

A scope is the graph's node list or a block's. :class:`Walker` visits every scope of a graph,
each nested scope inside the visit of the scope that owns it, and lets a pass replace each node
and each scope's whole node list; the pass's hooks carry whatever state it scopes (what CSE has
seen, what simplify knows of producers, what DCE finds live) into the nested blocks.

Invariants: after :func:`substitute`, no node input (in any region), no block output and no
graph output refers to a replaced value. A :class:`Walker` visits each node of the scopes it
walks exactly once (not the nodes a hook returns), and replaces no list when ``write`` is off.
"""

from __future__ import annotations

from typing import Callable

from ..ir import Value, walk


def _keep(node, scope):
    return (node,)


def _same_scope(scope, node, block):
    return scope


def _as_is(nodes, scope):
    return nodes


class Walker:
    """How a pass walks a graph's scopes and rewrites them, as three hooks.

    - ``visit(node, scope)`` returns the nodes that take ``node``'s place, in program order
      (``(node,)`` keeps it, ``()`` drops it).
    - ``enter(scope, node, block)`` returns the scope ``block`` (one of ``node``'s regions) is
      walked in: ``scope`` itself by default; a copy where what a block learns must not leak
      to its siblings or past its owner (CSE's available expressions, simplify's producers).
    - ``leave(nodes, scope)`` rewrites a scope's whole new node list once all of it was
      visited (fusion's grouping of chains, the sinking of updates).

    Forwards (program order), a node's blocks are walked, in order, before the node is visited:
    a region node's results come from its blocks, so the pass sees them rewritten (inner loops
    hoisted first, a body's values substituted before the loop's outputs are read). Backwards
    (``backwards``: reverse program order, for liveness), a node is visited first, since what
    is read after it decides what its blocks must compute, then the blocks of the nodes its
    visit kept, in order. ``write`` off: an analysis, or a trial run of a rewrite (DCE's
    fixpoint over carried values), which replaces no node list.
    """

    __slots__ = ("visit", "enter", "leave", "backwards", "write")   # a plain class: no
                                                                     # dataclass at import

    def __init__(self, visit: Callable = _keep, enter: Callable = _same_scope,
                 leave: Callable = _as_is, backwards: bool = False, write: bool = True):
        self.visit, self.enter, self.leave = visit, enter, leave
        self.backwards, self.write = backwards, write

    def graph(self, graph, scope=None):
        """Walk ``graph``'s scope (and so every scope nested in it) in ``scope``."""
        nodes = self.nodes(graph.nodes, scope)
        if self.write:
            graph.nodes = nodes
        return graph

    def nodes(self, nodes, scope=None) -> list:
        """The new node list of one scope, every scope nested in it rewritten on the way."""
        if self.backwards:
            return self._backwards(nodes, scope)
        out, visit = [], self.visit
        for node in nodes:
            if node.regions:
                self._blocks(node, scope)
            out.extend(visit(node, scope))
        return self.leave(out, scope)

    def _backwards(self, nodes, scope) -> list:
        out, visit = [], self.visit
        for node in reversed(nodes):
            for kept in reversed(visit(node, scope)):
                if kept.regions:
                    self._blocks(kept, scope)
                out.append(kept)
        out.reverse()
        return self.leave(out, scope)

    def _blocks(self, node, scope):
        for block in node.regions:
            nodes = self.nodes(block.nodes, self.enter(scope, node, block))
            if self.write:
                block.nodes = nodes


class Rewrite:
    """What a rule of :mod:`.simplify` did to its node. Every rule is ``rule(node, ctx)`` and
    returns None where it does not apply (the node unchanged), else a ``Rewrite``:

    - ``Rewrite()`` (:data:`IN_PLACE`): the node was rewritten in place; the next rules see it
      as it now is;
    - ``before``: the node was rewritten in place and reads these new nodes, emitted before it
      (in order);
    - ``value``: the node's result is this value or literal; the node goes and no later rule
      runs.

    ``ctx.producers`` maps each value to the node defining it, among the nodes kept so far in
    the node's block and the blocks around it; ``ctx.local`` lists the block's own kept nodes.
    """

    __slots__ = ("before", "value")

    def __init__(self, before: tuple = (), value: object = None):
        self.before, self.value = before, value


IN_PLACE = Rewrite()


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
