"""Lower the lists a ``while`` loop appends to: ``xs = []`` before the loop, ``xs.append(v)``
at the top level of its body, ``xs[k]`` after it (read by :mod:`..expressions.lists`; written,
for an array of rows, by :mod:`.setitem`; the values names hold: :mod:`..bindings.lists`).

A while loop's trip count is unknown on entry, so what it keeps per iteration goes into a list
(the adjoint code this compiler generates does just that, and reads it back for
``grad(grad(f))``). Such a list is a stacked output of the ``while`` node, of kind ``list``
(one element per iteration, of the appended value's aval), read with ``list_get``.
``np.zeros_like(xs)``, ``np.array(xs)`` and ``np.add(xs, ys)`` make arrays of one row per
element: of kind ``list`` too (their length is known only at run time), read by index like
``xs``, and also written by index (``a[k] = v``, ``a[k] += v``). Invariant: any other use of a
list is a located error: attributes, ``len``, operators (``+`` concatenates Python lists),
slices, loops over it, a list as a condition or an index, writing into the list itself, reading
it inside the loop that builds it, and appending anywhere else or anything but an array or a
number.
"""

from __future__ import annotations

import ast
import contextlib

from ...ir import Aval, Literal, Value
from ..bindings.lists import Building, empty, is_list
from .inplace import rebind_hint
from .loop_updates import rebound_first, updated_in_place

