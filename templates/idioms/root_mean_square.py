"""The scaling ``a = x / sqrt(mean(x * x, axis, keepdims=True) + eps)`` (a layer norm's or an
RMS norm's last step, ``eps`` a constant) seen whole by divide's adjoint rules
(:mod:`templates.elementwise`).

Rule by rule, ``x`` gets ``g / y`` from the quotient and, through ``y``'s chain (divide, sqrt,
add, mean, the square), ``x * sum(-g * a / y) * 0.5 / y / n * 2``: in a transformer block's
layer norm about nine passes over the (S, D) rows (``-g``, ``* a``, ``/ y``, the sum, ``* x``,
``g / y``, two adds). Seen whole, with ``y`` constant along ``axis`` and ``a = x / y``, the two
add up to ``(g - a * mean(g * a, axis, keepdims=True)) / y``: one row dot, three passes. The
numerator's rule gives that, the denominator's rule zero for this use. That is exact: ``y``'s
chain passes this use's cotangent to ``x`` alone (``eps`` is a constant, a literal), and its
other readers' share still flows through the chain's own rules. Adjoints only, like
:mod:`.normalisation`.
"""

from __future__ import annotations

from adcompiler.ir import Value
from adcompiler.ir.graph import Literal
from .forward_uses import forward_uses


def rms_axis(ops, ans, x, y):
    """``(axis,)`` where ``ans = x / y`` and ``y = sqrt(mean(x * x, axis, keepdims=True) +
    eps)`` (``eps`` a literal, or absent) in the graph ``ops`` builds; None otherwise."""
    if not (_shaped(x) and _shaped(y) and len(x.aval.shape) == len(y.aval.shape)
            and x.aval.shape == ans.aval.shape and 1 in y.aval.shape):
        return None   # cheap first: most quotients are not of this shape
    uses = forward_uses(ops)
    if uses is None:
        return None
    quotient = uses.producer(ans)
    if quotient is None or quotient.prim != "divide" or tuple(quotient.inputs) != (x, y):
        return None
    root = uses.producer(y)
    if root is None or root.prim != "sqrt":
        return None
    mean = _past_constant(uses, root.inputs[0])
    if mean is None or mean.prim != "mean" or not mean.params.get("keepdims"):
        return None
    square = uses.producer(mean.inputs[0])
    if square is None or not _squares(square, x):
        return None
    return (mean.params.get("axis"),)


def _past_constant(uses, v):
    """The node making ``m`` where ``v = m + eps`` (or ``eps + m``) with ``eps`` a literal, or
    the node making ``v`` itself."""
    made = uses.producer(v)
    if made is None or made.prim != "add":
        return made
    m, eps = made.inputs
    if isinstance(m, Literal):
        m, eps = eps, m
    return uses.producer(m) if isinstance(eps, Literal) else None


def _squares(node, x) -> bool:
    if node.prim == "multiply":
        return tuple(node.inputs) == (x, x)
    if node.prim in ("power", "square"):
        exponent = node.inputs[1] if node.prim == "power" and len(node.inputs) == 2 else None
        return node.inputs[0] is x and (node.prim == "square" or (
            isinstance(exponent, Literal) and exponent.value == 2))
    return False


def _shaped(v) -> bool:
    return isinstance(v, Value) and v.aval.kind == "array" and v.aval.shape is not None \
        and v.aval.is_float
