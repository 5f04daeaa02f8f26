"""Simplify's rules on numbers: nodes of literals folded, literals spread into arrays read as the
number they spread, products of literals multiplied out.

A broadcast literal (``np.broadcast_to(1.0, shape)``, the seed a reduction's adjoint spreads)
counts as its literal, and so does a typed one (``np.float32(1.0)``, the seed of a float32
result, which folds as a float32 scalar). Every rule is ``rule(node, ctx)`` under the protocol
of :class:`.rewrite.Rewrite`. Invariant: a rewrite happens only when the result has exactly the
node's abstract value (shape, dtype and Python-ness), so no dtype or broadcast is lost.
"""

from __future__ import annotations

import numpy as np

from ..ir import Aval, Literal, Node, Value
from ..ir.primitives import PRIMS, evaluate
from ..ir.shapes import infer
from .rewrite import IN_PLACE, Rewrite

_SAME_ENTRIES = ("broadcast_to", "expand_dims", "reshape")  # every entry is one of the input's


# ---- what a value is, as a number ---------------------------------------------------------------

def literal_value(x, producers):
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
    value = literal_value(node.inputs[0], producers)
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


def _float_literal(x) -> bool:
    return isinstance(x, Literal) and type(x.value) is float


# ---- the rules ----------------------------------------------------------------------------------

def fold(node, ctx):
    """A scalar node of literals only is the literal it computes."""
    if len(node.outputs) != 1 or not node.out.aval.is_scalar:
        return None
    if node.inputs and all(isinstance(x, Literal) for x in node.inputs):
        return Rewrite(value=Literal(evaluate(node.prim, [x.value for x in node.inputs],
                                              node.params)))
    return None


def power_zero(node, ctx):
    """``x ** 0`` is 1 (rewritten in place: a Python 1.0, or ones of x's shape)."""
    if node.prim != "power" or not isinstance(node.inputs[1], Literal):
        return None
    if node.inputs[1].value == 0 and type(node.inputs[1].value) is not bool:
        if node.out.aval.is_scalar:
            node.prim, node.inputs = "add", (Literal(0.0), Literal(1.0))
        else:
            node.prim, node.inputs, node.params = "ones_like", (node.inputs[0],), {}
        return IN_PLACE
    return None


def constant_products(node, ctx):
    """``c1 * (c2 * y)`` becomes ``(c1 * c2) * y`` for float literals (rewritten in place)."""
    if node.prim != "multiply":
        return None
    for k in (0, 1):
        c1, inner = node.inputs[k], node.inputs[1 - k]
        producer = ctx.producers.get(inner) if isinstance(inner, Value) else None
        if not (_float_literal(c1) and producer is not None and producer.prim == "multiply"):
            continue
        for j in (0, 1):
            c2, y = producer.inputs[j], producer.inputs[1 - j]
            if _float_literal(c2) and isinstance(y, Value) and producer.out.aval == node.out.aval:
                node.inputs = (Literal(c1.value * c2.value), y)
                return IN_PLACE
    return None


def literal_operands(node, ctx):
    """An elementwise operand that is a broadcast literal becomes the literal itself where the
    result keeps its shape and dtype: ``broadcast_to(2.0, s) * y`` is ``2.0 * y``."""
    if PRIMS[node.prim].family != "elementwise" or node.params:
        return None
    done = None
    for i, x in enumerate(node.inputs):
        value = literal_value(x, ctx.producers)
        if isinstance(x, Literal) or value is None:
            continue
        inputs = node.inputs[:i] + (Literal(value),) + node.inputs[i + 1:]
        aval = infer(node.prim, [a.aval for a in inputs],
                     [a.value if isinstance(a, Literal) else None for a in inputs], node.params)
        if aval == node.out.aval:
            node.inputs, done = inputs, IN_PLACE
    return done


