"""Gradients at a pole of Python-float code: NumPy's values where Python raises.

The generated code computes with Python floats where the inputs are Python floats (``ds = 1.0
/ s``): that is what makes a scalar gradient cost about as much as the hand-written one. At a
pole of a derivative, Python raises where NumPy gives ``inf``: the gradient of ``np.log(s)`` at
``s = 0.0`` (the function itself is ``-inf`` there) raised ``ZeroDivisionError`` from inside
the generated code, where PyTorch and JAX answer ``inf``; outside a domain, where NumPy gives
``nan``, ``math`` raises ``ValueError`` (the gradient of ``np.arccos(a)`` at ``a = 2.0`` is
``-1.0 / math.sqrt(1 - a * a)``), and past float's range ``OverflowError`` (``math.cosh``).
Invariant: a gradient call raises only what the user's function raises. So when the generated
code raises one of :data:`PYTHON_RAISES`,
the user's function runs once on the same values (arrays copied: it may write into them): if
it raises, that is the call's error; otherwise the generated code runs again on ``np.float64``
scalars, with NumPy's functions for ``math``'s and ``np.float64`` for ``float`` (the same IEEE
arithmetic, but ``inf``/``nan`` with NumPy's ``RuntimeWarning`` where Python raises); the
gradient of a Python float is returned as a Python float.
"""

from __future__ import annotations

import types

import numpy as np

from ..ir.primitives import ELEMENTWISE

# What Python-float code raises where NumPy answers inf or nan with a RuntimeWarning:
# ZeroDivisionError (1.0 / 0.0), OverflowError (math.exp(1000.0)), ValueError (math domain
# error). A ValueError the user's function raises itself is raised again by its rerun.
PYTHON_RAISES = (ArithmeticError, ValueError)


def at_a_pole(function, primal, arguments: dict, extra: tuple, call: tuple, wrt, mode):
    """The result of ``function`` (the generated code, which raised one of
    :data:`PYTHON_RAISES` on ``arguments``) computed on NumPy scalars; ``call`` is the user's
    ``(args, kwargs)``."""
    args, kwargs = call
    kwargs = {k: v for k, v in kwargs.items() if k != "cotangent"}  # vjp's, not the user's
    primal(*_copies(args), **dict(zip(kwargs, _copies(kwargs.values()))))
    values = [np.float64(v) if type(v) is float else v for v in arguments.values()]
    result = _on_numpy_scalars(function)(*values, *extra)
    items = list(result) if isinstance(result, tuple) else [result]
    first = 1 if mode == "value_and_grad" else 0   # a Python float's gradient: a Python float
    places = [] if mode in ("jvp", "hvp") else [
        first + k for k, name in enumerate(wrt) if type(arguments[name]) is float]
    for k in places:
        if type(items[k]) is np.float64:
            items[k] = float(items[k])
    return tuple(items) if isinstance(result, tuple) else items[0]


def _on_numpy_scalars(function):
    """``function`` reading NumPy in place of ``math`` and ``float`` (``math.sqrt(0.0)``'s
    derivative, ``float(x[0])`` then divided: NumPy scalars all through)."""
    scope = {**function.__globals__, "math": _MATH, "float": np.float64}
    return types.FunctionType(function.__code__, scope, function.__name__,
                              function.__defaults__, function.__closure__)


class _NumpyMath:
    """``math`` as the generated code calls it, answered by NumPy's functions."""

    _ROWS = {r.math_name: r for r in ELEMENTWISE if r.math}  # math.atan: np.arctan

    def __getattr__(self, name):
        row = self._ROWS.get(name)   # math.erf: scipy.special.erf
        return getattr(np, name) if row is None else row.fn


_MATH = _NumpyMath()


def _copies(values):
    return [v.copy() if isinstance(v, np.ndarray) else v for v in values]
