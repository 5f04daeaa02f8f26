"""Differences, flips, rotations and rolls: ``np.diff``, ``np.gradient``, ``np.flip``/``fliplr``/
``flipud``, ``np.rot90`` and ``np.roll``, spelled in slices, transposes and concatenations.

Invariants: NumPy's values and dtypes (``diff`` of booleans is ``!=``, as NumPy's); ``flip`` is
a reversed slice (a view, as NumPy's), ``roll`` a concatenation of two slices per axis (a new
array, a copy where nothing moves); every derivative comes from the slices' and the
concatenation's rules. The caller reads the arguments: ``n`` a non-negative int, axes in
``range(ndim)``, ``prepend``/``append`` arrays, shifts ints.
"""

from __future__ import annotations

import numpy as np

from .axes import FULL, slice_along


# ---- differences ----------------------------------------------------------------------------
def edge(ops, value, x, axis):
    """A ``prepend``/``append`` value: a 0-d one broadcast to one slice of ``x`` along axis."""
    if not ops.shape(value):
        shape = list(ops.shape(x))
        shape[axis] = 1
        value = ops.broadcast_to(value, shape=tuple(shape))
    return value


def diff(ops, x, n, axis, before=None, after=None):
    """``x[1:] - x[:-1]`` along ``axis``, ``n`` times (``!=`` for booleans, as NumPy); the
    :func:`edge` values ``before`` and ``after`` (None: not given) are concatenated first."""
    if n == 0:
        return x
    parts = [v for v in (before, x, after) if v is not None]
    if len(parts) > 1:
        x = ops.concatenate(parts, axis=axis)
    op = ops.not_equal if np.dtype(ops.dtype(x)) == np.bool_ else ops.subtract
    for _ in range(int(n)):
        x = op(slice_along(ops, x, axis, 1, None), slice_along(ops, x, axis, None, -1))
    return x


def gradient_along(ops, f, axis, dx, edge_order):
    """NumPy's ``np.gradient`` of float ``f`` along ``axis`` for a uniform spacing ``dx`` (a
    Python number): central differences ``(f[2:] - f[:-2]) / (2 dx)`` inside, one-sided ones
    of ``edge_order`` 1 or 2 at the two ends (NumPy's coefficients), joined along ``axis``.
    The caller checks that the axis has at least ``edge_order + 1`` entries."""
    at = lambda lo, hi: slice_along(ops, f, axis, lo, hi)   # noqa: E731
    inside = ops.divide(ops.subtract(at(2, None), at(None, -2)), 2.0 * dx)
    if edge_order == 1:
        first = ops.divide(ops.subtract(at(1, 2), at(0, 1)), dx)
        last = ops.divide(ops.subtract(at(-1, None), at(-2, -1)), dx)
    else:
        first = ops.add(ops.add(ops.multiply(at(0, 1), -1.5 / dx),
                                ops.multiply(at(1, 2), 2.0 / dx)),
                        ops.multiply(at(2, 3), -0.5 / dx))
        last = ops.add(ops.add(ops.multiply(at(-3, -2), 0.5 / dx),
                               ops.multiply(at(-2, -1), -2.0 / dx)),
                       ops.multiply(at(-1, None), 1.5 / dx))
    return ops.concatenate([first, inside, last], axis=axis)


# ---- flips ----------------------------------------------------------------------------------
def flip(ops, x, axes):
    """``x`` reversed along ``axes`` (a slice with step -1 each): a view, as NumPy's; with no
    axes a 0-d ``x`` is copied and another is ``x`` itself."""
    if not axes:
        return ops.copy(x) if not ops.shape(x) else x
    index = tuple(("s", None, None, -1) if a in axes else FULL for a in range(max(axes) + 1))
    return ops.getitem(x, (), index)


def rot90(ops, x, k, axes):
    """``np.rot90(x, k, axes)`` in NumPy's own steps (``axes`` two distinct axes in
    ``range(ndim)``): k = 2 flips both, k = 1 flips ``axes[1]`` then swaps the two, k = 3 swaps
    then flips ``axes[1]``; k = 0 is a view of ``x`` (``x[:]``). Views all, as NumPy's."""
    k = int(k) % 4
    if k == 0:
        return ops.getitem(x, (), (FULL,))
    if k == 2:
        return flip(ops, x, tuple(sorted(axes)))
    perm = list(range(len(ops.shape(x))))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return ops.transpose(flip(ops, x, (axes[1],)), axes=tuple(perm))
    return flip(ops, ops.transpose(x, axes=tuple(perm)), (axes[1],))


# ---- rolls ----------------------------------------------------------------------------------
def roll_offsets(pairs, ndim, axis_of):
    """``{axis: total shift}`` of ``np.roll``'s ``(shift, axis)`` pairs (``np.broadcast`` of the
    two), each axis read by the caller's ``axis_of(axis, ndim)``."""
    offsets = {}
    for sh, ax in pairs:
        ax = axis_of(int(ax), ndim)
        offsets[ax] = offsets.get(ax, 0) + int(sh)
    return offsets


def roll(ops, x, offsets):
    """Along each axis of ``offsets`` (``{axis: shift}``), the last ``shift`` entries moved to
    the front: a concatenation of two slices; a copy where nothing moves."""
    shape, out = tuple(ops.shape(x)), x
    for axis, sh in sorted(offsets.items()):
        n = shape[axis]
        k = int(sh) % n if n else 0
        if k:
            out = ops.concatenate([slice_along(ops, out, axis, n - k, None),
                                   slice_along(ops, out, axis, None, n - k)], axis=axis)
    return ops.copy(out) if out is x else out


def roll_flat(ops, x, shift):
    """``np.roll(x, shift)`` with ``axis=None``: the flattened array rolled, its shape restored."""
    flat = roll(ops, ops.reshape(x, shape=(-1,)), {0: shift})
    return ops.reshape(flat, shape=tuple(ops.shape(x)))
