"""``np.r_[...]`` and ``np.c_[...]`` of traced arrays: NumPy's index-trick concatenations, with
every slice known while compiling (``np.r_[0:3]`` is ``np.arange(0, 3)``, ``1:2:5j`` a
``linspace``, made then) and the arrays traced.

Invariants: NumPy's values, shapes and dtype. ``r_`` joins 0-d and 1-D items end to end (0-d
as length 1) and others along axis 0; ``c_`` makes 0-d items (1, 1) and 1-D items columns
(n, 1), then joins along the last axis; Python numbers take the arrays' dtype where NumPy's
weak promotion gives it. A leading string (``np.r_['0,2', ...]``, an axis and a number of
dimensions) is refused, located, with the spelled-out call to write instead.
"""

from __future__ import annotations

import numpy as np

from ...ir import Value
from .binding import CallError
from .creation import _stacked, contains_value

CONCATENATORS = (type(np.r_), type(np.c_))


def concatenate(b, base, index):
    """The lowering of ``base[index]`` for ``base`` np.r_ or np.c_ (see the module docstring)."""
    items = list(index) if isinstance(index, tuple) else [index]
    column = isinstance(base, type(np.c_))
    name = "np.c_" if column else "np.r_"
    if items and isinstance(items[0], str):
        raise CallError(f"`{name}[...]` with a string directive is not supported here",
                        "write the concatenation out: np.concatenate([...], axis=...) of "
                        "arrays reshaped to the dimensions you need")
    parts = [_part(b, item, name) for item in items]
    if not parts:
        raise CallError(f"`{name}[]` of nothing is not supported", "give it arrays")
    numbers = [type(v) in (bool, int, float) for v in items]
    arrays = [b.dtype(v) for v, number in zip(parts, numbers) if not number]
    if arrays:   # Python numbers are weak: NumPy's result_type of the arrays and the numbers
        dtype = np.result_type(*arrays, *(v for v, n in zip(items, numbers) if n))
        parts = [b.emit("astype", (v,), {"dtype": dtype.name})
                 if number and np.dtype(b.dtype(v)) != dtype else v
                 for v, number in zip(parts, numbers)]
    shaped = [_as_column(b, v) if column else _as_row(b, v) for v in parts]
    return b.concatenate(shaped, axis=-1 if column else 0)


def _part(b, item, name):
    """One item as an array: a traced value as it is, a slice its arange (or linspace), a list
    its array (the stack of traced items), a number a 0-d constant."""
    if isinstance(item, Value):
        if item.aval.kind == "list":
            raise CallError(f"`{name}[...]` of a list built by a while loop is not supported",
                            "stack it first with np.array(...)")
        return item if item.aval.kind == "array" else b.emit("asarray", (item,))
    if isinstance(item, slice):
        return b.constant(np.r_[item])
    if isinstance(item, (list, tuple)) and contains_value(item):
        return _stacked(b, item)
    return b.constant(np.asarray(item))


def _as_row(b, v):
    return b.emit("reshape", (v,), {"shape": (1,)}) if not b.shape(v) else v


def _as_column(b, v):
    shape = b.shape(v)
    if len(shape) >= 2:
        return v
    return b.emit("reshape", (v,), {"shape": (1, 1) if not shape else (shape[0], 1)})
