"""Elementwise fusion: group producer-consumer chains of elementwise nodes into ``fused`` nodes.

A ``fused`` node owns one block (its ``expr``) whose params stand for the node's inputs and
whose nodes are the chain; it yields the chain's result. Chains span the forward and adjoint
parts alike (``dt = dh * (1 - h * h)`` is one fused node). Invariants: a value is fused into its
consumer only if that consumer is its only reader, both are elementwise array nodes of the same
block with a known shape of at least ``MIN_SIZE`` elements (below that, NumPy's per-call
overhead dominates and fusion cannot pay; ahead of time every size that can vary counts as
large: :mod:`adcompiler.ir.sizing`); the fused node computes exactly what the chain did.
"""

from __future__ import annotations

from ..ir import Block, Node, Value, sizing
from .rewrite import Walker, use_counts
from ..ir.primitives import PRIMS

MIN_SIZE = 4096


def fuse_elementwise(graph):
    """Every scope's chains grouped, a block's before its owner's (:func:`_fuse_nodes`)."""
    return Walker(leave=_fuse_nodes).graph(graph, (use_counts(graph), graph))


def fusible(node) -> bool:
    if node.regions or len(node.outputs) != 1 or node.params:
        return False
    if PRIMS[node.prim].family != "elementwise":
        return False
    aval = node.outputs[0].aval
    return (aval.kind == "array" and aval.shape is not None
            and sizing.elements(aval.shape) >= MIN_SIZE)


def _fuse_nodes(nodes, scope):
    """One scope's nodes with each chain replaced by its fused node."""
    uses, graph = scope
    group_of = {}   # node -> the list of nodes of its group (shared list object)
    producer = {n.outputs[0]: n for n in nodes if fusible(n)}
    for node in nodes:
        if not fusible(node):
            continue
        group = [node]
        for x in node.inputs:
            p = producer.get(x)
            if p is not None and uses.get(x) == 1 and p in group_of:
                group = group_of[p] + [n for n in group if n not in group_of[p]]
        for n in group:
            group_of[n] = group
        # the producers' groups are merged into this one
    out, emitted = [], set()
    for node in nodes:
        group = group_of.get(node)
        if group is None or len(group) == 1:
            out.append(node)
            continue
        if node is group[-1] and id(group) not in emitted:
            emitted.add(id(group))
            out.append(_make_fused(group, graph))
    return out


def _make_fused(group, graph) -> Node:
    """A fused node computing ``group`` (in order); its inputs are the values read from outside."""
    inside = {n.outputs[0] for n in group}
    inputs, params = [], {}
    for n in group:
        for x in n.inputs:
            if isinstance(x, Value) and x not in inside and x not in params:
                params[x] = Value(x.aval)
                inputs.append(x)
    for n in group:
        n.inputs = tuple(params.get(x, x) if isinstance(x, Value) else x for x in n.inputs)
    root = group[-1]
    result = root.outputs[0]
    inner = Value(result.aval)
    root.outputs = (inner,)
    block = Block(params=[params[x] for x in inputs], nodes=list(group), outputs=[inner])
    return Node("fused", tuple(inputs), {}, (result,), root.source, root.phase, (block,))
