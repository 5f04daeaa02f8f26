"""``ufunc.outer`` (``np.add.outer``, ``np.multiply.outer``...), ``np.inner``, ``np.vdot``,
``np.tensordot`` and ``np.trapezoid`` on tensors, as the compiler records them
(``adcompiler/frontend/products.py``).

Invariants: the same compositions (:func:`~adcompiler.frontend.products.outer`,
:func:`~adcompiler.frontend.products.trapezoid`) on :class:`~.splits.TapeOps`, and the same
einsum subscripts, recorded by the tape's ``np.einsum``; so the tape records the compiler's
primitives and its gradient is the compiler's.
"""

from __future__ import annotations

import numpy as np

from adcompiler.frontend import products

from . import numpy_api
from .compositions import _tensor_of
from .einsum import einsum
from .splits import TapeOps


def _outer(prim):
    def outer(a, b):
        return products.outer(TapeOps(), prim, _tensor_of(a), _tensor_of(b))
    outer.__name__ = f"{prim}_outer"
    return outer


def inner(a, b):
    x, y = _tensor_of(a), _tensor_of(b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    return einsum(products.inner_subscripts(x.ndim, y.ndim), x, y)


def vdot(a, b):
    """The flattened tensors' dot product (real values: NumPy's conjugate is not taken)."""
    x, y = (TapeOps().reshape(v, (v.size,)) for v in map(_tensor_of, (a, b)))
    return einsum("i,i->", x, y)


def tensordot(a, b, axes=2):
    x, y = _tensor_of(a), _tensor_of(b)
    return einsum(products.tensordot_subscripts(x.ndim, y.ndim, axes), x, y)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    x = None if x is None else _tensor_of(x)
    return products.trapezoid(TapeOps(), _tensor_of(y), x, dx, axis)


numpy_api.FUNCTIONS.update({np.inner: inner, np.vdot: vdot, np.tensordot: tensordot,
                            np.trapezoid: trapezoid})
numpy_api.UFUNC_METHODS.update({(getattr(np, n), "outer"): _outer(n)
                                for n in products.OUTER_UFUNCS})
