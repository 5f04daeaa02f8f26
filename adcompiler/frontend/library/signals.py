"""The compiler's handlers of the one-dimensional signals written once in
:mod:`adcompiler.compositions.signals`: ``np.polyval``, ``np.convolve`` and ``np.interp``.

Invariants: ``mode=`` is known while compiling and one of NumPy's; what has no rule here
(``period=``, complex ``fp``, a 0-d ``p``) is refused, located, with a hint; the compositions
are the tape's too, so both record the same primitives.
"""

from __future__ import annotations

import numpy as np

from ...compositions.signals import CONVOLVE_MODES, convolve, interp, polyval
from .binding import CallError, bind, static
from .compositions import _array


def _polyval(b, args, kwargs):
    p = bind(args, kwargs, ("p", "x"), required=2)
    coefficients = _array(b, p["p"])
    if len(b.shape(coefficients)) == 0:
        raise CallError("needs the coefficients `p` as a 1-D array or a list",
                        "np.polyval([a, b, c], x)")
    return polyval(b, coefficients, _array(b, p["x"]))


def _convolve(b, args, kwargs):
    p = bind(args, kwargs, ("a", "v", "mode"), required=2)
    mode = static(p.get("mode", "full"), "`mode=`")
    if mode not in CONVOLVE_MODES:
        raise CallError(f"takes mode='full', 'same' or 'valid', not mode={mode!r}",
                        "np.convolve(a, v, mode='same')")
    return convolve(b, _array(b, p["a"]), _array(b, p["v"]), mode)


def _interp(b, args, kwargs):
    p = bind(args, kwargs, ("x", "xp", "fp", "left", "right", "period"), required=3)
    if p.get("period") is not None:
        raise CallError("does not take `period=` here", "wrap x with np.remainder first")
    ends = [None if p.get(k) is None else _array(b, p[k]) for k in ("left", "right")]
    if np.dtype(b.dtype(_array(b, p["fp"]))).kind == "c":
        raise CallError("takes real `fp` only here", "interpolate the real and imaginary parts")
    return interp(b, *(_array(b, p[k]) for k in ("x", "xp", "fp")), *ends)


FUNCTIONS = {np.polyval: _polyval, np.convolve: _convolve, np.interp: _interp}
