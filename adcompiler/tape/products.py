"""``ufunc.outer`` (``np.add.outer``, ``np.multiply.outer``...), ``np.inner``, ``np.vdot``,
``np.tensordot``, ``np.trapezoid`` and ``np.cross`` on tensors, as the compiler records them.

Invariants: the compiler's compositions (:mod:`adcompiler.compositions.products`) on
:class:`~.compositions.TapeOps`, and the same einsum subscripts, recorded by the tape's
``np.einsum``; so the tape records the compiler's primitives and its gradient is the
compiler's. ``np.cross`` of other axes than the last raises NotImplementedError.
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions import products

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
    if (axisa, axisb, axisc, axis) != (-1, -1, -1, None):
        raise NotImplementedError("np.cross: only the last axis is supported on the tape")
    return products.cross(OPS, tensor_of(a), tensor_of(b))


numpy_api.FUNCTIONS.update({np.inner: inner, np.vdot: vdot, np.tensordot: tensordot,
                            np.trapezoid: trapezoid, np.cross: cross})
numpy_api.UFUNC_METHODS.update({(getattr(np, n), "outer"): _outer(n)
                                for n in products.OUTER_UFUNCS})
