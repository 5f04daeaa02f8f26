"""Reverse mode: append to a forward graph the adjoint nodes that compute its gradient.

Driven entirely by :mod:`templates`: for each node in reverse order, for each active input, the
rule emits IR through the Builder. Invariants: only active values (on a path from a ``wrt``
parameter to the output) get cotangents; a cotangent is accumulated (an ``add``) only where a
value fans out; each wrt gradient has its parameter's shape, dtype and Python-ness.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir import Graph, Literal, Value
from ..ir.builder import Builder
from ..ir.primitives import PRIMS
from adcompiler import templates


def active_values(graph: Graph, wrt: list) -> set:
    """Values that depend on a wrt parameter and on which an output depends."""
    forward = set(wrt)
    for node in graph.nodes:
        if PRIMS[node.prim].differentiable and any(
                isinstance(x, Value) and x in forward for x in node.inputs):
            forward.update(v for v in node.outputs if v.aval.is_float)
    backward = {v for v in graph.outputs if isinstance(v, Value)}
    for node in reversed(graph.nodes):
        if any(v in backward for v in node.outputs):
            backward.update(x for x in node.inputs if isinstance(x, Value))
    return forward & backward


def add_adjoint(graph: Graph, wrt: list, seed) -> list:
    """Append adjoint nodes for d(output)/d(wrt) with output cotangent ``seed``; return gradients.

    ``seed`` is a Value (a cotangent parameter, for vjp) or a Python number (1.0, for grad).
    """
    (out,) = graph.outputs
    active = active_values(graph, wrt)
    b = Builder(graph)
    b.phase = "adjoint"
    ct = {out: seed}
    with b:
        for node in reversed(list(graph.nodes)):
            g = ct.get(node.outputs[0])
            if g is None or node.phase != "forward":
                continue
            b.source = node.source
            _backprop_node(b, node, g, active, ct)
        b.source = None
        return [_finish(b, p, ct.get(p)) for p in wrt]


def _backprop_node(b: Builder, node, g, active, ct):
    args = [x.value if isinstance(x, Literal) else x for x in node.inputs]
    for i, x in enumerate(node.inputs):
        if not (isinstance(x, Value) and x in active):
            continue
        if not templates.has_rule(node.prim, i):
            raise CompileError(f"no derivative rule for argument {i} of `{node.prim}` "
                               f"(in: {node.source})")
        c = templates.cotangent(b, node.prim, i, g, node.outputs[0], args, node.params)
        _accumulate(b, ct, x, c)


def _accumulate(b: Builder, ct: dict, x: Value, c):
    """ct[x] += c, naming the result after the user's variable (dl1 for l1)."""
    old = ct.get(x)
    if old is not None:
        c = b.emit("add", (old, c))
    if isinstance(c, Value) and c.name is None:
        b.graph.name_value(c, "d" + (x.name or "t"))
    ct[x] = c


def _finish(b: Builder, param: Value, g):
    """The gradient as the user gets it: the parameter's dtype, a float for a Python float."""
    if g is None:
        if param.aval.is_scalar:
            return Literal(0.0)
        return b.emit("zeros_like", (param,), name="d" + param.name)
    if param.aval.is_scalar:
        if isinstance(g, Value) and not g.aval.is_scalar:
            g = b.emit("to_float", (g,), name="d" + param.name)
        return g
    if isinstance(g, Value) and g.aval.dtype != param.aval.dtype:
        g = b.emit("astype", (g,), {"dtype": param.aval.dtype}, name="d" + param.name)
    if not isinstance(g, Value) or g.aval.shape != param.aval.shape:
        g = b.emit("broadcast_to", (g,), {"shape": param.aval.shape}, name="d" + param.name)
    return g