def is_append(stmt) -> bool:
    """Whether a statement is ``<name>.append(...)``."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "append" and isinstance(call.func.value, ast.Name))


def _append_to_python_list(lowering, stmt, held: list, arg):
    """``out.append(v)`` to a Python list, where the code runs once as written (straight-line
    code, an unrolled loop's iteration): the list itself grows, as in Python, so its aliases
    see the item too. Not inside a traced ``if`` or a compiled loop, whose body is lowered once
    for every path or iteration."""
    if lowering.loop.own_blocks:
        raise lowering.src.error(stmt, f"appending to the Python list "
                                 f"`{lowering.src.text(stmt.value.func.value)}` inside a "
                                 "traced `if` or a compiled loop is not supported: the code "
                                 "there runs once for every path or iteration",
                                 "append on both paths outside the `if` (np.where(c, a, b)), "
                                 "or in a loop preallocate xs = np.zeros((n, ...)) and write "
                                 "xs[i] = v")
    held.append(lowering.expr(arg))


def lower_append(lowering, stmt):
    """``xs.append(v)``: recorded for the loop's stack (see :func:`appending`)."""
    call = stmt.value
    name = call.func.value.id
    held = lowering.scope.env.get(name)
    frame = lowering.loop.appending[-1] if lowering.loop.appending else None
    if len(call.args) == 1 and is_list(lowering.expr(call.args[0])):
        raise lowering.src.error(stmt, "a list of lists (what a while loop inside another "
                                 "loop keeps) cannot be differentiated yet",
                                 "keep one list per value, or restructure the nested loop")
    if type(held) is list and len(call.args) == 1 and not call.keywords:
        return _append_to_python_list(lowering, stmt, held, call.args[0])
    if not isinstance(held, Building):
        raise lowering.src.error(stmt, f"`{name}.append(...)` compiles only at the top level "
                                 f"of a while loop's body, to a list made empty before it",
                                 "in a for loop, preallocate an array (xs = np.zeros((n, ...)))"
                                 " and write xs[i] = v")
    if frame is None or held.lineno != frame[0].lineno or not any(
            s is stmt for s in frame[0].body):
        raise lowering.src.error(stmt, f"`{name}.append(...)` must run once in every iteration: "
                                 "at the top level of the while loop's body, not inside an "
                                 "`if` or a nested loop", "append on every path (a zero where "
                                 "nothing is computed), at the body's top level")
    if len(call.args) != 1 or call.keywords:
        raise lowering.src.error(call, "append takes one value", f"{name}.append(value)")
    records = frame[1]
    if any(t is lowering.b.target and n == name for t, n, _ in records):
        raise lowering.src.error(stmt, f"`{name}` is appended to twice per iteration",
                                 "append once per iteration; use two lists")
    records.append((lowering.b.target, name, lowering.expr(call.args[0])))


# ---- building: the while loop and its appends --------------------------------------------------
@contextlib.contextmanager
def appending(lowering, stmt: ast.While):
    """Around the lowering of the while loop ``stmt``: the names its body appends to hold
    :class:`Building` (checked to be fresh ``[]``), their appends are recorded, and after the
    loop each is bound to the ``while`` node's stacked output of what was appended (in the
    environment the loop leaves, which may be a new one)."""
    env = lowering.scope.env
    appends = {s.value.func.value.id: s for s in stmt.body if is_append(s)}
    nested = {n.value.func.value.id for s in stmt.body for n in ast.walk(s)
              if isinstance(n, ast.Expr) and is_append(n)} - set(appends)
    for name in nested:  # appended in a branch: refused there (see lower_append)
        if empty(env.get(name)):
            env[name] = Building(name, stmt.lineno)
    if not appends:
        yield
        return
    for name, append in appends.items():
        _check_empty(lowering, name, append)
        _check_kept(lowering, stmt, name, append)
        env[name] = Building(name, stmt.lineno)
    records = []
    lowering.loop.appending = lowering.loop.appending + ((stmt, records),)
    try:
        yield
    finally:
        lowering.loop.appending = lowering.loop.appending[:-1]
    node = lowering.b.target[-1]
    body = node.regions[-1]
    for name, append in appends.items():
        (value,) = [v for target, n, v in records if target is body.nodes and n == name]
        lowering.scope.env[name] = _stack(lowering, node, body, name, value, append)


def _check_empty(lowering, name, append):
    held = lowering.scope.env.get(name)
    if not empty(held):
        raise lowering.src.error(append, f"`{name}.append(...)` needs `{name} = []` before "
                                 "this while loop", f"write `{name} = []` just before the loop")
    others = [n for n, v in lowering.scope.env.items() if v is held and n != name]
    if others:
        raise lowering.src.error(append, f"`{others[0]}` names the same list as `{name}`",
                                 f"give `{name}` its own `{name} = []`")


def _check_kept(lowering, stmt, name, append):
    """A list holds the array appended, not a copy: ``xs.append(h); h += 1`` changes the
    entry too in NumPy. The stack stores values, so such an update is refused."""
    (arg,) = append.value.args or (None,)
    if not isinstance(arg, ast.Name) or rebound_first(stmt.body, arg.id):
        return
    env = lowering.scope.env
    for node in (n for s in stmt.body for n in ast.walk(s)):
        if updated_in_place(node) == arg.id and isinstance(env.get(arg.id), Value) \
                and env[arg.id].aval.ndim:
            raise lowering.src.error(node, f"`{arg.id}` is updated in place in a loop that "
                                     f"appends it to `{name}`: in NumPy the list holds that "
                                     "very array, so the update would change its entries too",
                                     f"{rebind_hint(node, arg.id)}, or append "
                                     f"`{arg.id}.copy()`")


def _stack(lowering, node, body, name, value, append):
    """The ``while`` node's new stacked output holding ``value`` of every iteration."""
    if isinstance(value, (bool, int, float)):
        value = Literal(value)
    if not isinstance(value, (Value, Literal)) or value.aval.kind not in (
            "array", "float", "int", "bool"):
        raise lowering.src.error(append.value.args[0], "only an array or a number can be "
                                 "appended to a list here", "append arrays or floats")
    aval = value.aval
    stack = Value(Aval("list", aval.dtype, () if aval.is_scalar else aval.shape), origin=name)
    lowering.graph.name_value(stack, name)
    body.outputs.append(value)
    node.outputs = node.outputs + (stack,)
    node.params = {**node.params, "stacked": node.params.get("stacked", 0) + 1}
    return stack


def meet_empty_lists(lowering, blocks, envs):
    """Before an ``if``'s branches are merged: a list one branch builds meets the other
    branch's ``xs = []`` (a loop that never ran): that one yields an empty list of the same
    elements."""
    for name in set(envs[0]) & set(envs[1]):
        values = [e[name] for e in envs]
        for i, (v, other) in enumerate([values, values[::-1]]):
            if empty(v) and is_list(other):
                with lowering.b.into(blocks[i]):
                    envs[i][name] = lowering.b.emit("empty_list", (), {
                        "dtype": other.aval.dtype, "shape": other.aval.shape})
