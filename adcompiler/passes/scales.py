"""Scale hoisting: a literal factor ``c * u`` travels down the chain of nodes linear in it and is
applied once where the chain ends, on fewer elements (ideally a Python float).

The adjoint of ``mean`` starts from ``(1/n) * g``: the factor is multiplied into an array early,
and every array computed from it carries it. ``dl3 = 0.25 * l2; dw3 = float(np.sum(dl3 * l1))``
becomes ``dw3 = 0.25 * float((l2 * l1).sum())``: one scalar product instead of an array pass.

Terms. A value ``v`` is *scaled* when ``v == c * base(v)`` for a finite nonzero Python float
``c``. The output of ``c * u`` (a *seed*: base ``u``), and of ``-v`` or ``c2 * v`` for a scaled
``v``, is *absorbed*: it needs no node, its base is ``v``'s. The output of a node linear in its
scaled inputs is scaled by the product of their scales, its base the same node on their bases:
``x * y``, ``x / y`` (numerator), matmul/dot/outer, sum/mean, views and getitem, sum_to,
scatter_add, ``float()``, a float astype, copy; and, when their scaled inputs share one scale,
``a + b`` and ``a - b`` (up to sign: ``c*a + -c*b`` is ``c * (a - b)``), index_add,
concatenate, stack, ``where`` (a literal 0 is scaled by anything). A scaled value is
*materialised* (``v = c * base``, under its own Value: its readers are untouched) where
anything else reads it: a non-linear node, a node with regions, a block, the graph's outputs.

Choice. Hoisting saves the absorbed nodes and pays one multiplication per materialised value;
the cost of a value counts its elements plus :data:`CALL` for an array call. Connected scaled
values (a *chain*) are decided together: from the whole chain, cut below a value (it is
materialised) or above it wherever that is cheaper, sinks first (so ``dW1 = x.T @ dt`` keeps the
scale on ``dt`` or earlier when ``dW1`` is larger). A chain is rewritten only if it then saves
cost, elements strictly, and array multiplications are not more than before. The choice depends
on the sizes: a polymorphic body (adcompiler.aot.polymorphic) needs it to agree across sizes.

Invariants: only top-level nodes take part; a value read inside a block or by control flow is
materialised, never rewritten across. Every value keeps its aval: a base has its value's aval (a
seed's operand has the product's aval; the other rules keep avals), and ``c * v`` has ``v``'s
(checked). Values change by rounding only: ``c`` is applied later (finite and nonzero, so no
``0 * inf`` comes or goes; only a product at the edge of the float range could overflow).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir import Literal, Node, Value, sizing, walk
from ..ir.shapes import infer
from .rewrite import substitute

CALL = 64        # the cost of one NumPy call on an array, in elements (a small array's multiply
                 # costs about its call: one scale split into several is no saving)
MAX_CHAIN = 200  # a longer chain is left alone: weighing each cut walks the chain
BUDGET = 1000    # cuts weighed per chain at most; then the chain stays as pruned so far

# Linear in their first input, the others unscaled.
_UNARY = {"sum", "mean", "transpose", "reshape", "expand_dims", "squeeze", "broadcast_to",
          "getitem", "sum_to", "scatter_add", "to_float", "copy", "astype"}
_PRODUCTS = {"multiply", "matmul", "dot", "outer", "einsum"}   # linear in each input
# Linear in these inputs together when they share a scale (None: all of them).
_JOINT = {"add": (0, 1), "subtract": (0, 1), "index_add": (0, 1), "where": (1, 2),
          "concatenate": None, "stack": None}


@dataclass
class _Scaled:
    scale: float
    node: Node
    src: object = None   # absorbed: the value whose base this value's base is
    prim: str = ""       # linear: the node's primitive on the bases (add and subtract swap)
    reads: tuple = ()    # the scaled values it reads


def hoist_scales(graph):
    chosen = _analyse(graph.nodes)
    if not chosen:
        return graph
    readers, pinned = _readers(graph)
    order = {v: i for i, v in enumerate(chosen)}
    for members in list(_chains(chosen, readers, order)):  # disjoint: each decided alone
        if len(members) <= MAX_CHAIN:
            _prune(members, chosen, readers, pinned)
        if len(members) > MAX_CHAIN or not _pays(members, chosen, readers, pinned):
            for v in members:
                chosen.pop(v, None)
    return _rewrite(graph, chosen, readers, pinned) if chosen else graph


# ---- analysis: the largest set of scaled values ------------------------------------------------

def _analyse(nodes) -> dict:
    scaled = {}
    for node in nodes:
        if node.regions or len(node.outputs) != 1 or node.params.get("py"):
            continue
        if not _holds_scale(node.out):
            continue
        info = _absorbed(node, scaled) or _linear(node, scaled)
        if info is not None and math.isfinite(info.scale) and info.scale != 0.0:
            scaled[node.out] = info
    return scaled


def _holds_scale(v) -> bool:
    """Whether ``v`` may be held as ``c * base``: a float array of known shape or a Python
    float, which ``c * v`` leaves as it is."""
    a = v.aval
    if not (a.kind == "float" or (a.kind == "array" and a.shape is not None and a.is_float)):
        return False
    return infer("multiply", [Literal(1.5).aval, a], [1.5, None], {}) == a


def _absorbed(node, scaled):
    if node.prim == "negative" and node.inputs[0] in scaled:
        x = node.inputs[0]
        return _Scaled(-scaled[x].scale, node, src=x, reads=(x,))
    if node.prim != "multiply":
        return None
    for k in (0, 1):
        c, x = node.inputs[k], node.inputs[1 - k]
        if (isinstance(c, Literal) and type(c.value) is float and isinstance(x, Value)
                and x.aval == node.out.aval):   # c finite and nonzero: checked with the product
            if x in scaled:
                return _Scaled(c.value * scaled[x].scale, node, src=x, reads=(x,))
            return _Scaled(c.value, node, src=x)
    return None


def _linear(node, scaled):
    ins, prim = node.inputs, node.prim
    hit = [i for i, x in enumerate(ins) if isinstance(x, Value) and x in scaled]
    if not hit:
        return None
    reads = tuple(ins[i] for i in hit)
    if prim in _UNARY and hit == [0]:
        if prim == "astype" and np.dtype(node.params["dtype"]).kind != "f":
            return None
        return _Scaled(scaled[ins[0]].scale, node, prim=prim, reads=reads)
    if prim in _PRODUCTS or (prim == "divide" and hit == [0]):
        return _Scaled(math.prod(scaled[x].scale for x in reads), node, prim=prim, reads=reads)
    if prim not in _JOINT:
        return None
    return _joint(node, scaled, hit, reads)


def _joint(node, scaled, hit, reads):
    """``a + b`` (and the others of :data:`_JOINT`) with one scale on every joined input."""
    positions = _JOINT[node.prim] or range(len(node.inputs))
    if any(i not in positions for i in hit):
        return None
    for i in positions:
        x = node.inputs[i]
        zero = isinstance(x, Literal) and type(x.value) in (int, float) and x.value == 0
        if i not in hit and not (zero and node.prim == "where"):
            return None
    scales = [scaled[x].scale for x in reads]
    c, prim = scales[0], node.prim
    if prim in ("add", "subtract") and scales[1] == -c:
        prim = "subtract" if prim == "add" else "add"
    elif any(s != c for s in scales):
        return None
    return _Scaled(c, node, prim=prim, reads=reads)


def _readers(graph):
    """Top-level readers of each value, and the values that must stay as they are (read inside
    a block, yielded by one, or returned)."""
    readers = {}
    for node in graph.nodes:
        for x in node.inputs:
            if isinstance(x, Value):
                readers.setdefault(x, []).append(node)
    pinned = {v for v in graph.outputs if isinstance(v, Value)}
    for node in walk(graph.nodes):
        for block in node.regions:
            pinned.update(x for x in block.outputs if isinstance(x, Value))
            pinned.update(x for n in walk(block.nodes) for x in n.inputs if isinstance(x, Value))
    return readers, pinned


# ---- choice: where each chain's scale is applied ------------------------------------------------

def _size(v) -> int:
    return sizing.elements(v.aval.shape) if v.aval.kind == "array" else 1


def _cost(v) -> int:
    if v.aval.kind != "array":
        return 1
    return _size(v) + (CALL if v.aval.ndim else 1)


def _in_chain(r, chosen) -> bool:
    return len(r.outputs) == 1 and r.outputs[0] in chosen


def _materialised(v, chosen, readers, pinned) -> bool:
    return v in pinned or any(not _in_chain(r, chosen) for r in readers.get(v, ()))


def _chains(chosen, readers, order):
    """The connected sets of scaled values, each in program order."""
    seen = {}
    for v in chosen:
        if v in seen:
            continue
        chain, todo = {}, [v]
        while todo:
            x = todo.pop()
            if x not in chain:
                chain[x] = seen[x] = None
                todo += chosen[x].reads
                todo += [r.out for r in readers.get(x, ()) if _in_chain(r, chosen)]
        yield sorted(chain, key=order.get)


def _split(members, chosen, readers, pinned):
    """The chain's absorbed values (saved) and its materialised ones (paid for)."""
    live = [v for v in members if v in chosen]
    return ([v for v in live if chosen[v].src is not None],
            [v for v in live if _materialised(v, chosen, readers, pinned)])


