"""The registry of statement handlers: ``STATEMENTS`` maps an AST statement type to the function
lowering it, ``handler(lowering, stmt)``; ``CONTINUED`` maps the types that, at a function's
level, take the statements after them as part of their own body, to
``handler(lowering, stmt, rest)`` (which returns the function's value, as :mod:`.blocks` does).

A handler registers itself with ``@statement(ast.If)`` where it is defined, so the table is full
once the lowering's modules are imported (:mod:`..lower` imports them all). Invariants: one
handler per node type (a second registration is a bug, refused at import); ``pass`` has no
handler and does nothing; any other statement without one is a bug, refused when it is
lowered (the fence refuses unsupported forms before lowering starts).
"""

from __future__ import annotations

import ast

from ..registry import registrar

STATEMENTS: dict = {}  # ast statement type -> handler(lowering, stmt)
# @statement(ast.If): the decorated function handles those statement types
statement = registrar(STATEMENTS, "handlers", "statements")

CONTINUED: dict = {}  # ast statement type -> handler(lowering, stmt, rest), at function level
# @continued(ast.With): what such a statement does at a function's level, followed by the
# statements after it
continued = registrar(CONTINUED, "continued handlers", "statements")


def lower_statement(lowering, stmt):
    """Lower one statement with the handler registered for its type (``pass`` has none)."""
    handler = STATEMENTS.get(type(stmt))
    if handler is not None:
        handler(lowering, stmt)
    elif not isinstance(stmt, ast.Pass):  # a module of handlers that nothing imported
        raise AssertionError(f"no handler for {type(stmt).__name__} statements")
