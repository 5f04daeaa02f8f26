"""Products and integrals: ``ufunc.outer`` (``np.add.outer``, ``np.multiply.outer``...), the
einsum subscripts of ``np.inner`` and ``np.tensordot``, ``np.trapezoid`` and ``np.cross``.

Invariants: NumPy's values and shapes, in NumPy's own steps: ``ufunc.outer(a, b)`` is the
ufunc of ``a`` reshaped to ``a.shape + (1,) * b.ndim`` and ``b``; ``inner``/``vdot``/``tensordot``
are einsums (the subscripts are made here, the caller runs them); ``trapezoid`` is
``(d * (y[1:] + y[:-1]) / 2.0).sum(axis)``; ``cross`` NumPy's component formulas along the
last axis (3-vectors, 2-vectors, one of each). Axes are Python ints (NumPy's AxisError out of
bounds); NumPy's ValueErrors (a shape mismatch) are NumPy's.
"""

from __future__ import annotations

import string

import numpy as np

from .axes import axis_in, slice_along

OUTER_UFUNCS = ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
                "hypot", "arctan2", "greater", "greater_equal", "less", "less_equal", "equal",
                "not_equal", "logical_and", "logical_or")


def outer(ops, prim, x, y):
    """``np.<prim>.outer(x, y)``: ``x``'s axes first, then ``y``'s, by broadcasting."""
    ny = len(ops.shape(y))
    spread = ops.reshape(x, shape=(*ops.shape(x), *(1,) * ny)) if ny else x
    return getattr(ops, prim)(spread, y)


def inner_subscripts(na, nb) -> str:
    """``np.inner``'s einsum for operands of ``na`` and ``nb`` (>= 1) dimensions: the last axes
    summed, the others kept, ``x``'s first (``"az,bz->ab"``)."""
    letters = string.ascii_letters.replace("z", "")
    a, b = letters[:na - 1], letters[na - 1:na + nb - 2]
    return f"{a}z,{b}z->{a}{b}"


def tensordot_subscripts(na, nb, axes) -> str:
    """``np.tensordot``'s einsum: ``axes`` an int N (the last N of ``x`` with the first N of
    ``y``) or a pair of axis lists; the free axes of ``x``, then of ``y``."""
    if isinstance(axes, (int, np.integer)):
        pairs = (list(range(-int(axes), 0)), list(range(int(axes))))
    else:
        pairs = tuple([a] if isinstance(a, (int, np.integer)) else list(a) for a in axes)
    if len(pairs) != 2 or len(pairs[0]) != len(pairs[1]):
        raise ValueError("shape-mismatch for sum")
    xa, ya = ([axis_in(a, n) for a in p] for p, n in zip(pairs, (na, nb)))
    letters = iter(string.ascii_letters)
    x = [next(letters) for _ in range(na)]
    y = [x[xa[ya.index(k)]] if k in ya else next(letters) for k in range(nb)]
    free = [c for k, c in enumerate(x) if k not in xa] + [c for k, c in enumerate(y)
                                                            if k not in ya]
    return f"{''.join(x)},{''.join(y)}->{''.join(free)}"


def trapezoid(ops, y, x=None, dx=1.0, axis=-1):
    """NumPy's ``trapezoid``: spacings ``d`` (``dx``, or ``np.diff(x)``, a 1-D ``x`` shaped to
    lie along ``axis``), then ``(d * (y[1:] + y[:-1]) / 2.0).sum(axis)``."""
    ndim = len(ops.shape(y))
    axis = axis_in(axis, ndim)
    d = dx
    if x is not None:
        along = len(ops.shape(x)) - 1 if len(ops.shape(x)) == 1 else axis
        d = ops.subtract(slice_along(ops, x, along, 1, None), slice_along(ops, x, along, None, -1))
        if len(ops.shape(x)) == 1:
            d = ops.reshape(d, shape=tuple(ops.shape(d)[0] if k == axis else 1
                                           for k in range(ndim)))
    pairs = ops.add(slice_along(ops, y, axis, 1, None), slice_along(ops, y, axis, None, -1))
    return ops.sum(ops.divide(ops.multiply(d, pairs), 2.0), axis=axis)


# ---- np.cross -------------------------------------------------------------------------------
def _component(ops, v, k):
    return ops.getitem(v, (), (("e",), ("i", k)))


def cross(ops, a, b):
    """``np.cross`` along the last axis, NumPy's own steps: 3-vectors (a stack of them, broadcast),
    2-vectors (the z component alone) and one of each (the 2-vector's z taken as 0)."""
    na, nb = (ops.shape(v)[-1] if ops.shape(v) else 0 for v in (a, b))
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n"
                         "(dimension must be 2 or 3)")
    a_, b_ = [_component(ops, a, k) for k in range(na)], [_component(ops, b, k) for k in range(nb)]
    mul, sub = ops.multiply, ops.subtract
    z = sub(mul(a_[0], b_[1]), mul(a_[1], b_[0]))
    if na == nb == 2:
        return z
    if na == 2:
        parts = [mul(a_[1], b_[2]), ops.negative(mul(a_[0], b_[2])), z]
    elif nb == 2:
        parts = [ops.negative(mul(a_[2], b_[1])), mul(a_[2], b_[0]), z]
    else:
        parts = [sub(mul(a_[1], b_[2]), mul(a_[2], b_[1])),
                 sub(mul(a_[2], b_[0]), mul(a_[0], b_[2])), z]
    return ops.stack(parts, axis=-1)
