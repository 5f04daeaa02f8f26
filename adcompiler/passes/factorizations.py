"""One LAPACK call per factorization: the results of one ``eigh``, ``svd``, ``qr`` or
``slogdet`` of the same matrix, each its own primitive (``eigh_values``, ``eigh_vectors``...: the
rules and CSE see them apart), are read from one call of the whole factorization.

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
