"""The logistic family seen whole: ``1 / (1 + exp(-x))`` is one ``sigmoid``, ``log(1 + exp(x))``
one ``softplus``, ``-log(1 + exp(-x))`` one ``log_sigmoid``, before differentiation; after it,
each spelled back in NumPy ufuncs.

Rule by rule, a sigmoid written ``1 / (1 + np.exp(-x))`` keeps three residuals (the exponential,
the sum and the quotient) and its adjoint is four operations; seen whole its rule
(``templates/elementwise.py``) keeps the result alone and is ``g * s * (1 - s)``.
:func:`recognise_logistics` runs on the lowered graph, before the adjoint is built; it rewrites
a chain only where each intermediate is read by the next step of the chain alone, in the chain's
own scope (so nothing is computed twice, and no loop body computes what was computed before
it), and only on float arrays. Recognised spellings (``1`` an int or float literal, the sum in
either order):

- sigmoid: ``1 / (1 + exp(-x))``, ``exp(x) / (1 + exp(x))``;
- softplus: ``log(1 + exp(x))``, ``log1p(exp(x))``;
- log-sigmoid: ``-softplus(-x)`` in any of those spellings, and ``log(sigmoid(x))``.

:func:`expand_logistics` (the first pass of the pipeline, in plain code too) spells each node
in NumPy ufuncs, so no backend and no re-read of plain source ever sees the three primitives:
the sigmoid as the user's own ``1 / (1 + np.exp(-x))`` (its value already bounded: where
``exp(-x)`` overflows the quotient is 0), the other two without overflow in the cost of the
naive form, ``np.logaddexp2(0, x / ln 2) * ln 2`` (softplus) and ``np.logaddexp2(0, x / -ln 2) *
-ln 2`` (log-sigmoid), where ``np.log(1 + np.exp(x))`` is ``inf`` past x = 709.
"""

from __future__ import annotations

import math

from ..ir import Literal, Node, Value, walk
from .rewrite import Walker, use_counts

LOG2E = 1.0 / math.log(2.0)
LN2 = math.log(2.0)
_REAL = ("float16", "float32", "float64")


# ---- before differentiation: the chains become one node each ----------------------------
def recognise_logistics(graph):
    """``graph`` with each recognised chain's last node rewritten in place into ``sigmoid``,
    ``softplus`` or ``log_sigmoid`` of the chain's input and the chain's other nodes dropped."""
    uses = use_counts(graph)
    dead: set = set()
    _scope(graph.nodes, uses, dead)
    for node in walk(graph.nodes):
        for block in node.regions:
            _scope(block.nodes, uses, dead)
    if dead:
        Walker(visit=lambda node, scope: () if id(node) in dead else (node,)).graph(graph)
    return graph


def _scope(nodes, uses, dead):
    producers = {}
    for node in nodes:
        for out in node.outputs:
            producers[out] = node
        if len(node.outputs) == 1 and not node.params and _float_array(node.out):
            _rewrite(node, _Chain(producers, uses), dead)


def _rewrite(node, chain, dead):
    for match in (_sigmoid, _softplus, _log_sigmoid):
        found = match(node, chain)
        if found is not None:
            prim, x = found
            dead.update(id(n) for n in chain.taken)
            node.prim, node.inputs, node.params = prim, (x,), {}
            return
        chain.taken.clear()


class _Chain:
    """Reads a chain backwards from its last node: ``step(v, prim)`` is the node of ``prim``
    that made ``v`` in this scope where ``v`` has no other reader (it is taken: dropped if the
    match succeeds)."""

    def __init__(self, producers, uses):
        self.producers, self.uses, self.taken = producers, uses, []

    def step(self, v, prim, reads=1):
        node = self.producers.get(v) if isinstance(v, Value) else None
        if node is None or node.prim != prim or node.params or self.uses.get(v, 0) != reads:
            return None
        if all(n is not node for n in self.taken):
            self.taken.append(node)
        return node

    def one_plus(self, v):
        """``e`` of ``v = 1 + e`` (either order), else None."""
        node = self.step(v, "add")
        if node is None:
            return None
        a, b = node.inputs
        return b if _is_one(a) else a if _is_one(b) else None


