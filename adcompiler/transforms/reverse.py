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
from adcompiler import templates


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
    """Emit the adjoint of ``nodes`` (in reverse), updating the cotangents ``ct`` in place."""
    from . import control
    for node in reversed(nodes):
        if node.phase == "forward" and any(ct.get(v) is not None for v in node.outputs):
            b.source = node.source
            if node.prim == "cond":
                control.backprop_cond(b, node, ct)
            elif node.prim in ("loop", "while"):
                control.backprop_loop(b, node, ct)
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
    if node.prim == "stop_gradient":  # by definition no derivative flows through it (its
        return                        # result is inactive; the function's own result may be it)
    args = [x.value if isinstance(x, Literal) else x for x in node.inputs]
    # setitem: gather the overwritten entries' cotangent before zeroing them, so the zeroing
    # can be done in place
    order = range(len(args) - 1, -1, -1) if node.prim == "setitem" else range(len(args))
    for i in order:
        x = node.inputs[i]
        if not (isinstance(x, Value) and x in b.active):
            continue
        if not templates.has_rule(node.prim, i):
            raise CompileError(f"no derivative rule for argument {i} of `{node.prim}` "
                               f"(in: {node.source})")
        c = templates.cotangent(b, node.prim, i, g, node.outputs[0], args, node.params)
        accumulate(b, ct, x, c)


def accumulate(b: Builder, ct: dict, x: Value, c):
    """ct[x] += c, naming the result after the user's variable (dl1 for l1; dt1, dt2... for
    the cotangents of unnamed temporaries, so two temporaries never share a name)."""
    old = ct.get(x)
    if old is not None and _fresh_scatter(b, c):
        scatter = b.target.pop()  # old + scatter(g) is old with g added at the index
        c = b.emit("index_add", (old, *scatter.inputs), {"index": scatter.params["index"]})
    elif old is not None and _fresh_row(b, c):
        row = b.target.pop()  # old + (zeros with g at row k) is old with g added at row k
        b.target.pop()
        c = b.emit("index_add", (old, *row.inputs[1:]), {"index": row.params["index"]})
    elif old is not None:
        c = b.emit("add", (old, c))
    if isinstance(c, Value) and c.name is None:
        name_cotangent(b, c, x)
    ct[x] = c


def _fresh_scatter(b: Builder, c) -> bool:
    """Whether ``c`` is the scatter_add just emitted (nothing else can have read it yet)."""
    last = b.target[-1] if b.target else None
    return (last is not None and last.prim == "scatter_add" and last.outputs[0] is c
            and c.name is None)  # a named one is already some value's cotangent


def _fresh_row(b: Builder, c) -> bool:
    """Whether ``c`` is a list's cotangent just emitted for one read ``xs[k]``:
    ``setitem(zeros_like(xs), g, k)``, which nothing else can have read yet."""
    if len(b.target) < 2 or c is None or getattr(c, "name", 1) is not None:
        return False
    zeros, row = b.target[-2:]
    return (row.prim == "setitem" and row.outputs[0] is c and zeros.prim == "zeros_like"
            and row.inputs[0] is zeros.outputs[0] and c.aval.kind == "list")


def name_cotangent(b: Builder, c: Value, x: Value) -> Value:
    """Name ``c``, the cotangent of ``x``: ``d<x's name>``, and ``d<the user's variable>`` as
    its origin, which the emitter keeps whole (``dw_1`` for a parameter ``w_1``)."""
    b.graph.name_value(c, cotangent_name(b, x))
    if x.origin:
        c.origin = "d" + x.origin
    return c


def cotangent_name(b: Builder, x: Value) -> str:
    if x.name:
        return "d" + x.name
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


def typed_number(b: Builder, value, aval):
    """The number ``value`` as a cotangent of a float array of ``aval``'s dtype, to be
    broadcast: the Literal itself for float64 (NumPy's default), else ``np.float32(value)``
    (a float64 seed would carry the adjoint of a float32 program into float64)."""
    value = Literal(float(value))
    if aval.kind != "array" or aval.dtype == "float64" or not aval.is_float:
        return value
    return b.emit("astype", (value,), {"dtype": aval.dtype})
