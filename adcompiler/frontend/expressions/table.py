"""The registry of expression handlers: ``EXPRESSIONS`` maps an AST expression type to the
function lowering it, ``handler(lowering, node)``, which returns a Value or a static object.

A handler registers itself with ``@expression(ast.BinOp)`` where it is defined, so the table is
full once the lowering's modules are imported (:mod:`..lower` imports them all); the
lowering's ``expr`` (:mod:`.lowering`) looks a node's handler up and locates what it raises.
Invariants: one handler per node type (a second registration is a bug, refused at import);
every expression type the fence lets through has a handler.
"""

from __future__ import annotations

from ..registry import registrar

EXPRESSIONS: dict = {}  # ast expression type -> handler(lowering, node)
# @expression(ast.BinOp): the decorated function handles those expression types
expression = registrar(EXPRESSIONS, "handlers", "expressions")


def handler_of(node):
    """The handler registered for ``node``'s type."""
    handler = EXPRESSIONS.get(type(node))
    if handler is None:
        raise AssertionError(f"no handler for {type(node).__name__} expressions (the fence "
                             "lets through only the forms that have one)")
    return handler
