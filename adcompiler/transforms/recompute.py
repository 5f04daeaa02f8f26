"""Residuals recomputed in the adjoint loop from a value it loads anyway, instead of stacked.

A loop body's adjoint often reads several cheap elementwise functions of one value: a friction
law's ``sign(v)``, ``|v| * 50``, ``min(|v| * 50, 1)``, ``-mu * sign(v)``, a penalty wall's
``-x``, ``x - 1``, ``max(-x, 0) - max(x - 1, 0)``. Each was stacked per iteration: nine
``(100, 20000)`` stacks (144 MB) where the two carried arrays ``x`` and ``v`` would do. Here a
residual computed from carried params (and outer scalars, literals, the counter) by a few
total elementwise operations is recomputed at the top of the adjoint body from the params'
loads, when that stacks fewer entries than it saves. Invariant: the same operations on the
same values (IEEE elementwise arithmetic, so bitwise the same); only operations that never
raise (no division, no logarithm), as the top of the adjoint body evaluates them
unconditionally.
"""

from __future__ import annotations

from ..ir import Block, Value, sizing

_CHEAP = frozenset(("negative", "sign", "abs", "absolute", "add", "subtract", "multiply",
                    "maximum", "minimum", "less", "less_equal", "greater", "greater_equal",
                    "equal", "not_equal", "logical_not", "logical_and", "logical_or"))
_LIMIT = 8  # operations per recomputed residual


def cheap_residuals(body, pending, inside, k) -> dict:
    """residual -> (its operations, the carried params it starts from) for the ``pending``
    residuals (values the adjoint would stack) worth recomputing: all of them where the
    params to stack hold fewer entries than the residuals no longer stacked, else those
    whose params are stacked anyway."""
    top = {v: n for n in body.nodes for v in n.outputs}
    params = set(body.params) - {k}
    chains = {}
    for r in pending:
        chain = _chain(r, top, params, inside, k)
        if chain is not None and chain[0] and _size(r) is not None:
            chains[r] = chain
    stacked = set(pending) - set(chains)
    new = set().union(*(leaves for _, leaves in chains.values())) - stacked
    saved = sum(_size(r) for r in chains)
    if new and (any(_size(p) is None for p in new) or sum(_size(p) for p in new) >= saved):
        chains = {r: c for r, c in chains.items() if c[1] <= stacked}
    return chains


def _chain(r, top, params, inside, k):
    """(operations computing ``r`` from params, the params) or None."""
    nodes, leaves, todo = set(), set(), [r]
    while todo:
        x = todo.pop()
        if not isinstance(x, Value) or x is k:
            continue  # a literal, the counter: read as they are
        if x not in inside:  # an outer scalar (``mu``) is a constant here; an outer array
            if x.aval.ndim != 0:  # would make each recomputation a whole array operation
                return None
            continue
        if x in params:
            leaves.add(x)
            continue
        node = top.get(x)
        if (node is None or node.prim not in _CHEAP or set(node.params) - {"py"}
                or len(node.outputs) != 1):
            return None
        if node not in nodes:
            nodes.add(node)
            todo.extend(node.inputs)
        if len(nodes) > _LIMIT:
            return None
    return nodes, leaves


def _size(v):
    if v.aval.is_scalar:
        return 1
    shape = v.aval.shape
    if v.aval.kind != "array" or shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return sizing.elements(shape)


def recompute(b, body, chains, subst) -> list:
    """Nodes computing each residual of ``chains`` again (in body order) from ``subst``'s
    loads of the params; ``subst`` maps each computed value to its new one. Each keeps its
    params: ``abs[py='fabs']`` of a Python float is a Python float, plain ``abs`` a 0-d array."""
    wanted = set().union(*(nodes for nodes, _ in chains.values()))
    block = Block()
    with b.into(block):
        for node in body.nodes:
            if node not in wanted:
                continue
            args = [subst.get(x, x) if isinstance(x, Value) else x for x in node.inputs]
            (out,) = node.outputs
            subst[out] = b.emit(node.prim, args, dict(node.params), name=out.name)
    return block.nodes
