"""Joining arrays and giving them dimensions: ``np.atleast_1d``/``2d``/``3d``, ``np.vstack``,
``np.hstack``, ``np.column_stack`` and ``np.append``, spelled in reshapes and concatenations;
``vstack``/``hstack`` of one array (its rows are the items) as one reshape of a copy.

Invariants: NumPy's shapes and values; an array that has the dimensions already is returned as
it is, one that lacks them is a reshape (a view) placing its axes as NumPy does ((n,) as (1, n)
for ``atleast_2d`` and a row of ``vstack``, as (n, 1) for a column of ``column_stack``); a
stack or an append is one ``concatenate`` (a new array). The items come as arrays, already
converted by the caller.
"""

from __future__ import annotations

import numpy as np


def at_least(ops, x, ndim):
    """``np.atleast_{ndim}d`` of one array: ``x`` itself where it has the dimensions, else a
    reshape (a view) placing its axes as NumPy does ((n,) as (1, n) and as (1, n, 1))."""
    shape = tuple(ops.shape(x))
    if len(shape) >= ndim:
        return x
    new = {1: {0: (1,)}, 2: {0: (1, 1), 1: (1, *shape)},
           3: {0: (1, 1, 1), 1: (1, *shape, 1), 2: (*shape, 1)}}[ndim][len(shape)]
    return ops.reshape(x, shape=new)


def at_least_2d(ops, x, row):
    """A 0-d ``x`` as (1, 1), a 1-D one as a row (1, n) or a column (n, 1), others as they are."""
    shape = tuple(ops.shape(x))
    if len(shape) >= 2:
        return x
    return ops.reshape(x, shape=(1, 1) if not shape else (1, *shape) if row else (*shape, 1))


def vstack(ops, items):
    """``np.vstack``: rows (1-D arrays as (1, n), as ``np.atleast_2d``) joined along axis 0."""
    return ops.concatenate([at_least_2d(ops, x, row=True) for x in items], axis=0)


def hstack(ops, items):
    """``np.hstack``: 1-D arrays joined end to end (0-d ones as length 1), others along axis 1."""
    items = [ops.reshape(x, shape=(1,)) if not ops.shape(x) else x for x in items]
    return ops.concatenate(items, axis=0 if len(ops.shape(items[0])) == 1 else 1)


def vstack_of_rows(ops, x):
    """``np.vstack(x)`` of one array: its rows ``x[i]`` as the items, written as one reshape of
    a copy (a new array, as NumPy's): (n,) as (n, 1), (n, m) as it is, (n, m, ...) as
    (n * m, ...)."""
    shape = tuple(ops.shape(x))
    row = {0: (1, 1), 1: (1, *shape[1:])}.get(len(shape) - 1, shape[1:])
    return ops.reshape(ops.copy(x), shape=(shape[0] * row[0], *row[1:]))


def hstack_of_rows(ops, x):
    """``np.hstack(x)`` of one array: its rows joined end to end ((n,) as it is, (n, m) as
    (n * m,)), or along their first axis for rows of 2 or more dimensions (a transpose first)."""
    shape = tuple(ops.shape(x))
    if len(shape) <= 2:
        return ops.reshape(ops.copy(x), shape=(int(np.prod(shape, dtype=np.int64)),))
    moved = ops.transpose(x, axes=(1, 0, *range(2, len(shape))))
    return ops.reshape(ops.copy(moved), shape=(shape[1], shape[0] * shape[2], *shape[3:]))


def column_stack(ops, items):
    """``np.column_stack``: 1-D arrays as columns ((n,) as (n, 1)), 2-D ones as they are."""
    return ops.concatenate([at_least_2d(ops, x, row=False) for x in items], axis=1)


def append(ops, x, values, axis=None):
    """``np.append``: both flattened and joined (``axis=None``), else joined along ``axis``."""
    if axis is None:
        flat = [v if len(ops.shape(v)) == 1 else
                ops.reshape(v, shape=(int(np.prod(ops.shape(v), dtype=np.int64)),))
                for v in (x, values)]
        return ops.concatenate(flat, axis=0)
    return ops.concatenate([x, values], axis=axis)
