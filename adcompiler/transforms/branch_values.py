"""Bind every value a branch computes and later code reads on both paths of its ``if``.

The adjoint of a ``cond`` replays the branch taken and reads the values that branch computed
(sound: it runs under the same predicate). Python accepts that code, but the frontend, reading
it back for ``grad(grad(f))``, takes only names bound on every path. This rewrite makes such a
value an output of its ``cond``, a zero (never read) on the other path, as
:func:`adcompiler.transforms.control._lift` does for loop residuals. Invariant: the graph
computes the same values; afterwards no value defined inside a ``cond``'s blocks is read
outside it. Used only for plain emission (source the compiler reads again).
"""

from __future__ import annotations

from ..ir import Block, Literal, Node, Value
from ..ir.primitives import PRIMS


def bind_on_every_path(graph):
    """Expose, innermost ``if`` first, each branch value read after its ``if``."""
    parents, readers = _index(graph)
    _expose_in(graph.nodes, parents, readers, graph)
    return graph


def _index(graph):
    """(parent of every node and block, readers of every value: nodes, blocks or the graph)."""
    parents, readers = {}, {}

    def visit(nodes, parent):
        for node in nodes:
            parents[node] = parent
            for x in node.inputs:
                if isinstance(x, Value):
                    readers.setdefault(x, []).append(node)
            for block in node.regions:
                parents[block] = node
                visit(block.nodes, block)
                for x in block.outputs:
                    if isinstance(x, Value):
                        readers.setdefault(x, []).append(block)
    visit(graph.nodes, None)
    for x in graph.outputs:
        if isinstance(x, Value):
            readers.setdefault(x, []).append(graph)
    return parents, readers


def _expose_in(nodes, parents, readers, graph):
    for node in list(nodes):
        for block in node.regions:
            _expose_in(block.nodes, parents, readers, graph)
        if node.prim == "cond":
            _expose_cond(node, parents, readers, graph)


def _inside(reader, cond, parents) -> bool:
    while reader is not None and reader is not cond:
        reader = parents.get(reader)
    return reader is cond


def _expose_cond(cond, parents, readers, graph):
    for b, block in enumerate(cond.regions):
        for node in list(block.nodes):
            for v in node.outputs:
                outside = [r for r in readers.get(v, ()) if not _inside(r, cond, parents)]
                if outside:
                    _add_output(cond, b, v, outside, readers, graph)


def _add_output(cond, b, v, outside, readers, graph):
    """``cond`` yields ``v`` from branch ``b`` (a zero from the other); ``outside`` reads it."""
    out = graph.name_value(Value(v.aval, origin=v.origin), v.name or "t")
    cond.outputs = cond.outputs + (out,)
    cond.regions[b].outputs.append(v)
    other = cond.regions[1 - b]
    other.outputs.append(_placeholder(other, v))
    readers[v] = [r for r in readers[v] if r not in outside] + [cond.regions[b]]
    readers[out] = outside
    for r in outside:
        _substitute(r, v, out)


def _substitute(reader, old, new):
    if isinstance(reader, Node):
        reader.inputs = tuple(new if x is old else x for x in reader.inputs)
    else:  # a Block or the Graph
        reader.outputs = [new if x is old else x for x in reader.outputs]


def _placeholder(block: Block, like: Value):
    """A zero of ``like``'s aval, computed in ``block``."""
    aval = like.aval
    if aval.is_scalar:
        return Literal({"int": 0, "float": 0.0, "bool": False}[aval.kind])
    prim = "empty_list" if aval.kind == "list" and "empty_list" in PRIMS else "zeros"
    zeros = Value(aval)
    block.nodes.append(Node(prim, (), {"shape": aval.shape, "dtype": aval.dtype}, (zeros,),
                            None, "forward"))
    return zeros
