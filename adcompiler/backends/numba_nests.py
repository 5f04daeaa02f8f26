"""Plan a gradient with index arrays and axis reductions as loop nests (numba backend, #33).

Where :mod:`adcompiler.backends.loop_plan` finds no single expression per output element (a
gather ``U[iu]``, its scatter-add adjoint ``np.add.at(dU, iu, g)``, a ``sum``/``max`` over an
axis, a bias row broadcast against a matrix), the gradient can still be one serial kernel of
loop nests, one nest per *materialised* value: elementwise arithmetic, broadcasting,
``expand_dims``, slices and gathers are not stored but read inline as index expressions
(``U[iu_w[i0], i1] * V[iv_w[i0], i1]``) in the nest of the value that needs them. A value is
materialised (an array the kernel allocates, or a scalar local where it is 0-d) where it is:

- a graph output, a reduction (``sum``, ``mean``, ``max``, ``min``, ``sum_to``), a scatter-add
  (``index_add``, ``scatter_add``) or the input of a ``reshape`` (which is then a view);
- 0-d (a scalar local costs nothing);
- *costly* (it calls a transcendental function, directly or through inline operands) and read
  by two nodes, or read by one whose loop is larger than the value (``exp(-2 log_sigma)`` of
  shape ``(k,)`` in a loop over ``(n, k)``): recomputing it would cost more than storing it.

A scatter-add is a serial loop over the added values, ``out[iu_w[i0], i1] += g``: repeated
indices add up in order, and no two iterations run at once (the kernel has no ``prange``).
Each index array is checked once, before any loop reads it, against the length of the axis it
indexes (``iu_w``: a copy with negative entries wrapped as NumPy wraps them; an entry out of
range raises ``IndexError`` as NumPy does).

Anything else (matrix products, control flow, index arrays that are not 1-D integer
parameters, constant arrays, other dtypes) is refused with the reason the NumPy code's
docstring gives.

Measured (benchmarks/NUMBA.md, "Loop nests"; one thread, loaded machine): matrix factorization
(10^5 pairs, rank 32) 0.11-0.15x the hand-written NumPy gradient's time, the NumPy backend
0.35-0.46x; a mixture of 16 Gaussians over 10^5 points 0.49-0.53x, the NumPy backend 1.03-1.15x.
One fused pass written by hand does better still (0.04x, 0.34-0.38x): nests that walk the same
index space are not merged.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Literal
from . import numba_reasons
from .loop_plan import SCALAR_PRIMS, Unplanned
from .numba_emit import _is_transcendental

REDUCTIONS = frozenset({"sum", "mean", "max", "min", "sum_to"})
SCATTERS = frozenset({"index_add", "scatter_add"})
INLINE = frozenset({"getitem", "expand_dims", "broadcast_to", "asarray", "copy", "to_float"})
_INDEX_TAGS = frozenset({"s", "i", "n", "a", "u"})


@dataclass(frozen=True)
class NestPlan:
    stored: frozenset   # the values the kernel materialises (graph outputs among them)
    indexes: tuple      # (index parameter, length of the axis it indexes), each checked once


def plan_nests(graph):
    """A :class:`NestPlan`, or ``Unplanned`` with the reason."""
    if any(v != "ignore" for v in graph.errstate.values()):
        return Unplanned("it runs under np.errstate(...), which numba's loops do not honour")
    if not any(v.aval.kind == "array" and v.aval.shape for v in
               [*graph.params, *(o for n in graph.nodes for o in n.outputs)]):
        return Unplanned("it has no array to loop over")
    try:
        return _Planner(graph).plan()
    except _Refused as exc:
        return Unplanned(str(exc))


class _Refused(Exception):
    pass


class _Planner:
    def __init__(self, graph):
        self.graph = graph
        self.producer = {v: node for node in graph.nodes for v in node.outputs}
        self.readers: dict = {}
        self.stored: set = set()   # filled in graph order: a stored operand is read, not redone
        for node in graph.nodes:
            for v in node.inputs:
                if not isinstance(v, Literal):
                    self.readers.setdefault(v, []).append(node)

    def plan(self) -> NestPlan:
        index_params = self._check_params()
        for v in self.graph.outputs:
            if not isinstance(v, Literal) and v not in self.producer and \
                    v not in self.graph.params:
                raise _Refused(f"it returns {v.name or 'an array'} ({v.aval}), a constant "
                               "array, which the NumPy code makes anew each call")
        stored, indexes = self.stored, []
        for node in self.graph.nodes:
            self._check_node(node, index_params)
            stored |= self._stored_by(node)
            for item in node.params.get("index", ()) if node.prim in ("getitem", *SCATTERS) else ():
                if item[0] in ("a", "u"):
                    indexes.append(self._index_of(node, item))
        stored |= {v for v in self.graph.outputs if not isinstance(v, Literal)}
        stored -= set(self.graph.params)
        return NestPlan(frozenset(stored), tuple(dict.fromkeys(indexes)))

    def _check_params(self) -> set:
        index_params = set()
        for p in self.graph.params:
            a = p.aval
            if a.kind in ("float", "int"):
                continue
            if a.kind == "array" and a.shape is not None and a.dtype == "float64":
                continue
            if a.kind == "array" and a.shape is not None and len(a.shape) == 1 and \
                    a.dtype and a.dtype.startswith(("int", "uint")):
                index_params.add(p)
                continue
            raise _Refused(f"parameter {p.name} is {a}, not a float64 array, a 1-D integer index "
                           "array or a Python number")
        return index_params

    def _check_node(self, node, index_params):
        prim = node.prim
        for v in node.inputs:
            if not isinstance(v, Literal) and v not in self.producer and \
                    v not in self.graph.params:
                raise _Refused(f"it reads {v.name or 'an array'} ({v.aval}), a constant that "
                               "is not a parameter")
        if prim == "fused":
            for inner in node.regions[0].nodes:
                if inner.prim not in SCALAR_PRIMS or inner.params:
                    raise _Refused(numba_reasons.no_loop_form(inner, fused=True))
        elif not (prim in SCALAR_PRIMS or prim in REDUCTIONS or prim in SCATTERS or
                  prim in INLINE or prim == "reshape") or (prim in SCALAR_PRIMS and node.params):
            raise _Refused(numba_reasons.no_loop_form(node))
        for v in node.outputs:
            a = v.aval
            if _count_of_bools(node) and v not in self.graph.outputs:
                continue   # the kernel counts in float64: exact below 2^53
            if not (a.kind == "float" or (a.kind == "array" and a.shape is not None and
                                          a.dtype in ("float64", "bool"))):
                raise _Refused(f"it computes {prim} as {a}, not float64")
        if prim in ("getitem", *SCATTERS):
            self._check_index(node, index_params)
        elif any(v in index_params for v in node.inputs):
            raise _Refused(f"it computes {prim} of an index array, not an index")
        if prim in ("max", "min") and 0 in node.inputs[0].aval.shape:
            raise _Refused(f"it computes {prim} of an empty array")

    def _check_index(self, node, index_params):
        spec = node.params["index"]
        arrays = node.inputs[1:] if node.prim == "getitem" else node.inputs[
            (2 if node.prim == "index_add" else 1):]
        if any(item[0] not in _INDEX_TAGS for item in spec):
            raise _Refused(f"it indexes with {spec!r} (an Ellipsis or a mask)")
        spread = [item for item in spec if item[0] in ("a", "u")]
        if len(spread) > 1:
            raise _Refused("it indexes with more than one index array")
        if any(arrays[item[1]] not in index_params for item in spread):
            raise _Refused("an index array is computed, not a 1-D integer parameter")

    def _index_of(self, node, item):
        """(index parameter, length of the axis it indexes)."""
        spec = node.params["index"]
        arrays = node.inputs[1:] if node.prim == "getitem" else node.inputs[
            (2 if node.prim == "index_add" else 1):]
        target = node.params["shape"] if node.prim == "scatter_add" else node.inputs[0].aval.shape
        axis = sum(1 for it in spec[:spec.index(item)] if it[0] != "n")
        return arrays[item[1]], target[axis]

    def _stored_by(self, node) -> set:
        prim, out = node.prim, node.outputs[0]
        if prim in REDUCTIONS or prim in SCATTERS:
            return {out}
        if prim == "reshape":
            return {node.inputs[0]}
        if out.aval.kind == "float" or out.aval.shape == ():
            return {out}
        if out.aval.dtype == "bool" or not self._costly(out):
            return set()
        readers = self.readers.get(out, [])
        own = _size(out.aval.shape)
        if len(readers) > 1 or any(_loop_size(r) > own for r in readers):
            return {out}
        return set()

    def _costly(self, v) -> bool:
        """Whether ``v``'s inline expression calls a transcendental function."""
        node = self.producer.get(v)
        if node is None or v in self.stored or node.prim in REDUCTIONS or node.prim in SCATTERS:
            return False
        if node.prim in SCALAR_PRIMS and _is_transcendental(node.prim):
            return True
        if node.prim == "fused" and any(_is_transcendental(n.prim)
                                        for n in node.regions[0].nodes):
            return True
        return node.prim not in ("reshape",) and any(
            self._costly(i) for i in node.inputs if not isinstance(i, Literal))


def _count_of_bools(node) -> bool:
    """A sum of a boolean array (the ties of a ``max``'s adjoint): NumPy's is an integer."""
    a = node.outputs[0].aval
    return node.prim in ("sum", "sum_to") and node.inputs[0].aval.dtype == "bool" and \
        a.kind == "array" and a.shape is not None and a.dtype.startswith("int")


def _size(shape) -> int:
    n = 1
    for d in shape or ():
        n *= d
    return n


def _loop_size(node) -> int:
    """How many times the nest that reads through ``node`` evaluates its operands."""
    if node.prim in REDUCTIONS:
        return _size(node.inputs[0].aval.shape)
    if node.prim in SCATTERS:
        return _size(node.inputs[1 if node.prim == "index_add" else 0].aval.shape)
    return _size(node.outputs[0].aval.shape)