def _sigmoid(node, chain):
    if node.prim != "divide":
        return None
    top, bottom = node.inputs
    e = chain.one_plus(bottom)
    if _is_one(top):                                      # 1 / (1 + exp(-x))
        exp = chain.step(e, "exp")
        minus = exp and chain.step(exp.inputs[0], "negative")
        return minus and ("sigmoid", minus.inputs[0])
    if e is top:                                          # e = exp(x); e / (1 + e)
        exp = chain.step(e, "exp", reads=2)
        return exp and ("sigmoid", exp.inputs[0])
    up, down = chain.step(top, "exp"), chain.step(e, "exp")   # exp(x) / (1 + exp(x))
    if up is not None and down is not None and up.inputs[0] is down.inputs[0]:
        return "sigmoid", up.inputs[0]
    return None


def _softplus(node, chain):
    if node.prim == "log":
        e = chain.one_plus(node.inputs[0])
    elif node.prim == "log1p":
        e = node.inputs[0]
    else:
        return None
    exp = chain.step(e, "exp")
    if exp is None or _log_add_exp_gap(exp.inputs[0], chain.producers):
        return None
    return "softplus", exp.inputs[0]


def _log_add_exp_gap(x, producers) -> bool:
    """``x`` is ``-abs(d)``: ``log1p(exp(x))`` is then part of the stable log-add-exp idiom,
    whose adjoint :mod:`templates.idioms.logaddexp` gives whole (a sigmoid of ``d``)."""
    minus = producers.get(x)
    if minus is None or minus.prim != "negative":
        return False
    inner = producers.get(minus.inputs[0])
    return inner is not None and inner.prim in ("abs", "fabs")


def _log_sigmoid(node, chain):
    if node.prim == "log":                                # log(sigmoid(x))
        inner = chain.step(node.inputs[0], "sigmoid")
        return inner and ("log_sigmoid", inner.inputs[0])
    if node.prim != "negative":                           # -softplus(-x)
        return None
    inner = chain.step(node.inputs[0], "softplus")
    minus = inner and chain.step(inner.inputs[0], "negative")
    return minus and ("log_sigmoid", minus.inputs[0])


def _is_one(v) -> bool:
    return isinstance(v, Literal) and isinstance(v.value, (int, float)) and \
        not isinstance(v.value, bool) and v.value == 1


def _float_array(v) -> bool:
    aval = v.aval
    return aval.kind == "array" and aval.shape is not None and aval.dtype in _REAL


# ---- after differentiation: each node spelled in NumPy ufuncs ------------------------------
def expand_logistics(graph):
    """Every ``sigmoid``, ``softplus`` and ``log_sigmoid`` node replaced by its ufuncs; the
    node keeps its output value (which the adjoint reads)."""
    if any(n.prim in _SPELLINGS for n in walk(graph.nodes)):
        Walker(visit=lambda node, scope: _SPELLINGS[node.prim](node)
               if node.prim in _SPELLINGS else (node,)).graph(graph)
    return graph


def _step(node, prim, *inputs):
    return Node(prim, inputs, {}, (Value(node.out.aval),), node.source, node.phase)


def _spell_sigmoid(node):
    """``1.0 / (1.0 + np.exp(-x))``, as users write it."""
    minus = _step(node, "negative", node.inputs[0])
    exp = _step(node, "exp", minus.out)
    total = _step(node, "add", Literal(1.0), exp.out)
    node.prim, node.inputs = "divide", (Literal(1.0), total.out)
    return minus, exp, total, node


def _spell_log2(node, sign):
    """``np.logaddexp2(0.0, x * (sign / ln 2)) * (sign * ln 2)``: ``sign * log(1 + exp(sign *
    x))``, finite for every finite x."""
    inside = _step(node, "multiply", node.inputs[0], Literal(sign * LOG2E))
    base2 = _step(node, "logaddexp2", Literal(0.0), inside.out)
    node.prim, node.inputs = "multiply", (base2.out, Literal(sign * LN2))
    return inside, base2, node


_SPELLINGS = {"sigmoid": _spell_sigmoid,
              "softplus": lambda node: _spell_log2(node, 1.0),
              "log_sigmoid": lambda node: _spell_log2(node, -1.0)}
