"""In-place updates: ``t[i] = v``, ``t += v``, ``add_ fill_ zero_ copy_`` and NumPy's ``out=``.

Invariants: an update writes into the tensor's own storage (``.data``, ``detach()``, its base
and its other views see it) and bumps its version counter by one. Under grad mode, updating a
tensor that needs grad (or with a value that does) rebases it onto a new node (``AddBackward0``,
``CopySlices``...) whose input is the previous value, so tensors saved earlier keep failing their
version check; an update through a view rebases its base instead (:func:`.views.written`). A
leaf that requires grad can only be assigned through indexing, which moves it into the graph
interior (the seeds' PyTorch 1.1 behaviour; backward then raises); any other in-place use, and
any update through a view of it, raises at once. In forward mode the update's tangent is written
into the tensor's tangent in place (:func:`write_tangent`).

Layering: above :mod:`.views` and :mod:`.record`; below what calls it: :mod:`.numpy_api`
(``out=``), the operators and the methods.
"""

from __future__ import annotations

import operator
import weakref

import numpy as np

from adcompiler.ir.primitives import PRIMS, build_index, store, writes_once
from adcompiler.templates import cotangent

from . import mode, views
from .node import Node, Placeholder, _dtype, _shape, node_class
from .record import apply, beside_device
from .lazy import DaskModule, missing
from .tensor import Tensor
from .xp import array_module, common_module, is_device_array

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."


# ---- index specs ----------------------------------------------------------------------------
def index_spec(key, like=None):
    """``key`` as the primitive ``getitem``'s static spec plus its integer index arrays, on
    the device of ``like`` (the indexed array: host indices travel, as CuPy and PyTorch let
    them)."""
    spec, arrays = _index_spec(key)
    if is_device_array(like):
        arrays = [array_module(like).asarray(a) for a in arrays]
    return spec, tuple(arrays)


def _index_spec(key):
    items = key if isinstance(key, tuple) else (key,)
    spec, arrays = [], []
    for item in items:
        if isinstance(item, Tensor):
            item = item._data
        if item is None:
            spec.append(("n",))
        elif item is Ellipsis:
            spec.append(("e",))
        elif isinstance(item, slice):
            spec.append(("s", _int(item.start), _int(item.stop), _int(item.step)))
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            spec.append(("i", int(item)))
        else:
            _array_item(item, spec, arrays)
    return tuple(spec), tuple(arrays)


def _int(v):
    return None if v is None else operator.index(v)


def _array_item(item, spec, arrays):
    array = array_module(item).asarray(item)
    if array.dtype.kind == "f" and array.size == 0:
        array = array.astype(np.intp)
    if array.dtype.kind == "b" and array.ndim > 0:
        parts = array.nonzero()          # a mask is its nonzero positions, one array per axis
    elif array.ndim == 0 and array.dtype.kind in "iu":
        spec.append(("i", int(array)))
        return
    else:
        parts = (array,)
    for part in parts:
        spec.append(("a", len(arrays)))
        arrays.append(part)


# ---- the node of a slice assignment ---------------------------------------------------------
class SliceNode(Node):
    """``base[index] = value``: the base's gradient outside the region, the value's inside."""

    def __init__(self, spec, arrays, edges, input_meta):
        super().__init__(edges, input_meta)
        self.spec, self.arrays = spec, arrays

    def apply(self, g, ops, as_tensor, wanted):
        index = build_index(self.spec, self.arrays)
        base = value = None
        if wanted[0]:
            base = ops.copy(g)
            base[index] = 0            # on arrays a write; on tensors a recorded CopySlices
        if wanted[1]:              # the compiler's rule (templates/shape.py)
            v = Placeholder(self.input_meta[1][0], ops.dtype(g))
            value = cotangent(ops, "setitem", 1, g, None, (None, v, *self.arrays),
                              {"index": self.spec})
        return [base, value]


# ---- updates --------------------------------------------------------------------------------
def _requires(x) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


def _check_leaf(t, other=None):
    views.check_write(t, _requires(other))
    if mode.is_grad_enabled() and t._requires_grad and t._grad_fn is None:
        raise RuntimeError(LEAF_ERROR)


def _finish(t, node):
    """``t``'s storage now holds what ``node`` records (None: nothing was recorded): ``t`` is
    rebased onto it, or, for a view, its base onto the ``CopySlices`` of the update."""
    if t._view is None:
        if node is not None:
            _rebase(t, node)
        return
    copy = views.written(t, node)
    if copy is not None:
        _rebase(t._view.base, copy)


def setitem(t, key, value, name="CopySlices"):
    """``t[key] = value`` in place; records ``CopySlices`` when gradients are involved."""
    spec, arrays = index_spec(key, t._data)
    value = value if isinstance(value, Tensor) else _constant(value)
    views.check_write(t, _requires(value))
    if any(isinstance(a, Tensor) and type(a._data) is not np.ndarray for a in (t, value)):
        value = beside_device(name, (t, value))[1]
    recording = mode.is_grad_enabled() and (t._requires_grad or _requires(value))
    node = _slice_node(name, spec, arrays, t, value) if recording else None
    data = value._data if isinstance(value, Tensor) else value
    xp = common_module([t._data, data, *arrays], name)
    if isinstance(xp, DaskModule) and not writes_once(spec, [np.ndim(a) for a in arrays]):
        raise missing("an assignment through index arrays that may repeat (x[idx] = v)")
    t._counter.before_write(t)
    store(xp, t._data, build_index(spec, arrays), data)   # repeated indices: NumPy's last
    t._counter.bump()
    write_tangent(t, build_index(spec, arrays), value)
    _finish(t, node)
    return t


