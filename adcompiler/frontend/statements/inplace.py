"""Augmented assignment (``y *= v``) with NumPy's in-place semantics, lowered to SSA rebinding.

For an array ``y``, NumPy writes the result into ``y``'s own memory, so ``y`` keeps its shape
and dtype and every other name for that array sees the update. Invariants: after ``y op= v``,
every name bound to the old array (in this function and in the callers it is inlined into,
also inside tuples) is bound to the new value; a name that shares the old array's memory only
through a view (``z = y[:2]``, ``y.T``, a reshape) is marked :class:`Stale`, and reading it
later is a located error, since views are not tracked yet; an update NumPy would refuse (a dtype
it cannot cast back, a shape that would change) or one that writes into a module-level or
closure array is a located error, and so is one inside an ``if``/``for``/``while`` body that
would change any name but its own target and the names that block passes on (see
``check_region``; a called function's own loop passes its update back to the caller's name, see
:mod:`.loop_updates`). Python numbers and NumPy scalars (shape ``()``) are
immutable: ``+=`` on them only rebinds the name.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from ...ir import Value
from ..bindings.memory import is_mutable_array, memory_root, open_producers
from ..bindings.unreadable import Unreadable


@dataclass(frozen=True)
class Stale(Unreadable):
    """What a name holds after the array it views was changed in place."""

    target: str        # the name updated in place
    statement: str     # the statement that did it, as the user wrote it
    lineno: int
    hint: str          # how to write that update so nothing else shares the memory
    owner: str = ""    # the function whose name the target is, where it is not the reader's

    @classmethod
    def of(cls, stmt, target, text, src=None, owner=""):
        through = src and write_through_hint(src, stmt, target)
        return cls(target, text, stmt.lineno, through or rebind_hint(stmt, target), owner)

    def describe(self, name):
        why = (f"NumPy would show that change through `{name}` too, and adcompiler does not "
               "track shared memory yet: ")
        if self.hint.startswith("write the update through"):   # keeps NumPy's meaning
            how = self.hint
        elif "[" in name:   # an item of a list or tuple: rows[0]
            how = (f"put copies in `{name.split('[')[0]}` where it is built (as in "
                   f"`[row.copy() for row in a]`), or {self.hint}")
        else:
            how = (f"make `{name}` its own array where it is assigned (append .copy() to the "
                   f"expression, as in `acc[1:].copy()`), or {self.hint}")
        target = f"`{self.target}`" + (f" of `{self.owner}`" if self.owner else "")
        return (f"`{name}` shares memory with {target}, which `{self.statement}` "
                f"(line {self.lineno}) changed in place", why + how)


def update_aliases(lowering, stmt, old: Value, new: Value, name=None):
    """Rebind every name for ``old`` to ``new``; names for views of its memory go stale.
    ``name`` is the updated variable (``y`` in ``y *= 2`` and in ``y[i] = v``)."""
    name = name or stmt.target.id
    producers = open_producers(lowering.b)
    root = writable_root(lowering, stmt, old, producers, name)

    def update(value, stale):
        if value is old:
            return new
        if isinstance(value, (tuple, list)):
            items = [update(v, stale) for v in value]
            if all(a is b for a, b in zip(items, value)):
                return value
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        if isinstance(value, Value) and memory_root(value, producers) is root:
            return stale
        return value

    changes = []
    for env in lowering.scope.frames:
        here = stale_in(lowering, env, stmt, name)
        for alias, value in env.items():
            if (changed := update(value, here)) is not value:
                changes.append((env, alias, changed))
    check_region(lowering, stmt, changes, name)
    for env, alias, value in changes:
        env[alias] = value


def stale_in(lowering, env, stmt, name) -> Stale:
    """What a name in ``env`` that views the array ``stmt`` updated as ``name`` holds: a
    caller's or definer's name is told which function's ``name`` that is."""
    outer = env is not lowering.scope.env and lowering_of(env, lowering) is not None
    return Stale.of(stmt, name, lowering.src.text(stmt), lowering.src,
                    lowering.src.tree.name if outer else "")


