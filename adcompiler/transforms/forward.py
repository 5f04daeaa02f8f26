"""Forward (tangent) mode: after each node of a graph, insert the nodes computing its tangent.

Driven by the tangent rules in :mod:`templates` (one beside each adjoint rule), as
:mod:`.reverse` is by the adjoint rules. The tangent of ``l1`` is named ``l1_dot``. Invariants:
only active values (on a path from a ``wrt`` parameter to an output) get tangents; a tangent has
its primal's abstract value (shape, dtype, Python-ness); a ``cond`` computes the tangents of its
outputs inside each branch and returns them as extra outputs; a ``loop`` or ``while`` carries the
tangents of its active carried values as extra carried values (inserted before the stacked
ones) and stacks the tangents of its active stacked values after them. Works on any verified
graph, including one that already holds an adjoint (forward-over-reverse: Hessians).
"""

from __future__ import annotations

import contextlib

from ..errors import CompileError
from ..ir import Literal, Value
from ..ir.builder import Builder
from ..ir.primitives import MATH_NAMES, PRIMS
from ..templates import has_jvp, tangent
from .reverse import active_values

# Not differentiable to reverse mode (no adjoint rule), but linear in their first input: a
# while loop's residual list read back in its adjoint. Forward-over-reverse pushes through them.
LINEAR_READS = {"list_get": lambda b, dx, ans, stack, k: b.emit("list_get", (dx, k))}


class ForwardModeError(CompileError):
    """Forward mode met a call it has no tangent rule for: a custom_vjp function, or the ``fwd``
    or ``bwd`` that a gradient graph calls for it (``hessian`` then differentiates the gradient's
    own source instead, :mod:`adcompiler.api.higher`)."""


class TangentBuilder(Builder):
    """The builder for tangent code: phase ``"tangent"``; derived code on Python floats stays
    in ``math``, as adjoint code does."""

    def __init__(self, graph):
        super().__init__(graph)
        self.phase = "tangent"

    def emit(self, prim, inputs, params=None, name=None):
        params = dict(params or {})
        if params.get("keepdims") is False:  # the frontend's spelling: absent unless True
            del params["keepdims"]
        if (prim in MATH_NAMES and not params
                and all(self.atom(x).aval.is_scalar for x in inputs)):
            params["py"] = MATH_NAMES[prim]
        return super().emit(prim, inputs, params, name)


def _loop_parts(node):
    """(body, carried params, initial values) of a ``loop`` or ``while`` node."""
    body = node.regions[-1]
    if node.prim == "loop":
        return body, body.params[1:], list(node.inputs[1:])
    return body, list(body.params), list(node.inputs)


def add_tangents(graph, wrt: list, tangents: list) -> list:
    """Insert tangent nodes for the tangents ``tangents`` of the ``wrt`` parameters; return the
    tangent of each graph output (a zero where an output does not depend on ``wrt``)."""
    b = TangentBuilder(graph)
    b.active = active_values(graph, wrt, flows=LINEAR_READS)
    dot = dict(zip(wrt, tangents))
    with b:
        graph.nodes = b.target = push(b, graph.nodes, dot)
        return [_conform(b, dot.get(out), out) if isinstance(out, Value) else Literal(0.0)
                for out in graph.outputs]


def push(b, nodes, dot) -> list:
    """``nodes`` with the tangent nodes of each inserted after it; ``dot`` maps a value to its
    tangent and is updated in place."""
    out = []
    with _into(b, out):
        for node in nodes:
            b.source = node.source
            if node.prim == "cond":
                _push_cond(b, node, dot)
            elif node.prim in ("loop", "while"):
                _push_loop(b, node, dot)
            else:
                b.target.append(node)
                if node.prim == "empty_list":  # a branch's stand-in for a while loop's stack
                    dot[node.outputs[0]] = b.emit("empty_list", (), node.params)
                elif node.outputs and node.outputs[0] in b.active:
                    _push_node(b, node, dot)
                elif _opaque(node) and any(isinstance(x, Value) and x in dot
                                           for x in node.inputs):
                    raise _refusal(node.prim)    # its outputs would silently get zero tangents
    return out