def fold_typed(node, ctx):
    """An elementwise node of typed literals (and plain ones) whose result is 0-d is the typed
    literal it computes (``np.float32(1.0) * 2.0`` is ``np.float32(2.0)``), rewritten in place."""
    if (PRIMS[node.prim].family != "elementwise" or node.params or len(node.outputs) != 1
            or node.out.aval.kind != "array" or node.out.aval.shape != ()
            or np.dtype(node.out.aval.dtype).kind != "f"):
        return None
    values = [x.value if isinstance(x, Literal) else _typed_literal(x, ctx.producers)
              for x in node.inputs]
    if node.prim == "multiply" and None in values:  # np.float32(1.0) * a is np.float32(a)
        k = values.index(None)
        one, x = values[1 - k], node.inputs[k]
        if (isinstance(one, np.generic) and one == 1 and x.aval.is_scalar
                and x.aval.kind == "float"):
            node.prim, node.inputs, node.params = "astype", (x,), {"dtype": one.dtype.name}
            return IN_PLACE
        return None
    if any(v is None for v in values) or all(isinstance(x, Literal) for x in node.inputs):
        return None
    with np.errstate(all="ignore"):
        value = np.asarray(evaluate(node.prim, values, {}))
    if value.dtype == np.dtype(node.out.aval.dtype):
        node.prim, node.inputs = "astype", (Literal(value.item()),)
        node.params = {"dtype": value.dtype.name}
        return IN_PLACE
    return None


def fold_broadcast_literal(node, ctx):
    """``broadcast_to(c, s) / k`` (or ``* k``) becomes ``broadcast_to(c / k, s)``, and
    ``-broadcast_to(c, s)`` becomes ``broadcast_to(-c, s)``, in place, ``c`` a literal or one
    already spread (:func:`_plain_literal`); for a typed ``c`` (``np.float32(1.0)``), with
    the node making the new typed literal before it."""
    if node.prim == "negative":
        a, b, prim = node.inputs[0], Literal(-1.0), "multiply"
    elif node.prim in ("multiply", "divide") and len(node.inputs) == 2:
        (a, b), prim = node.inputs, node.prim
    else:
        return None
    producer = ctx.producers.get(a)
    if not (isinstance(b, Literal) and producer is not None and producer.prim == "broadcast_to"
            and producer.outputs[0].aval == node.out.aval):
        return None
    plain = _plain_literal(producer.inputs[0], ctx.producers)
    if plain is not None:
        value = evaluate(prim, [plain, b.value], {})
        if not isinstance(value, float):
            return None
        node.prim, node.inputs, node.params = "broadcast_to", (Literal(value),), dict(
            producer.params)
        return IN_PLACE
    typed = _typed_literal(producer.inputs[0], ctx.producers)
    if typed is None:
        return None
    with np.errstate(all="ignore"):
        value = np.asarray(evaluate(prim, [typed, b.value], {}))
    if value.dtype != typed.dtype:
        return None
    seed = _typed(value, value.dtype, node)
    node.prim, node.inputs, node.params = "broadcast_to", (seed.out,), dict(producer.params)
    return Rewrite(before=(seed,))


def same_branches(node, ctx):
    """``where(c, k, k)`` of one number ``k`` (broadcast or not) becomes ``broadcast_to(k, s)``
    in place (for a float32 result, with the node making the typed ``k`` before it): what a
    zero cotangent leaves after a ``where``'s rule (``where(c, 0, g)`` with ``g`` zero),
    which the identities then drop from the sum it joins. ``0.0`` and ``-0.0`` count as one
    number: a cotangent's sign of zero carries no meaning."""
    out = node.out.aval if node.prim == "where" else None
    if out is None or out.kind != "array" or out.shape is None or np.dtype(out.dtype).kind != "f":
        return None
    a, b = (literal_value(x, ctx.producers) for x in node.inputs[1:])
    if a is None or b is None or type(a) is bool or type(b) is bool or a != b:
        return None
    if out.dtype == "float64":
        node.prim, node.inputs = "broadcast_to", (Literal(float(a)),)
        node.params = {"shape": out.shape}
        return IN_PLACE
    seed = _typed(np.asarray(a, dtype=out.dtype)[()], out.dtype, node)
    node.prim, node.inputs, node.params = "broadcast_to", (seed.out,), {"shape": out.shape}
    return Rewrite(before=(seed,))
