"""In-place updates inside a loop body: what it writes in place, and the writes a compiled loop
refuses: an update of an array another name also holds (NumPy changes both, a loop carries
names), and an update of the rows being looped over (NumPy's later rows see it). An update of a
called function's parameter in its own loop is passed back to the caller's name for that array
after the loop. Used by :mod:`.loops` and :mod:`.lists`."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..bindings.memory import memory_root, open_producers
from ..bindings.structured import flat, label
from ..bindings.unreadable import Unreadable
from ..reading.scopes import own_scope
from .inplace import Stale, alias_copy_hint, check_region, lowering_of, stale_in, writable_root
from .setitem import add_at_target
from ...ir import Value


@dataclass(frozen=True)
class ReboundInLoop(Unreadable):
    """A caller's name for an array that a called function's loop updates in place and also
    rebinds (``y[j] += v; y = 2 * y``): only the iterations before the rebinding write into
    the caller's array, which adcompiler does not follow."""

    param: str
    function: str
    statement: str
    lineno: int

    def describe(self, name):
        return (f"`{name}` was changed in place by `{self.statement}` (line {self.lineno}) "
                f"inside a loop of `{self.function}` that also rebinds `{self.param}`; "
                f"adcompiler cannot pass such an update back to `{name}`",
                f"return the array from `{self.function}` and assign it to `{name}` "
                f"(`{name} = {self.function}(...)`), or update `{name}` where it is defined")


def check_loop_aliases(lowering, stmt, carried) -> dict:
    """NumPy's ``y *= 2`` in a loop also changes every other name for that array; a loop
    carries names, not arrays, so such an alias is refused rather than silently stale, and
    a view sharing its memory goes stale (reading it later is an error). Returns, for each
    name updated in place, the callers' names for its array, to rebind after the loop
    (:func:`pass_back`)."""
    passed = {}
    for node in own_scope(stmt.body):  # a nested def's names are its own
        name = updated_in_place(node)
        if name is None or name in passed:
            continue
        value = lowering.scope.env.get(name)
        if name not in carried or not isinstance(value, Value) or not value.aval.ndim:
            continue
        if rebound_first(stmt.body, name):  # y = y.copy(); y[i] = v: a new array each time
            continue
        others = [label(n, path) for n, v in lowering.scope.env.items() if n != name
                  for path, leaf in flat(v) if leaf is value]   # s[0] of s = (y, 1.0) too
        if others:
            raise lowering.src.error(node, f"`{name}` is updated in place inside a loop while "
                                     f"`{others[0]}` names the same array",
                                     alias_copy_hint(lowering.src.tree, name, others[0]))
        passed[name] = node, stale_before_loop(lowering, node, name, value, stmt.body)
    return passed


def stale_before_loop(lowering, stmt, name, value: Value, body) -> list:
    """A loop ``body`` that updates ``name`` in place (``stmt``) changes ``value``'s memory,
    but the loop carries names, not arrays: every other name that shares that memory, a
    view or the array a view looks into, here or in a caller, goes :class:`.inplace.Stale`.
    A caller's name for ``value`` itself (the array passed in) is unreadable only while the
    loop runs: returns those ``(env, name, marker)``, which :func:`pass_back` rebinds to the
    array the loop leaves (none where the body also rebinds ``name``: it stays unreadable)."""
    producers = open_producers(lowering.b)
    root = writable_root(lowering, stmt, value, producers, name)
    text, mine = lowering.src.text(stmt), lowering.src.tree.name
    held = {id(env): alias for env, alias in callers_holding(lowering, stmt, name, value)}
    marker = (Stale.of(stmt, name, text, lowering.src, mine) if not _rebinds(body, name)
              else ReboundInLoop(name, mine, text, stmt.lineno))
    passed = []
    for env in lowering.scope.frames:
        stale = stale_in(lowering, env, stmt, name)
        for alias, v in env.items():
            if ((env is lowering.scope.env and alias == name) or not isinstance(v, Value)
                    or memory_root(v, producers) is not root):
                continue
            env[alias] = marker if held.get(id(env)) == alias else stale
            if env[alias] is marker and isinstance(marker, Stale):
                passed.append((env, alias, marker))
    return passed


def callers_holding(lowering, stmt, name, value) -> list:
    """``(env, name)`` for each caller's name for ``value``, the array this function's loop
    updates in place as ``name``: at most one plain name a function, else a located error
    (NumPy changes them all, as for an alias in the loop's own function). A nested
    function's default holding the array is no caller's name: it goes stale."""
    held = []
    for env in lowering.scope.frames[1:]:
        outer = lowering_of(env, lowering)
        if outer is None:   # a nested function's defaults
            continue
        names = sorted((label(n, path) for n, v in env.items() for path, leaf in flat(v)
                        if leaf is value), key=lambda n: "[" in n)
        if len(names) > 1 or any("[" in n for n in names):
            mine, theirs = lowering.src.tree.name, outer.src.tree.name
            who = (f"`{names[0]}` and `{names[1]}` of `{theirs}` name" if len(names) > 1
                   else f"`{names[0]}` of `{theirs}` names")
            raise lowering.src.error(
                stmt, f"`{lowering.src.text(stmt)}` inside a loop of `{mine}` updates `{name}` "
                f"in place while {who} the same array",
                alias_copy_hint(outer.src.tree, *names[:2]) if len(names) > 1 else
                f"return the new array from `{mine}` and assign it in `{theirs}`")
        held += [(env, n) for n in names]
    return held


