"""Rewrite ``break``/``continue`` (and ``range`` with traced bounds) into structured code.

The IR has structured regions only, so jumps are rewritten on the AST before lowering:
``continue`` makes the statements after an ``if`` that may jump the continuation of each
branch that falls through; ``break`` sets a flag (``loop<line>_done``) and then continues; a
``for`` loop with a ``break`` runs its body under ``if not loop<line>_done:``, a ``while`` loop
tests ``... and not loop<line>_done``. ``for i in range(a, b)`` with bounds computed from traced
values becomes a counted ``while`` (``b`` evaluated once, before it), which may then break like
any ``while``. Invariant: the rewritten loop computes what the original
did, and differentiates through the same operations.
"""

from __future__ import annotations

import ast


def has_jumps(stmts) -> bool:
    """Whether ``stmts`` contain a break/continue of *this* loop (not of a nested one)."""
    return any(_jumps(s) for s in stmts)


def _jumps(node) -> bool:
    if isinstance(node, (ast.Break, ast.Continue)):
        return True
    if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
        return False
    return any(_jumps(child) for child in ast.iter_child_nodes(node))


def breaks(stmts) -> bool:
    """Whether ``stmts`` contain a break of *this* loop (not of a nested one)."""
    return any(_breaks(s) for s in stmts)


def _breaks(node) -> bool:
    if isinstance(node, ast.Break):
        return True
    if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
        return False
    return any(_breaks(child) for child in ast.iter_child_nodes(node))


def rewrite_loop(loop):
    """(statements before the loop, the loop without jumps). ``loop`` is not modified."""
    if not has_jumps(loop.body):
        return [], loop
    flag = f"loop{loop.lineno}_done"
    body = _without_jumps(loop.body, flag, loop)
    if not breaks(loop.body):
        return [], _copy(loop, body=body)
    before = [_at(ast.Assign([_name(flag, ast.Store())], ast.Constant(False)), loop)]
    not_done = _at(ast.UnaryOp(ast.Not(), _name(flag)), loop)
    if isinstance(loop, ast.While):
        test = _at(ast.BoolOp(ast.And(), [loop.test, not_done]), loop)
        return before, _copy(loop, test=test, body=body)
    return before, _copy(loop, body=[_at(ast.If(not_done, body, []), loop)])


def _without_jumps(stmts, flag, loop):
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Continue):
            return out                      # the rest of the body does not run
        if isinstance(s, ast.Break):
            return out + [_at(ast.Assign([_name(flag, ast.Store())], ast.Constant(True)), s)]
        if isinstance(s, ast.If) and _jumps(s):
            rest = stmts[i + 1:]
            branch = _copy(s, body=_without_jumps(s.body + rest, flag, loop) or [_pass(s)],
                           orelse=_without_jumps(s.orelse + rest, flag, loop))
            return out + [branch]
        out.append(s)
    return out


def rewrite_traced_range(loop, counter):
    """``for i in range(a, b[, s])`` (s a positive constant) as a counted ``while``. The bound
    ``b`` is evaluated once, before the loop, as Python evaluates it (the body may rebind what it
    reads); the counter advances before the body runs, so a ``continue`` cannot skip it."""
    args = loop.iter.args
    start, stop = (args[0], args[1]) if len(args) > 1 else (ast.Constant(0), args[0])
    step = args[2] if len(args) > 2 else ast.Constant(1)
    before = [_at(ast.Assign([_name(counter, ast.Store())], start), loop)]
    if not _fixed(stop, loop.body):
        bound = f"loop{loop.lineno}_stop"
        before.append(_at(ast.Assign([_name(bound, ast.Store())], stop), loop))
        stop = _name(bound)
    test = _at(ast.Compare(_name(counter), [ast.Lt()], [stop]), loop)
    bind = _at(ast.Assign([loop.target], _name(counter)), loop)
    advance = _at(ast.Assign([_name(counter, ast.Store())],
                             ast.BinOp(_name(counter), ast.Add(), step)), loop)
    body = [bind, advance] + loop.body
    return before, _at(ast.While(test, body, []), loop)


def _fixed(expr, body) -> bool:
    """Whether ``expr`` is a constant, or a name ``body`` does not rebind: the same value in
    every iteration, read directly rather than bound again."""
    if isinstance(expr, ast.Constant):
        return True
    stored = {n.id for s in body for n in ast.walk(s)
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return isinstance(expr, ast.Name) and expr.id not in stored


def _copy(node, **fields):
    new = type(node)(**{f: fields.get(f, getattr(node, f)) for f in node._fields})
    return ast.copy_location(new, node)


def _name(n, ctx=None):
    return ast.Name(n, ctx or ast.Load())


def _pass(at):
    return _at(ast.Pass(), at)


def _at(node, where):
    """Give a synthetic node (and its synthetic parts) the location of ``where``, for errors,
    but no end: its text is then its own unparsed form, not the statement it came from."""
    for n in ast.walk(node):
        if "lineno" in n._attributes and not hasattr(n, "lineno"):
            n.lineno, n.col_offset = where.lineno, where.col_offset
            n.end_lineno = n.end_col_offset = None
    node.end_lineno = node.end_col_offset = None
    return node
