"""The handlers of the statements that bind a name: plain and annotated assignment (the right
side lowered once, then bound to each target by :meth:`..lower.Lowering.bind`: names, tuples
and lists unpacked, subscripts stored into) and a nested ``def`` (bound to its function value,
:class:`..local_functions.LocalFunction`, its defaults evaluated now).

Augmented assignment (``y *= v``), with NumPy's in-place meaning, is :mod:`..inplace`'s.
Invariant: an annotation is never evaluated (``x: float`` without a value binds nothing).
"""

from __future__ import annotations

import ast

from .table import statement


@statement(ast.Assign)
def assign(lowering, stmt: ast.Assign):
    value = lowering.expr(stmt.value)
    for target in stmt.targets:
        lowering.bind(target, value, stmt)


@statement(ast.AnnAssign)
def annotated(lowering, stmt: ast.AnnAssign):
    if stmt.value is not None:
        lowering.bind(stmt.target, lowering.expr(stmt.value), stmt)


@statement(ast.FunctionDef)
def define(lowering, stmt: ast.FunctionDef):
    lowering.scope.env[stmt.name] = lowering.local_function(stmt, stmt.name, stmt.body)
