"""Adjoints of control flow: a ``cond`` replays the branch taken; a ``loop`` runs backwards.

Invariants: the adjoint of a ``cond`` is a ``cond`` on the same predicate whose blocks update
the cotangents of every active value the branches read; the adjoint of a ``loop`` is a reversed
``loop`` carrying the cotangents of the carried values and of the active outer values it reads;
the forward loop stacks, per iteration, exactly the values the adjoint body reads (residuals),
into arrays preallocated from the trip count. Each is handed ``backprop``
(:func:`adcompiler.transforms.reverse.backprop`) for the nodes of its blocks: the reverse sweep
calls into this module, never the other way.
"""

from __future__ import annotations

from ..ir import Aval, Block, Literal, Node, Value
from .loop_exit import count_taken, drop_guard, exit_guard
from .residuals import defined_in, reads, stack_residuals, stacked_outputs
from .cotangents import accumulate, cotangent_name, name_cotangent, typed_number


def cotangent_aval(x: Value) -> Aval:
    return Aval("float", "float64") if x.aval.is_scalar else x.aval


def _zero(b, x: Value, name=None):
    """A zero cotangent for ``x``: 0.0, ``np.float64(0.0)`` for a 0-d array (a NumPy scalar,
    as NumPy's 0-d results are: ``dx[i] += z`` takes 5x as long with a 0-d array ``z``), or
    ``zeros_like(x)``."""
    if x.aval.is_scalar:
        return Literal(0.0)
    if x.aval.kind == "array" and x.aval.shape == () and x.aval.is_float:
        return b.emit("astype", (Literal(0.0),), {"dtype": x.aval.dtype}, name=name)
    return b.emit("zeros_like", (x,), name=name)


def _coerce(b, c, x: Value):
    """Make cotangent ``c`` have exactly ``x``'s cotangent aval (phis must agree)."""
    want = cotangent_aval(x)
    if not isinstance(c, Value):
        value = c.value if isinstance(c, Literal) else c
        if want.is_scalar:
            return Literal(float(value))
        if want.kind == "array" and want.shape == () and want.is_float:  # np.float64(1.0)
            return b.emit("astype", (Literal(float(value)),), {"dtype": want.dtype})
        return b.emit("broadcast_to", (typed_number(b, value, want),), {"shape": want.shape})
    if want.is_scalar and not c.aval.is_scalar:
        return b.emit("to_float", (c,))
    if want.kind == "array" and c.aval.is_scalar:  # a Python float where x is a 0-d array
        c = b.emit("asarray", (c,))
    if not want.is_scalar and c.aval.dtype != want.dtype:
        c = b.emit("astype", (c,), {"dtype": want.dtype})
    if not want.is_scalar and c.aval.known_shape != want.shape:
        c = b.emit("broadcast_to", (c,), {"shape": want.shape})
    return c


def _merge(b, old, c, x):
    if c is None:
        c = old if old is not None else _zero(b, x)
    elif old is not None:
        c = b.emit("add", (old, c))
    return _coerce(b, c, x)


def _active_free(b, blocks) -> list:
    inside = defined_in(blocks)
    return [x for x in reads(blocks) if x not in inside and x in b.active]


def _new_value(b, x, aval=None):
    return name_cotangent(b, Value(aval or cotangent_aval(x)), x)


# ---- if / else --------------------------------------------------------------------------------
def backprop_cond(b, node, ct, backprop):
    pred = node.inputs[0]
    free = _active_free(b, node.regions)
    if not free:
        return
    adjoint_blocks = []
    for block in node.regions:
        adj = Block()
        with b.into(adj):
            # the branch adds to the cotangents it is given (``dx[i] += g`` on the carried
            # array, not ``dx + (zeros with g at i)``, a new array per branch taken)
            local = {f: ct[f] for f in free if ct.get(f) is not None}
            for v, x in zip(node.outputs, block.outputs):
                g = ct.get(v)
                if g is not None and isinstance(x, Value) and x in b.active:
                    accumulate(b, local, x, g)
            backprop(b, block.nodes, local)
            adj.outputs = [_merge(b, None, local.get(f), f) for f in free]
        adjoint_blocks.append(adj)
    then, orelse = (adj.outputs for adj in adjoint_blocks)
    if not any(adj.nodes for adj in adjoint_blocks) and all(
            t is e or (isinstance(t, Literal) and t == e) for t, e in zip(then, orelse)):
        ct.update(zip(free, then))  # both branches pass the same cotangents on: no `if`
        return
    b.source = node.source
    outs = tuple(_new_value(b, f) for f in free)
    b.target.append(Node("cond", (pred,), {}, outs, node.source, "adjoint",
                         tuple(adjoint_blocks)))
    ct.update(zip(free, outs))


