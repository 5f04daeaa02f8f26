"""A matrix product with a sum of outer products and diagonal matrices as products of vectors:
``A @ (D - outer(p, q) - outer(r, s).T)`` is ``A * d - (A @ p)[:, None] * q - (A @ s)[:, None]
* r``, O(n^2) where the product is O(n^3). The adjoints of solves write such sums (``solve``'s
rule gives ``-outer(solve(K.T, g), x)``, a log-determinant's diagonal its ``diag(1 / l)``), and
the Cholesky rule multiplies its cotangent by ``L.T``: in a GP likelihood's gradient the n x n
product ``L.T @ dL`` was a third of its O(n^3) work.

Before: ``t14 = t8 @ dL`` with ``dL = dt3.reshape((n, n)) - t12 - t13``, ``t12 =
np.outer(u, t9)``, ``t13 = np.outer(t11, alpha).T``. After: ``t14 = t8 * dt2 - (t8 @ u)[:, None]
* t9 - (t8 @ alpha)[:, None] * t11``, one fused chain into a planned buffer.

Invariants: only adjoint code (a user's own product keeps NumPy's value), only a ``matmul`` of
two matrices (2-D, no stacks) one of which is a tree of ``add``, ``subtract``, ``negative`` and
products with a scalar, of operands of its own shape (no broadcasting), whose leaves are all
``outer`` products of vectors (or ``p[:, None] * q``), their transposes, or diagonal matrices
as ``passes.traces`` recognises them (``zeros`` with values scattered on the diagonal), with at
least one outer product. The value is the product's, up to rounding (the same terms summed in
another order; a diagonal's zero entries are not multiplied, so an infinite entry of the other
matrix gives inf, not NaN). ``A @ p`` with ``p`` a triangular solve's ``solve_triangular(T, b,
trans=t)`` and ``A`` its ``op(T)`` (``T`` itself, or ``T.T``) is ``b`` (the product undoes the
solve; exact but for the solve's rounding, and a singular ``T`` no longer gives inf or NaN
there): the GP's ``L.T @ solve(L.T, g)`` reads ``g``, and that adjoint solve goes. Nodes the
rewrite leaves unread go at once (fusion, which runs later, counts readers).
"""

from __future__ import annotations

from ..ir import Node, Value, walk
from ..ir.shapes import infer
from .dce import eliminate_dead_code
from .rewrite import Walker
from .traces import _diagonal_values, _is_matrix

_LINEAR = ("add", "subtract", "negative", "multiply")


def expand_low_rank_products(graph):
    """Every matrix product with a sum of outer products and diagonals, as vector products."""
    if not any(n.prim in ("outer", "expand_dims") for n in walk(graph.nodes)):
        return graph
    changed = []
    graph = Walker(leave=lambda nodes, scope: _rewritten(graph, nodes, changed)).graph(graph)
    return eliminate_dead_code(graph) if changed else graph


def _rewritten(graph, nodes, changed):
    producers = {n.outputs[0]: n for n in nodes if len(n.outputs) == 1}
    out = []
    for node in nodes:
        replaced = _expanded(graph, node, producers)
        if replaced is None:
            out.append(node)
            continue
        changed.append(node)
        out.extend(replaced)
    return out


def _expanded(graph, node, producers):
    """The nodes computing ``node``'s product term by term (its output kept), or None."""
    if (node.prim != "matmul" or node.params or node.phase != "adjoint"
            or not all(_is_matrix(v) for v in node.inputs)):
        return None
    x, y = node.inputs
    for side, structured, other in ((1, y, x), (0, x, y)):
        leaves = _leaves(graph, structured, producers)
        if leaves is not None and any(kind != "diagonal" for kind, _ in leaves.values()):
            built: list = []
            _rebuild(structured, side, other, leaves, producers, built, node, node.outputs[0])
            return built
    return None


def _leaves(graph, v, producers, found=None):
    """``{value: (kind, operands)}`` for the leaves of ``v``'s sum tree, or None where a leaf
    is a general matrix."""
    found = {} if found is None else found
    node = producers.get(v) if isinstance(v, Value) else None
    if node is None:
        return None
    if node.prim == "outer" and all(_is_vector(u) for u in node.inputs):
        found[v] = ("outer", node.inputs)
        return found
    if node.prim == "transpose" and node.params.get("axes") in (None, (1, 0)):
        inner = producers.get(node.inputs[0]) if isinstance(node.inputs[0], Value) else None
        if inner is not None and inner.prim == "outer" and all(_is_vector(u)
                                                               for u in inner.inputs):
            found[v] = ("outer", inner.inputs[::-1])
            return found
        return None
    pair = _broadcast_outer(node, producers)
    if pair is not None:
        found[v] = ("outer", pair)
        return found
    d = _diagonal_values(graph, v, producers)
    if d is not None:
        found[v] = ("diagonal", (d,))
        return found
    if node.prim not in _LINEAR or node.params:
        return None
    operands = _matrix_operands(node, v)
    if operands is None:
        return None
    for u in operands:
        if _leaves(graph, u, producers, found) is None:
            return None
    return found


