"""Common-subexpression elimination: a node equal to an earlier one (prim, inputs, params) goes.

Invariant: every primitive is pure, so two nodes with the same key compute the same value. Scoped
by regions: a block may reuse what was computed before it, never what a sibling block computed.
Nodes owning regions are never merged, nor two creations of an array (``np.zeros(3)`` twice,
two ``x.copy()``): each is a distinct array the emitter may update in place, and one name for
both would turn the first such update into a copy.
"""

from __future__ import annotations

from ..ir import Literal, Value
from .rewrite import Walker, resolve, substitute


_CREATIONS = {"zeros", "ones", "full", "zeros_like", "ones_like", "copy", "astype",
              "setitem", "index_add", "scatter_add"}  # updates make arrays too: a branch's
# `dy[i] = 0.0` merged into the same update outside the `if` (left dead by simplify) would run
# on both paths, on a copy where the other path still reads the array
_COMMUTATIVE = {"add", "multiply", "maximum", "minimum", "equal", "not_equal", "logical_and",
                "logical_or"}


def _key(node):
    inputs = tuple(("lit", type(x.value).__name__, x.value) if isinstance(x, Literal)
                   else ("val", id(x)) for x in node.inputs)
    if node.prim in _COMMUTATIVE:  # x * 3.0 and 3.0 * x are one value
        inputs = tuple(sorted(inputs, key=repr))
    return node.prim, inputs, repr(sorted(node.params.items()))


def _creates_array(node) -> bool:
    out = node.outputs[0].aval
    return node.prim in _CREATIONS and out.kind == "array" and out.ndim != 0


def eliminate_common_subexpressions(graph):
    subst = {}
    _WALK.graph(graph, ({}, subst))
    return substitute(graph, subst)


def _visit(node, scope):
    """``node`` kept, or merged into the earlier node of its key (its outputs substituted)."""
    seen, subst = scope
    node.inputs = tuple(resolve(subst, x) for x in node.inputs)
    if node.regions or not node.outputs or _creates_array(node):  # (a raise_if check)
        for block in node.regions:
            block.outputs = [resolve(subst, x) for x in block.outputs]
        _one_stack_per_value(node, subst)
        return (node,)
    key = _key(node)
    if key in seen:
        for old, new in zip(node.outputs, seen[key].outputs):
            subst[old] = new
        return ()
    seen[key] = node
    return (node,)


def _enter(scope, node, block):
    """A block may reuse what was computed before it, never what a sibling block computed."""
    seen, subst = scope
    return dict(seen), subst


_WALK = Walker(visit=_visit, enter=_enter)


def _one_stack_per_value(node, subst):
    """A loop stacking one value twice (two reads the adjoint made of it, merged above) keeps
    one stack: the other's readers read the first (dead-code elimination drops the second)."""
    m = node.params.get("stacked", 0) if node.prim in ("loop", "while") else 0
    if not m:
        return
    first = {}
    body = node.regions[-1]
    for out, kept in zip(node.outputs[-m:], body.outputs[-m:]):
        if not isinstance(kept, Value):
            continue
        if kept in first and first[kept].aval == out.aval:
            subst[out] = first[kept]
        else:
            first.setdefault(kept, out)
