"""Diagonals, triangles, fills and ``np.add.at`` on tensors, as the compiler records them
(``adcompiler/frontend/library/diagonal.py``, ``library/creation.py``, ``statements/setitem.py``).

Invariants: ``np.diagonal``/``np.diag`` of a matrix is a view of it, as NumPy's and PyTorch's
(a square slice, then ``einsum("ii->i")``: a later write into the matrix shows in it);
``np.trace`` sums the compiler's gather from the flattened matrix at distinct flat positions
(the index tagged ``("u", 0)``), and ``np.diag`` of a vector writes those positions into zeros; ``np.tril``/``triu`` are ``where(mask, m, 0)``;
``np.full_like`` with a tensor fill value is the primitive ``full`` (its gradient is the sum);
``np.add.at`` into a tensor is one in-place ``index_add`` (repeated indices add up); ``np.trace``
of an n-D tensor sums the compiler's gather along its two axes moved last
(:func:`~adcompiler.compositions.diagonals.gather_diagonals`). Matrices of
other axes or ranks than the compiler takes run on the values (refused where a gradient would
be lost).

Layering: above :mod:`.numpy_api` and :mod:`.inplace`, into whose tables it registers;
:mod:`.methods` (``diagonal``, ``trace``) builds on it.
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions.axes import axis_in
from adcompiler.compositions.diagonals import diagonal_positions, gather_diagonals
from adcompiler.ir.primitives import build_index

from . import inplace, mode, numpy_api, views
from .compositions import TapeOps
from .numpy_api import on_module, run_plain
from .record import apply
from .tensor import Tensor
from .xp import array_module

_FIRST_TWO = ((0, 1), (0, -1), (-2, 1), (-2, -1))


def _diagonal_view(x, offset):
    """Diagonal ``offset`` of the matrix ``x``, a view of it as NumPy's and PyTorch's are (a
    write into ``x`` shows in it): the square block holding the diagonal, a slice, then its
    ``einsum("ii->i")``. Its gradient goes to the diagonal's entries only."""
    rows, cols = x.shape
    start_row, start_col = max(-offset, 0), max(offset, 0)
    n = max(min(rows - start_row, cols - start_col), 0)
    block = views.make("getitem", x, {"index": (("s", start_row, start_row + n, None),
                                                ("s", start_col, start_col + n, None))})
    return views.make("einsum", block, {"subscripts": "ii->i"}, name="DiagonalBackward0")


def _gather_diagonal(x, offset):
    """The diagonal as the compiler's gather (``trace`` sums it: no view is kept)."""
    rows, cols = x.shape
    flat = views.make("reshape", x, {"shape": (rows * cols,)})
    positions = _on_device(x, diagonal_positions(rows, cols, offset))
    return apply("getitem", (flat, positions), {"index": (("u", 0),)})


def _on_device(x, positions):
    """The (cached, NumPy) positions on ``x``'s device: CuPy indexes with CuPy arrays only."""
    return array_module(x._data).asarray(positions)


def _is_matrix(a, axis1, axis2) -> bool:
    return isinstance(a, Tensor) and a.ndim == 2 and (axis1, axis2) in _FIRST_TWO


def diagonal(a, offset=0, axis1=0, axis2=1):
    if not _is_matrix(a, axis1, axis2):
        return run_plain("np.diagonal", np.diagonal, (a, offset, axis1, axis2), {})
    return _diagonal_view(a, int(offset))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if isinstance(a, Tensor) and a.ndim > 2 and dtype is None and out is None:
        axes = (axis_in(axis1, a.ndim), axis_in(axis2, a.ndim))   # the compiler's gather
        if axes[0] == axes[1]:
            raise ValueError("axis1 and axis2 cannot be the same")
        diagonals = gather_diagonals(TapeOps(a), a, int(offset), axes)
        return apply("sum", (diagonals,), {"axis": -1, "keepdims": False})
    if not _is_matrix(a, axis1, axis2) or dtype is not None or out is not None:
        return run_plain("np.trace", np.trace, (a, offset, axis1, axis2, dtype, out), {})
    return apply("sum", (_gather_diagonal(a, int(offset)),), {"axis": None, "keepdims": False})


