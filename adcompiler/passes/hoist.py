"""Hoisting of per-row products out of loops: a loop's ``x[k] @ W`` becomes one product before it.

The forward loop of ``h = tanh(h @ Wh + x[t] @ Wx + b)`` multiplies one row of ``x`` by the
same ``Wx`` on every iteration: T small matrix products (each a BLAS call OpenBLAS may spread
over threads, paying their synchronisation T times). Multiplying every row at once before the
loop, ``xWx = reshape(reshape(x, (T * B, d)) @ Wx, (T, B, h))``, and reading ``xWx[t]`` in the
loop does the same arithmetic in one call, as an expert writes it by hand; ``+ b`` then goes
with it (``xWx_b = xWx + b``), so the loop reads one precomputed row per step. The 2-D product
is the faster spelling: for the RNN's (50, 32, 64) @ (64, 128), 0.22 ms against 0.43 ms for
NumPy's broadcast 3-D @ 2-D (one BLAS call per row) with the default two threads, 0.44 against
0.43 ms with one. The RNN gradient: 4.95 -> 4.77 ms a call with two threads (median of 25
rounds 5.14 -> 4.97), no change beyond noise with one (5.12 -> 5.07 ms; 5.56 -> 5.65 ms).

Pattern, in the body of a ``for`` loop (a ``loop`` node, at any depth) of static trip count
``n`` and counter ``k``, among the body's own nodes (not those of its branches or inner loops):

- ``r @ W`` with ``r = s[k]`` (the counter itself: ``range(n)``, start 0, step 1) a row of an
  array ``s`` of first dimension ``n``, and ``s`` and ``W`` (2-D) defined outside the loop:
  becomes ``SW[k]`` with ``SW`` computed before the loop;
- ``q op c`` or ``c op q`` (``op`` one of ``+ - *``) with ``q = SW[k]`` a hoisted row and ``c``
  loop-invariant, broadcasting against the row without changing its shape or dtype: becomes
  ``SWc[k]`` with ``SWc = SW op c`` before the loop;
- ``(p + q) + c`` (or ``(q + p) + c``, ``c + (p + q)``) with the inner sum read only there:
  becomes ``p + SWc[k]``, ``SWc = SW + c`` (``t1 + t2 + b`` parses as ``(t1 + t2) + b``).

Invariants: every hoisted row equals what the loop computed, except that the last pattern
adds the same three terms in another order (rounding may differ; nothing else is
reassociated); a hoisted value reads only values defined before the loop, so it is computed
once whether the loop runs forwards or (an adjoint) backwards. Rows indexed otherwise
(``x[t + 1]``, a stepped or reversed ``range``) and trip counts other than ``s``'s first
dimension are left in the loop. Plain code (read again by the frontend) is never hoisted:
the frontend would read the hoisted form back, but gain nothing, since the final (not plain)
compilation of a higher derivative runs this pass on the same loops.
"""

from __future__ import annotations

from ..ir import Literal, Node, Value, walk
from ..ir.shapes import infer
from .rewrite import Walker, substitute, use_counts

_ROW = (("a", 0),)                          # the getitem index of ``s[k]``
_ELEMENTWISE = ("add", "subtract", "multiply")


def hoist_loop_invariant_rows(graph):
    subst = {}
    _WALK.graph(graph, (graph, subst))
    return substitute(graph, subst)


def _hoist_before(node, scope) -> list:
    """``node``, a loop (its inner loops done first: the walk visits blocks before their
    owner) with its hoisted values put before it; fills ``subst`` with the loops' stacks of
    hoisted rows, which are the hoisted arrays."""
    graph, subst = scope
    if node.prim == "loop" and isinstance(node.inputs[0], Literal):
        return _Loop(graph, node).hoist(subst) + [node]
    return (node,)


_WALK = Walker(visit=_hoist_before)


