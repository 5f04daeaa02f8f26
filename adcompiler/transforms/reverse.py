"""Reverse mode: append to a forward graph the adjoint nodes that compute its gradient.

Driven entirely by :mod:`templates`: for each node in reverse order, for each active input, the
rule emits IR through the Builder; control-flow nodes are handled in :mod:`.control`.
Invariants: only active values (on a path from a ``wrt`` parameter to the output) get
cotangents; a cotangent is accumulated (an ``add``) only where a value fans out; each wrt
gradient has its parameter's shape, dtype and Python-ness.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir import Graph, Literal, Value, walk
from ..ir.builder import Builder
from ..ir.primitives import PRIMS
from ..templates import cotangent, has_rule

from . import control
from .checkpointing import replay
from .cotangents import accumulate, name_cotangent, typed_number


def active_values(graph: Graph, wrt: list, flows=frozenset()) -> set:
    """Values that depend on a wrt parameter and on which an output depends. ``flows`` names
    non-differentiable primitives that still carry derivatives (forward mode's list reads)."""
    forward = set(wrt)
    size = -1
    while size != len(forward):  # until no loop-carried value becomes active on the way round
        size = len(forward)
        for node in walk(graph.nodes):
            _forward_activity(node, forward, flows)
    backward = {v for v in graph.outputs if isinstance(v, Value)}
    _backward_needs(graph.nodes, backward)
    return forward & backward


def _forward_activity(node, forward, flows):
    reads = [x for n in walk([node]) for x in n.inputs]
    reads += [x for n in walk([node]) for blk in n.regions for x in blk.outputs]
    differentiable = PRIMS[node.prim].differentiable or node.prim in flows
    if differentiable and any(isinstance(x, Value) and x in forward for x in reads):
        forward.update(v for v in node.outputs if v.aval.is_float)
    if node.prim in ("loop", "while"):  # carried values are active where their initial or
        body = node.regions[-1]           # next value is
        params = body.params[1:] if node.prim == "loop" else body.params
        inits = node.inputs[1:] if node.prim == "loop" else node.inputs
        for p, init, nxt in zip(params, inits, body.outputs):
            if init in forward or nxt in forward:
                forward.add(p)


def _backward_needs(nodes, needed):
    for node in reversed(nodes):
        if any(v in needed for v in node.outputs):
            needed.update(x for x in node.inputs if isinstance(x, Value))
            for block in node.regions:
                needed.update(block.params)
                needed.update(x for x in block.outputs if isinstance(x, Value))
                _backward_needs(block.nodes, needed)
        elif node.prim == "cond":
            # a branch's values may be read after the if by code under the same test (a
            # gradient's adjoint reads its residual ``v_3 = tanh(v_2)`` in its own ``if``)
            # even where the if yields nothing anyone needs: what they read is needed too
            for block in node.regions:
                _backward_needs(block.nodes, needed)


def add_adjoint(graph: Graph, wrt: list, seed) -> list:
    """Append adjoint nodes for d(output)/d(wrt) with output cotangent ``seed``; return gradients.

    ``seed`` is a Value (a cotangent parameter, for vjp) or a Python number (1.0, for grad).
    """
    (out,) = graph.outputs
    b = Builder(graph)
    b.phase = "adjoint"
    b.temp_cotangents = {}
    b.active = active_values(graph, wrt)
    ct = {out: seed}
    grads = {}
    complete_after = _first_uses(graph, wrt)

    def finish_params(node):
        # A parameter's gradient is complete once its first use has been processed:
        # finish it there, so its conversion sits in the same "grad of" block.
        for p in complete_after.get(node, ()):
            grads[p] = _finish(b, p, ct.get(p))

    with b:
        backprop(b, list(graph.nodes), ct, after_node=finish_params)
        b.source = None
        return [grads[p] if p in grads else _finish(b, p, ct.get(p)) for p in wrt]


def backprop(b: Builder, nodes, ct: dict, after_node=None):
    """Emit the adjoint of ``nodes`` (in reverse), updating the cotangents ``ct`` in place; the
    adjoint of a cond or loop backpropagates through its blocks by calling this again."""
    for node in reversed(nodes):
        if node.phase == "forward" and any(ct.get(v) is not None for v in node.outputs):
            b.source = node.source
            if node.prim == "cond":
                control.backprop_cond(b, node, ct, backprop)
            elif node.prim in ("loop", "while"):  # a checkpointed segment: run again here
                twin = replay(b, node, ct) if node.params.get("remat") else node
                control.backprop_loop(b, twin, ct, backprop)
            else:
                _backprop_node(b, node, ct[node.outputs[0]], ct)
        if after_node is not None:
            after_node(node)


def _first_uses(graph: Graph, wrt: list) -> dict:
    """Top-level node -> the wrt parameters it is the first to read (inside it, for regions)."""
    first = {}
    for node in graph.nodes:
        reads = [x for n in walk([node]) for x in n.inputs]
        reads += [x for n in walk([node]) for blk in n.regions for x in blk.outputs]
        for x in reads:
            if isinstance(x, Value) and x in wrt and x not in first:
                first[x] = node
    out = {}
    for p in wrt:
        if p in first:
            out.setdefault(first[p], []).append(p)
    return out


def _backprop_node(b: Builder, node, g, ct):
    if not PRIMS[node.prim].differentiable:  # stop_gradient, floor, sign...: by definition no
        return   # derivative flows through (the result is inactive; the function's own may be it)
    args = [x.value if isinstance(x, Literal) else x for x in node.inputs]
    # setitem: gather the overwritten entries' cotangent before zeroing them, so the zeroing
    # can be done in place
    order = range(len(args) - 1, -1, -1) if node.prim == "setitem" else range(len(args))
    for i in order:
        x = node.inputs[i]
        if not (isinstance(x, Value) and x in b.active):
            continue
        if not has_rule(node.prim, i):
            raise CompileError(f"no derivative rule for argument {i} of `{node.prim}` "
                               f"(in: {node.source})")
        c = cotangent(b, node.prim, i, g, node.outputs[0], args, node.params)
        if c is not None:   # None: no share for x (an idiom gave its part to another argument)
            accumulate(b, ct, x, c)


def _finish(b: Builder, param: Value, g):
    """The gradient as the user gets it: the parameter's dtype, a float for a Python float."""
    if g is None:
        if param.aval.is_scalar:
            return Literal(0.0)
        return b.emit("zeros_like", (param,), name="d" + param.name)
    if not isinstance(g, (Value, Literal)):
        g = Literal(float(g))  # a constant gradient (the seed flowing straight through)
    if param.aval.is_scalar:
        if isinstance(g, Value) and not g.aval.is_scalar:
            g = _wrap(b, g, "to_float", {}, param)
        return g
    if isinstance(g, Value) and g.aval.dtype != param.aval.dtype:
        g = _wrap(b, g, "astype", {"dtype": param.aval.dtype}, param)
    if not isinstance(g, Value):  # a number: spread with the parameter's dtype
        g = typed_number(b, g.value, param.aval)
    if g.aval.shape != param.aval.shape:
        g = _wrap(b, g, "broadcast_to", {"shape": param.aval.shape}, param)
    if param.aval.shape == ():  # NumPy gives scalars for 0-d results; the input was an array
        g = _wrap(b, g, "asarray", {}, param)
    return g


def _wrap(b: Builder, g, prim, params, param: Value):
    """``prim(g)``, taking over the gradient's name ``d<param>`` when ``g`` holds it."""
    out = b.emit(prim, (g,), params)
    if isinstance(g, Value) and g.name and g.name.startswith("d" + param.name):
        return b.graph.take_name(out, g)
    return name_cotangent(b, out, param)
