"""Module-level arrays (lists, dicts, sets) that the module might change in place after their
definition, found statically: the loader evaluates such a constant from its definition and runs
nothing else, so a later change would be silently missed by the compiled code.

Invariant: conservative. For a mutable constant ``W`` bound by a top-level assignment, any of
these is a change, located at the write:

- a top-level statement after the definition (``def`` bodies aside, and the body of ``if
  __name__ == "__main__":``, which an import does not run) that mentions ``W`` other than as an
  operand of arithmetic or a comparison (``W * 2.0``, ``W > 0``) or to read ``.shape``,
  ``.ndim``, ``.size``, ``.dtype``, ``.flags``: aliasing, calls, method calls, stores all count;
- in any function or method body where ``W`` is the global: a subscript or attribute store or an
  augmented assignment into it or into a local alias of it (``V = W[0]``, ``V = W.T``), a method
  call other than a known pure one, ``np.copyto(W, ...)`` (and ``put``, ``place``, ...),
  ``out=W``, passing it to a module function that changes that parameter, or ``global W``
  rebinding it.

Names bound to the same object share their changes. The command line refuses a function that
reads (directly or through the functions it calls) a changed constant: :func:`check_unchanged`.
"""

from __future__ import annotations

import ast
import dataclasses
import dis
import os
import types
from dataclasses import dataclass

import numpy as np

from ...errors import CompileError, Location
from .alias_writes import SAFE_ATTRIBUTES, Flow, scope


@dataclass
class Change:
    location: Location
    where: str        # "this top-level statement", "`reset`"
    what: str         # "may change it in place", "stores into it"


def find_changes(module, tree) -> dict:
    """``{name: Change}``: the first change of each mutable module-level constant."""
    candidates = {n: s for n, s in module.definitions.items()
                  if isinstance(s, (ast.Assign, ast.AnnAssign)) and _mutable(module.namespace[n])}
    if not candidates:
        return {}
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    functions = _functions(tree)
    found = {}
    for name, stmt in candidates.items():
        index = next(i for i, s in enumerate(tree.body) if s is stmt)
        change = _top_level_change(module, tree.body[index + 1:], name, parents) or \
            _function_change(module, functions, name)
        if change:
            found[name] = change
    for name in candidates:   # ``W = V = np.array(...)``: one object, one set of changes
        same = [(found[n].location.lineno, n) for n in candidates if n in found
                and module.namespace[n] is module.namespace[name]]
        if same and name not in found:
            other = min(same)[1]
            found[name] = dataclasses.replace(
                found[other], what=f"{found[other].what} (as `{other}`, the same object)")
    return found


def check_unchanged(module, reader):
    """A located CompileError if ``reader`` (a function of the module) reads, directly or through
    the module functions it calls, a constant the module may change after its definition."""
    for name, via in _globals_read(module, reader):
        change = module.changed.get(name)
        if change is None:
            continue
        stmt = module.definitions[name]
        value = module.namespace[name]
        kind = "array" if isinstance(value, np.ndarray) else type(value).__name__
        through = f" (through `{via}`)" if via != reader else ""
        final = "np.array([...]) of literals" if kind == "array" else "a literal"
        param = "" if reader.startswith("example_") or change.where.startswith("`") else \
            f", pass it to {reader} as a parameter"
        hint = (f"write the final values in its definition ({final}){param}, or compute it "
                "inside the function")
        if change.where.startswith("`"):
            hint += f" (or pass it to {reader} as an argument, if {change.where} must change it)"
        raise CompileError(
            f"{reader} reads `{name}`{through}, a module-level {kind} defined at line "
            f"{stmt.lineno}, and {change.where} {change.what}: adcompiler reads "
            f"{os.path.basename(module.path)} without running it, so {reader} would be "
            f"{'run' if reader.startswith('example_') else 'compiled'} with the values of that "
            "definition", change.location, hint)


def _mutable(value) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return any(_mutable(v) for v in value)
    return isinstance(value, (np.ndarray, list, dict, set, bytearray))


def _deep(value) -> bool:
    """Whether an element of ``value`` may itself be changed in place (a row of a matrix)."""
    if isinstance(value, np.ndarray):
        return value.ndim >= 2 or value.dtype.kind == "O"
    items = value.values() if isinstance(value, dict) else value
    return any(_mutable(v) for v in items)