def _opaque(node) -> bool:
    """A call that computes a real function of its inputs but has no tangent rule, nor counts
    as active: the ``fwd`` and ``bwd`` of a custom_vjp function, which its adjoint calls (the
    other primitives without a derivative are piecewise constant, or ``stop_gradient``)."""
    return PRIMS[node.prim].family == "custom" and node.prim != "stop_gradient"


def _refusal(prim) -> ForwardModeError:
    spec = PRIMS[prim]
    what = f"`{spec.spell}`" if spec.differentiable else \
        f"`{spec.spell}` (called by the gradient of a custom_vjp function)"
    return ForwardModeError(f"forward mode cannot go through {what}: a custom_vjp function has "
                            "a reverse-mode rule only (as in JAX)",
                            hint="use reverse mode (grad, vjp, jacobian(mode='rev')), or call "
                                 "the plain function instead")


@contextlib.contextmanager
def _into(b, nodes: list):
    saved, b.target = b.target, nodes
    try:
        yield
    finally:
        b.target = saved


def _push_node(b, node, dot):
    args = [x.value if isinstance(x, Literal) else x for x in node.inputs]
    ans, total = node.outputs[0], None
    for i, x in enumerate(node.inputs):
        dx = dot.get(x) if isinstance(x, Value) else None
        if dx is None:
            continue
        t = _tangent_rule(b, node, i, dx, ans, args)
        total = t if total is None else _add(b, total, t)
    if total is not None:
        dot[ans] = _name(b, _conform(b, total, ans), ans)


def _add(b, total, t):
    """``total + t``; ``total - u`` where ``t`` is the ``-u`` just emitted (nothing else has
    read it yet), as the tangent of ``a - b`` reads."""
    last = b.target[-1] if b.target else None
    if last is not None and last.prim == "negative" and last.outputs[0] is t:
        b.target.pop()
        return b.emit("subtract", (total, last.inputs[0]))
    return b.emit("add", (total, t))


def _tangent_rule(b, node, i, dx, ans, args):
    if node.prim in LINEAR_READS and i == 0:
        return LINEAR_READS[node.prim](b, dx, ans, *args)
    if PRIMS[node.prim].family == "custom":
        raise _refusal(node.prim)
    if not has_jvp(node.prim, i):
        raise CompileError(f"no tangent rule for argument {i} of `{node.prim}` "
                           f"(in: {node.source})")
    return tangent(b, node.prim, i, dx, ans, args, node.params)


def _name(b, t, x: Value):
    """Name the tangent after its primal (``l1_dot``); temporaries' tangents stay unnamed."""
    if isinstance(t, Value) and t.name is None and x.name:
        b.graph.name_value(t, tangent_name(x))
    return t


def tangent_name(x: Value) -> str:
    """``<the user's variable>_dot``: ``h_dot`` for every SSA version (``h_2``) of ``h``."""
    if x.origin:
        return x.origin + "_dot"
    name = x.name or "t"
    head, _, tail = name.rpartition("_")
    while head and tail.isdigit():
        name = head
        head, _, tail = name.rpartition("_")
    return name + "_dot"


def tangent_value(b, x: Value) -> Value:
    """A fresh value to hold ``x``'s tangent (a block parameter or a region node's output)."""
    return b.graph.name_value(Value(x.aval), tangent_name(x))


def _zero(b, x):
    if x.aval.is_scalar:
        return Literal(0.0)
    if x.aval.kind == "list":  # one row per element, known when it runs (frontend.statements.lists)
        return b.emit("zeros_like", (x,))
    return b.emit("zeros", (), {"shape": x.aval.shape, "dtype": x.aval.dtype})