def pass_back(lowering, passed):
    """After a loop that updates ``name`` in place, each caller's name for the array that
    ``name`` held before it names the array the loop leaves, as NumPy's update shows through
    it; inside a block of a caller, that is checked as any update there (``check_region``)."""
    for name, (node, held) in passed.items():
        new = lowering.scope.env.get(name)
        changes = [(env, alias, new) for env, alias, marker in held
                   if env.get(alias) is marker]
        if not changes or not isinstance(new, Value):
            continue
        check_region(lowering, node, changes, name)
        for env, alias, value in changes:
            env[alias] = value


def check_row_updates(lowering, stmt):
    """In NumPy a loop over an array's rows binds views: ``row *= 2`` writes the array, and
    ``Y[i] = ...`` is seen by the rows still to come. The compiled loop reads rows as values,
    so an update of a row, or of the array looped over, is refused rather than lost."""
    if _is_range(stmt.iter, lowering):
        return
    rows = {t.id for t in ast.walk(stmt.target) if isinstance(t, ast.Name)}
    env = lowering.scope.env
    looped = {n.id for n in ast.walk(stmt.iter) if isinstance(n, ast.Name)
              and isinstance(env.get(n.id), Value) and env[n.id].aval.ndim}
    looped |= {name for name, v in env.items()
               if any(v is env.get(n) for n in looped) and isinstance(v, Value)}
    for node in own_scope(stmt.body):
        name = updated_in_place(node)
        if name in rows and not rebound_first(stmt.body, name):
            raise lowering.src.error(node, f"`{name}` is a row of the array looped over: NumPy "
                                     "would write this update into that array, which the "
                                     "compiled loop does not", "loop over range(len(...)) and "
                                     "update the array by index (Y[i] = Y[i] * 2)")
        if name in looped:
            raise lowering.src.error(node, f"`{name}` is updated inside a loop over its rows: "
                                     "NumPy's rows still to come would see the update, the "
                                     "compiled loop's would not", "loop over range(len(...)) "
                                     f"and read {name}[i] in the body")


def _is_range(node, lowering) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and lowering.lookup(node.func.id, node.func) is range)


def updated_in_place(node):
    """The array name ``node`` writes into in place (``y *= 2``, ``y[i] = v``, ``y[i] += v``,
    ``np.add.at(y, i, v)``)."""
    if add_at_target(node):
        return add_at_target(node)
    targets = (node.targets if isinstance(node, ast.Assign)
               else [node.target] if isinstance(node, ast.AugAssign) else [])
    for t in targets:
        if isinstance(node, ast.AugAssign) and isinstance(t, ast.Name):
            return t.id
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            return t.value.id
    return None


def rebound_first(body, name) -> bool:
    """Whether the first statement of ``body`` that writes ``name`` is ``name = ...`` at the top
    level: later in-place updates then write that new array. (Were it another name's array, the
    update would change that name too, which a loop body refuses: see ``check_region``.)"""
    for stmt in body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == name):
            return True
        if any(updated_in_place(n) == name or name in assigned([n])
               for n in own_scope([stmt]) if isinstance(n, ast.stmt)):
            return False
    return False


def _rebinds(body, name) -> bool:
    """Whether ``body`` binds ``name`` other than by an in-place update (``name = ...``)."""
    updates = {id(n.target) for n in own_scope(body) if isinstance(n, ast.AugAssign)}
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               and id(n) not in updates for n in own_scope(body))


def assigned(stmts) -> list:
    """Names (re)bound anywhere in ``stmts``, in order of first assignment (not the names a
    comprehension binds, nor those a nested def or lambda binds: they are their own, see
    :mod:`..expressions.comprehensions` and :mod:`.local_functions`)."""
    names = {}
    for stmt in stmts:
        own = {id(n) for c in ast.walk(stmt) if isinstance(c, ast.comprehension)
               for n in ast.walk(c.target)}
        for node in own_scope([stmt]):
            if id(node) in own:
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id, None)
            elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name)):  # y[i] = v rebinds y in SSA
                names.setdefault(node.value.id, None)
            elif add_at_target(node):  # so does np.add.at(y, i, v)
                names.setdefault(add_at_target(node), None)
    return list(names)
