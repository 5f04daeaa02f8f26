"""The handlers of plain and annotated assignment: the right side lowered once, then bound to each
target (:meth:`..lower.Lowering.bind`: names, tuples and lists unpacked, subscripts stored into).

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
