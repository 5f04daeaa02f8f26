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
    complete_after = _first_uses(graph, wrt)
    b = Builder(graph)
    b.phase = "adjoint"
    b.temp_cotangents = {}
    ct = {out: seed}
    grads = {}
    with b:
        for node in reversed(list(graph.nodes)):
            g = ct.get(node.outputs[0])
            if g is not None and node.phase == "forward":
                b.source = node.source
                _backprop_node(b, node, g, active, ct)
            # A parameter's gradient is complete once its first use has been processed:
            # finish it there, so its conversion sits in the same "grad of" block.
            for p in complete_after.get(node, ()):
                grads[p] = _finish(b, p, ct.get(p))
        b.source = None
        return [grads[p] if p in grads else _finish(b, p, ct.get(p)) for p in wrt]


def _first_uses(graph: Graph, wrt: list) -> dict:
    """node -> the wrt parameters whose first reader it is."""
    first = {}
    for node in graph.nodes:
        for x in node.inputs:
            if isinstance(x, Value) and x in wrt and x not in first:
                first[x] = node
    out = {}
    for p in wrt:
        if p in first:
            out.setdefault(first[p], []).append(p)
    return out


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
    """ct[x] += c, naming the result after the user's variable (dl1 for l1; dt1, dt2... for
    the cotangents of unnamed temporaries, so two temporaries never share a name)."""
    old = ct.get(x)
    if old is not None:
        c = b.emit("add", (old, c))
    if isinstance(c, Value) and c.name is None:
        b.graph.name_value(c, "d" + x.name if x.name else _temp_base(b, x))
    ct[x] = c


def _temp_base(b: Builder, x: Value) -> str:
    names = b.temp_cotangents
    if x not in names:
        k = len(names) + 1
        while b.graph.unique_name(f"dt{k}") != f"dt{k}":
            k += 1
        names[x] = f"dt{k}"
    return names[x]


def _finish(b: Builder, param: Value, g):
    """The gradient as the user gets it: the parameter's dtype, a float for a Python float."""
    if g is None:
        if param.aval.is_scalar:
            return Literal(0.0)
        return b.emit("zeros_like", (param,), name="d" + param.name)
    if param.aval.is_scalar:
        if isinstance(g, Value) and not g.aval.is_scalar:
            g = _wrap(b, g, "to_float", {}, param)
        return g
    if isinstance(g, Value) and g.aval.dtype != param.aval.dtype:
        g = _wrap(b, g, "astype", {"dtype": param.aval.dtype}, param)
    if not isinstance(g, Value) or g.aval.shape != param.aval.shape:
        g = _wrap(b, g, "broadcast_to", {"shape": param.aval.shape}, param)
    return g


def _wrap(b: Builder, g, prim, params, param: Value):
    """``prim(g)``, taking over the gradient's name ``d<param>`` when ``g`` holds it."""
    out = b.emit(prim, (g,), params)
    if isinstance(g, Value) and g.name and g.name.startswith("d" + param.name):
        return b.graph.take_name(out, g)
    return b.graph.name_value(out, "d" + param.name)
