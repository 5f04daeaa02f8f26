"""Unroll a ``for`` loop over a sequence known while compiling into straight-line code.

A ``for`` over a tuple or list (a literal, a module-level one, an object's attribute, one the
function built from traced values), or over ``enumerate``/``zip``/``reversed`` of one (with
ranges and arrays' rows beside it), runs here, in the compiler: the body is lowered once per
item with the target bound to that item, as if the user had written the iterations out. The
items are what a comprehension over the same iterable gives
(:func:`..expressions.comprehensions.iteration_items`); at most
:data:`..expressions.comprehensions.MAX_ITERATIONS` iterations are unrolled per outermost
unrolled loop, nested unrolled loops' iterations counted. ``break``/``continue`` are rewritten
as in a compiled loop (:mod:`..desugaring.jumps`): a break decided while compiling stops the
unrolling; after one on a traced value each later iteration, its binding of the target included,
runs under an ``if`` on the break flag, so the target and every name hold what Python would hold
after the loop. ``else`` runs where no break happened (an ``if`` on the flag where it is
traced). The items still to come sit in the env while the body runs, so an in-place update of
one of them (``for v in (y, y): ...; y *= 2``) reaches them as it reaches every name for that
array, and a view of an updated array goes stale (reading it is a located error), as everywhere.

Invariant: no ``loop`` node is emitted; ``range(...)`` and an array's rows (alone, or in
``enumerate``/``zip`` of those) are compiled loops (:mod:`.loops`), except a ``range`` of known
bounds whose body appends to a list or slices by the counter (:func:`range_needs_unrolling`).
"""

from __future__ import annotations

import ast

from ...ir import Block, Value
from ..desugaring import jumps
from ..expressions.comprehensions import (LOOP, MAX_ITERATIONS, SEQUENCES, check_length,
    iteration_items, iterator_builtin)
from .blocks import run_statements


def unrolls(lowering, node) -> bool:
    """Whether a ``for`` over ``node`` iterates over a Python sequence (unrolled here) rather
    than over ``range(...)`` or an array's rows (a compiled loop)."""
    func = iterator_builtin(lowering, node)
    if func is range:
        return False
    if func in (enumerate, reversed):
        return bool(node.args) and unrolls(lowering, node.args[0])
    if func is zip:
        return any(unrolls(lowering, a) for a in node.args)
    if isinstance(node, (ast.List, ast.Tuple)):
        return True
    seq = peek(lowering, node)
    return isinstance(seq, SEQUENCES) and not isinstance(seq, range)


def range_needs_unrolling(lowering, stmt: ast.For) -> bool:
    """Whether a ``for`` over ``range(...)`` of bounds known while compiling, at most
    :data:`MAX_ITERATIONS` long, is unrolled rather than compiled to a loop, because its body
    does what only written-out iterations can: appends to a list made before the loop
    (``out = []`` ... ``out.append(v)``, then ``np.stack(out)``), or reads slices with a length
    that follows the counter (``x[:i]``, ``x[i:]``: a new shape each iteration)."""
    if iterator_builtin(lowering, stmt.iter) is not range or not isinstance(
            stmt.target, ast.Name):
        return False
    bounds = peek(lowering, ast.Tuple(stmt.iter.args, ast.Load()))
    if any(isinstance(b, Value) or not isinstance(b, int) for b in bounds):
        return False
    if len(range(*bounds)) > MAX_ITERATIONS:
        return False   # (the compiled loop's own error says to preallocate)
    return any(_appends_to_a_list(lowering, n) or _reads_by_counter(n, stmt.target.id)
               for s in stmt.body for n in _walk_body(s))


def _walk_body(stmt):
    """The nodes of a loop body's statement, not those of functions it defines."""
    pending = [stmt]
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef)):
            pending.extend(ast.iter_child_nodes(node))


def _appends_to_a_list(lowering, node) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append" and isinstance(node.func.value, ast.Name)
            and type(lowering.scope.env.get(node.func.value.id)) is list)