def _conform(b, t, x: Value):
    """``t`` with exactly ``x``'s abstract value (zero when ``t`` is None)."""
    want = x.aval
    if t is None:
        return _zero(b, x)
    if not isinstance(t, Value):
        value = t.value if isinstance(t, Literal) else t
        if want.is_scalar:
            return Literal(float(value))
        return b.emit("full", (float(value),), {"shape": want.shape, "dtype": want.dtype})
    if t.aval == want:
        return t
    if want.is_scalar:
        return b.emit("to_float", (t,))
    if t.aval.is_scalar:  # a Python float where NumPy gives a 0-d array or an np.float64
        t = b.emit("asarray", (t,))
    if t.aval.dtype != want.dtype:
        t = b.emit("astype", (t,), {"dtype": want.dtype})
    if t.aval.known_shape != want.shape:
        t = b.emit("broadcast_to", (t,), {"shape": want.shape})
    return t


# ---- if / else --------------------------------------------------------------------------------
def _push_cond(b, node, dot):
    """Each branch computes its tangents; the active outputs' tangents join as extra outputs."""
    b.target.append(node)
    active = [(i, v) for i, v in enumerate(node.outputs) if v in b.active]
    for block in node.regions:
        block.nodes = push(b, block.nodes, dot)
        with _into(b, block.nodes):
            block.outputs = block.outputs + [
                _conform(b, dot.get(block.outputs[i]) if isinstance(block.outputs[i], Value)
                         else None, v) for i, v in active]
    b.source = node.source
    outs = tuple(tangent_value(b, v) for _, v in active)
    node.outputs = node.outputs + outs
    dot.update((v, t) for (_, v), t in zip(active, outs))


# ---- loops ------------------------------------------------------------------------------------
def _push_loop(b, node, dot):
    """Active carried values carry their tangents; active stacked values stack theirs."""
    body, carried, inits = _loop_parts(node)
    m = node.params.get("stacked", 0)
    n_carried = len(node.outputs) - m
    act = [j for j, p in enumerate(carried) if p in b.active]
    stacked = [i for i in range(m) if node.outputs[n_carried + i] in b.active]
    init_dots = [_name(b, _init_tangent(b, dot, inits[j], carried[j]), carried[j]) for j in act]
    b.target.append(node)
    params = [tangent_value(b, carried[j]) for j in act]
    if node.prim == "while":
        test = node.regions[0]
        test.params = test.params + [tangent_value(b, carried[j]) for j in act]
    dot.update(zip([carried[j] for j in act], params))
    body.params = body.params + params
    body.nodes = push(b, body.nodes, dot)
    with _into(b, body.nodes):
        yields = body.outputs
        nexts = [_conform(b, _dot_of(dot, yields[j]), carried[j]) for j in act]
        stacks = [_conform(b, _dot_of(dot, yields[n_carried + i]), yields[n_carried + i])
                  for i in stacked]
    body.outputs = yields[:n_carried] + nexts + yields[n_carried:] + stacks
    b.source = node.source
    carried_outs = [tangent_value(b, node.outputs[j]) for j in act]
    stacked_outs = [tangent_value(b, node.outputs[n_carried + i]) for i in stacked]
    outs = node.outputs
    node.outputs = outs[:n_carried] + tuple(carried_outs) + outs[n_carried:] + tuple(stacked_outs)
    node.inputs = node.inputs + tuple(init_dots)
    node.params = {**node.params, "stacked": m + len(stacked)}
    dot.update(zip([outs[j] for j in act], carried_outs))
    dot.update(zip([outs[n_carried + i] for i in stacked], stacked_outs))


def _init_tangent(b, dot, init, carried):
    """The tangent a carried value starts from. A zero is ``zeros_like`` of the initial value,
    not ``zeros(shape)``, which CSE would merge into one array for two carried values: the
    emitter may update a carried array in place, and two slots must not share one."""
    t = _dot_of(dot, init)
    if t is None and isinstance(init, Value) and init.aval.kind in ("array", "list"):
        return b.emit("zeros_like", (init,))
    return _conform(b, t, carried)


def _dot_of(dot, x):
    return dot.get(x) if isinstance(x, Value) else None
