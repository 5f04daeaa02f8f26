"""NumPy functions that rearrange, mask or scan values, on tensors, as the compiler records them:
``np.rot90``, ``np.rollaxis``, ``np.gradient`` (uniform spacings), ``np.nan_to_num``,
``np.maximum.accumulate``/``np.minimum.accumulate``, and ``np.real``/``np.imag``/``np.conj``
of real tensors.

Invariants: each runs the composition the compiler runs (:mod:`adcompiler.compositions`), so
the tape records the same primitives and its gradient is the compiler's (the running extreme's
tie goes to the latest entry); views where NumPy makes them (``rot90``, ``rollaxis``,
``real``). What the compiler refuses (coordinate arrays for ``np.gradient``, ``copy=False``,
complex tensors) runs on the values, refused where a gradient would be lost
(:func:`.numpy_api.run_plain`).

Layering: above :mod:`.compositions`, :mod:`.numpy_api` and :mod:`.methods`, into whose tables
it registers (``x.real``, ``x.imag``, ``x.conj()`` too; it is loaded by :mod:`.assembly`).
"""

from __future__ import annotations

import numpy as np

from adcompiler.compositions import elementwise, scans, shifts
from adcompiler.compositions.axes import axis_in, rollaxis_order

from . import numpy_api, views
from .compositions import OPS, TapeOps, tensor_of
from .methods import Methods
from .numpy_api import run_plain
from .tensor import Tensor


def rot90(m, k=1, axes=(0, 1)):
    x = tensor_of(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if x.ndim < 2 or axes[0] == axes[1] or abs(axes[0] - axes[1]) == x.ndim:
        raise ValueError("Axes must be different.")
    return shifts.rot90(OPS, x, int(k), tuple(axis_in(a, x.ndim) for a in axes))


def rollaxis(a, axis, start=0):
    x = tensor_of(a)
    axis = axis_in(axis, x.ndim)
    if not -x.ndim <= start <= x.ndim:
        raise np.exceptions.AxisError(f"'start' arg requires {-x.ndim} <= start < "
                                      f"{x.ndim + 1}, but {start} was passed in")
    order = rollaxis_order(x.ndim, axis, start + x.ndim if start < 0 else start)
    return x[...] if order is None else views.make("transpose", x, {"axes": order})


def gradient(f, *varargs, axis=None, edge_order=1):
    """:func:`shifts.gradient_along` per axis, uniform spacings (numbers) only."""
    if not isinstance(f, Tensor) or any(np.ndim(h) != 0 or isinstance(h, Tensor)
                                        for h in varargs):
        return run_plain("np.gradient", np.gradient, (f, *varargs),
                         {"axis": axis, "edge_order": edge_order})
    x = f if f.dtype.kind == "f" else OPS.astype(f, np.float64)
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        axis_in(a, x.ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if len(varargs) not in (0, 1, len(axes)):
        raise TypeError("invalid number of arguments")
    steps = [float(varargs[0] if len(varargs) == 1 else varargs[k] if varargs else 1.0)
             for k in range(len(axes))]
    out = []
    for a, dx in zip(axes, steps):
        if x.shape[a] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        out.append(shifts.gradient_along(OPS, x, a, dx, edge_order))
    return out[0] if len(out) == 1 else tuple(out)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if not isinstance(x, Tensor) or not copy or x.dtype.kind != "f":
        return run_plain("np.nan_to_num", np.nan_to_num, (x, copy, nan, posinf, neginf), {})
    return elementwise.nan_to_num(TapeOps(x), x, nan, posinf, neginf)


def _accumulate(name):
    ufunc = getattr(np, name)

    def accumulate(array, axis=0, dtype=None, out=None):
        if not isinstance(array, Tensor) or array.dtype.kind != "f" or dtype is not None \
                or out is not None or axis is None:
            return run_plain(f"np.{name}.accumulate", ufunc.accumulate, (array, axis, dtype,
                                                                         out), {})
        return scans.running_extreme(TapeOps(array), name, array, axis_in(axis, array.ndim))
    return accumulate


def _real_only(name):
    def check(x):
        if isinstance(x, Tensor) and x.dtype.kind == "c":
            raise TypeError(f"np.{name} of a complex tensor is not supported on the tape")
        return tensor_of(x)
    return check


def real(val):
    return _real_only("real")(val)[()]   # a view, as NumPy's x.real


def imag(val):
    return OPS.zeros_like(_real_only("imag")(val))


def conj(x):
    return OPS.copy(_real_only("conj")(x))


numpy_api.FUNCTIONS.update({np.rot90: rot90, np.rollaxis: rollaxis, np.gradient: gradient,
                            np.nan_to_num: nan_to_num, np.real: real, np.imag: imag})
numpy_api.UFUNC_METHODS.update({(np.maximum, "accumulate"): _accumulate("maximum"),
                                (np.minimum, "accumulate"): _accumulate("minimum"),
                                (np.conjugate, "__call__"): lambda x, **kw: conj(x)})
Methods.real = property(real)   # x.real, x.imag, x.conj(), as the compiler's
Methods.imag = property(imag)
Methods.conj = Methods.conjugate = conj
