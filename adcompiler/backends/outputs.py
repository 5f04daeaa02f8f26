"""Which returned arrays the generated code must copy, so that every gradient it returns is a new,
writable array of the caller's own, as PyTorch's ``.grad`` and NumPy's results are.

Without a copy, ``grad(lambda x, y: np.sum(x * y))(x, y)`` would return the caller's ``y`` itself
(and ``g *= 0`` would zero it), a gradient that is a compiled constant would be one array shared
by every call, ``dx`` and ``dy`` could be one array, and ``np.broadcast_to(2.0, (n,))`` is
read-only. A returned value is copied where it may share memory with a parameter, a constant, a
broadcast (read-only) view, or a value returned before it. "May share" is the may-alias relation
of :class:`~adcompiler.backends.inplace.Sharing` (views, slots, list and stack rows), taken in
both directions, plus the nodes that may return an input itself (``np.asarray``, a same-dtype
``astype``, ``stop_gradient``, a user's custom function). Nodes that always make a new array
(elementwise, matmul, reductions, creations, updates the code owns) share nothing, so the usual
gradient is returned as it is, with no copy.
"""

from __future__ import annotations

from ..ir import Value, walk
from ..ir.primitives import PRIMS
from .inplace import reach

_NEW_FAMILIES = {"elementwise", "linalg", "reduction"}
# Always a new array (or a Python scalar), or an update written only on an array this code owns
# (backends/inplace.py: never a parameter's, never one read later, as a returned value is).
_NEW = {"concatenate", "stack", "copy", "full", "ones", "zeros", "ones_like", "zeros_like",
        "last_writes", "empty_list", "scatter_add", "index_add", "setitem", "to_float",
        "to_int", "fused"}


def copied_outputs(graph, sharing) -> set:
    """Positions in ``graph.outputs`` whose array the function must copy before returning."""
    neighbours = _undirected(graph, sharing)
    foreign = set(graph.params) | set(graph.consts)
    foreign |= {n.outputs[0] for n in walk(graph.nodes) if n.prim == "broadcast_to"}
    taken, copies = set(), set()
    for i, x in enumerate(graph.outputs):
        if not isinstance(x, Value) or x.aval.kind != "array":
            continue
        group = set(reach(x, frozenset(), (neighbours,)))
        if group & (foreign | taken):
            copies.add(i)   # the copy is new: nothing else shares it
        else:
            taken |= group
    return copies


def _undirected(graph, sharing) -> dict:
    edges: dict = {}

    def link(a, b):
        if isinstance(a, Value) and isinstance(b, Value) and a is not b:
            edges.setdefault(a, set()).add(b)
            edges.setdefault(b, set()).add(a)

    for table in (sharing.copied, sharing.kept):
        for a, holders in table.items():
            for b in holders:
                link(a, b)
    for node in walk(graph.nodes):
        if _may_return_input(node):
            for out in node.outputs:
                for x in node.inputs:
                    link(x, out)
    return edges


def _may_return_input(node) -> bool:
    """Whether ``node``'s result may be (a view of) one of its inputs. Control nodes' slots are
    in ``Sharing.copied`` already; a fused chain is elementwise."""
    if node.regions or node.prim in _NEW:
        return False
    prim = PRIMS.get(node.prim)
    if prim is not None and prim.family in _NEW_FAMILIES:
        return False
    if node.prim == "getitem" and any(x.aval.ndim for x in node.inputs[1:]):
        return False  # an index array: NumPy copies
    return True
