"""Emitting a loop that breaks: a real ``break`` once its done flag is set.

The IR keeps a ``break`` structured (a carried ``done`` flag and the body under ``if not
done``; see :mod:`adcompiler.transforms.loop_exit`), which ran the loop's whole range: every
iteration after the break tested the flag (with ``np.logical_not``, a NumPy call on a Python
bool, ~20x ``not``) and stored residuals nobody reads. The emitted loop now leaves after the
iteration that sets the flag, once that iteration's carried values and stack rows are
written; in the iterations it runs the guard is true, so the guarded ``if`` is written as its
branch alone. Which loops: those whose every carried value stays as it is once the flag is
set, that either stack nothing or whose adjoint runs only over the iterations taken (marked
``exit`` by the transform). Plain code (read again by the frontend) keeps the whole loop.
"""

from __future__ import annotations

import ast

from ..transforms.loop_exit import exit_guard


def early_exit(node, plain):
    """``(guard cond, done index)`` where the emitted ``node`` may ``break`` after the
    iteration that sets its done flag, else None."""
    if plain or node.prim != "loop" or node.params.get("reverse"):
        return None
    if node.params.get("stacked", 0) and not node.params.get("exit"):
        return None  # an adjoint reads every row: the loop must write them all
    return exit_guard(node)


def break_lines(slot) -> list:
    """After the slots take the iteration's values: leave once the flag ``slot`` is set."""
    return [f"if {slot}:", "    break"]


_BOOL_OPS = {"logical_and": ast.And, "logical_or": ast.Or}


def not_expr(node, args, producer):
    """``not x`` (``a and b``, ``a or b``) for ``logical_not`` (``logical_and``,
    ``logical_or``) of Python bools (a jump's flag, a while test ``i < n and not done``):
    what the user's operators compute, without a NumPy call (~20x as long); else None. Both
    operands are pure, so evaluating one only is the same."""
    if not _python_bool(node, producer):
        return None
    if node.prim != "logical_not" and not any(
            getattr(producer.get(x), "prim", None) == "logical_not" for x in node.inputs):
        return None  # only a test on a jump's flag: other conditions keep their spelling
    if node.prim == "logical_not":
        return ast.UnaryOp(ast.Not(), args[0])
    return ast.BoolOp(_BOOL_OPS[node.prim](), list(args))


def _python_bool(node, producer, depth=8) -> bool:
    """Whether ``node`` is a logical operator on Python bools (or on such operators' results,
    which the IR types as 0-d arrays but this emitter writes as Python bools)."""
    if node.prim not in ("logical_not", *_BOOL_OPS) or depth == 0:
        return False
    for x in node.inputs:
        aval = getattr(x, "aval", None)
        if aval is None:  # a literal: left to NumPy
            return False
        made = producer.get(x) if aval.kind != "bool" else None
        if aval.kind != "bool" and not (made and _python_bool(made, producer, depth - 1)):
            return False
    return True
