"""The handler of expression statements, which Python's grammar gives one node type
(``ast.Expr``) for several forms: each form is told apart by its own predicate, here.

``xs.append(v)`` feeds a while loop's list (:mod:`.lists`), ``np.add.at(y, i, v)`` is an
in-place update (:mod:`.setitem`), a bare call of the user's function (or method) is inlined
for what it writes into its arguments. Invariants: the forms are tried in the order of
:data:`EXPRESSION_FORMS`, the first whose predicate holds lowers the statement; an expression
statement of no form (a docstring) does nothing, and a call that is not the user's is refused
(it would have no effect).
"""

from __future__ import annotations

import ast

from .. import fence
from ..expressions.lowering import NOT_USER
from .lists import is_append, lower_append
from .setitem import is_add_at, lower_add_at
from .table import statement


def bare_call(lowering, stmt: ast.Expr):
    """``helper(x)`` as a statement: the user's function (or method) is inlined for what it
    writes into its arguments (its result, if any, is dropped); any other call has no
    effect, which is an error."""
    node = stmt.value
    func = lowering.expr(node.func)
    args, kwargs = lowering.call_arguments(node)
    if lowering.call_user(func, args, kwargs, node, result=False) is NOT_USER:
        raise fence.bare_expression(lowering.src, stmt)


# (predicate on the statement, handler(lowering, stmt)), in the order they are tried
EXPRESSION_FORMS = ((is_append, lower_append),
                    (is_add_at, lower_add_at),
                    (fence.may_call_user, bare_call))


@statement(ast.Expr)
def expression_statement(lowering, stmt: ast.Expr):
    for holds, handler in EXPRESSION_FORMS:
        if holds(stmt):
            return handler(lowering, stmt)
    return None  # a docstring (the fence refuses other expression statements)
