"""Lower ``x[...]`` reads into ``getitem`` nodes with a static index spec.

The spec (see :func:`adcompiler.ir.primitives.build_index`) holds slices, ints, None and
Ellipsis statically; integer arrays are node inputs. Invariant: traced boolean masks are rejected
(their result shape depends on the data), with a hint towards ``np.where``; a mask known while
compiling (``np.array([True, False, True])``) is read as its positions ``m.nonzero()``, which
is what NumPy means by ``x[m]``, with a shape known while compiling.
"""

from __future__ import annotations

import numpy as np

from ...ir import Value
from ..library.creation import made_while_compiling
from ..bindings.lists import is_list
from . import masked
from .lists import index_error, read_item
from .windows import MovingSlice, Window


def lower_index(lowering, base: Value, node):
    if is_list(base):  # a while loop's list: one element (.lists)
        return read_item(lowering, base, node)
    index = lowering.expr(node.slice)
    if _traced_mask(lowering, index):   # np.sum(x[x > 0]): a masked reduction (.masked)
        full = masked.read(lowering, base, index, node)
        if full is None:   # y = x[m], read where y is read
            full = masked.deferred(lowering, base, index, node)
        if full is not None:
            return full
    items = index if isinstance(index, tuple) else (index,)  # x[[0, 1]] is one list item
    items = constant_masks(lowering, base, lowering.windows(base, items, node), node)
    spec, arrays = [], []
    for item in items:
        spec.append(index_item(lowering, item, arrays, node))
    return lowering.b.getitem(base, arrays, tuple(spec))


def _traced_mask(lowering, index) -> bool:
    return (isinstance(index, Value) and index.aval.dtype == "bool"
            and index not in lowering.graph.consts and bool(index.aval.ndim))


def constant_masks(lowering, base: Value, items: tuple, node) -> tuple:
    """``items`` with each boolean mask known while compiling replaced by its integer
    positions (``m.nonzero()``: one array per axis of the mask), after checking, as NumPy
    does, that the mask has the shape of the axes it selects from."""
    masks = [_constant_mask(lowering.graph.consts.get(item, item) if isinstance(item, Value)
                            else item) for item in items]
    out = []
    for k, (item, mask) in enumerate(zip(items, masks)):
        if mask is None:
            out.append(item)
            continue
        shape = base.aval.known_shape
        axis = _first_axis(items, masks, k, len(shape)) if shape is not None else None
        if axis is None or tuple(shape[axis:axis + mask.ndim]) != mask.shape:
            raise lowering.src.error(node, f"the boolean mask (shape {mask.shape}) does not fit "
                                     f"the axes it indexes (array shape {shape})",
                                     "use a mask of the shape of the axes it selects from")
        out.extend(mask.nonzero())
    return tuple(out)


def index_item(lowering, item, arrays, node):
    if is_list(item):
        raise index_error(lowering, node)
    if isinstance(item, MovingSlice):  # where no window can be (np.add.at's index)
        raise lowering.refuse_moving(item)
    if isinstance(item, Window):  # distinct entries: the adjoint adds with +=
        arrays.append(item.index)
        return ("u", len(arrays) - 1)
    if isinstance(item, slice):
        return ("s", item.start, item.stop, item.step)
    if item is None:
        return ("n",)
    if item is Ellipsis:
        return ("e",)
    if isinstance(item, (bool, np.bool_)):
        raise lowering.src.error(node, "indexing with a bool is not supported", _SUPPORTED)
    if isinstance(item, (int, np.integer)):
        return ("i", int(item))
    if isinstance(item, (list, tuple)):
        item = np.asarray(item)
    if isinstance(item, np.ndarray):
        item = lowering.constant(np.asarray(item))
    if isinstance(item, Value):
        kind = np.dtype(item.aval.dtype).kind
        if kind == "b" and item in lowering.graph.consts:
            raise lowering.src.error(node, "reading with a boolean mask from outside the function "
                                     "is not supported: changed in place, it would select "
                                     "other entries than the compiled code does",
                                     "index with its positions, made at module level: "
                                     "IDX = np.flatnonzero(M), then x[IDX]")
        if kind == "b":
            raise lowering.src.error(node, *masked.MASK_ERROR)
        if kind not in "iu":
            raise lowering.src.error(node, f"an index array must hold integers, not {item.aval}",
                                     "convert it with .astype(int)")
        arrays.append(item)
        return ("a", len(arrays) - 1)
    raise lowering.src.error(node, f"cannot index with a `{type(item).__name__}`", _SUPPORTED)


def _constant_mask(item):
    """The boolean array of a mask known while compiling, with at least one dimension: a list
    of bools, or an array the function made of literals. Not a module's or an object's array:
    changed in place, it would select other entries than the compiled code does."""
    if isinstance(item, list) and not _has_value(item):
        item = np.asarray(item)
    elif not made_while_compiling(item):
        return None
    if isinstance(item, np.ndarray) and item.dtype == bool and item.ndim:
        return item
    return None


def _has_value(x) -> bool:
    return isinstance(x, Value) or (isinstance(x, (list, tuple)) and any(map(_has_value, x)))


def _first_axis(items, masks, k, ndim):
    """The first axis item ``k`` indexes: items before it consume axes (a mask one per
    dimension, None none), or those after it do where an ``...`` precedes it."""
    consumed = [0 if item is None or item is Ellipsis else 1 if mask is None else mask.ndim
                for item, mask in zip(items, masks)]
    if any(item is Ellipsis for item in items[:k]):
        return ndim - sum(consumed[k:])
    return sum(consumed[:k])


_SUPPORTED = ("index with ints, slices, None (np.newaxis), ..., or integer arrays; "
              "for a condition, use np.where(mask, x, 0)")
