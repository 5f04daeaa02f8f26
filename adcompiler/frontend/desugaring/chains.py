"""Chained comparisons, ``lo < x[i] < hi``: Python's ``lo < x[i] and x[i] < hi``, each operand
evaluated once, the next one only where the chain so far holds.

Each link (``lo < x[i]``) is lowered by the lowering's own single comparison
(:func:`..expressions.lowering.lower_compare`), on operands already lowered (held in
``ast.Constant`` nodes that carry the user's locations), so a link means exactly what the same
comparison means alone. Links known while compiling decide while compiling, as Python's
``and``; after a traced link the rest of the chain runs in a block joined to it as ``and`` is
(:meth:`ControlLowering.bool_step`: spliced in and met with ``np.logical_and`` where the rest is
cheap and cannot raise, see :mod:`.shortcircuit`, else a ``cond``). The rest nests inside that
block, so an operand computed there is read only there.

Invariant: Python tests the truth of every link but the last; for a link that is an array
(``0 < x < 1`` with an array ``x``) NumPy raises "the truth value of an array ... is
ambiguous", and so does the compiler, located at that link, with the elementwise spelling
(``(0 < x) & (x < 1)``) to write instead.
"""

from __future__ import annotations

import ast

import numpy as np

from ...ir import Block, Value
from .shortcircuit import runs_unconditionally

_OP_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
            ast.NotIn: "not in"}


def lower_chain(lowering, node: ast.Compare):
    """The value of ``a < b < c ...`` (two or more operators), as Python computes it."""
    return _from(lowering, node, lowering.expr(node.left), node.left, 0)


def _from(lw, node, left, left_node, k):
    """``left op_k comparator_k op_k+1 ...``: link ``k`` and, where it holds, the rest."""
    right_node = node.comparators[k]
    right = lw.expr(right_node)
    link = _link(node, k, left_node, right_node)
    v = lw.expr(ast.copy_location(ast.Compare(_held(left, left_node), [node.ops[k]],
                                              [_held(right, right_node)]), link))
    if k == len(node.ops) - 1:
        return v
    if not isinstance(v, Value):   # known while compiling: Python's `and` decides here
        return _from(lw, node, right, right_node, k + 1) if lw.static_op(link, bool, v) else v
    if v.aval.known_shape != ():
        raise _ambiguous(lw, node, link, v)
    block = Block()
    with lw.b.into(block):
        rest = _from(lw, node, right, right_node, k + 1)
        inline = runs_unconditionally(lw, block)
    if not isinstance(rest, Value):   # `v and True` holds where v does; `v and False` never
        lw.b.target.extend(block.nodes)
        return v if lw.static_op(link, bool, rest) else rest
    return lw.bool_step(node, True, v, rest, block, inline)


def _held(value, at) -> ast.Constant:
    """An already lowered operand, read back by ``lower_constant``, at ``at``'s location."""
    return ast.copy_location(ast.Constant(value=value), at)


def _link(node, k, left_node, right_node) -> ast.Compare:
    """Link ``k`` as its own comparison, located from its left operand to its right one."""
    return ast.Compare(left_node, [node.ops[k]], [right_node], **_span_of(left_node, right_node))


def _span_of(first, last) -> dict:
    names = ("lineno", "col_offset", "end_lineno", "end_col_offset")
    if not all(hasattr(first, n) and hasattr(last, n) for n in names):
        return {}
    return {"lineno": first.lineno, "col_offset": first.col_offset,
            "end_lineno": last.end_lineno, "end_col_offset": last.end_col_offset}


def _ambiguous(lw, node, link, v):
    """NumPy's ValueError for the truth value of an array link, located, with what to write
    (a one-element array, whose truth NumPy takes, is refused with its own words)."""
    texts = [lw.src.text(n) for n in (node.left, *node.comparators)]
    if v.aval.known_shape is not None and int(np.prod(v.aval.known_shape)) == 1:
        return lw.src.error(
            link, f"`{lw.src.text(link)}` is an array of shape {v.aval.known_shape}, whose "
            "truth value a chained comparison tests: NumPy takes it for one element, "
            "adcompiler does not yet", "compare its element: index it (x[0]) or .item() it")
    pairs = [f"({a} {_OP_TEXT[type(op)]} {b})"
             for a, op, b in zip(texts, node.ops, texts[1:])]
    return lw.src.error(
        link, f"`{lw.src.text(link)}` is an array of shape {v.aval.known_shape}, and a "
        "chained comparison tests its truth value, which is ambiguous (NumPy raises "
        "ValueError: the truth value of an array with more than one element is ambiguous)",
        f"for an elementwise test write {' & '.join(pairs)}, or reduce it (np.all, np.any)")