def overwrite(t, value, name):
    """``fill_``, ``zero_``, ``copy_``: every entry replaced; a leaf that needs grad raises."""
    _check_leaf(t, value)
    return setitem(t, Ellipsis, value, name)


def update(t, prim, other, extra=(), params=None, rebind=True):
    """``t op= other`` (``add_``, ``mul_``...): ``t`` takes the value of
    ``prim[params](t, other, *extra)``; ``rebind=False`` writes even a 0-d ``t`` in place
    (``np.add.at``, which returns nothing)."""
    _check_leaf(t, other)
    recording = mode.is_grad_enabled() and (t._requires_grad or _requires(other))
    forward = mode.dual_level_token() is not None and t._tangents is not None
    source = t._snapshot() if recording or forward else t
    if forward and mode.is_grad_enabled():
        source._tangents = _cloned(source._tangents)
    result = apply(prim, (source, other, *extra), params)
    if rebind and t.ndim == 0 and mode.is_numpy_inplace():
        # NumPy's 0-d results are scalars, and a scalar is immutable: ``s += v`` rebinds ``s``
        # (the compiler makes the same choice for every shape-() value)
        return result
    adopt(t, result)
    if not PRIMS[prim].differentiable and t._view is None:   # ``t //= y``: piecewise constant
        t._tangents = None        # from here on, so no gradient or tangent flows back through it
        if mode.is_grad_enabled():    # (through a view: the base's CopySlices has no value edge)
            t.detach_()
    return t


def adopt(t, result):
    """Write ``result`` into ``t``'s storage and give ``t`` its node (NumPy's casting rules)."""
    if result.shape != t.shape:
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast "
                           f"shape {list(result.shape)}")
    if not np.can_cast(result.dtype, t.dtype, "same_kind"):
        raise TypeError(f"Cannot cast output from dtype('{result.dtype}') to dtype('{t.dtype}') "
                        "with casting rule 'same_kind'")
    _check_leaf(t, result)
    t._counter.before_write(t)
    t._data[...] = result._data
    t._counter.bump()
    write_tangent(t, Ellipsis, result)
    _finish(t, result._grad_fn)
    return t


def _constant(value):
    return np.asarray(value) if isinstance(value, (list, tuple)) else value


def _slice_node(name, spec, arrays, base, value):
    edges = [base._edge() if base._requires_grad else None,
             value._edge() if isinstance(value, Tensor) and value._requires_grad else None]
    meta = [(base.shape, base.dtype), (_shape(value), _dtype(value))]
    arrays = tuple(a.copy() for a in arrays)
    return node_class(SliceNode, name)(spec, arrays, edges, meta)


def _rebase(t, node):
    """``t`` is now the output of ``node``; a retained gradient follows it."""
    old = t._grad_fn
    t._grad_fn, t._requires_grad = node, True
    if t._retains_grad:
        node.retained = weakref.ref(t)
        if old is not None:
            old.retained = None


def write_tangent(t, key, value):
    """Forward mode through ``t[key] = value`` (``key`` ``...``: all of ``t``): ``value``'s
    tangent (zeros for a value without one) is written into ``t``'s tangent in place, as
    PyTorch's ``copy_`` into it, so that the tangents of ``t``'s views (views of its tangent)
    and a tangent read before the update see it. A tensor without a tangent gets one of zeros
    first (a view: its base does, and the view's tangent is a view of it)."""
    level = mode.dual_level_token()
    if level is None or t._data.dtype.kind not in "fc":
        return
    new = value._tangent(level) if isinstance(value, Tensor) else None
    old = t._tangent(level)
    if old is None and new is None:
        return
    token = mode._FORWARD_ENABLED.set(False)   # the tangents' own updates carry no tangent
    try:
        if old is None:
            old = _zero_tangent(t, level)
        _check_leaf(old, new)        # PyTorch's errors for a tangent that is a leaf
        setitem(old, key, 0.0 if new is None else new, "CopyBackwards" if key is Ellipsis
                else "CopySlices")
    finally:
        mode._FORWARD_ENABLED.reset(token)


def _cloned(duals):
    """Copies of the tangents an update reads, as PyTorch clones them under grad mode: the new
    tangent's graph may save them, and they are about to be written in place."""
    token = mode._FORWARD_ENABLED.set(False)
    try:
        return {level: apply("copy", (dx,)) for level, dx in duals.items()}
    finally:
        mode._FORWARD_ENABLED.reset(token)


def _zero_tangent(t, level):
    """A tangent of zeros for ``t``, which has none at ``level``: on ``t`` itself, or on the
    owner of a view's tangents (its base, which has none either) with the view's tangent a
    view of it."""
    info = t._view
    owner = t if info is None else info.owner
    if owner._tangent(level) is None:
        owner._set_tangent(level, Tensor._make(array_module(owner._data).zeros_like(
            owner._data)))
    if owner is t:
        return t._tangent(level)
    t._duals = views.view_tangents(owner._duals, info.owner_steps)
    return t._duals[level]
