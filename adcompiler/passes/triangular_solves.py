"""A ``solve`` with a Cholesky factor as a triangular solve: ``np.linalg.solve(L, b)`` and
``solve(L.T, b)`` where ``L = np.linalg.cholesky(K)`` (the textbook GP likelihood, and the
adjoint solves its rules write) become ``solve_triangular(L, b, lower=True)`` (``trans=1`` for
``L.T``): O(n^2) per column where LU is O(n^3), and no factorization of a matrix already
factored (measured on the GP workload at n = 300: four general solves were over half the call).

Invariants: only where SciPy's ``solve_triangular`` is importable (the generated code calls
``scipy.linalg.solve_triangular``; for stacks of matrices SciPy 1.15 or later), and only for a
matrix that is a ``cholesky`` output of the same scope, or its transpose of the last two axes;
the values are the solve's (the factor's other triangle is exactly zero, as NumPy returns it).
"""

from __future__ import annotations

from ..ir import Node, Value, walk
from ..templates.factorizations import has_scipy
from .inverses import _transposed
from .rewrite import Walker


def solve_with_factors(graph):
    """Every scope's solves with a Cholesky factor (or its transpose) as triangular solves
    (SciPy is asked for only where there is a factor: compiling imports it no earlier)."""
    if not any(n.prim == "cholesky" for n in walk(graph.nodes)) or not has_scipy():
        return graph
    return Walker(leave=lambda nodes, scope: _with_triangular_solves(nodes)).graph(graph)


def _with_triangular_solves(nodes):
    factors = {id(n.outputs[0]) for n in nodes if n.prim == "cholesky" and n.outputs}
    if not factors:
        return nodes
    producers = {n.outputs[0]: n for n in nodes if len(n.outputs) == 1}
    return [_triangular(node, factors, producers) or node for node in nodes]


def _triangular(node, factors, producers):
    """``node`` as a triangular solve, or None."""
    if node.prim != "solve" or not isinstance(node.inputs[0], Value):
        return None
    a, b = node.inputs
    if id(a) in factors:
        factor, trans = a, 0
    else:
        factor, _ = _transposed(a, producers)
        if factor is None or id(factor) not in factors:
            return None
        trans = 1
    if (factor.aval.ndim or 0) > 2 and not has_scipy(batched=True):
        return None
    params = {"lower": True, **({"trans": 1} if trans else {})}
    return Node("solve_triangular", (factor, b), params, node.outputs, node.source, node.phase)
