"""No factorization computed twice. :func:`merge_factorizations`: the results of one ``eigh``,
``svd``, ``qr`` or ``slogdet`` of the same matrix, each its own primitive (``eigh_values``,
``eigh_vectors``...: the rules and CSE see them apart), are read from one call of the whole
factorization. :func:`reuse_inverses`: an adjoint's ``solve(K.T, g)`` reads an ``inv(K)`` the
gradient computes anyway.

Before: ``w = np.linalg.eigh(A, UPLO='L')[0]`` and ``V = np.linalg.eigh(A, UPLO='L')[1]`` (the
gradient of the eigenvalues needs the eigenvectors: two calls where the user wrote one).
After: ``eigh_A = np.linalg.eigh(A, UPLO='L')``, ``w = eigh_A[0]``, ``V = eigh_A[1]``.

Invariants: values are unchanged (each result primitive is its factorization's item by
definition: ``ir.primitives``); only results of the same inputs and parameters in the same
scope are merged, the whole factorization placed where the first of them was, each result
becoming a ``list_get`` of it in its own place; a lone result stays as it is (its own call
computes no more than it needs: ``svd(compute_uv=False)`` stays ``svdvals``). After DCE, so
that only results still read count.
"""

from __future__ import annotations

from ..ir import Literal, Node, Value
from ..ir.shapes import infer
from .rewrite import Walker

# result primitive -> (the whole factorization's primitive, the result's position in it)
MEMBERS = {"eigh_values": ("eigh", 0), "eigh_vectors": ("eigh", 1),
           "svd_u": ("svd", 0), "svd_s": ("svd", 1), "svd_vh": ("svd", 2),
           "qr_q": ("qr", 0), "qr_r": ("qr", 1),
           "slogdet_sign": ("slogdet", 0), "logabsdet": ("slogdet", 1)}


def merge_factorizations(graph):
    return Walker(leave=lambda nodes, scope: _merged(graph, nodes)).graph(graph)


def _key(node):
    whole, _ = MEMBERS[node.prim]
    return whole, tuple(id(x) if isinstance(x, Value) else ("lit", x.value)
                        for x in node.inputs), tuple(sorted(node.params.items()))


def _merged(graph, nodes):
    groups: dict = {}
    for node in nodes:
        if node.prim in MEMBERS:
            groups.setdefault(_key(node), []).append(node)
    merged = {k: g for k, g in groups.items() if len({n.prim for n in g}) > 1}
    if not merged:
        return nodes
    whole_of = {}   # the first node of each merged group -> the whole factorization's node
    for (whole, _, _), group in merged.items():
        first = group[0]
        out = Value(infer(whole, [x.aval for x in first.inputs],
                          [x.value if isinstance(x, Literal) else None for x in first.inputs],
                          first.params))
        graph.name_value(out, f"{whole}_{_operand_name(first)}")
        whole_of[first] = Node(whole, first.inputs, dict(first.params), (out,), first.source,
                               first.phase)
    reads = {n: whole_of[g[0]].out for g in merged.values() for n in g}
    out = []
    for node in nodes:
        if node in whole_of:
            out.append(whole_of[node])
        if node in reads:
            k = Literal(MEMBERS[node.prim][1])
            node = Node("list_get", (reads[node], k), {}, node.outputs, node.source, node.phase)
        out.append(node)
    return out


def _operand_name(node):
    x = node.inputs[0]
    return getattr(x, "name", None) or "a"



# ---- an adjoint's solve with the transposed matrix where its inverse is computed anyway -------
def reuse_inverses(graph):
    """The adjoint's ``solve(K.T, g)`` (``solve``'s rule) as ``inv(K).T @ g`` where the same
    scope computes ``inv(K)`` (``slogdet``'s and ``det``'s rules, or the user's): an O(n^2)
    product instead of another O(n^3) factorization (a GP likelihood's ``solve`` +
    ``slogdet``). The inverse moves up to the first solve that reads it (its matrix is defined
    before: the solve reads its transpose). Forward solves are left as they are (NumPy's
    values)."""
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
