"""Constant folding and algebraic identities: literal-only scalar nodes fold, x*1, x+0, x**1 vanish.

One walk (:class:`.rewrite.Walker`, blocks before their owner) runs the rules of :data:`RULES`, in
order, on every node without regions. Each rule is ``rule(node, ctx)`` under one protocol
(:class:`.rewrite.Rewrite`): it does not apply, or rewrites the node in place (maybe with new
nodes before it), or gives the value the node's result is (the node goes, no later rule runs).
The rules live with what they are about: numbers in :mod:`.literals`, identities in
:mod:`.identities`, negations in :mod:`.negations`, entry updates (a store's adjoint) in
:mod:`.updates`. Invariant: a rewrite happens only when the replacement has exactly the node's
abstract value (shape, dtype and Python-ness), so no dtype or broadcast is lost; a block sees
the producers of the blocks around it, never a sibling's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Value
from . import identities, literals, negations, updates
from .rewrite import Walker, resolve, substitute, use_counts

# Every rule of a node runs before the value rules at the end (each of which ends the node's
# visit): a node rewritten in place may then fold, be an identity or cancel (x ** 0 is
# 0.0 + 1.0, then 1.0; -1 * -y is -(-y), then y; setitem(setitem(a, v), a[i]) is
# setitem(a, a[i]), then a). Rules not commented on match primitives their neighbours do not.
RULES = (
    literals.power_zero,                # before fold: a scalar x ** 0 becomes 0.0 + 1.0
    negations.minus_one_product,        # before double_negation: -1 * -y becomes -(-y)
    negations.subtraction,
    identities.doubling,                # before negated_factor and constant_products: a + a
                                        # becomes 2.0 * a, a product by a literal they fold
    negations.negated_factor,           # before constant_products: c1 * -(c2 * y) becomes
                                        # -c1 * (c2 * y), which it multiplies out
    negations.double_negation_in_products,  # before constant_products: -(-a * c1) becomes
                                        # a * c1, which it multiplies out for a = c2 * y
    literals.constant_products,
    literals.fold_broadcast_literal,
    literals.same_branches,
    negations.negation_outwards,
    literals.literal_operands,
    literals.fold_typed,
    updates.set_after_zeroing,          # before overwritten: the setitem it makes may
                                        # overwrite an earlier store of the same entries
    updates.overwritten,                # before rewrite_same_entries: setitem(a, a[i]) is a
    updates.read_back,
    updates.merge_scatters,
    updates.join_scatters,              # after merge_scatters, which may leave such a pair
    literals.fold,                      # the first value rule: a node of literals is the
                                        # literal it computes, whatever identity it also is
    identities.identity,
    updates.rewrite_same_entries,
    updates.written_entry,
    negations.double_negation,
    identities.double_transpose,
    identities.never_selected,
)


@dataclass(slots=True)
class _Scope:
    """The ``ctx`` of the rules in one block: ``producers`` (the nodes kept so far here and in
    the blocks around it, by value), ``local`` (this block's kept nodes) and the shared
    ``subst`` (a replaced result -> its value)."""

    subst: dict
    producers: dict = field(default_factory=dict)
    local: list = field(default_factory=list)


def simplify(graph):
    scope = _Scope({})
    _WALK.graph(graph, scope)
    return _drop_unread(substitute(graph, scope.subst))


def _visit(node, scope) -> list:
    """The nodes taking ``node``'s place: those the rules emitted, then ``node`` unless a rule
    gave its value."""
    subst = scope.subst
    node.inputs = tuple(resolve(subst, x) for x in node.inputs)
    if node.regions:
        for block in node.regions:
            block.outputs = [resolve(subst, x) for x in block.outputs]
        scope.local.append(node)
        return (node,)
    placed = []
    for rule in RULES:
        done = rule(node, scope)
        if done is None:
            continue
        for new in done.before:
            _place(new, scope, placed)
        if done.value is not None:
            _replace(node.out, done.value, subst)
            return placed
    _place(node, scope, placed)
    return placed


def _place(node, scope, placed):
    placed.append(node)
    scope.local.append(node)
    scope.producers.update((v, node) for v in node.outputs)


def _replace(out, value, subst):
    subst[out] = value
    if isinstance(value, Value) and value.name is None:
        value.name, value.origin = out.name, out.origin  # dx


def _enter(scope, node, block):
    """A block sees outer producers, never a sibling's."""
    return _Scope(scope.subst, dict(scope.producers))


_WALK = Walker(visit=_visit, enter=_enter)


def _drop_unread(graph):
    """Drop the top-level nodes without regions whose results nothing reads (what the rules
    above leave behind, such as the negation a rewritten ``sum(-x)`` no longer reads, and what
    a rule's zero left unread, such as the cotangent reaching a max whose rule gave zero): the
    passes before dead-code elimination (:mod:`.scales`) weigh every node, and an unread one
    would count as work to save. Nodes have no side effects; regions are left to :mod:`.dce`."""
    uses = use_counts(graph)
    kept = []
    for node in reversed(graph.nodes):
        if not node.regions and not any(uses.get(v, 0) for v in node.outputs) \
                and node.prim != "raise_if":  # a check runs for its effect
            for x in node.inputs:
                if isinstance(x, Value):
                    uses[x] = uses[x] - 1
            continue
        kept.append(node)
    graph.nodes = kept[::-1]
    return graph
