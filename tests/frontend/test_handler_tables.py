"""The frontend's handler tables (frontend/registry.py): statements and expressions are lowered
by the handler registered for their AST node type, one per type."""

from __future__ import annotations

import ast

import numpy as np
import pytest

import adcompiler as ad
from adcompiler.frontend import lower  # noqa: F401  (imports every handler module)
from adcompiler.frontend.expressions.table import EXPRESSIONS
from adcompiler.frontend.registry import registrar
from adcompiler.frontend.statements.table import CONTINUED, STATEMENTS


def test_every_supported_statement_and_expression_form_has_its_handler():
    assert {ast.Assign, ast.AnnAssign, ast.AugAssign, ast.If, ast.For, ast.While, ast.Raise,
            ast.Assert, ast.With, ast.FunctionDef, ast.Expr} <= set(STATEMENTS)
    assert {ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Name, ast.Constant,
            ast.Subscript, ast.Attribute, ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp,
            ast.Tuple, ast.List} <= set(EXPRESSIONS)
    assert set(CONTINUED) == {ast.With}


def test_a_second_handler_for_a_type_is_refused():
    table = {}
    handles = registrar(table, "handlers", "statements")

    @handles(ast.If, ast.While)
    def first(lowering, stmt):
        return "first"
    assert table == {ast.If: first, ast.While: first}
    with pytest.raises(AssertionError, match="two handlers for While statements"):
        handles(ast.While)(lambda lowering, stmt: None)
    assert table[ast.While] is first


def test_a_table_entry_is_what_lowers_the_form():
    def f(x):
        y = x * 2.0
        if np.sum(y) > 0.0:
            y = y + 1.0
        return np.sum(y * y)
    x = np.array([1.0, -0.5])
    np.testing.assert_allclose(ad.grad(f)(x), 4.0 * (2.0 * x + 1.0))
