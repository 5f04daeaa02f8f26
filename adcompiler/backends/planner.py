"""Memory planning: large elementwise results go into buffers reused within and across calls.

The peers' figures (shared/PEER_FIGURES.md) show why: NumPy's fresh 1-10 MB temporaries are
returned to the OS after every call and page-faulted back on the next, and that costs more
than the arithmetic; ufuncs writing into reused ``out=`` buffers remove it. Smaller arrays pay
too: glibc gives the heap's top back once more than 128 KiB is free there, so a few 32-128 KiB
temporaries freed together at a call's end fault back in on the next call. Logistic regression
(10,000-element vectors) took 65 page faults and 1.5x the hand-written time per call with a
128 KiB threshold, none and 1.02x with :data:`MIN_BYTES` at 32 KiB, where an ``out=`` costs
well under a tenth of the operation. A loop's residual stacks (``hs[t] = h`` in the forward
loop, ``hs[k]`` read back in the adjoint loop) are the largest such arrays: the RNN workload
faulted in 800 pages a call for them. So are the row arrays the hoisting pass makes
(:mod:`adcompiler.passes.hoist`: ``x_Wx = reshape(x) @ Wx`` read as ``x_Wx[t]`` in a loop):
879 faults a call for the RNN's two, none once :func:`row_arrays` pools them.

A 2-D product goes the same way (``np.matmul(t2, t3.T, out=_buf0)``: the Gaussian mixture's
(10^5, 16) distances and their adjoint, 760 page faults a call before, none after), and so does
a batch of products. A float ``where`` in a chain goes into the buffer of its third operand
(:func:`where_over`). The transformer block's gradient: 1280 page faults a call before these,
the views and the products inlined into a ufunc (``backends/buffered.py``), 576 after.

Invariants: an elementwise value (or a 2-D product) is planned only if it cannot escape:
neither it nor any value that may hold its array (a slot it starts, a branch's result...) is
returned; it is not yielded (phis, carried values, residual stacks), not the initial value of a
slot its loop updates entry by entry, not updated in place (nor any view of it), and where it is
viewed no view escapes either (:func:`_viewed_safely`). A loop's stack is planned
(:func:`pooled_stacks`) when none of its aliases (rows, views of them, slots) is returned; so is a row array
(:func:`row_arrays`: an elementwise or 2-D product result read by rows in a loop) when none of
its aliases escapes or is updated in place. A buffer holds one value at a time and is released
only once no value that may hold it is read again (:func:`buffer_is_dead`): liveness is over
aliases, not names (a loop's ``dacc_1 = dacc_3`` keeps ``dacc_3``'s buffer alive while
``dacc_1`` is read). The buffers of one call are taken from a pool, so concurrent or
re-entrant calls never share them.
"""

from __future__ import annotations

import numpy as np

from ..ir import Literal, Value, sizing, walk
from ..ir.aliasing import updated_inits
from ..ir.primitives import ELEMENTWISE, PRIMS

MIN_BYTES = 1 << 15   # 32 KiB: see the module docstring
_IN_PLACE_READERS = {"index_add", "setitem"}
_VIEW_READERS = {"transpose", "reshape", "expand_dims", "squeeze", "broadcast_to", "getitem",
                 "asarray"}
# elementwise primitives whose NumPy function takes out= (ufuncs, and np.clip)
UFUNCS = {row.name for row in ELEMENTWISE if row.takes_out}


def large(aval) -> bool:
    return (aval.kind == "array" and aval.shape is not None
            and sizing.elements(aval.shape) * np.dtype(aval.dtype).itemsize >= MIN_BYTES)


def buffered_chains(graph) -> list:
    """Top-level fused chains computed op by op into buffers: every large one. Its result goes
    into a buffer only if :func:`plannable_nodes` lists it, else into a fresh array."""
    return [n for n in graph.nodes if n.prim == "fused" and _computable_into_buffer(n)
            and large(n.outputs[0].aval)]


def plannable_nodes(graph, sharing, rows=frozenset()) -> list:
    """Top-level elementwise nodes (fused or single) whose result can live in a buffer, and
    the nodes of ``rows`` (:func:`row_arrays`, which the emitter finds once). None of a
    planned value's aliases (``sharing``, the emitter's
    :class:`~adcompiler.backends.inplace.Sharing`) is returned: a while loop that runs no
    iteration returns its initial value, and the caller's gradient would be the pool's
    buffer, overwritten by the next call."""
    readers = {}
    for node in walk(graph.nodes):
        for x in node.inputs:
            readers.setdefault(x, []).append(node)
    returned = {x for x in graph.outputs if isinstance(x, Value)}
    escaping = returned | updated_inits(graph)  # a loop updates its slot in place (`dy[i] = 0.0`)
    for node in walk(graph.nodes):
        escaping.update(x for b in node.regions for x in b.outputs if isinstance(x, Value))
    out = []
    for node in graph.nodes:
        if node.outputs and node.outputs[0] in rows:
            out.append(node)
            continue
        if not (_computable_into_buffer(node) or _product_into_buffer(node)):
            continue
        v = node.outputs[0]
        if v in escaping or not large(v.aval):
            continue
        if not _viewed_safely(v, sharing.aliases(v), readers, returned, escaping):
            continue
        out.append(node)
    return out


