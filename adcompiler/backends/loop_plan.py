"""Plan a gradient as gather loops over its outputs' elements (the numba backend's input).

Where a whole optimised graph is elementwise arithmetic on float64 arrays, step-1 slices of
them (``x[1:]``, ``x[:-1]``) and the adjoints of such slices (``scatter_add``, ``index_add``),
each output element ``out[j]`` is a scalar expression in input elements ``x[j + k]`` and scalar
inputs. :func:`plan` finds that expression for every ``j``: the range ``[0, n)`` of each output
is cut where a slice adjoint starts or stops contributing, and each piece gets one expression.
Rosenbrock's ``dx`` comes out as three pieces (``j = 0``, ``1 <= j < n-1``, ``j = n-1``); the
middle one reads ``x[j-1]``, ``x[j]`` and ``x[j+1]``. A loop over a piece writes only
``out[j]``, so its iterations are independent and may run in parallel, and no intermediate
array is ever stored: forward and adjoint values live in registers.

Terms are hashable tuples, so equal subexpressions are one term (the emitter binds a term used
twice to a local):

- ``("read", name, k)``: element ``j + k`` of the 1-D parameter ``name``;
- ``("scalar", name)``: the scalar parameter ``name``;
- ``("lit", value)``: a Python number;
- ``("op", prim, args)``: an elementwise primitive of terms.

A scalar output (the value of ``value_and_grad``, a ``jvp`` of a loss) is scalar arithmetic of
parameters, constants and leaves ``("reduce", prim, i)``: the ``np.sum`` or ``np.mean`` of a 1-D
elementwise value, whose elements loop ``i`` of ``Plan.reductions`` writes to a buffer. The
generated code then reduces that buffer with NumPy itself, so the value is summed in NumPy's
(pairwise) order: the same value as NumPy's for the same elements.

Arrays of more dimensions take the same loops over their elements in C order, where every array
the gradient reads or writes has the same shape (no broadcasting beyond a scalar) and nothing
slices them: the generated code passes each to the kernel as a flat view (``x.reshape(-1)``).
A ``reshape`` keeps the elements and their C order, so element ``j`` of ``x.reshape(s)`` is
element ``j`` of ``x``: it costs nothing in a loop.

Anything else (reductions inside a loop's expression, matmul, control flow, other dtypes,
broadcasting beyond a scalar, index arrays, slices with a step) makes :func:`plan` return
``Unplanned`` with the reason (:mod:`adcompiler.backends.numba_reasons`); counted ``for`` loops
are :mod:`adcompiler.backends.numba_steps`'s, which plans their bodies with :func:`_loop`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..ir import Literal, Value
from ..ir.primitives import ELEMENTWISE
from . import numba_reasons

MAX_TERMS = 2000   # past this, one loop body would be too large to compile quickly
MAX_PIECES = 16    # likewise for the pieces one output's slices cut it into

# Elementwise primitives a loop body computes (how: backends.numba_emit).
SCALAR_PRIMS = frozenset(row.name for row in ELEMENTWISE if row.numba)
_BOOL_PRIMS = frozenset({"greater", "greater_equal", "less", "less_equal", "equal",
                         "not_equal"})
_PASS = frozenset({"asarray", "to_float", "copy"})   # the same values, other containers


@dataclass(frozen=True)
class Piece:
    lo: int          # out[j] for lo <= j < hi is
    hi: int
    term: tuple      # this term


@dataclass(frozen=True)
class Loop:
    out: Value       # the graph output these pieces fill
    pieces: tuple    # Pieces, in order, covering [0, len(out))


@dataclass(frozen=True)
class Reduced:
    out: Value       # a scalar graph output
    term: tuple      # scalar terms and ("reduce", "sum" or "mean", index into Plan.reductions)


@dataclass(frozen=True)
class Plan:
    outputs: tuple     # a Loop or a Reduced per graph output, in order
    reductions: tuple  # Loops over the values a Reduced sums: each fills a buffer

    @property
    def loops(self) -> tuple:
        """Every loop: the outputs' and the reduction buffers'."""
        return tuple(o for o in self.outputs if isinstance(o, Loop)) + self.reductions


@dataclass(frozen=True)
class Unplanned:
    reason: str      # why the graph is not one set of loops (a sentence for a code comment)

    def __bool__(self):
        return False


class _Unsupported(Exception):
    pass


class _Split(Exception):
    """A condition on ``j`` changes inside the piece being built: cut the piece at ``at``."""

    def __init__(self, at: int):
        super().__init__(at)
        self.at = at


def plan(graph):
    """The graph's outputs as gather loops and reductions (a :class:`Plan`), or
    :class:`Unplanned`."""
    if not graph.outputs:
        return Unplanned("the graph has no output")
    if any(v != "ignore" for v in graph.errstate.values()):
        return Unplanned("it runs under np.errstate(...), which numba's loops do not honour")
    try:
        producers = _producers(graph)
        _check_params(graph)
        scalars = _Reductions(graph, producers)
        outputs = tuple(Reduced(out, scalars.at(out, None)) if out.aval.ndim == 0
                        else _loop(graph, producers, out) for out in graph.outputs)
    except _Unsupported as exc:
        return Unplanned(str(exc))
    if not scalars.loops and not any(isinstance(o, Loop) for o in outputs):
        return Unplanned("it has no array to loop over (Python floats and 0-d values only)")
    return Plan(outputs, tuple(scalars.loops))


def _producers(graph) -> dict:
    producers = {}
    for node in graph.nodes:
        if node.regions and node.prim != "fused":
            raise _Unsupported(numba_reasons.control_flow(node))
        if node.prim == "raise_if":
            raise _Unsupported("it checks its inputs (`if ...: raise ...`) while running")
        for v in node.outputs:
            producers[v] = node
    return producers


def size(aval) -> int:
    """The number of elements of an array aval (a loop runs over them in C order)."""
    return math.prod(aval.shape)


def _float64_array(a) -> bool:
    return a.kind == "array" and a.dtype == "float64" and a.shape is not None and len(a.shape) >= 1


def _check_params(graph):
    for p in graph.params:
        a = p.aval
        if a.kind in ("float", "int"):
            continue
        if not _float64_array(a):
            raise _Unsupported(numba_reasons.parameter(p))


def _loop(graph, producers, out, scope=None) -> Loop:
    """``out``'s pieces; ``scope``: a step plan's (``numba_steps.Scope``: the values it holds,
    the loop counter ``a[t]`` reads a row at, ``("row", name, k)``, or an element, ``("at",
    name)``)."""
    a = out.aval
    if not _float64_array(a):
        raise _Unsupported(f"output {out.name} is {a}, not a float64 array")
    todo, pieces, count = [(0, size(a))], [], 0
    while todo:
        lo, hi = todo.pop()
        if lo >= hi:
            continue
        ev = _Evaluator(graph, producers, lo, hi, scope)
        try:
            term = ev.at(out, 0)
        except _Split as cut:
            todo += [(cut.at, hi), (lo, cut.at)]
            continue
        count += len(ev.memo)
        if count > MAX_TERMS:
            raise _Unsupported(f"its loop bodies would hold more than {MAX_TERMS} terms")
        pieces.append(Piece(lo, hi, term))
    pieces = _merged(sorted(pieces, key=lambda p: p.lo))
    if len(pieces) > MAX_PIECES:
        raise _Unsupported(f"its slices cut output {out.name} into more than {MAX_PIECES} "
                           "loops")
    return Loop(out, tuple(pieces))


def _merged(pieces):
    """Adjacent pieces with the same term as one."""
    out = []
    for p in pieces:
        if out and out[-1].term == p.term and out[-1].hi == p.lo:
            out[-1] = Piece(out[-1].lo, p.hi, p.term)
        else:
            out.append(p)
    return out


class _Evaluator:
    """The term of ``v[j + k]`` for every ``j`` in ``[lo, hi)`` (one term for all of them)."""

    def __init__(self, graph, producers, lo, hi, scope=None):
        self.graph, self.producers, self.lo, self.hi = graph, producers, lo, hi
        self.params = {p: p.name for p in graph.params}
        self.counter = scope.counter if scope else None
        self.scoped = scope is not None   # a step plan's: arrays are 1-D, or 2-D read by rows
        if scope:
            self.params.update(scope.names)
        self.memo: dict = {}

    def at(self, v, k):
        if isinstance(v, Literal):
            return _lit(v.value)
        scalar = v.aval.ndim == 0
        key = (v, None if scalar else k)
        if key not in self.memo:
            self.memo[key] = self._scalar(v) if scalar else self._element(v, k)
        return self.memo[key]

    def _scalar(self, v):
        if v in self.params:
            return ("scalar", self.params[v])
        if v in self.graph.consts:
            return _lit(float(self.graph.consts[v]))
        node = self._producer(v)
        if node.prim in ("full", "broadcast_to"):
            return self.at(node.inputs[0], None)
        if node.prim == "getitem" and self._row(node, 1):
            return ("at", self.params[node.inputs[0]])
        return self._compute(node, None)

    def _element(self, v, k):
        n = size(v.aval)
        if not (0 <= self.lo + k and self.hi - 1 + k < n):
            raise _Unsupported(f"an element of {v.name or 'a value'} outside its range is read")
        if v in self.params:
            if self.scoped and v.aval.ndim != 1:
                raise _Unsupported(f"a loop reads {v.aval} {self.params[v]} other than by rows")
            return ("read", self.params[v], k)
        if v in self.graph.consts:
            raise _Unsupported("it reads an array constant")
        node = self._producer(v)
        prim = node.prim
        if prim == "getitem" and self._row(node):
            return ("row", self.params[node.inputs[0]], k)
        if prim == "concatenate":
            return self._joined(node, k)
        if prim == "getitem":
            return self.at(node.inputs[0], k + self._slice_start(node, node.inputs[0]))
        if prim == "reshape":   # the same elements in the same C order: element j is x's j
            return self.at(node.inputs[0], k)
        if prim == "scatter_add":
            return self._scattered(node, node.inputs[0], k, _lit(0.0))
        if prim == "index_add":
            return self._scattered(node, node.inputs[1], k, self.at(node.inputs[0], k))
        if prim in ("zeros", "zeros_like"):
            return _lit(0.0)
        if prim in ("ones", "ones_like"):
            return _lit(1.0)
        if prim in ("full", "broadcast_to"):
            return self._broadcast(node.inputs[0], v, k)
        return self._compute(node, k)

    def _producer(self, v):
        node = self.producers.get(v)
        if node is None:
            raise _Unsupported(f"{v.name or 'a value'} is defined inside a region")
        return node

    def _compute(self, node, k):
        """An elementwise node (or a fused chain of them) at ``j + k`` (None: scalars)."""
        if node.prim == "fused":
            (block,) = node.regions
            inner = dict(zip(block.params, node.inputs))
            return self._block(block, inner, k)
        if node.prim in _PASS or (node.prim == "astype"
                                  and node.params.get("dtype") == "float64"):
            return self._operand(node.inputs[0], node.out, k)
        if node.prim not in SCALAR_PRIMS or node.params:
            raise _Unsupported(numba_reasons.no_loop_form(node))
        if node.out.aval.dtype not in ("float64", "bool") or (
                node.out.aval.dtype == "bool") != (node.prim in _BOOL_PRIMS):
            raise _Unsupported(f"{node.prim} gives {node.out.aval}, not float64")
        return _op(node.prim, tuple(self._operand(x, node.out, k) for x in node.inputs))

    def _block(self, block, inner, k):
        """A fused block's result: its params stand for the fused node's inputs."""
        local = {}

        def operand(x, out):
            if isinstance(x, Value) and x in local:
                return local[x]
            return self._operand(inner.get(x, x), out, k)
        for n in block.nodes:
            if n.prim not in SCALAR_PRIMS or n.params:
                raise _Unsupported(numba_reasons.no_loop_form(n, fused=True))
            local[n.out] = _op(n.prim, tuple(operand(x, n.out) for x in n.inputs))
        (result,) = block.outputs
        return operand(result, result)

    def _operand(self, x, out, k):
        """Input ``x`` of an elementwise node giving ``out``: the same shape, or a scalar."""
        if isinstance(x, Literal):
            return _lit(x.value)
        if x.aval.ndim == 0:
            return self.at(x, None)
        if k is None or x.aval.shape != out.aval.shape:
            raise _Unsupported(f"it broadcasts {x.aval} against {out.aval}")
        if x.aval.dtype not in ("float64", "bool"):
            raise _Unsupported(f"it reads {x.aval}, not float64")
        return self.at(x, k)

    def _broadcast(self, x, v, k):
        if isinstance(x, Literal) or x.aval.ndim == 0:
            return self.at(x, None) if isinstance(x, Value) else _lit(x.value)
        if x.aval.shape != v.aval.shape:
            raise _Unsupported(f"it broadcasts {x.aval} to {v.aval}")
        return self.at(x, k)

    def _slice_start(self, node, base) -> int:
        """Where ``base[index]`` starts, for a step-1 slice of a 1-D ``base``."""
        index = node.params.get("index")
        if len(node.inputs) != (2 if node.prim == "index_add" else 1) or not index \
                or len(index) != 1 or index[0][0] != "s" or index[0][3] not in (None, 1):
            raise _Unsupported(f"it indexes with {index}, not one step-1 slice")
        if not isinstance(base, Value) or base.aval.ndim != 1:
            raise _Unsupported("it slices a value that is not 1-D")
        return slice(*index[0][1:]).indices(base.aval.shape[0])[0]

    def _row(self, node, ndim=2) -> bool:
        """Whether ``node`` is ``a[t]``: a row at the step loop's counter of a 2-D array it
        holds (``ndim=1``: an element of a 1-D one, a scalar: ``("at", name)``)."""
        base = node.inputs[0]
        return (self.counter is not None and node.params.get("index") == (("a", 0),)
                and len(node.inputs) == 2 and node.inputs[1] is self.counter
                and base in self.params and base.aval.ndim == ndim
                and base.aval.dtype == "float64")

    def _joined(self, node, k):
        """Element ``j + k`` of a 1-D ``np.concatenate`` (``np.roll`` is one of two slices):
        the piece it falls in, cut where it passes from one input to the next."""
        if node.params.get("axis", 0) != 0 or node.out.aval.ndim != 1 or any(
                isinstance(x, Literal) or x.aval.ndim != 1 or x.aval.dtype != "float64"
                for x in node.inputs):
            raise _Unsupported("it concatenates values that are not 1-D float64 arrays")
        lo, hi, start = self.lo + k, self.hi + k, 0
        for x in node.inputs:
            stop = start + x.aval.shape[0]
            if lo < stop < hi:
                raise _Split(stop - k)
            if start <= lo < stop:
                return self.at(x, k - start)
            start = stop
        raise _Unsupported("it reads past the end of a concatenation")

    def _scattered(self, node, g, k, base):
        """``base`` plus ``g`` where ``j + k`` falls in the slice ``g`` was written to."""
        out = node.out
        start = self._slice_start(node, out)
        stop = start + g.aval.shape[0]
        lo, hi = self.lo + k, self.hi + k          # the indices of out this piece reads
        for edge in (start, stop):
            if lo < edge < hi:
                raise _Split(edge - k)
        if start <= lo and hi <= stop:
            return _add(base, self.at(g, k - start))
        return base


class _Reductions(_Evaluator):
    """Terms of scalar outputs, where a sum or mean of a whole array becomes a loop of its own."""

    def __init__(self, graph, producers):
        super().__init__(graph, producers, 0, 0)
        self.loops: list = []      # Plan.reductions
        self.index: dict = {}      # reduced value -> its position in loops

    def _scalar(self, v):
        node = self.producers.get(v)
        if node is None or node.prim not in ("sum", "mean"):
            return super()._scalar(v)
        (x,) = node.inputs
        whole = isinstance(x, Value) and x.aval.ndim >= 1 and (
            x.aval.ndim == 1 or node.params.get("axis") is None)   # every axis of x
        if set(node.params) - {"axis"} or not whole:
            raise _Unsupported(f"it computes {node.prim} of {getattr(x, 'aval', x)} with "
                               f"{node.params}, not of a whole array")
        if x not in self.index:
            self.index[x] = len(self.loops)
            self.loops.append(_loop(self.graph, self.producers, x))
        return ("reduce", node.prim, self.index[x])


def _lit(value):
    return ("lit", value)


def _op(prim, args):
    return ("op", prim, args)


def _add(a, b):
    if a == ("lit", 0.0):
        return b
    return _op("add", (a, b))