def _prune(members, chosen, readers, pinned):
    """Cut the chain wherever that makes it cheaper: below a value (its descendants go, it is
    materialised) or above it (it goes too). Sinks first, and from the sinks again after each
    cut (it may make a later value's cut pay)."""
    again, budget = True, BUDGET
    while again and budget > 0:
        again = False
        for w in reversed(members):
            if w not in chosen:
                continue
            budget -= 1
            below = _descendants(w, chosen, readers)
            cuts = [below[1:], below] if len(below) > 1 else [below]
            gains = [_gain(c, chosen, readers, pinned) for c in cuts]
            gain, cut = max(zip(gains, cuts), key=lambda gc: gc[0])   # ties: the smaller cut
            if gain > 0:
                for v in cut:
                    del chosen[v]
                again = True
                break


def _gain(cut, chosen, readers, pinned) -> int:
    """How much cheaper the chain gets without ``cut`` (a value's descendants, maybe with it):
    their materialisations go, their absorbed nodes come back, the values they read materialise."""
    gain = sum(_cost(v) for v in cut if _materialised(v, chosen, readers, pinned))
    gain -= sum(_cost(v) for v in cut if chosen[v].src is not None)
    inside = set(cut)
    edge = {u: None for v in cut for u in chosen[v].reads if u not in inside}
    return gain - sum(_cost(u) for u in edge if not _materialised(u, chosen, readers, pinned))


