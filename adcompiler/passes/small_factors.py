"""An adjoint's product of arrays, quotients and literal scales, ``(dp - t) / y * p * c`` with
``y`` far smaller than the product (a row of sums, broadcast), regrouped so that the small
factors and the scales meet first, on the small array: ``(dp - t) * p * (c / y)``.

Before (a softmax's adjoint in attention, over (H, S, S)): a divide by ``y`` (H, S, 1), a
multiply by ``p``, a multiply by the scale ``c``: three passes, one of them a division (about
three multiplications' time). After: ``c / y`` on H * S entries, then two multiplications. A
lone quotient by a small array, a layer norm's ``(g - a * m) / y``, becomes ``(g - a * m) * (1
/ y)``: a multiplication in place of a division, where the product holds at least
:data:`.fuse.MIN_SIZE` elements (below, the extra call costs what the division saves).

A numerator ``x`` and a small denominator ``y`` of a tree whose quotient ``x / y`` the forward
part computed already are that quotient, read again: the softmax's adjoint ``(dp - t) / y * p
* c`` (``p`` the exponentials, ``y`` their sums) is ``(dp - t) * q * c`` with ``q = p / y``,
the softmax itself: no division, no broadcast pass.

Terms. The *tree* of a root ``multiply`` or ``divide`` is the multiplies and divides below it
(numerators and denominators) whose result is read by nothing else, of the root's shape and
dtype; its *leaves* the other operands, each with an exponent 1 or -1. A leaf is *small* when
it has at least :data:`RATIO` times fewer elements than the root and every small leaf has one
shape, or is a Python number (a scale, a literal or a traced float). The rewrite multiplies the
large leaves in order (numerators, then the quotients by large denominators) and then by the
small leaves' product, itself computed on the small shape. A tree with two literals or more is
left as written: each may be a size used as a number, which ``adcompiler compile`` fits apart
(``math.log(n)``, ``math.sqrt(d)``), never their product folded into one float.

Invariants: adjoint code only (the user's own quotients keep NumPy's rounding); only top-level
nodes; every array leaf has the root's dtype (no promotion moves); a tree is rewritten only when
it then makes fewer passes over the root's shape, or as many with no division among them where
there was one; the root's Value is kept (its readers are untouched). Values change by rounding
only (``a / y`` against ``a * (1 / y)``: an ulp).
"""

from __future__ import annotations

from ..ir import Literal, Node, Value, sizing
from ..ir.shapes import infer
from .fuse import MIN_SIZE
from .rewrite import use_counts

RATIO = 8   # a small leaf has this many times fewer elements than the product, at least


def gather_small_factors(graph):
    uses = use_counts(graph)
    producers = {n.outputs[0]: n for n in graph.nodes if len(n.outputs) == 1}
    chosen, dropped, quotients = {}, set(), _quotients(graph)
    for node in reversed(graph.nodes):   # roots first: a tree's inner nodes are taken whole
        if node not in dropped:
            found = _regrouped(node, uses, producers, dropped, quotients)
            if found is not None:
                chosen[node] = found
    out, reciprocals = [], {}   # in program order, so that one 1.0 / y serves its later readers
    for node in graph.nodes:
        if node in chosen:
            out.extend(_rebuilt(node, *chosen[node], reciprocals))
        elif node not in dropped:
            out.append(node)
    graph.nodes = out
    return graph


def _quotients(graph) -> dict:
    """``(x, y) -> (x / y, position)`` for the forward part's top-level divides of two Values
    (the first of each pair); under ``None``, each node's position."""
    found = {None: {n: i for i, n in enumerate(graph.nodes)}}
    for i, n in enumerate(graph.nodes):
        if n.phase == "forward" and n.prim == "divide" and len(n.outputs) == 1 and all(
                isinstance(x, Value) for x in n.inputs):
            found.setdefault(tuple(n.inputs), (n.outputs[0], i))
    return found


def _is_product(node) -> bool:
    return node.phase == "adjoint" and node.prim in ("multiply", "divide") \
        and len(node.inputs) == 2 and len(node.outputs) == 1 and _array(node.outputs[0])


def _array(v) -> bool:
    return isinstance(v, Value) and v.aval.kind == "array" and v.aval.is_float \
        and v.aval.known_shape is not None


def _leaves(node, uses, producers, inner):
    """``[(operand, exponent)]`` of ``node``'s tree; its inner nodes appended to ``inner``."""
    out = []
    for i, x in enumerate(node.inputs):
        sign = -1 if node.prim == "divide" and i == 1 else 1
        below = producers.get(x)
        if (below is not None and _is_product(below) and uses.get(x) == 1
                and x.aval == node.outputs[0].aval):
            inner.append(below)
            out.extend((y, e * sign) for y, e in _leaves(below, uses, producers, inner))
        else:
            out.append((x, sign))
    return out