def _viewed_safely(v, aliases, readers, returned, escaping) -> bool:
    """Whether no value that may hold ``v``'s array is returned or updated in place, and,
    where ``v`` is viewed (``t5.T @ dt2``, ``p.transpose(0, 2, 1) @ datt``), no view escapes
    (yielded, carried, a loop's initial value): the buffer's liveness is over those aliases
    (:func:`buffer_is_dead`). Views were refused whole before: the transformer block's ReLU
    output and softmax, each a fresh (128, 512) / (4, 128, 128) array a call, read by a
    transposed product (128 page faults each)."""
    if any(a in returned for a in aliases):
        return False
    viewed = any(r.prim in _VIEW_READERS for r in readers.get(v, ()))
    if viewed and any(a in escaping for a in aliases):
        return False
    return not any(r.prim in _IN_PLACE_READERS and r.inputs[0] is a
                   for a in aliases for r in readers.get(a, ()))


def viewed_products(planned, live) -> set:
    """Planned products that the emitter would inline into a view of them, ``q = (a @
    Wq).reshape((128, 4, 32)).transpose((1, 0, 2))``: each is computed into its buffer by a
    statement of its own instead, ``t1 = np.matmul(a, Wq, out=_buf2)`` (inlined, it was a fresh
    array each call: the transformer block's q, k and v, 32 page faults each). Taking them out
    of ``live.inlined`` (:class:`~adcompiler.backends.liveness.Liveness`) keeps its reads where
    they were counted, at the view: their inputs only live longer."""
    return {n.outputs[0] for n in planned
            if n.prim == "matmul" and n.outputs[0] in live.inlined
            and getattr(live.consumer.get(n.outputs[0]), "prim", None) in _VIEW_READERS}


def row_arrays(graph, sharing) -> set:
    """Top-level large results of a ufunc or a 2-D product (``np.matmul(a, W, out=_buf0)``)
    that a loop body reads by rows (a ``getitem`` of one of its aliases), or that only
    feed other row arrays (``x_Wx_flat``, read by ``x_Wx + b`` through a reshape), none of
    whose aliases escapes: returned, yielded by a block, a loop's initial value, or updated
    in place. Their buffers are released like a stack's (:func:`buffer_is_dead`)."""
    readers, in_loops = {}, set()
    escaping = {x for x in graph.outputs if isinstance(x, Value)}
    for node in walk(graph.nodes):
        for x in node.inputs:
            readers.setdefault(x, []).append(node)
        escaping.update(x for b in node.regions for x in b.outputs if isinstance(x, Value))
        if node.prim in ("loop", "while"):
            escaping.update(node.inputs)
            in_loops.update(n for b in node.regions for n in walk(b.nodes))
        if node.prim in _IN_PLACE_READERS:
            escaping.add(node.inputs[0])
    found = set()
    for node in reversed(graph.nodes):  # a row array's readers come after it
        if not (_computable_into_buffer(node) or _product_into_buffer(node)):
            continue
        v = node.outputs[0]
        aliases = sharing.aliases(v)
        if not large(v.aval) or any(a in escaping for a in aliases):
            continue
        reads = [r for a in aliases for r in readers.get(a, ())]
        rows = any(r in in_loops and r.prim == "getitem" for r in reads)
        users = [r for r in reads if not any(o in aliases for o in r.outputs)]
        if rows or (users and all(r.outputs[0] in found for r in users)):
            found.add(v)
    return found


def _product_into_buffer(node) -> bool:
    """A product of two arrays of at least two dimensions (a batch of matrices too: the
    attention scores' adjoint ``dp = datt @ v.transpose(0, 2, 1)``, (H, S, S)), written
    ``np.matmul(a, b, out=...)``, square ones too (the emitter never cuts a product over
    threads as it does a large ufunc: :meth:`~adcompiler.backends.buffered.BufferedEmission.
    ufunc_into`)."""
    if node.prim != "matmul" or node.regions or node.params:
        return False
    shapes = [x.aval.shape if isinstance(x, Value) and x.aval.kind == "array" else None
              for x in node.inputs]
    return all(s is not None and len(s) >= 2 for s in shapes)


def pooled_stacks(graph, sharing) -> set:
    """Stacked outputs of top-level ``for`` loops that can live in pooled buffers: large
    arrays none of whose aliases (``sharing.aliases``: rows read back, views of them, the
    slots they flow into) is returned. The emitter releases such a buffer (and a
    :func:`row_arrays` one) only once no alias is read again (:func:`stack_is_dead`).
    ``sharing`` is the emitter's :class:`~adcompiler.backends.inplace.Sharing`."""
    returned = {x for x in graph.outputs if isinstance(x, Value)}
    found = set()
    for node in graph.nodes:
        m = node.params.get("stacked", 0) if node.prim == "loop" else 0
        for s in node.outputs[len(node.outputs) - m:]:
            if (s.aval.kind == "array" and large(s.aval)
                    and not any(a in returned for a in sharing.aliases(s))):
                found.add(s)
    return found