def _reads_by_counter(node, counter) -> bool:
    """A read through a slice one of whose bounds (not both) reads the counter: its length
    changes. (A write into one compiles in the loop, under a mask: :mod:`.setitem`.)"""
    if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)):
        return False
    slices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    for part in slices:
        if isinstance(part, ast.Slice):
            reads = [b is not None and any(isinstance(n, ast.Name) and n.id == counter
                                           for n in ast.walk(b)) for b in (part.lower, part.upper)]
            if reads[0] != reads[1]:
                return True
    return False


def peek(lowering, node):
    """What ``node`` evaluates to, leaving no trace: what evaluating it emits goes into a
    block dropped here (the loop evaluates its iterable itself, once)."""
    if isinstance(node, ast.Name):
        return lowering.lookup(node.id, node)
    env0 = dict(lowering.scope.env)
    with lowering.b.into(Block()):
        value = lowering.expr(node)
    lowering.scope.env = env0
    return value


def lower_unrolled(lowering, stmt: ast.For):
    """The body once per item, the target bound to it; then the ``else``, where no break
    happened."""
    header = f"for {lowering.src.text(stmt.target)} in {lowering.src.text(stmt.iter)}:"
    lowering.b.source = header
    with lowering.loop.unroll_budget():
        items = iteration_items(lowering, stmt.iter, LOOP)
        check_length(lowering, stmt.iter, len(items), LOOP)
        lowering.loop.unroll_left -= len(items)
        flag = run_items(lowering, stmt, header, items)
    unrolled_else(lowering, stmt, flag)


def run_items(lowering, stmt, header, items) -> str:
    """Lower the body for each item; the name of the break flag (bound only if the body may
    break). While the flag is False the target is bound directly; once a traced break may
    have happened, the binding runs in the body's ``if not <flag>:`` too (a synthetic
    ``<target> = loop<line>_item``), so the target keeps the value it broke at."""
    flag, item = f"loop{stmt.lineno}_done", f"loop{stmt.lineno}_item"
    held = f"loop{stmt.lineno}_items"   # in the env, so that an in-place update in the
    lowering.scope.env[held] = list(items)          # body reaches the items still to come
    before, plain = jumps.rewrite_loop(stmt)
    bind = _synthetic(ast.Assign([stmt.target], ast.Name(item, ast.Load())), stmt)
    guarded = jumps.rewrite_loop(_with_body(stmt, [bind, *stmt.body]))[1]
    run_statements(lowering, before)
    for k in range(len(items)):
        value = lowering.scope.env[held][k]  # y *= 2 made it the new y; a view of y: Stale
        done = lowering.scope.env.get(flag, False)
        if isinstance(done, Value):
            lowering.scope.env[item] = value
            run_statements(lowering, guarded.body)
            continue
        if done:  # a break decided while compiling: Python leaves the loop here
            break
        lowering.b.source = header
        lowering.bind(stmt.target, value, stmt)
        run_statements(lowering, plain.body)
    lowering.scope.env.pop(item, None)
    lowering.scope.env.pop(held, None)
    return flag


def unrolled_else(lowering, stmt, flag):
    """``for ... else``: the ``else`` runs where the loop did not break."""
    if not stmt.orelse:
        return
    done = lowering.scope.env.get(flag, False)
    if not isinstance(done, Value):
        if not done:
            run_statements(lowering, stmt.orelse)
        return
    test = ast.UnaryOp(ast.Not(), ast.Name(flag, ast.Load()))
    run_statements(lowering, [_synthetic(ast.If(test, stmt.orelse, []), stmt)])


def _with_body(loop, body):
    new = ast.For(loop.target, loop.iter, body, loop.orelse, loop.type_comment)
    return ast.copy_location(new, loop)


def _synthetic(node, where):
    """A node the user did not write, located at ``where`` for errors; without an end, so its
    text is its own unparsed form (as :mod:`..desugaring.jumps` makes its nodes)."""
    for n in ast.walk(node):
        if "lineno" in n._attributes and not hasattr(n, "lineno"):
            n.lineno, n.col_offset = where.lineno, where.col_offset
            n.end_lineno = n.end_col_offset = None
    return node
