"""An adjoint's ``sum(x * I)`` with ``I`` a constant identity matrix as the sum of ``x``'s
diagonal: the cotangent of ``c`` in ``K + c * np.eye(n)`` (a GP's noise, a ridge penalty's
weight), which the product rule writes as an n x n product and its sum, is n entries' sum.

Before: ``dnoise = (dK * const).sum()`` (``const`` the eye). After: ``dnoise =
dK.reshape((n * n,))[diagonal].sum()``.

Two more facts of traces and diagonals, the same n^3 -> n^2 saving: ``np.trace(A @ B)`` (its
diagonal read from the product) is ``np.sum(A * B.T)``, in the user's code too; and a product
with a diagonal matrix built by the adjoint (the cotangent of a trace, ``zeros`` with ``v`` on
the diagonal) is a scaling, ``v[:, None] * M`` or ``M * v``: before, ``dA = dt4 @ B.T`` with
``dt4`` the identity, an n^3 product; after, ``dA = dt2[:, None] * B.T``.

Invariants: only adjoint code for ``sum(x * I)`` (a user's own ``np.sum(A * np.eye(n))`` keeps
NumPy's summation), only a product read by nothing but the sum, whose other operand is an
``(n, n)`` array (no broadcasting), and an identity held as a graph constant; the sum then adds
the same nonzero terms, in another order (rounding only). A trace's product, its flattening and
its diagonal are read only by the sum; a diagonal matrix is recognised only as the scatter of
``n`` values into the constant diagonal positions of ``zeros(n * n)``, reshaped ``(n, n)``.
"""

from __future__ import annotations

import numpy as np

from ..ir import Aval, Node, Value, walk
from ..ir.shapes import infer
from .rewrite import Walker, use_counts


def sum_diagonals(graph):
    eyes = {v for v, a in graph.consts.items() if _is_identity(a)}
    if not eyes and not any(_is_diagonal(a) for a in graph.consts.values()):
        return graph
    uses = use_counts(graph)
    producers = {n.outputs[0]: n for n in walk(graph.nodes) if len(n.outputs) == 1}
    dead: set = set()   # the products replaced: their sum was their only reader (before
    #                     fusion, which counts readers, so they go now, not at the next DCE)
    return Walker(leave=lambda nodes, scope: _rewritten(graph, nodes, eyes, uses, producers,
                                                        dead)).graph(graph)


def _is_identity(a) -> bool:
    return (isinstance(a, np.ndarray) and a.ndim == 2 and a.shape[0] == a.shape[1] > 1
            and a.dtype.kind == "f" and np.array_equal(a, np.eye(a.shape[0])))


def _other_operand(node, eyes):
    """``x`` of ``x * I`` (or ``I * x``) with ``x`` of the identity's shape, else None."""
    a, b = node.inputs
    for x, eye in ((a, b), (b, a)):
        if (eye in eyes and isinstance(x, Value) and x.aval.kind == "array"
                and x.aval.known_shape == eye.aval.known_shape):
            return x
    return None


def _is_total(node) -> bool:
    """A sum of every entry: ``np.sum(x)``, or ``sum_to(x, ())`` (a scalar's cotangent)."""
    if node.prim == "sum":
        return node.params.get("axis") is None and not node.params.get("keepdims")
    return node.prim == "sum_to" and tuple(node.params.get("shape", (None,))) == ()


def _rewritten(graph, nodes, eyes, uses, producers, dead):
    out = []
    for node in nodes:
        replaced = _trace_of_product(graph, node, uses, producers, dead)
        if replaced is None:
            replaced = _diagonal_product(graph, node, producers)
        if replaced is not None:
            out.extend(replaced)
            continue
        product = producers.get(node.inputs[0]) if node.inputs else None
        x = None
        if (_is_total(node) and node.phase == "adjoint" and product is not None
                and product.prim == "multiply" and uses.get(node.inputs[0]) == 1):
            x = _other_operand(product, eyes)
        if x is None:
            out.append(node)
            continue
        dead.add(product)
        out.extend(_diagonal_sum(graph, node, x))
    return [n for n in out if n not in dead]