def stack_rows(graph) -> dict:
    """Values a ``for`` loop stacks that are computed straight into their stack's row:
    ``h = np.tanh(t1 + t2, out=hs[t])`` instead of a fresh ``h`` copied by ``hs[t] = h``.
    Each maps to (its stack, the loop's counter param). Only a float array made by a ufunc
    (or a fused chain of them) at the body's top level, of its inputs' dtype (so ``out=``
    casts nothing). ``h`` is then a view of the stack: :class:`~adcompiler.backends.inplace.
    Sharing` takes it as one (no update in place while the stack is read, no pooled stack
    while ``h`` may be returned). The RNN's gradient: 4.8 -> 4.4 ms, with the adjoint loop's
    ``dt2s[t] = dt2`` written the same way."""
    rows = {}
    for node in walk(graph.nodes):
        if node.prim != "loop":
            continue
        body = node.regions[0]
        m = node.params.get("stacked", 0)
        made = {n.outputs[0]: n for n in body.nodes if len(n.outputs) == 1}
        kept = body.outputs[len(body.outputs) - m:]
        for stack, x in zip(node.outputs[len(node.outputs) - m:], kept):
            producer = made.get(x) if isinstance(x, Value) else None
            if (producer is not None and kept.count(x) == 1 and stack.aval.kind == "array"
                    and _computable_into_buffer(producer) and _ufuncs_only(producer)
                    and _same_float(producer)):
                rows[x] = (stack, body.params[0])
    return rows


def where_over(node, made) -> bool:
    """A float ``where(c, a, b)`` in a chain that computes ``b`` (in ``made``) of the result's
    shape and dtype: written into ``b``'s buffer as ``np.positive(a, out=b_buf, where=c)``,
    one masked pass (np.where has no ``out=``). maximum's adjoint ``where(x == y, g * 0.5, g *
    (x > y))``, a ReLU's, made three fresh (128, 512) arrays a call in the transformer block:
    416 page faults, 0.46 ms against 0.1 ms for its five operations into buffers."""
    if node.prim != "where" or len(node.inputs) != 3:
        return False
    c, a, b = node.inputs
    out = node.outputs[0].aval
    cond = isinstance(c, Value) and c.aval.kind == "array" and c.aval.dtype == "bool"
    value = (isinstance(a, Literal) and type(a.value) in (int, float)) or (
        isinstance(a, Value) and a.aval.is_float)
    return out.is_float and cond and value and b in made and b.aval == out


def _same_float(node) -> bool:
    out = node.outputs[0].aval
    arrays = [x.aval for x in node.inputs if isinstance(x, Value)]
    return (out.kind == "array" and (out.ndim or 0) >= 1 and out.dtype in ("float64", "float32")
            and all(a.dtype == out.dtype for a in arrays))


def buffer_is_dead(value, sharing, read_after) -> bool:
    """Whether no value that may hold ``value``'s buffer (``sharing.aliases``: views, rows,
    slots, branch results, residual lists) is read after this point."""
    return not any(read_after(a) for a in sharing.aliases(value))


def _computable_into_buffer(node) -> bool:
    if node.prim == "fused":
        block = node.regions[0]
        made = {n.outputs[0] for n in block.nodes}
        return all(n.prim in UFUNCS or where_over(n, made) for n in block.nodes)
    return (node.prim in UFUNCS and not node.regions and not node.params
            and PRIMS[node.prim].family == "elementwise")


def _ufuncs_only(node) -> bool:
    return node.prim != "fused" or all(n.prim in UFUNCS for n in node.regions[0].nodes)


class Pool:
    """Buffers of exact (shape, dtype), taken and released as values live and die. With
    ``reuse=False`` (poisoned code) a released buffer is never taken again: it keeps the
    poison it is filled with, so a read after its release shows as NaN."""

    def __init__(self, taken=None, reuse=True):
        self.reuse = reuse
        self.taken = set() if taken is None else taken  # names in use: a buffer takes none
        self.buffers = []        # (name, shape, dtype), in order of creation
        self.free = {}           # (shape, dtype) -> names
        self.holder = {}         # buffer name -> the value it holds (None for a temporary)
        self.released = []       # names released since the emitter last looked (to poison)

    def take(self, aval, value=None) -> str:
        key = (tuple(aval.shape), aval.dtype)
        names = self.free.get(key) if self.reuse else None
        name = names.pop() if names else self._new(key)
        self.holder[name] = value
        return name

    def _new(self, key):
        k = len(self.buffers)
        while f"_buf{k}" in self.taken:
            k += 1
        name = f"_buf{k}"
        self.taken.add(name)
        self.buffers.append((name, *key))
        return name

    def release(self, name):
        _, shape, dtype = next(b for b in self.buffers if b[0] == name)
        self.holder.pop(name, None)
        self.free.setdefault((shape, dtype), []).append(name)
        self.released.append(name)

    def release_dead(self, is_dead):
        """Release every buffer whose value ``is_dead(value)`` says is never read again."""
        for name, value in list(self.holder.items()):
            if value is not None and is_dead(value):
                self.release(name)
