"""Adjoints of control flow: a ``cond`` replays the branch taken; a ``loop`` runs backwards.

Invariants: the adjoint of a ``cond`` is a ``cond`` on the same predicate whose blocks update
the cotangents of every active value the branches read; the adjoint of a ``loop`` is a reversed
``loop`` carrying the cotangents of the carried values and of the active outer values it reads;
the forward loop stacks, per iteration, exactly the values the adjoint body reads (residuals),
into arrays preallocated from the trip count.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir import Aval, Block, Literal, Node, Value, walk
from .reverse import accumulate, backprop, cotangent_name, name_cotangent


def cotangent_aval(x: Value) -> Aval:
    return Aval("float", "float64") if x.aval.is_scalar else x.aval


def _zero(b, x: Value, name=None):
    return Literal(0.0) if x.aval.is_scalar else b.emit("zeros_like", (x,), name=name)


def _coerce(b, c, x: Value):
    """Make cotangent ``c`` have exactly ``x``'s cotangent aval (phis must agree)."""
    want = cotangent_aval(x)
    if not isinstance(c, Value):
        value = c.value if isinstance(c, Literal) else c
        if want.is_scalar:
            return Literal(float(value))
        return b.emit("broadcast_to", (float(value),), {"shape": want.shape})
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


def _defined_in(blocks) -> set:
    """Values ``blocks`` define: their params, node outputs, and those of nested blocks."""
    inside = set()
    for block in blocks:
        inside.update(block.params)
        for n in walk(block.nodes):
            inside.update(n.outputs)
            inside.update(p for region in n.regions for p in region.params)
    return inside


def _reads(blocks) -> list:
    """Values read by ``blocks`` (in order of first read, each once)."""
    seen = {}
    for block in blocks:
        for n in walk(block.nodes):
            reads = list(n.inputs) + [x for blk in n.regions for x in blk.outputs]
            seen.update((x, None) for x in reads if isinstance(x, Value))
        seen.update((x, None) for x in block.outputs if isinstance(x, Value))
    return list(seen)


def _active_free(b, blocks) -> list:
    inside = _defined_in(blocks)
    return [x for x in _reads(blocks) if x not in inside and x in b.active]


def _new_value(b, x, aval=None):
    return name_cotangent(b, Value(aval or cotangent_aval(x)), x)


# ---- if / else --------------------------------------------------------------------------------
def backprop_cond(b, node, ct):
    pred = node.inputs[0]
    free = _active_free(b, node.regions)
    if not free:
        return
    adjoint_blocks = []
    for block in node.regions:
        adj = Block()
        with b.into(adj):
            local = {}
            for v, x in zip(node.outputs, block.outputs):
                g = ct.get(v)
                if g is not None and isinstance(x, Value) and x in b.active:
                    accumulate(b, local, x, g)
            backprop(b, block.nodes, local)
            adj.outputs = [_merge(b, ct.get(f), local.get(f), f) for f in free]
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
def _loop_parts(b, node):
    """(body, counter param or None, carried params, initial values, trip count) of a loop.
    A while loop gets a carried iteration counter, added here, as its trip count."""
    if node.prim == "loop":
        (body,) = node.regions
        return body, body.params[0], body.params[1:], list(node.inputs[1:]), node.inputs[0]
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


def backprop_loop(b, node, ct):
    stacked = _stacked(node)  # before _loop_parts gives a while loop its counter
    body, k, carried_in, inits, n = _loop_parts(b, node)
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
    _stack_residuals(b, node, body, adj, k, k_adj)
    b.source = node.source
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


def _stacked(node) -> list:
    """(stacked output, the body value it keeps per iteration) of a loop (generated code read
    back by the frontend: ``grad(grad(f))``)."""
    m = node.params.get("stacked", 0)
    body = node.regions[-1]
    return list(zip(node.outputs[len(node.outputs) - m:], body.outputs[len(body.outputs) - m:]))


def _read_stacked(b, local, stacked, ct, k_adj):
    """A value kept per iteration gets row ``k`` of its stack's cotangent."""
    for s, r in stacked:
        g = ct.get(s)
        if g is not None and isinstance(r, Value) and r in b.active:
            accumulate(b, local, r, _coerce(b, b.getitem(g, (k_adj,), (("a", 0),)), r))


def _stack_residuals(b, node, body, adj, k, k_adj):
    """Make the forward loop stack every body value the adjoint body reads; load them there."""
    top_level = set(body.params) | {v for n in body.nodes for v in n.outputs}
    nested = _defined_in([body]) - top_level
    subst = {k: k_adj} if k is not None else {}
    loads = []
    for r in _reads([adj]):
        if r is k or (r not in top_level and r not in nested):
            continue  # the counter is the adjoint loop's own; outer values are read as they are
        again = _rematerialise(b, body, r, k, k_adj, top_level | nested)
        if again is not None:  # x[k] of an array the loop never changes: take it again
            loads.extend(again)
            subst[r] = again[-1].outputs[0]
            continue
        held = r if r in top_level else _lift(b, body, r)
        stacked = _stack_output(b, node, body, held)
        loads.extend(_load(b, stacked, k_adj, r, subst))
    adj.nodes[:0] = loads
    _substitute_block(adj, subst)


