"""Broadcasts an elementwise operation does anyway, dropped: ``broadcast_to(s, (n, m)) * t``
with ``t`` of shape ``(n, m)`` is ``s * t``.

Adjoints spread a reduction's cotangent back with ``broadcast_to`` (the rule of ``sum`` and
``mean``), and the rule's reader is often an elementwise product with an array of the full
shape, which NumPy's broadcasting would stretch the smaller operand for. Each such
``np.broadcast_to`` is a Python-level NumPy call (~2 µs, whatever the size), and a chain that
reads it sees an operand of the full shape where a row or a number would do. Measured on a
k-means gradient (a (20000,) cotangent spread over 32 columns, and a (32,) one over 16):
two ``np.broadcast_to(np.expand_dims(...))`` pairs gone.

A scalar operation on a broadcast (the mean's ``broadcast_to(g, s) / n``), whose every reader
is an elementwise operation, is moved before it: ``broadcast_to(g / n, s)``, a division of
``g``'s size instead of ``s``'s, and a broadcast its readers can then drop.

An operand is replaced by what the broadcast (or an ``expand_dims``/``reshape`` that only adds
leading axes of length 1, which broadcasting adds as well) was made from, only where the
operation's abstract value (shape, dtype, Python-ness) stays exactly the same; the values are
then the same, since NumPy's broadcasting aligns trailing axes as ``broadcast_to`` does. The
broadcast itself is left to dead-code elimination once nothing reads it.
"""

from __future__ import annotations

from ..ir import Aval, Literal, Node, Value, readers
from ..ir.primitives import PRIMS
from ..ir.shapes import infer
from .rewrite import Walker


def drop_implicit_broadcasts(graph):
    """One walk, blocks before their owner, in one scope: ``producers`` (every node walked
    so far, at any depth) and ``readers`` (every value's readers)."""
    return _WALK.graph(graph, ({}, readers(graph)))


def _rewrite(node, scope) -> tuple:
    producers, readers = scope
    placed = (node,)
    if _elementwise(node):
        _narrow(node, producers)
        inner = _scalar_op_first(node, producers, readers)
        if inner is not None:
            placed = (inner, node)
            producers[inner.out] = inner
    producers.update((v, node) for v in node.outputs)
    return placed


_WALK = Walker(visit=_rewrite)


def _elementwise(node) -> bool:
    return (PRIMS[node.prim].family == "elementwise" and not node.params and not node.regions
            and len(node.outputs) == 1)


def _narrow(node, producers):
    """Each operand replaced by what it was broadcast from, where the result stays the same."""
    for i, x in enumerate(node.inputs):
        for source in _sources(x, producers):
            inputs = node.inputs[:i] + (source,) + node.inputs[i + 1:]
            if _aval(node.prim, inputs) == node.out.aval:
                node.inputs = inputs
                break


def _scalar_op_first(node, producers, readers):
    """``broadcast_to(g, s) / n`` (other operands 0-d) rewritten in place as
    ``broadcast_to(g / n, s)``, returning the new ``g / n`` node to emit before it; None where
    some reader of the result is not elementwise (it would read the broadcast as it was)."""
    spread = [i for i, x in enumerate(node.inputs) if isinstance(x, Value)
              and getattr(producers.get(x), "prim", None) == "broadcast_to"]
    if len(spread) != 1 or not all(_reads_as_elementwise(r) for r in readers.get(node.out, [None])):
        return None
    (i,) = spread
    if any(x.aval.ndim != 0 for k, x in enumerate(node.inputs) if k != i):
        return None
    inputs = node.inputs[:i] + (producers[node.inputs[i]].inputs[0],) + node.inputs[i + 1:]
    aval = _aval(node.prim, inputs)
    if (aval.kind not in ("array", "float")    # a Python float spreads as float64, as it was
            or Aval("array", aval.dtype, node.out.aval.shape) != node.out.aval):
        return None
    inner = Node(node.prim, inputs, {}, (Value(aval),), node.source, node.phase)
    node.prim, node.inputs, node.params = "broadcast_to", (inner.out,), {
        "shape": node.out.aval.shape}
    return inner


def _reads_as_elementwise(reader) -> bool:
    return reader is not None and _elementwise(reader)


def _sources(x, producers) -> list:
    """What ``x`` was broadcast from, the original first: through ``broadcast_to`` and
    leading-axis ``expand_dims``/``reshape`` (empty where ``x`` is none of them)."""
    chain = []
    while isinstance(x, Value):
        node = producers.get(x)
        if node is None or not (node.prim == "broadcast_to" or _adds_leading_axes(node)):
            break
        x = node.inputs[0]
        chain.append(x)
    return chain[::-1]


def _adds_leading_axes(node) -> bool:
    """``expand_dims``/``reshape`` whose result is its input's shape with 1s in front."""
    if node.prim not in ("expand_dims", "reshape"):
        return False
    x = node.inputs[0]
    before = x.aval.known_shape
    after = node.out.aval.known_shape
    if before is None or after is None or len(after) < len(before):
        return False
    lead = len(after) - len(before)
    return tuple(after[lead:]) == tuple(before) and all(d == 1 for d in after[:lead])


def _aval(prim, inputs):
    return infer(prim, [x.aval for x in inputs],
                 [x.value if isinstance(x, Literal) else None for x in inputs], {})