def _descendants(w, chosen, readers) -> list:
    out, todo = {w: None}, [w]
    while todo:
        for r in readers.get(todo.pop(), ()):
            if _in_chain(r, chosen) and r.out not in out:
                out[r.out] = None
                todo.append(r.out)
    return list(out)


def _pays(members, chosen, readers, pinned) -> bool:
    saved, spent = _split(members, chosen, readers, pinned)
    calls = [sum(v.aval.kind == "array" and bool(v.aval.ndim) for v in vs)
             for vs in (saved, spent)]
    return (sum(map(_cost, saved)) > sum(map(_cost, spent)) and calls[1] <= calls[0]
            and sum(map(_size, saved)) > sum(map(_size, spent)))


# ---- rewrite ------------------------------------------------------------------------------------

def _rewrite(graph, chosen, readers, pinned):
    base, subst, nodes = {}, {}, []
    for node in graph.nodes:
        info = chosen.get(node.outputs[0]) if len(node.outputs) == 1 else None
        if info is None:
            nodes.append(node)
            continue
        v = node.out
        if info.src is not None:
            base[v] = base.get(info.src, info.src)
        else:
            inputs = tuple(base.get(x, x) if isinstance(x, Value) else x for x in node.inputs)
            base[v] = Value(v.aval)
            nodes.append(Node(info.prim, inputs, dict(node.params), (base[v],), node.source,
                              node.phase))
        if _materialised(v, chosen, readers, pinned):
            nodes += _apply(info.scale, base[v], v, node, subst)
    graph.nodes = nodes
    return substitute(graph, subst)


def _apply(c, b, v, node, subst) -> list:
    """``v = c * b``: nothing for ``c == 1`` (``v`` becomes ``b``, which keeps its own name:
    ``2.0 * (0.5 * u)`` may be an adjoint and ``u`` a forward value), a negation for -1."""
    if c == 1.0:
        subst[v] = b
        return []
    if c == -1.0:
        return [Node("negative", (b,), {}, (v,), node.source, node.phase)]
    return [Node("multiply", (Literal(c), b), {}, (v,), node.source, node.phase)]