def diag(v, k=0):
    """Of a matrix its diagonal ``k``; of a vector the matrix holding it on diagonal ``k``."""
    if not isinstance(v, Tensor) or v.ndim not in (1, 2):
        return run_plain("np.diag", np.diag, (v, k), {})
    if v.ndim == 2:
        return _diagonal_view(v, int(k))
    n = v.shape[0] + abs(int(k))
    zeros = on_module(np.zeros, "np.zeros", [v._data])(n * n, dtype=v.dtype)
    positions = _on_device(v, diagonal_positions(n, n, int(k)))
    filled = apply("setitem", (zeros, v, positions), {"index": (("u", 0),)})
    return views.make("reshape", filled, {"shape": (n, n)})


def _triangle(lower):
    def triangle(m, k=0):
        """``where(mask, m, 0)`` with NumPy's mask of the last two axes (a vector: square)."""
        shape = np.shape(m)
        rows, cols = (shape[-1], shape[-1]) if len(shape) < 2 else shape[-2:]
        mask = np.tri(rows, cols, k, dtype=bool) if lower else ~np.tri(rows, cols, k - 1,
                                                                       dtype=bool)
        return apply("where", (mask, m, 0))
    triangle.__name__ = "tril" if lower else "triu"
    return triangle


# ---- creation -------------------------------------------------------------------------------
def _like(a, dtype, shape):
    dtype = np.dtype(dtype) if dtype is not None else np.asarray(
        a._data if isinstance(a, Tensor) else a).dtype
    shape = np.shape(a) if shape is None else (
        (shape,) if np.ndim(shape) == 0 else tuple(shape))
    return tuple(int(s) for s in shape), dtype


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    """``np.full`` of ``a``'s shape and dtype: the primitive ``full``, so a fill value that
    requires grad gets the sum of the gradient (as the compiler's)."""
    if order not in ("K", "C", "A") or subok is not True:
        raise TypeError("np.full_like: only C-ordered arrays are supported on tensors")
    shape, dtype = _like(a, dtype, shape)
    return apply("full", (fill_value,), {"shape": shape, "dtype": dtype})


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None):
    """Zeros of ``prototype``'s shape and dtype, as the compiler makes them: NumPy leaves the
    memory uninitialised, zeros make every run give the same values."""
    if order not in ("K", "C", "A") or subok is not True:
        raise TypeError("np.empty_like: only C-ordered arrays are supported on tensors")
    shape, dtype = _like(prototype, dtype, shape)
    data = prototype._data if isinstance(prototype, Tensor) else prototype
    return Tensor._make(on_module(np.zeros, "np.zeros", [data])(shape, dtype=dtype))


# ---- np.add.at ------------------------------------------------------------------------------
def add_at(a, indices, b=None):
    """``np.add.at(a, indices, b)`` into a tensor ``a``: ``b`` broadcast to the indexed region
    and added in place, repeated indices adding up (the primitive ``index_add``)."""
    if not isinstance(a, Tensor) or b is None:   # into a plain array: values only
        return run_plain("np.add.at", np.add.at, (a, indices) + (() if b is None else (b,)),
                         {})
    if a.is_leaf and a._requires_grad and mode.is_grad_enabled():
        raise TypeError("np.add.at is not differentiable on the tape into a leaf that requires "
                        "grad (" + inplace.LEAF_ERROR + "): add into a copy of it, or into "
                        "np.zeros_like(x), and combine")
    spec, arrays = inplace.index_spec(indices, a._data)
    region = a._data[build_index(spec, arrays)].shape
    if np.shape(b) != region:
        b = views.make("broadcast_to", b, {"shape": region}) if isinstance(
            b, Tensor) else np.broadcast_to(np.asarray(b), region)
    inplace.update(a, "index_add", b, arrays, {"index": spec}, rebind=False)


numpy_api.FUNCTIONS.update({
    np.diagonal: diagonal, np.trace: trace, np.diag: diag,
    np.tril: _triangle(True), np.triu: _triangle(False),
    np.full_like: full_like, np.empty_like: empty_like,
})
numpy_api.UFUNC_METHODS[np.add, "at"] = add_at
