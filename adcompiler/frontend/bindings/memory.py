"""Which values share memory, read from the graph built so far: NumPy's views.

A value produced by a view primitive (a transpose, a reshape, a basic slice...) shares the
memory of its input; :func:`memory_root` follows such views back to the value owning the memory.
Invariant: only nodes already emitted (into the graph or an open block) are followed, so a
root is always a value defined before the one asked about.
"""

from __future__ import annotations

import numpy as np

from ...ir import Value

# list_get: an element of a list is the very array the list holds (see ..statements.lists)
VIEW_PRIMS = {"transpose", "reshape", "expand_dims", "squeeze", "broadcast_to", "list_get"}


def is_mutable_array(x) -> bool:
    """Arrays are updated in place; Python numbers and NumPy scalars (shape ()) are not."""
    return isinstance(x, Value) and not x.aval.is_scalar and x.aval.shape != ()


def open_producers(b) -> dict:
    """Value -> node for the nodes emitted so far into the graph and every block still open
    around the builder's target (a loop body's nodes join the graph only when it closes)."""
    return {v: n for nodes in (*b.enclosing, b.target) for n in nodes for v in n.outputs}


def memory_root(v: Value, producers: dict) -> Value:
    """The value whose memory ``v`` views (``v`` itself when it is not a view)."""
    node = producers.get(v)
    while node is not None and _is_view(node):
        v = node.inputs[0]
        node = producers.get(v)
    return v


def _is_view(node) -> bool:
    if node.prim == "getitem":  # a window's gather ("u") stands for a slice: NumPy's view
        arrays = node.inputs[1:]    # an integer array index copies; a traced int (Y[i]) not
        copies = any(item[0] == "a" and not _scalar_int(arrays[item[1]])
                     for item in node.params["index"])
        return not copies and node.out.aval.shape != ()
    return node.prim in VIEW_PRIMS


def _scalar_int(x) -> bool:
    aval = x.aval
    return aval.known_shape == () and np.dtype(aval.dtype).kind in "iu"
