"""Broadcast-then-reduce as matrix products: a sum over one axis of a product of two 2-D arrays
broadcast into three axes (``np.sum(A[:, None, :] * B[None, :, :], axis=2)``, the adjoint's
``sum_to(G[:, :, None] * B[None])``) is a ``@``, and the squared distances
``np.sum((X[:, None, :] - mu[None, :, :]) ** 2, axis=2)`` with their adjoint are row norms and
one ``@``, as a careful person writes them (``torch.cdist``'s matmul mode): no ``(n, k, d)``
temporary.

Before: ``diff = X[:, None, :] - mu[None]; sq = (diff * diff).sum(axis=2)`` and, in the
adjoint, ``dmu = -(dsq[:, :, None] * diff).sum(axis=0)``. After (``c`` the rows' mean of the
smaller operand)::

    Xc, muc = X - c, mu - c
    sq = np.maximum((Xc*Xc).sum(1)[:, None] + (muc*muc).sum(1)[None, :] - 2 * (Xc @ muc.T), 0)
    dmu = -(dsq.T @ Xc - dsq.sum(axis=0)[:, None] * muc)

Precision: the expanded distance adds terms of size |x - c|^2 + |mu - c|^2 to get |x - mu|^2, so
its rounding error is eps (|x - c|^2 + |mu - c|^2) where the direct form's is eps |x - mu|^2.
Translating both operands by ``c`` first (exact for a difference) removes the loss from points
far from the origin (X ~ 1e4 + N(0, 1): without it 8 of 16 digits go); what remains is the
spread of the configuration around ``c`` against the distances, as in every matmul cdist. The
clamp at 0 keeps a rounded-negative distance of a point to itself from a ``sqrt`` NaN (it only
changes values of order eps |x - c|^2). The adjoint's ``G.T @ Xc - G.sum(0)[:, None] * muc``
loses only eps |x - c| / |x - mu| relatively, and is translated by the same ``c``.

When: the distance forms only in float64 and where the broadcast product holds at least
:data:`MIN_ENTRIES` entries and the reduced axis at least two (the expanded form costs some ten
NumPy calls, the direct one three passes over the cube: below that size the calls cost more
than the passes save; ``torch.cdist``'s default ``compute_mode`` takes the matmul form from 26
rows on either side, in every dtype and untranslated). In float32 the spread-to-distance loss
is visible (the mixture's dmu 8e-6 from the float64 gradient, against 5e-7 for the direct
form; scikit-learn computes float32 distances in float64 for this reason), so float32 keeps
the broadcast. Plain products always (one ``@`` for a multiply and a sum, exact up to the order
of the terms). Invariants: only sums whose product (and, for the distances, whose square)
nothing else reads; the result keeps the reduction's output value, shape and dtype (floats only).
"""

from __future__ import annotations

from ..ir import Literal, Value, sizing, walk
from ..ir.builder import Builder
from .rewrite import Walker, substitute, use_counts

MIN_ENTRIES = 1 << 12   # 4096 entries (32 KiB of float64) of the (n, k, d) product


def contract_broadcast_products(graph):
    uses = use_counts(graph)
    producers = {n.outputs[0]: n for n in walk(graph.nodes) if len(n.outputs) == 1}
    readers: dict = {}
    for node in walk(graph.nodes):
        for x in node.inputs:
            readers.setdefault(x, []).append(node)
    for x, nodes in readers.items():   # dX's and dmu's sums of one G * diff: read by sums only
        if uses.get(x) == len(nodes) and all(_reduction(n) is not None for n in nodes):
            uses[x] = 1
    subst: dict = {}
    Walker(leave=lambda nodes, scope: _rewritten(graph, nodes, uses, producers, subst)
           ).graph(graph)
    return substitute(graph, subst)


def _rewritten(graph, nodes, uses, producers, subst):
    out, centred = [], {}   # centred: a difference -> its operands translated (this scope's)
    flat = {}               # a rewritten keepdims sum -> its 2-D value (before the reshape)
    for node in nodes:
        x = node.inputs[0] if node.inputs else None
        if (node.prim == "reshape" and x in flat
                and tuple(node.params["shape"]) == flat[x].aval.known_shape):
            subst[node.out] = graph.take_name(flat[x], node.out)   # dmu's (1, k, d) -> (k, d)
            continue
        out.append(node)
        reduced = _reduction(node)
        if reduced is None:
            continue
        b = Builder(graph)
        b.target, b.source, b.phase = [], node.source, node.phase
        with b:
            value = _contracted(b, node.inputs[0], reduced, uses, producers, centred)
        if value is None:
            continue
        out.pop()
        if value.aval.known_shape != node.out.aval.known_shape:
            flat[node.out] = value
            value = b.emit("reshape", (value,), {"shape": node.out.aval.known_shape})
        out.extend(b.target)
        subst[node.out] = graph.take_name(value, node.out)
    return out


