"""The Cholesky rule's two n x n triangular solves as one inverse, where its cotangent's lower
triangle is a multiple of the identity plus a symmetric sum of outer products (a GP
likelihood's: the log-determinant's ``diag(c / diag(L))`` times ``L.T``, the solves' ``u v^T +
v u^T``).

The rule (``templates/factorizations.py``) returns ``tril(G.T) + tril(G, -1)`` with ``G =
solve(L.T, solve(L.T, Phi(S)).T)``, ``Phi`` the lower triangle with its diagonal halved. That is
``Phi(H)`` with ``H = L^-T Sym(S) L^-1``, ``Sym(S)`` the symmetric matrix with ``S``'s lower
triangle. Where ``S = L.T * (c / diag(L)) + sum_i c_i p_i q_i^T`` and the outer products' sum
is symmetric (each ``p q^T`` paired with a ``q p^T`` of the same coefficient), ``Sym(S) = c I +
sum_i c_i p_i q_i^T`` and ``H = c K^-1 + sum_i c_i a_i b_i^T`` with ``a = L^-T p``, ``b = L^-T
q`` (vector solves). ``Phi`` reads only ``H``'s lower triangle, so ``K^-1``'s is enough:
``cho_inverse_lower(L)``, LAPACK's ``potri`` (:func:`adcompiler.ir.primitives.
cho_inverse_lower`), at n = 300 one thread about 1.1 ms where the two solves took 2.5.

Before: ``t9 = solve_triangular(L, solve_triangular(L, 0.5 * (tril(t8) + tril(t8, k=-1)),
trans=1).T, trans=1)``, ``dK = tril(t9.T) + tril(t9, k=-1)``. After: ``t8 =
dpotri(L.T, lower=0)[0].T - t6[:, None] * t7 - t7[:, None] * t6``, ``dK = 0.5 * (tril(t8) +
tril(t8, k=-1))``.

Invariants: only where SciPy imports (the spelling is SciPy's LAPACK wrapper), only adjoint
code (plain code, transformed again, keeps the solves: the primitive has no rule), only 2-D
float64 matrices of known shape, ``L`` a ``cholesky`` output of the same scope (its upper
triangle exactly zero: ``L.T * d``'s lower triangle is its diagonal, and ``potri`` leaves that
zero triangle as it is), the solves' ``lower=True, trans=1``; the value is the rule's up to
rounding (``L_ii * (c / L_ii)`` is ``c`` within an ulp). NumPy code only (``pipeline``: other
backends skip this pass).
"""

from __future__ import annotations

from ..ir import Literal, Node, Value, walk
from ..ir.shapes import infer
from .dce import eliminate_dead_code
from .inverses import _transposed
from .low_rank_products import _broadcast_outer, _is_scalar, _is_vector
from .rewrite import Walker
from .traces import _diagonal_index
from ..templates.factorizations import has_scipy


def invert_cholesky_adjoints(graph):
    """Every Cholesky rule's pair of n x n solves with a low-rank-plus-identity cotangent, as
    ``cho_inverse_lower``."""
    if not any(n.prim == "cholesky" for n in walk(graph.nodes)) or not has_scipy():
        return graph
    changed: list = []
    graph = Walker(leave=lambda nodes, scope: _rewritten(graph, nodes, changed)).graph(graph)
    return eliminate_dead_code(graph) if changed else graph


def _rewritten(graph, nodes, changed):
    producers = {n.outputs[0]: n for n in nodes if len(n.outputs) == 1}
    factors = {id(n.outputs[0]) for n in nodes if n.prim == "cholesky" and n.outputs}
    if not factors:
        return nodes
    out = []
    for node in nodes:
        replaced = _inverted(graph, node, producers, factors)
        if replaced is not None:
            changed.append(node)
        out.extend(replaced if replaced is not None else (node,))
    return out


def _inverted(graph, node, producers, factors):
    """The nodes computing ``node`` (the rule's read-back) from ``cho_inverse_lower``, or None."""
    matched = _read_back(node, producers)
    if matched is None:
        return None
    L, s = matched
    if id(L) not in factors or not _known_matrix(s):
        return None
    terms = _terms(graph, s, L, producers, 1.0, [])
    if terms is None or not _symmetric(terms):
        return None
    return _build(L, terms, node)


