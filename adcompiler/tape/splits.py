"""``np.split``/``array_split``/``hsplit``/``vsplit``/``dsplit``, ``np.atleast_1d``/``2d``/``3d``,
``np.tile``, ``np.repeat`` and ``np.append`` on tensors, as the compiler records them
(``adcompiler/frontend/splits.py``).

Invariants: the composition is the compiler's own (:func:`~adcompiler.frontend.splits.split`
and friends), run on :class:`TapeOps`, so the tape records the same primitives and its gradient
is the compiler's; a split's pieces and ``atleast_2d``'s reshape are views of the tensor (a
write into a piece writes into it, as NumPy's and PyTorch's), ``tile``/``repeat``/``append``
new tensors. NumPy's errors (an unequal split) are NumPy's.
"""

from __future__ import annotations

import numpy as np

from adcompiler.frontend import splits

from . import numpy_api, views
from .compositions import _tensor_of
from .record import TensorOps
from .xp import array_module


class TapeOps(TensorOps):
    """The templates' ops on tensors, with views where NumPy makes them (a basic index, a
    reshape, a broadcast) and constants on the operand's device."""

    def __init__(self, like=None):
        self.like = like

    def getitem(self, x, arrays, index):
        if not arrays:
            return views.make("getitem", x, {"index": index})
        return super().getitem(x, [a._data if hasattr(a, "_data") else a for a in arrays], index)

    def reshape(self, x, shape):
        return views.make("reshape", x, {"shape": tuple(shape)})

    def broadcast_to(self, x, shape):
        return views.make("broadcast_to", x, {"shape": tuple(shape)})

    def constant(self, array, name):
        return array_module(self.like._data).asarray(array) if self.like is not None else array


def split(ary, indices_or_sections, axis=0):
    return splits.split(TapeOps(), _tensor_of(ary), indices_or_sections, axis, equal=True)


def array_split(ary, indices_or_sections, axis=0):
    return splits.split(TapeOps(), _tensor_of(ary), indices_or_sections, axis, equal=False)


def _split_along(name, least, axis):
    fixed = splits.split_along(name, least, axis)

    def split_fixed(ary, indices_or_sections):
        return fixed(TapeOps(), _tensor_of(ary), indices_or_sections)
    split_fixed.__name__ = name
    return split_fixed


def _at_least(ndim):
    def at_least(*arys):
        out = tuple(splits.at_least(TapeOps(), _tensor_of(x), ndim) for x in arys)
        return out[0] if len(out) == 1 else out
    at_least.__name__ = f"atleast_{ndim}d"
    return at_least


def tile(A, reps):
    return splits.tile(TapeOps(), _tensor_of(A), reps)


def repeat(a, repeats, axis=None):
    x = _tensor_of(a)
    return splits.repeat(TapeOps(x), x, repeats, axis)


def append(arr, values, axis=None):
    return splits.append(TapeOps(), _tensor_of(arr), _tensor_of(values), axis)


numpy_api.FUNCTIONS.update({
    np.split: split, np.array_split: array_split, np.hsplit: _split_along("hsplit", 1, 1),
    np.vsplit: _split_along("vsplit", 2, 0), np.dsplit: _split_along("dsplit", 3, 2),
    np.atleast_1d: _at_least(1), np.atleast_2d: _at_least(2), np.atleast_3d: _at_least(3),
    np.tile: tile, np.repeat: repeat, np.append: append,
})
