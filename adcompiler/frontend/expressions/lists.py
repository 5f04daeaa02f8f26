"""Reading the lists a ``while`` loop builds (:mod:`..bindings.lists`): ``xs[k]`` after the
loop, and the located errors of every other use in an expression.

Invariant: a list is read only by one integer index (a Python int or a traced int), into a
``list_get`` node; a name still being built, arithmetic on a list, a list as an index and a
list's attributes are refused where the user wrote them, with what to write instead.
"""

from __future__ import annotations

from ...ir import Value
from ..bindings.lists import Building

READ_HINT = "read it by index after the loop (xs[k]), or np.array(xs) for an array of rows"


def refuse_building(lowering, node, value):
    """``xs`` read while the loop that appends to it is lowered: a located error."""
    if isinstance(value, Building):
        raise lowering.src.error(node, f"`{node.id}` is being built by the while loop on line "
                                 f"{value.lineno}", READ_HINT)


def read_item(lowering, base: Value, node):
    """``xs[k]`` of a list ``base``: its element ``k``."""
    return lowering.b.emit("list_get", (base, list_index(lowering, node)))


def list_index(lowering, node):
    """The one integer ``k`` of ``xs[k]``: a Python int or a traced int."""
    k = lowering.expr(node.slice)
    if isinstance(k, bool) or not (isinstance(k, int) or isinstance(k, Value) and k.aval.kind
                                   in ("int", "array") and k.aval.known_shape == ()
                                   and k.aval.dtype.startswith(("int", "uint"))):
        raise lowering.src.error(node, "a list is indexed by one integer here",
                                 "read one element, xs[k]; np.array(xs) gives an array of rows")
    return k


def arithmetic_error(lowering, node):
    return lowering.src.error(node, "arithmetic on a list is not supported (Python's `+` "
                              "would concatenate)", "index it (xs[k]), or use np.add(xs, ys) "
                              "for a sum of two lists element by element")


def index_error(lowering, node):
    return lowering.src.error(node, "a list cannot be used as an index",
                              "index with ints, slices, or integer arrays")


def attribute_error(lowering, node):
    return lowering.src.error(node, f"a list has no `.{node.attr}` here",
                              "a list built by a while loop is read by index (xs[k]); "
                              "np.array(xs) makes an array of rows")