def _read_back(node, producers):
    """``(L, S)`` where ``node`` is ``tril(G.T) + tril(G, -1)``, ``G = solve_triangular(L,
    solve_triangular(L, Phi(S), trans=1).T, trans=1)`` (lower), else None."""
    if node.prim != "add" or node.phase != "adjoint" or node.params or len(node.inputs) != 2:
        return None
    trils = [producers.get(v) for v in node.inputs]
    if any(t is None or t.prim != "tril" for t in trils):
        return None
    whole, strict = sorted(trils, key=lambda t: t.params.get("k", 0), reverse=True)
    if whole.params.get("k", 0) != 0 or strict.params.get("k") != -1:
        return None
    g, _ = _transposed(whole.inputs[0], producers)
    if g is None or g is not strict.inputs[0]:
        return None
    outer = _solve_lt(g, producers)
    inner_t = _transposed(outer[1], producers)[0] if outer else None
    inner = _solve_lt(inner_t, producers) if inner_t is not None else None
    if inner is None or inner[0] is not outer[0]:
        return None
    s = _phi_of(inner[1], producers)
    return (outer[0], s) if s is not None else None


def _solve_lt(v, producers):
    """``(L, b)`` where ``v`` is ``solve_triangular(L, b, lower=True, trans=1)``, else None."""
    made = producers.get(v)
    if (made is None or made.prim != "solve_triangular" or not made.params.get("lower")
            or made.params.get("trans") != 1 or made.params.get("unit_diagonal")):
        return None
    return made.inputs[0], made.inputs[1]


def _phi_of(v, producers):
    """``S`` where ``v`` is ``0.5 * (tril(S) + tril(S, -1))`` (the rule's Phi), else None."""
    made = producers.get(v)
    if made is None or made.prim != "multiply" or len(made.inputs) != 2:
        return None
    half, total = made.inputs if not isinstance(made.inputs[0], Value) else made.inputs[::-1]
    if not isinstance(half, Literal) or half.value != 0.5:
        return None
    summed = producers.get(total)
    if summed is None or summed.prim != "add" or len(summed.inputs) != 2:
        return None
    trils = [producers.get(u) for u in summed.inputs]
    if any(t is None or t.prim != "tril" for t in trils):
        return None
    ks = sorted(t.params.get("k", 0) for t in trils)
    s = trils[0].inputs[0]
    return s if ks == [-1, 0] and trils[1].inputs[0] is s else None


def _terms(graph, v, L, producers, scale, factors, found=None):
    """``[(kind, number, factors, operands)]``: ``S``'s sum tree as identity terms ("eye", from
    ``L.T * (c / diag(L))``) and outer products ("outer", ``(p, q)``), each with its
    coefficient (a number times scalar values); None where a leaf is neither."""
    found = [] if found is None else found
    node = producers.get(v) if isinstance(v, Value) else None
    if node is None or node.params or not _known_matrix(v):
        return None
    leaf = _leaf(graph, node, L, producers)
    if leaf is not None:
        kind, operands, c = leaf
        number, more = _scaled(scale, factors, c)
        found.append((kind, number, more, operands))
        return found
    if node.prim == "negative":
        return _terms(graph, node.inputs[0], L, producers, -scale, factors, found)
    if node.prim in ("add", "subtract") and all(_known_matrix(u) for u in node.inputs):
        a, b = node.inputs
        sign = -1.0 if node.prim == "subtract" else 1.0
        if _terms(graph, a, L, producers, scale, factors, found) is None:
            return None
        return _terms(graph, b, L, producers, sign * scale, factors, found)
    if node.prim == "multiply" and len(node.inputs) == 2:
        for m, c in (node.inputs, node.inputs[::-1]):
            if _known_matrix(m) and m.aval.known_shape == v.aval.known_shape and _is_scalar(c):
                number, more = _scaled(scale, factors, c)
                return _terms(graph, m, L, producers, number, more, found)
    return None


def _scaled(scale, factors, c):
    """The coefficient ``scale * factors`` times ``c`` (a number or a scalar value)."""
    if isinstance(c, Value):
        return scale, tuple(sorted((*factors, c), key=id))
    return scale * float(c.value if isinstance(c, Literal) else c), factors