class _Loop:
    """One loop's rewrite: ``stacks`` maps a body value to the array of its rows made before
    the loop; ``before`` collects the nodes that make them."""

    def __init__(self, graph, loop):
        self.graph, self.loop = graph, loop
        self.body = loop.regions[0]
        self.n, self.k = loop.inputs[0].value, self.body.params[0]
        self.inside = {v for nd in walk(self.body.nodes) for v in nd.outputs}
        self.inside.update(p for nd in walk([loop]) for b in nd.regions for p in b.params)
        self.reads = use_counts(self.body)
        self.producer = {v: nd for nd in self.body.nodes for v in nd.outputs}
        self.stacks, self.before = {}, []

    def invariant(self, x) -> bool:
        return isinstance(x, Literal) or (isinstance(x, Value) and x not in self.inside)

    def hoist(self, subst) -> list:
        """The nodes to put before the loop, having rewritten its body. A residual stack of
        a hoisted row (``saved[k] = t2``, ``t2 = x_W[k]``) is the hoisted array itself:
        ``subst`` maps it there (DCE then drops the stack)."""
        new = []
        for node in self.body.nodes:
            replaced = self._rewrite(node)
            self.producer.update((v, nd) for nd in replaced for v in nd.outputs)
            new.extend(replaced)
        self.body.nodes = new
        carried = len(self.loop.outputs) - self.loop.params.get("stacked", 0)
        for x, out in zip(self.body.outputs[carried:], self.loop.outputs[carried:]):
            if x in self.stacks and out.aval == self.stacks[x].aval:
                subst[out] = self.stacks[x]
        return self.before

    def _rewrite(self, node) -> list:
        """The nodes replacing ``node`` in the body."""
        if node.prim == "matmul":
            s = self._matmul(node)
            if s is None:
                return [node]
            name = _stack_name(node.out, f"{_base(s)}_{_base(node.inputs[1])}")
            return [self._row(self._product(s, node, name), node.out, node, name)]
        if node.prim not in _ELEMENTWISE or node.regions or node.params:
            return [node]
        for i in (0, 1):
            q, c = node.inputs[i], node.inputs[1 - i]
            if q in self.stacks and self._fits(q, c, node):
                stack = self._emit(node.prim, self._ordered(self.stacks[q], c, i), node)
                name = _stack_name(node.out, f"{self.stacks[q].name}_{_base(c)}")
                return [self._row(stack, node.out, node, name)]
        return self._reassociate(node)

    def _matmul(self, node):
        """``s`` where ``node`` is ``s[k] @ W`` of the pattern, else None."""
        r, w = node.inputs
        row = self.producer.get(r)
        if (row is None or row.prim != "getitem" or row.params.get("index") != _ROW
                or row.inputs[1:] != (self.k,) or not self.invariant(w)):
            return None
        s = row.inputs[0]
        if not self.invariant(s) or s.aval.kind != "array" or w.aval.kind != "array":
            return None
        shape, wshape = s.aval.shape, w.aval.shape
        if shape is None or wshape is None or len(shape) < 2 or len(wshape) != 2:
            return None
        return s if shape[0] == self.n else None

    def _fits(self, q, c, node) -> bool:
        """Whether ``q op c`` keeps ``q``'s row (shape and dtype) with ``c`` loop-invariant."""
        if not self.invariant(c) or node.out.aval != q.aval:
            return False
        cshape = c.aval.known_shape
        if cshape is None or len(cshape) > len(q.aval.shape):
            return False
        lit = c.value if isinstance(c, Literal) else None
        stacked = infer(node.prim, [self.stacks[q].aval, c.aval], [None, lit], node.params)
        return stacked == self.stacks[q].aval

    def _reassociate(self, node) -> list:
        """``(p + q) + c`` as ``p + (q + c)``, the sum ``q + c`` of a hoisted row."""
        if node.prim != "add":
            return [node]
        for i in (0, 1):
            inner, c = self.producer.get(node.inputs[i]), node.inputs[1 - i]
            if (inner is None or inner.prim != "add" or self.reads.get(inner.out) != 1
                    or inner.out.aval != node.out.aval):
                continue
            for j in (0, 1):
                q, p = inner.inputs[j], inner.inputs[1 - j]
                if q in self.stacks and self._fits(q, c, node):
                    stack = self._emit("add", (self.stacks[q], c), node)
                    row = self._row(stack, Value(q.aval), node,
                                    f"{self.stacks[q].name}_{_base(c)}")
                    summed = Node("add", (p, row.out), {}, node.outputs, node.source,
                                  node.phase)
                    return [row, summed]
        return [node]

    # ---- building ---------------------------------------------------------------------------
    @staticmethod
    def _ordered(stack, c, i):
        return (stack, c) if i == 0 else (c, stack)

    def _emit(self, prim, inputs, like, params=None) -> Value:
        """A node before the loop: ``prim[params](*inputs)``, tagged as ``like``."""
        params = params or {}
        avals = [x.aval for x in inputs]
        lits = [x.value if isinstance(x, Literal) else None for x in inputs]
        v = Value(infer(prim, avals, lits, params))
        self.before.append(Node(prim, tuple(inputs), params, (v,), like.source, like.phase))
        return v

    def _product(self, s, node, name) -> Value:
        """``s @ W`` for every row at once, as one 2-D product (see the module docstring),
        named ``<name>_flat`` (a name keeps the emitter from inlining it: it has a buffer)."""
        w = node.inputs[1]
        *lead, d = s.aval.shape
        if len(lead) == 1:
            return self._emit("matmul", (s, w), node)
        rows = 1
        for size in lead:
            rows *= size
        flat = self._emit("reshape", (s,), node, {"shape": (rows, d)})
        prod = self.graph.name_value(self._emit("matmul", (flat, w), node), name + "_flat")
        return self._emit("reshape", (prod,), node, {"shape": (*lead, w.aval.shape[1])})

    def _row(self, stack, out, like, name) -> Node:
        """``out = stack[k]`` in the body: ``out`` is now a hoisted row of ``stack``."""
        self.graph.name_value(stack, name)
        self.stacks[out] = stack
        return Node("getitem", (stack, self.k), {"index": _ROW}, (out,), like.source,
                    like.phase)


def _stack_name(out, name) -> str:
    """``zs`` for the rows of a user's ``z``; for a temporary's, ``name`` (``x_Wx``: what it
    reads)."""
    return _base(out) + "s" if out.name else name


def _base(x) -> str:
    """The user's name behind a value (``dWx`` for ``dWx_2``); ``c`` for a literal."""
    if not isinstance(x, Value) or not x.name:
        return "c"
    head, _, tail = x.name.rpartition("_")
    return head if head and tail.isdigit() else x.name
