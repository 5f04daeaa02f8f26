"""The handlers of the statements that bind a name: plain and annotated assignment (the right
side lowered once, then bound to each target by :meth:`..lower.Lowering.bind`: names, tuples
and lists unpacked, subscripts stored into) and a nested ``def`` (bound to its function value,
:class:`..bindings.functions.LocalFunction`, its defaults evaluated now).

Augmented assignment (``y *= v``) has NumPy's in-place meaning: an array keeps its shape and
dtype (else a located error, as NumPy refuses), and every other name for it sees the update
(:func:`.inplace.update_aliases`). Invariant: an annotation is never
evaluated (``x: float`` without a value binds nothing).
"""

from __future__ import annotations

import ast

import numpy as np

from ...ir import Value
from ..bindings.memory import is_mutable_array
from ..expressions import masked
from .inplace import OP_TEXT, update_aliases
from .setitem import assign_subscript
from .table import statement


@statement(ast.Assign)
def assign(lowering, stmt: ast.Assign):
    if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
            and isinstance(stmt.value, ast.Subscript):   # y = x[m]: read where y is read
        with masked.deferring(lowering.b, stmt.value):
            value = lowering.expr(stmt.value)
    else:
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


@statement(ast.AugAssign)
def augmented(lowering, stmt: ast.AugAssign):
    """``y op= v``: into an element (``y[i] += v``), a store (:mod:`.setitem`); into an array
    name, NumPy's in-place update (every other name for the array sees it); into a number,
    a rebinding."""
    target = stmt.target
    if isinstance(target, ast.Subscript):
        return assign_subscript(lowering, target, lowering.expr(stmt.value), stmt, op=stmt.op)
    if not isinstance(target, ast.Name):
        raise lowering.src.error(target, "augmented assignment to an attribute is not "
                                 "supported", "assign to a plain name")
    old = lowering.lookup(target.id, target)
    new = lowering.expr(ast.copy_location(ast.BinOp(target, stmt.op, stmt.value), stmt))
    if is_mutable_array(old):
        new = write_back(lowering, stmt, old, new)
        update_aliases(lowering, stmt, old, new)
    lowering.bind(target, new, stmt)


def write_back(lowering, stmt, old: Value, new: Value) -> Value:
    """``new`` as NumPy stores it into ``old``: same shape, cast to ``old``'s dtype."""
    name, op = stmt.target.id, OP_TEXT.get(type(stmt.op), "op")
    if new.aval.shape != old.aval.shape:
        raise lowering.src.error(
            stmt, f"`{name} {op}= ...` would change `{name}`'s shape from "
            f"{old.aval.shape} to {new.aval.shape}; NumPy cannot do that in place",
            f"write `{name} = {name} {op} ...` to make a new array")
    if new.aval.dtype == old.aval.dtype:
        return new
    if not np.can_cast(new.aval.dtype, old.aval.dtype, "same_kind"):
        raise lowering.src.error(
            stmt, f"NumPy cannot store the {new.aval.dtype} result in the "
            f"{old.aval.dtype} array `{name}` in place (casting rule 'same_kind')",
            f"write `{name} = {name} {op} ...` to make a new {new.aval.dtype} array")
    return lowering.b.emit("astype", (new,), {"dtype": old.aval.dtype})
