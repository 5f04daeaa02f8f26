"""Lower ``y[idx] = v``, ``y[idx] op= v`` and ``np.add.at(y, idx, v)`` into functional updates
(``setitem``, ``index_add``: repeated indices add up) in SSA.

NumPy writes into ``y``'s memory, so every name for that array sees the change: the update goes
through the same alias tracking as ``y *= v`` (:mod:`.inplace`). A boolean mask becomes
``np.where(mask, v, y)`` (the count it selects depends on the data; the shape it keeps does
not); a mask known while compiling is its positions
(:func:`..expressions.indexing.constant_masks`). An array of rows of kind ``list`` (``a =
np.array(xs)`` of a while loop's list) is written by row (:func:`assign_item`). Invariants: the
compiled code never writes into the caller's arrays (assigning into a parameter updates a copy,
the result is the same); writing into a module-level or closure array is a located error; ``v``
is cast to ``y``'s dtype, as NumPy does.
"""

from __future__ import annotations

import ast

import numpy as np

from ...ir import Value
from ..bindings.lists import is_list
from ..expressions.containers import setitem_error
from ..expressions.indexing import constant_masks, index_item
from ..expressions.lists import list_index
from .inplace import update_aliases

_OPS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
        ast.Pow: "power", ast.Mod: "remainder", ast.FloorDiv: "floor_divide"}


def assign_subscript(lowering, target: ast.Subscript, value, stmt, op=None):
    if holds_list(lowering, target):  # an array of rows, of kind list (.lists)
        return assign_item(lowering, target, value, stmt, op)
    if not isinstance(target.value, ast.Name):
        raise lowering.src.error(target, "assign into a named array (`y[i] = v`), not into an "
                                 "expression", "give the array a name first")
    name = target.value.id
    old = lowering.lookup(name, target.value)
    if isinstance(old, dict):
        raise setitem_error(lowering, target, name)
    if not (isinstance(old, Value) and old.aval.kind == "array" and old.aval.ndim):
        raise lowering.src.error(target.value, f"`{name}` is not an array that can be "
                                 "assigned into", "assign into arrays made with np.zeros, "
                                 "np.empty_like, .copy() and the like")
    index = lowering.expr(target.slice)
    items = index if isinstance(index, tuple) else (index,)
    new = store_changing_slice(lowering, old, items, value, op, stmt, target)
    if new is None:
        new = store_items(lowering, old, items, value, op, stmt, target)
    if new.aval.dtype != old.aval.dtype:
        new = lowering.b.emit("astype", (new,), {"dtype": old.aval.dtype})
    update_aliases(lowering, stmt, old, new, name)
    lowering.bind(target.value, new, stmt)


def store_items(lowering, old, items, value, op, stmt, target):
    items = constant_masks(lowering, old, items, target)  # a mask known now: its positions
    if _mask(items) is not None:
        check_masked_value(lowering, value, stmt.value)
    if op is not None:
        current = subscript_read(lowering, old, items, target)
        value = lowering.b.emit(_OPS[type(op)], (current, lowering.operand(value, stmt.value)))
    return store(lowering, old, items, lowering.operand(value, stmt.value), target)


def store_changing_slice(lowering, old, items, value, op, stmt, target):
    """``y[i:] *= 0.9``, ``U[i, i + 1:] = 0.0``: a number stored into a slice whose length
    changes with the loop counters, as ``whole = np.where(mask, new, whole)`` over the
    whole axis (see :meth:`..expressions.windows.WindowLowering.changing_slice_mask`); None
    where that does not apply."""
    masked = lowering.changing_slice_mask(old, items) if _number(value) else None
    if masked is None:
        return None
    whole, mask = masked
    full = all(isinstance(x, slice) and x == slice(None) for x in whole)
    current = old if full else subscript_read(lowering, old, whole, target)
    new = value if op is None else lowering.b.emit(_OPS[type(op)], (
        current, lowering.operand(value, stmt.value)))
    new = lowering.b.emit("where", (mask, new, current))
    return new if full else store(lowering, old, whole, new, target)


def check_masked_value(lowering, value, node):
    """``y[mask] = v`` compiles as ``np.where(mask, v, y)``: right for a number, or an
    array of one element; NumPy reads any other ``v`` in order, one item per True entry,
    so those are refused."""
    size = 1
    if isinstance(value, Value) and value.aval.kind == "array":
        shape = value.aval.shape
        size = None if shape is None else int(np.prod(shape))
    if size != 1:
        raise lowering.src.error(node, "a boolean mask takes a number here (NumPy would store "
                                 "this array's items one per True entry, in order)",
                                 "use np.where(mask, values, y) with values shaped like y")


def subscript_read(lowering, base, items, node):
    mask = _mask(items)
    if mask is not None:
        return base  # combined elementwise, then selected by the mask in store()
    arrays = []
    items = lowering.windows(base, items, node)
    spec = tuple(index_item(lowering, item, arrays, node) for item in items)
    return lowering.b.getitem(base, arrays, spec)


