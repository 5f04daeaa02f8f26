"""Statement lowering: one handler per statement form, registered by AST node type.

:mod:`.table` is the registry (``STATEMENTS``, filled by the ``@statement(ast.If)`` decorator
beside each handler, and ``lower_statement``, which looks a statement's handler up); the
expression statements (``xs.append(v)``, ``np.add.at(...)``, a bare call of the user's
function) are told apart by their own predicates in one place, :mod:`.expression_statements`.
Invariant: every statement the fence lets through has a handler here, or does nothing
(``pass``, a docstring).
"""
