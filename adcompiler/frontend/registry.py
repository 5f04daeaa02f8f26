"""Tables of handlers keyed by AST node type, filled by decorators beside each handler (the
statement and expression tables of :mod:`.statements.table` and :mod:`.expressions.table`).

Invariant: one handler per node type in a table; a second registration is a bug, refused when
its module is imported.
"""

from __future__ import annotations


def registrar(table: dict, label: str, noun: str):
    """``@register(ast.If, ...)``: the decorator putting a handler in ``table`` for those node
    types (``label`` and ``noun`` word the refusal: "two handlers for If statements")."""
    def register_kinds(*kinds):
        def register(handler):
            for kind in kinds:
                if kind in table:
                    raise AssertionError(f"two {label} for {kind.__name__} {noun}")
                table[kind] = handler
            return handler
        return register
    return register_kinds
