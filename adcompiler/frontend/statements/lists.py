"""Lower the lists a ``while`` loop appends to: ``xs = []`` before the loop, ``xs.append(v)``
at the top level of its body, ``xs[k]`` after it.

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
from dataclasses import dataclass

from ...ir import Aval, Literal, Value
from ..expressions.indexing import IndexLowering
from .inplace import rebind_hint
from .loop_updates import rebound_first, updated_in_place

_FRESH_ROWS = {"zeros_like", "copy", "add"}  # new arrays of rows (not Python lists)
_READ_HINT = "read it by index after the loop (xs[k]), or np.array(xs) for an array of rows"


@dataclass(frozen=True)
class Building:
    """What ``name`` holds while the while loop on line ``lineno`` appends to it."""

    name: str
    lineno: int


def is_append(stmt) -> bool:
    """Whether a statement is ``<name>.append(...)``."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "append" and isinstance(call.func.value, ast.Name))


def lower_append(lowering, stmt):
    """``xs.append(v)``: recorded for the loop's stack (see :meth:`ListLowering.lower_while`)."""
    call = stmt.value
    name = call.func.value.id
    held = lowering.scope.env.get(name)
    frame = lowering.loop.appending[-1] if lowering.loop.appending else None
    if len(call.args) == 1 and is_list(lowering.expr(call.args[0])):
        raise lowering.src.error(stmt, "a list of lists (what a while loop inside another "
                                 "loop keeps) cannot be differentiated yet",
                                 "keep one list per value, or restructure the nested loop")
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


def _empty(x) -> bool:
    """``[]``, as the lowering holds it: a static Python list with nothing in it."""
    return isinstance(x, list) and not x


def is_list(x) -> bool:
    return isinstance(x, Value) and x.aval.kind == "list"