def writable_root(lowering, stmt, old: Value, producers, name) -> Value:
    """The value whose memory ``old`` views, unless that is a module global's or closure's."""
    root = memory_root(old, producers)
    if root in lowering.graph.consts:
        raise lowering.src.error(stmt, f"`{name}` is (a view of) an array from a "
                                 "module global or a closure; updating it in place would "
                                 "change that array for every later call",
                                 rebind_hint(stmt, name))
    if any(root is p for p in lowering.graph.params) and root.name not in lowering.graph.writes:
        note_parameter_write(lowering, stmt, root)
    return root


def note_parameter_write(lowering, stmt, param: Value):
    """Where the code writes into a parameter, and the other array parameters: the
    generated code refuses a call passing it memory they share (backends.distinct)."""
    at = lowering.src.location(stmt)
    others = tuple(p.name for p in lowering.graph.params
                   if p is not param and is_mutable_array(p))
    lowering.graph.writes[param.name] = (os.path.basename(at.filename), at.lineno,
                                         lowering.src.text(stmt), others)


def check_region(lowering, stmt, changes, target):
    """Inside a block only the target itself may change, with these exceptions: a branch
    merges every name of the function it belongs to whose value changed, aliases included,
    also where a function called in the branch changed it; a loop carries the names its
    body assigns, and the one name of its function that a function called in the body
    updates (recorded in ``loop.calls_wrote`` for
    :func:`.loops.lower_body`); no block merges the names of a
    function calling the one it belongs to. A view going stale is no change to merge:
    reading it is an error wherever that happens."""
    if lowering.b.target is lowering.graph.nodes:
        return
    changed = [(env, name) for env, name, value in changes if not isinstance(value, Stale)
               and not (env is lowering.scope.env and name == target)]
    refuse_held_default(lowering, stmt, target, changed)
    owner, inside = block_owner(lowering)
    if owner is None or owner is lowering:
        refuse_outer_change(lowering, stmt, owner, changed)
        others = [n for env, n in changed if env is not lowering.scope.env or lowering.loop.depth]
        return refuse_changes(lowering, stmt, target, others)
    changed = [(env, n) for env, n in changed if not any(env is e for e in inside)]
    refuse_outer_change(lowering, stmt, owner, changed)
    mine = [n for _, n in changed]
    if len(mine) > 1 and owner.loop.depth:
        raise lowering.src.error(stmt, f"`{lowering.src.text(stmt)}` in "
                                 f"`{lowering.src.tree.name}`, called inside a loop, updates `{mine[0]}` in place while "
                                 f"`{mine[1]}` names the same array",
                                 alias_copy_hint(owner.src.tree, mine[0], mine[1]))
    if owner.loop.depth:
        owner.loop.calls_wrote.update(mine)


def block_owner(lowering) -> tuple:
    """(the lowering whose ``if`` branch or loop body is the innermost open block, or None;
    the environments of the calls inlined inside that block, this one's first)."""
    inside, frame = [], lowering
    while frame is not None:
        if any(lowering.b.target is nodes for nodes in frame.loop.own_blocks):
            return frame, inside
        inside.append(frame.scope.env)
        frame = frame.scope.caller
    return None, inside


def refuse_changes(lowering, stmt, target, others):
    if others:
        raise lowering.src.error(stmt, f"`{lowering.src.text(stmt)}` inside a block would also "
                                 f"change `{others[0]}`, which names the same memory; that is "
                                 "not supported inside a `for` or `while` body yet",
                                 rebind_hint(stmt, target))


def refuse_outer_change(lowering, stmt, owner, changed):
    """The located error for a write inside a block to a name of a function around the
    one the block belongs to (a caller, or the definer of a nested function): the block
    passes back only its own function's names."""
    env, name = next(((e, n) for e, n in changed if owner and e is not owner.scope.env),
                     (None, None))
    outer = lowering_of(env, lowering)
    if outer is None:
        return
    mine, theirs = owner.src.tree.name, outer.src.tree.name
    block = "a loop" if owner.loop.depth else "an `if`"
    raise lowering.src.error(
        stmt, f"`{lowering.src.text(stmt)}` inside {block} of `{mine}` would also change "
        f"`{name}` of `{theirs}` (the same array), which the {block.split()[1]} cannot "
        f"pass back to `{theirs}`; that is not supported yet",
        f"return the new array from `{mine}` and assign it to `{name}` in `{theirs}`, or "
        f"update `{name}` in `{theirs}` itself")