def _leaf(graph, node, L, producers):
    """``(kind, operands, c)`` for an identity term or an outer product, else None."""
    pair = _broadcast_outer(node, producers)
    if pair is not None:
        return "outer", pair, 1.0
    if node.prim == "outer" and all(_is_vector(u) for u in node.inputs):
        return "outer", tuple(node.inputs), 1.0
    if node.prim == "transpose":
        inner = producers.get(node.inputs[0])
        if (inner is not None and inner.prim == "outer" and node.params.get("axes") in
                (None, (1, 0)) and all(_is_vector(u) for u in inner.inputs)):
            return "outer", tuple(inner.inputs[::-1]), 1.0
        return None
    if node.prim == "multiply" and len(node.inputs) == 2:
        for t, d in (node.inputs, node.inputs[::-1]):
            if isinstance(t, Value) and _transposed(t, producers)[0] is L:
                c = _over_diagonal(graph, d, L, producers)
                if c is not None:
                    return "eye", (), c
    return None


def _over_diagonal(graph, d, L, producers):
    """``c`` where ``d`` is ``c / diag(L)`` (``c`` a number or scalar), else None: then ``L.T *
    d``'s lower triangle is ``c`` times the identity."""
    made = producers.get(d) if isinstance(d, Value) else None
    if made is None or made.prim != "divide" or not _is_vector(d):
        return None
    c, diag = made.inputs
    picked = producers.get(diag) if isinstance(diag, Value) else None
    if not _is_scalar(c) or picked is None or picked.prim != "getitem":
        return None
    flat = producers.get(picked.inputs[0])
    if (flat is None or flat.prim != "reshape" or flat.inputs[0] is not L
            or not _diagonal_index(graph, picked)):
        return None
    return c


def _symmetric(terms) -> bool:
    """Whether the outer products' sum is symmetric: each ``p q^T`` paired with a ``q p^T`` of
    the same coefficient (or ``p`` is ``q``)."""
    def key(number, factors, p, q):
        return number, tuple(map(id, factors)), id(p), id(q)
    outers = sorted(key(n, f, *ops) for kind, n, f, ops in terms if kind == "outer")
    swapped = sorted(key(n, f, *ops[::-1]) for kind, n, f, ops in terms if kind == "outer")
    return outers == swapped


def _build(L, terms, at):
    """``0.5 * (tril(H) + tril(H, -1))`` into ``at``'s output, ``H = sum of the terms``."""
    src, phase, matrix = at.source, at.phase, at.outputs[0].aval
    built: list = []

    def emit(prim, args, params=None, aval=matrix):
        out = Value(aval)
        built.append(Node(prim, tuple(args), params or {}, (out,), src, phase))
        return out

    inverse, solved, total = None, {}, None
    for kind, number, factors, operands in terms:
        if kind == "eye":
            if inverse is None:
                inverse = emit("cho_inverse_lower", (L,))
            term = inverse
        else:
            for u in operands:    # L^-T p, one vector solve per vector
                if id(u) not in solved:
                    solved[id(u)] = emit("solve_triangular", (L, u),
                                         {"lower": True, "trans": 1}, u.aval)
            a, b = (solved[id(u)] for u in operands)
            column = emit("expand_dims", (a,), {"axis": 1},
                          infer("expand_dims", [a.aval], [None], {"axis": 1}))
            term = emit("multiply", (column, b))
        for f in factors:
            term = emit("multiply", (term, f))
        if abs(number) != 1.0:
            term = emit("multiply", (term, Literal(abs(number))))
        if total is None:
            total = term if number > 0 else emit("negative", (term,))
        else:
            total = emit("add" if number > 0 else "subtract", (total, term))
    lower = emit("add", (emit("tril", (total,)), emit("tril", (total,), {"k": -1})))
    built.append(Node("multiply", (Literal(0.5), lower), {}, at.outputs, src, phase))
    return built


def _known_matrix(v) -> bool:
    return (isinstance(v, Value) and v.aval.kind == "array" and v.aval.ndim == 2
            and v.aval.known_shape is not None
            and all(isinstance(d, int) for d in v.aval.known_shape)
            and v.aval.dtype == "float64")
