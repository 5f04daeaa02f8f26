"""Constant folding and algebraic identities: literal-only scalar nodes fold, x*1, x+0, x**1 vanish.

A broadcast literal (``np.broadcast_to(1.0, shape)``, the seed a reduction's adjoint spreads)
counts as its literal in the identities, and so does a typed one (``np.float32(1.0)``, the seed
of a float32 result, which folds as a float32 scalar); negations cancel through products:
``-(-a * b)`` is ``a * b``. The rules on entry updates (a store's adjoint) are in
:mod:`.updates`. Invariant: a rewrite happens only when the replacement has exactly the node's
abstract value (shape, dtype and Python-ness), so no dtype or broadcast is lost.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import Aval, Literal, Node, Value
from ..ir.primitives import PRIMS, evaluate
from ..ir.shapes import infer
from .negations import negated_factor, negation_outwards
from .rewrite import resolve, substitute, use_counts
from .updates import (merge_scatters, overwritten, read_back, rewrite_same_entries,
                      set_after_zeroing, written_entry)

# prim -> (position of the operand kept, literal the other operand must equal)
_IDENTITIES = {
    "multiply": [(0, 1), (1, 1)],
    "add": [(0, 0), (1, 0)],
    "subtract": [(0, 0)],
    "divide": [(0, 1)],
    "power": [(0, 1)],
}


def simplify(graph):
    subst, producers = {}, {}
    graph.nodes = _simplify_nodes(graph.nodes, subst, producers)
    return _drop_unread(substitute(graph, subst))


def _drop_unread(graph):
    """Drop the top-level nodes without regions whose results nothing reads (what the rules
    above leave behind, such as the negation a rewritten ``sum(-x)`` no longer reads, and what
    a rule's zero left unread, such as the cotangent reaching a max whose rule gave zero): the
    passes before dead-code elimination (:mod:`.scales`) weigh every node, and an unread one
    would count as work to save. Nodes have no side effects; regions are left to :mod:`.dce`."""
    uses = use_counts(graph)
    kept = []
    for node in reversed(graph.nodes):
        if not node.regions and not any(uses.get(v, 0) for v in node.outputs) \
                and node.prim != "raise_if":  # a check runs for its effect
            for x in node.inputs:
                if isinstance(x, Value):
                    uses[x] -= 1
            continue
        kept.append(node)
    graph.nodes = kept[::-1]
    return graph


def _simplify_nodes(nodes, subst, producers):
    kept = []
    for node in nodes:
        node.inputs = tuple(resolve(subst, x) for x in node.inputs)
        for block in node.regions:  # a block sees outer producers, never a sibling's
            block.nodes = _simplify_nodes(block.nodes, subst, dict(producers))
            block.outputs = [resolve(subst, x) for x in block.outputs]
        if node.regions:
            kept.append(node)
            continue
        _power_zero(node)
        _negation(node, producers)
        _subtraction(node, producers)
        _doubling(node)
        negated_factor(node, producers)
        _double_negation_in_products(node, producers)
        _constant_products(node, producers)
        for new in (_fold_broadcast_literal(node, producers) + _same_branches(node, producers)
                    + negation_outwards(node, producers)):
            kept.append(new)
            producers[new.out] = new
        _literal_operands(node, producers)
        _fold_typed(node, producers)
        set_after_zeroing(node, producers)
        overwritten(node, producers)
        for new in read_back(node, producers):
            kept.append(new)
            producers.update((v, new) for v in new.outputs)
        kept += merge_scatters(node, producers, kept)
        replacement = (_fold(node) or _identity(node, producers)
                       or rewrite_same_entries(node, producers) or written_entry(node, producers)
                       or _double_negation(node, producers) or _double_transpose(node, producers)
                       or _never_selected(node, producers))
        if replacement is not None:
            subst[node.out] = replacement
            if isinstance(replacement, Value) and replacement.name is None:
                replacement.name, replacement.origin = node.out.name, node.out.origin  # dx
        else:
            kept.append(node)
            producers.update((v, node) for v in node.outputs)
    return kept


def _fold(node):
    if len(node.outputs) != 1 or not node.out.aval.is_scalar:
        return None
    if node.inputs and all(isinstance(x, Literal) for x in node.inputs):
        return Literal(evaluate(node.prim, [x.value for x in node.inputs], node.params))
    return None


_SAME_ENTRIES = ("broadcast_to", "expand_dims", "reshape")  # every entry is one of the input's


def _literal(x, producers):
    """The number ``x`` stands for: a literal, or a literal broadcast to an array (through any
    chain of broadcasts, expand_dims and reshapes: a reduction's adjoint seed), typed or not
    (``np.float32(1.0)``: the seed of a float32 result; its value as a Python float), or
    such an array cast to a float dtype (``broadcast_to(0.5, s).astype(np.float32)``: a mean's
    seed cast to a float32 cotangent; the value rounded to the dtype, exactly what the cast
    array holds)."""
    while not isinstance(x, Literal):
        typed = _typed_literal(x, producers)
        if typed is not None:
            return typed.item()
        producer = producers.get(x)
        if producer is not None and producer.prim == "astype":
            return _cast_literal(producer, producers)
        if producer is None or producer.prim not in _SAME_ENTRIES:
            return None
        x = producer.inputs[0]
    return x.value


def _cast_literal(node, producers):
    """The number of ``astype(x, dtype)`` for ``x`` a spread number and ``dtype`` a float one."""
    dtype = np.dtype(node.params["dtype"])
    value = _literal(node.inputs[0], producers)
    if dtype.kind != "f" or value is None or type(value) not in (int, float):
        return None
    return np.asarray(value).astype(dtype).item()


def _typed_literal(x, producers):
    """The NumPy scalar ``x`` is when it is ``astype(literal, dtype)`` (``np.float32(1.0)``:
    how a cotangent of a float32 value starts from a number), else None."""
    producer = producers.get(x) if isinstance(x, Value) else None
    if (producer is None or producer.prim != "astype" or not isinstance(producer.inputs[0], Literal)
            or producer.out.aval.shape != ()):
        return None
    return np.asarray(producer.inputs[0].value).astype(producer.params["dtype"])[()]


def _typed(value, dtype, like):
    """A node making the NumPy scalar ``value`` of ``dtype``, ``astype(float(value), dtype)``,
    from the line and phase of the node ``like``."""
    out = Value(Aval("array", np.dtype(dtype).name, ()))
    return Node("astype", (Literal(value.item()),), {"dtype": np.dtype(dtype).name}, (out,),
                like.source, like.phase)


def _fold_typed(node, producers):
    """An elementwise node of typed literals (and plain ones) whose result is 0-d is the typed
    literal it computes (``np.float32(1.0) * 2.0`` is ``np.float32(2.0)``), rewritten in place."""
    if (PRIMS[node.prim].family != "elementwise" or node.params or len(node.outputs) != 1
            or node.out.aval.kind != "array" or node.out.aval.shape != ()
            or np.dtype(node.out.aval.dtype).kind != "f"):
        return
    values = [x.value if isinstance(x, Literal) else _typed_literal(x, producers)
              for x in node.inputs]
    if node.prim == "multiply" and None in values:  # np.float32(1.0) * a is np.float32(a)
        k = values.index(None)
        one, x = values[1 - k], node.inputs[k]
        if (isinstance(one, np.generic) and one == 1 and x.aval.is_scalar
                and x.aval.kind == "float"):
            node.prim, node.inputs, node.params = "astype", (x,), {"dtype": one.dtype.name}
        return
    if any(v is None for v in values) or all(isinstance(x, Literal) for x in node.inputs):
        return
    with np.errstate(all="ignore"):
        value = np.asarray(evaluate(node.prim, values, {}))
    if value.dtype == np.dtype(node.out.aval.dtype):
        node.prim, node.inputs = "astype", (Literal(value.item()),)
        node.params = {"dtype": value.dtype.name}


def _identity(node, producers):
    for keep, unit in _IDENTITIES.get(node.prim, ()):
        value = _literal(node.inputs[1 - keep], producers)
        x = node.inputs[keep]
        if (value is not None and type(value) is not bool and value == unit
                and x.aval == node.out.aval and _keeps_zero_sign(node, value)):
            return x
    return None


def _keeps_zero_sign(node, value) -> bool:
    """Whether dropping ``node``'s zero operand keeps the sign of a zero result: ``x + 0.0``
    and ``x - (-0.0)`` turn ``-0.0`` into ``+0.0`` (``1 / (x + 0.0)`` is ``+inf`` there), so in
    the user's computation only ``x + (-0.0)`` and ``x - 0.0`` are ``x``. An adjoint's zero
    carries no sign that matters (a cotangent's ``-0.0`` is as good as ``+0.0``)."""
    if node.phase != "forward" or node.prim not in ("add", "subtract"):
        return True
    negative = math.copysign(1.0, value) < 0
    return negative if node.prim == "add" else not negative


def _plain_literal(x, producers):
    """The Python number ``x`` is, a literal or one spread by broadcasts, expand_dims and
    reshapes (a mean's seed broadcast twice: ``broadcast_to(expand_dims(broadcast_to(c)))``);
    None for anything else, typed literals included (their dtype matters)."""
    while not isinstance(x, Literal):
        producer = producers.get(x)
        if producer is None or producer.prim not in _SAME_ENTRIES:
            return None
        x = producer.inputs[0]
    return x.value


def _fold_broadcast_literal(node, producers):
    """``broadcast_to(c, s) / k`` (or ``* k``) becomes ``broadcast_to(c / k, s)``, and
    ``-broadcast_to(c, s)`` becomes ``broadcast_to(-c, s)``, in place, ``c`` a literal or one
    already spread (:func:`_plain_literal`); for a typed ``c`` (``np.float32(1.0)``), returns
    the node making the new typed literal, to emit before it."""
    if node.prim == "negative":
        a, b, prim = node.inputs[0], Literal(-1.0), "multiply"
    elif node.prim in ("multiply", "divide") and len(node.inputs) == 2:
        (a, b), prim = node.inputs, node.prim
    else:
        return []
    producer = producers.get(a)
    if not (isinstance(b, Literal) and producer is not None and producer.prim == "broadcast_to"
            and producer.outputs[0].aval == node.out.aval):
        return []
    plain = _plain_literal(producer.inputs[0], producers)
    if plain is not None:
        value = evaluate(prim, [plain, b.value], {})
        if isinstance(value, float):
            node.prim, node.inputs = "broadcast_to", (Literal(value),)
            node.params = dict(producer.params)
        return []
    typed = _typed_literal(producer.inputs[0], producers)
    if typed is None:
        return []
    with np.errstate(all="ignore"):
        value = np.asarray(evaluate(prim, [typed, b.value], {}))
    if value.dtype != typed.dtype:
        return []
    seed = _typed(value, value.dtype, node)
    node.prim, node.inputs, node.params = "broadcast_to", (seed.out,), dict(producer.params)
    return [seed]


def _same_branches(node, producers):
    """``where(c, k, k)`` of one number ``k`` (broadcast or not) becomes ``broadcast_to(k, s)``
    in place (for a float32 result, returns the node making the typed ``k``, to emit before):
    what a zero cotangent leaves after a ``where``'s rule (``where(c, 0, g)`` with ``g`` zero),
    which the identities then drop from the sum it joins. ``0.0`` and ``-0.0`` count as one
    number: a cotangent's sign of zero carries no meaning."""
    out = node.out.aval if node.prim == "where" else None
    if out is None or out.kind != "array" or out.shape is None or np.dtype(out.dtype).kind != "f":
        return []
    a, b = (_literal(x, producers) for x in node.inputs[1:])
    if a is None or b is None or type(a) is bool or type(b) is bool or a != b:
        return []
    if out.dtype == "float64":
        node.prim, node.inputs = "broadcast_to", (Literal(float(a)),)
        node.params = {"shape": out.shape}
        return []
    seed = _typed(np.asarray(a, dtype=out.dtype)[()], out.dtype, node)
    node.prim, node.inputs, node.params = "broadcast_to", (seed.out,), {"shape": out.shape}
    return [seed]


def _power_zero(node):
    """``x ** 0`` is 1 (rewritten in place: a Python 1.0, or ones of x's shape)."""
    if node.prim != "power" or not isinstance(node.inputs[1], Literal):
        return
    if node.inputs[1].value == 0 and type(node.inputs[1].value) is not bool:
        if node.out.aval.is_scalar:
            node.prim, node.inputs = "add", (Literal(0.0), Literal(1.0))
        else:
            node.prim, node.inputs, node.params = "ones_like", (node.inputs[0],), {}


def _negation(node, producers):
    """``-1 * x`` and ``x * -1`` become ``-x``, -1 broadcast too (rewritten in place)."""
    if node.prim != "multiply":
        return
    for k in (0, 1):
        lit, x = _literal(node.inputs[k], producers), node.inputs[1 - k]
        if (lit is not None and type(lit) is not bool and lit == -1
                and isinstance(x, Value) and x.aval == node.out.aval):
            node.prim, node.inputs = "negative", (x,)
            return


def _subtraction(node, producers):
    """``-a + b`` and ``b + -a`` become ``b - a``, ``b - -a`` becomes ``b + a`` (rewritten in
    place): the same IEEE result, one operation fewer once the negation has no other reader."""
    if node.prim not in ("add", "subtract"):
        return
    for k in ((0, 1) if node.prim == "add" else (1,)):
        x, other = node.inputs[k], node.inputs[1 - k]
        producer = producers.get(x) if isinstance(x, Value) else None
        if producer is not None and producer.prim == "negative" and producer.params == {}:
            node.prim = "subtract" if node.prim == "add" else "add"
            node.inputs = (other, producer.inputs[0])
            return


def _double_negation(node, producers):
    """``-(-x)`` is ``x``; ``-(-a * b)`` becomes ``a * b`` (rewritten in place)."""
    if node.prim != "negative" or not isinstance(node.inputs[0], Value):
        return None
    producer = producers.get(node.inputs[0])
    if producer is not None and producer.prim == "negative":
        inner = producer.inputs[0]
        if inner.aval == node.out.aval:
            return inner
    return None


def _double_negation_in_products(node, producers):
    """``-(-a * b)`` becomes ``a * b`` (rewritten in place, before the identities run)."""
    if node.prim != "negative" or not isinstance(node.inputs[0], Value):
        return
    producer = producers.get(node.inputs[0])
    if producer is not None and producer.prim in ("multiply", "divide"):
        a, b = producer.inputs
        inner = producers.get(a)
        if inner is not None and inner.prim == "negative" and producer.out.aval == node.out.aval:
            node.prim, node.inputs = producer.prim, (inner.inputs[0], b)


def _double_transpose(node, producers):
    """``x.T.T`` is ``x`` (and any two transposes whose axes compose to no change): the
    adjoint of ``x @ C.T`` reads ``C.T.T``."""
    if node.prim != "transpose" or not isinstance(node.inputs[0], Value):
        return None
    producer = producers.get(node.inputs[0])
    if producer is None or producer.prim != "transpose" or node.out.aval.shape is None:
        return None
    inner = producer.inputs[0]
    ndim = len(node.out.aval.shape)
    first = producer.params.get("axes") or tuple(reversed(range(ndim)))
    second = node.params.get("axes") or tuple(reversed(range(ndim)))
    composed = [first[a % ndim] % ndim for a in second]
    if composed == list(range(ndim)) and isinstance(inner, Value) and inner.aval == node.out.aval:
        return inner
    return None


def _never_selected(node, producers):
    """``where(x > inf, a, b)`` is ``b`` (and ``x < -inf``): the adjoint of a one-sided clip,
    whose missing bound is infinite."""
    if node.prim != "where" or not isinstance(node.inputs[0], Value):
        return None
    test, otherwise = producers.get(node.inputs[0]), node.inputs[2]
    if (test is None or test.prim not in ("greater", "less")
            or not isinstance(test.inputs[1], Literal) or not isinstance(otherwise, Value)):
        return None
    bound = test.inputs[1].value
    never = ((test.prim == "greater" and bound == float("inf"))
             or (test.prim == "less" and bound == float("-inf")))
    return otherwise if never and otherwise.aval == node.out.aval else None


def _doubling(node):
    """``a + a`` becomes ``2.0 * a`` (rewritten in place): one operation, foldable below."""
    if node.prim == "add" and node.inputs[0] is node.inputs[1] and isinstance(node.inputs[0], Value):
        if node.inputs[0].aval.is_float:
            node.prim, node.inputs = "multiply", (Literal(2.0), node.inputs[0])


def _constant_products(node, producers):
    """``c1 * (c2 * y)`` becomes ``(c1 * c2) * y`` for float literals (rewritten in place)."""
    if node.prim != "multiply":
        return
    for k in (0, 1):
        c1, inner = node.inputs[k], node.inputs[1 - k]
        producer = producers.get(inner) if isinstance(inner, Value) else None
        if not (_float_literal(c1) and producer is not None and producer.prim == "multiply"):
            continue
        for j in (0, 1):
            c2, y = producer.inputs[j], producer.inputs[1 - j]
            if _float_literal(c2) and isinstance(y, Value) and producer.out.aval == node.out.aval:
                node.inputs = (Literal(c1.value * c2.value), y)
                return


def _float_literal(x) -> bool:
    return isinstance(x, Literal) and type(x.value) is float


def _literal_operands(node, producers):
    """An elementwise operand that is a broadcast literal becomes the literal itself where the
    result keeps its shape and dtype: ``broadcast_to(2.0, s) * y`` is ``2.0 * y``."""
    if PRIMS[node.prim].family != "elementwise" or node.params:
        return
    for i, x in enumerate(node.inputs):
        value = _literal(x, producers)
        if isinstance(x, Literal) or value is None:
            continue
        inputs = node.inputs[:i] + (Literal(value),) + node.inputs[i + 1:]
        aval = infer(node.prim, [a.aval for a in inputs],
                     [a.value if isinstance(a, Literal) else None for a in inputs], node.params)
        if aval == node.out.aval:
            node.inputs = inputs
