"""``np.split``/``array_split``/``hsplit``/``vsplit``/``dsplit``, ``np.atleast_1d``/``2d``/``3d``,
``np.tile``, ``np.repeat``, ``np.append``, ``np.take`` and ``np.pad`` (constant mode) on
tensors, as the compiler records them.

Invariants: the compositions are the compiler's own (:mod:`adcompiler.compositions.splits` and
:mod:`~adcompiler.compositions.stacks`), run on :class:`~.compositions.TapeOps`, so the tape
records the same primitives and its gradient is the compiler's; a split's pieces and
``atleast_2d``'s reshape are views of the tensor (a write into a piece writes into it, as
NumPy's and PyTorch's), ``tile``/``repeat``/``append``/``take``/``pad`` new tensors. NumPy's
errors (an unequal split) are NumPy's; what the compiler refuses with a located error (another
pad mode, ``out=``) raises NotImplementedError here.
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions import splits, stacks
from adcompiler.compositions.splits import PAD_HINT

from . import numpy_api
from .compositions import TapeOps, tensor_of, unsupported

def split(ary, indices_or_sections, axis=0):
    return splits.split(TapeOps(), tensor_of(ary), indices_or_sections, axis, equal=True)


def array_split(ary, indices_or_sections, axis=0):
    return splits.split(TapeOps(), tensor_of(ary), indices_or_sections, axis, equal=False)


def _split_along(name, least, axis):
    fixed = splits.split_along(name, least, axis)

    def split_fixed(ary, indices_or_sections):
        return fixed(TapeOps(), tensor_of(ary), indices_or_sections)
    split_fixed.__name__ = name
    return split_fixed


def _at_least(ndim):
    def at_least(*arys):
        out = tuple(stacks.at_least(TapeOps(), tensor_of(x), ndim) for x in arys)
        return out[0] if len(out) == 1 else out
    at_least.__name__ = f"atleast_{ndim}d"
    return at_least


def tile(A, reps):
    return splits.tile(TapeOps(), tensor_of(A), reps)


def repeat(a, repeats, axis=None):
    x = tensor_of(a)
    return splits.repeat(TapeOps(x), x, repeats, axis)


def append(arr, values, axis=None):
    return stacks.append(TapeOps(), tensor_of(arr), tensor_of(values), axis)


def take(a, indices, axis=None, out=None, mode="raise"):
    unsupported("take", out=out, mode=None if mode == "raise" else mode)
    x = tensor_of(a)
    return splits.take(TapeOps(x), x, indices, axis)


def pad(array, pad_width, mode="constant", **kwargs):
    if mode != "constant":
        raise NotImplementedError(f"np.pad supports mode='constant' only, not mode={mode!r}: "
                                  f"{PAD_HINT}")
    values = kwargs.pop("constant_values", 0)
    unsupported("pad", **kwargs)
    x = tensor_of(array)
    return splits.pad(TapeOps(x), x, pad_width, values)


numpy_api.FUNCTIONS.update({
    np.split: split, np.array_split: array_split, np.hsplit: _split_along("hsplit", 1, 1),
    np.vsplit: _split_along("vsplit", 2, 0), np.dsplit: _split_along("dsplit", 3, 2),
    np.atleast_1d: _at_least(1), np.atleast_2d: _at_least(2), np.atleast_3d: _at_least(3),
    np.tile: tile, np.repeat: repeat, np.append: append, np.take: take, np.pad: pad,
})
