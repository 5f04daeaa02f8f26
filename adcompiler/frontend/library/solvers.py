"""``np.linalg.solve``, ``inv``, ``det`` and ``slogdet`` of traced square matrices: one primitive
each (``slogdet``: two, its sign and its log of ``|det|``), whose rules are in
``templates/linalg.py``.

Choices: ``a`` is a matrix or a stack of them, ``(..., n, n)``, checked here so that a wrong
shape is a located error rather than NumPy's ``LinAlgError`` on every call. ``solve``'s ``b`` is
one vector ``(n,)`` or a stack of matrices ``(..., n, k)`` (NumPy 2's reading); a stacked ``a``
with a ``b`` of one dimension fewer ending in ``n`` is refused, since NumPy 1 reads that ``b`` as
a stack of vectors and NumPy 2 as one matrix. ``slogdet`` returns ``(sign, logabsdet)`` as NumPy's named
tuple does (``sign, logdet = np.linalg.slogdet(a)``, ``np.linalg.slogdet(a)[1]``,
``.logabsdet``); only ``logabsdet`` carries a gradient. A singular matrix raises NumPy's
``LinAlgError`` where NumPy does (``solve``, ``inv``; ``det``'s and ``slogdet``'s gradients,
which invert ``a``).
"""

from __future__ import annotations

import numpy as np

from ...compositions.solvers import SlogdetResult, ambiguous
from .binding import CallError, bind
from .compositions import _array
from .creation import contains_value

_FLOATS = ("float32", "float64")


def _matrix(b, a, name):
    """``a`` as a float or integer array of shape (..., n, n), else a CallError."""
    if a.aval.kind != "array":
        what = "a while loop's list" if a.aval.kind == "list" else "a number"
        raise CallError(f"needs an array of shape (..., n, n), not {what}",
                        "pass a 2-D (or stacked) square array")
    dtype = np.dtype(a.aval.dtype)
    if dtype.name not in _FLOATS and dtype.kind not in "iub":
        raise CallError(f"of a {dtype.name} array is not supported (NumPy's linalg takes "
                        "float32 and float64)", "convert it with .astype(np.float64)")
    shape = b.shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise CallError(f"needs a square matrix (..., n, n), but `{name}` has shape {shape}",
                        "NumPy raises LinAlgError here: the last two axes must be equal")
    return shape


def _solve(b, args, kwargs):
    p = bind(args, kwargs, ("a", "b"), required=2)
    a, rhs = p["a"], p["b"]
    if not contains_value(a) and not contains_value(rhs):
        return np.linalg.solve(a, rhs)
    a, rhs = _array(b, a), _array(b, rhs)
    shape, rhs_shape = _matrix(b, a, "a"), b.shape(rhs)
    if ambiguous(shape, rhs_shape):
        raise CallError(f"of a stack of matrices {shape} and `b` of shape {rhs_shape} is "
                        "ambiguous: NumPy 1 reads that `b` as vectors, NumPy 2 as one matrix",
                        "solve for columns: np.linalg.solve(a, b[..., None])[..., 0]")
    if not rhs_shape or rhs_shape[-1 if len(rhs_shape) == 1 else -2] != shape[-1]:
        raise CallError(f"of `a` of shape {shape} needs `b` of shape ({shape[-1]},) or "
                        f"(..., {shape[-1]}, k), not {rhs_shape}",
                        "NumPy raises ValueError here: b's rows must match a's")
    return b.emit("solve", (a, rhs))


def _unary(prim):
    def handler(b, args, kwargs):
        a = bind(args, kwargs, ("a",))["a"]
        if not contains_value(a):
            return getattr(np.linalg, prim)(a)
        a = _array(b, a)
        _matrix(b, a, "a")
        return b.emit(prim, (a,))
    return handler


def _slogdet(b, args, kwargs):
    a = bind(args, kwargs, ("a",))["a"]
    if not contains_value(a):
        return np.linalg.slogdet(a)
    a = _array(b, a)
    _matrix(b, a, "a")
    return SlogdetResult(b.emit("slogdet_sign", (a,)), b.emit("logabsdet", (a,)))


FUNCTIONS = {np.linalg.solve: _solve, np.linalg.inv: _unary("inv"),
             np.linalg.det: _unary("det"), np.linalg.slogdet: _slogdet}
