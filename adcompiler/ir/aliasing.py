"""Which nodes return a fresh array the generated code owns, and which may return a view of their
first input: what decides whether an update may be written in place. NumPy and CuPy agree.

A fact of the primitives' NumPy meaning, read by the passes (a carried array copied once) and by
the backends (in-place updates, buffer planning) alike.
"""

from __future__ import annotations

from .graph import Value, walk
from .primitives import PRIMS

_FRESH = {"zeros_like", "ones_like", "zeros", "ones", "full", "scatter_add", "index_add",
          "setitem", "copy", "astype"}
_VIEWS = {"transpose", "reshape", "expand_dims", "squeeze", "broadcast_to"}


def fresh(node) -> bool:
    """Whether ``node`` returns a new writable array no other value shares: creations,
    copies, updates, and elementwise results with at least one dimension (NumPy returns
    scalars, not arrays, for 0-d results). A fused elementwise chain's result is fresh too
    (the emitter's own check excludes a planned buffer)."""
    if (node.regions and node.prim != "fused") or node.params.get("py"):
        return False
    out = node.outputs[0].aval
    if out.kind == "list":  # an array of one row per element of a list (a list's cotangent)
        return node.prim in _FRESH or node.prim == "add"
    if out.kind != "array" or not out.ndim:
        return False
    return node.prim in _FRESH or node.prim == "fused" or PRIMS[node.prim].family == "elementwise"


def is_view(node) -> bool:
    """Whether NumPy may return a view of the first input (basic indexing, reshapes...)."""
    if node.prim == "getitem":
        if _one_entry(node):  # x[i] of every axis: NumPy gives a scalar, a copy
            return False
        return all(not x.aval.ndim for x in node.inputs[1:])  # no 1-D+ index array: basic
    if node.prim == "list_get":  # the very array a list holds, or a row of an array of rows
        return bool(node.outputs[0].aval.ndim)
    return node.prim in _VIEWS


def _one_entry(node) -> bool:
    """Whether ``x[index]`` picks one entry by integers alone (``x[i]``, ``x[i, 2]``, a 0-d
    index array): the result is a NumPy scalar, no view. An Ellipsis or a slice gives a view,
    even of 0 dimensions."""
    out = node.outputs[0].aval
    return (out.kind == "array" and out.shape == ()
            and all(item[0] in ("i", "a", "u") for item in node.params["index"])
            and all(not x.aval.ndim for x in node.inputs[1:]))


_ENTRY_UPDATES = ("setitem", "index_add")


def updates_slot(nxt, p, producer, depth=16) -> bool:
    """Whether ``nxt`` is ``p`` after at least one entry update, on every path (an ``if``
    branch may pass ``p`` on as it is)."""
    return _chain(nxt, p, producer, depth) == "updated"


def _chain(x, p, producer, depth):
    """"same" where ``x`` is ``p``, "updated" where it is ``p`` after updates on some path
    and ``p`` on the others, else None."""
    if x is p:
        return "same"
    node = producer.get(x) if isinstance(x, Value) else None
    if node is None or depth == 0:
        return None
    if node.prim in _ENTRY_UPDATES:
        return "updated" if _chain(node.inputs[0], p, producer, depth - 1) else None
    if node.prim == "cond":
        j = node.outputs.index(x)
        ends = [_chain(block.outputs[j], p, producer, depth - 1) for block in node.regions]
        if None in ends:
            return None
        return "updated" if "updated" in ends else "same"
    if node.prim in ("loop", "while"):  # an inner loop carrying it: its slot is a chain too
        first = 1 if node.prim == "loop" else 0
        body = node.regions[-1]
        j = node.outputs.index(x)
        if j >= len(body.params) - first:
            return None  # a stacked output
        ends = [_chain(node.inputs[first + j], p, producer, depth - 1),
                _chain(body.outputs[j], body.params[first + j], producer, depth - 1)]
        if None in ends:
            return None
        return "updated" if "updated" in ends else "same"
    return None


def updated_inits(graph) -> set:
    """The initial values of loop slots that the loop updates entry by entry
    (:func:`updates_slot`): the emitter writes those in place through the slot."""
    producer = {v: n for n in walk(graph.nodes) for v in n.outputs}
    out = set()
    for loop in walk(graph.nodes):
        if loop.prim not in ("loop", "while"):
            continue
        body, first = loop.regions[-1], 1 if loop.prim == "loop" else 0
        for p, init, nxt in zip(body.params[first:], loop.inputs[first:], body.outputs):
            if isinstance(init, Value) and updates_slot(nxt, p, producer):
                out.add(init)
    return out