def store(lowering, old, items, value, node):
    mask = _mask(items)
    if mask is not None:
        new = lowering.b.emit("where", (mask, value, old))
        if new.aval.shape != old.aval.shape:
            raise lowering.src.error(node, f"the mask (shape {mask.aval.shape}) does not fit "
                                     f"the array (shape {old.aval.shape})",
                                     "use a mask of the array's own shape")
        return new
    arrays = []
    items = lowering.windows(old, items, node)
    spec = tuple(index_item(lowering, item, arrays, node) for item in items)
    return lowering.b.setitem(old, value, arrays, spec)


def lower_add_at(lowering, stmt):
    """``np.add.at(y, idx, v)`` (what generated adjoint code writes where indices repeat):
    ``y`` with ``v`` added at ``idx``, every repeat counted, as an update of ``y``."""
    call = stmt.value
    if lowering.expr(call.func) != np.add.at:
        raise lowering.src.error(call.func, f"`{lowering.src.text(call.func)}(...)` is not "
                                 "np.add.at: its result would be dropped",
                                 "assign the result to a name")
    if len(call.args) != 3 or call.keywords or not isinstance(call.args[0], ast.Name):
        raise lowering.src.error(call, "np.add.at compiles as np.add.at(y, index, values) on a "
                                 "named array y", "name the array first")
    target = call.args[0]
    old = lowering.lookup(target.id, target)
    if not (isinstance(old, Value) and old.aval.kind == "array" and old.aval.ndim):
        raise lowering.src.error(target, f"`{target.id}` is not an array that can be updated",
                                 "update arrays made with np.zeros, .copy() and the like")
    index = lowering.expr(call.args[1])
    items = index if isinstance(index, tuple) else (index,)
    items = constant_masks(lowering, old, items, call.args[1])  # a mask known now: positions
    arrays = []
    spec = tuple(index_item(lowering, item, arrays, call.args[1]) for item in items)
    value = lowering.operand(lowering.expr(call.args[2]), call.args[2])
    new = lowering.b.emit("index_add", (old, value, *arrays), {"index": spec})
    if new.aval.dtype != old.aval.dtype:
        new = lowering.b.emit("astype", (new,), {"dtype": old.aval.dtype})
    update_aliases(lowering, stmt, old, new, target.id)
    lowering.bind(target, new, stmt)


def is_add_at(stmt) -> bool:
    """Whether a statement is a call ``<something>.add.at(...)`` (syntax only)."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    func = call.func if isinstance(call, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr == "at"
            and isinstance(func.value, ast.Attribute) and func.value.attr == "add")


def add_at_target(stmt):
    """``y`` of a statement ``<module>.add.at(y, ...)``, else None (syntax only)."""
    if is_add_at(stmt) and stmt.value.args and isinstance(stmt.value.args[0], ast.Name):
        return stmt.value.args[0].id
    return None


def _number(value) -> bool:
    """A Python number or a traced 0-d value: what a changing-length slice may store."""
    if isinstance(value, Value):
        return value.aval.known_shape == ()
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def _mask(items):
    """The boolean mask of ``y[mask]``, if that is the index."""
    if len(items) == 1 and isinstance(items[0], Value) and items[0].aval.dtype == "bool":
        return items[0]
    return None


_FRESH_ROWS = {"zeros_like", "copy", "add"}  # new arrays of rows (not Python lists)


# ---- writing into an array of rows ------------------------------------------------------------
def assign_item(lowering, target, value, stmt, op=None):
    """``a[k] = v`` (``a[k] op= v``) into ``a``, an array of rows of kind ``list``."""
    old = lowering.scope.env[target.value.id]
    if not _writable(lowering, old):
        raise lowering.src.error(target, f"`{target.value.id}` is a list; writing into it is "
                                 "not supported", f"make an array of rows first: "
                                 f"{target.value.id} = np.array({target.value.id})")
    k = list_index(lowering, target)
    value = lowering.operand(value, stmt.value)
    if op is not None:
        current = lowering.b.emit("list_get", (old, k))
        value = lowering.b.emit(_OPS[type(op)], (current, value))
    arrays, index = ((k,), (("a", 0),)) if isinstance(k, Value) else ((), (("i", k),))
    new = lowering.b.setitem(old, value, arrays, index)
    update_aliases(lowering, stmt, old, new, target.value.id)  # as NumPy: every name sees it
    lowering.bind(target.value, new, stmt)


def holds_list(lowering, target) -> bool:
    """Whether ``target`` (``a[k]``) writes into a name holding a list."""
    return isinstance(target.value, ast.Name) and is_list(lowering.scope.env.get(target.value.id))


def _writable(lowering, v) -> bool:
    """Whether ``v`` is an array of rows made in this block (np.array(xs),
    np.zeros_like(xs), np.add(xs, ys), then updated by row): a list's own elements may be
    arrays that other names hold, which ``xs[k] += v`` would change in place."""
    producers = {out: n for n in lowering.b.target for out in n.outputs}
    node = producers.get(v)
    while node is not None and node.prim in ("setitem", "index_add"):
        node = producers.get(node.inputs[0])
    return node is not None and node.prim in _FRESH_ROWS
