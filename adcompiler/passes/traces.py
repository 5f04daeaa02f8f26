"""An adjoint's ``sum(x * I)`` with ``I`` a constant identity matrix as the sum of ``x``'s
diagonal: the cotangent of ``c`` in ``K + c * np.eye(n)`` (a GP's noise, a ridge penalty's
weight), which the product rule writes as an n x n product and its sum, is n entries' sum.

Before: ``dnoise = (dK * const).sum()`` (``const`` the eye). After: ``dnoise =
dK.reshape((n * n,))[diagonal].sum()``.

Invariants: only adjoint code (a user's own ``np.sum(A * np.eye(n))`` keeps NumPy's summation),
only a product read by nothing but the sum, whose other operand is an ``(n, n)`` array (no
broadcasting), and an identity held as a graph constant; the sum then adds the same nonzero
terms, in another order (rounding only).
"""

from __future__ import annotations

import numpy as np

from ..ir import Aval, Node, Value, walk
from ..ir.shapes import infer
from .rewrite import Walker, use_counts


def sum_diagonals(graph):
    eyes = {v for v, a in graph.consts.items() if _is_identity(a)}
    if not eyes:
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

