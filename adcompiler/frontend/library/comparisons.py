"""Boolean and integer results made of comparisons: ``np.isclose``, ``np.allclose``,
``np.array_equal``, ``np.isposinf``, ``np.isneginf``, ``np.isin`` and ``np.count_nonzero``. They carry no
gradient (the gradient flows through the values they select, ``np.where(np.isclose(a, b),
...)``).

Invariants: NumPy's own values and dtypes: ``isclose`` is ``(|a - b| <= atol + rtol * |b|) &
isfinite(b) | (a == b)`` (and ``isnan(a) & isnan(b)`` with ``equal_nan``), the difference taken
of finite pairs only (NumPy's ``errstate`` hides the warning of ``inf - inf``; here it never
happens), ``allclose`` its
``all``, ``array_equal`` ``False`` for shapes that differ (known while compiling) else
``all(a == b)``, ``isin`` each entry against every test element (``any`` of ``==``),
``count_nonzero`` the sum of ``a != 0`` (a Python int for the whole array, as
NumPy's). Tolerances are known while compiling.
"""

from __future__ import annotations

import numpy as np

from ...ir import Value
from .binding import CallError, axis_arg, bind, static
from .compositions import _array


def _close(b, p):
    a, y = (_array(b, p[k]) for k in ("a", "b"))
    rtol, atol = (static(p.get(k, d), f"`{k}=`") for k, d in (("rtol", 1e-05), ("atol", 1e-08)))
    if isinstance(rtol, Value) or isinstance(atol, Value):
        raise CallError("takes tolerances known while compiling", "pass numbers")
    finite = b.emit("logical_and", (b.emit("isfinite", (a,)), b.emit("isfinite", (y,))))
    a0, y0 = (b.emit("where", (finite, v, 0.0)) for v in (a, y))   # no inf - inf: no warning
    gap = b.emit("abs", (b.emit("subtract", (a0, y0)),))
    near = b.emit("less_equal", (gap, b.emit("add", (atol, b.emit("multiply", (
        rtol, b.emit("abs", (y0,))))))))
    out = b.emit("logical_or", (b.emit("logical_and", (near, finite)), b.emit("equal", (a, y))))
    if static(p.get("equal_nan", False), "`equal_nan=`"):
        both = b.emit("logical_and", (b.emit("isnan", (a,)), b.emit("isnan", (y,))))
        out = b.emit("logical_or", (out, both))
    return out


_CLOSE = ("a", "b", "rtol", "atol", "equal_nan")


def _isclose(b, args, kwargs):
    out = _close(b, bind(args, kwargs, _CLOSE, required=2))
    return b.emit("asarray", (out,)) if out.aval.is_scalar else out


def _allclose(b, args, kwargs):
    """NumPy's is a Python bool; here a traced 0-d bool (``if np.allclose(...)`` branches on
    it when the code runs)."""
    return b.emit("all", (_close(b, bind(args, kwargs, _CLOSE, required=2)),))


def _array_equal(b, args, kwargs):
    p = bind(args, kwargs, ("a1", "a2", "equal_nan"), required=2)
    a, y = (_array(b, p[k]) for k in ("a1", "a2"))
    if tuple(b.shape(a)) != tuple(b.shape(y)):
        return False
    same = b.emit("equal", (a, y))
    if static(p.get("equal_nan", False), "`equal_nan=`"):
        same = b.emit("logical_or", (same, b.emit("logical_and", (b.emit("isnan", (a,)),
                                                                  b.emit("isnan", (y,))))))
    return b.emit("all", (same,))


def _infinite(sign):
    def handler(b, args, kwargs):
        p = bind(args, kwargs, ("x", "out"))
        if p.get("out") is not None:
            raise CallError("does not support `out=` here", "use the returned value")
        x = _array(b, p["x"])
        side = b.emit("greater" if sign > 0 else "less", (x, 0.0))
        out = b.emit("logical_and", (b.emit("isinf", (x,)), side))
        return b.emit("asarray", (out,)) if out.aval.is_scalar else out
    return handler


def _isin(b, args, kwargs):
    """np.isin(element, test_elements, assume_unique=False, invert=False): each entry compared
    with every test element, ``any`` over them (``all`` of ``!=`` for ``invert``)."""
    p = bind(args, kwargs, ("element", "test_elements", "assume_unique", "invert"), required=2)
    if kwargs.pop("kind", None) not in (None, "sort", "table"):
        raise CallError("takes kind=None, 'sort' or 'table'", "leave kind= out")
    x, tests = _array(b, p["element"]), _array(b, p["test_elements"])
    flat = b.emit("reshape", (tests,), {"shape": (int(np.prod(b.shape(tests))),)})
    spread = b.emit("reshape", (x,), {"shape": (*b.shape(x), 1)})
    if static(p.get("invert", False), "`invert=`"):
        out = b.emit("all", (b.emit("not_equal", (spread, flat)),), {"axis": -1})
    else:
        out = b.emit("any", (b.emit("equal", (spread, flat)),), {"axis": -1})
    return out


def _count_nonzero(b, args, kwargs):
    p = bind(args, kwargs, ("a", "axis", "keepdims"))
    x, axis = _array(b, p["a"]), axis_arg(p.get("axis"))
    params = {} if axis is None else {"axis": axis}
    if static(p.get("keepdims", False), "`keepdims=`"):
        params["keepdims"] = True
    count = b.emit("sum", (b.emit("not_equal", (x, 0)),), params)
    return b.emit("to_int", (count,)) if axis is None and not params else count


FUNCTIONS = {np.isclose: _isclose, np.allclose: _allclose, np.array_equal: _array_equal,
             np.isposinf: _infinite(1), np.isneginf: _infinite(-1), np.isin: _isin,
             np.count_nonzero: _count_nonzero}