# ---- loops ------------------------------------------------------------------------------------
def _loop_parts(b, node, guard):
    """(body, counter param or None, carried params, initial values, trip count) of a loop.
    A while loop gets a carried iteration counter, added here, as its trip count; so does a
    loop that breaks (``guard``: see :mod:`.loop_exit`), counting the iterations it ran."""
    if node.prim == "loop":
        (body,) = node.regions
        n = count_taken(b.graph, node, guard) if guard else node.inputs[0]
        return body, body.params[0], body.params[1:], list(node.inputs[1:]), n
    test, body = node.regions
    count = _counter_of(node) or _add_counter(b, node)
    return body, None, body.params, list(node.inputs), count


def _counter_of(node):
    """The result of a carried ``n = n + 1`` from 0 the while loop already has (generated code
    read back), else None."""
    body = node.regions[1]
    adds = {n.outputs[0]: n for n in body.nodes if n.prim == "add"}
    for p, init, nxt, out in zip(body.params, node.inputs, body.outputs, node.outputs):
        step = adds.get(nxt)
        if (p.aval.kind == "int" and isinstance(init, Literal) and init.value == 0
                and step is not None and step.inputs[0] is p
                and isinstance(step.inputs[1], Literal) and step.inputs[1].value == 1):
            return out
    return None


def _add_counter(b, node) -> Value:
    test, body = node.regions
    carried = len(body.params)
    steps = [b.graph.name_value(Value(Aval("int", "int64")), "steps") for _ in range(3)]
    test.params.append(steps[0])
    body.params.append(steps[1])
    body.nodes.append(Node("add", (steps[1], Literal(1)), {}, (steps[2],), node.source))
    body.outputs.insert(carried, steps[2])
    node.inputs = node.inputs + (Literal(0),)
    final = b.graph.name_value(Value(Aval("int", "int64")), "steps")
    node.outputs = node.outputs[:carried] + (final,) + node.outputs[carried:]
    return final


def backprop_loop(b, node, ct, backprop):
    stacked = stacked_outputs(node)  # before _loop_parts gives a while loop its counter
    guard = exit_guard(node)
    body, k, carried_in, inits, n = _loop_parts(b, node, guard)
    diff = [j for j, c in enumerate(carried_in) if c.aval.is_float]
    free = [f for f in _active_free(b, node.regions) if f not in carried_in]
    k_adj = b.graph.name_value(Value(Aval("int", "int64")), (k.name if k else None) or "k")
    d_carried = [_new_value(b, carried_in[j]) for j in diff]
    d_free = [_new_value(b, f) for f in free]
    adj = Block(params=[k_adj, *d_carried, *d_free])
    with b.into(adj):
        local = dict(zip(free, d_free))
        for j, d in zip(diff, d_carried):
            x = body.outputs[j]
            if isinstance(x, Value) and x in b.active:
                accumulate(b, local, x, d)
        _read_stacked(b, local, stacked, ct, k_adj)
        backprop(b, body.nodes, local)
        adj.outputs = ([_coerce(b, local.get(carried_in[j]) or _zero(b, carried_in[j]),
                                carried_in[j]) for j in diff]
                       + [_coerce(b, local[f], f) for f in free])
    if guard:  # the adjoint runs only over the iterations the guard let run
        drop_guard(adj, guard[0])
    stack_residuals(b, node, body, adj, k, k_adj)
    b.source = node.source
    for constant in _constants_out(adj.nodes):
        constant.source = node.source
        if constant.outputs[0].name is None and constant.inputs[0].value == 0:
            b.graph.name_value(constant.outputs[0], "zero")
        b.target.append(constant)
    init_ct = ([_coerce(b, ct.get(node.outputs[j]) or _zero(b, node.outputs[j]), carried_in[j])
                for j in diff]
               + [_coerce(b, ct.get(f) or _zero(b, f, cotangent_name(b, f)), f) for f in free])
    outs = tuple(_new_value(b, carried_in[j]) for j in diff) + tuple(_new_value(b, f) for f in free)
    b.target.append(Node("loop", (n, *init_ct), {"reverse": True, "stacked": 0}, outs,
                         node.source, "adjoint", (adj,)))
    # The free accumulators already include the old cotangents; then initial values get the
    # carried cotangents (a value can be both, as x in ``y = x; while ...: y = f(y) + x``).
    ct.update(zip(free, outs[len(diff):]))
    for j, o in zip(diff, outs):
        if isinstance(inits[j], Value) and inits[j] in b.active:
            accumulate(b, ct, inits[j], o)


def _constants_out(nodes) -> list:
    """Take out of ``nodes`` (and their blocks) the typed numbers (``np.float64(0.0)``, a 0-d
    cotangent's zero): made once before the adjoint loop, not in every iteration."""
    out = [n for n in nodes if n.prim == "astype" and isinstance(n.inputs[0], Literal)]
    nodes[:] = [n for n in nodes if n not in out]
    for n in nodes:
        for block in n.regions:
            out += _constants_out(block.nodes)
    return out


def _read_stacked(b, local, stacked, ct, k_adj):
    """A value kept per iteration gets row ``k`` of its stack's cotangent."""
    for s, r in stacked:
        g = ct.get(s)
        if g is not None and isinstance(r, Value) and r in b.active:
            accumulate(b, local, r, _coerce(b, b.getitem(g, (k_adj,), (("a", 0),)), r))