def _rematerialise(b, body, r, k, k_adj, inside):
    """Nodes recomputing ``r`` in the adjoint body, when ``r`` is ``a[k]`` (a basic index by
    the loop counter) of an array defined outside the loop; else None (it is stacked)."""
    producer = next((n for n in body.nodes if r in n.outputs), None)
    if producer is None or producer.prim != "getitem":
        return None
    base, *arrays = producer.inputs
    if base in inside or any(a is not k for a in arrays) or r.aval.is_scalar:
        return None
    block = Block()
    with b.into(block):
        b.getitem(base, [k_adj for _ in arrays], producer.params["index"])
    return block.nodes


def _lift(b, block, r: Value) -> Value:
    """A value of ``block``'s top level equal to ``r``, which a branch inside it computes:
    the ``cond`` yields ``r`` as an extra output (zeros from the other branch). The adjoint
    reads it only under the same predicate, so the zeros are never used."""
    for node in block.nodes:
        if node.prim != "cond" or r not in _defined_in(node.regions):
            if r in _defined_in(node.regions):
                raise CompileError("differentiating a loop whose adjoint needs a value computed "
                                   "inside a nested loop's body is not supported yet")
            continue
        for i, branch in enumerate(node.regions):
            if r in _defined_in([branch]):
                held = r if r in {v for n in branch.nodes for v in n.outputs} else _lift(b, branch, r)
                out = b.graph.name_value(Value(held.aval), (r.name or "t") + "_taken")
                node.outputs = node.outputs + (out,)
                branch.outputs.append(held)
                other = node.regions[1 - i]
                other.outputs.append(_placeholder(other, held))
                return out
    raise CompileError(f"internal: {r} is not computed inside this loop body")


def _placeholder(block, like: Value):
    """A zero of ``like``'s aval, made in ``block`` (for the branch that does not compute it)."""
    if like.aval.is_scalar:  # a Python bool (a jump's condition on a float) stays a bool
        return Literal({"int": 0, "float": 0.0, "bool": False}[like.aval.kind])
    zeros = Value(like.aval)
    prim = "empty_list" if like.aval.kind == "list" else "zeros"  # a while loop's stack
    block.nodes.append(Node(prim, (), {"shape": like.aval.shape, "dtype": like.aval.dtype},
                            (zeros,), None, "forward"))
    return zeros


def _stack_output(b, node, body, r: Value) -> Value:
    """A new stacked output of the forward loop holding ``r`` of every iteration: an array
    preallocated from the trip count (``loop``), or a list (``while``, or where ``r`` is
    itself the list a nested while loop stacks into: a list of lists)."""
    for stack, kept in _stacked(node):
        if kept is r:  # already kept (a list the code appends to: grad of generated code)
            return stack
    shape = () if r.aval.is_scalar else tuple(r.aval.shape)
    if r.aval.kind == "list":
        aval = Aval("list", "object", (r.aval,))
    elif node.prim == "loop":
        aval = Aval("array", r.aval.dtype, (node.inputs[0].value,) + shape)
    else:
        aval = Aval("list", r.aval.dtype, shape)
    base = (r.origin or r.name.rpartition("_")[0] or r.name) if r.name else None
    stacked = b.graph.name_value(Value(aval), base + "s" if base else "saved")
    body.outputs.append(r)
    node.outputs = node.outputs + (stacked,)
    node.params = {**node.params, "stacked": node.params.get("stacked", 0) + 1}
    return stacked


def _load(b, stacked, k_adj, r, subst):
    """``stacked[k]`` (a Python float again where ``r`` was one), standing in for ``r``."""
    block = Block()
    with b.into(block):
        if stacked.aval.kind == "list":
            load = b.emit("list_get", (stacked, k_adj))
        else:
            load = b.getitem(stacked, (k_adj,), (("a", 0),))
        if r.aval.is_scalar:  # back to the Python number it was
            load = b.emit("to_int" if r.aval.kind == "int" else "to_float", (load,))
    if r.name:
        b.graph.name_value(load, r.name)
    subst[r] = load
    return block.nodes


def _substitute_block(block, subst):
    for n in walk(block.nodes):
        n.inputs = tuple(subst.get(x, x) if isinstance(x, Value) else x for x in n.inputs)
        for blk in n.regions:
            blk.outputs = [subst.get(x, x) if isinstance(x, Value) else x for x in blk.outputs]
    block.outputs = [subst.get(x, x) if isinstance(x, Value) else x for x in block.outputs]