def _small(x, root) -> bool:
    if isinstance(x, Literal):
        return isinstance(x.value, float) or type(x.value) is int
    if not isinstance(x, Value):
        return False
    if x.aval.is_scalar:
        return x.aval.is_float
    return _array(x) and x.aval.dtype == root.aval.dtype and RATIO * sizing.elements(
        x.aval.known_shape) <= sizing.elements(root.aval.known_shape)


def _regrouped(node, uses, producers, dropped, quotients):
    """The nodes computing ``node``'s output regrouped, or None where that is no saving."""
    if not _is_product(node):
        return None
    root, inner = node.outputs[0], []
    leaves = _reuse_quotients(_leaves(node, uses, producers, inner), quotients, node)
    small = [(x, e) for x, e in leaves if _small(x, root)]
    large = sorted(((x, e) for x, e in leaves if not _small(x, root)), key=lambda xe: -xe[1])
    shapes = {x.aval.known_shape for x, _ in small
              if isinstance(x, Value) and not x.aval.is_scalar}
    if not large or len(shapes) > 1 or large[0][1] < 0 or (len(large) == 1 and not small):
        return None
    literals = [(x, e) for x, e in small if isinstance(x, Literal)]
    if any(_array(x) and x.aval.dtype != root.aval.dtype for x, _ in large) or len(
            literals) > 1 or any(e < 0 and x.value == 0 for x, e in literals):
        return None   # several literals: each may be a size as a number (``adcompiler compile``
        #               fits log(n) and sqrt(d) apart, not their product), so left as written
    divides = sum(1 for n in [node, *inner] if n.prim == "divide")
    after = len(large) - 1 + (1 if small else 0)   # passes over the root's shape
    divides_after = sum(1 for _, e in large if e < 0)
    fewer = after < len(inner) + 1
    lighter = (after == len(inner) + 1 and divides_after < divides
               and sizing.elements(root.aval.known_shape) >= MIN_SIZE)
    if not (fewer or lighter):
        return None
    dropped.update(inner)
    return large, small


def _reuse_quotients(leaves, quotients, node):
    """``leaves`` with a pair ``x`` (exponent 1), ``y`` (-1) replaced by ``q`` where the forward
    part computes ``q = x / y`` before ``node`` (a softmax's ``p / t`` in its adjoint's ``... / t
    * p``); a forward node is never a tree's, so never dropped."""
    before = quotients[None][node]
    for i, (x, e) in enumerate(leaves):
        for j, (y, f) in enumerate(leaves):
            found = quotients.get((x, y)) if e > 0 > f else None
            if found is not None and found[1] < before:
                rest = [leaf for k, leaf in enumerate(leaves) if k not in (i, j)]
                return _reuse_quotients(rest + [(found[0], 1)], quotients, node)
    return leaves


def _rebuilt(node, large, small, reciprocals):
    """``large`` multiplied (and divided) in order, then times the small leaves' product (a
    lone ``1.0 / y`` taken from ``reciprocals`` where an earlier tree made it)."""
    made = []

    def emit(prim, a, b, out=None):
        if out is None:
            out = Value(infer(prim, [a.aval, b.aval], [_lit(a), _lit(b)], {}))
        made.append(Node(prim, (a, b), {}, (out,), node.source, node.phase))
        return out

    factor = _scale(small)   # the literal first, a float: c / y, not 1.0 / y * c
    for x, e in (xe for xe in small if not isinstance(xe[0], Literal)):
        if factor is None:
            factor = x if e > 0 else reciprocals.get(x)
            if factor is None:
                factor = reciprocals[x] = emit("divide", Literal(1.0), x)
        else:
            factor = emit("multiply" if e > 0 else "divide", factor, x)
    acc, last = large[0][0], len(large) - 1
    for k, (x, e) in enumerate(large[1:], 1):
        out = node.outputs[0] if k == last and factor is None else None
        acc = emit("multiply" if e > 0 else "divide", acc, x, out=out)
    if factor is not None:
        emit("multiply", acc, factor, out=node.outputs[0])
    return made


def _scale(small):
    """The literal (at most one) as a float Literal, ``c`` or ``1 / c`` (a weak scalar: the
    arrays keep their dtype; an int literal's node would be of int type), or None."""
    values = [(x.value, e) for x, e in small if isinstance(x, Literal)]
    if not values:
        return None
    c = 1.0
    for v, e in values:
        c = c * v if e > 0 else c / v
    return Literal(float(c))


def _lit(x):
    return x.value if isinstance(x, Literal) else None
