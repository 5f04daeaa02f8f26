"""The backward pass: ``backward`` accumulates into leaves, ``grad`` returns gradients.

Invariants: a node runs once, after every node that feeds it (PyTorch's order: the most
recently created ready node first, ``AccumulateGrad`` as soon as it is ready), with the sum of
its incoming gradients; tensor hooks run before a gradient is used or stored and may replace it;
only nodes that lead to the requested inputs run; saved values are freed afterwards unless
``retain_graph``. Without ``create_graph`` the rules run on plain arrays (``ArrayOps``); with it
they run on tensors (``TensorOps``) under grad mode, so the gradients are differentiable again.

Layering: above what records (:mod:`.record`, :mod:`.node`) and :mod:`.checks`; below what
calls it, ``Tensor.backward`` (:mod:`.methods`) and :mod:`.functional`.
"""

from __future__ import annotations

import heapq
import itertools

import numpy as np

from . import anomaly, checks, mode
from .node import AccumulateGrad
from .record import TENSOR_OPS, apply
from .tensor import Tensor
from .xp import array_module, array_ops


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` (weighted by ``grad_tensors``) into the leaves'
    ``.grad``, or only into ``inputs`` when given (as ``torch.autograd.backward``)."""
    roots, seeds = _roots(tensors, grad_tensors, create_graph)
    targets = None if inputs is None else checks.inputs(inputs, "backward")
    _Pass(create_graph, accumulate=True, targets=targets).run(
        roots, seeds, create_graph if retain_graph is None else retain_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """The gradients of ``outputs`` with respect to ``inputs`` as a tuple; no ``.grad`` is
    touched (as ``torch.autograd.grad``)."""
    roots, seeds = _roots(outputs, grad_outputs, create_graph)
    targets = checks.inputs(inputs, "grad")
    for t in targets:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    found = _Pass(create_graph, accumulate=False, targets=targets).run(
        roots, seeds, create_graph if retain_graph is None else retain_graph)
    results = []
    for i, t in enumerate(targets):
        g = found.get(i)
        if g is None and not allow_unused:
            raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                               "been used in the graph. Set allow_unused=True if this is the "
                               "desired behavior.")
        results.append(None if g is None else _as_tensor(g))
    return tuple(results)


def _roots(tensors, grads, create_graph):
    """The output tensors and their seed gradients (ones for a one-element output)."""
    tensors = checks.outputs(tensors)
    grads = [None] * len(tensors) if grads is None else checks.listed(grads)
    if len(grads) != len(tensors):
        raise RuntimeError(f"got {len(grads)} gradients for {len(tensors)} tensors")
    seeds = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
        seeds.append(_seed(i, t, g, create_graph))
    return tensors, seeds


def _seed(i, t, g, create_graph):
    xp = array_module(t._data)
    if g is None:
        if t._data.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        g = xp.ones_like(t._data)
    elif not isinstance(g, Tensor):
        g = xp.asarray(checks.gradient(g), dtype=t._data.dtype)
    if tuple(g.shape) != t.shape:
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                           f"{tuple(g.shape)} and output[{i}] has a shape of {t.shape}.")
    if create_graph:
        return _as_tensor(g)
    return g._data if isinstance(g, Tensor) else g


def _as_tensor(g):
    """``g`` as a tensor (NumPy turns 0-d results into scalars; a tensor holds 0-d arrays)."""
    if isinstance(g, Tensor):
        return g
    return Tensor._make(array_module(g).asarray(g))


class _Pass:
    """One backward pass over the graph behind some roots."""

    def __init__(self, create_graph, accumulate, targets):
        self.create_graph, self.accumulate = create_graph, accumulate
        self.capture: dict = {}       # node -> [(position in targets, tensor)]
        for i, t in enumerate(targets or ()):
            self.capture.setdefault(t._edge(), []).append((i, t))
        self.targets = targets
        self.found: dict = {}

    def run(self, roots, seeds, retain_graph):
        edges = [t._edge() for t in roots]
        deps, parents = _discover(edges)
        needed = None if self.targets is None else _ancestors(self.capture, parents)
        buffers: dict = {}
        for edge, seed in zip(edges, seeds):
            _add(buffers, edge, seed)
        order = itertools.count()
        ready = [(-e.sequence_nr, next(order), e) for e in dict.fromkeys(edges)
                 if deps.get(e, 0) == 0 and (needed is None or e in needed)]
        heapq.heapify(ready)
        executed = []
        with mode.set_grad_enabled(self.create_graph):
            while ready:
                node = heapq.heappop(ready)[2]
                grads = self._execute(node, buffers.pop(node, None), needed)
                executed.append(node)
                for edge, g in zip(node.next_edges, grads):
                    if edge is None:
                        continue
                    if g is not None:
                        _add(buffers, edge, g)
                    deps[edge] -= 1
                    if deps[edge] == 0 and (needed is None or edge in needed):
                        heapq.heappush(ready, (-edge.sequence_nr, next(order), edge))
        if not retain_graph:
            for node in executed:
                node.release()
        return self.found

    def _execute(self, node, g, needed):
        """Run ``node`` on its summed gradient ``g``; the gradients for its edges."""
        none = [None] * len(node.next_edges)
        if g is None:
            return none
        g = self._hooks(node, g)
        self._store(node, g)
        if isinstance(node, AccumulateGrad):
            return none
        wanted = [e is not None and (needed is None or e in needed) for e in node.next_edges]
        if not any(wanted):
            return none
        ops = TENSOR_OPS if self.create_graph else \
            _NUMPY_OPS if isinstance(g, _HOST) else array_ops(array_module(g))
        try:
            grads = node.apply(g, ops, self.create_graph, wanted)
            grads = [None if gi is None else _conform(node, i, gi, ops)
                     for i, gi in enumerate(grads)]
            anomaly.check_nan(node.name(), grads, _has_nan)
        except Exception:
            anomaly.warn_error_in(node.name(), node.trace)
            raise
        return grads

    def _store(self, node, g):
        """Keep ``g`` where it is asked for: returned by ``grad()``, or added into ``.grad`` by
        ``backward()`` (leaves, its ``inputs``) and by both (``retain_grad()``), once each."""
        keep = {}
        for i, t in self.capture.get(node, ()):
            self.found[i] = g
            if self.accumulate:
                keep[id(t)] = t
        if isinstance(node, AccumulateGrad):
            if self.accumulate and (self.targets is None or keep):
                if node.variable._grad_fn is not None:
                    raise RuntimeError("leaf variable has been moved into the graph interior")
                accumulate(node.variable, g, self.create_graph)
            return
        retained = node.retained() if node.retained is not None else None
        if retained is not None and retained._grad_fn is node:   # not a view's stale graph
            keep[id(retained)] = retained
        for t in keep.values():
            accumulate(t, g, self.create_graph)

    def _hooks(self, node, g):
        """The tensor hooks on this node's output, in registration order; each may replace g
        with a tensor of its shape and dtype."""
        for hook in list(node.pre_hooks.values()):
            result = hook(_as_tensor(g))
            if result is not None:
                result = checks.hook_result(hook, result, g)
                g = result if self.create_graph else result._data
        return g


def _has_nan(g) -> bool:
    """Whether a gradient (a tensor, an array of NumPy's or CuPy's, a float) holds a NaN."""
    data = _array(g)
    if not hasattr(data, "dtype"):
        return isinstance(data, float) and data != data
    return data.dtype.kind in "fc" and bool((data != data).any())


def _array(x):
    return x._data if isinstance(x, Tensor) else x


def _discover(edges):
    """Every node behind ``edges``: how many edges enter each, and each one's parents."""
    deps, parents = {}, {}
    stack = [e for e in dict.fromkeys(edges) if e is not None]
    seen = set(stack)
    while stack:
        node = stack.pop()
        for nxt in node.next_edges:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            parents.setdefault(nxt, []).append(node)
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps, parents


def _ancestors(capture, parents):
    """The nodes from which some captured node can be reached (the captured ones included)."""
    found = set(capture)
    stack = list(found)
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in found:
                found.add(parent)
                stack.append(parent)
    return found


def _add(buffers, node, g):
    if node is None:
        return
    current = buffers.get(node)
    buffers[node] = g if current is None else current + g


_HOST = (np.ndarray, np.generic)   # a gradient on the host: NumPy's ops, shape read directly
_NUMPY_OPS = array_ops(np)


def _conform(node, i, g, ops):
    """The gradient of input ``i`` with that input's shape and (floating) dtype."""
    shape, dtype = node.input_meta[i]
    if isinstance(g, _HOST) and g.shape == shape and g.dtype == dtype:
        return g
    got = tuple(ops.shape(g))
    if got != shape:
        try:
            ok = np.broadcast_shapes(got, shape) == shape
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index "
                               f"{i} - got {list(got)} but expected shape compatible with "
                               f"{list(shape)}")
        g = ops.broadcast_to(g, shape)
    if dtype.kind in "fc" and ops.dtype(g) != dtype:
        g = ops.astype(g, dtype)
    return g


def accumulate(t, g, create_graph):
    """Add ``g`` into ``t.grad`` (a copy the first time, so no two grads share storage)."""
    dtype = t._data.dtype
    if create_graph:
        g = _as_tensor(g)
        g = apply("copy", (g,), name="CopyBackwards") if g._requires_grad else \
            Tensor._make(g._data.astype(dtype, copy=True))
        t._grad = g if t._grad is None else t._grad + g
        return
    g = _array(g)
    if t._grad is None:
        t._grad = Tensor._make(array_module(g).array(g, dtype=dtype, copy=True))
        return
    # into the existing .grad in place, as PyTorch does without create_graph (even for a grad
    # that requires grad: its graph is kept), bumping its version: a graph that saved it fails
    # its version check instead of reading the new value silently
    grad = t._grad
    grad._counter.before_write(grad)
    grad._data += g
    grad._counter.bump()
