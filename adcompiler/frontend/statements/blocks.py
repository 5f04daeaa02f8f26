"""Run a body's statements in order through the registry (:mod:`.table`): a function's body, where
``return`` may end it, and the bodies of branches and loops, where it may not (yet).

Invariants: the builder's ``source`` is each statement's text while it is lowered (nodes carry
the user's line); a function body's value is what its ``return`` gives on every path, an
``if`` holding a ``return`` taking the statements after it as the continuation of each branch
(:data:`NO_RETURN` where the statements fall through); ``break``/``continue`` reach here only
where :mod:`..desugaring.jumps` did not rewrite them, and are refused, located.
"""

from __future__ import annotations

import ast

from ..reading.scopes import own_scope
from .table import CONTINUED, STATEMENTS, lower_statement

NO_RETURN = object()  # what run_block gives when the statements fall through


def run_body(lowering, needed=True):
    """Lower the function's statements; returns the lowered return value (None where the
    caller drops it and the function returns nothing)."""
    src = lowering.src
    result = run_block(lowering, src.tree.body)
    if result is NO_RETURN and not needed:
        return None
    if result is NO_RETURN:
        raise src.error(src.tree, f"`{src.tree.name}` does not return a value on every path",
                        "return the value to differentiate")
    return result


def run_block(lowering, stmts):
    """Lower function-level statements; the returned value, or NO_RETURN if they fall
    through. An ``if`` containing a ``return`` (not a nested def's) takes the statements
    after it as the continuation of each branch that does not return, so every path ends in
    a return; so does one defining a nested def read after it."""
    src = lowering.src
    for i, stmt in enumerate(stmts):
        lowering.b.source = src.text(stmt)
        if isinstance(stmt, ast.Return):
            if stmt.value is None:
                raise src.error(stmt, "this returns nothing", "return the value to differentiate")
            return lowering.expr(stmt.value)
        if isinstance(stmt, ast.If) and (returns_inside(stmt)
                                         or _defines_read(stmt, stmts[i + 1:])):
            return STATEMENTS[ast.If](lowering, stmt, rest=stmts[i + 1:])  # (.control)
        if type(stmt) in CONTINUED:  # np.errstate: its body in place, then the rest (.checks)
            return CONTINUED[type(stmt)](lowering, stmt, stmts[i + 1:])
        run_statements(lowering, [stmt])
    return NO_RETURN


def run_statements(lowering, stmts):
    """Lower the statements of a branch or loop body, in order."""
    src = lowering.src
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            raise src.error(stmt, "a `return` inside a loop is not supported yet: a compiled "
                            "loop runs all its iterations, and what follows it must see "
                            "which one returned",
                            "keep the result and a flag, and return after the loop: "
                            "`found = False; result = 0.0` before it, `if not found and "
                            "<condition>: result, found = <value>, True` inside it, then "
                            "`return np.where(found, result, <the other result>)`")
        if isinstance(stmt, (ast.Break, ast.Continue)):
            raise src.error(stmt, f"`{type(stmt).__name__.lower()}` is not supported yet",
                            "express the exit condition with np.where")
        lowering.b.source = src.text(stmt)
        lower_statement(lowering, stmt)


def returns_inside(stmt) -> bool:
    """Whether ``stmt`` returns from this function: a ``return`` of a nested def is its own."""
    return any(isinstance(n, ast.Return) for n in own_scope([stmt]))


def _defines_read(stmt, rest) -> bool:
    """Whether a branch of ``stmt`` defines a nested def that ``rest`` reads: each branch then
    runs ``rest`` as its continuation, calling its own function (a traced condition cannot
    choose between two functions after the ``if``)."""
    defined = {n.name for n in own_scope([stmt]) if isinstance(n, ast.FunctionDef)}
    return any(isinstance(n, ast.Name) and n.id in defined for s in rest for n in ast.walk(s))
