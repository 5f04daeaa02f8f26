"""Loops that stop early: a ``for`` loop with a ``break`` runs its iterations only until it breaks.

The frontend lowers ``break`` to a carried flag (``loop<line>_done``) and runs the body under
``if not loop<line>_done:`` (:mod:`adcompiler.frontend.desugaring.jumps`), so the IR loop stays
structured and runs its whole range. Once the flag is set, every later iteration leaves the
carried values as they are. Its adjoint ran over the whole range too, reading residuals
stacked for iterations that did nothing: gradient time grew with the range's bound, not with
the iterations taken (2700x the primal for a bound of 30000 and a break after 250 steps).

Here the loop counts the iterations its guard lets run (a carried counter bumped inside the
guarded branch, so the count is right whether or not the emitted loop leaves early); the
adjoint loop runs over that count, and in it the guard is always true, so its ``if`` is
dropped. The emitter (:mod:`adcompiler.backends.loop_exit`) writes a real ``break`` once the
flag is set, for loops marked ``exit`` here or that stack nothing.
"""

from __future__ import annotations

from ..ir import Aval, Literal, Node, Value


def exit_guard(node):
    """``(cond, done index)`` where ``node`` is a ``loop`` whose body runs under ``if not
    done`` (``cond`` on ``logical_not(done)``, ``done`` its carried Python bool number
    ``done index``) and each carried value is left as it is once ``done`` is true (the cond's
    other branch yields its param, or the body yields the param itself); else None."""
    if node.prim != "loop":
        return None
    body = node.regions[0]
    carried = body.params[1:]
    nots = {n.outputs[0]: n.inputs[0] for n in body.nodes
            if n.prim == "logical_not" and isinstance(n.inputs[0], Value)}
    for cond in body.nodes:
        done = nots.get(cond.inputs[0]) if cond.prim == "cond" else None
        if done is None or done not in carried or done.aval.kind != "bool":
            continue
        j = carried.index(done)
        if body.outputs[j] in cond.outputs and _kept_once_done(body, cond, carried):
            return cond, j
    return None


def _kept_once_done(body, cond, carried) -> bool:
    """Whether every carried value's next value is its param where the guard is false."""
    orelse = cond.regions[1]
    for p, nxt in zip(carried, body.outputs):
        if nxt is p:
            continue
        if not isinstance(nxt, Value) or nxt not in cond.outputs:
            return False
        if orelse.outputs[cond.outputs.index(nxt)] is not p:
            return False
    return True


def count_taken(graph, node, guard) -> Value:
    """Give ``node`` (a loop with an :func:`exit_guard` ``guard``) a carried counter of the
    iterations its guard lets run, bumped inside the guarded branch; mark it ``exit`` (the
    emitter may leave it once the flag is set); return the count after the loop."""
    cond, _ = guard
    body = node.regions[0]
    carried = len(body.params) - 1
    steps = graph.name_value(Value(Aval("int", "int64")), "n_taken")
    bumped = graph.name_value(Value(Aval("int", "int64")), "n_taken")
    nxt = graph.name_value(Value(Aval("int", "int64")), "n_taken")
    final = graph.name_value(Value(Aval("int", "int64")), "n_taken")
    then, orelse = cond.regions
    then.nodes.append(Node("add", (steps, Literal(1)), {}, (bumped,), cond.source,
                           cond.phase))
    then.outputs.append(bumped)
    orelse.outputs.append(steps)
    cond.outputs = cond.outputs + (nxt,)
    body.params.append(steps)
    body.outputs.insert(carried, nxt)
    node.inputs = node.inputs + (Literal(0),)
    node.outputs = node.outputs[:carried] + (final,) + node.outputs[carried:]
    node.params = {**node.params, "exit": True}
    return final


def drop_guard(adj, cond):
    """In the adjoint body ``adj`` of a loop that runs only the iterations its guard let
    run, the guard is true: each ``if`` on it (the forward ``cond``'s predicate) becomes
    its first branch's nodes, and nothing stacks the guard."""
    guard = cond.inputs[0]
    subst, nodes = {}, []
    for n in adj.nodes:
        n.inputs = tuple(subst.get(x, x) if isinstance(x, Value) else x for x in n.inputs)
        if n.prim == "cond" and n.inputs[0] is guard:
            then = n.regions[0]
            nodes.extend(_substituted(then.nodes, subst))
            subst.update((o, subst.get(x, x) if isinstance(x, Value) else x)
                         for o, x in zip(n.outputs, then.outputs))
            continue
        _substitute_regions(n, subst)
        nodes.append(n)
    adj.nodes = nodes
    adj.outputs = [subst.get(x, x) if isinstance(x, Value) else x for x in adj.outputs]


def _substituted(nodes, subst) -> list:
    for n in nodes:
        n.inputs = tuple(subst.get(x, x) if isinstance(x, Value) else x for x in n.inputs)
        _substitute_regions(n, subst)
    return nodes


def _substitute_regions(node, subst):
    for block in node.regions:
        _substituted(block.nodes, subst)
        block.outputs = [subst.get(x, x) if isinstance(x, Value) else x for x in block.outputs]
