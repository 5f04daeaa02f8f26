"""A batch of products whose result is read with its batch axis moved inside and merged,
``(A @ B).transpose(1, 0, 2).reshape(M, H * N)`` (attention's heads put side by side again:
the adjoint's ``dv``, ``dq``), computed as the transposed batch ``(B^T @ A^T)`` viewed back, so
that the merge is a view, not a copy.

Before: ``dv = np.matmul(p.transpose(0, 2, 1), g)`` then ``dv.transpose(1, 0, 2).reshape(S,
D)``, a copy of (S, D) (50 us of a transformer block's 4 ms, one thread). After: ``dvT =
np.matmul(g.transpose(0, 2, 1), p)`` (H, N, M), C-ordered, and ``dvT.transpose(0, 2, 1)``: the
same entries, whose ``transpose(1, 0, 2).reshape(M, H * N)`` NumPy makes a view (the
Fortran-ordered (M, H * N) matrix), which a product reads as BLAS's transposed operand.

Invariants: only a ``matmul`` of two 3-D float operands with one batch size, read once, by the
transpose ``(1, 0, 2)``, read once, by a reshape to ``(M, H * N)``, whose every reader is a
product or a transpose read only by products (an elementwise reader would meet the Fortran
order); the entries are the same dot products (each computed by BLAS with the operands'
roles swapped: the same sums, rounding only); a transpose of an operand that is itself a
``transpose(0, 2, 1)`` reads that transpose's input.
"""

from __future__ import annotations

from ..ir import Node, Value, readers
from ..ir.shapes import infer

_SWAP = (0, 2, 1)


def transpose_head_products(graph):
    reads = readers(graph)
    producers = {n.outputs[0]: n for n in graph.nodes if len(n.outputs) == 1}
    out = []
    for node in graph.nodes:
        if _merged_by_readers(node, reads):
            out.extend(_transposed_product(node, producers))
        else:
            out.append(node)
    graph.nodes = out
    return graph


def _merged_by_readers(node, reads) -> bool:
    """``node`` a batched product read only as ``.transpose(1, 0, 2).reshape(M, H * N)`` by
    products (see the invariants)."""
    if node.prim != "matmul" or len(node.inputs) != 2 or len(node.outputs) != 1:
        return False
    a, b = node.inputs
    out = node.outputs[0]
    if not all(_batch(x) for x in (a, b, out)) or a.aval.shape[0] != b.aval.shape[0]:
        return False
    turn = _only(reads, out)
    if turn is None or turn.prim != "transpose" or tuple(turn.params.get("axes") or ()) \
            != (1, 0, 2):
        return False
    merge = _only(reads, turn.outputs[0])
    h, m, n = out.aval.shape
    if merge is None or merge.prim != "reshape" or tuple(merge.params["shape"]) != (m, h * n):
        return False
    return all(_product_reader(r, reads) for r in reads.get(merge.outputs[0], [None]))


def _product_reader(reader, reads) -> bool:
    if reader is None:
        return False
    if reader.prim == "matmul":
        return True
    return reader.prim == "transpose" and all(
        r is not None and r.prim == "matmul" for r in reads.get(reader.outputs[0], [None]))


def _only(reads, v):
    found = reads.get(v, [])
    return found[0] if len(found) == 1 else None


def _batch(v) -> bool:
    return isinstance(v, Value) and v.aval.kind == "array" and v.aval.is_float \
        and v.aval.known_shape is not None and len(v.aval.known_shape) == 3


def _transposed_product(node, producers):
    """``C = (B^T @ A^T).transpose(0, 2, 1)`` in place of ``C = A @ B`` (C's Value kept)."""
    a, b = node.inputs
    made = []
    at, bt = _swapped(a, producers, made, node), _swapped(b, producers, made, node)
    ct = Value(infer("matmul", [bt.aval, at.aval], [None, None], {}))
    made.append(Node("matmul", (bt, at), {}, (ct,), node.source, node.phase))
    made.append(Node("transpose", (ct,), {"axes": _SWAP}, node.outputs, node.source,
                     node.phase))
    return made


def _swapped(x, producers, made, node):
    """``x.transpose(0, 2, 1)``: the input of ``x`` where ``x`` is that transpose already."""
    inner = producers.get(x)
    if inner is not None and inner.prim == "transpose" and \
            tuple(inner.params.get("axes") or ()) == _SWAP:
        return inner.inputs[0]
    out = Value(infer("transpose", [x.aval], [None], {"axes": _SWAP}))
    made.append(Node("transpose", (x,), {"axes": _SWAP}, (out,), node.source, node.phase))
    return out
