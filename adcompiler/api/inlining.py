"""Inlining a generated function's body into the guard chain of :mod:`adcompiler.api.fastpath`.

A guard entry normally ends in ``return _adc_run0(x1, x2)``: one more Python call. Where the
generated function's source can be pasted in its place with the same meaning, the chain runs the
body itself. This module decides that, conservatively, and answers with the body's source lines
(comments kept, to be re-indented under the guard) and the global names (and objects) they
read; anything unusual answers None (no inlining). Whether the body's names clash with the
chain's is :class:`adcompiler.api.fastpath._Inliner`'s question.

Invariants: a body is inlined only when (1) the source compiles to exactly the code object that
runs (so the text is what runs), (2) its parameters are the chain's, in order, with no
defaults, closures, ``*args`` or keyword-only parameters, (3) its statements are plain ones
(assignments, expressions, ``if``/``for``/``while``, ``return``/``raise``) ending in ``return``
or ``raise`` (it never falls through into the next guard), with no lambda, comprehension,
walrus, ``yield``/``await``, ``global``/``nonlocal``, nested ``def``/``class``, import, ``try``
or ``with``, and no read of a name that inspects or rebinds scopes (``locals``, ``globals``,
``eval``...), (4) the generated module never rebinds a global (no ``global``/``nonlocal`` in it),
so binding its globals' current objects into the chain's namespace is binding what it reads,
(5) every module it reads is NumPy or ``math`` (numexpr's ``evaluate`` reads the caller's
frame by the names inside its string, which this analysis cannot see), and (6) re-indenting its
lines cannot change them: every line carries the body's indentation and no string literal
spans lines.
"""

from __future__ import annotations

import ast
import builtins
import math
import types
from dataclasses import dataclass

import numpy as np

_STATEMENTS = (ast.Assign, ast.AugAssign, ast.Expr, ast.Return, ast.If, ast.For, ast.While,
               ast.Pass, ast.Break, ast.Continue, ast.Raise)
_REFUSED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
            ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
            ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
            ast.Try, ast.With, ast.AsyncWith, ast.AsyncFor, ast.Delete, ast.AnnAssign,
            ast.Match, ast.Assert)
_SCOPE_NAMES = {"locals", "globals", "vars", "eval", "exec", "compile", "dir", "super",
                "__import__", "breakpoint", "__class__", "__builtins__"}
_MODULES = (np, math)
_MISSING = object()


@dataclass
class Body:
    """A body that can be pasted into the chain: its source lines (comments kept, indented by
    nothing), its local names (parameters included) and the global names it reads."""
    lines: list
    locals: set
    reads: dict      # global name -> the object the generated function reads under it
    builtins: set    # names it reads from the builtins (its module does not bind them)


class Source:
    """A generated function's source offered for inlining; analysed once per parameter list."""

    def __init__(self, text: str):
        self.text, self._bodies = text, {}

    def body(self, function, params) -> Body | None:
        key = (id(function), tuple(params))
        if key not in self._bodies:
            self._bodies[key] = (function, body_of(function, self.text, params))
        return self._bodies[key][1]


def body_of(function, source: str, params) -> Body | None:
    """The inlinable body of ``function`` (generated from ``source``), or None."""
    code = getattr(function, "__code__", None)
    if (not isinstance(function, types.FunctionType) or function.__closure__
            or function.__defaults__ or function.__kwdefaults__ or code.co_freevars
            or code.co_cellvars or code.co_kwonlyargcount or code.co_posonlyargcount
            or code.co_flags & (0x04 | 0x08 | 0x20 | 0x80 | 0x100 | 0x200)
            or list(code.co_varnames[:code.co_argcount]) != list(params)):
        return None
    try:
        tree = ast.parse(source)
        definition = _definition(tree, code.co_name)
        compiled = compile(ast.Module([definition], []), "<adcompiler inline check>", "exec")
    except (SyntaxError, ValueError, TypeError, RecursionError):  # (too deep: called, not inlined)
        return None
    if ("global" in source or "nonlocal" in source) and any(
            isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(tree)):
        return None   # the module may rebind a global: its current object is not for good
    if [c for c in compiled.co_consts if isinstance(c, types.CodeType)] != [code]:
        return None   # the source is not exactly what runs
    lines = _lines(definition, source.splitlines())
    return None if lines is None else _analyse(definition, code, function.__globals__, lines)


def _definition(tree, name):
    found = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name]
    if len(found) != 1 or found[0].decorator_list:
        raise ValueError(name)
    return found[0]


def _lines(definition, source_lines) -> list | None:
    """The body's source lines, its comments included, without the body's indentation; None
    where that indentation would not come off cleanly (a line less indented)."""
    first = definition.body[0].lineno - 1
    while first - 1 >= definition.lineno and source_lines[first - 1].strip().startswith("#"):
        first -= 1
    prefix = " " * definition.body[0].col_offset
    lines = source_lines[first:definition.end_lineno]
    if not prefix or any(ln.strip() and not ln.startswith(prefix) for ln in lines):
        return None
    return [ln[len(prefix):] if ln.strip() else "" for ln in lines]


def _analyse(definition, code, namespace: dict, lines) -> Body | None:
    body = definition.body
    if not isinstance(body[-1], (ast.Return, ast.Raise)):
        return None   # it could fall through into the next guard
    stored, loaded = set(code.co_varnames[:code.co_argcount]), set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, _REFUSED) or (isinstance(node, ast.stmt)
                                              and not isinstance(node, _STATEMENTS)):
                return None
            if isinstance(node, (ast.Constant, ast.JoinedStr)) and node.lineno != node.end_lineno:
                return None   # a string over several lines: indenting it would change it
            if isinstance(node, ast.Name):
                (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
    if stored != set(code.co_varnames) or loaded & _SCOPE_NAMES:
        return None   # the analysis disagrees with Python's: refuse
    reads, from_builtins = {}, set()
    for name in sorted(loaded - stored):
        value = namespace.get(name, _MISSING)
        if value is _MISSING:
            if not hasattr(builtins, name):
                return None
            from_builtins.add(name)
        elif isinstance(value, types.ModuleType) and not any(value is m for m in _MODULES):
            return None
        else:
            reads[name] = value
    return Body(lines, stored, reads, from_builtins)
