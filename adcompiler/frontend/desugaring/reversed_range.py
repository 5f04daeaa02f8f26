"""Rewrite ``for i in reversed(range(...))`` into a loop over a forward ``range``.

Static bounds give the reversed range itself (``reversed(range(0, 5, 2))`` is ``range(4, -2,
-2)``); traced bounds (a while loop's trip count, in generated adjoint code) give a forward
counter and ``i = lo + hi - 1 - counter``, bounds bound once before the loop as Python evaluates
them once. Invariant: the rewritten loop binds the target to the same values in the same order;
anything else passed to ``reversed`` is a located error.
"""

from __future__ import annotations

import ast

from ...ir import Value


def is_reversed(node) -> bool:
    """Whether a loop's iterable is a call of the name ``reversed``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "reversed")


def rewrite(lowering, loop: ast.For):
    """(statements before the loop, the loop over a forward range) for ``reversed(range(...))``."""
    call = loop.iter
    src = lowering.src
    if lowering.lookup("reversed", call.func) is not reversed:
        raise src.error(call.func, "`reversed` here is not Python's builtin",
                        "rename the function you called reversed")
    inner = call.args[0] if len(call.args) == 1 and not call.keywords else None
    if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
            and lowering.lookup(inner.func.id, inner.func) is range and not inner.keywords):
        raise src.error(call, "only `reversed(range(...))` can be looped over",
                        "loop over reversed(range(len(x))) and index x[i]")
    bounds = [lowering.expr(a) for a in inner.args]
    if not any(isinstance(b, Value) for b in bounds):
        r = range(*bounds)[::-1]
        iterable = ast.Call(_name("range"), [ast.Constant(v) for v in (r.start, r.stop, r.step)],
                            [])
        for n in ast.walk(iterable):  # located at the user's call, whose text it keeps
            if "lineno" in n._attributes:
                ast.copy_location(n, call)
        return [], _with(loop, iter=iterable)
    if len(inner.args) == 3:
        raise src.error(inner.args[2], "`reversed(range(a, b, step))` with bounds computed "
                        "from traced values takes no step", "use reversed(range(a, b))")
    return _counted(loop, inner.args)


def _counted(loop, args):
    """``lo = a; hi = b; for k in range(lo, hi): target = lo + hi - 1 - k; body``."""
    lo, hi, k = (f"loop{loop.lineno}_{s}" for s in ("lo", "hi", "k"))
    start, stop = (args[0], args[1]) if len(args) == 2 else (ast.Constant(0), args[0])
    before = [_at(ast.Assign([_name(lo, ast.Store())], start), loop),
              _at(ast.Assign([_name(hi, ast.Store())], stop), loop)]
    last = ast.BinOp(ast.BinOp(_name(lo), ast.Add(), _name(hi)), ast.Sub(), ast.Constant(1))
    bind = _at(ast.Assign([loop.target], ast.BinOp(last, ast.Sub(), _name(k))), loop)
    iterable = _at(ast.Call(_name("range"), [_name(lo), _name(hi)], []), loop)
    return before, _with(loop, target=_at(_name(k, ast.Store()), loop), iter=iterable,
                         body=[bind] + loop.body)


def _name(n, ctx=None):
    return ast.Name(n, ctx or ast.Load())


def _at(node, where):
    """Locate a synthetic node (and its parts) at ``where``, with no end: its text is then its
    own unparsed form (as :mod:`.jumps` does)."""
    for n in ast.walk(node):
        if "lineno" in n._attributes:
            n.lineno, n.col_offset = where.lineno, where.col_offset
            n.end_lineno = n.end_col_offset = None
    return node


def _with(loop, **fields):
    new = ast.For(**{f: fields.get(f, getattr(loop, f)) for f in loop._fields})
    return ast.copy_location(new, loop)
