"""An adjoint's ``solve(K.T, g)`` (``solve``'s rule) as ``inv(K).T @ g`` where the same scope
computes ``inv(K)`` (``slogdet``'s and ``det``'s rules, or the user's): an O(n^2) product
instead of another O(n^3) factorization (a GP likelihood's ``solve`` + ``slogdet``: two
factorizations in its gradient, not three).

Invariants: forward solves are left as they are (NumPy's values); the inverse moves up to the
first solve that reads it (its matrix is defined before: the solve reads its transpose); only a
transpose of the last two axes of ``K`` is recognised, in the same scope as the solve.
"""

from __future__ import annotations

from ..ir import Node, Value
from ..ir.shapes import infer
from .rewrite import Walker


def reuse_inverses(graph):
    """Every scope's adjoint solves with a transposed matrix whose inverse it computes, as
    products with that inverse."""
    return Walker(leave=lambda nodes, scope: _with_inverses(nodes)).graph(graph)


def _transposed(x, producers):
    """``K`` where ``x`` is ``K`` with its last two axes swapped (a ``transpose`` node), else
    None; with the transpose's params."""
    node = producers.get(x)
    if node is None or node.prim != "transpose" or not isinstance(node.inputs[0], Value):
        return None, None
    nd = x.aval.ndim
    axes = node.params.get("axes")
    if nd is None or nd < 2 or (axes is None and nd != 2) or (
            axes is not None and tuple(axes) != tuple(range(nd - 2)) + (nd - 1, nd - 2)):
        return None, None
    return node.inputs[0], node.params


def _with_inverses(nodes):
    inverses = {id(n.inputs[0]): n for n in nodes
                if n.prim == "inv" and isinstance(n.inputs[0], Value)}
    if not inverses:
        return nodes
    producers = {n.outputs[0]: n for n in nodes if len(n.outputs) == 1}
    targets = {}
    for node in nodes:
        if node.prim == "solve" and node.phase == "adjoint":
            k, params = _transposed(node.inputs[0], producers)
            if k is not None and id(k) in inverses:
                targets[node] = (inverses[id(k)], params)
    if not targets:
        return nodes
    out, placed = [], set()
    for node in nodes:
        if node.prim == "inv" and node in placed:
            continue
        if node in targets:
            inv, params = targets[node]
            if inv not in placed:
                out.append(inv)
                placed.add(inv)
            out.extend(_product(node, inv, params))
            continue
        if node.prim == "inv":
            placed.add(node)
        out.append(node)
    return out


def _product(solve, inv, params):
    """``inv(K).T @ g`` in the place of ``solve(K.T, g)``, with its output value."""
    g = solve.inputs[1]
    inverse = inv.outputs[0]
    swapped = Value(infer("transpose", [inverse.aval], [None], dict(params)))
    return (Node("transpose", (inverse,), dict(params), (swapped,), solve.source, solve.phase),
            Node("matmul", (swapped, g), {}, solve.outputs, solve.source, solve.phase))
