"""The complex parts of real arrays: ``np.real``/``x.real`` (the array itself, a view as
NumPy's), ``np.imag``/``x.imag`` (zeros of its shape and dtype) and ``np.conj``/
``np.conjugate``/``x.conj()`` (a copy, as the ufunc gives). adcompiler differentiates real
arrays only: a complex one is refused where it is made, so these never meet one.
"""

from __future__ import annotations

import numpy as np

from ...ir import Value
from .binding import positional
from .compositions import _array


def _real(b, args, kwargs):
    (x,) = positional(args, 1)
    return x if isinstance(x, Value) else np.real(x)


def _imag(b, args, kwargs):
    (x,) = positional(args, 1)
    if not isinstance(x, Value):
        return np.imag(x)
    return b.emit("zeros_like", (x,))


def _conj(b, args, kwargs):
    (x,) = positional(args, 1)
    out = b.emit("copy", (_array(b, x),))
    return b.emit("asarray", (out,)) if out.aval.is_scalar else out


FUNCTIONS = {np.real: _real, np.imag: _imag, np.conj: _conj, np.conjugate: _conj}
METHODS = {"conj": lambda b, x, args, kwargs: _conj(b, [x, *args], kwargs),
           "conjugate": lambda b, x, args, kwargs: _conj(b, [x, *args], kwargs)}
ATTRIBUTES = {"real": lambda b, x: x, "imag": lambda b, x: b.emit("zeros_like", (x,))}