# ---- what is reduced ------------------------------------------------------------------------
def _reduction(node):
    """The axis a sum of a 3-D float product reduces, else None: ``sum[axis=r]`` (with or
    without keepdims) or ``sum_to`` of one axis (``(1, k, d)`` or ``(k, d)``)."""
    if node.prim not in ("sum", "sum_to") or not node.inputs:
        return None
    x = node.inputs[0]
    shape = x.aval.known_shape if isinstance(x, Value) else None
    if (shape is None or len(shape) != 3 or min(shape) < 2 or not x.aval.is_float
            or node.out.aval.known_shape is None):
        return None
    if node.prim == "sum":
        axis = node.params.get("axis")
        if isinstance(axis, tuple) and len(axis) == 1:   # np.linalg.norm's axis=(2,)
            (axis,) = axis
        return axis % 3 if isinstance(axis, int) and not isinstance(axis, bool) else None
    target = tuple(node.params["shape"])
    if len(target) == 2 and target == shape[1:]:
        return 0
    kept = [r for r in range(3) if target == shape[:r] + (1,) + shape[r + 1:]]
    return kept[0] if len(target) == 3 and kept else None


def _leaf(v, producers):
    """``(base, axes)`` where ``v`` is a 2-D ``base`` broadcast into three axes, its two axes
    at frame positions ``axes`` (increasing): ``A[:, None, :]``, ``expand_dims(G, 2)``, a
    reshape adding a unit axis, or a 2-D operand broadcast implicitly (axes 1 and 2)."""
    if not isinstance(v, Value) or v.aval.known_shape is None or not v.aval.is_float:
        return None
    if v.aval.ndim == 2:
        return v, (1, 2)
    node = producers.get(v)
    if v.aval.ndim != 3 or node is None or not node.inputs:
        return None
    base = node.inputs[0]
    if not isinstance(base, Value) or base.aval.ndim != 2:
        return None
    axes = tuple(i for i, n in enumerate(v.aval.known_shape) if n != 1)
    if node.prim == "getitem" and len(node.inputs) == 1:
        index = node.params["index"]
        if sorted(index) != sorted([("n",), ("s", None, None, None), ("s", None, None, None)]):
            return None
        axes = tuple(i for i, item in enumerate(index) if item != ("n",))
    elif node.prim not in ("expand_dims", "reshape") or len(axes) != 2:
        return None
    if tuple(v.aval.known_shape[a] for a in axes) != base.aval.known_shape:
        return None
    return base, axes


def _factors(x, producers, uses):
    """``(coefficient, terms)``: ``x`` as a literal coefficient times a product of terms,
    through scalings by literals and negations each read once."""
    coef, node = 1.0, producers.get(x)
    while node is not None and uses.get(x) == 1 and node.prim in ("negative", "multiply"):
        if node.prim == "negative":
            coef, x = -coef, node.inputs[0]
        else:
            a, b = node.inputs
            if not isinstance(a, Literal) and not isinstance(b, Literal):
                return coef, (a, b)
            scale, x = (a, b) if isinstance(a, Literal) else (b, a)
            if not isinstance(scale.value, (int, float)) or isinstance(scale.value, bool):
                return None
            coef *= scale.value
        node = producers.get(x)
    if node is not None and uses.get(x) == 1 and node.prim == "square":
        return coef, (node.inputs[0], node.inputs[0])
    if (node is not None and uses.get(x) == 1 and node.prim == "power"
            and isinstance(node.inputs[1], Literal) and node.inputs[1].value == 2):
        return coef, (node.inputs[0], node.inputs[0])
    return None


# ---- the products ---------------------------------------------------------------------------
def _contracted(b, x, r, uses, producers, centred):
    """The 2-D sum over axis ``r`` of the product ``x`` as products of its 2-D operands, or
    None where ``x`` is not one of the forms (or the distances' size rule says no)."""
    found = _factors(x, producers, uses)
    if found is None:
        return None
    coef, (u, v) = found
    shape = x.aval.known_shape
    leaves = [_leaf(t, producers) for t in (u, v)]
    diffs = [_difference(t, producers, shape) for t in (u, v)]
    if not all(_fits(leaf, shape) for leaf in leaves if leaf):
        return None
    if leaves[0] and leaves[1]:
        value = _contract(b, leaves[0], leaves[1], r)
    elif _distances_pay(x) and u is v and diffs[0] and r in _shared(diffs[0]):
        value = _squared_distances(b, _centred(b, u, diffs[0], centred), r)
    elif _distances_pay(x) and (leaves[0] and diffs[1] or leaves[1] and diffs[0]):
        leaf, diff, t = (leaves[0], diffs[1], v) if leaves[0] else (leaves[1], diffs[0], u)
        a, c = _centred(b, t, diff, centred)
        first = _contract(b, leaf, a, r)
        second = _contract(b, leaf, c, r) if first is not None else None
        value = None if second is None else first - second
    else:
        return None
    if value is None or coef == 1.0:
        return value
    return -value if coef == -1.0 else b.emit("multiply", (Literal(coef), value))


