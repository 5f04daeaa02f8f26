"""Which nodes return a fresh array the generated code owns, and which may return a view of their
first input: what decides whether an update may be written in place. NumPy and CuPy agree.
"""

from __future__ import annotations

from ..ir.primitives import PRIMS

_FRESH = {"zeros_like", "ones_like", "zeros", "ones", "full", "scatter_add", "index_add",
          "setitem", "copy", "astype"}
_VIEWS = {"transpose", "reshape", "expand_dims", "squeeze", "broadcast_to"}


def fresh(node) -> bool:
    """Whether ``node`` returns a new writable array no other value shares: creations,
    copies, updates, and elementwise results with at least one dimension (NumPy returns
    scalars, not arrays, for 0-d results)."""
    if node.regions or node.params.get("py"):
        return False
    out = node.outputs[0].aval
    if out.kind == "list":  # an array of one row per element of a list (a list's cotangent)
        return node.prim in _FRESH or node.prim == "add"
    if out.kind != "array" or not out.ndim:
        return False
    return node.prim in _FRESH or PRIMS[node.prim].family == "elementwise"


def is_view(node) -> bool:
    """Whether NumPy may return a view of the first input (basic indexing, reshapes...)."""
    if node.prim == "getitem":
        return all(not x.aval.ndim for x in node.inputs[1:])  # no 1-D+ index array: basic
    if node.prim == "list_get":  # the very array a list holds, or a row of an array of rows
        return bool(node.outputs[0].aval.ndim)
    return node.prim in _VIEWS