def _globals_read(module, reader):
    """``(name, function reading it)`` for the globals ``reader`` reads, transitively through
    the module's functions, from their code objects (so a parameter named alike is not one)."""
    seen, todo, out = set(), [reader], []
    while todo:
        fname = todo.pop(0)
        if fname in seen or fname not in module.functions:
            continue
        seen.add(fname)
        for name in _code_globals(module.functions[fname].__code__):
            out.append((name, fname))
            todo.append(name)
    return out


def _code_globals(code) -> list:
    names = [i.argval for i in dis.get_instructions(code)
             if i.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL")]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _code_globals(const)
    return list(dict.fromkeys(names))


# ---- top-level statements ------------------------------------------------------------------------
def _top_level_change(module, stmts, name, parents):
    for stmt in stmts:
        for node in _top_nodes(stmt):
            if isinstance(node, ast.Name) and node.id == name and \
                    not _plain_read(node, parents):
                return Change(module.location(_written(node, parents)),
                              "this top-level statement", "may change it in place after that")
    return None


def _main_guard(stmt) -> bool:
    test = getattr(stmt, "test", None)
    if not isinstance(stmt, ast.If) or not isinstance(test, ast.Compare) or \
            len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and \
        any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)


def _top_nodes(node):
    """The nodes of a top-level statement that run on import: not ``def`` bodies, not
    annotations, not the body of ``if __name__ == "__main__":``."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        exprs = node.decorator_list + node.args.defaults + \
            [d for d in node.args.kw_defaults if d is not None]
        return [n for e in exprs for n in ast.walk(e)]
    if isinstance(node, ast.ClassDef):
        exprs = node.decorator_list + node.bases + node.keywords
        return [n for e in exprs for n in ast.walk(e)] + \
            [n for s in node.body for n in _top_nodes(s)]
    if _main_guard(node):
        return list(ast.walk(node.test)) + [n for s in node.orelse for n in _top_nodes(s)]
    out = [node]
    for field, value in ast.iter_fields(node):
        for child in value if isinstance(value, list) else [value]:
            if field == "annotation" or not isinstance(child, ast.AST):
                continue
            out += list(ast.walk(child)) if isinstance(child, ast.expr) else _top_nodes(child)
    return out


def _plain_read(node, parents) -> bool:
    parent = parents.get(id(node))
    if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare)):
        return True
    if isinstance(parent, ast.Attribute) and isinstance(parent.ctx, ast.Load):
        if parent.attr in SAFE_ATTRIBUTES:
            return True
        call = parents.get(id(parent))
        return parent.attr == "setflags" and isinstance(call, ast.Call) and call.func is parent
    return False


def _written(node, parents):
    """The expression a mention of a name is changed through: ``W[0]``, ``W.fill(3.0)``,
    ``np.copyto(W, V)``."""
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is node or \
                isinstance(parent, (ast.Call, ast.keyword, ast.Starred)):
            node = parent
        else:
            return node


# ---- function bodies -----------------------------------------------------------------------------
def _functions(tree) -> list:
    """``(def, its scopes and those of the defs around it, innermost first)`` for each function
    and method an import defines, in file order."""
    functions, scopes = [], {}
    for stmt in tree.body:
        for node in ([stmt] if not _main_guard(stmt) else stmt.orelse):
            _defs(node, (), functions)
    for fn, chain in functions:
        for f in (fn,) + chain:
            if id(f) not in scopes:
                scopes[id(f)] = scope(f)
    return sorted([(fn, [scopes[id(f)] for f in (fn,) + chain]) for fn, chain in functions],
                  key=lambda f: f[0].lineno)


def _function_change(module, functions, name):
    deep = _deep(module.namespace[name])
    for fn, scopes in functions:
        if not _refers_to_global(name, scopes):
            continue
        rebinding = name in scopes[0][0]
        write = Flow(module, deep, scopes[0][1], name if rebinding else None).function(
            fn, {name: "whole"})
        if write is not None:
            node, what = write
            return Change(module.location(node), f"`{fn.name}`", what)
    return None


def _defs(node, chain, out):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        out.append((node, chain))
        chain = (node,) + chain
    for child in ast.iter_child_nodes(node):
        _defs(child, chain, out)


def _refers_to_global(name, scopes) -> bool:
    for declared, local, nonlocal_ in scopes:
        if name in declared:
            return True
        if name in local and name not in nonlocal_:
            return False
    return True