def _broadcast_outer(node, producers):
    """``(p, q)`` where ``node`` is ``p[:, None] * q`` (or ``q * p[:, None]``, ``q`` a vector:
    the form ``matmul``'s rule writes ``outer`` in), else None."""
    if node.prim != "multiply" or len(node.inputs) != 2:
        return None
    a, b = node.inputs
    for column, row in ((a, b), (b, a)):
        made = producers.get(column) if isinstance(column, Value) else None
        if (made is not None and made.prim == "expand_dims"
                and made.params.get("axis") in (1, -1) and _is_vector(made.inputs[0])
                and _is_vector(row)):
            return made.inputs[0], row
    return None


def _matrix_operands(node, v):
    """The operands of a linear node that are matrices of ``v``'s shape (a product's one, the
    other a scalar), or None where one broadcasts."""
    shape = v.aval.known_shape
    if node.prim == "multiply":
        a, b = node.inputs
        for m, c in ((a, b), (b, a)):
            if _same_shape(m, shape) and _is_scalar(c):
                return (m,)
        return None
    return node.inputs if all(_same_shape(u, shape) for u in node.inputs) else None


def _rebuild(v, side, other, leaves, producers, built, at, out):
    """Append the nodes of ``v``'s tree times ``other`` (``other @ v`` where ``side`` is 1,
    ``v @ other`` where 0) to ``built``, the result in ``out`` (a new value where None)."""
    src, phase = at.source, at.phase
    shape = infer("matmul", [other.aval, v.aval] if side else [v.aval, other.aval],
                  [None, None], {})
    out = out if out is not None else Value(shape)
    if v in leaves:
        built.extend(_term(leaves[v], side, other, out, src, phase, producers))
        return out
    node = producers[v]
    args = tuple(_rebuild(u, side, other, leaves, producers, built, at, None)
                 if isinstance(u, Value) and u.aval.ndim == 2 else u for u in node.inputs)
    built.append(Node(node.prim, args, {}, (out,), src, phase))
    return out


def _term(leaf, side, other, out, src, phase, producers):
    """The nodes of one leaf times ``other``: ``A * d`` / ``d[:, None] * A`` for a diagonal,
    ``(A @ p)[:, None] * q`` / ``p[:, None] * (q @ A)`` for ``outer(p, q)`` (a broadcast product,
    which fusion takes into the sum's chain: no n x n array of its own); ``A @ p`` is ``b`` where
    ``p`` solves ``A p = b`` by a triangular solve."""
    kind, operands = leaf
    if kind == "diagonal":
        (d,) = operands
        if side:
            return (Node("multiply", (other, d), {}, (out,), src, phase),)
        column = Value(infer("expand_dims", [d.aval], [None], {"axis": 1}))
        return (Node("expand_dims", (d,), {"axis": 1}, (column,), src, phase),
                Node("multiply", (column, other), {}, (out,), src, phase))
    p, q = operands
    solved = _solved(other, p, producers) if side else None
    if solved is not None:    # op(T) @ solve(op(T), b) is b
        made, vector = (), solved
    else:
        pair = (other, p) if side else (q, other)
        vector = Value(infer("matmul", [u.aval for u in pair], [None, None], {}))
        made = (Node("matmul", pair, {}, (vector,), src, phase),)
    column, row = (vector, q) if side else (p, vector)
    shaped = Value(infer("expand_dims", [column.aval], [None], {"axis": 1}))
    return (*made, Node("expand_dims", (column,), {"axis": 1}, (shaped,), src, phase),
            Node("multiply", (shaped, row), {}, (out,), src, phase))


def _solved(other, p, producers):
    """``b`` where ``p`` is ``solve_triangular(T, b, trans=t)`` and ``other`` is ``T``
    (``t`` 0) or ``T.T`` (``t`` 1): the product undoes the solve (a Cholesky rule's ``L.T``
    times the adjoint solve's ``solve(L.T, g)``), else None."""
    solve = producers.get(p)
    if (solve is None or solve.prim != "solve_triangular"
            or solve.params.get("unit_diagonal") or not _is_vector(solve.inputs[1])):
        return None
    factor, trans = solve.inputs[0], solve.params.get("trans", 0)
    if trans == 0 and other is factor:
        return solve.inputs[1]
    made = producers.get(other)
    if (trans == 1 and made is not None and made.prim == "transpose"
            and made.params.get("axes") in (None, (1, 0)) and made.inputs[0] is factor):
        return solve.inputs[1]
    return None


def _is_vector(v) -> bool:
    return isinstance(v, Value) and v.aval.kind == "array" and v.aval.ndim == 1


def _is_scalar(v) -> bool:
    return not isinstance(v, Value) or (v.aval.ndim == 0)


def _same_shape(v, shape) -> bool:
    return (isinstance(v, Value) and v.aval.kind == "array" and v.aval.ndim == 2
            and v.aval.known_shape == shape and all(isinstance(d, int) for d in shape))