def _fits(leaf, shape) -> bool:
    base, axes = leaf
    return tuple(shape[a] for a in axes) == base.aval.known_shape


def _distances_pay(x) -> bool:
    """Float64 products of at least :data:`MIN_ENTRIES` entries (see the module docstring)."""
    shape = x.aval.known_shape
    return x.aval.dtype == "float64" and shape[0] * shape[1] * shape[2] >= MIN_ENTRIES


def _difference(v, producers, shape):
    """The two leaves of ``v = A↑ - B↑`` where they share exactly one axis, else None."""
    node = producers.get(v)
    if node is None or node.prim != "subtract":
        return None
    leaves = [_leaf(t, producers) for t in node.inputs]
    if not all(leaves) or not all(_fits(leaf, shape) for leaf in leaves):
        return None
    return leaves if len(_shared(leaves)) == 1 else None


def _shared(leaves) -> set:
    return set(leaves[0][1]) & set(leaves[1][1])


def _centred(b, diff, leaves, centred):
    """The difference's two operands translated by the mean row of the smaller one (the same
    difference, smaller terms: see the module docstring); made once per difference."""
    if diff not in centred:
        (s,) = _shared(leaves)
        rows = [base.aval.known_shape[1 - axes.index(s)] for base, axes in leaves]
        small, small_axes = leaves[rows.index(min(rows))]
        mean = b.emit("mean", (small,), {"axis": 1 - small_axes.index(s)})
        centred[diff] = tuple((base - _along(b, mean, axes, s), axes) for base, axes in leaves)
    return centred[diff]


def _along(b, vector, axes, s):
    """``vector`` (over frame axis ``s``) shaped to broadcast against a base of ``axes``."""
    return vector if axes.index(s) == 1 else b.emit("expand_dims", (vector,), {"axis": 1})


def _squared_distances(b, leaves, r):
    """``|a_p|^2 + |c_q|^2 - 2 a_p . c_q`` over the shared axis ``r``, at least 0."""
    (a, aa), (c, ca) = leaves
    out = tuple(i for i in range(3) if i != r)
    norms = [_spread(b, b.emit("sum", (base * base,), {"axis": axes.index(r)}), axes, r, out)
             for base, axes in leaves]
    cross = _contract(b, leaves[0], leaves[1], r)
    return b.emit("maximum", ((norms[0] + norms[1]) - 2.0 * cross, Literal(0.0)))


def _spread(b, vector, axes, r, out):
    """A vector over the other axis of a base of ``axes`` than ``r``, as a 2-D operand of the
    result over ``out`` (a column or a row)."""
    (p,) = set(axes) - {r}
    return b.emit("expand_dims", (vector,), {"axis": 1 if out.index(p) == 0 else 0})


def _contract(b, first, second, r):
    """``sum over r`` of the product of two leaves, over the other two axes (in order): a
    ``@`` where both hold ``r``, a row sum times the other where one does, else None."""
    (P, pa), (Q, qa) = first, second
    out = tuple(i for i in range(3) if i != r)
    if r in pa and r in qa:
        (p,), (q,) = set(pa) - {r}, set(qa) - {r}
        if p == q:
            return None
        if p > q:
            (P, pa, p), (Q, qa, q) = (Q, qa, q), (P, pa, p)
        return _product(P, pa == (p, r), Q, qa == (r, q))
    if r in qa:
        (P, pa), (Q, qa) = (Q, qa), (P, pa)
    if r not in pa or qa != out:
        return None
    summed = b.emit("sum", (P,), {"axis": pa.index(r)})
    return Q * _spread(b, summed, pa, r, out)


def _product(P, p_rows, Q, q_rows):
    """``P' @ Q'`` (``P'`` is ``P`` where ``p_rows``, else ``P.T``; ``Q'`` likewise), or
    ``(Q'.T @ P'.T).T`` where that transposes fewer entries: a transposed operand is a view,
    which keeps its array out of the planned buffers (``dmu``'s ``(X.T @ G).T``, not
    ``G.T @ X``, leaves the (n, k) ``G`` in one). Entries are counted as
    :func:`adcompiler.ir.sizing.elements` counts them: ahead of time the choice is the same
    for every size (the mixture's ``dmu`` at d < k and d > k alike)."""
    def size(v):
        return sizing.elements(v.aval.known_shape[:2])

    direct = (0 if p_rows else size(P)) + (0 if q_rows else size(Q))
    flipped = (size(P) if p_rows else 0) + (size(Q) if q_rows else 0) \
        + sizing.elements((P.aval.known_shape[not p_rows], Q.aval.known_shape[q_rows]))
    if direct <= flipped:
        return (P if p_rows else P.T) @ (Q if q_rows else Q.T)
    return ((Q.T if q_rows else Q) @ (P.T if p_rows else P)).T
