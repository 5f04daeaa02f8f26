"""``ufunc.outer`` (``np.add.outer``, ``np.multiply.outer``...), ``np.inner``, ``np.vdot``,
``np.tensordot``, ``np.trapezoid`` and ``np.cross`` on tensors, as the compiler records them.

Invariants: the compiler's compositions (:mod:`adcompiler.compositions.products`) on
:class:`~.compositions.TapeOps`, and the same einsum subscripts, recorded by the tape's
``np.einsum``; so the tape records the compiler's primitives and its gradient is the
compiler's; ``np.cross``'s ``axisa``/``axisb``/``axisc``/``axis`` move the vectors' axes as
NumPy's (transposes).
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions import products
from adcompiler.compositions.axes import axis_in, moveaxis

from . import numpy_api
from .compositions import OPS, TapeOps, tensor_of
from .einsum import einsum


def _outer(prim):
    def outer(a, b):
        return products.outer(TapeOps(), prim, tensor_of(a), tensor_of(b))
    outer.__name__ = f"{prim}_outer"
    return outer


def inner(a, b):
    x, y = tensor_of(a), tensor_of(b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return einsum(products.inner_subscripts(x.ndim, y.ndim), x, y)


def vdot(a, b):
    """The flattened tensors' dot product (real values: NumPy's conjugate is not taken)."""
    x, y = (TapeOps().reshape(v, (v.size,)) for v in map(tensor_of, (a, b)))
    return einsum("i,i->", x, y)


def tensordot(a, b, axes=2):
    x, y = tensor_of(a), tensor_of(b)
    return einsum(products.tensordot_subscripts(x.ndim, y.ndim, axes), x, y)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    x = None if x is None else tensor_of(x)
    return products.trapezoid(TapeOps(), tensor_of(y), x, dx, axis)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's steps, as the compiler's: the vectors' axes moved last, the product, its axis
    moved to ``axisc`` (not for two 2-vectors); ``axis=`` sets all three."""
    if axis is not None:
        axisa = axisb = axisc = axis
    x, y = (_axis_last(tensor_of(v), ax) for v, ax in ((a, axisa), (b, axisb)))
    out = products.cross(OPS, x, y)
    if x.shape[-1] == y.shape[-1] == 2 or out.ndim == 1:
        return out
    return moveaxis(OPS, out, (out.ndim - 1,), (axis_in(axisc, out.ndim),))


def _axis_last(x, axis):
    axis = axis_in(axis, x.ndim)
    return x if axis == x.ndim - 1 else moveaxis(OPS, x, (axis,), (x.ndim - 1,))


def dot(a, b, out=None):
    """``np.dot`` where an operand has more than 2 dimensions: the compiler's einsum, the last
    axis of ``a`` with the second-to-last of ``b`` (its only one for a vector); else the
    primitive (:func:`.numpy_api.dot`)."""
    na, nb = np.ndim(a), np.ndim(b)
    if out is not None or 0 in (na, nb) or max(na, nb) <= 2:
        return numpy_api.dot(a, b, out)
    x, y = tensor_of(a), tensor_of(b)
    if x.shape[-1] != y.shape[-2 if nb > 1 else 0]:
        raise ValueError(f"shapes {x.shape} and {y.shape} not aligned")
    return einsum(products.tensordot_subscripts(na, nb, ([na - 1], [max(nb - 2, 0)])), x, y)


numpy_api.FUNCTIONS.update({np.inner: inner, np.vdot: vdot, np.tensordot: tensordot,
                            np.trapezoid: trapezoid, np.cross: cross, np.dot: dot})
numpy_api.UFUNC_METHODS.update({(getattr(np, n), "outer"): _outer(n)
                                for n in products.OUTER_UFUNCS})
