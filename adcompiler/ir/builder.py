"""The builder appends nodes to a graph and is the ``ops`` namespace templates see on IR values.

Invariant: every node it appends has inputs that are already defined in the graph (or literals)
and an output aval computed by :func:`adcompiler.ir.shapes.infer`. While a builder is active
(``with builder:``), arithmetic on :class:`Value` objects emits into it.
"""

from __future__ import annotations

import contextlib
from typing import Optional

import numpy as np

from .graph import ACTIVE, Aval, Graph, Literal, Node, Value
from .primitives import MATH_NAMES, PRIMS, last_writes, split_call, writes_once
from .shapes import infer

_EXPANDING = (("n",), ("e",), ("s", None, None, None))  # None, ..., and a full slice ":"


class NeedsShape(Exception):
    """A template asked for a shape the compiler does not know (only specialised code has it)."""


class Builder:
    """Emit nodes into ``graph``; ``source`` tags each node with the user's line it came from."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.source: Optional[str] = None
        self.phase = "forward"
        self.target: list = graph.nodes  # where nodes go: the graph's body or a block's
        self.enclosing: list = []  # the node lists `into` left, innermost last
        self.counters: dict = {}  # a for loop's counter -> its (first, last) value
        self._tokens = []

    def __enter__(self):
        self._tokens.append(ACTIVE.set(self))
        return self

    def __exit__(self, *exc):
        ACTIVE.reset(self._tokens.pop())

    # ---- emitting -----------------------------------------------------------------------------
    def atom(self, x):
        """A node input: a Value as it is, a Python scalar as a Literal."""
        if isinstance(x, (Value, Literal)):
            return x
        if isinstance(x, (bool, int, float)):
            return Literal(x)
        if isinstance(x, np.generic) and x.ndim == 0:
            return Literal(x.item())
        if isinstance(x, (list, tuple)):
            return self.sequence(x)
        raise TypeError(f"cannot use {type(x).__name__} as an IR input")

    def sequence(self, x) -> Value:
        """A list or tuple given where an array goes (``np.dot(W, x)`` of a module-level list):
        ``np.asarray`` of it, a constant; one holding traced values is the stack of its items
        (nested lists row by row), as NumPy builds it. Ragged ones raise NumPy's ValueError."""
        if not _holds_value(x):
            return self.constant(np.asarray(x))
        items = [self.atom(v) for v in x]
        if len({i.aval.known_shape for i in items}) > 1:
            raise ValueError("setting an array element with a sequence: the items have "
                             "different shapes")
        return self.stack(items)

    def emit(self, prim: str, inputs, params=None, name: Optional[str] = None) -> Value:
        params = dict(params or {})
        atoms = tuple(self.atom(x) for x in inputs)
        avals = [a.aval for a in atoms]
        if (self.phase != "forward" and prim in MATH_NAMES and not params
                and all(a.is_scalar for a in avals)):
            params["py"] = MATH_NAMES[prim]  # derived code on Python floats stays in math
        literals = [a.value if isinstance(a, Literal) else None for a in atoms]
        aval = infer(prim, avals, literals, params)
        out = Value(aval)
        if name:
            self.graph.name_value(out, name)
        self.target.append(Node(prim, atoms, params, (out,), self.source, self.phase))
        return out

    @contextlib.contextmanager
    def into(self, block):
        """Emit into ``block`` (a Block) for the duration of the ``with``."""
        saved, self.target = self.target, block.nodes
        self.enclosing.append(saved)
        try:
            yield block
        finally:
            self.target = self.enclosing.pop()

    # ---- the ops namespace for templates ------------------------------------------------------
    def __getattr__(self, prim):
        if prim not in PRIMS:
            raise AttributeError(prim)
        return lambda *args, **params: self.emit(prim, *split_call(prim, args, params))

    def shape(self, x):
        shape = _aval(x).known_shape
        if shape is None:
            raise NeedsShape(x)
        return shape

    def ndim(self, x):
        return len(self.shape(x))

    def size(self, x):
        return int(np.prod(self.shape(x)))

    def dtype(self, x):
        return _aval(x).dtype

    def unbroadcast(self, g, x):
        """``g`` summed back to ``x``'s shape (nothing is emitted when the shapes agree)."""
        target = self.shape(x)
        if _aval(g).known_shape == target:
            return g
        return self.emit("sum_to", (g,), {"shape": target})

    def scatter_add(self, g, arrays, shape, index):
        """``g`` added into zeros of ``shape`` at ``index``; a reshape where the index only
        adds axes (``x[:, None]``, ``x[..., None]``): every entry of ``x`` is read once, in
        order, so the scatter is ``g`` in ``x``'s shape (no zeros to fill, no copy)."""
        if all(item in _EXPANDING for item in index) and _aval(g).known_shape is not None:
            return self.emit("reshape", (g,), {"shape": tuple(shape)})
        return self.emit("scatter_add", (g, *arrays), {"shape": shape, "index": index})

    def setitem(self, x, v, arrays, index):
        return self.emit("setitem", (x, v, *arrays), {"index": index})

    def getitem(self, x, arrays, index):
        if _aval(x).kind == "list":  # one element of a while loop's stack: index (k,)
            ((tag, k),) = index
            return self.emit("list_get", (x, arrays[k] if tag == "a" else k))
        return self.emit("getitem", (x, *arrays), {"index": index})

    def last_writes(self, x, arrays, index):
        """The mask of the writes ``x[index] = v`` keeps: None where every write stays (scalar
        indices, a window's, constant ones without a repeat), a constant for other constant
        indices, else a node that finds it at run time."""
        if writes_once(index, [_aval(a).ndim for a in arrays]):
            return None
        shape = _aval(x).known_shape
        if shape is None or not all(a in self.graph.consts for a in arrays):
            return self.emit("last_writes", (x, *arrays), {"index": index})
        values = [self.graph.consts[a] for a in arrays]
        kept = last_writes(np.broadcast_to(0.0, shape), *values, index=index)
        if kept.all():
            return None
        name = "kept_" + "_".join(a.name or "index" for a in arrays)
        mask = self.graph.name_value(Value(Aval.of(kept)), name)
        self.graph.consts[mask] = kept
        return mask

    def constant(self, array: np.ndarray, name: str = "const") -> Value:
        """A graph constant holding ``array`` (the user's, or one made while compiling), bound
        under ``name`` in the generated code's namespace."""
        v = self.graph.name_value(Value(Aval.of(array)), name)
        self.graph.consts[v] = array
        return v

    def concatenate(self, xs, axis=0):
        return self.emit("concatenate", tuple(xs), {"axis": axis})

    def stack(self, xs, axis=0):
        return self.emit("stack", tuple(xs), {"axis": axis})


def _holds_value(x) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_holds_value(v) for v in x)
    return isinstance(x, Value)


def _aval(x) -> Aval:
    return x.aval if isinstance(x, (Value, Literal)) else Aval.of(x)
