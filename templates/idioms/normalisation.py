"""The normalisation ``q = x / sum(x, axis, keepdims=True)`` (a softmax's last step) seen whole
by divide's adjoint rules (:mod:`templates.elementwise`).

Rule by rule, ``x`` gets ``g / y`` from the quotient and, through the sum's rule, the broadcast
of ``y``'s cotangent ``sum(-g * q / y, axis)``: in a transformer block's attention, eight passes
over the (H, S, S) scores (``-dp``, ``* p_1``, ``/ t2``, the sum, ``dp / t2``, ``+ dt10``,
``* p``, ``* scale``). Seen whole, since ``y`` is constant along ``axis``, the two add up to
``(g - sum(g * q, axis, keepdims=True)) / y``: the numerator's rule gives that, the
denominator's rule gives zero for this use (a zero the simplifier drops). That is exact:
``y = sum(x)`` passes every cotangent it gets to ``x`` alone, and its other readers' share
still flows through the sum's rule. Adjoints only: the tangent of ``q`` is not the same
rearrangement (``J dx`` has ``q * sum(dx)``, ``J^T g`` has ``sum(g * q)``).
"""

from __future__ import annotations

from adcompiler.ir import Value
from .forward_uses import forward_uses


def normalised_axis(ops, ans, x, y):
    """``(axis,)`` where ``ans = x / y`` and ``y = sum(x, axis, keepdims=True)`` in the graph
    ``ops`` builds (the compiler's Builder); None otherwise (the tape's arrays, SymPy)."""
    if not (_shaped(x) and _shaped(y) and len(x.aval.shape) == len(y.aval.shape)
            and x.aval.shape == ans.aval.shape and 1 in y.aval.shape):
        return None   # cheap first: most quotients are not of this shape
    uses = forward_uses(ops)
    made = uses.producer(y) if uses is not None else None
    if made is None or made.prim != "sum" or made.inputs[0] is not x \
            or not made.params.get("keepdims"):
        return None
    quotient = uses.producer(ans)
    if quotient is None or quotient.prim != "divide" or tuple(quotient.inputs) != (x, y):
        return None
    return (made.params.get("axis"),)


def _shaped(v) -> bool:
    return isinstance(v, Value) and v.aval.kind == "array" and v.aval.shape is not None \
        and v.aval.is_float
