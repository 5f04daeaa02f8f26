"""Lower ``x[...]`` reads into ``getitem`` nodes with a static index spec.

The spec (see :func:`adcompiler.ir.primitives.build_index`) holds slices, ints, None and
Ellipsis statically; integer arrays are node inputs. Invariant: boolean masks are rejected
(their result shape depends on the data), with a hint towards ``np.where``.
"""

from __future__ import annotations

import numpy as np

from ..ir import Value
from .windows import MovingSlice, Window


class IndexLowering:
    """Mixin of the lowering for subscript reads."""

    def lower_index(self, base: Value, node):
        index = self.expr(node.slice)
        items = index if isinstance(index, tuple) else (index,)  # x[[0, 1]] is one list item
        items = self.windows(base, items, node)
        spec, arrays = [], []
        for item in items:
            spec.append(self.index_item(item, arrays, node))
        return self.b.getitem(base, arrays, tuple(spec))

    def index_item(self, item, arrays, node):
        if isinstance(item, MovingSlice):  # where no window can be (np.add.at's index)
            raise self.refuse_moving(item)
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
            raise self.src.error(node, "indexing with a bool is not supported",
                                 _SUPPORTED)
        if isinstance(item, (int, np.integer)):
            return ("i", int(item))
        if isinstance(item, (list, tuple)):
            item = np.asarray(item)
        if isinstance(item, np.ndarray):
            item = self.constant(np.asarray(item))
        if isinstance(item, Value):
            kind = np.dtype(item.aval.dtype).kind
            if kind == "b":
                raise self.src.error(node, "reading with a boolean mask is not supported: the "
                                     "result's shape depends on the data",
                                     "use np.where(mask, x, 0) to keep the shape")
            if kind not in "iu":
                raise self.src.error(node, f"an index array must hold integers, not {item.aval}",
                                     "convert it with .astype(int)")
            arrays.append(item)
            return ("a", len(arrays) - 1)
        raise self.src.error(node, f"cannot index with a `{type(item).__name__}`", _SUPPORTED)


_SUPPORTED = ("index with ints, slices, None (np.newaxis), ..., or integer arrays; "
              "for a condition, use np.where(mask, x, 0)")
