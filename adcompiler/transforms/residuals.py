"""The residuals of a loop's adjoint: what the forward loop keeps per iteration for it.

The adjoint body reads values of the forward body; each is taken again where that is cheap and
exact (``x[i]`` of an array the loop never changes, integer arithmetic on the counter, a zero
of a static shape), else stacked by the forward loop, in arrays preallocated from the trip
count (lists for while loops), and read back by row. Invariant: the adjoint body reads no value
the forward body defines, only the loads made here.
"""

from __future__ import annotations

from ..errors import CompileError
from ..ir import Aval, Block, Literal, Node, Value, walk
from .recompute import cheap_residuals, recompute


def defined_in(blocks) -> set:
    """Values ``blocks`` define: their params, node outputs, and those of nested blocks."""
    inside = set()
    for block in blocks:
        inside.update(block.params)
        for n in walk(block.nodes):
            inside.update(n.outputs)
            inside.update(p for region in n.regions for p in region.params)
    return inside


def reads(blocks) -> list:
    """Values read by ``blocks`` (in order of first read, each once)."""
    seen = {}
    for block in blocks:
        for n in walk(block.nodes):
            reads = list(n.inputs) + [x for blk in n.regions for x in blk.outputs]
            seen.update((x, None) for x in reads if isinstance(x, Value))
        seen.update((x, None) for x in block.outputs if isinstance(x, Value))
    return list(seen)


def stacked_outputs(node) -> list:
    """(stacked output, the body value it keeps per iteration) of a loop (generated code read
    back by the frontend: ``grad(grad(f))``)."""
    m = node.params.get("stacked", 0)
    body = node.regions[-1]
    return list(zip(node.outputs[len(node.outputs) - m:], body.outputs[len(body.outputs) - m:]))


def stack_residuals(b, node, body, adj, k, k_adj):
    """Make the forward loop stack every body value the adjoint body reads; load them there."""
    top_level = set(body.params) | {v for n in body.nodes for v in n.outputs}
    nested = defined_in([body]) - top_level
    subst = {k: k_adj} if k is not None else {}
    loads, pending = [], []
    for r in reads([adj]):
        if r is k or (r not in top_level and r not in nested):
            continue  # the counter is the adjoint loop's own; outer values are read as they are
        if _only_its_shape(b, adj, r, subst):
            continue  # zeros_like(r) of a static shape: np.zeros(shape), nothing kept
        again = _rematerialise(b, body, r, k, k_adj, top_level | nested)
        if again is not None:  # x[k] of an array the loop never changes: take it again
            loads.extend(again)
            subst[r] = again[-1].outputs[0]
            continue
        pending.append(r)
    # sign(v), |v| * 50, -x...: recomputed from the loads of v and x (see .recompute)
    cheap = cheap_residuals(body, pending, top_level | nested, k)
    leaves = [p for p in body.params if any(p in c[1] for c in cheap.values())]
    for r in [r for r in pending if r not in cheap] + [p for p in leaves if p not in pending]:
        held = r if r in top_level else _lift(b, body, r)
        stacked = _stack_output(b, node, body, held)
        loads.extend(_load(b, stacked, k_adj, r, subst))
    loads.extend(recompute(b, body, cheap, subst))
    adj.nodes[:0] = loads
    _substitute_block(adj, subst)


def _rematerialise(b, body, r, k, k_adj, inside):
    """Nodes recomputing ``r`` in the adjoint body from the adjoint's counter, when ``r`` is
    integer arithmetic on the loop counter (``i = k + 1``, ``i + j``) or ``a[idx]`` (basic
    indices of such) of an array defined outside the loop; else None (it is stacked)."""
    producers = _producers(body)
    if r.aval.is_scalar and r.aval.kind not in ("int", "bool"):
        return None
    block = Block()
    with b.into(block):
        again = _recompute(b, producers, r, k, k_adj, inside, {}, top=True)
    if again is None or not block.nodes:
        return None
    if r.name and again.name is None:
        b.graph.name_value(again, r.name)
    return block.nodes


_LIKE = {"zeros_like": "zeros", "ones_like": "ones"}


def _only_its_shape(b, adj, r, subst) -> bool:
    """Whether the adjoint reads ``r`` only for its shape and dtype (``zeros_like(r)``, the
    cotangent a branch does not touch), both static: those become ``zeros(shape, dtype)``,
    made once before the loop where ``r`` is 0-d (never updated in place: NumPy gives
    scalars), as the iterations' own arrays otherwise."""
    readers = [n for n in walk(adj.nodes) if r in n.inputs]
    if (r in adj.outputs or any(r in blk.outputs for n in walk(adj.nodes) for blk in n.regions)
            or r.aval.kind != "array" or r.aval.shape is None or not readers
            or any(n.prim not in _LIKE or n.params for n in readers)):
        return False
    params = {"shape": tuple(r.aval.shape), "dtype": r.aval.dtype}
    for n in readers:
        if r.aval.shape == () and r.aval.is_float:  # np.float64(0.0), as _zero makes
            b.source = n.source
            value = Literal(0.0 if n.prim == "zeros_like" else 1.0)
            subst[n.outputs[0]] = b.emit("astype", (value,), {"dtype": r.aval.dtype})
        n.prim, n.inputs, n.params = _LIKE[n.prim], (), dict(params)
    return True