class ListLowering:
    """Mixin of the lowering (before the others in its bases: it narrows their methods)."""

    # ---- building: the while loop and its appends --------------------------------------------
    def lower_while(self, stmt):
        appends = {s.value.func.value.id: s for s in stmt.body if is_append(s)}
        nested = {n.value.func.value.id for s in stmt.body for n in ast.walk(s)
                  if isinstance(n, ast.Expr) and is_append(n)} - set(appends)
        for name in nested:  # appended in a branch: refused there (see lower_append)
            if _empty(self.scope.env.get(name)):
                self.scope.env[name] = Building(name, stmt.lineno)
        if not appends:
            return super().lower_while(stmt)
        for name, append in appends.items():
            self._check_empty(name, append)
            self._check_kept(stmt, name, append)
            self.scope.env[name] = Building(name, stmt.lineno)
        records = []
        self.loop.appending = self.loop.appending + ((stmt, records),)
        try:
            super().lower_while(stmt)
        finally:
            self.loop.appending = self.loop.appending[:-1]
        node = self.b.target[-1]
        body = node.regions[-1]
        for name, append in appends.items():
            (value,) = [v for target, n, v in records if target is body.nodes and n == name]
            self.scope.env[name] = self._stack(node, body, name, value, append)

    def _check_empty(self, name, append):
        held = self.scope.env.get(name)
        if not _empty(held):
            raise self.src.error(append, f"`{name}.append(...)` needs `{name} = []` before this "
                                 "while loop", f"write `{name} = []` just before the loop")
        others = [n for n, v in self.scope.env.items() if v is held and n != name]
        if others:
            raise self.src.error(append, f"`{others[0]}` names the same list as `{name}`",
                                 f"give `{name}` its own `{name} = []`")

    def _check_kept(self, stmt, name, append):
        """A list holds the array appended, not a copy: ``xs.append(h); h += 1`` changes the
        entry too in NumPy. The stack stores values, so such an update is refused."""
        (arg,) = append.value.args or (None,)
        if not isinstance(arg, ast.Name) or rebound_first(stmt.body, arg.id):
            return
        for node in (n for s in stmt.body for n in ast.walk(s)):
            if updated_in_place(node) == arg.id and isinstance(self.scope.env.get(arg.id), Value) \
                    and self.scope.env[arg.id].aval.ndim:
                raise self.src.error(node, f"`{arg.id}` is updated in place in a loop that "
                                     f"appends it to `{name}`: in NumPy the list holds that "
                                     "very array, so the update would change its entries too",
                                     f"{rebind_hint(node, arg.id)}, or append "
                                     f"`{arg.id}.copy()`")

    def _stack(self, node, body, name, value, append):
        """The ``while`` node's new stacked output holding ``value`` of every iteration."""
        if isinstance(value, (bool, int, float)):
            value = Literal(value)
        if not isinstance(value, (Value, Literal)) or value.aval.kind not in (
                "array", "float", "int", "bool"):
            raise self.src.error(append.value.args[0], "only an array or a number can be "
                                 "appended to a list here", "append arrays or floats")
        aval = value.aval
        stack = Value(Aval("list", aval.dtype, () if aval.is_scalar else aval.shape),
                      origin=name)
        self.graph.name_value(stack, name)
        body.outputs.append(value)
        node.outputs = node.outputs + (stack,)
        node.params = {**node.params, "stacked": node.params.get("stacked", 0) + 1}
        return stack

    def merge_branches(self, stmt, test, blocks, envs, env0):
        """A list one branch builds meets the other branch's ``xs = []`` (a loop that never
        ran): that one yields an empty list of the same elements."""
        for name in set(envs[0]) & set(envs[1]):
            values = [e[name] for e in envs]
            for i, (v, other) in enumerate([values, values[::-1]]):
                if _empty(v) and is_list(other):
                    with self.b.into(blocks[i]):
                        envs[i][name] = self.b.emit("empty_list", (), {
                            "dtype": other.aval.dtype, "shape": other.aval.shape})
        return super().merge_branches(stmt, test, blocks, envs, env0)

    # ---- using a list ---------------------------------------------------------------------------
    def expr_Name(self, node):
        value = super().expr_Name(node)
        if isinstance(value, Building):
            raise self.src.error(node, f"`{node.id}` is being built by the while loop on line "
                                 f"{value.lineno}", _READ_HINT)
        return value

    def lower_index(self, base, node):
        if not is_list(base):
            return super().lower_index(base, node)
        return self.b.emit("list_get", (base, self._list_index(node)))

    def _list_index(self, node):
        """The one integer ``k`` of ``xs[k]``: a Python int or a traced int."""
        k = self.expr(node.slice)
        if isinstance(k, bool) or not (isinstance(k, int) or isinstance(k, Value) and k.aval.kind
                                       in ("int", "array") and k.aval.known_shape == ()
                                       and k.aval.dtype.startswith(("int", "uint"))):
            raise self.src.error(node, "a list is indexed by one integer here",
                                 "read one element, xs[k]; np.array(xs) gives an array of rows")
        return k

    def assign_subscript(self, target, value, stmt, op=None):
        old = self.scope.env.get(target.value.id) if isinstance(target.value, ast.Name) else None
        if not is_list(old):
            return super().assign_subscript(target, value, stmt, op)
        if not self._writable(old):
            raise self.src.error(target, f"`{target.value.id}` is a list; writing into it is "
                                 "not supported", f"make an array of rows first: "
                                 f"{target.value.id} = np.array({target.value.id})")
        k = self._list_index(target)
        value = self.operand(value, stmt.value)
        if op is not None:
            current = self.b.emit("list_get", (old, k))
            value = self.b.emit(_OPS[type(op)], (current, value))
        arrays, index = ((k,), (("a", 0),)) if isinstance(k, Value) else ((), (("i", k),))
        new = self.b.setitem(old, value, arrays, index)
        self.update_aliases(stmt, old, new, target.value.id)  # as NumPy: every name sees it
        self.bind(target.value, new, stmt)

    def _writable(self, v) -> bool:
        """Whether ``v`` is an array of rows made in this block (np.array(xs),
        np.zeros_like(xs), np.add(xs, ys), then updated by row): a list's own elements may be
        arrays that other names hold, which ``xs[k] += v`` would change in place."""
        producers = {out: n for n in self.b.target for out in n.outputs}
        node = producers.get(v)
        while node is not None and node.prim in ("setitem", "index_add"):
            node = producers.get(node.inputs[0])
        return node is not None and node.prim in _FRESH_ROWS

    def operand(self, x, node):
        if is_list(x):
            raise self.src.error(node, "arithmetic on a list is not supported (Python's `+` "
                                 "would concatenate)", "index it (xs[k]), or use np.add(xs, ys) "
                                 "for a sum of two lists element by element")
        return super().operand(x, node)

    def index_item(self, item, arrays, node):
        if is_list(item):
            raise self.src.error(node, "a list cannot be used as an index",
                                 "index with ints, slices, or integer arrays")
        return IndexLowering.index_item(self, item, arrays, node)

    def list_attribute_error(self, node):
        return self.src.error(node, f"a list has no `.{node.attr}` here",
                              "a list built by a while loop is read by index (xs[k]); "
                              "np.array(xs) makes an array of rows")


_OPS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
        ast.Pow: "power", ast.Mod: "remainder", ast.FloorDiv: "floor_divide"}