def _diagonal_sum(graph, node, x):
    """``x.reshape(-1)[diagonal].sum()`` in ``node``'s place (its output kept)."""
    n = x.aval.known_shape[0]
    positions = np.arange(0, n * n, n + 1)
    diagonal = graph.name_value(Value(Aval.of(positions)), "diagonal")
    graph.consts[diagonal] = positions
    flat = Value(infer("reshape", [x.aval], [None], {"shape": (n * n,)}))
    picked = Value(infer("getitem", [flat.aval, diagonal.aval], [None, None],
                         {"index": (("a", 0),)}))
    src, phase = node.source, node.phase
    return (Node("reshape", (x,), {"shape": (n * n,)}, (flat,), src, phase),
            Node("getitem", (flat, diagonal), {"index": (("a", 0),)}, (picked,), src, phase),
            Node("sum", (picked,), {"axis": None}, node.outputs, src, phase))



# ---- traces of products, products with diagonal matrices ------------------------------------
def _is_diagonal(a) -> bool:
    """The flat positions of an n x n matrix's diagonal (what ``np.trace`` gathers)."""
    return (isinstance(a, np.ndarray) and a.ndim == 1 and a.dtype.kind == "i" and a.size > 1
            and np.array_equal(a, np.arange(0, a.size * a.size, a.size + 1)))


def _diagonal_index(graph, node) -> bool:
    """``node`` reads or writes ``flat[positions]`` with ``positions`` a constant diagonal."""
    return (len(node.inputs) == 2 and node.params.get("index") in ((("u", 0),), (("a", 0),))
            and node.inputs[1] in graph.consts and _is_diagonal(graph.consts[node.inputs[1]]))


def _trace_of_product(graph, node, uses, producers, dead):
    """``sum(A * B.T)`` in place of ``sum((A @ B).reshape(-1)[diagonal])``, else None."""
    if not (node.prim == "sum" and _is_total(node)):
        return None
    chain, x = [], node.inputs[0]
    for prim in ("getitem", "reshape", "matmul"):
        made = producers.get(x)
        if made is None or made.prim != prim or uses.get(x) != 1:
            return None
        chain.append(made)
        x = made.inputs[0]
    picked, flat, product = chain
    a, b = product.inputs
    if not (_diagonal_index(graph, picked) and all(_is_matrix(v) for v in (a, b))):
        return None
    dead.update(chain)
    bt = Value(infer("transpose", [b.aval], [None], {}))
    terms = Value(infer("multiply", [a.aval, bt.aval], [None, None], {}))
    src, phase = node.source, node.phase
    return (Node("transpose", (b,), {}, (bt,), src, phase),
            Node("multiply", (a, bt), {}, (terms,), src, phase),
            Node("sum", (terms,), {"axis": None}, node.outputs, src, phase))


def _is_matrix(v) -> bool:
    return isinstance(v, Value) and v.aval.kind == "array" and v.aval.ndim == 2


def _diagonal_values(graph, v, producers):
    """``d`` where ``v`` is ``zeros(n * n)`` with ``d`` scattered on the diagonal, reshaped
    ``(n, n)``: ``np.diag(d)`` as the adjoint of a trace builds it."""
    shaped = producers.get(v) if isinstance(v, Value) else None
    if shaped is None or shaped.prim != "reshape" or not _is_matrix(v):
        return None
    scatter = producers.get(shaped.inputs[0])
    if scatter is None or scatter.prim != "scatter_add" or not _diagonal_index(graph, scatter):
        return None
    values = scatter.inputs[0]
    n = v.aval.known_shape[0]
    if (not isinstance(values, Value) or values.aval.known_shape != (n,)
            or tuple(scatter.params["shape"]) != (n * n,)):
        return None
    return values


def _diagonal_product(graph, node, producers):
    """``d[:, None] * M`` for ``diag(d) @ M``, ``M * d`` for ``M @ diag(d)``, else None."""
    if node.prim != "matmul" or node.params:
        return None
    x, y = node.inputs
    src, phase = node.source, node.phase
    d = _diagonal_values(graph, x, producers)
    if d is not None and isinstance(y, Value) and y.aval.ndim == 2:
        column = Value(infer("expand_dims", [d.aval], [None], {"axis": 1}))
        return (Node("expand_dims", (d,), {"axis": 1}, (column,), src, phase),
                Node("multiply", (column, y), {}, node.outputs, src, phase))
    if d is not None and isinstance(y, Value) and y.aval.ndim == 1:
        return (Node("multiply", (d, y), {}, node.outputs, src, phase),)
    d = _diagonal_values(graph, y, producers)
    if d is not None and isinstance(x, Value) and x.aval.ndim in (1, 2):
        return (Node("multiply", (x, d), {}, node.outputs, src, phase),)
    return None