_INT_ARITHMETIC = ("add", "subtract", "multiply", "floor_divide", "remainder", "negative")
_TOTAL = ("add", "subtract", "multiply", "negative")  # never raise, in any branch
_COMPARISONS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")


def _producers(body) -> dict:
    """The node to compute each value of ``body`` again with, at the top of the adjoint body:
    its own where the forward body computes it unconditionally, or raises nothing (integer
    +, -, *); for a value a branch computes, the same computation at the top level (``x[i]``
    read before the ``if`` and again inside it), whose inputs are then read the same."""
    top = {v: n for n in body.nodes for v in n.outputs}
    same = {(n.prim, _key(n)): n for n in body.nodes}
    out = dict(top)
    for n in walk(body.nodes):
        if n.outputs and n.outputs[0] not in top and not n.regions:
            twin = same.get((n.prim, _key(n)))
            if twin is not None:
                out[n.outputs[0]] = twin
            elif n.prim in _TOTAL and n.outputs[0].aval.kind == "int":
                out[n.outputs[0]] = n
    return out


def _key(node):
    inputs = tuple(("v", id(x)) if isinstance(x, Value) else ("l", type(x.value), x.value)
                   for x in node.inputs)
    try:
        return inputs, tuple(sorted((k, repr(v)) for k, v in node.params.items()))
    except TypeError:
        return inputs, id(node)


def _recompute(b, producers, r, k, k_adj, inside, memo, top=False):
    """``r`` computed again from ``k_adj`` (emitting into the builder), or None."""
    if not isinstance(r, Value) or r not in inside:
        return r  # a literal or an outer value: read as it is
    if r is k:
        return k_adj
    if r in memo:
        return memo[r]
    node = producers.get(r)
    if node is None or node.params.get("py"):
        return None
    if node.prim == "getitem" and node.inputs[0] not in inside:
        arrays = [_recompute(b, producers, a, k, k_adj, inside, memo) for a in node.inputs[1:]]
        if any(a is None for a in arrays):
            return None
        memo[r] = b.getitem(node.inputs[0], arrays, node.params["index"])
        if memo[r].aval.ndim and not top:
            return None  # an index array taken again: only scalar reads inside an index
    elif ((node.prim in _INT_ARITHMETIC and r.aval.kind == "int"
           or node.prim in _COMPARISONS and r.aval.kind == "bool") and not node.params):
        args = [_recompute(b, producers, a, k, k_adj, inside, memo) for a in node.inputs]
        if any(a is None for a in args):
            return None
        memo[r] = b.emit(node.prim, args)
    else:
        return None
    return memo[r]


def _lift(b, block, r: Value) -> Value:
    """A value of ``block``'s top level equal to ``r``, which a branch inside it computes:
    the ``cond`` yields ``r`` as an extra output (zeros from the other branch). The adjoint
    reads it only under the same predicate, so the zeros are never used."""
    for node in block.nodes:
        if node.prim != "cond" or r not in defined_in(node.regions):
            if r in defined_in(node.regions):
                raise CompileError("differentiating a loop whose adjoint needs a value computed "
                                   "inside a nested loop's body is not supported yet")
            continue
        for i, branch in enumerate(node.regions):
            if r in defined_in([branch]):
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
    if like.aval.kind == "array" and like.aval.shape == () and like.aval.is_float:
        node = Node("astype", (Literal(0.0),), {"dtype": like.aval.dtype}, (zeros,), None,
                    "forward")  # np.float64(0.0), a NumPy scalar as NumPy's 0-d results are
    else:
        prim = "empty_list" if like.aval.kind == "list" else "zeros"  # a while loop's stack
        node = Node(prim, (), {"shape": like.aval.shape, "dtype": like.aval.dtype}, (zeros,),
                    None, "forward")
    block.nodes.append(node)
    return zeros


def _stack_output(b, node, body, r: Value) -> Value:
    """A new stacked output of the forward loop holding ``r`` of every iteration: an array
    preallocated from the trip count (``loop``), or a list (``while``, or where ``r`` is
    itself the list a nested while loop stacks into: a list of lists)."""
    for stack, kept in stacked_outputs(node):
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
