"""Diagonals of traced matrices: ``np.diagonal``/``A.diagonal()``, ``np.diag``, ``np.trace``.

A diagonal is a gather from the flattened matrix, ``A.reshape(-1)[idx]`` with ``idx`` (the
flat positions ``r * cols + c`` of ``A[r, r + offset]``) made while compiling: its entries
are distinct, so the index spec tags it ``("u", 0)`` and the adjoint adds with
``dA.reshape(-1)[idx] += g`` (no ``np.add.at``). ``np.trace`` is the sum of that gather.
``np.diag(v)`` of a traced 1-D ``v`` builds the matrix: zeros with ``v`` stored at those
positions (its adjoint is the gather). ``np.diagonal``/``np.trace`` of an n-D array move its
``axis1``/``axis2`` last (a transpose) and gather along them flattened, where NumPy places the
diagonal (the last axis); ``np.diag`` takes vectors and matrices, as NumPy's. Of arrays known while
compiling, ``np.diag`` keeps folding (:func:`.creation._folded`); ``np.diagonal`` and
``np.trace`` of a module-level array read it when the code runs, as any read does.
"""

from __future__ import annotations

import numpy as np

from ...compositions.diagonals import diagonal_positions, gather_diagonals
from ...ir import Value
from .binding import CallError, bind, static
from .compositions import BuilderOps
from .creation import _folded, _stacked, contains_value


def _flat_positions(b, rows, cols, offset):
    """The graph constant of the flat positions of ``A[r, r + offset]`` in a rows x cols A."""
    positions = diagonal_positions(rows, cols, offset)
    for v, data in b.graph.consts.items():
        if data is positions:
            return v
    return b.constant(positions, "diagonal")


def _matrix_shape(b, a, what):
    shape = b.shape(a)
    if len(shape) != 2:
        raise CallError(f"of a {len(shape)}-D array is not supported: only the diagonal of a "
                        f"matrix ({what})", "index the matrix you mean first, e.g. a[k]")
    return shape


def diagonal_of(b, a, offset, what="2-D"):
    rows, cols = _matrix_shape(b, a, what)
    flat = b.emit("reshape", (a,), {"shape": (rows * cols,)})
    return b.getitem(flat, [_flat_positions(b, rows, cols, offset)], (("u", 0),))


def diagonals_of(b, a, offset, axes):
    """``np.diagonal(a, offset, *axes)``: a matrix's as before, an n-D array's by
    :func:`gather_diagonals` (the tape's too)."""
    if b.ndim(a) == 2 and axes == (0, 1):
        return diagonal_of(b, a, offset)
    return gather_diagonals(BuilderOps(b), a, offset, axes)


def _offset_and_axes(p, ndim):
    """The int offset and the two distinct axes (in ``range(ndim)``) of a diagonal."""
    offset = static(p.get("offset", p.get("k", 0)), "`offset=`")
    axes = tuple(static(p.get(n, d), f"`{n}=`") for n, d in (("axis1", 0), ("axis2", 1)))
    if ndim < 2:
        raise CallError("needs an array of at least 2 dimensions (diag requires an array of "
                        "at least two dimensions)", "NumPy raises ValueError here too")
    if not all(isinstance(k, (int, np.integer)) and -ndim <= k < ndim for k in axes):
        raise CallError(f"axes {axes} are out of bounds for an array of dimension {ndim}",
                        "NumPy raises AxisError here too")
    axes = tuple(int(k) % ndim for k in axes)
    if axes[0] == axes[1]:
        raise CallError("axis1 and axis2 cannot be the same", "NumPy raises ValueError too")
    if not isinstance(offset, (int, np.integer)):
        raise CallError("takes an int offset", "pass a Python int")
    return int(offset), axes


def _diagonal(b, args, kwargs):
    p = bind(args, kwargs, ("a", "offset", "axis1", "axis2"))
    if not isinstance(p["a"], Value):
        offset, axes = _offset_and_axes(p, np.ndim(p["a"]))
        return np.diagonal(np.asarray(p["a"]), offset, *axes)
    offset, axes = _offset_and_axes(p, b.ndim(p["a"]))
    return diagonals_of(b, p["a"], offset, axes)


def _trace(b, args, kwargs):
    p = bind(args, kwargs, ("a", "offset", "axis1", "axis2", "dtype", "out"))
    if p.get("dtype") is not None or p.get("out") is not None:
        raise CallError("does not support `dtype=` or `out=` here",
                        "cast first with .astype(...), and use the returned value")
    if not isinstance(p["a"], Value):
        offset, axes = _offset_and_axes(p, np.ndim(p["a"]))
        return np.trace(np.asarray(p["a"]), offset, *axes)
    offset, axes = _offset_and_axes(p, b.ndim(p["a"]))
    diagonals = diagonals_of(b, p["a"], offset, axes)
    return b.emit("sum", (diagonals,), {"axis": -1} if b.ndim(diagonals) > 1 else {})


_FOLD_DIAG = _folded(np.diag)


def _diag(b, args, kwargs):
    """np.diag(a, k=0): of a traced matrix its diagonal, of a traced vector the matrix
    holding it on diagonal ``k``; of arrays known while compiling, folded as before."""
    p = bind(args, kwargs, ("v", "k"))
    v, k = p["v"], static(p.get("k", 0), "`k=`")
    if isinstance(v, (list, tuple)) and contains_value(v):
        v = _stacked(b, v)  # np.diag([a, b]) of traced numbers
    if not isinstance(v, Value) or v in b.graph.consts or not isinstance(k, (int, np.integer)):
        return _FOLD_DIAG(b, [v, k], {})
    if b.ndim(v) == 2:
        return diagonal_of(b, v, int(k), "or a vector")
    if b.ndim(v) != 1:
        raise CallError(f"of a {b.ndim(v)}-D array is not supported: NumPy takes a vector or "
                        "a matrix", "pass a 1-D or 2-D array")
    n = b.shape(v)[0] + abs(int(k))
    zeros = b.emit("zeros", (), {"shape": (n * n,), "dtype": b.dtype(v)}, name="diag")
    filled = b.setitem(zeros, v, [_flat_positions(b, n, n, int(k))], (("u", 0),))
    return b.emit("reshape", (filled,), {"shape": (n, n)})


def _method(handler):
    return lambda b, x, args, kwargs: handler(b, [x, *args], kwargs)


FUNCTIONS = {np.diagonal: _diagonal, np.trace: _trace, np.diag: _diag}
METHODS = {"diagonal": _method(_diagonal), "trace": _method(_trace)}
