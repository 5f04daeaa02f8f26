"""Sizes a user's function divides by a constant (``dh = D // H``), read from its source.

A size divided by a constant integer (``x.shape[1] // 4``, ``D // H`` after ``S, D = x.shape``
and ``H = 4``) is a decision on the size (:mod:`adcompiler.aot.sizedeps`) unless the size is a
multiple of the constant: then the quotient is the size over the constant, a formula like any
other. :func:`exact_divisions` finds each such division in the function itself, of one of its
own parameters' sizes, by a constant int (a literal, a name the function assigns one literal
once, or a module constant); the module compiled for it serves the multiples only, and says so
(:mod:`adcompiler.aot.polymorphic` samples multiples, the guards and ``_dispatch`` check them).
Invariant, conservatively: a name counts only where the function binds it once; a division in a
called function, of a value computed otherwise, or by a non-constant stays a decision.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .sizedeps import _constant_int, _own_parameters


@dataclass(frozen=True)
class Division:
    slot: tuple    # (parameter, axis) of the size divided
    by: int        # the constant it is divided by: the size must be a multiple of it
    why: str       # ``dh = D // H`` (line 10): the source line, for the module's notes


def exact_divisions(module, fname) -> dict:
    """``{BinOp node: Division}`` for each ``size // k`` in ``fname`` (see the module's doc)."""
    stmt = module.definitions.get(fname)
    if not isinstance(stmt, ast.FunctionDef):
        return {}
    params, once = _own_parameters(stmt), _bound_once(stmt)
    sizes, constants = {}, {}
    for node in ast.walk(stmt):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Tuple) and _shape_of(value, params):
            sizes.update((t.id, (value.value.id, axis)) for axis, t in enumerate(target.elts)
                         if isinstance(t, ast.Name) and t.id in once)
        elif isinstance(target, ast.Name) and target.id in once:
            slot = _slot(value, params)
            if slot is not None:
                sizes[target.id] = slot
            elif isinstance(value, ast.Constant) and _constant_int(module, value) is not None:
                constants[target.id] = value.value
    out = {}
    for node in ast.walk(stmt):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            slot = _slot(node.left, params) or (
                sizes.get(node.left.id) if isinstance(node.left, ast.Name) else None)
            by = constants.get(node.right.id) if isinstance(node.right, ast.Name) and \
                node.right.id in constants else _constant_int(module, node.right)
            if slot is not None and by is not None and by >= 2:
                line = module.lines[node.lineno - 1].strip()
                out[node] = Division(slot, by, f"`{line}` (line {node.lineno})")
    return out


def _bound_once(stmt) -> set:
    """The names the function binds exactly once (and never as a loop's or a ``with``'s)."""
    counts = {}
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, (ast.For, ast.comprehension, ast.withitem, ast.AugAssign)):
            target = node.optional_vars if isinstance(node, ast.withitem) else node.target
            for name in ast.walk(target) if target is not None else ():
                if isinstance(name, ast.Name):
                    counts[name.id] = counts.get(name.id, 0) + 2
    return {n for n, c in counts.items() if c == 1}


def _shape_of(node, params) -> bool:
    """``p.shape`` of a parameter ``p``."""
    return isinstance(node, ast.Attribute) and node.attr == "shape" and \
        isinstance(node.value, ast.Name) and node.value.id in params


def _slot(node, params):
    """``(p, axis)`` for ``p.shape[axis]`` (axis a literal of 0 or more) or ``len(p)``."""
    if isinstance(node, ast.Subscript) and _shape_of(node.value, params) and \
            isinstance(node.slice, ast.Constant) and type(node.slice.value) is int and \
            node.slice.value >= 0:
        return node.value.value.id, node.slice.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "len" and len(node.args) == 1 and \
            isinstance(node.args[0], ast.Name) and node.args[0].id in params:
        return node.args[0].id, 0
    return None
