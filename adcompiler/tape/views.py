"""Views: a basic index (``t[0]``, ``t[1:3]``, ``t[..., None]``), ``.T``/``transpose``,
``reshape``/``ravel`` where NumPy does not copy, ``squeeze``, ``expand_dims`` and
``broadcast_to`` give tensors that share their base's storage and version counter, as in
PyTorch (and NumPy), so that an in-place update through a view updates its base.

Invariants: a view's ``_view`` names its root base (a tensor that is not itself a view) and
the steps from it; an in-place update through a view writes the base's storage, bumps the
shared counter and rebases the base onto ``CopySlices`` (the update's result gets the gradient
inside the view's region, the base's previous value the rest); a view whose counter moved
since its graph was made takes a new one from its base (``AsStridedBackward0``) the next time
its graph is read, so tensors that share storage agree on their graph too (a retained gradient
moves to that new graph: it is the gradient of the view's current value). View nodes save no
values (their rules need only shapes), so no update can invalidate them. In forward mode a view's
tangent is the same view of its base's tangent (of a ``make_dual``'s, for views of a dual).

Layering: above :mod:`.record` and ``Tensor`` (:mod:`.tensor`), which reads a view's graph
state through its :class:`ViewOf` (:meth:`ViewOf.sync`) and so never imports this module.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from adcompiler.ir.primitives import build_index
from adcompiler.templates import cotangent, tangent

from . import mode
from .names import node_name
from .node import Node, Placeholder, node_class
from .record import apply
from .tensor import Tensor
from .xp import array_module, array_ops, compute, shares

VIEW_OF_LEAF = ("a view of a leaf Variable that requires grad is being used in an in-place "
                "operation.")
NO_GRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
                "You can clarify your code by moving both the view and the inplace either both "
                "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                "outside (if you want the inplace to be tracked).")
EXPANDED = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")
_BASIC = ("s", "i", "n", "e")      # index items that NumPy answers with a view


class Step(NamedTuple):
    """One view-making primitive, and the shapes it reads and gives."""
    prim: str
    params: dict
    before: tuple
    after: tuple


class ViewOf:
    """What makes a tensor a view: its root base, the steps from it, the counter value its
    graph was made at, and whether it was made with grad mode on (else it keeps no graph);
    and where its tangents come from: ``owner`` (the root base, or the nearest view that holds
    tangents of its own: a ``make_dual``) and the steps from it."""

    __slots__ = ("base", "steps", "version", "tracked", "owner", "owner_steps")

    def __init__(self, base, steps, version, tracked, owner, owner_steps):
        self.base, self.steps, self.version, self.tracked = base, steps, version, tracked
        self.owner, self.owner_steps = owner, owner_steps

    def sync(self, t):
        """Give the view ``t`` (the tensor this describes) its graph from its base (and its
        tangents from their owner) again if the storage changed since it got them: the graph
        read through it is always the one of its values. ``Tensor`` calls it before it reads
        its graph state, so :mod:`.tensor`, below this module, never imports it."""
        if self.version == t._counter.value:
            return
        self.version = t._counter.value
        owner = self.owner
        if owner is not t:         # (a view that holds its own tangents keeps them)
            t._duals = None if owner._duals is None else view_tangents(owner._duals,
                                                                       self.owner_steps)
        base = self.base
        if not self.tracked:       # made under no_grad: no graph, but tangents all the same
            return
        if base._requires_grad and t._data.dtype.kind in "fc":
            t._fn, t._needs_grad = _view_node("AsStridedBackward0", self.steps, base), True
            if t._retains_grad:        # retain_grad() follows the view to its new graph
                t._fn.retained = weakref.ref(t)
        else:
            t._fn, t._needs_grad = None, False


# ---- making views ---------------------------------------------------------------------------
def make(prim: str, t, params: dict, name=None):
    """``prim[params](t)`` as a view of ``t``'s storage, or recorded as a copy (``apply``)
    where NumPy copies (``reshape`` of a transposed array, an advanced index); ``name``
    overrides the PyTorch node name."""
    data = _view_data(prim, t._data, params) if isinstance(t, Tensor) else None
    if data is None:
        return apply(prim, (t,), params, name=name)
    out = Tensor._make(data, counter=t._counter)
    step = Step(prim, params, t.shape, tuple(data.shape))
    parent = t._view
    tracked = mode.is_grad_enabled() and (parent is None or parent.tracked)
    if parent is None:
        out._view = ViewOf(t, (step,), t._counter.value, tracked, t, (step,))
    else:
        out._view = ViewOf(parent.base, parent.steps + (step,), t._counter.value, tracked,
                           parent.owner, parent.owner_steps + (step,))
    if tracked and t._requires_grad and data.dtype.kind in "fc":
        name = name or node_name(prim, (t,), params)
        out._fn, out._needs_grad = _view_node(name, (step,), t), True
    level = mode.dual_level_token()
    if level is not None and t._tangent(level) is not None:
        out._duals = view_tangents({level: t._tangent(level)}, (step,))
    return out


def _view_data(prim, data, params):
    """The value as a view of ``data``, or None where it would not share ``data``'s memory."""
    if prim == "getitem":
        spec = params["index"]
        if any(item[0] not in _BASIC for item in spec):
            return None
        index = build_index(spec, ())
        if not any(item[0] == "e" for item in spec):
            index += (Ellipsis,)     # a 0-d view where NumPy would give a scalar...
        out = data[index]
        if out.ndim == 0 and index[-1] is Ellipsis and mode.is_numpy_inplace():
            return None              # ...which under NumPy's semantics is a copy
    else:
        out = compute(prim, [data], params)
    return out if shares(out, data) else None


