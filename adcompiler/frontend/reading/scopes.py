"""Python's scopes, read from a function's AST: which nodes are in a body's own scope, which
names a nested function or comprehension reads from around it, which names only
comprehensions bind.

Invariant: Python 3's rules, read statically (nothing is run): a nested ``def`` or ``lambda``
has its own scope (its name and defaults are in the enclosing one); a comprehension's targets
are its own; a comprehension's first iterable is evaluated in the enclosing scope.
"""

from __future__ import annotations

import ast
from collections import deque


_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)


def free_names(scope) -> set:
    """The names a def, lambda or comprehension reads from the scopes around it: not those it
    binds (parameters, assignments, a nested def's name, comprehension targets), and with the
    free names of the scopes inside it. Its defaults and first iterable are read around it."""
    reads, binds = set(), set()
    if isinstance(scope, (ast.FunctionDef, ast.Lambda)):
        args = scope.args
        binds = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                                 args.kwarg) if a is not None}
    todo = deque(_parts(scope)[1])
    while todo:
        node = todo.popleft()
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else binds).add(node.id)
        if isinstance(node, _SCOPES):
            reads |= free_names(node)
            binds |= {node.name} if isinstance(node, ast.FunctionDef) else set()
            todo += _parts(node)[0]
        else:
            todo += ast.iter_child_nodes(node)
    return reads - binds


def _parts(scope) -> tuple:
    """(the nodes evaluated around ``scope``, those evaluated inside it)."""
    if isinstance(scope, (ast.FunctionDef, ast.Lambda)):
        args = scope.args
        around = [*args.defaults, *filter(None, args.kw_defaults),
                  *getattr(scope, "decorator_list", ())]
        return around, scope.body if isinstance(scope.body, list) else [scope.body]
    first, *rest = scope.generators
    inside = [first.target, *first.ifs, *(n for g in rest for n in (g.target, g.iter, *g.ifs))]
    inside += [scope.key, scope.value] if isinstance(scope, ast.DictComp) else [scope.elt]
    return [first.iter], inside


def own_scope(stmts):
    """The nodes of ``stmts`` in their own scope, in ``ast.walk``'s order: not inside a nested
    def or lambda (whose own names and ``return``s are theirs), though a nested def's name and
    defaults are in this scope."""
    todo = deque(stmts)
    while todo:
        node = todo.popleft()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            todo += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
        else:
            todo += ast.iter_child_nodes(node)


def own_names(tree) -> set:
    """The names only comprehensions bind in the function ``tree`` (Python 3.12 lists them among
    the function's locals; they are the comprehensions' own, not the function's)."""
    targets = {id(n) for c in ast.walk(tree) if isinstance(c, ast.comprehension)
               for n in ast.walk(c.target)}
    stores = [n for n in ast.walk(tree)
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    elsewhere = {n.id for n in stores if id(n) not in targets}
    elsewhere |= {a.arg for a in ast.walk(tree.args) if isinstance(a, ast.arg)}
    return {n.id for n in stores if id(n) in targets} - elsewhere
