"""When the gradient reaching a max (or min) reduction is zero: a proof of shift invariance.

Softmax, log-softmax and logsumexp subtract ``m = np.max(z, axis, keepdims=True)`` for
stability. The function's value does not depend on ``m`` (``softmax(z - m) == softmax(z)``,
``m + log(sum(exp(z - m))) == logsumexp(z)``), so its derivative in ``m`` is zero, exactly;
computed the general way it is a sum of terms that cancel (``-sum(g * p) + sum(g * p)``) fed
through the max's rule (an equality mask, a count of ties, a division): five or six passes
over ``z``-sized arrays for a result that is zero up to rounding. JAX's logsumexp writes
``stop_gradient(max)`` for this reason; here the compiler proves it instead, so that it holds
for the user's own spelling and never where it is false.

The proof (:func:`cotangent_vanishes`): the graph's output is unchanged when ``m`` is replaced
by ``m + c`` for every ``c`` of ``m``'s shape, hence ``d output / d m`` is zero entry by entry.
It is an abstract interpretation of the forward nodes after ``m``, tracking how each value
``v`` depends on the perturbation ``c``:

- untracked: ``v`` does not depend on ``c``;
- ``("shift", k, emb)``: ``v(m + c) == v(m) + k * E(c)``;
- ``("scale", k, emb)``: ``v(m + c) == v(m) * exp(k * E(c))``;
- ``OTHER``: anything else (every primitive without a rule below gives it).

``E(c)`` is ``c`` laid out in ``v``'s shape: ``emb[a]`` is the axis of ``v`` that axis ``a``
of ``c`` runs along (None for axes of length 1, which broadcast), and ``c`` is constant along
every other axis of ``v``. Two tagged values combine only where their layouts agree. The
rules are those of exact arithmetic (``exp(w + kc) = exp(w) exp(kc)``, ``sum`` over axes where
``E(c)`` is constant factors it out, a ratio of equal scales cancels, ``log`` of a scale is a
shift) and every primitive given one has an adjoint rule that is its exact derivative, so a
zero derivative of the value is a zero cotangent. Anything not understood (a loop reading
``m``, a comparison, ``abs``, a product of two shifts, a coefficient that is not a literal)
leaves the output ``OTHER`` and the max keeps its rule (ties split), as it must: the output of
``z - np.max(z)`` fed to anything not shift-invariant does depend on the max.
"""

from __future__ import annotations

import math

from adcompiler.ir import Literal, Value, walk
from .forward_uses import forward_uses
from .shift_layouts import LAYOUT_RULES  # shape primitives and reductions
from .shift_tags import OTHER, Unknown


def cotangent_vanishes(ops, ans) -> bool:
    """Whether the output of the graph ``ops`` emits into (the compiler's Builder, during
    reverse mode) is invariant under ``ans -> ans + c``: then the cotangent of ``ans``, which
    a top-level forward node produced, is zero analytically."""
    uses = forward_uses(ops)
    if uses is None or len(uses.graph.outputs) != 1 or not isinstance(ans, Value):
        return False
    node, shape = uses.producer(ans), ans.aval.known_shape
    if node is None or shape is None:
        return False
    tags = {ans: ("shift", 1.0, tuple(a if d != 1 else None for a, d in enumerate(shape)))}
    for later in uses.nodes[uses.position(node) + 1:]:
        _step(later, tags)
    out = uses.graph.outputs[0]
    return not (isinstance(out, Value) and out in tags)


def _step(node, tags):
    """Tag the outputs of ``node`` from its inputs' tags (nothing when it reads none)."""
    nested = [x for n in walk([node]) if n is not node for x in n.inputs]
    nested += [x for n in walk([node]) for b in n.regions for x in b.outputs]
    if not any(isinstance(x, Value) and x in tags for x in list(node.inputs) + nested):
        return
    tag = OTHER
    if not node.regions and len(node.outputs) == 1 and node.out.aval.known_shape is not None:
        try:
            tag = _transfer(node, [tags.get(x) if isinstance(x, Value) else None
                                   for x in node.inputs])
        except Exception:  # Unknown, or parameters of a form no rule expected: not proven
            tag = OTHER
    for v in node.outputs:
        if tag is not None:
            tags[v] = tag