def _view_node(name, steps, source):
    return node_class(ViewNode, name)(steps, (source._edge(),), ((source.shape, source.dtype),))


# ---- the steps, run on gradients and tangents (each primitive's own rules, on shapes) --------
def forward_steps(ops, x, steps, dtype):
    """``x`` (shaped like the base) taken through the steps: the view's part of it."""
    for s in steps:
        x = tangent(ops, s.prim, 0, x, Placeholder(s.after, dtype),
                    (Placeholder(s.before, dtype),), s.params)
    return x


def backward_steps(ops, g, steps, dtype):
    """``g`` (shaped like the view) scattered back through the steps: zeros outside it."""
    for s in reversed(steps):
        g = cotangent(ops, s.prim, 0, g, Placeholder(s.after, dtype),
                      (Placeholder(s.before, dtype),), s.params)
    return g


def region(xp, steps, shape):
    """Where a view's elements sit in its base: a boolean array of the base's shape (the steps
    run on the base's flat positions)."""
    size = int(np.prod(shape, dtype=np.int64))
    positions = forward_steps(array_ops(xp), xp.arange(size).reshape(shape), steps, np.intp)
    mask = xp.zeros(size, dtype=bool)
    mask[positions.reshape(-1)] = True
    return mask.reshape(shape)


def view_tangents(duals, steps):
    """Tangents (``{level: tangent}``) taken through the steps as views of them, recording no
    tangents: as in PyTorch, the tangent of a view is that view of its base's tangent, so an
    in-place update of either tangent shows in the other."""
    token = mode._FORWARD_ENABLED.set(False)
    try:
        out = {}
        for level, dx in duals.items():
            for s in steps:
                dx = make(s.prim, dx, s.params)
            out[level] = dx
        return out
    finally:
        mode._FORWARD_ENABLED.reset(token)


# ---- nodes ----------------------------------------------------------------------------------
class ViewNode(Node):
    """The backward of a view (``SliceBackward0``, ``PermuteBackward0``...; one from its root,
    ``AsStridedBackward0``, after an update): ``g`` scattered back through its steps."""

    def __init__(self, steps, edges, input_meta):
        super().__init__(edges, input_meta)
        self.steps = steps

    def apply(self, g, ops, as_tensor, wanted):
        return [backward_steps(ops, g, self.steps, self.input_meta[0][1])]


class CopySlices(Node):
    """An update through a view: the base's previous value gets ``g`` outside the view's
    region, the update's result ``g`` inside it (PyTorch's ``CopySlices``)."""

    def __init__(self, steps, edges, input_meta):
        super().__init__(edges, input_meta)
        self.steps = steps

    def apply(self, g, ops, as_tensor, wanted):
        (shape, dtype), base, value = self.input_meta[0], None, None
        if wanted[0]:
            data = g._data if isinstance(g, Tensor) else g
            base = ops.where(region(array_module(data), self.steps, shape), 0.0, g)
        if wanted[1]:
            value = forward_steps(ops, g, self.steps, dtype)
        return [base, value]


# ---- reading and writing through a view -----------------------------------------------------
def check_write(t, value_requires_grad=False):
    """Refuse, before anything is written, the in-place updates PyTorch refuses on a view."""
    info = t._view
    if info is None:
        return
    info.sync(t)
    if any(s.prim == "broadcast_to" for s in info.steps):
        raise RuntimeError(EXPANDED)
    base = info.base
    if not mode.is_grad_enabled():
        return
    if base._requires_grad and base._fn is None:
        raise RuntimeError(VIEW_OF_LEAF)
    if not info.tracked and (base._requires_grad or value_requires_grad):
        raise RuntimeError(NO_GRAD_VIEW)


def written(t, node):
    """The view ``t``'s storage was just updated by what ``node`` records (None: nothing was
    recorded): the ``CopySlices`` node its base must be rebased onto (None: none); ``t`` takes
    its graph from the base from now on. (Its tangent was written in place, into a view of
    the base's: :func:`.inplace.write_tangent`.)"""
    info = t._view
    base = info.base
    copy = None
    if mode.is_grad_enabled() and info.tracked and (base._requires_grad or node is not None):
        edges = (base._edge() if base._requires_grad else None, node)
        meta = ((base.shape, base.dtype), (t.shape, t.dtype))
        copy = node_class(CopySlices, "CopySlices")(info.steps, edges, meta)
    info.version = -1
    return copy