def refuse_held_default(lowering, stmt, target, changed):
    """The located error for a write inside a block to an array that a nested function
    holds as a default (``def h(v, a=y)``): no block merges a function's defaults."""
    name, defaults = next(((n, env) for env, n in changed
                           if any(env is d for d in lowering.scope.held_defaults)), (None, None))
    if name is None:
        return
    owner = next((v.in_words for env in lowering.scope.frames for v in env.values()
                  if getattr(v, "defaults", None) is defaults), "a nested function")
    block = "a loop" if (block_owner(lowering)[0] or lowering).loop.depth else "an `if`"
    raise lowering.src.error(
        stmt, f"`{lowering.src.text(stmt)}` inside {block} would also change `{name}`, the "
        f"default of {owner}, which is the same array as `{target}` (Python evaluates a "
        "default once, to the array itself); adcompiler cannot carry that change of a "
        "default out of the block",
        f"pass the array to the function where you call it (`{name}={target}`) instead "
        f"of as a default, or give the default its own array (`{name}={target}.copy()`) "
        "if it should keep its values")


def lowering_of(env, frame):
    """The lowering, among ``frame``, its callers and definers, whose environment is ``env``."""
    todo, seen = [frame], set()
    while todo:
        frame = todo.pop()
        if frame is None or id(frame) in seen:
            continue
        if frame.scope.env is env:
            return frame
        seen.add(id(frame))
        todo += [frame.scope.caller, frame.scope.definer]
    return None


def rebind_hint(stmt, name) -> str:
    if not isinstance(stmt, ast.AugAssign) or not isinstance(stmt.target, ast.Name):
        return f"take a .copy() first (`{name} = {name}.copy()`) so no other name shares it"
    op = OP_TEXT.get(type(stmt.op), "op")
    return f"write `{name} = {name} {op} ...` to make a new array instead"


def write_through_hint(src, stmt, name) -> str | None:
    """For ``inner *= 2`` where ``inner = w[1:-1]`` is the function's only binding of
    ``inner``: ``write it through the array itself: `w[1:-1] *= 2``` (NumPy's meaning, which
    adcompiler compiles); None for other updates."""
    if not isinstance(stmt, ast.AugAssign) or not isinstance(stmt.target, ast.Name):
        return None
    bound = [n.value for n in ast.walk(src.tree) if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name) and t.id == name]
    if len(bound) != 1 or not isinstance(bound[0], ast.Subscript) \
            or not isinstance(bound[0].value, ast.Name):
        return None
    op = OP_TEXT.get(type(stmt.op), "op")
    return (f"write the update through the array itself, `{src.text(bound[0])} {op}= "
            f"{src.text(stmt.value)}`, which changes `{bound[0].value.id}` as NumPy does")


def alias_copy_hint(tree, name, other) -> str:
    """The hint for ``name`` updated in place inside a loop while ``other`` names its array:
    one name for the array (NumPy's meaning: the update shows under both), or a copy where
    one name was bound to the other, as the function's assignments show (``acc = x`` becomes
    ``acc = x.copy()``)."""
    if "[" in other:   # an entry of a tuple or list: s[0] of s = (y, 1.0)
        held = other.split("[")[0]
        return (f"put a copy in `{held}` (`{name}.copy()` where `{held}` is built) if `{other}` "
                "should keep its values; if the update should show under both names, as in "
                "NumPy, use one name for the array")
    pairs = {(t.id, n.value.id) for n in ast.walk(tree) if isinstance(n, ast.Assign)
             and isinstance(n.value, ast.Name) for t in n.targets if isinstance(t, ast.Name)}
    if (other, name) in pairs and (name, other) not in pairs:
        name, other = other, name
    where = (f"`{name} = {other}.copy()` instead of `{name} = {other}`" if (name, other) in pairs
             else f"`{name} = {other}.copy()` where `{name}` takes `{other}`'s array")
    return (f"copy it ({where}) if `{other}` should keep its values; if the update should show "
            "under both names, as in NumPy, use one name for the array")


OP_TEXT = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**",
            ast.MatMult: "@", ast.FloorDiv: "//", ast.Mod: "%"}