def _ndim(x) -> int:
    shape = x.aval.known_shape
    if shape is None:
        raise Unknown
    return len(shape)


def _aligned(tag, node, i):
    """Input ``i``'s tag in the layout of the result (NumPy broadcasting aligns on the right)."""
    if tag is None:
        return None
    if tag is OTHER:
        raise Unknown
    offset = len(node.out.aval.known_shape) - _ndim(node.inputs[i])
    return tag[0], tag[1], tuple(None if e is None else e + offset for e in tag[2])


def _make(kind, k, emb):
    return None if k == 0 else (kind, k, emb)


def _number(x):
    """The finite nonzero number a literal operand is, else None."""
    if isinstance(x, Literal) and type(x.value) in (int, float):
        value = float(x.value)
        return value if math.isfinite(value) and value != 0 else None
    return None


def _transfer(node, tags):
    rule = _RULES.get(node.prim)
    if rule is None:
        raise Unknown
    return rule(node, tags)


def _add_subtract(node, tags):
    sign = 1.0 if node.prim == "add" else -1.0
    a, b = (_aligned(t, node, i) for i, t in enumerate(tags))
    if any(t is not None and t[0] != "shift" for t in (a, b)):
        raise Unknown
    if a is not None and b is not None:
        if a[2] != b[2]:
            raise Unknown
        return _make("shift", a[1] + sign * b[1], a[2])
    return a if a is not None else _make("shift", sign * b[1], b[2])


def _multiply(node, tags):
    a, b = (_aligned(t, node, i) for i, t in enumerate(tags))
    if a is not None and b is not None:
        if a[0] != "scale" or b[0] != "scale" or a[2] != b[2]:
            raise Unknown
        return _make("scale", a[1] + b[1], a[2])
    tag, other = (a, node.inputs[1]) if a is not None else (b, node.inputs[0])
    if tag[0] == "scale":
        return tag   # (v e^kc) * w == (v w) e^kc
    factor = _number(other)
    if factor is None:
        raise Unknown
    return _make("shift", tag[1] * factor, tag[2])


def _divide(node, tags):
    a, b = (_aligned(t, node, i) for i, t in enumerate(tags))
    if a is not None and b is not None:
        if a[0] != "scale" or b[0] != "scale" or a[2] != b[2]:
            raise Unknown
        return _make("scale", a[1] - b[1], a[2])
    if b is not None:
        if b[0] != "scale":
            raise Unknown
        return _make("scale", -b[1], b[2])
    if a[0] == "scale":
        return a
    factor = _number(node.inputs[1])
    if factor is None:
        raise Unknown
    return _make("shift", a[1] / factor, a[2])


def _unary(kind_in, kind_out, sign=1.0):
    def rule(node, tags):
        tag = _aligned(tags[0], node, 0)
        if tag[0] != kind_in:
            raise Unknown
        return _make(kind_out, sign * tag[1], tag[2])
    return rule


def _astype(node, tags):
    if not node.out.aval.is_float:
        raise Unknown
    return _aligned(tags[0], node, 0)


def _where(node, tags):
    """``where(cond, a + kc, b + kc)`` is ``where(cond, a, b) + kc`` (and so for scales)."""
    if tags[0] is not None:
        raise Unknown
    a, b = _aligned(tags[1], node, 1), _aligned(tags[2], node, 2)
    if a is None or a != b:
        raise Unknown
    return a


_RULES = {"add": _add_subtract, "subtract": _add_subtract, "multiply": _multiply,
          "divide": _divide, "negative": lambda n, t: _negate(_aligned(t[0], n, 0)),
          "exp": _unary("shift", "scale"), "log": _unary("scale", "shift"),
          "astype": _astype, "where": _where, **LAYOUT_RULES}


def _negate(tag):
    return tag if tag[0] == "scale" else _make("shift", -tag[1], tag[2])
