"""The handler of expression statements, which Python's grammar gives one node type
(``ast.Expr``) for several forms: each form is told apart by its own predicate, here.

``xs.append(v)`` feeds a while loop's list (:mod:`.lists`), ``np.add.at(y, i, v)`` is an
in-place update (:mod:`.setitem`), a bare call of the user's function (or method) is inlined
for what it writes into its arguments. Invariants: the forms are tried in the order of
:data:`EXPRESSION_FORMS`, the first whose predicate holds lowers the statement; an expression
statement of no form (a docstring) does nothing, and a call that is not the user's is refused
(it would have no effect). The fence refuses, up front, the bare expressions of no form
(:func:`bare_expression`) with the same predicates.
"""

from __future__ import annotations

import ast

from ..expressions.lowering import NOT_USER, PRINT_HINT
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
        raise bare_expression(lowering.src, stmt)


def may_call_user(stmt) -> bool:
    """A bare call that may be of the user's own function (``normalize_(x)``, which writes into
    ``x``): the lowering inlines it if it is one, and refuses it with
    :func:`bare_expression` if not."""
    call = stmt.value
    return (isinstance(call, ast.Call) and _writes_in_place(call) is None
            and not (isinstance(call.func, ast.Name) and call.func.id == "print"))


def bare_expression(src, stmt):
    call = stmt.value
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print":
        return src.error(call, "`print` is not supported in a compiled function: the generated "
                         "code has no side effects",
                         PRINT_HINT)
    if isinstance(call, ast.Call) and (writes := _writes_in_place(call)):
        return src.error(call, f"{writes} writes into an array in place, which a compiled "
                         "function does not support here",
                         "assign the new values to the name instead: "
                         + _rewrite_of(src, call, writes))
    return src.error(stmt, "an expression statement has no effect on the result",
                     "assign it to a name, or remove it")


_IN_PLACE_METHODS = {"fill", "sort", "put", "resize", "itemset", "partition", "setfield"}
_IN_PLACE_FUNCTIONS = {"copyto", "put", "place", "putmask", "fill_diagonal"}
# what to write instead of each in-place call, in the user's names: {a} the array a method is
# called on, {rest} its arguments after a comma, {args} its arguments, {call} the call itself
_REWRITES = {"`.sort()`": "`{a} = np.sort({a}{rest})` for `{call}`",
             "`.fill()`": "`{a} = np.full_like({a}, {args})` for `{call}`",
             "`.partition()`": "`{a} = np.partition({a}{rest})` for `{call}`",
             "`.resize()`": "`{a} = np.resize({a}, {args})` for `{call}`",
             "`np.copyto`": "`{first} = {second}.copy()` for `{call}`",
             "`out=`": "`{out} = {plain}` for `{call}`"}


def _rewrite_of(src, call, writes) -> str:
    """The rewrite of one in-place call, in the user's names where there is one."""
    rewrite = _REWRITES.get(writes)
    if rewrite is None:
        return "`y = x.copy()`, then index assignments into `y`, for a write into `x`"
    args = [src.text(a) for a in call.args]
    keywords = {k.arg: src.text(k.value) for k in call.keywords}
    plain = [*args, *(f"{k}={v}" for k, v in keywords.items() if k != "out")]
    func = src.text(call.func)
    return rewrite.format(
        a=src.text(call.func.value) if isinstance(call.func, ast.Attribute) else "y",
        rest="".join(f", {a}" for a in plain), args=", ".join(plain), call=src.text(call),
        first=(args + ["y"])[0], second=(args[1:] + ["x"])[0], out=keywords.get("out", "y"),
        plain=f"{func}({', '.join(plain)})")


def _writes_in_place(call) -> str | None:
    """How a bare call writes into an array (``y.fill(2.0)``, ``np.copyto(y, x)``,
    ``np.exp(x, out=y)``), or None."""
    if any(k.arg == "out" for k in call.keywords):
        return "`out=`"
    if isinstance(call.func, ast.Attribute):
        base = call.func.value
        numpy_call = isinstance(base, ast.Name) and base.id in ("np", "numpy")
        if numpy_call and call.func.attr in _IN_PLACE_FUNCTIONS:
            return f"`np.{call.func.attr}`"
        if not numpy_call and call.func.attr in _IN_PLACE_METHODS:
            return f"`.{call.func.attr}()`"
    return None


# (predicate on the statement, handler(lowering, stmt)), in the order they are tried
EXPRESSION_FORMS = ((is_append, lower_append),
                    (is_add_at, lower_add_at),
                    (may_call_user, bare_call))


@statement(ast.Expr)
def expression_statement(lowering, stmt: ast.Expr):
    for holds, handler in EXPRESSION_FORMS:
        if holds(stmt):
            return handler(lowering, stmt)
    return None  # a docstring (the fence refuses other expression statements)
